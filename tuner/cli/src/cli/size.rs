//! Byte sizes on the command line: `4096`, `64KiB`, `2MiB`, `16GiB`, `1TiB` (also `K`, `M`,
//! `G`, `T` and `KB`..`TB`, all binary).

/// Parses a byte size; the error says what is accepted.
pub fn parse(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size; write e.g. 4096, 64KiB, 2MiB or 16GiB"))?;
    let shift = memtune_core::size::unit_shift(unit).ok_or_else(|| {
        format!(
            "`{text}`: unknown unit `{unit}`; use {}",
            memtune_core::size::UNITS
        )
    })?;
    n.checked_mul(1u64 << shift)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("`{text}` is zero or too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse("4096"), Ok(4096));
        assert_eq!(parse("64KiB"), Ok(64 << 10));
        assert_eq!(parse("2M"), Ok(2 << 20));
        assert_eq!(parse("16GiB"), Ok(16 << 30));
        assert_eq!(parse("1tb"), Ok(1 << 40));
        assert!(parse("0").is_err());
        assert!(parse("-1GiB").is_err());
        assert!(parse("1.5GiB").is_err());
        assert!(parse("3PiB").unwrap_err().contains("unknown unit"));
        assert!(parse("99999999999TiB").is_err());
    }
}
