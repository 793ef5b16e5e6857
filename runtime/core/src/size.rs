//! Byte-size units as people write them (`16 GiB`, `512MiB`), all binary, for the macros'
//! arguments (the command line accepts the same in `tuner/src/cli/size.rs`).

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
}
