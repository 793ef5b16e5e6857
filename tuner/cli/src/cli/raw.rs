//! `cargo tune chase` and `cargo tune sample`: the probe's raw measurements, for looking at
//! a GPU directly (the probe runs the same kernels and infers from the curves).

use super::render::bytes;
use super::{CachePath, CarveoutArg, RawArgs};
use crate::exit::{CliError, Exit};
use memtune::device;
use memtune_core::MemoryKind;
use memtune_probe::gpu::{Bounds, Gpu, GpuError, MAX_CACHE_CHASE_ELEMENTS, MAX_CHASE_ELEMENTS};
use memtune_probe::{Carveout, LoadPath, CONSTANT_BANK_BYTES};
use serde_json::json;

impl From<GpuError> for CliError {
    fn from(e: GpuError) -> Self {
        let exit = match e {
            GpuError::Allocation { .. } => Exit::Io,
            _ => Exit::Internal,
        };
        CliError::new(exit, e.to_string())
    }
}

fn open(args: &RawArgs) -> Result<(Gpu, Vec<u64>), CliError> {
    if args.factor <= 1.0 {
        return Err(CliError::new(Exit::Usage, "--factor must be above 1"));
    }
    let ordinal = crate::env::gpu_ordinal(args.gpu)?;
    let identity = device::identity(ordinal)?;
    let gpu = Gpu::open(ordinal, identity, &Bounds::default())?;
    let to = args.to.unwrap_or(gpu.max_footprint(args.kind));
    if to > gpu.max_footprint(args.kind) || args.from > to {
        return Err(CliError::new(
            Exit::Usage,
            format!(
                "--from {} --to {}: must satisfy from <= to <= {} (the limit for {} memory here)",
                bytes(args.from),
                bytes(to),
                bytes(gpu.max_footprint(args.kind)),
                args.kind
            ),
        ));
    }
    let mut sizes = Vec::new();
    let mut f = args.from as f64;
    while f <= to as f64 {
        sizes.push((f as u64) / 8 * 8);
        f *= args.factor;
    }
    Ok((gpu, sizes))
}

pub fn chase(json: bool, args: &RawArgs) -> Result<Exit, CliError> {
    let (mut gpu, sizes) = open(args)?;
    let path = args.path.map(|p| match p {
        CachePath::L1 => LoadPath::L1,
        CachePath::L2 => LoadPath::L2,
        CachePath::Constant => LoadPath::Constant,
        CachePath::ReadOnly => LoadPath::ReadOnly,
    });
    let carveout = match args.carveout {
        CarveoutArg::Default => Carveout::Default,
        CarveoutArg::MaxL1 => Carveout::MaxL1,
    };
    let mut points = Vec::new();
    if !json {
        print!("{:>12}", "footprint");
        for s in &args.strides {
            print!(" {:>12}", bytes(*s));
        }
        match path {
            None => println!("   (cycles per load, {} memory, SM {})", args.kind, args.sm),
            Some(p) => println!("   (cycles per load, device memory, {p:?} path, {carveout:?})"),
        }
    }
    for &footprint in &sizes {
        if !json {
            print!("{:>12}", bytes(footprint));
        }
        for &stride in &args.strides {
            let cap = match path {
                None => MAX_CHASE_ELEMENTS,
                Some(_) => MAX_CACHE_CHASE_ELEMENTS,
            };
            let fits = stride <= footprint && footprint / stride <= cap;
            let cycles = match (fits, path) {
                (false, _) => None,
                (true, None) => Some(gpu.chase(args.kind, stride, footprint, args.sm)?),
                (true, Some(LoadPath::Constant)) if footprint > CONSTANT_BANK_BYTES => None,
                (true, Some(p)) => Some(gpu.cache_chase(p, carveout, stride, footprint)?),
            };
            if let Some(c) = cycles {
                points.push(json!({"stride_bytes": stride, "footprint_bytes": footprint, "cycles_per_load": c}));
            }
            if !json {
                match cycles {
                    Some(c) => print!(" {c:>12.1}"),
                    None => print!(" {:>12}", "-"),
                }
            }
        }
        if !json {
            println!();
        }
    }
    let shared = match path {
        Some(_) => Some(gpu.shared_memory_latency()?),
        None => None,
    };
    if json {
        println!(
            "{:#}",
            json!({"kind": args.kind, "sm": args.sm, "path": path.map(|p| format!("{p:?}")),
                   "carveout": format!("{carveout:?}"), "points": points,
                   "shared_memory_cycles": shared})
        );
    } else if let Some(c) = shared {
        println!("shared memory: {c:.1} cycles per load");
    }
    Ok(Exit::Ok)
}

pub fn sample(json: bool, args: &RawArgs) -> Result<Exit, CliError> {
    if args.atomic && args.kind == MemoryKind::Managed {
        return Err(CliError::new(
            Exit::Usage,
            "--atomic measures device or pinned memory (a hash table lives there), not managed: pass --kind device or --kind pinned".to_string(),
        ));
    }
    let (mut gpu, sizes) = open(args)?;
    let (unit, field) = if args.atomic {
        ("atomics", "atomics_per_second")
    } else {
        ("reads", "reads_per_second")
    };
    let mut points = Vec::new();
    for &region in &sizes {
        let rate = if args.atomic {
            gpu.random_atomic(args.kind, region)?
        } else {
            gpu.random_access(args.kind, region)?
        };
        if !json {
            println!("{:>12}  {:>8.3} G {unit}/s", bytes(region), rate / 1e9);
        }
        points.push(json!({"region_bytes": region, field: rate}));
    }
    if json {
        println!(
            "{:#}",
            json!({"kind": args.kind, "atomic": args.atomic, "points": points})
        );
    }
    Ok(Exit::Ok)
}
