//! Byte-size units as people write them (`16 GiB`, `512MiB`), all binary, for the macros'
//! arguments, the command line and the examples ([`parse`]).

/// What the units are, for error messages.
pub const UNITS: &str = "B, KiB, MiB, GiB or TiB";

/// The power of two a unit stands for: `""`/`B` 0, `K`/`KB`/`KiB` 10, ... `T`/`TB`/`TiB` 40,
/// any case; `None` for anything else.
pub fn unit_shift(unit: &str) -> Option<u32> {
    match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => Some(0),
        "k" | "kb" | "kib" => Some(10),
        "m" | "mb" | "mib" => Some(20),
        "g" | "gb" | "gib" => Some(30),
        "t" | "tb" | "tib" => Some(40),
        _ => None,
    }
}

/// `n` of `unit`, `None` when the unit is unknown or the product overflows.
pub fn bytes(n: u64, unit: &str) -> Option<u64> {
    unit_shift(unit).and_then(|shift| n.checked_mul(1u64 << shift))
}

/// Why a text is not a size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("no whole number")]
    NotANumber,
    #[error("unknown unit `{0}`; use {UNITS}")]
    UnknownUnit(String),
    #[error("too large")]
    TooLarge,
}

/// A whole number with an optional unit (`4096`, `64KiB`, `2 MiB`, `16G`), in bytes; the
/// caller bounds it (zero included).
pub fn parse(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().map_err(|_| SizeError::NotANumber)?;
    let shift = unit_shift(unit).ok_or_else(|| SizeError::UnknownUnit(unit.trim().to_string()))?;
    n.checked_mul(1u64 << shift).ok_or(SizeError::TooLarge)
}

const FORMAT_UNITS: [(u64, &str); 4] = [
    (1 << 40, "TiB"),
    (1 << 30, "GiB"),
    (1 << 20, "MiB"),
    (1 << 10, "KiB"),
];

/// `2 GiB`, `2080 MiB` (exact in the largest unit that divides it, up to four digits),
/// otherwise two decimals in the largest unit below the value (`11.20 GiB`).
pub fn format_bytes(n: u64) -> String {
    if let Some((size, name)) = FORMAT_UNITS
        .iter()
        .find(|(size, _)| n >= *size && n % size == 0 && n / size < 10_000)
    {
        return format!("{} {name}", n / size);
    }
    match FORMAT_UNITS.iter().find(|(size, _)| n >= *size) {
        Some((size, name)) => format!("{:.2} {name}", n as f64 / *size as f64),
        None => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_units_any_case() {
        assert_eq!(bytes(16, "GiB"), Some(16 << 30));
        assert_eq!(bytes(512, "mib"), Some(512 << 20));
        assert_eq!(bytes(64, "K"), Some(64 << 10));
        assert_eq!(bytes(4096, ""), Some(4096));
        assert_eq!(bytes(1, "TB"), Some(1 << 40));
        assert_eq!(bytes(3, "PiB"), None);
        assert_eq!(bytes(u64::MAX, "KiB"), None);
    }

    #[test]
    fn formats_exact_units_then_decimals() {
        assert_eq!(format_bytes(2 << 30), "2 GiB");
        assert_eq!(format_bytes(2080 << 20), "2080 MiB");
        assert_eq!(format_bytes(12_025_908_428), "11.20 GiB");
        assert_eq!(format_bytes(4), "4 bytes");
        assert_eq!(format_bytes(64 << 10), "64 KiB");
    }

    #[test]
    fn parses_numbers_with_units_and_says_what_is_wrong() {
        assert_eq!(parse(" 64KiB "), Ok(64 << 10));
        assert_eq!(parse("2 MiB"), Ok(2 << 20));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("GiB"), Err(SizeError::NotANumber));
        assert_eq!(parse("-1"), Err(SizeError::NotANumber));
        assert_eq!(parse("1.5GiB"), Err(SizeError::UnknownUnit(".5GiB".into())));
        assert_eq!(parse("99999999999TiB"), Err(SizeError::TooLarge));
    }
}
