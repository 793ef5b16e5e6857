//! Re-planning at run time: the constants of `sampling_plan!` and its siblings were planned
//! for the profile found at compile time; the binary may run on another GPU. [`Replan`] picks
//! the profile for the device present (an embedded profile of its UUID, then of its model,
//! then the user cache, then the compile-time profile) and re-plans with it, saying which
//! profile it used and whether the constants were replaced.

use memtune_core::compiled::{GroupingConsts, ProfileStamp, SamplingConsts, StencilConsts};
use memtune_core::plan::grouping::GroupingPlan;
use memtune_core::plan::sampling::SamplingPlan;
use memtune_core::plan::stencil::StencilPlan;
use memtune_core::plan::PlanError;
use memtune_core::{codec, DeviceIdentity, Profile, Store};
use std::fmt;
use std::path::{Path, PathBuf};

/// The profiles `embedded_profiles!()` put into the binary: file name and bytes.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedProfiles {
    files: &'static [(&'static str, &'static [u8])],
}

impl EmbeddedProfiles {
    pub const fn new(files: &'static [(&'static str, &'static [u8])]) -> EmbeddedProfiles {
        EmbeddedProfiles { files }
    }

    pub fn files(&self) -> &'static [(&'static str, &'static [u8])] {
        self.files
    }

    /// The profiles that verify, and a warning for each that does not (the macro checked
    /// them at compile time, so only a build by another memtune gets here).
    pub fn profiles(&self) -> (Vec<(&'static str, Profile)>, Vec<String>) {
        let mut profiles = Vec::new();
        let mut warnings = Vec::new();
        for &(name, bytes) in self.files {
            match codec::from_slice(bytes, Path::new(name)) {
                Ok(p) => profiles.push((name, p)),
                Err(e) => warnings.push(format!("embedded profile skipped: {e}")),
            }
        }
        (profiles, warnings)
    }
}

/// Where the runtime's profile came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeSource {
    /// An embedded profile of this GPU's UUID (the file name).
    Embedded(&'static str),
    /// An embedded profile of another GPU of the same model.
    EmbeddedSameModel(&'static str),
    /// The user cache's profile of this GPU.
    Cache(PathBuf),
    /// None of those: the constants as planned at compile time.
    CompileTime,
}

impl RuntimeSource {
    /// A short stable name for logs and JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            RuntimeSource::Embedded(_) => "embedded",
            RuntimeSource::EmbeddedSameModel(_) => "embedded_same_model",
            RuntimeSource::Cache(_) => "cache",
            RuntimeSource::CompileTime => "compile_time",
        }
    }
}

impl fmt::Display for RuntimeSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeSource::Embedded(name) => write!(f, "embedded profile {name}"),
            RuntimeSource::EmbeddedSameModel(name) => {
                write!(f, "embedded profile of the same model {name}")
            }
            RuntimeSource::Cache(path) => write!(f, "user cache {}", path.display()),
            RuntimeSource::CompileTime => f.write_str("the compile-time profile"),
        }
    }
}

/// The profile a runtime plan was made with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsedProfile {
    pub uuid: String,
    pub name: String,
    pub digest: String,
    pub simulated: bool,
}

impl UsedProfile {
    fn of(profile: &Profile) -> UsedProfile {
        UsedProfile {
            uuid: profile.device.uuid.clone(),
            name: profile.device.name.clone(),
            digest: profile.digest.clone(),
            simulated: profile.is_simulated(),
        }
    }

    fn of_stamp(stamp: &ProfileStamp) -> UsedProfile {
        UsedProfile {
            uuid: stamp.uuid.to_string(),
            name: stamp.name.to_string(),
            digest: stamp.digest.to_string(),
            simulated: stamp.simulated,
        }
    }
}

/// A plan for the device present, and how it relates to the compile-time constants.
#[derive(Debug, Clone, PartialEq)]
pub struct Replanned<P> {
    pub plan: P,
    pub source: RuntimeSource,
    /// The profile the constants were planned with.
    pub planned_for: ProfileStamp,
    /// The profile `plan` was made with.
    pub used: UsedProfile,
    /// `plan` was made with another profile than the constants (the digests differ).
    pub replaced: bool,
    /// `plan`'s decision differs from the constants'.
    pub changed: bool,
    pub warnings: Vec<String>,
}

/// The profile chosen for one device, ready to re-plan any constants.
#[derive(Debug, Clone)]
pub struct Replan {
    device: DeviceIdentity,
    chosen: Option<(Profile, RuntimeSource)>,
    warnings: Vec<String>,
}

impl Replan {
    /// Picks the profile for `device`: an embedded profile of its UUID, then an embedded
    /// (measured, not simulated) profile of its model, then the profile of its UUID in the
    /// user cache `cache_dir`; with none, plans keep the compile-time constants.
    pub fn for_device(
        device: &DeviceIdentity,
        embedded: &EmbeddedProfiles,
        cache_dir: Option<&Path>,
    ) -> Replan {
        let (profiles, mut warnings) = embedded.profiles();
        let exact = profiles
            .iter()
            .find(|(_, p)| p.device.uuid == device.uuid)
            .map(|(name, p)| (p.clone(), RuntimeSource::Embedded(name)));
        let same_model = || {
            profiles
                .iter()
                .find(|(_, p)| !p.is_simulated() && p.device.model() == device.model())
                .map(|(name, p)| (p.clone(), RuntimeSource::EmbeddedSameModel(name)))
        };
        let cached = |warnings: &mut Vec<String>| {
            let store = Store::new(cache_dir?);
            match store.load(&device.uuid) {
                Ok(p) => p.map(|p| (p, RuntimeSource::Cache(store.path_for(&device.uuid)))),
                Err(e) => {
                    warnings.push(format!("user cache skipped: {e}"));
                    None
                }
            }
        };
        let chosen = exact.or_else(same_model).or_else(|| cached(&mut warnings));
        Replan {
            device: device.clone(),
            chosen,
            warnings,
        }
    }

    /// The profile chosen; `None` when the compile-time constants stand.
    pub fn profile(&self) -> Option<&Profile> {
        self.chosen.as_ref().map(|(p, _)| p)
    }

    pub fn source(&self) -> RuntimeSource {
        self.chosen
            .as_ref()
            .map_or(RuntimeSource::CompileTime, |(_, s)| s.clone())
    }

    pub fn device(&self) -> &DeviceIdentity {
        &self.device
    }

    /// Random sampling of the constants' workload, for the device present.
    pub fn sampling(&self, consts: &SamplingConsts) -> Result<Replanned<SamplingPlan>, PlanError> {
        self.replan(
            &consts.profile,
            || consts.to_plan(),
            |p| memtune_core::plan::sampling_untimed(p, &consts.workload),
            |plan| consts == plan,
        )
    }

    /// Hash grouping of the constants' workload, for the device present.
    pub fn grouping(&self, consts: &GroupingConsts) -> Result<Replanned<GroupingPlan>, PlanError> {
        self.replan(
            &consts.profile,
            || consts.to_plan(),
            |p| memtune_core::plan::grouping_untimed(p, &consts.workload),
            |plan| consts == plan,
        )
    }

    /// The 3-D stencil of the constants' workload, for the device present.
    pub fn stencil(&self, consts: &StencilConsts) -> Result<Replanned<StencilPlan>, PlanError> {
        self.replan(
            &consts.profile,
            || consts.to_plan(),
            |p| memtune_core::plan::stencil_untimed(p, &consts.workload),
            |plan| consts == plan,
        )
    }

    fn replan<P>(
        &self,
        stamp: &ProfileStamp,
        constants: impl FnOnce() -> P,
        plan: impl FnOnce(&Profile) -> Result<P, PlanError>,
        same_as_constants: impl FnOnce(&P) -> bool,
    ) -> Result<Replanned<P>, PlanError> {
        let mut warnings = self.warnings.clone();
        let (plan, used, source, replaced) = match &self.chosen {
            // The very profile the constants came from: they are its plan.
            Some((p, source)) if stamp.is(p) => {
                (constants(), UsedProfile::of(p), source.clone(), false)
            }
            Some((p, source)) => (plan(p)?, UsedProfile::of(p), source.clone(), true),
            None => {
                warnings.extend(self.compile_time_warning(stamp));
                (
                    constants(),
                    UsedProfile::of_stamp(stamp),
                    RuntimeSource::CompileTime,
                    false,
                )
            }
        };
        let changed = !same_as_constants(&plan);
        Ok(Replanned {
            plan,
            source,
            planned_for: *stamp,
            used,
            replaced,
            changed,
            warnings,
        })
    }

    /// Why the compile-time constants may not fit this device, when they may not.
    fn compile_time_warning(&self, stamp: &ProfileStamp) -> Option<String> {
        let device = &self.device;
        if stamp.uuid == device.uuid {
            return None;
        }
        let fix = "ship its profile with `embedded_profiles!()` (`cargo tune --project` on it), or run `cargo tune` on this machine";
        Some(if stamp.is_builtin_default() {
            format!(
                "no profile for this GPU, {} ({}): the constants were planned with the built-in conservative default; {fix}",
                device.name, device.uuid
            )
        } else if stamp.is_model_of(device) {
            format!(
                "no profile for this GPU, {} ({}): the constants were planned for another of its model, {stamp}",
                device.name, device.uuid
            )
        } else {
            format!(
                "no profile for this GPU, {} ({}): the constants were planned for {stamp}, another model; {fix}",
                device.model(),
                device.uuid
            )
        })
    }
}
