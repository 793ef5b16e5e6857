//! Marks over a window of time steps ("is time t some item's last use?") with fast counts
//! of the marks after a time. A bitset in 512-bit blocks (one cache line each) and a
//! Fenwick tree over the blocks' counts: the tree is 1/512 of the window, so its upper
//! levels stay in cache, and a count touches one line of the bitset. (A Fenwick tree over
//! every time step misses the cache at most of its ~25 levels on a large window; a third
//! level of per-block counts measured slower than this on a 10^7-item window.)

use super::fenwick::Fenwick;

/// Time steps per block: 8 words, one 64-byte line.
const BLOCK: usize = 512;

#[derive(Debug, Clone, Copy, Default)]
#[repr(align(64))]
struct Block([u64; 8]);

#[derive(Debug, Default)]
pub(crate) struct Marks {
    blocks: Vec<Block>,
    /// Marks per block, except `delta` for block `current`.
    fen: Fenwick,
    /// The block of the latest mark: marks arrive in time order, so that block's changes
    /// wait here and reach the tree once, when marks move on to the next block.
    current: usize,
    delta: i64,
    /// Marks in all.
    total: u64,
}

impl Marks {
    /// Time steps covered.
    pub(crate) fn window(&self) -> usize {
        self.blocks.len() * BLOCK
    }

    /// A window of at least `window` steps whose first `ones` are marked.
    pub(crate) fn reset(&mut self, window: usize, ones: usize) {
        let blocks = window.div_ceil(BLOCK).max(1);
        self.blocks.clear();
        self.blocks.resize(blocks, Block::default());
        for w in 0..ones / 64 {
            self.blocks[w / 8].0[w % 8] = u64::MAX;
        }
        if ones % 64 != 0 {
            let w = ones / 64;
            self.blocks[w / 8].0[w % 8] = (1u64 << (ones % 64)) - 1;
        }
        self.fen = Fenwick::from_counts(
            (0..blocks).map(|b| ones.saturating_sub(b * BLOCK).min(BLOCK) as u32),
        );
        self.current = ones / BLOCK;
        self.delta = 0;
        self.total = ones as u64;
    }

    /// Marks `t`, which is after every mark so far.
    #[inline]
    pub(crate) fn mark(&mut self, t: usize) {
        let b = t / BLOCK;
        if b != self.current {
            self.fen.add(self.current, self.delta as u32);
            self.current = b;
            self.delta = 0;
        }
        self.blocks[b].0[t / 64 % 8] |= 1 << (t % 64);
        self.delta += 1;
        self.total += 1;
    }

    /// Clears a mark that is set.
    #[inline]
    pub(crate) fn unmark(&mut self, t: usize) {
        let b = t / BLOCK;
        self.blocks[b].0[t / 64 % 8] &= !(1 << (t % 64));
        if b == self.current {
            self.delta -= 1;
        } else {
            self.fen.add(b, u32::MAX);
        }
        self.total -= 1;
    }

    /// The bitset word holding time `t` (to bring its line into cache).
    #[inline]
    pub(crate) fn word(&self, t: usize) -> u64 {
        self.blocks.get(t / BLOCK).map_or(0, |b| b.0[t / 64 % 8])
    }

    /// Asks for the bitset line holding time `t` ahead of its use.
    #[inline]
    pub(crate) fn prefetch(&self, t: usize) {
        if let Some(b) = self.blocks.get(t / BLOCK) {
            super::mem::prefetch(b);
        }
    }

    /// Marks at times after `t`.
    #[inline(always)]
    pub(crate) fn count_after(&self, t: usize) -> u64 {
        let b = t / BLOCK;
        let words = &self.blocks[b].0;
        let w = t / 64 % 8;
        let within = (words[w] >> (t % 64) >> 1).count_ones()
            + words[w + 1..].iter().map(|x| x.count_ones()).sum::<u32>();
        let mut upto = i64::from(self.fen.prefix(b));
        if b >= self.current {
            upto += self.delta;
        }
        self.total - upto as u64 + u64::from(within)
    }

    /// For each block, the marks in all blocks before it (for [`Marks::rank`]).
    pub(crate) fn block_bases(&self) -> Vec<u64> {
        let mut sum = 0u64;
        self.blocks
            .iter()
            .map(|b| {
                let base = sum;
                sum += b.0.iter().map(|x| u64::from(x.count_ones())).sum::<u64>();
                base
            })
            .collect()
    }

    /// Rank of marked time `t` among the marks, given [`Marks::block_bases`].
    #[inline]
    pub(crate) fn rank(&self, bases: &[u64], t: usize) -> u64 {
        let b = t / BLOCK;
        let words = &self.blocks[b].0;
        let w = t / 64 % 8;
        let below = (words[w] & ((1u64 << (t % 64)) - 1)).count_ones()
            + words[..w].iter().map(|x| x.count_ones()).sum::<u32>();
        bases[b] + u64::from(below)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ranks() {
        let mut m = Marks::default();
        m.reset(2_000, 700);
        assert!(m.window() >= 2_000);
        assert_eq!(m.count_after(0), 699);
        assert_eq!(m.count_after(699), 0);
        assert_eq!(m.count_after(1_999), 0);
        m.unmark(10);
        m.mark(1_500);
        assert_eq!(m.count_after(5), 694); // 6..700 without 10, and 1500
        assert_eq!(m.count_after(600), 100);
        assert_eq!(m.count_after(1_500), 0);
        let bases = m.block_bases();
        assert_eq!(m.rank(&bases, 0), 0);
        assert_eq!(m.rank(&bases, 11), 10);
        assert_eq!(m.rank(&bases, 1_500), 699);
        m.reset(100, 0);
        assert_eq!(m.count_after(0), 0);
    }

    #[test]
    fn pending_block_counts() {
        // Marks made and cleared in the current block, then past it.
        let mut m = Marks::default();
        m.reset(4 * BLOCK, BLOCK + 3);
        m.mark(BLOCK + 3);
        m.unmark(BLOCK + 1);
        m.unmark(2);
        assert_eq!(m.count_after(0), (BLOCK + 1) as u64);
        assert_eq!(m.count_after(BLOCK), 2);
        m.mark(3 * BLOCK + 1);
        m.unmark(BLOCK + 2);
        assert_eq!(m.count_after(0), (BLOCK + 1) as u64);
        assert_eq!(m.count_after(BLOCK + 2), 2);
        assert_eq!(m.count_after(3 * BLOCK), 1);
    }
}
