//! The user-facing runtime: open a GPU, find its profile through the lookup chain (the
//! source is reported), plan every launch from that profile, and launch the tuned kernels.

use crate::launch::{LaunchError, Runtime};
use crate::replan::{EmbeddedProfiles, Replan};
use memtune_core::default::DEFAULT_UUID;
use memtune_core::lookup::{self, LookupConfig, Source, Wanted};
use memtune_core::plan::grouping::{GroupingPlan, GroupingWorkload};
use memtune_core::plan::sampling::{SamplingPlan, SamplingWorkload};
use memtune_core::plan::stencil::{self, Dtype, StencilPlan, StencilWorkload};
use memtune_core::plan::PlanError;
use memtune_core::{DeviceIdentity, MemoryKind, Profile, ProfileError};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum TunedError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("the profile from {origin} describes {profile} ({profile_uuid}), not this GPU, {device} ({device_uuid}); run `cargo tune` on this machine, or point MEMTUNE_PROFILE at a profile of this GPU model")]
    AnotherDevice {
        origin: String,
        profile: String,
        profile_uuid: String,
        device: String,
        device_uuid: String,
    },
}

/// Accepts a profile of this GPU, of another GPU of the same model (with a warning), or the
/// built-in default (which claims nothing); refuses one of another model: its TLB reaches
/// and block shapes would tune for the wrong hardware.
pub fn check_profile(
    device: &DeviceIdentity,
    profile: &Profile,
    source: &Source,
) -> Result<Option<String>, TunedError> {
    let p = &profile.device;
    if p.uuid == device.uuid || p.uuid == DEFAULT_UUID {
        return Ok(None);
    }
    if !profile.is_simulated() && p.model() == device.model() {
        return Ok(Some(format!(
            "the profile from {source} was measured on another {} ({}); plans assume the two behave alike",
            p.name, p.uuid
        )));
    }
    Err(TunedError::AnotherDevice {
        origin: source.to_string(),
        profile: p.model().to_string(),
        profile_uuid: p.uuid.clone(),
        device: device.model().to_string(),
        device_uuid: device.uuid.clone(),
    })
}

/// A GPU with its profile: every launch is planned from the profile first.
pub struct Tuned {
    runtime: Runtime,
    profile: Profile,
    source: Source,
    warnings: Vec<String>,
}

impl Tuned {
    /// Opens GPU `ordinal` and looks its profile up (`MEMTUNE_PROFILE`, `project_root/.memtune/`,
    /// the user cache, the same model, the built-in default).
    pub fn open(ordinal: usize, project_root: Option<&Path>) -> Result<Tuned, TunedError> {
        let runtime = Runtime::open(ordinal)?;
        let id = runtime.identity();
        let wanted = Wanted {
            uuid: Some(id.uuid.clone()),
            model: Some(id.model()),
        };
        let resolved = lookup::resolve(&LookupConfig::from_env(project_root), &wanted)?;
        Tuned::with_profile(
            runtime,
            resolved.profile,
            resolved.source,
            resolved.warnings,
        )
    }

    /// Uses `profile` (found at `source`) for the GPU `runtime` opened; refuses a profile of
    /// another GPU model.
    pub fn with_profile(
        runtime: Runtime,
        profile: Profile,
        source: Source,
        mut warnings: Vec<String>,
    ) -> Result<Tuned, TunedError> {
        warnings.extend(check_profile(runtime.identity(), &profile, &source)?);
        Ok(Tuned {
            runtime,
            profile,
            source,
            warnings,
        })
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Where the profile came from.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// What the user should know about the profile in use (default in use, another GPU's).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The profile for this GPU among `embedded` (from `embedded_profiles!()`) and the user
    /// cache, to re-plan compile-time constants with (`docs/macros.md`).
    pub fn replan(&self, embedded: &EmbeddedProfiles) -> Replan {
        Replan::for_device(
            self.runtime.identity(),
            embedded,
            lookup::default_cache_dir().as_deref(),
        )
    }

    pub fn runtime(&mut self) -> &mut Runtime {
        &mut self.runtime
    }

    /// Random sampling of `data` in `memory`, scoped as the profile's plan says.
    pub fn sampling(
        &mut self,
        data: &[u32],
        memory: MemoryKind,
        reads_per_thread: u32,
        seed: u64,
    ) -> Result<(u64, SamplingPlan), TunedError> {
        let plan = memtune_core::plan::sampling_untimed(
            &self.profile,
            &SamplingWorkload {
                region_bytes: std::mem::size_of_val(data) as u64,
                memory,
                reads_per_thread,
            },
        )?;
        let sum = self
            .runtime
            .sampling(data, reads_per_thread, seed, &plan, memory)?;
        Ok((sum, plan))
    }

    /// `SELECT key, count(*) GROUP BY key`, table and input where asked, as planned.
    pub fn grouping(
        &mut self,
        keys: &[u32],
        distinct: Option<u64>,
        table_memory: MemoryKind,
        input_memory: MemoryKind,
    ) -> Result<(Vec<(u32, u64)>, GroupingPlan), TunedError> {
        let capacity = crate::launch::grouping_capacity(keys.len() as u64, distinct)?;
        let plan = memtune_core::plan::grouping_untimed(
            &self.profile,
            &GroupingWorkload {
                table_bytes: capacity
                    * std::mem::size_of::<memtune_kernels::params::GroupingBucket>() as u64,
                table_memory,
                input_memory,
                input_bytes: Some(std::mem::size_of_val(keys) as u64),
            },
        )?;
        let groups = self
            .runtime
            .grouping(keys, distinct, &plan, table_memory, input_memory)?;
        Ok((groups, plan))
    }

    /// One stencil sweep in single precision, variant and block as planned.
    pub fn stencil_f32(
        &mut self,
        input: &[f32],
        dims: [u32; 3],
        repeats: u32,
    ) -> Result<(Vec<f32>, StencilPlan), TunedError> {
        let plan = self.stencil_plan(dims, Dtype::F32, repeats)?;
        Ok((self.runtime.stencil_f32(input, dims, repeats, &plan)?, plan))
    }

    /// One stencil sweep in double precision, variant and block as planned.
    pub fn stencil_f64(
        &mut self,
        input: &[f64],
        dims: [u32; 3],
        repeats: u32,
    ) -> Result<(Vec<f64>, StencilPlan), TunedError> {
        let plan = self.stencil_plan(dims, Dtype::F64, repeats)?;
        Ok((self.runtime.stencil_f64(input, dims, repeats, &plan)?, plan))
    }

    fn stencil_plan(
        &self,
        dims: [u32; 3],
        dtype: Dtype,
        repeats: u32,
    ) -> Result<StencilPlan, TunedError> {
        Ok(stencil::plan(
            &self.profile,
            &StencilWorkload {
                dims,
                dtype,
                repeats,
            },
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_tests::profile_of_model;

    /// A made-up H100-class GPU of model `name`.
    fn id(uuid: &str, name: &str) -> DeviceIdentity {
        profile_of_model(uuid, name, 132).device
    }

    fn profile_of(device: DeviceIdentity) -> Profile {
        profile_of_model(&device.uuid, &device.name, device.sm_count)
    }

    const A: &str = "GPU-00000001-0000-4000-8000-000000000001";
    const B: &str = "GPU-00000002-0000-4000-8000-000000000002";

    #[test]
    fn this_gpu_same_model_default_and_another_model() {
        let here = id(A, "NVIDIA H100 80GB HBM3");
        let src = Source::Cache("/c/x.json".into());
        assert_eq!(
            check_profile(&here, &profile_of(here.clone()), &src).unwrap(),
            None
        );
        let twin = profile_of(id(B, "NVIDIA H100 80GB HBM3"));
        let warning = check_profile(&here, &twin, &src)
            .unwrap()
            .expect("a warning");
        assert!(warning.contains(B), "{warning}");
        assert_eq!(
            check_profile(
                &here,
                &memtune_core::default::builtin(),
                &Source::BuiltinDefault
            )
            .unwrap(),
            None
        );
        let other = profile_of(id(B, "NVIDIA H200"));
        let err = check_profile(&here, &other, &Source::EnvPath("/p.json".into())).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("MEMTUNE_PROFILE=/p.json")
                && msg.contains("NVIDIA H200")
                && msg.contains("cargo tune"),
            "{msg}"
        );
    }

    #[test]
    fn a_simulated_profile_never_tunes_a_real_gpu() {
        let here = id(A, "NVIDIA H100 80GB HBM3");
        let mut sim = profile_of(id(B, "NVIDIA H100 80GB HBM3"));
        sim.provenance.simulator = Some("paper-p100".into());
        assert!(matches!(
            check_profile(&here, &sim, &Source::EnvPath("/sim.json".into())),
            Err(TunedError::AnotherDevice { .. })
        ));
    }
}
