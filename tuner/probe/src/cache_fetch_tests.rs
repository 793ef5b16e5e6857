use super::*;
use crate::{BackendError, RandomChaseSamples};
use memtune_core::profile::{CacheLevel, MemoryKind};

/// The L2's near hit and a DRAM miss on an H100 (cycles).
const HIT: u64 = 280;
const MISS: u64 = 700;

/// Ideal samples: `lines` lines of `line` bytes walked at `stride`, a load missing where
/// it is the first of its `fetch`-byte block.
fn ideal(lines: usize, line: u64, stride: u64, fetch: u64) -> Vec<u64> {
    let loads = lines as u64 * line / stride;
    (0..loads)
        .map(|i| if (i * stride) % fetch == 0 { MISS } else { HIT })
        .collect()
}

/// A small reproducible generator (SplitMix64) for noisy samples.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn ideal_samples_give_each_fetch() {
    for fetch in [32, 64, 128] {
        let samples = ideal(512, 128, 32, fetch);
        assert_eq!(fetch_from_samples(&samples, 32, 128, 280.0), Ok(fetch));
    }
    // Other lines: 256 B of 64 B fetches, 64 B lines of 32 or 64 B fetches.
    let samples = ideal(256, 256, 32, 64);
    assert_eq!(fetch_from_samples(&samples, 32, 256, 280.0), Ok(64));
    for fetch in [32, 64] {
        let samples = ideal(1024, 64, 32, fetch);
        assert_eq!(fetch_from_samples(&samples, 32, 64, 280.0), Ok(fetch));
    }
    // A stride below the sector: the loads inside a sector hit for every candidate.
    let samples = ideal(128, 128, 8, 64);
    assert_eq!(fetch_from_samples(&samples, 8, 128, 280.0), Ok(64));
}

#[test]
fn noise_and_spikes_leave_the_fetch() {
    for seed in 1..=8 {
        let mut rng = Rng(seed);
        for fetch in [32, 64, 128] {
            let samples: Vec<u64> = ideal(512, 128, 32, fetch)
                .into_iter()
                .map(|c| {
                    // 10% jitter either way; 2% of the loads spike 3-10x.
                    let jitter = 0.9 + 0.2 * rng.next();
                    let spike = if rng.next() < 0.02 {
                        3.0 + 7.0 * rng.next()
                    } else {
                        1.0
                    };
                    (c as f64 * jitter * spike) as u64
                })
                .collect();
            assert_eq!(
                fetch_from_samples(&samples, 32, 128, 280.0),
                Ok(fetch),
                "seed {seed}, fetch {fetch}"
            );
        }
    }
}

#[test]
fn far_partition_lines_pair_their_own_hits_and_misses() {
    // Every other line in the far partition: hits at 528, misses at 950. Against one
    // threshold for all lines (say halfway between the near hit and the near miss, 490)
    // a far hit would read as a miss; within its line it is well under its miss.
    for fetch in [32, 64, 128] {
        let mut samples = ideal(512, 128, 32, fetch);
        for (k, line) in samples.chunks_mut(4).enumerate() {
            if k % 2 == 1 {
                for c in line {
                    *c = if *c == MISS { 950 } else { 528 };
                }
            }
        }
        assert_eq!(fetch_from_samples(&samples, 32, 128, 280.0), Ok(fetch));
    }
}

#[test]
fn too_few_lines_or_hit_like_first_loads_tell_no_fetch() {
    let samples = ideal(MIN_LINES - 1, 128, 32, 64);
    assert_eq!(
        fetch_from_samples(&samples, 32, 128, 280.0),
        Err(NoFetch::TooFewLines {
            lines: MIN_LINES - 1
        })
    );
    // A partial last line does not count.
    let mut samples = ideal(MIN_LINES, 128, 32, 64);
    samples.pop();
    assert!(matches!(
        fetch_from_samples(&samples, 32, 128, 280.0),
        Err(NoFetch::TooFewLines { .. })
    ));
    // A fetch of two lines: every other line's first load hits.
    let samples = ideal(512, 128, 32, 256);
    let e = fetch_from_samples(&samples, 32, 128, 280.0).unwrap_err();
    assert_eq!(
        e,
        NoFetch::FirstLoadsHit {
            first_hits: 256,
            lines: 512,
            l2_hit: 280.0
        }
    );
    assert!(e.to_string().contains("256 of 512 lines"), "{e}");
    // A few hit-like first loads (5%) are left out, the rest decide.
    let mut samples = ideal(512, 128, 32, 64);
    for line in samples.chunks_mut(4).step_by(20) {
        line[0] = HIT;
    }
    assert_eq!(fetch_from_samples(&samples, 32, 128, 280.0), Ok(64));
}

#[test]
fn samples_that_fit_no_candidate_name_the_hits_per_offset() {
    // Offset 64 hits in half the lines only: neither 64 nor 128 fits 90% of them.
    let mut samples = ideal(512, 128, 32, 64);
    for line in samples.chunks_mut(8) {
        line[2] = HIT;
    }
    let e = fetch_from_samples(&samples, 32, 128, 280.0).unwrap_err();
    assert!(
        matches!(e, NoFetch::NoCandidate { lines: 512, .. }),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(text.contains("32 B 100%, 64 B 50%, 96 B 100%"), "{text}");
}

#[test]
fn shapes_that_cannot_tell_fetches_apart_are_refused() {
    let samples = ideal(512, 128, 32, 64);
    for (stride, line) in [(32, 32), (24, 128), (0, 128), (32, 96), (64, 128)] {
        assert_eq!(
            fetch_from_samples(&samples, stride, line, 280.0),
            Err(NoFetch::Shape { line, stride }),
            "stride {stride}, line {line}"
        );
    }
}

/// A system whose only model is the cold stride chain, answering `answer`.
struct ColdOnly {
    answer: Result<RandomChaseSamples, BackendError>,
    calls: u32,
}

impl MemorySystem for ColdOnly {
    fn name(&self) -> String {
        "cold only".into()
    }
    fn clock_mhz(&self) -> f64 {
        1000.0
    }
    fn sm_count(&self) -> u32 {
        1
    }
    fn kinds(&self) -> Vec<MemoryKind> {
        vec![MemoryKind::Device]
    }
    fn max_footprint(&self, _: MemoryKind) -> u64 {
        1 << 30
    }
    fn chase(&mut self, _: MemoryKind, _: u64, _: u64, _: u32) -> Result<f64, BackendError> {
        Err(BackendError::Unsupported { what: "no".into() })
    }
    fn chase_pair(
        &mut self,
        _: MemoryKind,
        _: u64,
        _: u64,
        _: u32,
        _: u32,
    ) -> Result<f64, BackendError> {
        Err(BackendError::Unsupported { what: "no".into() })
    }
    fn random_access(&mut self, _: MemoryKind, _: u64) -> Result<f64, BackendError> {
        Err(BackendError::Unsupported { what: "no".into() })
    }
    fn cold_stride_samples(
        &mut self,
        stride_bytes: u64,
        samples: u32,
    ) -> Result<RandomChaseSamples, BackendError> {
        assert_eq!((stride_bytes, samples), (FETCH_STRIDE, FETCH_SAMPLES));
        self.calls += 1;
        self.answer.clone()
    }
}

fn hierarchy(line: Option<u64>) -> CacheHierarchy {
    let level = |name: &str, path| CacheLevel {
        name: name.into(),
        path,
        carveout: CacheCarveout::Default,
        size_bytes: 24 << 20,
        line_bytes: line,
        fetch_bytes: None,
        ways: None,
        hit_latency_cycles: 280.0,
        attribute_bytes: None,
        size_is_lower_bound: false,
        shares_l1: None,
    };
    CacheHierarchy {
        levels: vec![
            level("L1", CachePath::L1),
            level("L2", CachePath::L2),
            level("L2 far partition", CachePath::L2),
        ],
        dram_latency_cycles: Some(700.0),
        dram_latency_distribution: None,
        shared_memory_latency_cycles: None,
        curves: Vec::new(),
    }
}

fn measured(
    line: Option<u64>,
    answer: Result<RandomChaseSamples, BackendError>,
) -> (Vec<Option<u64>>, Vec<String>, u32) {
    let mut system = ColdOnly { answer, calls: 0 };
    let mut h = hierarchy(line);
    let mut warnings = Vec::new();
    measure_l2_fetch(&mut system, &mut h, &mut warnings);
    let fetches = h.levels.iter().map(|l| l.fetch_bytes).collect();
    (fetches, warnings, system.calls)
}

fn samples(fetch: u64) -> Result<RandomChaseSamples, BackendError> {
    Ok(RandomChaseSamples {
        footprint_bytes: 64 * 1024,
        stride_bytes: 32,
        cycles: ideal(512, 128, 32, fetch),
    })
}

#[test]
fn the_l2_level_alone_gets_the_fetch() {
    let (fetches, warnings, calls) = measured(Some(128), samples(64));
    assert_eq!(fetches, [None, Some(64), None]);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(calls, 1);
}

#[test]
fn an_unknown_line_or_model_skips_it_and_a_failure_warns() {
    // No line (a quick probe's L2): not measured at all.
    let (fetches, warnings, calls) = measured(None, samples(64));
    assert_eq!((fetches, warnings.len(), calls), (vec![None; 3], 0, 0));
    // No model: silent.
    let unsupported = Err(BackendError::Unsupported { what: "no".into() });
    let (fetches, warnings, _) = measured(Some(128), unsupported);
    assert_eq!((fetches, warnings.len()), (vec![None; 3], 0));
    // A failed launch, or samples that tell nothing: unknown, with a warning.
    let failed = Err(BackendError::Launch {
        message: "out of memory".into(),
    });
    let (fetches, warnings, _) = measured(Some(128), failed);
    assert_eq!(fetches, vec![None; 3]);
    assert_eq!(
        warnings,
        ["caches: the L2's fetch not measured: kernel launch failed: out of memory"]
    );
    let few = Ok(RandomChaseSamples {
        footprint_bytes: 4096,
        stride_bytes: 32,
        cycles: ideal(32, 128, 32, 64),
    });
    let (fetches, warnings, _) = measured(Some(128), few);
    assert_eq!(fetches, vec![None; 3]);
    assert!(
        warnings[0].starts_with("caches: the L2's fetch not measured: 32 whole lines"),
        "{warnings:?}"
    );
}

#[test]
fn a_miss_that_now_and_then_fetches_the_whole_line_reads_as_its_usual_fetch() {
    // An H100's pattern: 64 B fetches, but in one line of eight the load 64 B in hits too
    // (its line came in whole). Every offset's share is clear though fewer than 90% of the
    // lines match 64 B at every offset.
    let samples: Vec<u64> = (0..512u64)
        .flat_map(|l| {
            let whole = l % 8 == 0;
            [MISS, HIT, if whole { HIT } else { MISS }, HIT]
        })
        .collect();
    assert_eq!(fetch_from_samples(&samples, 32, 128, 280.0), Ok(64));
    // With half the lines whole, offset 64 is neither a hit nor a miss: unknown.
    let samples: Vec<u64> = (0..512u64)
        .flat_map(|l| [MISS, HIT, if l % 2 == 0 { HIT } else { MISS }, HIT])
        .collect();
    assert!(matches!(
        fetch_from_samples(&samples, 32, 128, 280.0),
        Err(NoFetch::NoCandidate { .. })
    ));
}
