//! CPU references of tuned-app's kernels: what the GPU must have computed.

/// splitmix64's finaliser, as `mix` in cuda/sampling.cu.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The sum of all passes of `tuned_sample` over a region filled by `tuned_fill`: every draw
/// lands in exactly one scope, so the passes together read each draw once, whatever the plan.
pub fn sampling_sum(threads: u64, reads: u32, n_words: u64, seed: u64) -> u64 {
    let reads = u64::from(reads);
    (0..threads * reads)
        .map(|draw| u64::from(mix(mix(seed ^ draw) % n_words) as u32))
        .fold(0u64, u64::wrapping_add)
}

/// `tuned_stencil` on the CPU: `center * cell + neighbour * (sum of six neighbours)`,
/// neighbours outside the grid counting as zero, summed in the kernel's order.
pub fn stencil(input: &[f32], dims: [u32; 3], center: f32, neighbour: f32) -> Vec<f32> {
    let [nx, ny, nz] = dims.map(|d| d as i64);
    let at = |x: i64, y: i64, z: i64| -> f32 {
        if x < 0 || y < 0 || z < 0 || x >= nx || y >= ny || z >= nz {
            0.0
        } else {
            input[((z * ny + y) * nx + x) as usize]
        }
    };
    let mut out = vec![0.0; input.len()];
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let around = at(x - 1, y, z)
                    + at(x + 1, y, z)
                    + at(x, y - 1, z)
                    + at(x, y + 1, z)
                    + at(x, y, z - 1)
                    + at(x, y, z + 1);
                out[((z * ny + y) * nx + x) as usize] = center * at(x, y, z) + neighbour * around;
            }
        }
    }
    out
}

/// The largest difference between two grids, relative to the larger magnitude (at least 1).
pub fn max_relative_error(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / x.abs().max(y.abs()).max(1.0))
        .fold(0.0, f32::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stencil_of_a_single_one_spreads_to_its_neighbours() {
        let dims = [3, 3, 3];
        let mut grid = vec![0.0; 27];
        grid[13] = 1.0; // the centre
        let out = stencil(&grid, dims, 0.5, 0.25);
        assert_eq!(out[13], 0.5);
        for n in [12, 14, 10, 16, 4, 22] {
            assert_eq!(out[n], 0.25, "neighbour {n}");
        }
        assert_eq!(out[0], 0.0);
        assert_eq!(out.iter().sum::<f32>(), 0.5 + 6.0 * 0.25);
    }

    #[test]
    fn sampling_sum_counts_every_draw_once() {
        let n = 1000;
        let direct: u64 = (0..64u64)
            .map(|d| u64::from(mix(mix(7 ^ d) % n) as u32))
            .sum();
        assert_eq!(sampling_sum(16, 4, n, 7), direct);
    }
}
