//! Reuse-distance analysis on the CPU. The stack reuse distance of a reference
//! is the number of distinct other items referenced since the previous use of its item
//! (a first use is cold, infinitely far); a fully associative LRU cache of `c` items hits
//! exactly the references of distance below `c`.
//!
//! - [`trace`]: streaming readers (text, `u64`, valgrind lackey) and slices.
//! - [`exact`]: the sequential exact analysis, the ground truth ([`exact::distances`] per
//!   reference).
//! - [`ChunkSummary`] / [`Merger`]: per-chunk summaries that merge exactly;
//!   [`parallel`] runs them on every core.
//! - [`shards`]: SHARDS sampling at a fixed rate or a fixed budget.
//! - [`hprda`]: HP-RDA, the parallel approximation of Cui et al., on the CPU;
//!   [`hprda_model`]: the method of its GPU kernels, step for step.
//! - [`Histogram`]: exact ([`Distances`]) and log2 bins, CDF, miss-ratio curve.
//!
//! ```
//! use memtune_core::reuse::{analyze_slice, Mode, Options};
//!
//! let h = analyze_slice(&[0xa0, 0xb0, 0xc0, 0xa0], Mode::ExactCpu, &Options::default()).unwrap();
//! assert_eq!((h.references, h.distinct, h.cold), (4, 3, 3));
//! assert_eq!(h.exact.get(2), Some(1)); // a's reuse sees b and c
//! assert_eq!(h.miss_ratio(3), 0.75);     // a 3-item cache hits only that reuse
//! ```

mod analyze;
mod chunk;
mod distances;
mod error;
pub mod exact;
mod fenwick;
mod granularity;
mod histogram;
pub mod hprda;
mod hprda_adjust;
mod hprda_dense;
pub mod hprda_model;
pub mod levels;
mod marks;
mod mem;
pub mod nextuse;
pub mod parallel;
mod parse;
pub mod radix;
pub mod sectored;
pub mod shards;
mod stack;
mod table;
pub mod trace;

pub use analyze::{
    analyze, analyze_slice, analyze_with_progress, Analyzer, Mode, Options, Sampling,
};
pub use chunk::{merge, summarize, ChunkAnalyzer, ChunkSummary, Merger};
pub use distances::Distances;
pub use error::ReuseError;
pub use exact::{ExactAnalyzer, COLD};
pub use granularity::Granularity;
pub use histogram::{log2_bin, Histogram, Log2Bin, MissRatioCurve, SampleInfo};
pub use hprda::{HpRdaAnalyzer, HpRdaConfig};
pub use parallel::ParallelAnalyzer;
pub use shards::{sample_hash, ShardsAnalyzer};
pub use trace::{AddressSource, Format, SliceSource, TraceReader};
