//! The command line: parsed by clap, then checked into a [`Config`] (no CUDA call here).

use std::ffi::OsString;

use clap::Parser;
use memtune::core::size::format_bytes;
use memtune::MemoryKind;
use memtune_example_support::args::{self as support, Output, Parsed};
pub use memtune_example_support::args::{parse_memory, OneSize, Sizes, SizesBench};

use crate::{HistError, Variant, MAX_TABLE_BYTES, MIN_TABLE_BYTES};

/// Largest `--work`: integer mixing rounds per row.
pub const MAX_WORK: u32 = 64;
/// Most `--rows`: the key columns stay below 16 GiB each.
pub const MAX_ROWS: u64 = 1 << 32;
/// Table of the default mode.
pub const DEFAULT_TABLE: u64 = 1 << 30;
/// Rows into a table in device memory (256 MiB of input).
pub const DEVICE_TABLE_ROWS: u64 = 32 << 20;
/// Rows into a table in pinned memory: its inserts are atomics across the host link, so
/// fewer keep a bench row to tens of seconds.
pub const PINNED_TABLE_ROWS: u64 = 8 << 20;
/// `--bench` tables in device memory.
pub const DEVICE_SIZES: [u64; 2] = [64 << 20, 1 << 30];
/// `--bench` tables in pinned memory.
pub const PINNED_SIZES: [u64; 2] = [256 << 20, 2 << 30];

#[derive(Debug, Parser)]
#[command(
    name = "user-histogram",
    about = "A user's own hash-grouping kernel, autotuned by memtune (see examples/user-histogram/README.md)"
)]
pub struct Cli {
    /// Hash table of the default mode, a power of two such as 1GiB (16-byte slots).
    #[arg(long, value_parser = parse_table)]
    pub table: Option<u64>,
    /// Where the table lives: device memory, or pinned host memory mapped into the GPU.
    #[arg(long, value_parser = parse_memory, default_value = "device")]
    pub memory: MemoryKind,
    /// Where the input rows live (default pinned: read by zero-copy, as a column too
    /// large for the device would be).
    #[arg(long, value_parser = parse_memory, default_value = "pinned")]
    pub input: MemoryKind,
    /// Input rows (default 32Mi for a device table, 8Mi for a pinned one), e.g. 16Mi.
    #[arg(long, value_parser = parse_rows)]
    pub rows: Option<u64>,
    /// Integer mixing rounds per row, 0 to 64 (default 0; with --bench: only this variant).
    #[arg(long)]
    pub work: Option<u32>,
    /// Refuse sizes above 80% of the free device memory (table, device input, spill
    /// buffers) or a quarter of the available host memory (pinned table and input).
    #[arg(long)]
    pub check_free: bool,
    /// Untuned, model, autotuned and exhaustive-best plans, timed.
    #[arg(long)]
    pub bench: bool,
    /// Bench tables, comma-separated (default 64MiB,1GiB device; 256MiB,2GiB pinned).
    #[arg(long, value_parser = parse_tables)]
    pub sizes: Option<Sizes>,
    #[command(flatten)]
    pub output: Output,
}

/// What to run: tune the kernel for one table size and variant, run the chosen plan and
/// check it; or time every plan of each table size and variant.
pub type Mode = support::Mode<OneSize<Variant>, SizesBench<Variant>>;

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where the table lives.
    pub memory: MemoryKind,
    pub input: MemoryKind,
    pub rows: u64,
    pub check_free: bool,
    pub mode: Mode,
}

/// Parses `args` (without the program name) and [`check`]s them; see [`support::parse`].
pub fn parse(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> Parsed<Config> {
    support::parse("user-histogram", args, check)
}

/// Checks the combination of arguments.
pub fn check(cli: Cli) -> Result<Config, HistError> {
    if cli.work.is_some_and(|w| w > MAX_WORK) {
        return Err(HistError::Usage(format!(
            "--work must be 0 to {MAX_WORK} rounds per row"
        )));
    }
    let one = Variant {
        work: cli.work.unwrap_or(0),
    };
    let rows = cli.rows.unwrap_or(match cli.memory {
        MemoryKind::Pinned => PINNED_TABLE_ROWS,
        _ => DEVICE_TABLE_ROWS,
    });
    let flags = [
        ("--table", cli.table.is_some()),
        ("--sizes", cli.sizes.is_some()),
    ];
    let tune = || {
        let bytes = cli.table.unwrap_or(DEFAULT_TABLE);
        Ok(OneSize {
            bytes,
            variant: one,
        })
    };
    let defaults = [DEVICE_SIZES.as_slice(), &PINNED_SIZES];
    let named = cli.work.is_some().then_some(one);
    let bench = || {
        let all = &Variant::BENCH;
        Ok(SizesBench::new(cli.sizes, cli.memory, defaults, named, all))
    };
    Ok(Config {
        memory: cli.memory,
        input: cli.input,
        rows,
        check_free: cli.check_free,
        mode: cli.output.mode(cli.bench, flags, tune, bench)?,
    })
}

/// `1GiB`, `64 MiB`, `4096`: a number with an optional unit.
fn parse_quantity(s: &str, example: &str) -> Result<u64, String> {
    support::parse_quantity(s, "a number", example)
}

/// A table size: a power of two from 64 bytes (4 slots) to 64 GiB (2^32 slots, the reach
/// of the kernel's 32-bit hash).
pub fn parse_table(s: &str) -> Result<u64, String> {
    let bytes = parse_quantity(s, "1GiB")?;
    if !bytes.is_power_of_two() || !(MIN_TABLE_BYTES..=MAX_TABLE_BYTES).contains(&bytes) {
        return Err(format!(
            "`{s}`: a table is a power of two from {MIN_TABLE_BYTES} bytes to {} (e.g. {} or {})",
            format_bytes(MAX_TABLE_BYTES),
            format_bytes(bytes.max(MIN_TABLE_BYTES).next_power_of_two() / 2),
            format_bytes(bytes.max(MIN_TABLE_BYTES).next_power_of_two())
        ));
    }
    Ok(bytes)
}

/// Rows: `16Mi`, `1000000` (binary units count rows here, not bytes), 1 to 2^32.
pub fn parse_rows(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("i")
        .map_or(t.to_string(), |n| format!("{n}iB"));
    let n = parse_quantity(&t, "16Mi").map_err(|e| e.replace(&t, s))?;
    if n == 0 || n > MAX_ROWS {
        return Err(format!("`{s}`: rows must be 1 to {MAX_ROWS}"));
    }
    Ok(n)
}

/// `64MiB,1GiB`.
pub fn parse_tables(s: &str) -> Result<Sizes, String> {
    support::parse_list(s, parse_table).map(Sizes)
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
        assert_eq!(
            (c.memory, c.input, c.rows, c.check_free),
            (MemoryKind::Device, MemoryKind::Pinned, 32 << 20, false)
        );
        let want = OneSize {
            bytes: 1 << 30,
            variant: Variant { work: 0 },
        };
        assert_eq!(tune_mode(c.mode), (want, false));
        let (cases, _) = bench_mode(ok(&["--bench"]).mode);
        assert_eq!(cases.sizes, DEVICE_SIZES);
        assert_eq!(cases.variants, Variant::BENCH);
        let c = ok(&["--bench", "--memory", "pinned", "--json", "x.json"]);
        assert_eq!(c.rows, 8 << 20);
        let (cases, json) = bench_mode(c.mode);
        assert_eq!(
            (cases.sizes, json),
            (vec![256 << 20, 2 << 30], Some(PathBuf::from("x.json")))
        );
    }

    #[test]
    fn sizes_rows_and_variants() {
        let c = ok(&[
            "--table", "256MiB", "--work", "32", "--rows", "16Mi", "--input", "device",
        ]);
        assert_eq!((c.rows, c.input), (16 << 20, MemoryKind::Device));
        let (case, _) = tune_mode(c.mode);
        assert_eq!(
            (case.bytes, case.variant),
            (256 << 20, Variant { work: 32 })
        );
        let c = ok(&["--bench", "--sizes", "64MiB, 2 GiB,4096", "--work", "8"]);
        let (cases, _) = bench_mode(c.mode);
        assert_eq!(cases.sizes, vec![64 << 20, 2 << 30, 4096]);
        assert_eq!(cases.variants, vec![Variant { work: 8 }]);
        assert_eq!(parse_rows("1000"), Ok(1000));
        assert_eq!(parse_rows("1Ki"), Ok(1024));
        assert_eq!(parse_table("1g"), Ok(1 << 30));
        assert_eq!(parse_table("64GiB"), Ok(64 << 30));
    }

    #[test]
    fn argument_errors() {
        assert!(usage(&["--table", "big"]).contains("not a number"));
        assert!(usage(&["--table", "0"]).contains("power of two"));
        assert!(usage(&["--table", "32"]).contains("power of two"));
        assert!(usage(&["--table", "96MiB"]).contains("64 MiB or 128 MiB"));
        assert!(usage(&["--table", "128GiB"]).contains("power of two"));
        assert!(usage(&["--table", "3PiB"]).contains("unknown unit"));
        assert!(usage(&["--table", "99999999999TiB"]).contains("too large"));
        assert!(usage(&["--memory", "managed"]).contains("not device or pinned"));
        assert!(usage(&["--input", "host"]).contains("not device or pinned"));
        assert!(usage(&["--rows", "0"]).contains("1 to"));
        assert!(usage(&["--rows", "5Gi"]).contains("1 to"));
        assert!(usage(&["--rows=-3"]).contains("--rows"));
        assert!(usage(&["--work", "65"]).contains("0 to 64"));
        assert!(usage(&["--work", "x"]).contains("--work"));
        assert!(usage(&["--bench", "--sizes", "1MiB,,2MiB"]).contains("not a number"));
        testing::assert_mode_errors(usage, ["--table", "1MiB"], ["--sizes", "1MiB"]);
    }
}
