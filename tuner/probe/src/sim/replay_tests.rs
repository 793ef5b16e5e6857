use super::*;
use crate::sim::{CacheLevelConfig, SimConfig};

fn k80() -> SimConfig {
    SimConfig::builtin("k80").expect("built-in")
}

#[test]
fn a_cycle_hits_a_fully_associative_level_only_when_it_fits() {
    // k80's device TLB: 16 × 128 KiB, then 65 and 1032 × 2 MiB, all fully associative.
    let mut r = Replay::new(&k80(), MemoryKind::Device).expect("replay");
    let trace: Vec<u64> = (0..10).flat_map(|_| (0..40u64).map(|p| p << 21)).collect();
    r.push(&trace);
    let levels = r.levels();
    assert_eq!(levels.len(), 3);
    assert_eq!(levels[0].hit_ratio(), 0.0, "40 pages thrash 16 entries");
    assert_eq!(
        levels[1].hits, 360,
        "65 entries hold all 40 pages after the first round"
    );
    assert_eq!(
        levels[2].hits, 360,
        "a slower level counts the faster one's hits"
    );
    assert!(levels.iter().all(|l| l.references == 400));
}

#[test]
fn set_conflicts_miss_where_full_associativity_hits() {
    let mut config = k80();
    config.caches = vec![CacheLevelConfig {
        name: "L1".into(),
        size_bytes: 4 * 128,
        line_bytes: 128,
        sector_bytes: None,
        ways: 1,
        hit_cycles: 30.0,
        max_carveout_size_bytes: None,
    }];
    let mut r = Replay::new(&config, MemoryKind::Device).expect("replay");
    // Lines 0 and 4 share set 0 of a direct-mapped 4-line cache: each evicts the other.
    let trace: Vec<u64> = (0..100)
        .map(|i| if i % 2 == 0 { 0 } else { 4 * 128 })
        .collect();
    r.push(&trace);
    let l1 = &r.levels()[0];
    assert_eq!(
        (l1.name.as_str(), l1.sets, l1.ways, l1.hits),
        ("L1", 4, 1, 0)
    );
}

#[test]
fn the_hashed_lru_is_the_linear_one() {
    let mut linear = Sets::Linear {
        items: vec![0; 100],
        len: vec![0; 1],
        ways: 100,
    };
    let mut hashed = Sets::Hashed(HashedLru::new(100));
    let mut x = 7u64;
    for _ in 0..20_000 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let item = (x >> 33) % 160;
        assert_eq!(
            linear.access(item, 1),
            hashed.access(item, 1),
            "item {item}"
        );
    }
}

#[test]
fn an_unknown_kind_and_a_huge_hierarchy_are_refused() {
    let e = Replay::new(&k80(), MemoryKind::Managed)
        .err()
        .expect("refused");
    assert!(e.to_string().contains("its kinds: device"), "{e}");
    let mut config = k80();
    config.caches = vec![CacheLevelConfig {
        name: "L2".into(),
        size_bytes: 1 << 40,
        line_bytes: 32,
        sector_bytes: None,
        ways: 16,
        hit_cycles: 200.0,
        max_carveout_size_bytes: None,
    }];
    assert!(matches!(
        Replay::new(&config, MemoryKind::Device),
        Err(ReplayError::TooLarge { .. })
    ));
}
