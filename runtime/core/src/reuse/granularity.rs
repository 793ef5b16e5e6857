//! Granularity: which addresses count as the same item. An item is `address / granularity`
//! (a cache line at 128, a page at 2 MiB); 1 keeps every address its own item.

use super::ReuseError;

/// Bytes per item; any value >= 1, with a shift for powers of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Granularity {
    bytes: u64,
    shift: Option<u32>,
}

impl Granularity {
    /// Each address its own item.
    pub const BYTE: Granularity = Granularity {
        bytes: 1,
        shift: Some(0),
    };

    pub fn new(bytes: u64) -> Result<Granularity, ReuseError> {
        if bytes == 0 {
            return Err(ReuseError::InvalidOption(
                "granularity must be at least 1 byte".into(),
            ));
        }
        let shift = bytes.is_power_of_two().then(|| bytes.trailing_zeros());
        Ok(Granularity { bytes, shift })
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The item an address belongs to.
    #[inline]
    pub fn item(&self, address: u64) -> u64 {
        match self.shift {
            Some(s) => address >> s,
            None => address / self.bytes,
        }
    }

    /// Turns addresses into items in place.
    pub fn apply(&self, addresses: &mut [u64]) {
        match self.shift {
            Some(0) => {}
            Some(s) => addresses.iter_mut().for_each(|a| *a >>= s),
            None => addresses.iter_mut().for_each(|a| *a /= self.bytes),
        }
    }
}

impl Default for Granularity {
    fn default() -> Self {
        Granularity::BYTE
    }
}
