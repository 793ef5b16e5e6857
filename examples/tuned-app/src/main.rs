//! tuned-app: a user crate of memtune. Its CUDA kernels (cuda/) are compiled by memtune's
//! build helper (build.rs) with the plans for the build's profile as defines; the same plans
//! are Rust constants through the macros; the profiles of `.memtune/` are embedded. On a GPU
//! it re-plans for the device present, recompiles what changed with NVRTC, runs the kernels
//! and checks them against the CPU.
//!
//! `tuned-app --plans-json` prints the compile-time plans, the profile they came from and,
//! on a GPU, the runtime plans and results, as one JSON document.

mod gpu;
mod reference;

/// What build.rs generated: `KERNELS`, `PROFILE`, `DEFINES`, `PLANS_JSON`, `ffi`.
mod kernels {
    include!(concat!(env!("OUT_DIR"), "/memtune_kernels.rs"));
}

use memtune::{EmbeddedProfiles, Replan, SamplingConsts, StencilConsts};
use serde_json::{json, Value};
use std::process::ExitCode;

// The workloads of build.rs, planned again here by the macros for the same profile.
const SAMPLING: SamplingConsts =
    memtune::sampling_plan!(region = 4 GiB, memory = device, reads_per_thread = 1);
const STENCIL: StencilConsts = memtune::stencil_plan!(dims = 256x256x64, dtype = f32, repeats = 1);
static PROFILES: EmbeddedProfiles = memtune::embedded_profiles!();

fn main() -> ExitCode {
    let json_out = std::env::args().any(|a| a == "--plans-json");
    let mut doc = compile_time();
    let mut ok = doc["build"]["agrees_with_macros"] == true;
    match memtune::device::identity(0) {
        Ok(device) => {
            let runtime = on_gpu(&device);
            ok &= runtime["kernels"]
                .as_array()
                .is_some_and(|k| k.iter().all(|k| k["correct"] == true));
            doc["runtime"] = runtime;
        }
        Err(e) => {
            doc["runtime"] = Value::Null;
            doc["gpu"] = json!(format!("none: {e}"));
        }
    }
    if json_out {
        println!("{doc:#}");
    } else {
        print_human(&doc);
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The compile-time plans (the macros' constants), the build's defines, and whether the
/// build helper planned the same for the same profile.
fn compile_time() -> Value {
    let build: Value = serde_json::from_str(kernels::PLANS_JSON).unwrap_or(Value::Null);
    let p = kernels::PROFILE;
    let agrees = SAMPLING.profile.digest == p.digest
        && STENCIL.profile.digest == p.digest
        && build["plans"]["sampling"]["plan"]["scope_bytes"] == SAMPLING.scope_bytes
        && build["plans"]["sampling"]["plan"]["passes"] == SAMPLING.passes
        && build["plans"]["stencil"]["plan"]["block"] == json!(STENCIL.block)
        && build["plans"]["stencil"]["plan"]["staging"] == STENCIL.staging;
    json!({
        "profile": {
            "uuid": p.uuid, "name": p.name, "digest": p.digest, "source": p.source,
            "path": p.path, "simulated": p.simulated,
        },
        "plans": {
            "sampling": {
                "workload": SAMPLING.workload, "scope_bytes": SAMPLING.scope_bytes,
                "passes": SAMPLING.passes, "predicted_speedup": SAMPLING.predicted_speedup,
            },
            "stencil": {
                "workload": STENCIL.workload, "variant": STENCIL.variant,
                "block": STENCIL.block, "staging": STENCIL.staging,
            },
        },
        "defines": build["defines"],
        "build": {
            "compiled_by": kernels::KERNELS.nvcc.map_or_else(
                || "NVRTC at run time (no nvcc at build time)".to_string(),
                |v| format!("nvcc {v}"),
            ),
            "bindings": if kernels::BINDINGS_GENERATED { "bindgen" } else { "committed src/params_ffi.rs" },
            "agrees_with_macros": agrees,
        },
        "embedded_profiles": PROFILES.files().iter().map(|(name, _)| name).collect::<Vec<_>>(),
    })
}

/// Re-plans for `device`, runs the kernels and checks them.
fn on_gpu(device: &memtune::DeviceIdentity) -> Value {
    let cache = memtune::core::lookup::default_cache_dir();
    let replan = Replan::for_device(device, &PROFILES, cache.as_deref());
    let (sampling, stencil) = match (replan.sampling(&SAMPLING), replan.stencil(&STENCIL)) {
        (Ok(s), Ok(t)) => (s, t),
        (Err(e), _) | (_, Err(e)) => return json!({"error": format!("re-planning failed: {e}")}),
    };
    let cc = device.compute_capability;
    let arch = format!("sm_{}{}", cc.major, cc.minor);
    let plans = gpu::Plans {
        sampling: &sampling.plan,
        sampling_workload: SAMPLING.workload,
        recompile_sampling: sampling.changed,
        stencil: &stencil.plan,
        stencil_workload: STENCIL.workload,
        recompile_stencil: stencil.changed,
    };
    let kernels = match gpu::run(0, &arch, &plans) {
        Ok(checked) => checked.iter().map(gpu::Checked::json).collect(),
        Err(e) => vec![json!({"kernel": "all", "correct": false, "detail": e.to_string()})],
    };
    let mut warnings = sampling.warnings.clone();
    warnings.extend(stencil.warnings.iter().cloned());
    warnings.dedup();
    json!({
        "device": {"name": device.name, "uuid": device.uuid, "arch": arch},
        "profile": {"source": sampling.source.to_string(), "uuid": sampling.used.uuid,
                    "name": sampling.used.name, "digest": sampling.used.digest},
        "mismatch": sampling.planned_for.uuid != device.uuid,
        "replaced": sampling.replaced || stencil.replaced,
        "plans": {
            "sampling": {"scope_bytes": sampling.plan.scope_bytes, "passes": sampling.plan.passes,
                         "replaced": sampling.replaced, "changed": sampling.changed},
            "stencil": {"variant": stencil.plan.variant, "block": stencil.plan.block,
                        "staging": stencil.plan.staging, "replaced": stencil.replaced,
                        "changed": stencil.changed},
        },
        "kernels": kernels,
        "warnings": warnings,
    })
}

fn print_human(doc: &Value) {
    let p = &doc["profile"];
    println!(
        "compile-time profile: {} ({}) from {} {}",
        p["name"].as_str().unwrap_or_default(),
        p["uuid"].as_str().unwrap_or_default(),
        p["source"].as_str().unwrap_or_default(),
        p["path"].as_str().unwrap_or_default()
    );
    println!("  digest {}", p["digest"].as_str().unwrap_or_default());
    let s = &doc["plans"]["sampling"];
    println!(
        "  sampling: {} passes over scopes of {} bytes",
        s["passes"], s["scope_bytes"]
    );
    let t = &doc["plans"]["stencil"];
    println!(
        "  stencil: {} block {} staging {}",
        t["variant"], t["block"], t["staging"]
    );
    println!(
        "  kernels: {}; bindings: {}; build helper agrees with the macros: {}",
        doc["build"]["compiled_by"].as_str().unwrap_or_default(),
        doc["build"]["bindings"].as_str().unwrap_or_default(),
        doc["build"]["agrees_with_macros"]
    );
    match &doc["runtime"] {
        Value::Null => println!("no GPU ({})", doc["gpu"].as_str().unwrap_or_default()),
        r => {
            println!(
                "GPU: {} ({}); profile {}; compile-time plans replaced: {}",
                r["device"]["name"].as_str().unwrap_or_default(),
                r["device"]["uuid"].as_str().unwrap_or_default(),
                r["profile"]["source"].as_str().unwrap_or_default(),
                r["replaced"]
            );
            println!("  runtime plans: {}", r["plans"]);
            for k in r["kernels"].as_array().into_iter().flatten() {
                println!(
                    "  {} ({}): {} - {}",
                    k["kernel"].as_str().unwrap_or_default(),
                    k["compiled_by"].as_str().unwrap_or_default(),
                    if k["correct"] == true {
                        "correct"
                    } else {
                        "WRONG"
                    },
                    k["detail"].as_str().unwrap_or_default()
                );
            }
            for w in r["warnings"].as_array().into_iter().flatten() {
                println!("  warning: {}", w.as_str().unwrap_or_default());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune::core::defines;
    use memtune::core::plan::sampling::SamplingPlan;
    use memtune::core::plan::stencil::{StencilPlan, Variant};

    /// Every plan a re-plan can produce must compile (NVRTC counts warnings as errors):
    /// the build's defines, and each stencil variant and a scoped sampling plan.
    #[test]
    fn kernels_compile_with_nvrtc_for_every_plan_shape() {
        if !memtune::kernels::toolchain::nvrtc_or_skip(
            "kernels_compile_with_nvrtc_for_every_plan_shape",
        ) {
            return;
        }
        for source in ["stencil.cu", "sampling.cu"] {
            let ptx = kernels::KERNELS.compile_with(source, "sm_90", &[]);
            assert!(
                ptx.is_ok(),
                "{source}: {:?}",
                ptx.err().map(|e| e.to_string())
            );
        }
        let shapes = [
            (Variant::Plain, [32, 4, 2], false),
            (Variant::Staged, [32, 4, 4], true),
            (Variant::Streaming, [32, 8, 1], true),
        ];
        for (variant, block, staging) in shapes {
            let plan = StencilPlan {
                variant,
                block,
                staging,
                reasons: vec![],
            };
            let d = defines::stencil("MEMTUNE_STENCIL_", &plan);
            let pairs: Vec<(&str, &str)> =
                d.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let ptx = kernels::KERNELS.compile_with("stencil.cu", "sm_90", &pairs);
            let ptx = ptx.unwrap_or_else(|e| panic!("{variant:?}: {e}"));
            assert!(ptx.has_entry("tuned_stencil"));
        }
        let scoped = SamplingPlan {
            scope_bytes: 1 << 30,
            passes: 2,
            predicted_speedup: 2.0,
            reasons: vec![],
        };
        let d = defines::sampling("MEMTUNE_SAMPLING_", &scoped);
        let pairs: Vec<(&str, &str)> = d.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let ptx = kernels::KERNELS
            .compile_with("sampling.cu", "sm_90", &pairs)
            .unwrap();
        assert!(ptx.has_entry("tuned_sample") && ptx.has_entry("tuned_fill"));
    }

    /// With bindgen (CI, where libclang installs): the committed bindings, which builds
    /// without libclang use, are what bindgen makes of the header today.
    #[cfg(feature = "bindgen")]
    #[test]
    fn committed_bindings_are_current() {
        assert!(kernels::BINDINGS_GENERATED);
        let generated = include_str!(concat!(
            env!("OUT_DIR"),
            "/memtune/memtune_kernels/bindings.rs"
        ));
        assert_eq!(
            include_str!("params_ffi.rs"),
            generated,
            "src/params_ffi.rs is stale: copy $OUT_DIR/memtune/memtune_kernels/bindings.rs over it"
        );
    }

    #[test]
    fn the_build_helper_and_the_macros_planned_the_same() {
        assert_eq!(compile_time()["build"]["agrees_with_macros"], true);
    }

    #[test]
    fn embedded_sources_list_their_kernels() {
        let s = kernels::KERNELS.source("sampling.cu").unwrap();
        assert_eq!(s.entries, ["tuned_fill", "tuned_sample"]);
        let t = kernels::KERNELS.source("stencil.cu").unwrap();
        assert_eq!(t.entries, ["tuned_stencil"]);
    }
}
