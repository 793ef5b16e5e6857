//! Curve files of other tools (`cargo tune infer`): the seed tool's CSV and the long CSV,
//! detected or forced, merged, then TLB inference over the curves: errors, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memtune_core::MemoryKind;
use memtune_probe::import::{self, Format};
use memtune_probe::infer_tlb_in;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.csv");
    let formats = [Format::detect(text), Some(Format::Seed), Some(Format::Long)];
    for format in formats.into_iter().flatten() {
        let Ok(file) = import::parse(text, path, format, MemoryKind::Device) else {
            continue;
        };
        let Ok(imported) = import::merge(vec![file], None) else {
            continue;
        };
        for curves in imported.kinds.values() {
            let _ = infer_tlb_in(
                curves.curves.clone(),
                &curves.ranges(),
                curves.swept_up_to_bytes(),
                1000.0,
            );
        }
    }
});
