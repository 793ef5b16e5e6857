//! Replays an address trace through a simulated GPU's set-associative hierarchies: its data
//! caches, and the TLB levels of one memory kind. This is the check of a reuse-distance
//! prediction (`memtune_core::reuse::levels`), which models each level as a fully
//! associative LRU cache seeing every reference: the replay adds what the prediction leaves
//! out, set conflicts and the filtering of a level's input by the faster levels.
//!
//! Each hierarchy works as the simulator's chase model does (`cache.rs`): a reference looks
//! its line (page) up fastest level first until one hits, and every level that missed takes
//! it, evicting its set's least recently used. A level's hit ratio is the share of all
//! references that hit it or a faster level of its hierarchy: for fully associative LRU
//! levels that is exactly the predicted `1 - miss_ratio(capacity)`.

use super::config::SimConfig;
use memtune_core::profile::MemoryKind;
use serde::Serialize;
use std::collections::HashMap;

/// Sets up to this many ways are searched linearly; a larger fully associative level is
/// kept as a hashed LRU list.
const LINEAR_WAYS: u64 = 64;
/// The most entries (lines or TLB entries) a replay holds in all: 2^27, about 1 GiB of
/// state for the largest level.
pub const MAX_REPLAY_ENTRIES: u64 = 1 << 27;

/// One replayed level's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayLevel {
    /// The config's cache name, or `<kind> TLB L<i>`.
    pub name: String,
    /// `cache` or `tlb`.
    pub kind: &'static str,
    /// Line or page bytes.
    pub granularity: u64,
    /// Lines or entries.
    pub capacity: u64,
    pub sets: u64,
    pub ways: u64,
    /// References that hit this level or a faster one of its hierarchy.
    pub hits: u64,
    pub references: u64,
}

impl ReplayLevel {
    /// `hits / references`; 1 for an empty trace (nothing missed).
    pub fn hit_ratio(&self) -> f64 {
        if self.references == 0 {
            1.0
        } else {
            self.hits as f64 / self.references as f64
        }
    }
}

/// Why a replay cannot be set up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    #[error("the simulator `{sim}` has no {memory} memory; its kinds: {kinds}")]
    NoKind {
        sim: String,
        memory: MemoryKind,
        kinds: String,
    },
    #[error("the simulator's levels hold {entries} entries in all, more than a replay holds ({MAX_REPLAY_ENTRIES})")]
    TooLarge { entries: u64 },
}

/// LRU per set, set = item mod sets.
enum Sets {
    /// `sets × ways` items, each set's first `len[s]` least recently used first.
    Linear {
        items: Vec<u64>,
        len: Vec<u32>,
        ways: usize,
    },
    /// One fully associative set of many ways.
    Hashed(HashedLru),
}

impl Sets {
    fn new(sets: u64, ways: u64) -> Sets {
        if sets == 1 && ways > LINEAR_WAYS {
            return Sets::Hashed(HashedLru::new(ways as usize));
        }
        Sets::Linear {
            items: vec![0; (sets * ways) as usize],
            len: vec![0; sets as usize],
            ways: ways as usize,
        }
    }

    /// Looks `item` up, making it most recent; on a miss inserts it.
    fn access(&mut self, item: u64, sets: u64) -> bool {
        match self {
            Sets::Hashed(lru) => lru.access(item),
            Sets::Linear { items, len, ways } => {
                let s = (item % sets) as usize;
                let n = len[s] as usize;
                let set = &mut items[s * *ways..s * *ways + *ways];
                match set[..n].iter().position(|&x| x == item) {
                    Some(i) => {
                        set[i..n].rotate_left(1);
                        true
                    }
                    None if n < *ways => {
                        set[n] = item;
                        len[s] += 1;
                        false
                    }
                    None => {
                        set.rotate_left(1);
                        set[n - 1] = item;
                        false
                    }
                }
            }
        }
    }
}

/// A fully associative LRU of `capacity` items: a map to slots of a doubly linked list.
struct HashedLru {
    map: HashMap<u64, u32>,
    item: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    /// Most and least recently used slots (`NIL` when empty).
    head: u32,
    tail: u32,
    capacity: usize,
}

const NIL: u32 = u32::MAX;

impl HashedLru {
    fn new(capacity: usize) -> HashedLru {
        HashedLru {
            map: HashMap::with_capacity(capacity),
            item: Vec::with_capacity(capacity),
            prev: Vec::with_capacity(capacity),
            next: Vec::with_capacity(capacity),
            head: NIL,
            tail: NIL,
            capacity,
        }
    }

    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
    }

    fn push_front(&mut self, s: u32) {
        self.prev[s as usize] = NIL;
        self.next[s as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = s;
        }
        self.head = s;
        if self.tail == NIL {
            self.tail = s;
        }
    }

    fn access(&mut self, item: u64) -> bool {
        if let Some(&s) = self.map.get(&item) {
            self.unlink(s);
            self.push_front(s);
            return true;
        }
        let s = if self.item.len() < self.capacity {
            self.item.push(item);
            self.prev.push(NIL);
            self.next.push(NIL);
            (self.item.len() - 1) as u32
        } else {
            let s = self.tail;
            self.unlink(s);
            self.map.remove(&self.item[s as usize]);
            self.item[s as usize] = item;
            s
        };
        self.map.insert(item, s);
        self.push_front(s);
        false
    }
}

struct Level {
    out: ReplayLevel,
    sets: Sets,
}

/// The caches and the TLB levels of one memory kind of a simulated GPU, replayed.
pub struct Replay {
    caches: Vec<Level>,
    tlbs: Vec<Level>,
}

impl Replay {
    /// The data caches of `config` and the TLB levels of `memory`.
    pub fn new(config: &SimConfig, memory: MemoryKind) -> Result<Replay, ReplayError> {
        let kind = config
            .memory_kinds
            .get(&memory)
            .ok_or_else(|| ReplayError::NoKind {
                sim: config.name.clone(),
                memory,
                kinds: config
                    .memory_kinds
                    .keys()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let level =
            |name: String, kind: &'static str, granularity: u64, sets: u64, ways: u64| Level {
                out: ReplayLevel {
                    name,
                    kind,
                    granularity,
                    capacity: sets * ways,
                    sets,
                    ways,
                    hits: 0,
                    references: 0,
                },
                sets: Sets::new(sets, ways),
            };
        let entries: u64 = config
            .caches
            .iter()
            .map(|c| c.size_bytes / c.line_bytes.max(1))
            .chain(kind.tlb.iter().map(|t| t.entries))
            .fold(0, u64::saturating_add);
        if entries > MAX_REPLAY_ENTRIES {
            return Err(ReplayError::TooLarge { entries });
        }
        let caches = config
            .caches
            .iter()
            .map(|c| {
                let sets = c.sets().max(1);
                level(
                    c.name.clone(),
                    "cache",
                    c.line_bytes.max(1),
                    sets,
                    c.ways.max(1),
                )
            })
            .collect();
        let tlbs = kind
            .tlb
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let entries = t.entries.max(1);
                // As the simulator's TLB model: entries / ways sets of `ways` (any entries
                // left over are dropped here), fully associative without `ways`.
                let (sets, ways) = match t.ways {
                    Some(w) => {
                        let w = w.clamp(1, entries);
                        (entries / w, w)
                    }
                    None => (1, entries),
                };
                let name = format!("{memory} TLB L{}", i + 1);
                level(name, "tlb", t.page_bytes.max(1), sets, ways)
            })
            .collect();
        Ok(Replay { caches, tlbs })
    }

    /// References in trace order.
    pub fn push(&mut self, addresses: &[u64]) {
        for &a in addresses {
            lookup(&mut self.caches, a);
            lookup(&mut self.tlbs, a);
        }
    }

    /// Every level, caches first, each hierarchy fastest first.
    pub fn levels(&self) -> Vec<ReplayLevel> {
        self.caches
            .iter()
            .chain(&self.tlbs)
            .map(|l| l.out.clone())
            .collect()
    }
}

/// One reference through one hierarchy: levels missed take the item; the level that hits
/// and every slower one count a hit.
fn lookup(levels: &mut [Level], address: u64) {
    let mut hit = false;
    for l in levels.iter_mut() {
        l.out.references += 1;
        if !hit {
            let item = address / l.out.granularity;
            hit = l.sets.access(item, l.out.sets);
        }
        if hit {
            l.out.hits += 1;
        }
    }
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
