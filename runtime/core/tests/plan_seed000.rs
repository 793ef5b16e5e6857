//! The planners against what seed 000 (Karnagel et al., DaMoN'17) §6 found worked on the
//! K80 and the P100. The profiles are built from Table 2 (TLB levels of device memory) with
//! a synthetic random-access curve derived from those levels (see `curve`); each test
//! quotes the sentence it checks.

use memtune_core::plan::{grouping, sampling, Approach, GroupingWorkload, SamplingWorkload};
use memtune_core::{
    ComputeCapability, DeviceIdentity, MemoryKind, Profile, Provenance, RandomAccessCurve,
    RandomAccessPoint, Section, TlbKind, TlbLevel,
};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// One GPU of seed 000: Table 1 and Table 2, plus the simulator's L2 hit latency
/// (`tuner/probe/src/sim/builtin/*.json`, an assumption there too).
struct Gpu {
    name: &'static str,
    compute_capability: (u32, u32),
    sm_count: u32,
    clock_mhz: f64,
    memory_bytes: u64,
    memory_clock_khz: u64,
    memory_bus_width_bits: u32,
    hit_cycles: f64,
    /// Table 2: (entries, page bytes, miss cycles), fastest first.
    levels: &'static [(u64, u64, f64)],
    /// Random-access slowdown beyond the last level's reach, as the paper reports it.
    slowdown: f64,
}

/// Table 2, P100: L1 16 × 2 MB (≈9 cycles), L2 65 × 32 MB = 2080 MB (≈110 cycles).
/// §2.3: "the slowdown for memory accesses >2GB is still significant with factors of 4.3x
/// for random sampling".
const P100: Gpu = Gpu {
    name: "Tesla P100-PCIE-16GB",
    compute_capability: (6, 0),
    sm_count: 56,
    clock_mhz: 1480.0,
    memory_bytes: 16 * GIB,
    memory_clock_khz: 715_000,
    memory_bus_width_bits: 4096,
    hit_cycles: 293.0,
    levels: &[(16, 2 * MIB, 9.0), (65, 32 * MIB, 110.0)],
    slowdown: 4.3,
};

/// Table 2, K80: L1 16 × 128 KB (≈9), L2 65 × 2 MB = 130 MB (≈55), L3 1032 × 2 MB = 2064 MB
/// (≈177). §1: "a performance decrease of an order of magnitude ... ≈13.3x".
const K80: Gpu = Gpu {
    name: "Tesla K80",
    compute_capability: (3, 7),
    sm_count: 13,
    clock_mhz: 875.0,
    memory_bytes: 12 * GIB,
    memory_clock_khz: 2_505_000,
    memory_bus_width_bits: 384,
    hit_cycles: 230.0,
    levels: &[
        (16, 128 * KIB, 9.0),
        (65, 2 * MIB, 55.0),
        (1032, 2 * MIB, 177.0),
    ],
    slowdown: 13.3,
};

impl Gpu {
    fn levels(&self) -> Vec<TlbLevel> {
        self.levels
            .iter()
            .map(|&(entries, page_bytes, cycles)| TlbLevel {
                entries,
                page_bytes,
                reach_bytes: entries * page_bytes,
                miss_penalty_cycles: cycles,
                miss_penalty_ns: cycles / self.clock_mhz * 1e3,
                confidence: 1.0,
                shared_by_sms: None,
            })
            .collect()
    }

    /// Relative cost of a random read over `region`: each level multiplies it by
    /// `1 + (F - 1) · (share of pages it misses)`. Inner levels cost their miss latency
    /// (`F = 1 + penalty / hit`: a miss is served by the next level); the last level's `F`
    /// makes the total fall the one the paper reports, since its misses go to page walks,
    /// which throttle throughput far beyond their latency.
    fn cost(&self, region: u64) -> f64 {
        let levels = self.levels();
        let inner: f64 = levels[..levels.len() - 1]
            .iter()
            .map(|l| 1.0 + l.miss_penalty_cycles / self.hit_cycles)
            .product();
        levels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let fall = if i + 1 == levels.len() {
                    self.slowdown / inner
                } else {
                    1.0 + l.miss_penalty_cycles / self.hit_cycles
                };
                let missed = (1.0 - l.reach_bytes as f64 / region as f64).max(0.0);
                1.0 + (fall - 1.0) * missed
            })
            .product()
    }

    /// The probe's sweep (64 KiB doubling up to the memory size) of `cost`, with the
    /// simulator's all-hit throughput: 64 reads in flight per SM at the hit latency.
    fn curve(&self) -> RandomAccessCurve {
        let peak = f64::from(self.sm_count) * 64.0 / self.hit_cycles * self.clock_mhz * 1e6;
        let mut regions: Vec<u64> = std::iter::successors(Some(64 * KIB), |r| Some(r * 2))
            .take_while(|&r| r <= self.memory_bytes)
            .collect();
        if regions.last() != Some(&self.memory_bytes) {
            regions.push(self.memory_bytes);
        }
        let points: Vec<RandomAccessPoint> = regions
            .into_iter()
            .map(|region_bytes| RandomAccessPoint {
                region_bytes,
                reads_per_second: peak / self.cost(region_bytes),
            })
            .collect();
        // The probe's rule: the region before the largest fall of at least 10%.
        let knee_bytes = points
            .windows(2)
            .map(|w| {
                (
                    w[0].region_bytes,
                    w[0].reads_per_second / w[1].reads_per_second,
                )
            })
            .filter(|&(_, fall)| fall >= 1.1)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(region, _)| region);
        RandomAccessCurve {
            points,
            knee_bytes,
            draw_cost_relative: None,
            atomic_points: vec![],
        }
    }

    /// Device memory measured as above; the paper measured nothing else.
    fn profile(&self) -> Profile {
        let mut p = self.tlb_only();
        p.random_access.device = Section::Measured(self.curve());
        p
    }

    fn tlb_only(&self) -> Profile {
        let device = DeviceIdentity {
            uuid: "GPU-00000000-0000-0000-0000-00000000000a".to_string(),
            name: self.name.to_string(),
            compute_capability: ComputeCapability {
                major: self.compute_capability.0,
                minor: self.compute_capability.1,
            },
            sm_count: self.sm_count,
            l2_bytes: 0,
            shared_memory_per_block_bytes: 48 * KIB,
            shared_memory_per_block_optin_bytes: 48 * KIB,
            shared_memory_per_sm_bytes: 64 * KIB,
            global_memory_bytes: self.memory_bytes,
            sm_clock_khz: (self.clock_mhz * 1e3) as u64,
            memory_clock_khz: self.memory_clock_khz,
            memory_bus_width_bits: self.memory_bus_width_bits,
            driver_version: "12.0".to_string(),
            pci_bus_id: None,
        };
        let provenance = Provenance {
            memtune_version: "test".to_string(),
            probe_version: 1,
            created_at: "2017-05-15T00:00:00Z".to_string(),
            duration_seconds: 0.0,
            options: Default::default(),
            simulator: Some(format!("seed 000 {}", self.name)),
        };
        let mut p = Profile::identity_only(device, provenance);
        p.tlb.device = Section::Measured(TlbKind {
            levels: self.levels(),
            swept_up_to_bytes: self.memory_bytes,
            base_latency_cycles: self.hit_cycles,
            curves: vec![],
        });
        p
    }
}

fn sample(gpu: &Gpu, region_bytes: u64) -> sampling::SamplingPlan {
    let w = SamplingWorkload {
        region_bytes,
        memory: MemoryKind::Device,
        reads_per_thread: 1024,
    };
    sampling::plan(&gpu.profile(), &w).unwrap()
}

/// §2.2: the input column "is divided into 128MB chunks, which are stored in CPU pinned main
/// memory and accessed from the GPU using zero-copy"; the table is on the GPU. §5.3: "only
/// 128MB of input data need to be stored on the GPU at any time".
fn group(gpu: &Gpu, table_bytes: u64, input_memory: MemoryKind) -> grouping::GroupingPlan {
    let w = GroupingWorkload {
        table_bytes,
        table_memory: MemoryKind::Device,
        input_memory,
        input_bytes: Some(128_000_000),
    };
    grouping::plan(&gpu.profile(), &w).unwrap()
}

#[test]
fn p100_sixteen_gb_in_two_gb_scopes_is_twice_as_fast() {
    // §6.1, P100: "Even in this case, a speedup of 2x can be achieved for accesses of 16GB."
    // (This is the point the draw cost was calibrated on; the other tests are not.)
    let plan = sample(&P100, 16 * GIB);
    assert_eq!((plan.passes, plan.scope_bytes), (8, 2 * GIB), "{plan:#?}");
    assert!((1.8..2.3).contains(&plan.predicted_speedup), "{plan:#?}");
    assert!(
        plan.reasons.iter().any(|r| r.contains("avoids L2")),
        "{plan:#?}"
    );
}

#[test]
fn p100_is_not_scoped_within_the_l2_reach() {
    // §6: "smaller TLB scopes were also tested, in order to avoid L1 TLB misses. However, the
    // large amount of necessary passes, combined with the small delay of an L1 TLB miss,
    // prevent performance improvement in those cases."
    for region in [64 * MIB, 256 * MIB, GIB, 2 * GIB] {
        let plan = sample(&P100, region);
        assert_eq!((plan.passes, plan.scope_bytes), (1, region), "{plan:#?}");
    }
}

#[test]
fn p100_never_uses_128_mb_scopes() {
    // §6.1, P100: "128MB TLB scopes are not beneficial due to their pass overhead and due to
    // not avoiding L1 TLB misses."
    for region in (8..=34).map(|k| 1u64 << (k / 2 + 11) << 10 >> (k % 2)) {
        let plan = sample(&P100, region.min(16 * GIB));
        assert!(
            plan.passes == 1 || plan.scope_bytes > 128 * MIB,
            "{plan:#?}"
        );
    }
}

#[test]
fn p100_second_pass_pays_only_once_the_region_grows() {
    // §6.1, P100: "with every new pass, the performance first decreases, mostly due to memory
    // accesses being in the first pass while adding the computational overhead of the second
    // pass (e.g., around 2GB). When accessing a wider memory range, data accesses are equally
    // divided between the passes, hiding the pass overhead and leading to better performance
    // again (e.g., around 4GB)."
    let just_over = sample(&P100, 2100 * MIB);
    assert_eq!(just_over.passes, 1, "{just_over:#?}");
    let four = sample(&P100, 4 * GIB);
    assert_eq!((four.passes, four.scope_bytes), (2, 2 * GIB), "{four:#?}");
    assert!(four.predicted_speedup > 1.5, "{four:#?}");
}

#[test]
fn p100_large_regions_take_the_fewest_scopes_that_fit_l2() {
    // §6: "2GB, potentially avoiding ... L2 TLB misses on the P100."
    for gib in [4, 6, 8, 10, 12, 14, 16] {
        let plan = sample(&P100, gib * GIB);
        assert_eq!(
            (plan.passes, plan.scope_bytes),
            (gib as u32 / 2, 2 * GIB),
            "{plan:#?}"
        );
    }
}

#[test]
fn k80_beyond_l3_reach_takes_two_gb_scopes() {
    // §6.1, K80: "For 2GB TLB scopes, the pass overhead is not significant due to the lower
    // number of necessary passes, and the avoidance of L3 TLB misses outweighs the
    // additional overhead."
    let l3_reach = 1032 * 2 * MIB;
    for region in [4 * GIB, 8 * GIB, 12 * GIB] {
        let plan = sample(&K80, region);
        assert!(
            plan.scope_bytes <= l3_reach && plan.scope_bytes > 130 * MIB,
            "{plan:#?}"
        );
        assert_eq!(
            u64::from(plan.passes),
            region.div_ceil(l3_reach),
            "{plan:#?}"
        );
        assert!(plan.predicted_speedup > 3.0, "{plan:#?}");
    }
}

#[test]
fn k80_within_l3_reach_gains_little_from_128_mb_scopes() {
    // §6.1, K80: "A minor improvement is seen for data sizes between 130MB and 1GB, as 128MB
    // scopes avoid L2 TLB misses as well as L3 TLB misses. However, with more than 8 passes,
    // the speedup disappears due to the additional pass overhead."
    for region in [256 * MIB, 512 * MIB, GIB, 1536 * MIB, 2 * GIB] {
        let plan = sample(&K80, region);
        assert!(
            plan.passes <= 8 && plan.predicted_speedup < 1.25,
            "{plan:#?}"
        );
    }
}

#[test]
fn passes_pay_off_less_on_the_p100_than_on_the_k80() {
    // §6.1: "For the P100, the overhead of multiple passes is more significant, as the delay
    // of an L2 TLB miss is smaller than L3 TLB misses on the K80."
    let (k80, p100) = (sample(&K80, 8 * GIB), sample(&P100, 8 * GIB));
    assert!(
        k80.predicted_speedup > p100.predicted_speedup,
        "{k80:#?}\n{p100:#?}"
    );
}

#[test]
fn k80_without_a_curve_still_scopes_from_the_miss_latencies() {
    // No random-access curve: the latency model understates the fall, yet L3 misses
    // (177 cycles) over 8 GB still outweigh four passes.
    let w = SamplingWorkload {
        region_bytes: 8 * GIB,
        memory: MemoryKind::Device,
        reads_per_thread: 1024,
    };
    let plan = sampling::plan(&K80.tlb_only(), &w).unwrap();
    assert_eq!((plan.passes, plan.scope_bytes), (4, 2 * GIB), "{plan:#?}");
    assert!(plan
        .reasons
        .iter()
        .any(|r| r.contains("miss latencies") && r.contains("cargo tune")));
}

#[test]
fn p100_grouping_copies_with_scopes_that_fit_l2() {
    // §6.2, P100: "We see a significant difference in the two approaches for 2GB scopes, as
    // the execution is limited by PCIe transfers for three passes or more. Without the
    // additional transfers (copy approach), we achieve a final speedup of 2.5x."
    let l2_reach = 65 * 32 * MIB;
    for table in [3 * GIB, 8 * GIB, 12 * GIB] {
        let plan = group(&P100, table, MemoryKind::Pinned);
        assert_eq!(plan.approach, Approach::Copy, "{plan:#?}");
        assert!(plan.scope_bytes <= l2_reach, "{plan:#?}");
        assert_eq!(
            u64::from(plan.passes),
            table.div_ceil(l2_reach),
            "{plan:#?}"
        );
    }
}

#[test]
fn p100_grouping_never_uses_128_mb_scopes() {
    // §6.2, P100: "Either version with 128MB scopes is slower than the original version, as
    // multiple passes over the data are too time consuming, even when using our copy
    // approach."
    for table in [256 * MIB, GIB, 2 * GIB, 4 * GIB, 16 * GIB] {
        let plan = group(&P100, table, MemoryKind::Pinned);
        assert!(
            plan.passes == 1 || plan.scope_bytes > 128 * MIB,
            "{plan:#?}"
        );
        if table <= 2 * GIB {
            assert_eq!(
                (plan.approach, plan.passes),
                (Approach::Unscoped, 1),
                "{plan:#?}"
            );
        }
    }
}

#[test]
fn k80_grouping_copies_in_scopes_that_fit_l3() {
    // §6.2, K80: "We test hash tables sizes up to 11.2GB ... For 2GB TLB scopes, the copy
    // approach is also better than the naive approach."
    let l3_reach = 1032 * 2 * MIB;
    let table = 11 * GIB + GIB / 5;
    let plan = group(&K80, table, MemoryKind::Pinned);
    assert_eq!(plan.approach, Approach::Copy, "{plan:#?}");
    assert!(
        plan.scope_bytes <= l3_reach && plan.scope_bytes > 130 * MIB,
        "{plan:#?}"
    );
    assert_eq!(
        u64::from(plan.passes),
        table.div_ceil(l3_reach),
        "{plan:#?}"
    );
}

#[test]
fn k80_grouping_without_room_for_the_copy_buffer_stays_naive() {
    // §5.3: "Storing the input data on the GPU is only a small space overhead, as our
    // grouping operator natively works on 128MB strides of input data at one time." Given the
    // whole 6 GB column at once, the buffer does not fit beside an 11.2 GB table in 12 GB:
    // naive (which §6.2 found faster than one pass on the K80), and the reasons say to chunk.
    let w = GroupingWorkload {
        table_bytes: 11 * GIB + GIB / 5,
        table_memory: MemoryKind::Device,
        input_memory: MemoryKind::Pinned,
        input_bytes: Some(6_000_000_000),
    };
    let plan = grouping::plan(&K80.profile(), &w).unwrap();
    assert_eq!(plan.approach, Approach::Naive, "{plan:#?}");
    assert!(
        plan.reasons
            .iter()
            .any(|r| r.contains("does not fit") && r.contains("chunks")),
        "{plan:#?}"
    );
}
