//! The host buffers the histogram ends in, their pages touched while the GPU works.
//!
//! Turning 10^7 distance counts into the histogram's pairs writes 160 MB of fresh memory,
//! and first-touch page faults were most of that step's time. Once the trace's distinct
//! items are known (bounds on the distances, [`nextuse::distances_bound`]), threads touch
//! the pages of a zeroed counts buffer and a zeroed pairs buffer of those sizes while the
//! GPU sorts and counts; they stop as soon as the GPU is done, and whatever they did not
//! reach faults as before.
//!
//! [`nextuse::distances_bound`]: memtune_core::reuse::nextuse::distances_bound

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Distances prepared for at most (1 GiB of pairs): beyond, the rest faults on first use.
const MOST_DISTANCES: usize = 1 << 26;
/// Threads touching pages (the GPU's host thread keeps a core).
const THREADS: usize = 4;
/// Bytes of a page of host memory (4 KiB; a larger page is touched more than once).
const PAGE: usize = 4096;
/// Pages touched between two looks at the stop flag.
const PAGES_BETWEEN_LOOKS: usize = 64;

/// Zeroed buffers for the distance counts and the histogram's pairs.
#[derive(Debug, Default)]
pub(super) struct Buffers {
    pub(super) counts: Vec<u32>,
    pub(super) pairs: Vec<(u64, u64)>,
}

/// Threads touching the pages of [`Buffers`] until [`Prefault::finish`].
pub(super) struct Prefault {
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<Buffers>>,
}

impl Prefault {
    /// Starts touching buffers for `counts` distance counts and `pairs` pairs (each at
    /// most [`MOST_DISTANCES`]; none when the memory cannot be had, or no thread started).
    pub(super) fn start(counts: usize, pairs: usize) -> Prefault {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let lens = (counts.min(MOST_DISTANCES), pairs.min(MOST_DISTANCES));
        let worker = std::thread::Builder::new()
            .name("memtune-prefault".into())
            .spawn(move || touch_new(lens, &flag))
            .ok();
        Prefault { stop, worker }
    }

    /// Stops the threads and returns the buffers (empty ones when none could be made).
    pub(super) fn finish(mut self) -> Buffers {
        self.stop.store(true, Ordering::Relaxed);
        self.worker
            .take()
            .and_then(|w| w.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Prefault {
    fn drop(&mut self) {
        // An analysis that failed leaves its buffers: the threads stop at once.
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Zeroed buffers of `lens` entries, their pages touched on [`THREADS`] threads each
/// until `stop`.
fn touch_new(lens: (usize, usize), stop: &AtomicBool) -> Buffers {
    let (Some(mut counts), Some(mut pairs)) = (zeroed::<u32>(lens.0), zeroed::<(u64, u64)>(lens.1))
    else {
        return Buffers::default();
    };
    std::thread::scope(|s| {
        touch_on_threads(s, &mut counts, stop);
        touch_on_threads(s, &mut pairs, stop);
    });
    Buffers { counts, pairs }
}

/// `len` zeroes, the memory only mapped (`vec!` of a zero allocates zeroed memory, which
/// the OS maps on first touch), or `None` when it cannot be had.
fn zeroed<T: Copy + Default>(len: usize) -> Option<Vec<T>> {
    // `vec!` aborts when the memory cannot be had; asking first keeps that an answer.
    Vec::<T>::new().try_reserve_exact(len).ok()?;
    Some(vec![T::default(); len])
}

/// Touches one entry a page of `buf` on [`THREADS`] scoped threads, until `stop`.
fn touch_on_threads<'s, T: Copy + Default + Send>(
    s: &'s std::thread::Scope<'s, '_>,
    buf: &'s mut [T],
    stop: &'s AtomicBool,
) {
    let per_page = (PAGE / std::mem::size_of::<T>().max(1)).max(1);
    let slice = buf.len().div_ceil(THREADS).max(1);
    for part in buf.chunks_mut(slice) {
        s.spawn(move || {
            for (i, page) in part.chunks_mut(per_page).enumerate() {
                if i % PAGES_BETWEEN_LOOKS == 0 && stop.load(Ordering::Relaxed) {
                    return;
                }
                // A zero the compiler cannot know is one: the store, and its fault, stay.
                page[0] = black_box(T::default());
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffers_are_zeroed_and_as_long_as_asked() {
        let b = Prefault::start(100_000, 70_000).finish();
        // Stopped at once or not, every entry is there and zero.
        assert_eq!(b.counts.len(), 100_000);
        assert_eq!(b.pairs.len(), 70_000);
        assert!(b.counts.iter().all(|&c| c == 0));
        assert!(b.pairs.iter().all(|&p| p == (0, 0)));
    }

    #[test]
    fn past_the_cap_only_the_cap_is_prepared() {
        let p = Prefault::start(usize::MAX, usize::MAX);
        p.stop.store(true, Ordering::Relaxed);
        let b = p.finish();
        assert!(b.pairs.len() <= MOST_DISTANCES);
        assert!(b.counts.len() <= MOST_DISTANCES);
    }
}
