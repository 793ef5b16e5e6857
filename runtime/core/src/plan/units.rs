//! Byte counts written the way people read them in reasons.

pub(crate) use crate::size::format_bytes as bytes;
