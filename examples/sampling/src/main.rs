//! Random sampling of a region, planned from this machine's hardware profile and run on
//! GPU 0: `cargo run -p memtune-example-sampling -- [MiB] [device|pinned]`.
//! Without a GPU it prints the plan the lookup chain's profile gives.

use memtune::core::lookup::{self, LookupConfig, Wanted};
use memtune::core::plan::sampling::{self, SamplingWorkload};
use memtune::{MemoryKind, Tuned};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mib: u64 = match args.next().map(|a| a.parse()) {
        None => 256,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: memtune-example-sampling [MiB > 0] [device|pinned]");
            return ExitCode::from(2);
        }
    };
    let memory: MemoryKind = match args.next().map(|a| a.parse()) {
        None => MemoryKind::Device,
        Some(Ok(kind)) => kind,
        Some(Err(e)) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let project = Path::new(env!("CARGO_MANIFEST_DIR"));
    match Tuned::open(0, Some(project)) {
        Ok(mut gpu) => {
            println!("profile from {}", gpu.source());
            for w in gpu.warnings() {
                eprintln!("warning: {w}");
            }
            // Random data (never zeros): an xorshift stream.
            let mut x = 0x2545_f491_4f6c_dd1d_u64;
            let data: Vec<u32> = (0..mib << 18)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u32
                })
                .collect();
            match gpu.sampling(&data, memory, 64, 1) {
                Ok((sum, plan)) => {
                    println!(
                        "{} MiB of {memory} memory: {} pass(es) of {} bytes, sum {sum}",
                        mib, plan.passes, plan.scope_bytes
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("no GPU to run on ({e}); planning only");
            let resolved =
                match lookup::resolve(&LookupConfig::from_env(Some(project)), &Wanted::default()) {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::FAILURE;
                    }
                };
            for w in &resolved.warnings {
                eprintln!("warning: {w}");
            }
            let workload = SamplingWorkload {
                region_bytes: mib << 20,
                memory,
                reads_per_thread: 64,
            };
            match sampling::plan(&resolved.profile, &workload) {
                Ok(plan) => {
                    println!(
                        "profile from {}: {} pass(es) of {} bytes",
                        resolved.source, plan.passes, plan.scope_bytes
                    );
                    for r in plan.reasons {
                        println!("  - {r}");
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
