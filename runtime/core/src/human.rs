//! Numbers for people, one formatter for the CLI, the runtime and the report: rates with
//! the SI prefix that fits (`25.3 M/s`, not `0.0 G/s`), sizes in binary units
//! ([`bytes`], the same as [`crate::size::format_bytes`]) and times in the unit that gives
//! three significant digits (`727 µs`, `1.06 ms`, `35.7 s`).

/// A byte count in binary units: `2 GiB`, `2080 MiB`, `11.20 GiB`, `4 bytes`.
pub fn bytes(n: u64) -> String {
    crate::size::format_bytes(n)
}

/// `v` with three significant digits (four or more digits stay whole): `1.06`, `10.6`,
/// `106`, `1060`; `0` for zero, `-` for NaN or infinity.
pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return "-".to_string();
    }
    let a = v.abs();
    if a == 0.0 {
        return "0".to_string();
    }
    // Decimals so that three digits show; rounding can carry into a fourth (9.996 -> 10.0).
    let digits = a.log10().floor() as i32;
    let decimals = (2 - digits).clamp(0, 12) as usize;
    let text = format!("{v:.decimals$}");
    let rounded: f64 = text.parse().unwrap_or(v);
    let carried = rounded.abs().log10().floor() as i32;
    if carried > digits && decimals > 0 {
        format!("{v:.*}", decimals - 1)
    } else {
        text
    }
}

const SI: [(f64, &str); 7] = [
    (1e15, "P"),
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
    (1.0, ""),
    (1e-3, "m"),
];

/// `v` with the SI prefix that leaves one to three digits before the point, and `unit`
/// after it: `si(2.53e7, "reads/s")` is `25.3 M reads/s`, `si(2.95e12, "B/s")` `2.95 TB/s`.
/// A unit starting with a letter other than `B` or `/` is set apart by a space.
pub fn si(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return format!("- {unit}").trim().to_string();
    }
    let a = v.abs();
    let (scale, prefix) = SI
        .iter()
        .copied()
        .find(|(s, _)| a >= *s * 0.9995)
        .unwrap_or((1.0, ""));
    let scale = if a == 0.0 { 1.0 } else { scale };
    let prefix = if a == 0.0 { "" } else { prefix };
    let number = sig3(v / scale);
    let glue = if unit.is_empty() || unit.starts_with('/') || unit.starts_with('B') {
        ""
    } else {
        " "
    };
    if prefix.is_empty() {
        format!("{number} {unit}").trim_end().to_string()
    } else {
        format!("{number} {prefix}{glue}{unit}")
    }
}

/// An event rate: `rate(2.53e7)` is `25.3 M/s`, `rate(98.5e9)` `98.5 G/s`.
pub fn rate(per_second: f64) -> String {
    si(per_second, "/s")
}

/// A bandwidth in decimal bytes per second: `2.95 TB/s`, `812 GB/s`.
pub fn bandwidth(bytes_per_second: f64) -> String {
    si(bytes_per_second, "B/s")
}

/// A time given in seconds, in ns, µs, ms or s with three significant digits.
pub fn seconds(s: f64) -> String {
    if !s.is_finite() {
        return "-".to_string();
    }
    let a = s.abs();
    let (scale, unit) = if a == 0.0 || a >= 0.9995 {
        (1.0, "s")
    } else if a >= 0.9995e-3 {
        (1e3, "ms")
    } else if a >= 0.9995e-6 {
        (1e6, "µs")
    } else {
        (1e9, "ns")
    };
    format!("{} {unit}", sig3(s * scale))
}

/// A time given in milliseconds (the unit GPU timers report), as [`seconds`] writes it.
pub fn millis(ms: f64) -> String {
    seconds(ms / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_digits() {
        assert_eq!(sig3(1.0621), "1.06");
        assert_eq!(sig3(10.621), "10.6");
        assert_eq!(sig3(106.21), "106");
        assert_eq!(sig3(1062.1), "1062");
        assert_eq!(sig3(9.996), "10.0");
        assert_eq!(sig3(0.0), "0");
        assert_eq!(sig3(-0.5), "-0.500");
        assert_eq!(sig3(f64::NAN), "-");
    }

    #[test]
    fn rates_take_the_prefix_that_fits() {
        assert_eq!(rate(2.53e7), "25.3 M/s");
        assert_eq!(rate(98.5e9), "98.5 G/s");
        assert_eq!(rate(4.2e4), "42.0 k/s");
        assert_eq!(rate(999.6e6), "1.00 G/s");
        assert_eq!(rate(12.0), "12.0 /s");
        assert_eq!(bandwidth(2.9514e12), "2.95 TB/s");
        assert_eq!(si(2.53e7, "reads/s"), "25.3 M reads/s");
        assert_eq!(si(0.0, "/s"), "0 /s");
        // Never "0.0 G/s" for a rate in the tens of M/s.
        assert!(!rate(3.1e7).starts_with("0.0"));
    }

    #[test]
    fn times_in_the_unit_that_gives_three_digits() {
        assert_eq!(millis(1.0621), "1.06 ms");
        assert_eq!(millis(0.7276), "728 µs");
        assert_eq!(millis(0.0553), "55.3 µs");
        assert_eq!(seconds(35.73), "35.7 s");
        assert_eq!(seconds(4.5e-9), "4.50 ns");
        assert_eq!(millis(0.0), "0 s");
        assert_eq!(millis(999.9), "1.00 s");
    }

    #[test]
    fn sizes_are_binary() {
        assert_eq!(bytes(64 << 20), "64 MiB");
        assert_eq!(bytes(12_025_908_428), "11.20 GiB");
    }
}
