//! CPU reference of `grouping.cu`: the query's answer ([`group_counts`]), and a host
//! model of the kernels' table and passes ([`Table`], [`run`]) that shows every scoped
//! approach builds the same groups as one unscoped pass. A GPU test reads the table and
//! counters back into a [`Table`] and compares [`Table::groups`] with [`group_counts`].

use std::collections::BTreeMap;
use std::ops::Range;

use crate::params::{
    scopes, GroupingBucket, GroupingCounters, GroupingParams, ParamsError, EMPTY_KEY, MAX_CAPACITY,
};

/// Murmur3's 32-bit finalizer, as `memtune_fmix32`.
pub fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// The bucket `key`'s probe starts at; `capacity` is a power of two <= 2^32.
pub fn home_bucket(key: u32, capacity: u64) -> u64 {
    worked_home_bucket(key, capacity, 0)
}

/// [`home_bucket`] after `work` more hash rounds, `h = fmix32(h + key)`, as
/// `memtune_home` with `memtune_grouping_params::work`.
pub fn worked_home_bucket(key: u32, capacity: u64, work: u32) -> u64 {
    let mut h = fmix32(key);
    for _ in 0..work {
        h = fmix32(h.wrapping_add(key));
    }
    u64::from(h) & capacity.wrapping_sub(1)
}

/// `SELECT value, count(*) GROUP BY value` over `keys`.
pub fn group_counts(keys: &[u32]) -> BTreeMap<u32, u64> {
    let mut groups = BTreeMap::new();
    for &key in keys {
        *groups.entry(key).or_insert(0) += 1;
    }
    groups
}

/// A table that does not hold a valid grouping.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupingError {
    #[error(transparent)]
    Params(#[from] ParamsError),
    #[error(
        "{capacity} buckets: a table needs a power of two <= 2^32 that fits this host's memory"
    )]
    BadCapacity { capacity: u64 },
    #[error("{dropped} keys found no free bucket: the table is too small")]
    Dropped { dropped: u64 },
    #[error("bucket {bucket}: key {key} also occupies an earlier bucket")]
    DuplicateKey { bucket: usize, key: u32 },
    #[error("bucket {bucket}: count {count} in an empty bucket, or a claimed bucket with count 0")]
    BadCount { bucket: usize, count: u32 },
}

/// The hash table and counters as the kernels leave them in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub buckets: Vec<GroupingBucket>,
    pub counters: GroupingCounters,
}

impl Table {
    /// The state `memtune_grouping_init` leaves: every bucket empty, counters zero.
    pub fn new(params: &GroupingParams) -> Result<Self, GroupingError> {
        let capacity = params.capacity;
        let len = usize::try_from(capacity)
            .ok()
            .filter(|_| capacity.is_power_of_two() && capacity <= MAX_CAPACITY)
            .ok_or(GroupingError::BadCapacity { capacity })?;
        let empty = GroupingBucket {
            key: EMPTY_KEY,
            count: 0,
        };
        Ok(Self {
            buckets: vec![empty; len],
            counters: GroupingCounters::default(),
        })
    }

    /// Buckets in the table; the passes use it, not `params.capacity`, so parameters
    /// that do not match the table cannot index outside it.
    fn capacity(&self) -> u64 {
        self.buckets.len() as u64
    }

    /// `memtune_grouping_insert` (and `memtune_grouping_insert_spilled` over the spill
    /// buffer), one key after the other.
    pub fn insert_pass(&mut self, keys: &[u32], params: &GroupingParams) {
        let scope = params.scope_begin..params.scope_end;
        for &key in keys {
            let home = worked_home_bucket(key, self.capacity(), params.work);
            if scope.contains(&home) {
                self.insert(key, home);
            }
        }
    }

    /// `memtune_grouping_insert_spill`: inserts the in-scope keys and appends the others
    /// to `spill`.
    pub fn insert_spill_pass(
        &mut self,
        keys: &[u32],
        params: &GroupingParams,
        spill: &mut Vec<u32>,
    ) {
        let scope = params.scope_begin..params.scope_end;
        for &key in keys {
            let home = worked_home_bucket(key, self.capacity(), params.work);
            if scope.contains(&home) {
                self.insert(key, home);
            } else {
                spill.push(key);
                self.counters.spilled += 1;
            }
        }
    }

    /// `memtune_group_insert`: linear probing from `home`, claim or count.
    fn insert(&mut self, key: u32, home: u64) {
        if key == EMPTY_KEY {
            self.counters.sentinel_count += 1;
            return;
        }
        let len = self.buckets.len();
        // `home` < capacity = len, so it fits usize.
        let mut b = home as usize;
        for _ in 0..len {
            let bucket = &mut self.buckets[b];
            if bucket.key == EMPTY_KEY {
                bucket.key = key;
            }
            if bucket.key == key {
                bucket.count = bucket.count.wrapping_add(1);
                return;
            }
            b = (b + 1) % len;
        }
        self.counters.dropped += 1;
    }

    /// The groups the table holds: key -> count, the sentinel key included when it
    /// occurred. Fails on a table no correct run can leave.
    pub fn groups(&self) -> Result<BTreeMap<u32, u64>, GroupingError> {
        if self.counters.dropped != 0 {
            return Err(GroupingError::Dropped {
                dropped: self.counters.dropped,
            });
        }
        let mut groups = BTreeMap::new();
        for (bucket, &GroupingBucket { key, count }) in self.buckets.iter().enumerate() {
            if (key == EMPTY_KEY) != (count == 0) {
                return Err(GroupingError::BadCount { bucket, count });
            }
            if key != EMPTY_KEY && groups.insert(key, u64::from(count)).is_some() {
                return Err(GroupingError::DuplicateKey { bucket, key });
            }
        }
        if self.counters.sentinel_count != 0 {
            groups.insert(EMPTY_KEY, self.counters.sentinel_count);
        }
        Ok(groups)
    }
}

/// How a host drives the kernels over a table (Karnagel et al. §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approach {
    /// One pass over the whole table.
    Unscoped,
    /// One pass per scope, each reading all input.
    Naive,
    /// One pass per scope; the first spills the other scopes' keys, later passes read
    /// only the spill buffer.
    Copy,
}

/// Runs `approach` on the model with scopes of `scope_len` buckets (ignored for
/// [`Approach::Unscoped`]): the same launch sequence a GPU driver issues.
pub fn run(
    keys: &[u32],
    params: &GroupingParams,
    approach: Approach,
    scope_len: u64,
) -> Result<Table, GroupingError> {
    let mut table = Table::new(params)?;
    let passes: Vec<Range<u64>> = match approach {
        Approach::Unscoped => scopes(params.capacity, params.capacity)?,
        Approach::Naive | Approach::Copy => scopes(params.capacity, scope_len)?,
    };
    let mut spill = Vec::new();
    for (i, scope) in passes.into_iter().enumerate() {
        let pass = params.with_scope(scope)?;
        match (approach, i) {
            (Approach::Copy, 0) => table.insert_spill_pass(keys, &pass, &mut spill),
            (Approach::Copy, _) => table.insert_pass(&spill, &pass),
            _ => table.insert_pass(keys, &pass),
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fmix32_matches_murmur3() {
        // Computed independently (Python) from MurmurHash3's fmix32.
        assert_eq!(fmix32(0), 0);
        assert_eq!(fmix32(1), 0x514e_28b7);
        assert_eq!(fmix32(0xffff_ffff), 0x81f1_6f39);
    }

    #[test]
    fn counts_keys_including_the_sentinel() {
        let keys = [3, EMPTY_KEY, 3, 7, EMPTY_KEY, EMPTY_KEY];
        let expected = BTreeMap::from([(3, 2), (7, 1), (EMPTY_KEY, 3)]);
        assert_eq!(group_counts(&keys), expected);
        let params = GroupingParams::new(keys.len() as u64, 2);
        let table = params
            .map_err(GroupingError::from)
            .and_then(|p| run(&keys, &p, Approach::Unscoped, 1));
        assert_eq!(table.and_then(|t| t.groups()), Ok(expected));
    }

    #[test]
    fn a_worked_hash_moves_homes_but_builds_the_same_groups() {
        let keys: Vec<u32> = (0..4000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) % 700)
            .collect();
        let expected = group_counts(&keys);
        let Ok(params) = GroupingParams::new(keys.len() as u64, 700) else {
            panic!("valid params");
        };
        let worked = params.with_work(4);
        let moved = (0..700).filter(|&k| {
            home_bucket(k, params.capacity) != worked_home_bucket(k, params.capacity, 4)
        });
        assert!(moved.count() > 600);
        for approach in [Approach::Unscoped, Approach::Naive, Approach::Copy] {
            let table = run(&keys, &worked, approach, params.capacity / 4);
            assert_eq!(table.and_then(|t| t.groups()), Ok(expected.clone()));
        }
    }

    #[test]
    fn a_full_table_drops_keys_and_is_reported() {
        let keys = [1, 2, 3];
        let params = GroupingParams {
            n_keys: 3,
            capacity: 2,
            scope_begin: 0,
            scope_end: 2,
            work: 0,
            pad: 0,
        };
        let table = run(&keys, &params, Approach::Unscoped, 2);
        assert!(
            table.as_ref().is_ok_and(|t| t.counters.dropped == 1),
            "{table:?}"
        );
        assert_eq!(
            table.and_then(|t| t.groups()),
            Err(GroupingError::Dropped { dropped: 1 })
        );
    }

    #[test]
    fn tables_need_a_power_of_two_capacity() {
        for capacity in [0, 3, 96, (1 << 32) + 2, 1 << 33] {
            let params = GroupingParams {
                n_keys: 0,
                capacity,
                scope_begin: 0,
                scope_end: capacity,
                work: 0,
                pad: 0,
            };
            assert_eq!(
                Table::new(&params),
                Err(GroupingError::BadCapacity { capacity })
            );
        }
    }

    #[test]
    fn groups_rejects_inconsistent_tables() {
        let bucket = |key, count| GroupingBucket { key, count };
        let table = |buckets| Table {
            buckets,
            counters: GroupingCounters::default(),
        };
        let dup = table(vec![bucket(4, 1), bucket(4, 2)]);
        assert_eq!(
            dup.groups(),
            Err(GroupingError::DuplicateKey { bucket: 1, key: 4 })
        );
        let zero = table(vec![bucket(4, 0)]);
        assert_eq!(
            zero.groups(),
            Err(GroupingError::BadCount {
                bucket: 0,
                count: 0
            })
        );
        let ghost = table(vec![bucket(EMPTY_KEY, 3)]);
        assert_eq!(
            ghost.groups(),
            Err(GroupingError::BadCount {
                bucket: 0,
                count: 3
            })
        );
    }
}
