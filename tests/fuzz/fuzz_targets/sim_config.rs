//! Simulator configurations (`memtune-sim/1`): parsing and the work estimate must refuse any
//! input with an error, never panic or overflow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memtune_probe::sim::SimConfig;
use memtune_probe::ProbeOptions;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(config) = SimConfig::from_json_str(text, "fuzz.json") else {
        return;
    };
    for quick in [false, true] {
        let options = ProbeOptions {
            quick,
            tlb_sharing: !quick,
            ..ProbeOptions::default()
        };
        let _ = config.estimate_work(&options);
        let _ = config.check_work(&options);
    }
});
