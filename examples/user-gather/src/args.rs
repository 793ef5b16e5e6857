//! The command line: parsed by clap, then checked into a [`Config`] (no CUDA call here).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;
use memtune::MemoryKind;
use memtune_example_support::args::{self as support, parse_list, parse_quantity, Output, Parsed};
pub use memtune_example_support::args::{parse_memory, Sizes};

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

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Tune the kernel for one region, run the chosen plan and check it.
    Tune {
        region: u64,
        variant: Variant,
        expect_stored: bool,
    },
    /// Time every plan of each size and variant.
    Bench {
        sizes: Vec<u64>,
        variants: Vec<Variant>,
        json: Option<PathBuf>,
    },
}

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
    cli.output.check_mode(
        cli.bench,
        ("--region", cli.region.is_some()),
        ("--sizes", cli.sizes.is_some()),
    )?;
    let mode = if cli.bench {
        let sizes = match (cli.sizes, cli.memory) {
            (Some(s), _) => s.0,
            (None, MemoryKind::Pinned) => PINNED_SIZES.to_vec(),
            (None, _) => DEVICE_SIZES.to_vec(),
        };
        let variants = if cli.reads.is_some() || cli.work.is_some() {
            vec![one]
        } else {
            Variant::BENCH.to_vec()
        };
        Mode::Bench {
            sizes,
            variants,
            json: cli.output.json,
        }
    } else {
        Mode::Tune {
            region: cli.region.unwrap_or(DEFAULT_REGION),
            variant: one,
            expect_stored: cli.output.expect_stored,
        }
    };
    Ok(Config {
        memory: cli.memory,
        check_free: cli.check_free,
        mode,
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

/// `--check-free`: refuses a size above `limit` (`what` names the limit).
pub fn check_fits(size: u64, limit: u64, what: &str) -> Result<(), GatherError> {
    support::check_fits(size, limit, what, "pass a smaller size").map_err(GatherError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtune_example_support::testing;

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
        let want = Mode::Tune {
            region: 1536 << 20,
            variant,
            expect_stored: false,
        };
        assert_eq!(c.mode, want);
        let Mode::Bench {
            sizes, variants, ..
        } = ok(&["--bench"]).mode
        else {
            panic!("not a bench");
        };
        assert_eq!(sizes, DEVICE_SIZES);
        assert_eq!(variants, Variant::BENCH);
        let c = ok(&["--bench", "--memory", "pinned", "--json", "x.json"]);
        let Mode::Bench { sizes, json, .. } = c.mode else {
            panic!("not a bench");
        };
        assert_eq!(
            (sizes, json),
            (vec![3 << 30], Some(PathBuf::from("x.json")))
        );
    }

    #[test]
    fn sizes_and_variants() {
        let c = ok(&["--region", "256MiB", "--reads", "1024", "--work", "32"]);
        let Mode::Tune {
            region, variant, ..
        } = c.mode
        else {
            panic!("not tune");
        };
        assert_eq!(region, 256 << 20);
        assert_eq!(
            variant,
            Variant {
                reads: 1024,
                work: 32
            }
        );
        let c = ok(&["--bench", "--sizes", "96MiB, 3 GiB,4096", "--work", "8"]);
        let Mode::Bench {
            sizes, variants, ..
        } = c.mode
        else {
            panic!("not a bench");
        };
        assert_eq!(sizes, vec![96 << 20, 3 << 30, 4096]);
        assert_eq!(variants, vec![Variant { reads: 64, work: 8 }]);
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

    #[test]
    fn limits() {
        assert!(check_fits(1 << 30, 1 << 30, "x").is_ok());
        let e = check_fits((1 << 30) + 4, 1 << 30, "80% of the free device memory");
        let e = e.expect_err("over the limit");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("80% of the free"), "{e}");
    }
}
