//! HP-RDA's overlap correction (the default adjustment) applied on the GPU: the cross
//! counts, one per distance up to the largest (about the trace's length), stay there, and
//! only the corrected counts, one per distance below the distinct items, come back. On the
//! host the correction of 10^8 counts took longer than the whole analysis on the GPU.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use memtune_kernels::hprda as k;

use super::super::kernels::grid;
use super::super::upload::Ring;
use super::run::{buffer, Hp};
use crate::gpu::{cuda, Error};

/// The corrected counts of `cross[..used]`: entry `a` holds the cross references whose
/// corrected distance is `a`, for `a` below `m` (the distinct items); `s` is the sum of the
/// sub-traces' distinct counts.
pub(super) fn adjust(
    stream: &Arc<CudaStream>,
    hp: &Hp,
    ring: &mut Ring,
    cross: &CudaSlice<u32>,
    used: u32,
    s: u64,
    m: u64,
) -> Result<Vec<u32>, Error> {
    if used == 0 || m == 0 {
        return Ok(Vec::new());
    }
    let n = u64::from(used);
    let tiles = n.div_ceil(u64::from(k::BLOCK));
    let mut counts = buffer::<u64>(stream, tiles)?;
    let mut lengths = buffer::<u64>(stream, tiles)?;
    launch!(
        stream,
        &hp.overlap_sums,
        grid(used),
        "memtune_hprda_overlap_sums",
        cross,
        &n,
        &mut counts,
        &mut lengths
    );
    // The tiles' offsets, scanned on the host: a few hundred KiB for 10^8 counts.
    let before = |sums: Vec<u64>| -> Vec<u64> {
        let mut acc = 0u64;
        sums.into_iter()
            .map(|v| {
                let at = acc;
                acc += v;
                at
            })
            .collect()
    };
    let count_off = before(stream.clone_dtoh(&counts).map_err(cuda("cuMemcpyDtoH"))?);
    let len_off = before(stream.clone_dtoh(&lengths).map_err(cuda("cuMemcpyDtoH"))?);
    let count_off = stream
        .clone_htod(&count_off)
        .map_err(cuda("cuMemcpyHtoD"))?;
    let len_off = stream.clone_htod(&len_off).map_err(cuda("cuMemcpyHtoD"))?;
    let mut adjusted = buffer::<u32>(stream, m)?;
    launch!(
        stream,
        &hp.overlap_apply,
        grid(used),
        "memtune_hprda_overlap_apply",
        cross,
        &n,
        &count_off,
        &len_off,
        &s,
        &m,
        &mut adjusted
    );
    ring.download(stream, &adjusted, m as usize, Vec::new())
}
