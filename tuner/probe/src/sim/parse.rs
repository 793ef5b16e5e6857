//! Reading a `memtune-sim/1` document into a [`SimConfig`]: the top level, the memory
//! kinds and their TLB levels, the cache levels and the noise, each within the simulator's
//! limits (`limits.rs`) and validated against the others (a page no larger than the memory,
//! ways no more than entries, a cache size a whole number of sets). The typed field readers
//! it uses are in `parse_fields.rs`.

use super::config::{
    CacheLevelConfig, KindConfig, NoiseConfig, ReadOnlyConfig, SimConfig, SimConfigError,
    TlbLevelConfig, DEFAULT_MAX_CHASE_ELEMENTS, SCHEMA,
};
use super::limits::{
    ALLOCATION_SPREAD, CLOCK_MHZ, MAX_CACHE_BYTES, MAX_CACHE_LEVELS, MAX_CACHE_WAYS,
    MAX_CHASE_ELEMENTS, MAX_CYCLES, MAX_ENTRIES, MAX_LINE_BYTES, MAX_MEMORY_BYTES, MAX_PAGE_BYTES,
    MAX_SECTORS, MAX_SETS, MAX_SM_COUNT, MAX_TLB_LEVELS, MIN_LINE_BYTES, MIN_PAGE_BYTES,
    WALKS_IN_FLIGHT,
};
use super::parse_fields::shown;
use memtune_core::profile::MemoryKind;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Reads one document, carrying the origin for error messages.
pub(super) struct Parser<'a> {
    pub(super) origin: &'a str,
}

impl Parser<'_> {
    pub(super) fn config(&self, value: &Value) -> Result<SimConfig, SimConfigError> {
        let root = value.as_object().ok_or_else(|| SimConfigError::Json {
            origin: self.origin.to_string(),
            message: "the top level is not an object".to_string(),
        })?;
        match root.get("schema") {
            Some(Value::String(s)) if s == SCHEMA => {}
            Some(other) => {
                return Err(SimConfigError::Schema {
                    origin: self.origin.to_string(),
                    found: other.to_string(),
                })
            }
            None => {
                return Err(SimConfigError::Schema {
                    origin: self.origin.to_string(),
                    found: "missing".to_string(),
                })
            }
        }
        let name_key = self.key(root, "", "name");
        let name = match name_key.required()? {
            Value::String(s) if !s.trim().is_empty() => s.clone(),
            _ => {
                return Err(name_key.invalid(
                    "must be a non-empty string",
                    "name the simulated GPU, e.g. \"name\": \"my-gpu\"",
                ))
            }
        };
        let sm_count = self.key(root, "", "sm_count").bounded_int(
            MAX_SM_COUNT,
            "use the GPU's SM count, e.g. \"sm_count\": 56",
        )? as u32;
        let clock_mhz = self.key(root, "", "clock_mhz").number_in(
            CLOCK_MHZ,
            "give the SM clock in MHz (1 MHz to 10 GHz), e.g. \"clock_mhz\": 1480",
        )?;
        let l2_hit_cycles = self.key(root, "", "l2_hit_cycles").cycles(
            "give the latency of a chase load that hits every TLB, e.g. \"l2_hit_cycles\": 293",
        )?;

        let kinds_value = self.key(root, "", "memory_kinds").required()?;
        let kinds_obj = kinds_value.as_object().ok_or_else(|| {
            self.invalid(
                "memory_kinds",
                "must be an object",
                "e.g. \"memory_kinds\": { \"device\": { ... } }",
            )
        })?;
        if kinds_obj.is_empty() {
            return Err(self.invalid(
                "memory_kinds",
                "is empty",
                "describe at least one of device, pinned, managed",
            ));
        }
        let mut memory_kinds = BTreeMap::new();
        for (key, kind_value) in kinds_obj {
            let kind: MemoryKind = key.parse().map_err(|_| {
                self.invalid(
                    &format!("memory_kinds.{key}"),
                    "is not a memory kind",
                    "use device, pinned or managed",
                )
            })?;
            let kind_config = self.kind(kind_value, &format!("memory_kinds.{key}"), sm_count)?;
            memory_kinds.insert(kind, kind_config);
        }

        let noise = match root.get("noise") {
            None | Some(Value::Null) => NoiseConfig::default(),
            Some(v) => self.noise(v)?,
        };

        let caches = self.cache_levels(root, "caches", true)?;
        let constant_caches = self.cache_levels(root, "constant_caches", false)?;
        let dram_cycles = self.optional_cycles(
            root,
            "dram_cycles",
            "give the latency of a chase load that misses every cache, e.g. \"dram_cycles\": 600",
        )?;
        if !caches.is_empty() && dram_cycles.is_none() {
            return Err(SimConfigError::Missing {
                origin: self.origin.to_string(),
                key: "dram_cycles".to_string(),
                fix: "a simulator with `caches` needs the latency of a load that misses them all, e.g. \"dram_cycles\": 600".to_string(),
            });
        }
        let constant_miss_cycles = self
            .optional_cycles(
                root,
                "constant_miss_cycles",
                "give the latency of a constant load that misses every constant cache, e.g. 476",
            )?
            .or(dram_cycles);
        if !constant_caches.is_empty() && constant_miss_cycles.is_none() {
            return Err(SimConfigError::Missing {
                origin: self.origin.to_string(),
                key: "constant_miss_cycles".to_string(),
                fix: "a simulator with `constant_caches` needs `constant_miss_cycles` or `dram_cycles`".to_string(),
            });
        }
        let fetch_key = self.key(root, "", "l2_fetch_bytes");
        let l2_fetch_bytes = match caches.iter().find(|l| !l.is_l1()) {
            Some(l2) => fetch_key.optional_power_of_two(
                (MIN_LINE_BYTES, l2.line_bytes),
                "give what one DRAM miss brings into the L2, up to its line, e.g. 64",
            )?,
            None if root.get("l2_fetch_bytes").is_some_and(|v| !v.is_null()) => {
                return Err(fetch_key.invalid(
                    "needs an L2: a level of `caches` not named L1",
                    "add the L2 to `caches`, or remove l2_fetch_bytes",
                ))
            }
            None => None,
        };
        let read_only = self.read_only(root, &caches)?;
        let shared_memory_cycles = self.optional_cycles(
            root,
            "shared_memory_cycles",
            "give the latency of a dependent shared-memory load, e.g. 30",
        )?;
        let max_chase_elements = match root.get("max_chase_elements") {
            None | Some(Value::Null) => DEFAULT_MAX_CHASE_ELEMENTS,
            Some(_) => self.key(root, "", "max_chase_elements").bounded_int(
                MAX_CHASE_ELEMENTS,
                "give the longest chase ring the GPU allows, e.g. 65536",
            )?,
        };

        Ok(SimConfig {
            name,
            sm_count,
            clock_mhz,
            l2_hit_cycles,
            memory_kinds,
            caches,
            constant_caches,
            read_only,
            dram_cycles,
            l2_fetch_bytes,
            constant_miss_cycles,
            shared_memory_cycles,
            max_chase_elements,
            noise,
        })
    }

    /// `read_only`: `"l1"` (the read-only path uses the L1 of `caches`) or a cache level
    /// of its own; absent: not modelled.
    fn read_only(
        &self,
        root: &Map<String, Value>,
        caches: &[CacheLevelConfig],
    ) -> Result<Option<ReadOnlyConfig>, SimConfigError> {
        let fix = "give \"l1\" (through the L1) or a level such as {\"name\": \"read-only\", \"size_bytes\": 49152, \"line_bytes\": 128, \"ways\": 4, \"hit_cycles\": 60}, with `caches` that have an L1";
        let config = match root.get("read_only") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) if s == "l1" => ReadOnlyConfig::SharesL1,
            Some(v @ Value::Object(_)) => {
                ReadOnlyConfig::Own(self.cache_level(v, "read_only", false)?)
            }
            Some(_) => {
                return Err(self.invalid("read_only", "must be \"l1\" or a cache level", fix))
            }
        };
        if !caches.iter().any(CacheLevelConfig::is_l1) {
            return Err(self.invalid("read_only", "needs `caches` with a level named L1", fix));
        }
        Ok(Some(config))
    }

    fn optional_cycles(
        &self,
        obj: &Map<String, Value>,
        key: &str,
        fix: &str,
    ) -> Result<Option<f64>, SimConfigError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.key(obj, "", key).cycles(fix).map(Some),
        }
    }

    /// `caches` or `constant_caches`: an array of levels, fastest first, names unique.
    fn cache_levels(
        &self,
        root: &Map<String, Value>,
        key: &str,
        data: bool,
    ) -> Result<Vec<CacheLevelConfig>, SimConfigError> {
        let items = match root.get(key) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(_) => {
                return Err(self.invalid(
                    key,
                    "must be an array of levels",
                    "list the levels fastest first, e.g. [{\"name\": \"L1\", \"size_bytes\": 384, \"line_bytes\": 32, \"ways\": 3, \"hit_cycles\": 30}]",
                ))
            }
        };
        if items.len() > MAX_CACHE_LEVELS {
            return Err(self.invalid(
                key,
                &format!(
                    "has {} levels, more than the simulator supports ({MAX_CACHE_LEVELS})",
                    items.len()
                ),
                "model the levels a chase can tell apart",
            ));
        }
        let mut levels: Vec<CacheLevelConfig> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("{key}[{i}]");
            let level = self.cache_level(item, &path, data)?;
            if levels.iter().any(|l| l.name == level.name) {
                return Err(self.invalid(
                    &format!("{path}.name"),
                    &format!("repeats `{}`", level.name),
                    "give every level its own name",
                ));
            }
            levels.push(level);
        }
        Ok(levels)
    }

    fn cache_level(
        &self,
        value: &Value,
        path: &str,
        data: bool,
    ) -> Result<CacheLevelConfig, SimConfigError> {
        let obj = value.as_object().ok_or_else(|| {
            self.invalid(
                path,
                "must be an object",
                "give name, size_bytes, line_bytes, ways and hit_cycles",
            )
        })?;
        let name_key = self.key(obj, path, "name");
        let name = match name_key.required()? {
            Value::String(s) if !s.trim().is_empty() => s.clone(),
            _ => {
                return Err(name_key.invalid(
                    "must be a non-empty string",
                    "e.g. \"name\": \"L2\" (levels named L1 are skipped by the L2 path)",
                ))
            }
        };
        let size_bytes = self
            .key(obj, path, "size_bytes")
            .bounded_int(MAX_CACHE_BYTES, "give the capacity, e.g. 262144")?;
        let line_key = self.key(obj, path, "line_bytes");
        let line_bytes = line_key.bounded_int(MAX_LINE_BYTES, "give the line size, e.g. 128")?;
        if line_bytes < MIN_LINE_BYTES || !line_bytes.is_power_of_two() {
            return Err(line_key.invalid(
                &format!("is {line_bytes}, not a power of two from {MIN_LINE_BYTES}"),
                "lines are powers of two on every GPU, e.g. 32 or 128",
            ));
        }
        let sector_bytes = match obj.get("sector_bytes") {
            None | Some(Value::Null) => None,
            Some(_) => {
                let key = self.key(obj, path, "sector_bytes");
                let sector = key.bounded_int(MAX_LINE_BYTES, "give the sector size, e.g. 32")?;
                if sector < MIN_LINE_BYTES
                    || !sector.is_power_of_two()
                    || sector > line_bytes
                    || line_bytes / sector > MAX_SECTORS
                {
                    return Err(key.invalid(
                        &format!("is {sector}, not a power of two from {MIN_LINE_BYTES} and from 1/{MAX_SECTORS} of line_bytes ({line_bytes}) up to it"),
                        "give what one miss fetches, e.g. 32 for 128-byte lines",
                    ));
                }
                Some(sector)
            }
        };
        let ways = self
            .key(obj, path, "ways")
            .bounded_int(MAX_CACHE_WAYS, "give the associativity, e.g. 4")?;
        let hit_cycles = self
            .key(obj, path, "hit_cycles")
            .cycles("give the latency of a chase load that hits this level, e.g. 35")?;
        let way_bytes = line_bytes.saturating_mul(ways);
        let check_size = |key: &str, size: u64| {
            if size % way_bytes != 0 {
                let sets = (size / way_bytes).max(1);
                Err(self.key(obj, path, key).invalid(
                    &format!(
                        "is {size}, not line_bytes x ways x sets ({line_bytes} x {ways} x sets for a whole number of sets >= 1)"
                    ),
                    &format!(
                        "use a multiple of {way_bytes}, e.g. {} ({sets} sets), or change line_bytes or ways",
                        sets * way_bytes
                    ),
                ))
            } else if size / way_bytes > MAX_SETS {
                Err(self.key(obj, path, key).invalid(
                    &format!(
                        "is {size}: {} sets of {ways} x {line_bytes} B, more than the simulator supports ({MAX_SETS} sets)",
                        size / way_bytes
                    ),
                    "use a smaller size, longer lines or more ways",
                ))
            } else {
                Ok(())
            }
        };
        check_size("size_bytes", size_bytes)?;
        let max_carveout_size_bytes = match obj.get("max_carveout_size_bytes") {
            None | Some(Value::Null) => None,
            Some(_) => {
                let carveout_key = self.key(obj, path, "max_carveout_size_bytes");
                if !data || name != "L1" {
                    return Err(carveout_key.invalid(
                        "is only meaningful for the data cache named L1",
                        "remove it, or name the level L1",
                    ));
                }
                let size = carveout_key.bounded_int(
                    MAX_CACHE_BYTES,
                    "give the L1 size at the largest carveout, e.g. 262144",
                )?;
                check_size("max_carveout_size_bytes", size)?;
                Some(size)
            }
        };
        Ok(CacheLevelConfig {
            name,
            size_bytes,
            line_bytes,
            sector_bytes,
            ways,
            hit_cycles,
            max_carveout_size_bytes,
        })
    }

    fn kind(&self, value: &Value, path: &str, sm_count: u32) -> Result<KindConfig, SimConfigError> {
        let obj = value.as_object().ok_or_else(|| {
            self.invalid(
                path,
                "must be an object",
                "give size_bytes, extra_cycles and tlb",
            )
        })?;
        let size_bytes = self.key(obj, path, "size_bytes").bounded_int(
            MAX_MEMORY_BYTES,
            "give the memory size in bytes, e.g. 17179869184",
        )?;
        let extra_cycles = match obj.get("extra_cycles") {
            None => 0.0,
            Some(_) => {
                let fix = "use 0 for device memory";
                let extra_key = self.key(obj, path, "extra_cycles");
                let v = extra_key.number_at_least_zero(fix)?;
                if v > MAX_CYCLES {
                    let problem = format!("is {}, more than {MAX_CYCLES} cycles", shown(v));
                    return Err(extra_key.invalid(&problem, fix));
                }
                v
            }
        };
        let tlb_value = self.key(obj, path, "tlb").required()?;
        let tlb_path = format!("{path}.tlb");
        let levels = tlb_value.as_array().ok_or_else(|| {
            self.invalid(
                &tlb_path,
                "must be an array of levels",
                "list the levels fastest first; [] for none",
            )
        })?;
        if levels.len() > MAX_TLB_LEVELS {
            return Err(self.invalid(
                &tlb_path,
                &format!(
                    "has {} levels, more than the simulator supports ({MAX_TLB_LEVELS})",
                    levels.len()
                ),
                "model the levels a chase can tell apart",
            ));
        }
        let tlb = levels
            .iter()
            .enumerate()
            .map(|(i, level)| self.level(level, &format!("{tlb_path}[{i}]"), size_bytes, sm_count))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(KindConfig {
            size_bytes,
            extra_cycles,
            tlb,
        })
    }

    fn level(
        &self,
        value: &Value,
        path: &str,
        size_bytes: u64,
        sm_count: u32,
    ) -> Result<TlbLevelConfig, SimConfigError> {
        let obj = value.as_object().ok_or_else(|| {
            self.invalid(
                path,
                "must be an object",
                "give entries, page_bytes and miss_cycles",
            )
        })?;
        let entries_key = self.key(obj, path, "entries");
        let entries =
            entries_key.positive_int("give the number of translations the level holds, e.g. 16")?;
        if entries > MAX_ENTRIES {
            return Err(entries_key.invalid(
                &format!("is {entries}, more than the simulator supports ({MAX_ENTRIES})"),
                "use fewer entries or larger pages",
            ));
        }
        let page_key = self.key(obj, path, "page_bytes");
        let page_bytes = page_key.positive_int("give the page size in bytes, e.g. 2097152")?;
        if !page_bytes.is_power_of_two() {
            return Err(page_key.invalid(
                &format!("is {page_bytes}, not a power of two"),
                "pages are powers of two on every GPU, e.g. 65536 or 2097152",
            ));
        }
        if !(MIN_PAGE_BYTES..=MAX_PAGE_BYTES).contains(&page_bytes) {
            return Err(page_key.invalid(
                &format!(
                    "is {page_bytes}, outside {MIN_PAGE_BYTES}..={MAX_PAGE_BYTES}, the pages a profile may hold"
                ),
                "use a page of a real GPU, e.g. 4096, 65536 or 2097152",
            ));
        }
        if page_bytes > size_bytes {
            return Err(page_key.invalid(
                &format!("is {page_bytes}, larger than the memory ({size_bytes} bytes)"),
                "use a smaller page or a larger size_bytes",
            ));
        }
        let miss_cycles = self
            .key(obj, path, "miss_cycles")
            .cycles("give the extra cycles of a miss in this level, e.g. 110")?;
        let ways = match obj.get("ways") {
            None | Some(Value::Null) => None,
            Some(_) => {
                let ways_key = self.key(obj, path, "ways");
                let ways = ways_key.positive_int(
                    "give the associativity, e.g. 8, or leave it out for fully associative",
                )?;
                if ways > entries {
                    return Err(ways_key.invalid(
                        &format!("is {ways}, more than the level's {entries} entries"),
                        "ways must be at most entries; leave it out for fully associative",
                    ));
                }
                Some(ways)
            }
        };
        let shared_by_sms = match obj.get("shared_by_sms") {
            None | Some(Value::Null) => 1,
            Some(_) => {
                let shared_key = self.key(obj, path, "shared_by_sms");
                let n = shared_key
                    .positive_int("give how many consecutive SMs share one copy, 1 for private")?;
                if n > u64::from(sm_count) {
                    return Err(shared_key.invalid(
                        &format!("is {n}, more than sm_count ({sm_count})"),
                        "use at most sm_count (sm_count means one copy for the whole GPU)",
                    ));
                }
                n as u32
            }
        };
        let walks_in_flight = match obj.get("walks_in_flight") {
            None | Some(Value::Null) => None,
            Some(_) => Some(self.key(obj, path, "walks_in_flight").number_in(
                WALKS_IN_FLIGHT,
                "give how many misses of this level the whole GPU serves at once, e.g. 273, or leave it out for no limit",
            )?),
        };
        let spread_fix = "give how far the level's entries move between allocations, as a share either way, e.g. 0.2, or 0 for none";
        let allocation_spread = match obj.get("allocation_spread") {
            None | Some(Value::Null) => 0.0,
            Some(_) => {
                let spread_key = self.key(obj, path, "allocation_spread");
                let spread = spread_key.number_at_least_zero(spread_fix)?;
                if spread > ALLOCATION_SPREAD.1 {
                    return Err(spread_key.invalid(
                        &format!("is {spread}, above {}", ALLOCATION_SPREAD.1),
                        spread_fix,
                    ));
                }
                spread
            }
        };
        Ok(TlbLevelConfig {
            entries,
            page_bytes,
            miss_cycles,
            ways,
            shared_by_sms,
            walks_in_flight,
            allocation_spread,
        })
    }

    fn noise(&self, value: &Value) -> Result<NoiseConfig, SimConfigError> {
        let obj = value.as_object().ok_or_else(|| {
            self.invalid(
                "noise",
                "must be an object",
                "e.g. \"noise\": { \"jitter\": 0.02, \"outlier_rate\": 0.001, \"seed\": 7 }",
            )
        })?;
        let jitter = match obj.get("jitter") {
            None => 0.0,
            Some(_) => self
                .key(obj, "noise", "jitter")
                .number_at_least_zero("e.g. 0.02 for 2% relative noise")?,
        };
        if jitter > 0.5 {
            return Err(self.invalid(
                "noise.jitter",
                &format!("is {jitter}, above 0.5"),
                "jitter is relative: 0.02 means 2%",
            ));
        }
        let outlier_rate = match obj.get("outlier_rate") {
            None => 0.0,
            Some(_) => self
                .key(obj, "noise", "outlier_rate")
                .number_at_least_zero("e.g. 0.001")?,
        };
        if outlier_rate > 1.0 {
            return Err(self.invalid(
                "noise.outlier_rate",
                &format!("is {outlier_rate}, above 1"),
                "it is a probability, e.g. 0.001",
            ));
        }
        let seed = match obj.get("seed") {
            None => 0,
            Some(v) => v.as_u64().ok_or_else(|| {
                self.invalid(
                    "noise.seed",
                    "must be a non-negative integer",
                    "e.g. \"seed\": 7",
                )
            })?,
        };
        Ok(NoiseConfig {
            jitter,
            outlier_rate,
            seed,
        })
    }
}
