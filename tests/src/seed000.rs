//! What seed 000 (Karnagel et al., DaMoN'17) §6 found worked on the K80 and the P100, as
//! checks of the planners on a profile of each GPU. `runtime/core/tests/plan_seed000.rs`
//! runs them on profiles built from the paper's tables, `tuner/probe/tests/sim_plans.rs` on
//! profiles the probe measures from the simulated GPUs. Each check quotes the sentence it
//! tests.

use memtune_core::plan::{grouping, sampling, Approach, GroupingWorkload, SamplingWorkload};
use memtune_core::profile::{MemoryKind, Profile};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The two GPUs of seed 000 as profiles, with the TLB reaches of their device memory.
pub struct PaperGpus<'a> {
    pub p100: &'a Profile,
    pub k80: &'a Profile,
    /// The P100's L2 TLB reach (Table 2: 65 × 32 MB).
    pub p100_l2_reach: u64,
    /// The K80's L2 TLB reach (Table 2: 65 × 2 MB).
    pub k80_l2_reach: u64,
    /// The K80's L3 TLB reach (Table 2: 1032 × 2 MB).
    pub k80_l3_reach: u64,
}

/// One `#[test]` per check of [`PaperGpus`], named as the check, each running it on the
/// `PaperGpus` that `$gpus` gives.
#[macro_export]
macro_rules! seed000_tests {
    ($gpus:expr) => {
        $crate::seed000_tests!(
            $gpus;
            p100_is_not_scoped_within_the_l2_reach,
            p100_never_uses_128_mb_scopes,
            p100_second_pass_pays_only_once_the_region_grows,
            p100_large_regions_take_the_fewest_scopes_that_fit_l2,
            k80_beyond_l3_reach_takes_two_gb_scopes,
            k80_within_l3_reach_gains_little_from_128_mb_scopes,
            passes_pay_off_less_on_the_p100_than_on_the_k80,
            p100_grouping_copies_with_scopes_that_fit_l2,
            p100_grouping_never_uses_128_mb_scopes,
            k80_grouping_copies_in_scopes_that_fit_l3,
            k80_grouping_without_room_for_the_copy_buffer_stays_naive,
        );
    };
    ($gpus:expr; $($check:ident,)+) => {
        $(
            #[test]
            fn $check() {
                $gpus.$check();
            }
        )+
    };
}

/// The plan for random reads of `region_bytes` of device memory, 1024 per thread.
pub fn sample(profile: &Profile, region_bytes: u64) -> sampling::SamplingPlan {
    let w = SamplingWorkload {
        region_bytes,
        memory: MemoryKind::Device,
        reads_per_thread: 1024,
    };
    sampling::plan(profile, &w).unwrap()
}

/// §2.2: the input column "is divided into 128MB chunks, which are stored in CPU pinned main
/// memory and accessed from the GPU using zero-copy"; the table is on the GPU. §5.3: "only
/// 128MB of input data need to be stored on the GPU at any time".
pub fn group(
    profile: &Profile,
    table_bytes: u64,
    input_memory: MemoryKind,
) -> grouping::GroupingPlan {
    let w = GroupingWorkload {
        table_bytes,
        table_memory: MemoryKind::Device,
        input_memory,
        input_bytes: Some(128_000_000),
    };
    grouping::plan(profile, &w).unwrap()
}

/// §6.1, P100: "Even in this case, a speedup of 2x can be achieved for accesses of 16GB."
/// Checks the plan (eight 2 GB scopes, avoiding L2 TLB misses) and returns it, for the
/// caller to check the predicted speedup on the profile it trusts for that number.
pub fn p100_sixteen_gb_in_two_gb_scopes(p100: &Profile) -> sampling::SamplingPlan {
    let plan = sample(p100, 16 * GIB);
    assert_eq!((plan.passes, plan.scope_bytes), (8, 2 * GIB), "{plan:#?}");
    assert!(
        plan.reasons.iter().any(|r| r.contains("avoids L2")),
        "{plan:#?}"
    );
    plan
}

impl PaperGpus<'_> {
    pub fn p100_is_not_scoped_within_the_l2_reach(&self) {
        // §6: "smaller TLB scopes were also tested, in order to avoid L1 TLB misses. However,
        // the large amount of necessary passes, combined with the small delay of an L1 TLB
        // miss, prevent performance improvement in those cases."
        for region in [64 * MIB, 256 * MIB, GIB, 2 * GIB] {
            let plan = sample(self.p100, region);
            assert_eq!((plan.passes, plan.scope_bytes), (1, region), "{plan:#?}");
        }
    }

    pub fn p100_never_uses_128_mb_scopes(&self) {
        // §6.1, P100: "128MB TLB scopes are not beneficial due to their pass overhead and due
        // to not avoiding L1 TLB misses."
        for region in (8..=34).map(|k| 1u64 << (k / 2 + 11) << 10 >> (k % 2)) {
            let plan = sample(self.p100, region.min(16 * GIB));
            assert!(
                plan.passes == 1 || plan.scope_bytes > 128 * MIB,
                "{plan:#?}"
            );
        }
    }

    pub fn p100_second_pass_pays_only_once_the_region_grows(&self) {
        // §6.1, P100: "with every new pass, the performance first decreases, mostly due to
        // memory accesses being in the first pass while adding the computational overhead of
        // the second pass (e.g., around 2GB). When accessing a wider memory range, data
        // accesses are equally divided between the passes, hiding the pass overhead and
        // leading to better performance again (e.g., around 4GB)."
        let just_over = sample(self.p100, 2100 * MIB);
        assert_eq!(just_over.passes, 1, "{just_over:#?}");
        let four = sample(self.p100, 4 * GIB);
        assert_eq!((four.passes, four.scope_bytes), (2, 2 * GIB), "{four:#?}");
        assert!(four.predicted_speedup > 1.5, "{four:#?}");
    }

    pub fn p100_large_regions_take_the_fewest_scopes_that_fit_l2(&self) {
        // §6: "2GB, potentially avoiding ... L2 TLB misses on the P100."
        for gib in [4, 6, 8, 10, 12, 14, 16] {
            let plan = sample(self.p100, gib * GIB);
            assert_eq!(
                (plan.passes, plan.scope_bytes),
                (gib as u32 / 2, 2 * GIB),
                "{plan:#?}"
            );
        }
    }

    pub fn k80_beyond_l3_reach_takes_two_gb_scopes(&self) {
        // §6.1, K80: "For 2GB TLB scopes, the pass overhead is not significant due to the
        // lower number of necessary passes, and the avoidance of L3 TLB misses outweighs the
        // additional overhead."
        for region in [4 * GIB, 8 * GIB, 12 * GIB] {
            let plan = sample(self.k80, region);
            self.assert_k80_l3_scopes(plan.scope_bytes, plan.passes, region, &plan);
            assert!(plan.predicted_speedup > 3.0, "{plan:#?}");
        }
    }

    pub fn k80_within_l3_reach_gains_little_from_128_mb_scopes(&self) {
        // §6.1, K80: "A minor improvement is seen for data sizes between 130MB and 1GB, as
        // 128MB scopes avoid L2 TLB misses as well as L3 TLB misses. However, with more than
        // 8 passes, the speedup disappears due to the additional pass overhead."
        for region in [256 * MIB, 512 * MIB, GIB, 1536 * MIB, 2 * GIB] {
            let plan = sample(self.k80, region);
            assert!(
                plan.passes <= 8 && plan.predicted_speedup < 1.25,
                "{plan:#?}"
            );
        }
    }

    pub fn passes_pay_off_less_on_the_p100_than_on_the_k80(&self) {
        // §6.1: "For the P100, the overhead of multiple passes is more significant, as the
        // delay of an L2 TLB miss is smaller than L3 TLB misses on the K80."
        let (k80, p100) = (sample(self.k80, 8 * GIB), sample(self.p100, 8 * GIB));
        assert!(
            k80.predicted_speedup > p100.predicted_speedup,
            "{k80:#?}\n{p100:#?}"
        );
    }

    pub fn p100_grouping_copies_with_scopes_that_fit_l2(&self) {
        // §6.2, P100: "We see a significant difference in the two approaches for 2GB scopes,
        // as the execution is limited by PCIe transfers for three passes or more. Without the
        // additional transfers (copy approach), we achieve a final speedup of 2.5x."
        for table in [3 * GIB, 8 * GIB, 12 * GIB] {
            let plan = group(self.p100, table, MemoryKind::Pinned);
            assert_eq!(plan.approach, Approach::Copy, "{plan:#?}");
            assert!(plan.scope_bytes <= self.p100_l2_reach, "{plan:#?}");
            assert_eq!(
                u64::from(plan.passes),
                table.div_ceil(self.p100_l2_reach),
                "{plan:#?}"
            );
        }
    }

    pub fn p100_grouping_never_uses_128_mb_scopes(&self) {
        // §6.2, P100: "Either version with 128MB scopes is slower than the original version,
        // as multiple passes over the data are too time consuming, even when using our copy
        // approach."
        for table in [256 * MIB, GIB, 2 * GIB, 4 * GIB, 16 * GIB] {
            let plan = group(self.p100, table, MemoryKind::Pinned);
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

    pub fn k80_grouping_copies_in_scopes_that_fit_l3(&self) {
        // §6.2, K80: "We test hash tables sizes up to 11.2GB ... For 2GB TLB scopes, the copy
        // approach is also better than the naive approach."
        let table = 11 * GIB + GIB / 5;
        let plan = group(self.k80, table, MemoryKind::Pinned);
        assert_eq!(plan.approach, Approach::Copy, "{plan:#?}");
        self.assert_k80_l3_scopes(plan.scope_bytes, plan.passes, table, &plan);
    }

    pub fn k80_grouping_without_room_for_the_copy_buffer_stays_naive(&self) {
        // §5.3: "Storing the input data on the GPU is only a small space overhead, as our
        // grouping operator natively works on 128MB strides of input data at one time."
        // Given the whole 6 GB column at once, the buffer does not fit beside an 11.2 GB
        // table in 12 GB: naive (which §6.2 found faster than one pass on the K80), and the
        // reasons say to chunk.
        let w = GroupingWorkload {
            table_bytes: 11 * GIB + GIB / 5,
            table_memory: MemoryKind::Device,
            input_memory: MemoryKind::Pinned,
            input_bytes: Some(6_000_000_000),
        };
        let plan = grouping::plan(self.k80, &w).unwrap();
        assert_eq!(plan.approach, Approach::Naive, "{plan:#?}");
        assert!(
            plan.reasons
                .iter()
                .any(|r| r.contains("does not fit") && r.contains("chunks")),
            "{plan:#?}"
        );
    }

    /// K80 scopes of `scope_bytes` reach past the L2 TLB and fit the L3 TLB, in as few
    /// passes over `total` bytes as that allows.
    fn assert_k80_l3_scopes(
        &self,
        scope_bytes: u64,
        passes: u32,
        total: u64,
        plan: &dyn std::fmt::Debug,
    ) {
        assert!(
            scope_bytes <= self.k80_l3_reach && scope_bytes > self.k80_l2_reach,
            "{plan:#?}"
        );
        assert_eq!(
            u64::from(passes),
            total.div_ceil(self.k80_l3_reach),
            "{plan:#?}"
        );
    }
}
