//! Plans as compile-time constants: what `memtune::sampling_plan!` and its siblings expand to.
//!
//! The runtime plans hold `Vec<String>` reasons, so they cannot be `const`; these mirror them
//! with `&'static` data, add the workload they were planned for and a [`ProfileStamp`] naming
//! the profile they came from, and compare equal to a runtime plan with the same decision.

use crate::default::DEFAULT_UUID;
use crate::plan::grouping::{Approach, GroupingPlan, GroupingWorkload};
use crate::plan::sampling::{SamplingPlan, SamplingWorkload};
use crate::plan::stencil::{StencilPlan, StencilWorkload, Variant};
use crate::profile::{DeviceIdentity, Profile};
use std::fmt;

/// Which profile a set of constants was planned with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileStamp {
    pub uuid: &'static str,
    pub name: &'static str,
    /// `[major, minor]`.
    pub compute_capability: [u32; 2],
    pub sm_count: u32,
    /// The profile's `sha256:` digest.
    pub digest: &'static str,
    /// How the compile-time lookup found it: `argument` (the macro's `profile = "..."`),
    /// `env` (`MEMTUNE_PROFILE`), `project`, `cache`, `builtin_default`.
    pub source: &'static str,
    /// The file, absolute; `None` for the built-in default.
    pub path: Option<&'static str>,
    /// Made by the simulator (`cargo tune probe --simulate`), not measured on a GPU.
    pub simulated: bool,
}

impl ProfileStamp {
    /// Whether `profile` is the very profile stamped (same digest).
    pub fn is(&self, profile: &Profile) -> bool {
        self.digest == profile.digest
    }

    pub fn is_builtin_default(&self) -> bool {
        self.uuid == DEFAULT_UUID
    }

    /// Whether the stamped profile describes `device`'s model (name, compute capability,
    /// SM count): a simulated profile never does.
    pub fn is_model_of(&self, device: &DeviceIdentity) -> bool {
        !self.simulated
            && self.name == device.name
            && self.compute_capability
                == [
                    device.compute_capability.major,
                    device.compute_capability.minor,
                ]
            && self.sm_count == device.sm_count
    }
}

impl fmt::Display for ProfileStamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.name, self.uuid)?;
        if self.simulated {
            f.write_str(", simulated")?;
        }
        write!(f, ") from {}", self.source)?;
        if let Some(path) = self.path {
            write!(f, " {path}")?;
        }
        Ok(())
    }
}

/// [`SamplingPlan`] as a constant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplingConsts {
    pub workload: SamplingWorkload,
    pub scope_bytes: u64,
    pub passes: u32,
    pub predicted_speedup: f64,
    pub reasons: &'static [&'static str],
    pub profile: ProfileStamp,
}

/// [`GroupingPlan`] as a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupingConsts {
    pub workload: GroupingWorkload,
    pub scope_bytes: u64,
    pub passes: u32,
    pub approach: Approach,
    pub reasons: &'static [&'static str],
    pub profile: ProfileStamp,
}

/// [`StencilPlan`] as a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StencilConsts {
    pub workload: StencilWorkload,
    pub variant: Variant,
    pub block: [u32; 3],
    pub staging: bool,
    pub reasons: &'static [&'static str],
    pub profile: ProfileStamp,
}

fn owned(reasons: &[&str]) -> Vec<String> {
    reasons.iter().map(|r| r.to_string()).collect()
}

impl SamplingConsts {
    /// The runtime plan with the same decision and reasons.
    pub fn to_plan(&self) -> SamplingPlan {
        SamplingPlan {
            scope_bytes: self.scope_bytes,
            passes: self.passes,
            predicted_speedup: self.predicted_speedup,
            reasons: owned(self.reasons),
        }
    }
}

impl GroupingConsts {
    /// The runtime plan with the same decision and reasons.
    pub fn to_plan(&self) -> GroupingPlan {
        GroupingPlan {
            scope_bytes: self.scope_bytes,
            passes: self.passes,
            approach: self.approach,
            reasons: owned(self.reasons),
        }
    }
}

impl StencilConsts {
    /// The runtime plan with the same decision and reasons.
    pub fn to_plan(&self) -> StencilPlan {
        StencilPlan {
            variant: self.variant,
            block: self.block,
            staging: self.staging,
            reasons: owned(self.reasons),
        }
    }
}

/// Same decision; reasons are for people and not compared.
impl PartialEq<SamplingPlan> for SamplingConsts {
    fn eq(&self, plan: &SamplingPlan) -> bool {
        self.scope_bytes == plan.scope_bytes
            && self.passes == plan.passes
            && self.predicted_speedup == plan.predicted_speedup
    }
}

/// Same decision; reasons are for people and not compared.
impl PartialEq<GroupingPlan> for GroupingConsts {
    fn eq(&self, plan: &GroupingPlan) -> bool {
        self.scope_bytes == plan.scope_bytes
            && self.passes == plan.passes
            && self.approach == plan.approach
    }
}

/// Same decision; reasons are for people and not compared.
impl PartialEq<StencilPlan> for StencilConsts {
    fn eq(&self, plan: &StencilPlan) -> bool {
        self.variant == plan.variant && self.block == plan.block && self.staging == plan.staging
    }
}

/// What a macro expands to beside its `compile_error!`, so that the code around the call
/// still type-checks and the user sees one error: never run, as the crate does not compile.
#[doc(hidden)]
pub mod fallback {
    use super::*;
    use crate::plan::stencil::Dtype;
    use crate::profile::MemoryKind;

    pub const STAMP: ProfileStamp = ProfileStamp {
        uuid: DEFAULT_UUID,
        name: "",
        compute_capability: [0, 0],
        sm_count: 0,
        digest: "",
        source: "",
        path: None,
        simulated: false,
    };

    pub const SAMPLING: SamplingConsts = SamplingConsts {
        workload: SamplingWorkload {
            region_bytes: 0,
            memory: MemoryKind::Device,
            reads_per_thread: 0,
        },
        scope_bytes: 0,
        passes: 0,
        predicted_speedup: 0.0,
        reasons: &[],
        profile: STAMP,
    };

    pub const GROUPING: GroupingConsts = GroupingConsts {
        workload: GroupingWorkload {
            table_bytes: 0,
            table_memory: MemoryKind::Device,
            input_memory: MemoryKind::Device,
            input_bytes: None,
        },
        scope_bytes: 0,
        passes: 0,
        approach: Approach::Unscoped,
        reasons: &[],
        profile: STAMP,
    };

    pub const STENCIL: StencilConsts = StencilConsts {
        workload: StencilWorkload {
            dims: [0; 3],
            dtype: Dtype::F32,
            repeats: 0,
        },
        variant: Variant::Plain,
        block: [0; 3],
        staging: false,
        reasons: &[],
        profile: STAMP,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::stencil::Dtype;
    use crate::profile::MemoryKind;

    const STAMP: ProfileStamp = ProfileStamp {
        uuid: "GPU-00000001-0000-4000-8000-000000000001",
        name: "Tesla K80",
        compute_capability: [3, 7],
        sm_count: 13,
        digest: "sha256:00",
        source: "env",
        path: Some("/p/k80.json"),
        simulated: false,
    };

    const SAMPLE: SamplingConsts = SamplingConsts {
        workload: SamplingWorkload {
            region_bytes: 16 << 30,
            memory: MemoryKind::Pinned,
            reads_per_thread: 64,
        },
        scope_bytes: 2 << 30,
        passes: 8,
        predicted_speedup: 3.5,
        reasons: &["because"],
        profile: STAMP,
    };

    #[test]
    fn consts_equal_the_plan_of_the_same_decision() {
        let plan = SAMPLE.to_plan();
        assert!(SAMPLE == plan);
        assert_eq!(plan.reasons, vec!["because".to_string()]);
        let other = SamplingPlan {
            passes: 4,
            ..plan.clone()
        };
        assert!(SAMPLE != other);

        const STENCIL: StencilConsts = StencilConsts {
            workload: StencilWorkload {
                dims: [64, 64, 64],
                dtype: Dtype::F32,
                repeats: 6,
            },
            variant: Variant::Staged,
            block: [32, 4, 4],
            staging: true,
            reasons: &[],
            profile: STAMP,
        };
        let mut plan = STENCIL.to_plan();
        assert!(STENCIL == plan);
        plan.block = [32, 4, 2];
        assert!(STENCIL != plan);
    }

    #[test]
    fn stamp_matches_models_but_never_a_simulated_one() {
        let mut device = crate::default::builtin().device;
        device.name = "Tesla K80".into();
        device.compute_capability = crate::profile::ComputeCapability { major: 3, minor: 7 };
        device.sm_count = 13;
        assert!(STAMP.is_model_of(&device));
        device.sm_count = 15;
        assert!(!STAMP.is_model_of(&device));
        device.sm_count = 13;
        let simulated = ProfileStamp {
            simulated: true,
            ..STAMP
        };
        assert!(!simulated.is_model_of(&device));
        assert!(!STAMP.is_builtin_default());
        let text = simulated.to_string();
        assert!(
            text.contains("Tesla K80")
                && text.contains("simulated")
                && text.contains("/p/k80.json"),
            "{text}"
        );
    }
}
