//! Why a workload cannot be planned. Each message names the argument and the fix.

use crate::profile::{MemoryKind, Profile};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("`{argument}` is 0; {fix}")]
    Zero {
        argument: &'static str,
        fix: &'static str,
    },

    #[error("`{argument}` is {value} bytes, less than {what} ({minimum} bytes); {fix}")]
    TooSmall {
        argument: &'static str,
        value: u64,
        minimum: u64,
        what: &'static str,
        fix: &'static str,
    },

    #[error("`{argument}` is {value} bytes but this GPU has {limit} bytes of {kind} memory; pass a smaller `{argument}`, or use managed memory, which may exceed device memory")]
    TooLarge {
        argument: &'static str,
        value: u64,
        kind: MemoryKind,
        limit: u64,
    },

    #[error("`{argument}` is {value}: {blocks} blocks of {block} along that axis exceed CUDA's grid limit of {limit}; split the volume along that axis")]
    GridTooLarge {
        argument: &'static str,
        value: u32,
        block: u32,
        blocks: u64,
        limit: u64,
    },
}

/// Device memory holds at most what the driver reports (when the profile knows it); pinned
/// and managed memory are limited by the host, which the profile does not describe.
pub(crate) fn fits_in_memory(
    profile: &Profile,
    argument: &'static str,
    value: u64,
    kind: MemoryKind,
) -> Result<(), PlanError> {
    let limit = profile.device.global_memory_bytes;
    if kind == MemoryKind::Device && limit > 0 && value > limit {
        return Err(PlanError::TooLarge {
            argument,
            value,
            kind,
            limit,
        });
    }
    Ok(())
}
