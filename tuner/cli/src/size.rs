//! Byte sizes on the command line: `4096`, `64KiB`, `2MiB`, `16GiB`, `1TiB` (also `K`, `M`,
//! `G`, `T` and `KB`..`TB`, all binary).

/// Parses a byte size; the error says what is accepted.
pub fn parse(text: &str) -> Result<u64, String> {
    use memtune_core::size::{self, SizeError};
    match size::parse(text) {
        Ok(0) | Err(SizeError::TooLarge) => Err(format!("`{text}` is zero or too large")),
        Ok(n) => Ok(n),
        Err(SizeError::NotANumber) => Err(format!(
            "`{text}` is not a size; write e.g. 4096, 64KiB, 2MiB or 16GiB"
        )),
        Err(e) => Err(format!("`{text}`: {e}")),
    }
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
