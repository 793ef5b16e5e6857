//! Byte counts written the way people read them in reasons.

const UNITS: [(u64, &str); 4] = [
    (1 << 40, "TiB"),
    (1 << 30, "GiB"),
    (1 << 20, "MiB"),
    (1 << 10, "KiB"),
];

/// `2 GiB`, `2080 MiB` (exact in the largest unit that divides it, up to four digits),
/// otherwise two decimals in the largest unit below the value (`11.20 GiB`).
pub(crate) fn bytes(n: u64) -> String {
    if let Some((size, name)) = UNITS
        .iter()
        .find(|(size, _)| n >= *size && n % size == 0 && n / size < 10_000)
    {
        return format!("{} {name}", n / size);
    }
    match UNITS.iter().find(|(size, _)| n >= *size) {
        Some((size, name)) => format!("{:.2} {name}", n as f64 / *size as f64),
        None => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn exact_units_then_decimals() {
        assert_eq!(bytes(2 << 30), "2 GiB");
        assert_eq!(bytes(2080 << 20), "2080 MiB");
        assert_eq!(bytes(12_025_908_428), "11.20 GiB");
        assert_eq!(bytes(4), "4 bytes");
        assert_eq!(bytes(64 << 10), "64 KiB");
    }
}
