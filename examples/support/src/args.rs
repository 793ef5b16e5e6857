//! The command line: values, the arguments every example ends with, the mode they choose
//! (and its checks), the cases of a bench over sizes and variants, and the `--check-free`
//! limits.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

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

/// What an example runs: its default mode on one case, or its bench over several.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode<T, B> {
    /// Tune the kernel for `case`, run the chosen plan and check it; with `expect_stored`,
    /// fail unless a stored decision was used.
    Tune { case: T, expect_stored: bool },
    /// Time every plan of each of `cases`; write the rows to `json` where given.
    Bench { cases: B, json: Option<PathBuf> },
}

impl<T, B> Mode<T, B> {
    /// Runs the mode: `tune` with the case and `--expect-stored`, or `bench` with the cases
    /// and `--json`.
    pub fn run<R>(
        &self,
        tune: impl FnOnce(&T, bool) -> R,
        bench: impl FnOnce(&B, Option<&Path>) -> R,
    ) -> R {
        match self {
            Mode::Tune {
                case,
                expect_stored,
            } => tune(case, *expect_stored),
            Mode::Bench { cases, json } => bench(cases, json.as_deref()),
        }
    }
}

/// The default mode's case of an example that takes a size and a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OneSize<V> {
    pub bytes: u64,
    pub variant: V,
}

/// The bench of an example that takes sizes and variants: each size with each variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizesBench<V> {
    pub sizes: Vec<u64>,
    pub variants: Vec<V>,
}

impl<V: Copy> SizesBench<V> {
    /// The `--sizes` given, else the defaults for `memory`: `device` or `pinned`; only the
    /// variant the command line named, else `all`.
    pub fn new(
        sizes: Option<Sizes>,
        memory: MemoryKind,
        [device, pinned]: [&[u64]; 2],
        named: Option<V>,
        all: &[V],
    ) -> Self {
        let sizes = match (sizes, memory) {
            (Some(s), _) => s.0,
            (None, MemoryKind::Pinned) => pinned.to_vec(),
            (None, _) => device.to_vec(),
        };
        let variants = named.map_or_else(|| all.to_vec(), |v| vec![v]);
        SizesBench { sizes, variants }
    }

    /// The largest size (0 without any): the bench allocates it once, and each smaller
    /// size is a prefix.
    pub fn largest(&self) -> u64 {
        self.sizes.iter().copied().max().unwrap_or(0)
    }

    /// Each size with each variant, sizes outermost.
    pub fn cases(&self) -> impl Iterator<Item = OneSize<V>> + '_ {
        self.sizes.iter().flat_map(|&bytes| {
            self.variants
                .iter()
                .map(move |&variant| OneSize { bytes, variant })
        })
    }
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

    /// The [`Mode`], once [`Output::check_mode`] passed: the bench with the cases `cases`
    /// makes, or the default mode with the case `tune` makes.
    pub fn mode<T, B>(
        self,
        bench: bool,
        [one, list]: [(&str, bool); 2],
        tune: impl FnOnce() -> Result<T, Error>,
        cases: impl FnOnce() -> Result<B, Error>,
    ) -> Result<Mode<T, B>, Error> {
        self.check_mode(bench, one, list)?;
        Ok(if bench {
            Mode::Bench {
                cases: cases()?,
                json: self.json,
            }
        } else {
            Mode::Tune {
                case: tune()?,
                expect_stored: self.expect_stored,
            }
        })
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

/// `--check-free`: `device` bytes of device memory must fit [`device_limit`] of the free
/// device memory (asked of `free_device` only where there are any), and `pinned` bytes of
/// pinned memory [`pinned_limit`] of this machine; else `Error::TooLarge` with the refusal
/// and `advice` (what to pass instead).
pub fn check_free(
    device: u64,
    pinned: u64,
    free_device: impl FnOnce() -> Result<u64, Error>,
    advice: &str,
) -> Result<(), Error> {
    if device > 0 {
        let limit = device_limit(free_device()?);
        check_fits(device, limit, DEVICE_LIMIT, advice).map_err(Error::TooLarge)?;
    }
    if pinned > 0 {
        let limit = host_limit().map_err(Error::Io)?;
        check_fits(pinned, limit, PINNED_LIMIT, advice).map_err(Error::TooLarge)?;
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
    fn modes() {
        let output = |json: bool, expect_stored: bool| Output {
            json: json.then(|| PathBuf::from("x.json")),
            expect_stored,
        };
        let flags = [("--region", false), ("--sizes", false)];
        let tune = || Ok(1);
        let bench = || Ok(vec![2, 3]);
        let mode = output(false, true).mode(false, flags, tune, bench);
        let want = Mode::Tune {
            case: 1,
            expect_stored: true,
        };
        assert_eq!(mode, Ok(want.clone()));
        let run = |m: &Mode<u32, Vec<u32>>| {
            m.run(
                |case, stored| format!("tune {case} {stored}"),
                |cases, json| format!("bench {cases:?} {json:?}"),
            )
        };
        assert_eq!(run(&want), "tune 1 true");
        let mode = output(true, false).mode(true, flags, tune, bench);
        let mode = mode.expect("a bench");
        assert_eq!(run(&mode), "bench [2, 3] Some(\"x.json\")");
        let fails = || Err::<u32, _>(Error::Usage("no".into()));
        let e = output(false, false).mode(true, flags, tune, fails);
        assert_eq!(e, Err(Error::Usage("no".into())));
        let e = output(true, false).mode(false, flags, fails, bench);
        let want = "--sizes and --json go with --bench";
        assert_eq!(e, Err(Error::Usage(want.into())));
    }

    #[test]
    fn sizes_benches() {
        let defaults: [&[u64]; 2] = [&[1, 2], &[3]];
        let all = [10, 20];
        let b = SizesBench::new(None, MemoryKind::Device, defaults, None, &all);
        assert_eq!(
            (b.sizes.as_slice(), b.variants.as_slice()),
            (&[1, 2][..], &all[..])
        );
        let pairs: Vec<(u64, u32)> = b.cases().map(|c| (c.bytes, c.variant)).collect();
        assert_eq!(pairs, [(1, 10), (1, 20), (2, 10), (2, 20)]);
        assert_eq!(b.largest(), 2);
        let b = SizesBench::new(None, MemoryKind::Pinned, defaults, Some(30), &all);
        assert_eq!((b.sizes, b.variants), (vec![3], vec![30]));
        let given = Some(Sizes(vec![7, 9, 8]));
        let b = SizesBench::new(given, MemoryKind::Pinned, defaults, None, &all);
        assert_eq!((b.largest(), b.cases().count()), (9, 6));
        let none = SizesBench::new(
            Some(Sizes(vec![])),
            MemoryKind::Device,
            defaults,
            None,
            &all,
        );
        assert_eq!(none.largest(), 0);
    }

    #[test]
    fn check_free_refuses_above_the_limits() {
        let free = || Ok(100 << 30);
        assert_eq!(check_free(80 << 30, 0, free, "x"), Ok(()));
        let e = check_free((80 << 30) + 1, 0, free, "pass a smaller size");
        let e = e.expect_err("above 80% of the free memory");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains(DEVICE_LIMIT), "{e}");
        assert!(e.to_string().ends_with("; pass a smaller size"), "{e}");
        // Without device bytes the free device memory is not asked for.
        let unasked = || -> Result<u64, Error> { panic!("asked for the free memory") };
        assert_eq!(check_free(0, 1, unasked, "x"), Ok(()));
        let e = check_free(0, u64::MAX, unasked, "fewer rows").expect_err("too large");
        assert!(e.to_string().contains(PINNED_LIMIT), "{e}");
        let gone = || Err(Error::Gpu("no context".into()));
        assert_eq!(
            check_free(1, 0, gone, "x"),
            Err(Error::Gpu("no context".into()))
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
