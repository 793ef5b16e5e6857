//! The command line: values, the arguments every example ends with, the checks of the
//! mode they choose, and the `--check-free` limits.

use std::ffi::OsString;
use std::path::PathBuf;

use memtune::core::size::{self, format_bytes, UNITS};
use memtune::MemoryKind;

use crate::Error;

/// A parsed command line: `Err(clap::Error)` for what clap reports itself (`--help`
/// included: print it with `e.exit()`), else what the example's checks made of it.
pub type Parsed<T> = Result<Result<T, Error>, clap::Error>;

/// Parses `args` (without the program name) as the command line of `name`, then `check`s
/// them.
pub fn parse<C: clap::Parser, T, I, A>(
    name: &str,
    args: I,
    check: impl FnOnce(C) -> Result<T, Error>,
) -> Parsed<T>
where
    I: IntoIterator<Item = A>,
    A: Into<OsString> + Clone,
{
    let argv = std::iter::once(name.into()).chain(args.into_iter().map(Into::into));
    C::try_parse_from(argv).map(check)
}

/// The arguments every example's command line ends with (flattened into its own).
#[derive(Debug, clap::Args)]
pub struct Output {
    /// Write the bench rows as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Default mode: fail (exit 1) unless a stored decision was used and nothing timed.
    #[arg(long)]
    pub expect_stored: bool,
}

impl Output {
    /// Checks the arguments against the mode: with `bench`, neither the default mode's
    /// `one` argument (`--region`) nor `--expect-stored`; without, neither the bench's
    /// `list` argument (`--sizes`) nor `--json`. Each is `(flag, given)`.
    pub fn check_mode(
        &self,
        bench: bool,
        one: (&str, bool),
        list: (&str, bool),
    ) -> Result<(), Error> {
        let usage = |m: String| Err(Error::Usage(m));
        if bench {
            if one.1 {
                return usage(format!("--bench takes {}, not {}", list.0, one.0));
            }
            if self.expect_stored {
                return usage("--expect-stored is for the default mode, not --bench".into());
            }
        } else if list.1 || self.json.is_some() {
            return usage(format!("{} and --json go with --bench", list.0));
        }
        Ok(())
    }
}

/// `device` or `pinned` (managed memory is not offered).
pub fn parse_memory(s: &str) -> Result<MemoryKind, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "device" => Ok(MemoryKind::Device),
        "pinned" => Ok(MemoryKind::Pinned),
        other => Err(format!("`{other}` is not device or pinned")),
    }
}

/// `1GiB`, `64 MiB`, `4096`: a number with an optional binary unit (memtune's units).
/// A value without digits is "not `noun` such as `example`".
pub fn parse_quantity(s: &str, noun: &str, example: &str) -> Result<u64, String> {
    size::parse(s).map_err(|e| match e {
        size::SizeError::NotANumber => format!("`{s}` is not {noun} such as {example}"),
        _ => format!("`{s}`: unknown unit or too large (units: {UNITS})"),
    })
}

/// A list of sizes (a newtype: clap would take a `Vec` for a repeated flag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes(pub Vec<u64>);

/// A comma-separated list, each item parsed by `item`.
pub fn parse_list<T>(s: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    s.split(',').map(item).collect()
}

/// What [`device_limit`] allows, as the refusal names it.
pub const DEVICE_LIMIT: &str = "80% of the free device memory";
/// What [`pinned_limit`] allows, as the refusal names it.
pub const PINNED_LIMIT: &str = "a quarter of the available host memory";

/// Device memory a run may take: 80% of `free`.
pub fn device_limit(free: u64) -> u64 {
    free / 5 * 4
}

/// Pinned memory a run may take: a quarter of the available host memory.
pub fn pinned_limit(host_available: u64) -> u64 {
    host_available / 4
}

/// `MemAvailable` of /proc/meminfo (else `MemTotal`), in bytes.
pub fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map(|kib| kib * 1024)
    };
    field("MemAvailable:").or_else(|| field("MemTotal:"))
}

/// [`pinned_limit`] of this machine; `Err` when /proc/meminfo cannot be read.
pub fn host_limit() -> Result<u64, String> {
    host_available_bytes()
        .map(pinned_limit)
        .ok_or_else(|| "--check-free: /proc/meminfo could not be read".to_string())
}

/// `--check-free`: `Err` with the refusal when `size` is above `limit` (`what` names the
/// limit, `advice` what to pass instead).
pub fn check_fits(size: u64, limit: u64, what: &str, advice: &str) -> Result<(), String> {
    if size > limit {
        return Err(format!(
            "{} is above {what} ({}); {advice}",
            format_bytes(size),
            format_bytes(limit)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_and_lists() {
        assert_eq!(parse_quantity("1g", "a size", "1GiB"), Ok(1 << 30));
        assert_eq!(parse_quantity(" 3 GiB", "a size", "1GiB"), Ok(3 << 30));
        let e = parse_quantity("big", "a number", "16Mi").unwrap_err();
        assert_eq!(e, "`big` is not a number such as 16Mi");
        assert!(parse_quantity("3PiB", "a", "b")
            .unwrap_err()
            .contains("unknown unit"));
        let e = parse_quantity("99999999999TiB", "a", "b").unwrap_err();
        assert!(e.contains("too large"), "{e}");
        let sizes = parse_list("1KiB,2", |s| parse_quantity(s, "a size", "1KiB"));
        assert_eq!(sizes, Ok(vec![1024, 2]));
        assert_eq!(parse_memory(" Pinned"), Ok(MemoryKind::Pinned));
        assert!(parse_memory("managed")
            .unwrap_err()
            .contains("not device or pinned"));
    }

    #[test]
    fn mode_checks() {
        let output = |json: bool, expect_stored: bool| Output {
            json: json.then(|| PathBuf::from("x.json")),
            expect_stored,
        };
        let one = ("--region", true);
        let list = ("--sizes", true);
        let none = |flag| (flag, false);
        let ok = output(true, false).check_mode(true, none("--region"), list);
        assert_eq!(ok, Ok(()));
        assert_eq!(
            output(false, true).check_mode(false, one, none("--sizes")),
            Ok(())
        );
        let e = output(false, false).check_mode(true, one, list);
        assert_eq!(
            e,
            Err(Error::Usage("--bench takes --sizes, not --region".into()))
        );
        let e = output(false, true).check_mode(true, none("--region"), list);
        let want = "--expect-stored is for the default mode, not --bench";
        assert_eq!(e, Err(Error::Usage(want.into())));
        let e = output(true, false).check_mode(false, one, none("--sizes"));
        assert_eq!(
            e,
            Err(Error::Usage("--sizes and --json go with --bench".into()))
        );
    }

    #[test]
    fn limits() {
        assert_eq!(device_limit(100 << 30), 80 << 30);
        assert_eq!(pinned_limit(128 << 30), 32 << 30);
        assert!(check_fits(1 << 30, 1 << 30, "x", "y").is_ok());
        let e = check_fits((1 << 30) + 4, 1 << 30, DEVICE_LIMIT, "pass a smaller size");
        let e = e.expect_err("over the limit");
        assert!(e.contains("80% of the free"), "{e}");
        assert!(e.ends_with("; pass a smaller size"), "{e}");
        assert!(host_available_bytes().is_some_and(|b| b > 0));
        assert!(host_limit().is_ok_and(|b| b > 0));
    }
}
