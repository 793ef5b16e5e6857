//! The command line: parsed by clap, then checked into a [`Config`] (no CUDA call here).

use std::ffi::OsString;

use clap::Parser;
use memtune::core::plan::Dtype;
use memtune_example_support::args::{self as support, Output, Parsed};

use crate::{Case, StencilError};

/// Largest extent along any axis.
pub const MAX_AXIS: u32 = 4096;
/// Largest volume (one of the three buffers a run allocates).
pub const MAX_VOLUME_BYTES: u64 = 16 << 30;
/// Largest `--repeats`.
pub const MAX_REPEATS: u32 = 16;
/// Largest number of `--grids`.
pub const MAX_GRIDS: usize = 16;
/// Volume of the default mode.
pub const DEFAULT_DIMS: [u32; 3] = [384, 256, 192];
/// `--bench` grids: sizes memtune's staging table does not hold.
pub const BENCH_GRIDS: [([u32; 3], Dtype); 5] = [
    ([200, 200, 200], Dtype::F32),
    ([384, 256, 192], Dtype::F32),
    ([512, 512, 512], Dtype::F32),
    ([256, 256, 256], Dtype::F64),
    ([384, 384, 384], Dtype::F64),
];

#[derive(Debug, Parser)]
#[command(
    name = "user-stencil",
    about = "A user's own 27-point stencil, autotuned by memtune (see examples/user-stencil/README.md)"
)]
pub struct Cli {
    /// Volume of the default mode: NXxNYxNZ (x contiguous) or N^3 (default 384x256x192).
    #[arg(long, value_parser = parse_dims)]
    pub dims: Option<[u32; 3]>,
    /// Element type: f32 or f64 (default f32; with --bench and no --grids: only its grids).
    #[arg(long, value_parser = parse_dtype)]
    pub dtype: Option<Dtype>,
    /// How often each cell's 27 values are read per sweep, 1 to 16 (default 1).
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Refuse volumes whose three buffers exceed 80% of the free device memory (the bench
    /// skips them).
    #[arg(long)]
    pub check_free: bool,
    /// Untuned, model, autotuned and sweep-best plans, timed.
    #[arg(long)]
    pub bench: bool,
    /// Bench grids, comma-separated DIMS[:f32|f64], e.g. 200^3:f32,384x256x192:f64.
    #[arg(long, value_parser = parse_grids)]
    pub grids: Option<Grids>,
    #[command(flatten)]
    pub output: Output,
}

/// Grids with an optional dtype each (a newtype: clap would take a `Vec` for a repeated
/// flag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grids(pub Vec<([u32; 3], Option<Dtype>)>);

/// What to run: tune the kernel for one volume, run the chosen plan and check it; or time
/// every plan of each case.
pub type Mode = support::Mode<Case, Vec<Case>>;

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub check_free: bool,
    pub mode: Mode,
}

/// Parses `args` (without the program name) and [`check`]s them; see [`support::parse`].
pub fn parse(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> Parsed<Config> {
    support::parse("user-stencil", args, check)
}

/// Checks the combination of arguments.
pub fn check(cli: Cli) -> Result<Config, StencilError> {
    let repeats = cli.repeats.unwrap_or(1);
    if !(1..=MAX_REPEATS).contains(&repeats) {
        return Err(StencilError::Usage(format!(
            "--repeats must be 1 to {MAX_REPEATS}"
        )));
    }
    let flags = [
        ("--dims", cli.dims.is_some()),
        ("--grids", cli.grids.is_some()),
    ];
    let tune = || {
        let case = Case {
            dims: cli.dims.unwrap_or(DEFAULT_DIMS),
            dtype: cli.dtype.unwrap_or(Dtype::F32),
            repeats,
        };
        check_volume(&case).map(|()| case)
    };
    let bench = || {
        let grids: Vec<([u32; 3], Dtype)> = match cli.grids {
            Some(g) => {
                g.0.into_iter()
                    .map(|(dims, d)| (dims, d.or(cli.dtype).unwrap_or(Dtype::F32)))
                    .collect()
            }
            None => BENCH_GRIDS
                .into_iter()
                .filter(|(_, d)| cli.dtype.is_none_or(|want| want == *d))
                .collect(),
        };
        grids
            .into_iter()
            .map(|(dims, dtype)| {
                let case = Case {
                    dims,
                    dtype,
                    repeats,
                };
                check_volume(&case).map(|()| case)
            })
            .collect()
    };
    Ok(Config {
        check_free: cli.check_free,
        mode: cli.output.mode(cli.bench, flags, tune, bench)?,
    })
}

/// A volume's bytes must stay within [`MAX_VOLUME_BYTES`].
fn check_volume(case: &Case) -> Result<(), StencilError> {
    if case.bytes() > MAX_VOLUME_BYTES {
        return Err(StencilError::Usage(format!(
            "{} takes {} a volume, above the {} this example allows",
            case.name(),
            memtune::core::size::format_bytes(case.bytes()),
            memtune::core::size::format_bytes(MAX_VOLUME_BYTES)
        )));
    }
    Ok(())
}

/// `f32` or `f64`.
pub fn parse_dtype(s: &str) -> Result<Dtype, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "f32" | "float" => Ok(Dtype::F32),
        "f64" | "double" => Ok(Dtype::F64),
        other => Err(format!("`{other}` is not f32 or f64")),
    }
}

/// `384x256x192` or `256^3`: each extent 1 to [`MAX_AXIS`].
pub fn parse_dims(s: &str) -> Result<[u32; 3], String> {
    let t = s.trim().to_ascii_lowercase();
    let parts: Vec<&str> = match t.strip_suffix("^3") {
        Some(n) => vec![n; 3],
        None => t.split('x').collect(),
    };
    let bad = || format!("`{s}` is not a volume such as 384x256x192 or 256^3");
    if parts.len() != 3 {
        return Err(bad());
    }
    let mut dims = [0u32; 3];
    for (d, p) in dims.iter_mut().zip(&parts) {
        *d = p.trim().parse().map_err(|_| bad())?;
        if !(1..=MAX_AXIS).contains(d) {
            return Err(format!("`{s}`: each extent must be 1 to {MAX_AXIS}"));
        }
    }
    Ok(dims)
}

/// `200^3:f32,384x256x192`.
pub fn parse_grids(s: &str) -> Result<Grids, String> {
    let grids = s
        .split(',')
        .map(|g| match g.split_once(':') {
            Some((dims, dtype)) => Ok((parse_dims(dims)?, Some(parse_dtype(dtype)?))),
            None => Ok((parse_dims(g)?, None)),
        })
        .collect::<Result<Vec<_>, String>>()?;
    if grids.len() > MAX_GRIDS {
        return Err(format!("at most {MAX_GRIDS} grids"));
    }
    Ok(Grids(grids))
}

/// `--check-free`: refuses a case whose three buffers exceed `limit`.
pub fn check_fits(case: &Case, limit: u64) -> Result<(), StencilError> {
    let need = case.device_bytes();
    if need > limit {
        return Err(StencilError::TooLarge(format!(
            "{} needs {} of device memory (input, output, untuned output), above 80% of the free memory ({}); pass smaller dims",
            case.name(),
            memtune::core::size::format_bytes(need),
            memtune::core::size::format_bytes(limit)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_example_support::testing::{self, bench_mode, tune_mode};
    use std::path::PathBuf;

    fn ok(args: &[&str]) -> Config {
        testing::parsed(args, |a| parse(a.iter().copied()))
    }

    fn usage(args: &[&str]) -> String {
        testing::usage(args, |a| parse(a.iter().copied()))
    }

    fn cases(c: Config) -> Vec<Case> {
        bench_mode(c.mode).0
    }

    #[test]
    fn defaults() {
        let c = ok(&[]);
        assert!(!c.check_free);
        let case = Case {
            dims: DEFAULT_DIMS,
            dtype: Dtype::F32,
            repeats: 1,
        };
        assert_eq!(tune_mode(c.mode), (case, false));
        let all = cases(ok(&["--bench"]));
        assert_eq!(all.len(), 5);
        assert_eq!(all[0].dims, [200, 200, 200]);
        assert_eq!(all[4].dtype, Dtype::F64);
        let f64s = cases(ok(&["--bench", "--dtype", "f64", "--repeats", "6"]));
        assert_eq!(f64s.len(), 2);
        assert!(f64s.iter().all(|c| c.dtype == Dtype::F64 && c.repeats == 6));
        let c = ok(&["--bench", "--json", "x.json", "--check-free"]);
        assert!(c.check_free);
        assert_eq!(bench_mode(c.mode).1, Some(PathBuf::from("x.json")));
    }

    #[test]
    fn dims_and_grids() {
        let c = ok(&[
            "--dims",
            "33x17x9",
            "--dtype",
            "f64",
            "--repeats",
            "3",
            "--expect-stored",
        ]);
        let (case, expect_stored) = tune_mode(c.mode);
        assert_eq!(case.dims, [33, 17, 9]);
        assert_eq!(
            (case.dtype, case.repeats, expect_stored),
            (Dtype::F64, 3, true)
        );
        assert_eq!(parse_dims("256^3"), Ok([256, 256, 256]));
        assert_eq!(parse_dims(" 4X5x6 "), Ok([4, 5, 6]));
        let g = cases(ok(&[
            "--bench",
            "--grids",
            "200^3:f64,64x32x16",
            "--dtype",
            "f64",
        ]));
        assert_eq!(g.len(), 2);
        assert_eq!((g[0].dims, g[0].dtype), ([200, 200, 200], Dtype::F64));
        assert_eq!((g[1].dims, g[1].dtype), ([64, 32, 16], Dtype::F64));
        let g = cases(ok(&["--bench", "--grids", "64^3"]));
        assert_eq!(g[0].dtype, Dtype::F32);
    }

    #[test]
    fn argument_errors() {
        assert!(usage(&["--dims", "big"]).contains("not a volume"));
        assert!(usage(&["--dims", "4x5"]).contains("not a volume"));
        assert!(usage(&["--dims", "4x5x6x7"]).contains("not a volume"));
        assert!(usage(&["--dims", "0x5x6"]).contains("1 to 4096"));
        assert!(usage(&["--dims", "4097^3"]).contains("1 to 4096"));
        assert!(usage(&["--dims=-1x5x6"]).contains("not a volume"));
        assert!(usage(&["--dims", "4096x4096x4096"]).contains("above"));
        assert!(usage(&["--dtype", "f16"]).contains("not f32 or f64"));
        assert!(usage(&["--repeats", "0"]).contains("1 to 16"));
        assert!(usage(&["--repeats", "17"]).contains("1 to 16"));
        assert!(usage(&["--repeats", "x"]).contains("--repeats"));
        assert!(usage(&["--bench", "--grids", "64^3,,32^3"]).contains("not a volume"));
        assert!(usage(&["--bench", "--grids", "64^3:f8"]).contains("not f32 or f64"));
        let many = vec!["8^3"; MAX_GRIDS + 1].join(",");
        assert!(usage(&["--bench", "--grids", &many]).contains("at most"));
        testing::assert_mode_errors(usage, ["--dims", "8^3"], ["--grids", "8^3"]);
    }

    #[test]
    fn limits() {
        let case = Case {
            dims: [512, 512, 512],
            dtype: Dtype::F32,
            repeats: 1,
        };
        assert!(check_fits(&case, 3 << 29).is_ok());
        let e = check_fits(&case, (3 << 29) - 1).expect_err("over the limit");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("80% of the free"), "{e}");
    }
}
