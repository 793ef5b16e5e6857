//! The command line: parsed by clap, then checked into a [`Config`] (no CUDA call here).

use std::ffi::OsString;

use clap::Parser;
use memtune::MemoryKind;
use memtune_example_support::args::{self as support, parse_list, parse_quantity, Output, Parsed};
pub use memtune_example_support::args::{parse_memory, OneSize, Sizes, SizesBench};

use crate::{GatherError, Variant};

/// Largest `--work`: FMA rounds per read.
pub const MAX_WORK: u32 = 64;
/// Region of the default mode.
pub const DEFAULT_REGION: u64 = 1536 << 20;
/// `--bench` sizes of device memory.
pub const DEVICE_SIZES: [u64; 3] = [96 << 20, 384 << 20, 1536 << 20];
/// `--bench` sizes of pinned memory.
pub const PINNED_SIZES: [u64; 1] = [3 << 30];

#[derive(Debug, Parser)]
#[command(
    name = "user-gather",
    about = "A user's own gather kernel, autotuned by memtune (see examples/user-gather/README.md)"
)]
pub struct Cli {
    /// Region to gather from (default mode), e.g. 1536MiB; a multiple of 4 bytes.
    #[arg(long, value_parser = parse_size)]
    pub region: Option<u64>,
    /// Where the region lives: device memory, or pinned host memory mapped into the GPU.
    #[arg(long, value_parser = parse_memory, default_value = "device")]
    pub memory: MemoryKind,
    /// Random reads per thread (default 64; with --bench: bench only this variant).
    #[arg(long)]
    pub reads: Option<u32>,
    /// Extra FMA rounds per read, 0 to 64 (default 0; with --bench: only this variant).
    #[arg(long)]
    pub work: Option<u32>,
    /// Refuse sizes above 80% of the free device memory (device) or a quarter of the
    /// available host memory (pinned).
    #[arg(long)]
    pub check_free: bool,
    /// Untuned, model, autotuned and exhaustive-best plans, timed.
    #[arg(long)]
    pub bench: bool,
    /// Bench sizes, comma-separated (default 96MiB,384MiB,1536MiB device; 3GiB pinned).
    #[arg(long, value_parser = parse_sizes)]
    pub sizes: Option<Sizes>,
    #[command(flatten)]
    pub output: Output,
}

/// What to run: tune the kernel for one region and variant, run the chosen plan and check
/// it; or time every plan of each size and variant.
pub type Mode = support::Mode<OneSize<Variant>, SizesBench<Variant>>;

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub memory: MemoryKind,
    pub check_free: bool,
    pub mode: Mode,
}

/// Parses `args` (without the program name) and [`check`]s them; see [`support::parse`].
pub fn parse(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> Parsed<Config> {
    support::parse("user-gather", args, check)
}

/// Checks the combination of arguments.
pub fn check(cli: Cli) -> Result<Config, GatherError> {
    let usage = |m: &str| Err(GatherError::Usage(m.to_string()));
    if cli.reads == Some(0) {
        return usage("--reads must be at least 1");
    }
    if cli.work.is_some_and(|w| w > MAX_WORK) {
        return Err(GatherError::Usage(format!(
            "--work must be 0 to {MAX_WORK} FMA rounds per read"
        )));
    }
    let one = Variant {
        reads: cli.reads.unwrap_or(64),
        work: cli.work.unwrap_or(0),
    };
    let named = (cli.reads.is_some() || cli.work.is_some()).then_some(one);
    let flags = [
        ("--region", cli.region.is_some()),
        ("--sizes", cli.sizes.is_some()),
    ];
    let tune = || {
        let bytes = cli.region.unwrap_or(DEFAULT_REGION);
        Ok(OneSize {
            bytes,
            variant: one,
        })
    };
    let defaults = [DEVICE_SIZES.as_slice(), &PINNED_SIZES];
    let bench = || {
        let all = &Variant::BENCH;
        Ok(SizesBench::new(cli.sizes, cli.memory, defaults, named, all))
    };
    Ok(Config {
        memory: cli.memory,
        check_free: cli.check_free,
        mode: cli.output.mode(cli.bench, flags, tune, bench)?,
    })
}

/// `1536MiB`, `3 GiB`, `4096`: a size of whole 4-byte words, at least one.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bytes = parse_quantity(s, "a size", "1536MiB or 3GiB")?;
    if bytes == 0 || bytes % 4 != 0 {
        return Err(format!("`{s}` must be a positive multiple of 4 bytes"));
    }
    Ok(bytes)
}

/// `96MiB,384MiB,1536MiB`.
pub fn parse_sizes(s: &str) -> Result<Sizes, String> {
    parse_list(s, parse_size).map(Sizes)
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

    #[test]
    fn defaults() {
        let c = ok(&[]);
        assert_eq!(c.memory, MemoryKind::Device);
        assert!(!c.check_free);
        let variant = Variant { reads: 64, work: 0 };
        let want = OneSize {
            bytes: 1536 << 20,
            variant,
        };
        assert_eq!(tune_mode(c.mode), (want, false));
        let (cases, _) = bench_mode(ok(&["--bench"]).mode);
        assert_eq!(cases.sizes, DEVICE_SIZES);
        assert_eq!(cases.variants, Variant::BENCH);
        let c = ok(&["--bench", "--memory", "pinned", "--json", "x.json"]);
        let (cases, json) = bench_mode(c.mode);
        assert_eq!(
            (cases.sizes, json),
            (vec![3 << 30], Some(PathBuf::from("x.json")))
        );
    }

    #[test]
    fn sizes_and_variants() {
        let c = ok(&["--region", "256MiB", "--reads", "1024", "--work", "32"]);
        let (case, _) = tune_mode(c.mode);
        assert_eq!(case.bytes, 256 << 20);
        assert_eq!(
            case.variant,
            Variant {
                reads: 1024,
                work: 32
            }
        );
        let c = ok(&["--bench", "--sizes", "96MiB, 3 GiB,4096", "--work", "8"]);
        let (cases, _) = bench_mode(c.mode);
        assert_eq!(cases.sizes, vec![96 << 20, 3 << 30, 4096]);
        assert_eq!(cases.variants, vec![Variant { reads: 64, work: 8 }]);
        assert_eq!(parse_size("1g"), Ok(1 << 30));
    }

    #[test]
    fn argument_errors() {
        assert!(usage(&["--region", "big"]).contains("not a size"));
        assert!(usage(&["--region", "0"]).contains("multiple of 4"));
        assert!(usage(&["--region", "6"]).contains("multiple of 4"));
        assert!(usage(&["--region", "3PiB"]).contains("unknown unit"));
        assert!(usage(&["--region", "99999999999TiB"]).contains("too large"));
        assert!(usage(&["--memory", "managed"]).contains("not device or pinned"));
        assert!(usage(&["--reads=-1"]).contains("--reads"));
        assert!(usage(&["--reads", "x"]).contains("--reads"));
        assert!(usage(&["--reads", "0"]).contains("at least 1"));
        assert!(usage(&["--work", "65"]).contains("0 to 64"));
        assert!(usage(&["--bench", "--sizes", "1MiB,,2MiB"]).contains("not a size"));
        testing::assert_mode_errors(usage, ["--region", "1MiB"], ["--sizes", "1MiB"]);
    }
}
