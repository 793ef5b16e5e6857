//! Axes: which scale, which range, and tick values people read at a glance (powers of two
//! for sizes, 1-2-5 steps otherwise), written in human units.

use super::{Scale, Unit};
use memtune_core::human;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use std::ops::Range;

/// An axis ready to draw: values are mapped by [`AxisPlan::map`] (log2 for sizes on a log
/// axis, log10 for other log axes) and the ticks are given in mapped space.
#[derive(Debug, Clone)]
pub struct AxisPlan {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    log: Option<f64>,
    unit: Unit,
}

impl AxisPlan {
    /// `values` are every data value the axis must show (non-positive ones are ignored on
    /// a log axis); `max_ticks` bounds the tick count so labels do not collide.
    pub fn new(values: &[f64], unit: Unit, scale: Scale, max_ticks: usize) -> AxisPlan {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let positive: Vec<f64> = finite.iter().copied().filter(|v| *v > 0.0).collect();
        let (min, max) = min_max(&finite).unwrap_or((0.0, 1.0));
        let log = match scale {
            Scale::Log => !positive.is_empty(),
            Scale::Linear => false,
            Scale::Auto => min_max(&positive).is_some_and(|(a, b)| min > 0.0 && b / a > 30.0),
        };
        let max_ticks = max_ticks.max(2);
        if !log {
            let (lo, hi) = pad(min, max, 0.06);
            let ticks = linear_ticks(lo, hi, max_ticks);
            return AxisPlan {
                lo,
                hi,
                ticks,
                log: None,
                unit,
            };
        }
        let base: f64 = if unit == Unit::Bytes { 2.0 } else { 10.0 };
        let (a, b) = min_max(&positive).unwrap_or((1.0, 2.0));
        let (mut lo, mut hi) = (a.log(base), b.log(base));
        let ticks = if base == 2.0 {
            lo = lo.floor();
            hi = hi.ceil().max(lo + 1.0);
            pow2_ticks(lo, hi, max_ticks)
        } else {
            (lo, hi) = pad(lo, hi, 0.05);
            decade_ticks(lo, hi, max_ticks)
        };
        AxisPlan {
            lo,
            hi,
            ticks,
            log: Some(base),
            unit,
        }
    }

    /// A linear axis from `lo` to `hi` with the given ticks (e.g. category centres).
    pub fn fixed(lo: f64, hi: f64, ticks: Vec<f64>, unit: Unit) -> AxisPlan {
        AxisPlan {
            lo,
            hi,
            ticks,
            log: None,
            unit,
        }
    }

    pub fn is_log(&self) -> bool {
        self.log.is_some()
    }

    /// A data value in the axis's drawing space; `None` where a log axis cannot show it.
    pub fn map(&self, v: f64) -> Option<f64> {
        match self.log {
            None => v.is_finite().then_some(v),
            Some(base) => (v > 0.0 && v.is_finite()).then(|| v.log(base)),
        }
    }

    /// The label of a tick given in drawing space.
    pub fn label(&self, t: f64) -> String {
        let v = match self.log {
            None => t,
            Some(base) => base.powf(t),
        };
        let step = match self.log {
            None => self.ticks.windows(2).map(|w| w[1] - w[0]).next(),
            Some(_) => None,
        };
        tick_label(v, self.unit, step)
    }
}

/// plotters draws the axis from the plan: its range, and its ticks as the only key points.
impl Ranged for AxisPlan {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    let mut it = values.iter().copied();
    let first = it.next()?;
    Some(it.fold((first, first), |(a, b), v| (a.min(v), b.max(v))))
}

fn pad(lo: f64, hi: f64, fraction: f64) -> (f64, f64) {
    let span = hi - lo;
    if span <= f64::EPSILON * hi.abs().max(1.0) {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (lo - d, hi + d);
    }
    (lo - span * fraction, hi + span * fraction)
}

/// Ticks at 1, 2 or 5 times a power of ten, at most `max` of them.
fn linear_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let span = hi - lo;
    let raw = span / max as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= max as f64)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// Powers of two every 1, 2, 5 or 10 octaves (aligned to the step, so KiB, MiB and GiB
/// fall on ticks), at most `max` of them.
fn pow2_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let span = hi - lo;
    let step = [1i64, 2, 5, 10, 20]
        .into_iter()
        .find(|s| span / *s as f64 + 1.0 <= max as f64)
        .unwrap_or(20);
    let first = (lo as i64).div_euclid(step) * step;
    (0..)
        .map(|i| first + i * step)
        .take_while(|e| *e as f64 <= hi)
        .filter(|e| *e as f64 >= lo)
        .map(|e| e as f64)
        .collect()
}

/// log10 ticks at 1-2-5 of each decade, or fewer per decade when crowded; a narrow range
/// falls back to linear steps.
fn decade_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let decades = (lo.floor() as i32)..=(hi.ceil() as i32);
    for mantissas in [&[1.0, 2.0, 5.0][..], &[1.0, 3.0], &[1.0]] {
        let ticks: Vec<f64> = decades
            .clone()
            .flat_map(|d| mantissas.iter().map(move |m| (m * 10f64.powi(d)).log10()))
            .filter(|t| *t >= lo - 1e-9 && *t <= hi + 1e-9)
            .collect();
        if ticks.len() < 3 && mantissas.len() == 3 {
            let values = linear_ticks(10f64.powf(lo), 10f64.powf(hi), max);
            let mapped: Vec<f64> = values
                .into_iter()
                .filter(|v| *v > 0.0)
                .map(f64::log10)
                .collect();
            if mapped.len() >= 2 {
                return mapped;
            }
        }
        if ticks.len() <= max {
            return ticks;
        }
    }
    let every = ((hi - lo) / max as f64).ceil().max(1.0) as i32;
    decades
        .filter(|d| d.rem_euclid(every) == 0)
        .map(f64::from)
        .filter(|t| *t >= lo && *t <= hi)
        .collect()
}

/// A tick value in the axis's unit, without trailing zeros (`1 ms`, `2.5 M/s`, `64 MiB`).
fn tick_label(v: f64, unit: Unit, step: Option<f64>) -> String {
    let text = match unit {
        Unit::Bytes => human::bytes(v.round().max(0.0) as u64),
        Unit::Millis => human::millis(v),
        Unit::Rate => human::rate(v),
        Unit::Cycles | Unit::Plain => match step {
            Some(s) if v.abs() < 1e5 => {
                let decimals = (-s.log10().floor()).max(0.0) as usize;
                format!("{v:.decimals$}")
            }
            _ => human::si(v, ""),
        },
    };
    trim_zeros(&text)
}

/// `1.00 ms` -> `1 ms`, `2.50 G/s` -> `2.5 G/s`; the number is the text before a space.
fn trim_zeros(text: &str) -> String {
    let (number, rest) = text.split_once(' ').unwrap_or((text, ""));
    let number = if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        number
    };
    if rest.is_empty() {
        number.to_string()
    } else {
        format!("{number} {rest}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round() {
        let plan = AxisPlan::new(&[2085.0, 2960.0], Unit::Cycles, Scale::Linear, 6);
        assert!(plan.ticks.len() >= 3 && plan.ticks.len() <= 6, "{plan:?}");
        for t in &plan.ticks {
            assert_eq!(t % 100.0, 0.0, "{t} is not round: {plan:?}");
        }
        assert_eq!(plan.label(2200.0), "2200");
    }

    #[test]
    fn sizes_tick_at_powers_of_two() {
        let plan = AxisPlan::new(
            &[4096.0, 32.0 * (1u64 << 30) as f64],
            Unit::Bytes,
            Scale::Log,
            10,
        );
        assert!(plan.ticks.len() <= 10 && plan.ticks.len() >= 4, "{plan:?}");
        assert!(plan.ticks.iter().all(|t| t.fract() == 0.0));
        assert_eq!(plan.label(20.0), "1 MiB");
        assert_eq!(plan.label(plan.map(4096.0).unwrap_or(0.0)), "4 KiB");
    }

    #[test]
    fn wide_spans_go_log_with_1_2_5_ticks() {
        let plan = AxisPlan::new(&[0.05, 3.0, 700.0], Unit::Millis, Scale::Auto, 12);
        assert!(plan.is_log());
        let labels: Vec<String> = plan.ticks.iter().map(|t| plan.label(*t)).collect();
        assert!(labels.contains(&"100 µs".to_string()), "{labels:?}");
        assert!(labels.contains(&"1 ms".to_string()), "{labels:?}");
        assert!(labels.contains(&"100 ms".to_string()), "{labels:?}");
        let narrow = AxisPlan::new(&[1.0, 1.5], Unit::Millis, Scale::Auto, 6);
        assert!(!narrow.is_log());
    }

    #[test]
    fn rates_never_read_zero() {
        let plan = AxisPlan::new(&[2e7, 9e10], Unit::Rate, Scale::Auto, 10);
        let labels: Vec<String> = plan.ticks.iter().map(|t| plan.label(*t)).collect();
        assert!(labels.iter().all(|l| !l.starts_with('0')), "{labels:?}");
        assert!(labels.contains(&"100 M/s".to_string()), "{labels:?}");
    }
}
