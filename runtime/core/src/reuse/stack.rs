//! The LRU stack by last-use time: a hash map item -> last time, and marks on the times
//! that are some item's last use. An item's stack depth is the number of marks after its
//! time. The time axis is a window that is renumbered (compacted) when it fills, so memory
//! is O(distinct items), never O(references).

use super::marks::Marks;
use super::table::TimeTable;

/// The most items a stack holds: counts are `u32`. Analyzers stop with
/// [`super::ReuseError::TooManyItems`] well before this.
pub(crate) const MAX_ITEMS: u64 = 1 << 31;

/// Prefetch distances of [`LruStack::access_each`], in references (a flat optimum: 16 to
/// 64 ran within the noise of each other).
const SLOT_AHEAD: usize = 32;
const MARK_AHEAD: usize = 16;

/// Smallest time window.
const MIN_WINDOW: usize = 512;

/// After compaction the window is at least this many times the live items, so compaction
/// (one pass over the map) comes at most once per `WINDOW_FACTOR - 1` times the live items
/// references. A window step costs one bit.
const WINDOW_FACTOR: usize = 8;

#[derive(Debug, Default)]
pub(crate) struct LruStack {
    /// Item -> its last-use time in the window.
    last: TimeTable,
    /// Marks the times that are an item's last use.
    marks: Marks,
    /// Next free time in the window.
    now: usize,
}

impl LruStack {
    pub(crate) fn new() -> LruStack {
        LruStack::default()
    }

    /// Distinct items held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.last.len()
    }

    /// Forgets every item, keeping the allocations for the next use.
    pub(crate) fn clear(&mut self) {
        self.last.clear();
        self.marks.reset(self.marks.window(), 0);
        self.now = 0;
    }

    /// One reference: the item's stack distance (distinct others since its last use), or
    /// `None` on first use; the item moves to the top.
    #[inline(always)]
    pub(crate) fn access(&mut self, item: u64) -> Option<u64> {
        let t_new = self.next_time();
        let dist = self.last.insert(item, t_new as u64).map(|t| {
            let t = t as usize;
            let above = self.marks.count_after(t);
            self.marks.unmark(t);
            above
        });
        self.marks.mark(t_new);
        dist
    }

    /// [`LruStack::access`] for each item in order, handing `f` the item and its distance.
    pub(crate) fn access_each(&mut self, items: &[u64], f: impl FnMut(u64, Option<u64>)) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has the one feature `access_each_popcnt` is compiled for.
            return unsafe { self.access_each_popcnt(items, f) };
        }
        self.access_pipelined(items, f)
    }

    /// [`LruStack::access_each`] with bit counts as single instructions: the x86-64
    /// baseline has no `popcnt`, and its bit-twiddled count costs about 10% here.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn access_each_popcnt(&mut self, items: &[u64], f: impl FnMut(u64, Option<u64>)) {
        self.access_pipelined(items, f)
    }

    /// A two-stage software pipeline keeps DRAM busy: the table slot of the item
    /// `SLOT_AHEAD` on, then the mark of the one `MARK_AHEAD` on (its slot by then in
    /// cache), then this item.
    #[inline(always)]
    fn access_pipelined(&mut self, items: &[u64], mut f: impl FnMut(u64, Option<u64>)) {
        for (i, &item) in items.iter().enumerate() {
            if let Some(&ahead) = items.get(i + SLOT_AHEAD) {
                self.last.prefetch(ahead);
            }
            if let Some(&ahead) = items.get(i + MARK_AHEAD) {
                self.marks.prefetch(self.last.peek(ahead) as usize);
            }
            f(item, self.access(item));
        }
    }

    /// Loads the map entries and mark words that `items` will use, so that the sequential
    /// pass over them finds them in cache: these loads do not depend on each other, so the
    /// CPU overlaps their misses, where the pass itself waits for one at a time.
    pub(crate) fn warm(&self, items: &[u64]) {
        let mut acc = 0u64;
        for &item in items {
            acc ^= self.marks.word(self.last.peek(item) as usize);
        }
        std::hint::black_box(acc);
    }

    /// Moves the item to the top without asking its distance (adds it if new).
    pub(crate) fn touch(&mut self, item: u64) {
        let t_new = self.next_time();
        if let Some(t) = self.last.insert(item, t_new as u64) {
            self.marks.unmark(t as usize);
        }
        self.marks.mark(t_new);
    }

    /// Removes the item; returns its depth (items used after it), `None` if absent.
    pub(crate) fn remove(&mut self, item: u64) -> Option<u64> {
        let t = self.last.remove(item)? as usize;
        let above = self.marks.count_after(t);
        self.marks.unmark(t);
        Some(above)
    }

    /// Items from the least to the most recently used.
    pub(crate) fn items_by_recency(&self) -> Vec<u64> {
        let bases = self.marks.block_bases();
        let mut out = vec![0; self.last.len()];
        for (item, t) in self.last.iter() {
            out[self.marks.rank(&bases, t as usize) as usize] = item;
        }
        out
    }

    #[inline]
    fn next_time(&mut self) -> usize {
        if self.now == self.marks.window() {
            self.compact();
        }
        let t = self.now;
        self.now += 1;
        t
    }

    /// Renumbers the live last-use times to their ranks `0..live` (one pass over the table,
    /// no hashing), growing the window to `WINDOW_FACTOR` times the live items.
    fn compact(&mut self) {
        let bases = self.marks.block_bases();
        let marks = &self.marks;
        self.last.map_times(|t| marks.rank(&bases, t as usize));
        let live = self.last.len();
        let window = self
            .marks
            .window()
            .max(MIN_WINDOW)
            .max((live + 1) * WINDOW_FACTOR)
            .next_power_of_two();
        self.marks.reset(window, live);
        self.now = live;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_through_compactions() {
        // A cyclic trace over 100 items: every reuse has distance 99.
        let mut s = LruStack::new();
        for i in 0..100_000u64 {
            let d = s.access(i % 100);
            assert_eq!(d, (i >= 100).then_some(99), "at {i}");
        }
        assert_eq!(s.len(), 100);
        let start = 100_000 % 100;
        let want: Vec<u64> = (0..100).map(|k| (start + k) % 100).collect();
        assert_eq!(s.items_by_recency(), want);
    }

    #[test]
    fn remove_and_touch() {
        let mut s = LruStack::new();
        for x in [1u64, 2, 3, 4] {
            s.touch(x);
        }
        assert_eq!(s.remove(2), Some(2));
        assert_eq!(s.remove(2), None);
        assert_eq!(s.access(1), Some(2));
        s.touch(3);
        assert_eq!(s.items_by_recency(), vec![4, 1, 3]);
        s.clear();
        assert_eq!(s.len(), 0);
        assert_eq!(s.access(1), None);
    }
}
