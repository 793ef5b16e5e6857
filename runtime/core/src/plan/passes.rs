//! Splitting a region into TLB scopes, and the split that costs least.

/// The most passes considered. Seed 000's largest run used 89; at 1024 the redrawn streams
/// alone cost 128 hit reads per read (1023 × 1/8), far beyond the worst TLB fall reported (13x).
const MAX_PASSES: u32 = 1024;

/// A more involved plan replaces a simpler one only when predicted at least this much
/// faster: the cost model is a few constants and interpolated curves, and a pass changes how
/// the kernel is launched, so smaller predicted gains are not worth acting on.
pub(crate) const MIN_GAIN: f64 = 1.05;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Split {
    pub scope_bytes: u64,
    pub passes: u32,
}

/// The splits of `region` into 2 to [`MAX_PASSES`] scopes of whole granules, one per count
/// of passes, fewest passes first. For p passes the scope is `ceil(region / p)` rounded up to the
/// granule, and the passes are recounted for that scope.
pub(crate) fn splits(region: u64, granule: u64) -> Vec<Split> {
    let mut out: Vec<Split> = Vec::new();
    for p in 2..=MAX_PASSES {
        let scope_bytes = region.div_ceil(u64::from(p)).next_multiple_of(granule);
        let passes = region.div_ceil(scope_bytes);
        if passes < 2 {
            continue;
        }
        let split = Split {
            scope_bytes,
            passes: u32::try_from(passes).expect("passes never exceed the p they came from"),
        };
        // Scopes only shrink as p grows; of two scopes needing as many passes, the smaller
        // one misses less for the same overhead.
        match out.last_mut() {
            Some(last) if last.passes == split.passes => *last = split,
            _ => out.push(split),
        }
        if scope_bytes == granule {
            break;
        }
    }
    out
}

/// The split of least `cost` and that cost; on a tie the fewer passes. `None` when the
/// region fits in one granule.
pub(crate) fn cheapest(
    region: u64,
    granule: u64,
    cost: impl Fn(Split) -> f64,
) -> Option<(Split, f64)> {
    splits(region, granule)
        .into_iter()
        .map(|s| (s, cost(s)))
        .fold(None, |best, (s, c)| match best {
            Some((_, best_cost)) if best_cost <= c => best,
            _ => Some((s, c)),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_are_balanced_whole_granules() {
        let g = 32 << 20;
        let s = splits(16 << 30, g);
        assert_eq!(
            s[0],
            Split {
                scope_bytes: 8 << 30,
                passes: 2
            }
        );
        let eight = s.iter().find(|s| s.passes == 8).unwrap();
        assert_eq!(eight.scope_bytes, 2 << 30);
        assert!(s.iter().all(|s| s.scope_bytes % g == 0));
        assert!(s.windows(2).all(|w| w[0].passes < w[1].passes));
        assert_eq!(s.last().unwrap().scope_bytes, g);
    }

    #[test]
    fn region_of_one_granule_has_no_split() {
        assert!(splits(4096, 4096).is_empty());
        assert!(cheapest(100, 4096, |_| 0.0).is_none());
    }

    #[test]
    fn cheapest_prefers_fewer_passes_on_ties() {
        let (s, _) = cheapest(1 << 20, 4096, |_| 1.0).unwrap();
        assert_eq!(s.passes, 2);
    }
}
