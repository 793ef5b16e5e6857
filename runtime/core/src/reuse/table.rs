//! An open-addressing hash table from item to last-use time, made for the stack's access
//! pattern: key and time side by side in one 16-byte slot (one cache line per lookup, where
//! a SwissTable reads a control group and then the slot), linear probing, and removal by
//! backward shift so no tombstones pile up.

/// `time` of a free slot; real times are window positions, far below it.
const FREE: u64 = u64::MAX;

/// Grow past this many items per slot (as a fraction, 7/10).
const LOAD_NUM: usize = 7;
const LOAD_DEN: usize = 10;

const MIN_SLOTS: usize = 64;

#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
struct Slot {
    key: u64,
    time: u64,
}

const EMPTY: Slot = Slot { key: 0, time: FREE };

#[derive(Debug, Clone)]
pub(crate) struct TimeTable {
    slots: Vec<Slot>,
    len: usize,
}

impl Default for TimeTable {
    fn default() -> Self {
        TimeTable {
            slots: vec![EMPTY; MIN_SLOTS],
            len: 0,
        }
    }
}

/// Multiply-fold hash: mixes every key bit into the low bits that pick the slot.
#[inline]
fn hash(key: u64) -> usize {
    let m = u128::from(key) * 0x9E37_79B9_7F4A_7C15;
    ((m as u64) ^ ((m >> 64) as u64)) as usize
}

impl TimeTable {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// Slot index holding `key`, or the free slot where it would go.
    #[inline]
    fn find(&self, key: u64) -> (usize, bool) {
        let mask = self.mask();
        let mut i = hash(key) & mask;
        loop {
            let s = self.slots[i];
            if s.time == FREE {
                return (i, false);
            }
            if s.key == key {
                return (i, true);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<u64> {
        match self.find(key) {
            (i, true) => Some(self.slots[i].time),
            _ => None,
        }
    }

    /// The time at `key`'s home slot if `key` is there (else 0): one load, for warming.
    #[inline]
    pub(crate) fn peek(&self, key: u64) -> u64 {
        let s = self.slots[hash(key) & self.mask()];
        if s.key == key && s.time != FREE {
            s.time
        } else {
            0
        }
    }

    /// Asks for `key`'s home slot ahead of its use.
    #[inline]
    pub(crate) fn prefetch(&self, key: u64) {
        super::mem::prefetch(&self.slots[hash(key) & self.mask()]);
    }

    /// Sets `key`'s time; returns the time it had.
    #[inline]
    pub(crate) fn insert(&mut self, key: u64, time: u64) -> Option<u64> {
        let (i, found) = self.find(key);
        if found {
            return Some(std::mem::replace(&mut self.slots[i].time, time));
        }
        self.slots[i] = Slot { key, time };
        self.len += 1;
        if self.len * LOAD_DEN > self.slots.len() * LOAD_NUM {
            self.grow();
        }
        None
    }

    /// Removes `key`; returns its time.
    pub(crate) fn remove(&mut self, key: u64) -> Option<u64> {
        let (mut i, found) = self.find(key);
        if !found {
            return None;
        }
        let time = self.slots[i].time;
        let mask = self.mask();
        // Backward shift: pull later entries of the probe run into the hole when their
        // home slot is not between the hole and them.
        let mut j = (i + 1) & mask;
        while self.slots[j].time != FREE {
            let home = hash(self.slots[j].key) & mask;
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(i) & mask) {
                self.slots[i] = self.slots[j];
                i = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[i] = EMPTY;
        self.len -= 1;
        Some(time)
    }

    pub(crate) fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = EMPTY);
        self.len = 0;
    }

    /// Every `(key, time)`, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.slots
            .iter()
            .filter(|s| s.time != FREE)
            .map(|s| (s.key, s.time))
    }

    /// Rewrites every time in place.
    pub(crate) fn map_times(&mut self, mut f: impl FnMut(u64) -> u64) {
        for s in self.slots.iter_mut().filter(|s| s.time != FREE) {
            s.time = f(s.time);
        }
    }

    fn grow(&mut self) {
        let slots = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, super::mem::filled(slots, EMPTY));
        let mask = self.mask();
        for s in old.into_iter().filter(|s| s.time != FREE) {
            let mut i = hash(s.key) & mask;
            while self.slots[i].time != FREE {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn agrees_with_std_map() {
        let mut t = TimeTable::default();
        let mut m = HashMap::new();
        let mut x = 1u64;
        for step in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few distinct keys, some colliding on purpose (multiples of a power of two).
            let key = (x % 3_000) << 20;
            if x % 3 == 0 {
                assert_eq!(t.remove(key), m.remove(&key), "step {step}");
            } else {
                assert_eq!(t.insert(key, step), m.insert(key, step), "step {step}");
            }
            assert_eq!(t.len(), m.len());
        }
        for (&k, &v) in &m {
            assert_eq!(t.get(k), Some(v));
        }
        assert_eq!(t.iter().count(), m.len());
        t.clear();
        assert_eq!((t.len(), t.get(0)), (0, None));
    }
}
