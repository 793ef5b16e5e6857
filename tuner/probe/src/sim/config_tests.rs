//! Unit tests of the simulator-file parser: the built-ins parse, and an error names the
//! full key path.

use super::*;

#[test]
fn builtins_parse() {
    for name in BUILTIN_NAMES {
        let config = SimConfig::builtin(name).unwrap();
        assert!(
            config.memory_kinds.contains_key(&MemoryKind::Device),
            "{name}"
        );
    }
    let p100 = SimConfig::builtin("p100").unwrap();
    let levels = &p100.memory_kinds[&MemoryKind::Device].tlb;
    assert_eq!(levels[1].entries, 65);
    assert_eq!(levels[1].ways, Some(8));
    assert_eq!(levels[1].shared_by_sms, 10);
    assert_eq!(p100.noise.seed, 7);
}

#[test]
fn error_names_key_path() {
    let text = r#"{"schema":"memtune-sim/1","name":"x","sm_count":4,"clock_mhz":1000,"l2_hit_cycles":200,
        "memory_kinds":{"device":{"size_bytes":1048576,"tlb":[{"entries":4,"page_bytes":4096,"miss_cycles":10,"ways":0}]}}}"#;
    let err = SimConfig::from_json_str(text, "my.json")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("my.json") && err.contains("memory_kinds.device.tlb[0].ways"),
        "{err}"
    );
}
