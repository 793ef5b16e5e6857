//! The CPU model of `kernels/stencil27.cu`: the same input data, the same 27 values in the
//! same order, the same fused multiply-adds, so a GPU output can be checked bit for bit.

/// Weights of the centre, each of the 6 faces, each of the 12 edges and each of the 8
/// corners (`W_CENTRE`.. in the kernel). As f32 they are these doubles rounded to f32, as
/// the kernel's `(float)0.28` casts are.
pub const W_CENTRE: f64 = 0.28;
pub const W_FACE: f64 = 0.06;
pub const W_EDGE: f64 = 0.025;
pub const W_CORNER: f64 = 0.0075;

/// f32 or f64 as the kernel computes with it.
pub trait Real: Copy + PartialEq + std::fmt::Debug + std::ops::Add<Output = Self> {
    const ZERO: Self;
    /// The kernel's input at element `i` (what `user_stencil_fill_T` writes).
    fn value(i: u64) -> Self;
    /// The weight `w` as the kernel's `(T)w`.
    fn weight(w: f64) -> Self;
    fn mul(self, b: Self) -> Self;
    /// `fma(self, b, c)` with one rounding, as CUDA's `fmaf`/`fma`.
    fn fma(self, b: Self, c: Self) -> Self;
    /// The bits, widened to u64: outputs are compared as bits.
    fn bits(self) -> u64;
}

/// The hash the fill kernel draws element `i` from.
pub fn hash(i: u64) -> u64 {
    let mut x = i
        .wrapping_add(0x632b_e59b_d9b4_e019)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 32)
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    fn value(i: u64) -> f32 {
        f32::from_bits(0x3f80_0000 | (hash(i) >> 41) as u32)
    }
    fn weight(w: f64) -> f32 {
        w as f32
    }
    fn mul(self, b: f32) -> f32 {
        self * b
    }
    fn fma(self, b: f32, c: f32) -> f32 {
        self.mul_add(b, c)
    }
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    fn value(i: u64) -> f64 {
        f64::from_bits(0x3ff0_0000_0000_0000 | (hash(i) >> 12))
    }
    fn weight(w: f64) -> f64 {
        w
    }
    fn mul(self, b: f64) -> f64 {
        self * b
    }
    fn fma(self, b: f64, c: f64) -> f64 {
        self.mul_add(b, c)
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// The stencil of one cell, `v(dx, dy, dz)` giving the value at that offset: the
/// kernel's `user_stencil_point`, in its order.
pub fn point<T: Real>(v: impl Fn(i64, i64, i64) -> T) -> T {
    let (mut face, mut edge, mut corner) = (T::ZERO, T::ZERO, T::ZERO);
    for dz in -1..=1i64 {
        for dy in -1..=1i64 {
            for dx in -1..=1i64 {
                match (dx != 0) as u8 + (dy != 0) as u8 + (dz != 0) as u8 {
                    1 => face = face + v(dx, dy, dz),
                    2 => edge = edge + v(dx, dy, dz),
                    3 => corner = corner + v(dx, dy, dz),
                    _ => {}
                }
            }
        }
    }
    let s = T::weight(W_CORNER).mul(corner);
    let s = T::weight(W_EDGE).fma(edge, s);
    let s = T::weight(W_FACE).fma(face, s);
    T::weight(W_CENTRE).fma(v(0, 0, 0), s)
}

/// Whether cell (x, y, z) lies on the volume's boundary (copied, not computed).
pub fn boundary(dims: [u32; 3], x: u32, y: u32, z: u32) -> bool {
    let [nx, ny, nz] = dims;
    x == 0 || y == 0 || z == 0 || x + 1 >= nx || y + 1 >= ny || z + 1 >= nz
}

/// The input volume the fill kernel writes.
pub fn input<T: Real>(dims: [u32; 3]) -> Vec<T> {
    let n: u64 = dims.iter().map(|&d| u64::from(d)).product();
    (0..n).map(T::value).collect()
}

/// The output of one sweep over `input` (`dims`, x fastest) with `repeats` repeats.
pub fn sweep<T: Real>(input: &[T], dims: [u32; 3], repeats: u32) -> Vec<T> {
    let [nx, ny, nz] = dims;
    let (sy, sz) = (i64::from(nx), i64::from(nx) * i64::from(ny));
    let mut out = Vec::with_capacity(input.len());
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let i = i64::from(z) * sz + i64::from(y) * sy + i64::from(x);
                if boundary(dims, x, y, z) {
                    out.push(input[i as usize]);
                    continue;
                }
                let v = |dx: i64, dy: i64, dz: i64| input[(i + dz * sz + dy * sy + dx) as usize];
                let mut acc = T::ZERO;
                for _ in 0..repeats {
                    acc = acc + point(v);
                }
                out.push(acc);
            }
        }
    }
    out
}

/// The index and bits of the first element where `got` and `want` differ (bitwise), and
/// how many differ; `None` when they are equal (lengths included).
pub fn first_difference<T: Real>(got: &[T], want: &[T]) -> Option<(usize, u64, u64, usize)> {
    if got.len() != want.len() {
        return Some((
            got.len().min(want.len()),
            0,
            0,
            got.len().abs_diff(want.len()),
        ));
    }
    let mut differ = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (a, b))| a.bits() != b.bits());
    let (i, (a, b)) = differ.next()?;
    Some((i, a.bits(), b.bits(), 1 + differ.count()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_nonzero_distinct_and_in_range() {
        for i in [0, 1, 2, 1000, u64::MAX] {
            assert!((1.0..2.0).contains(&f32::value(i)), "{i}");
            assert!((1.0..2.0).contains(&f64::value(i)), "{i}");
        }
        let distinct: std::collections::HashSet<u64> =
            (0..1000).map(|i| f64::value(i).bits()).collect();
        assert_eq!(distinct.len(), 1000);
        // f64 data uses the low mantissa bits too: not f32 values widened.
        assert!((0..100).any(|i| f64::value(i) as f32 as f64 != f64::value(i)));
    }

    /// A constant volume: every class sums its count of ones, so s is the weighted count.
    #[test]
    fn a_constant_volume_gives_the_weighted_count() {
        let s: f64 = point(|_, _, _| 1.0);
        let want = W_CENTRE + 6.0 * W_FACE + 12.0 * W_EDGE + 8.0 * W_CORNER;
        assert!((s - want).abs() < 1e-12, "{s} vs {want}");
        assert!((want - 1.0).abs() < 1e-12, "the weights sum to 1: {want}");
    }

    /// Each class gets its own weight: a one at a single offset gives that class's weight.
    #[test]
    fn each_offset_class_has_its_weight() {
        for (at, w) in [
            ((0, 0, 0), W_CENTRE),
            ((1, 0, 0), W_FACE),
            ((0, -1, 0), W_FACE),
            ((0, 1, -1), W_EDGE),
            ((-1, 0, 1), W_EDGE),
            ((1, 1, 1), W_CORNER),
            ((-1, -1, 1), W_CORNER),
        ] {
            let s: f64 = point(|dx, dy, dz| if (dx, dy, dz) == at { 1.0 } else { 0.0 });
            assert_eq!(s, w, "{at:?}");
        }
    }

    /// The fixed order matters: summing the same values in another order changes bits
    /// somewhere, so the GPU check would notice a variant that reorders.
    #[test]
    fn the_order_of_the_sum_is_visible_in_the_bits() {
        let dims = [9, 8, 7];
        let input: Vec<f32> = input(dims);
        let out = sweep(&input, dims, 1);
        let [nx, ny, _] = dims;
        let (sy, sz) = (nx as i64, (nx * ny) as i64);
        let mut reordered_differs = false;
        for (i, &o) in out.iter().enumerate() {
            let (x, y, z) = (i as u32 % nx, (i as u32 / nx) % ny, i as u32 / (nx * ny));
            if boundary(dims, x, y, z) {
                assert_eq!(o.bits(), input[i].bits());
                continue;
            }
            // The same stencil with the offsets visited x slowest.
            let v = |dx: i64, dy: i64, dz: i64| input[(i as i64 + dz * sz + dy * sy + dx) as usize];
            let reordered = point(|dx, dy, dz| v(dz, dy, dx));
            assert_eq!(point(v).bits(), o.bits());
            reordered_differs |= reordered.bits() != o.bits();
        }
        assert!(
            reordered_differs,
            "no cell changed with the order of the sum"
        );
    }

    #[test]
    fn repeats_add_the_stencil_again() {
        let dims = [5, 4, 6];
        let input: Vec<f64> = input(dims);
        let one = sweep(&input, dims, 1);
        let three = sweep(&input, dims, 3);
        for (i, (&a, &b)) in one.iter().zip(&three).enumerate() {
            let (x, y, z) = (i as u32 % 5, (i as u32 / 5) % 4, i as u32 / 20);
            if boundary(dims, x, y, z) {
                assert_eq!(a, b);
            } else {
                assert_eq!(b, a + a + a, "{i}");
            }
        }
    }

    #[test]
    fn thin_volumes_are_all_boundary() {
        for dims in [[1, 5, 5], [5, 2, 5], [4, 4, 1], [1, 1, 1]] {
            let input: Vec<f32> = input(dims);
            assert_eq!(sweep(&input, dims, 2), input, "{dims:?}");
        }
    }

    #[test]
    fn differences_are_found() {
        let a = vec![1.0f32, 2.0, 3.0];
        assert_eq!(first_difference(&a, &a), None);
        let mut b = a.clone();
        b[1] = 2.5;
        b[2] = -0.0;
        assert_eq!(
            first_difference(&b, &a),
            Some((1, 2.5f32.to_bits() as u64, 2.0f32.to_bits() as u64, 2))
        );
        assert_eq!(first_difference(&a[..2], &a), Some((2, 0, 0, 1)));
    }
}
