//! One entry point for every CPU mode: pick a [`Mode`], stream a source through it.

use super::exact::{check_items, ExactAnalyzer};
use super::hprda::{HpRdaAnalyzer, HpRdaConfig};
use super::parallel::ParallelAnalyzer;
use super::shards::ShardsAnalyzer;
use super::trace::{AddressSource, SliceSource};
use super::{Granularity, Histogram, ReuseError};

/// References read from a source per step (512 KiB of addresses).
const BATCH: usize = 1 << 16;

/// How to analyze. GPU modes live in the `memtune` crate, which wraps this enum.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Mode {
    /// Sequential exact analysis: the reference.
    ExactCpu,
    /// Exact on every core, from per-chunk summaries; the same histogram as `ExactCpu`.
    ExactCpuParallel,
    /// SHARDS spatial sampling: an estimate in bounded memory.
    Sampled(Sampling),
    /// HP-RDA (Cui et al.): sub-traces analyzed apart, merged by formula, adjusted; an
    /// approximation with the GPU algorithm's structure, run on every core.
    HpRda(HpRdaConfig),
}

/// SHARDS variant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// Fixed rate in `(0, 1]`.
    Rate(f64),
    /// Fixed number of sampled items held.
    Budget(usize),
}

impl Mode {
    /// The mode's name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::ExactCpu => "exact-cpu",
            Mode::ExactCpuParallel => "exact-cpu-parallel",
            Mode::Sampled(_) => "sampled",
            Mode::HpRda(_) => "hp-rda",
        }
    }
}

/// Settings shared by the modes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Bytes per item (>= 1): addresses `a` and `b` are one item when `a / g == b / g`.
    pub granularity: u64,
    /// `ExactCpuParallel` and `HpRda` worker threads; 0 uses every core.
    pub threads: usize,
    /// `ExactCpuParallel` references per chunk; 0 for the default.
    pub chunk_len: usize,
    /// Stop with [`ReuseError::TooManyItems`] once a mode holds more distinct items.
    pub max_distinct: Option<u64>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            granularity: 1,
            threads: 0,
            chunk_len: 0,
            max_distinct: None,
        }
    }
}

/// A CPU analyzer of any mode: push items (addresses divided by the granularity) in trace
/// order, then finish.
#[derive(Debug)]
#[non_exhaustive]
pub enum Analyzer {
    Exact(ExactAnalyzer),
    Parallel(ParallelAnalyzer),
    Sampled(ShardsAnalyzer, Option<u64>),
    HpRda(HpRdaAnalyzer),
}

impl Analyzer {
    pub fn new(mode: Mode, options: &Options) -> Result<Analyzer, ReuseError> {
        let limit = options.max_distinct;
        Ok(match mode {
            Mode::ExactCpu => Analyzer::Exact(match limit {
                Some(l) => ExactAnalyzer::with_limit(l),
                None => ExactAnalyzer::new(),
            }),
            Mode::ExactCpuParallel => {
                let p = ParallelAnalyzer::new(options.threads, options.chunk_len);
                Analyzer::Parallel(match limit {
                    Some(l) => p.with_limit(l),
                    None => p,
                })
            }
            Mode::Sampled(Sampling::Rate(r)) => {
                Analyzer::Sampled(ShardsAnalyzer::with_rate(r)?, limit)
            }
            Mode::Sampled(Sampling::Budget(n)) => {
                Analyzer::Sampled(ShardsAnalyzer::with_budget(n)?, limit)
            }
            Mode::HpRda(config) => {
                let a = HpRdaAnalyzer::new(config, options.threads)?;
                Analyzer::HpRda(match limit {
                    Some(l) => a.with_limit(l),
                    None => a,
                })
            }
        })
    }

    pub fn push(&mut self, items: &[u64]) -> Result<(), ReuseError> {
        match self {
            Analyzer::Exact(a) => a.push(items),
            Analyzer::Parallel(a) => a.push(items),
            Analyzer::Sampled(a, limit) => {
                a.push(items);
                check_items(a.held(), *limit, "sampled")
            }
            Analyzer::HpRda(a) => a.push(items),
        }
    }

    pub fn finish(self) -> Result<Histogram, ReuseError> {
        match self {
            Analyzer::Exact(a) => Ok(a.finish()),
            Analyzer::Parallel(a) => a.finish(),
            Analyzer::Sampled(a, _) => Ok(a.finish()),
            Analyzer::HpRda(a) => a.finish(),
        }
    }
}

/// Analyzes a trace of addresses.
pub fn analyze<S: AddressSource + ?Sized>(
    source: &mut S,
    mode: Mode,
    options: &Options,
) -> Result<Histogram, ReuseError> {
    analyze_with_progress(source, mode, options, |_| {})
}

/// Analyzes addresses already in memory.
pub fn analyze_slice(
    addresses: &[u64],
    mode: Mode,
    options: &Options,
) -> Result<Histogram, ReuseError> {
    analyze(&mut SliceSource::new(addresses), mode, options)
}

/// As [`analyze`], calling `progress` with the references read so far after each batch.
pub fn analyze_with_progress<S: AddressSource + ?Sized>(
    source: &mut S,
    mode: Mode,
    options: &Options,
    mut progress: impl FnMut(u64),
) -> Result<Histogram, ReuseError> {
    let granularity = Granularity::new(options.granularity)?;
    let mut analyzer = Analyzer::new(mode, options)?;
    let mut buf = Vec::with_capacity(BATCH);
    let mut read = 0u64;
    loop {
        buf.clear();
        let n = source.read_into(&mut buf, BATCH)?;
        if n == 0 {
            break;
        }
        granularity.apply(&mut buf);
        analyzer.push(&buf)?;
        read += n as u64;
        progress(read);
    }
    analyzer.finish()
}
