//! CPU reference of `stencil.cu`, in f32 and f64: boundary cells copied, every interior
//! cell the sum of its neighbours (`radius` each side along each axis: 6 or 12)
//! accumulated `repeats` times.
//!
//! Tolerance: none; compare bits ([`first_difference`]). Every variant of the kernel does
//! only IEEE-754 round-to-nearest additions, in the order these functions use:
//! `s = ((((x-1 + x+1) + y-1) + y+1) + z-1) + z+1`, then for each further distance d
//! `s += x-d, x+d, y-d, y+d, z-d, z+d`, then `acc = acc + s` `repeats` times from 0. There is no multiply for the compiler to fuse into an FMA, NVRTC does not
//! reassociate without fast-math, and its default `-ftz=false` keeps subnormals as here.
//! A difference is therefore a bug (a wrong neighbour or a missed halo), not rounding.

use std::fmt::Debug;
use std::ops::Add;

use crate::params::{StencilParams, MAX_STENCIL_RADIUS};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types the kernel is built for (`MEMTUNE_STENCIL_T`): f32 and f64.
pub trait Element:
    Copy + Default + Add<Output = Self> + PartialEq + Debug + sealed::Sealed
{
    /// The value's bits, for exact comparison.
    fn bits(self) -> u64;
}

impl Element for f32 {
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Element for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Input that does not match the volume.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StencilError {
    #[error("the input has {got} cells, the {nx}x{ny}x{nz} volume {expected}")]
    Length {
        nx: u32,
        ny: u32,
        nz: u32,
        expected: u64,
        got: usize,
    },
    #[error("the radius {0} is not one the kernels are built for (1..={MAX_STENCIL_RADIUS})")]
    Radius(u32),
}

/// The volume's dimensions as `usize`, once `input` is known to hold every cell.
fn dims<T>(input: &[T], p: &StencilParams) -> Result<[usize; 3], StencilError> {
    let matches = p
        .cells()
        .is_some_and(|c| usize::try_from(c).is_ok_and(|c| c == input.len()));
    if !matches {
        return Err(StencilError::Length {
            nx: p.nx,
            ny: p.ny,
            nz: p.nz,
            expected: p.cells().unwrap_or(u64::MAX),
            got: input.len(),
        });
    }
    if !(1..=MAX_STENCIL_RADIUS).contains(&p.radius) {
        return Err(StencilError::Radius(p.radius));
    }
    // Each dimension divides input.len(), a usize.
    Ok([p.nx as usize, p.ny as usize, p.nz as usize])
}

/// `acc = acc + s`, `repeats` times from 0, as the kernels accumulate.
fn accumulate<T: Element>(s: T, repeats: u32) -> T {
    (0..repeats).fold(T::default(), |acc, _| acc + s)
}

/// Cell by cell, re-reading the neighbours on every repeat as the kernels do: the
/// obviously-correct version [`sweep`] is checked against.
pub fn naive<T: Element>(input: &[T], p: &StencilParams) -> Result<Vec<T>, StencilError> {
    let [nx, ny, nz] = dims(input, p)?;
    let r = p.radius as usize;
    let at = |x: usize, y: usize, z: usize| input[(z * ny + y) * nx + x];
    let mut out = Vec::with_capacity(input.len());
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let inner = |c: usize, n: usize| c >= r && c + r < n;
                if !(inner(x, nx) && inner(y, ny) && inner(z, nz)) {
                    out.push(at(x, y, z));
                    continue;
                }
                let mut acc = T::default();
                for _ in 0..p.repeats {
                    let mut s = at(x - 1, y, z) + at(x + 1, y, z);
                    s = s + at(x, y - 1, z) + at(x, y + 1, z);
                    s = s + at(x, y, z - 1) + at(x, y, z + 1);
                    for d in 2..=r {
                        s = s + at(x - d, y, z) + at(x + d, y, z);
                        s = s + at(x, y - d, z) + at(x, y + d, z);
                        s = s + at(x, y, z - d) + at(x, y, z + d);
                    }
                    acc = acc + s;
                }
                out.push(acc);
            }
        }
    }
    Ok(out)
}

/// Row by row over the interior, the neighbour rows as slices, the neighbour sum formed
/// once per cell (repeating the loads changes nothing on a CPU). Same bits as [`naive`];
/// fast enough for volumes GPU tests use.
pub fn sweep<T: Element>(input: &[T], p: &StencilParams) -> Result<Vec<T>, StencilError> {
    let [nx, ny, nz] = dims(input, p)?;
    let r = p.radius as usize;
    let mut out = input.to_vec();
    if nx <= 2 * r || ny <= 2 * r || nz <= 2 * r {
        return Ok(out);
    }
    let plane = nx * ny;
    let row_at = |start: usize| &input[start..start + nx];
    for z in r..nz - r {
        for y in r..ny - r {
            let row = z * plane + y * nx;
            let here = row_at(row);
            // The rows d = 1..=r away, below and above along y, then along z.
            let ys: Vec<[&[T]; 2]> = (1..=r)
                .map(|d| [row_at(row - d * nx), row_at(row + d * nx)])
                .collect();
            let zs: Vec<[&[T]; 2]> = (1..=r)
                .map(|d| [row_at(row - d * plane), row_at(row + d * plane)])
                .collect();
            for (k, cell) in out[row + r..row + nx - r].iter_mut().enumerate() {
                let x = k + r;
                let mut s = here[x - 1] + here[x + 1];
                for d in 1..=r {
                    if d > 1 {
                        s = s + here[x - d] + here[x + d];
                    }
                    let ([ym, yp], [zm, zp]) = (ys[d - 1], zs[d - 1]);
                    s = s + ym[x] + yp[x] + zm[x] + zp[x];
                }
                *cell = accumulate(s, p.repeats);
            }
        }
    }
    Ok(out)
}

/// Index of the first cell whose bits differ (or `min(len)` when only the lengths do).
pub fn first_difference<T: Element>(expected: &[T], actual: &[T]) -> Option<usize> {
    expected
        .iter()
        .zip(actual)
        .position(|(e, a)| e.bits() != a.bits())
        .or((expected.len() != actual.len()).then(|| expected.len().min(actual.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_must_fill_the_volume() {
        let p = StencilParams::new(3, 3, 3, 1);
        let Ok(p) = p else {
            panic!("valid params rejected")
        };
        assert!(matches!(
            sweep(&[0f32; 26], &p),
            Err(StencilError::Length {
                expected: 27,
                got: 26,
                ..
            })
        ));
        assert!(naive(&[0f64; 28], &p).is_err());
    }

    #[test]
    fn one_interior_cell_sums_its_neighbours() {
        let Ok(p) = StencilParams::new(3, 3, 3, 2) else {
            panic!("valid params rejected")
        };
        let input: Vec<f64> = (0..27).map(f64::from).collect();
        for out in [naive(&input, &p), sweep(&input, &p)] {
            let Ok(out) = out else { panic!("{out:?}") };
            // Neighbours of cell 13: 12, 14, 10, 16, 4, 22, summed twice.
            assert_eq!(out[13], 2.0 * 78.0);
            let copied = (0..27).filter(|&i| i != 13).all(|i| out[i] == input[i]);
            assert!(copied);
        }
    }

    #[test]
    fn radius_two_sums_twelve_neighbours_of_the_inner_cells() {
        let Ok(p) = StencilParams::new(5, 5, 5, 1).and_then(|p| p.with_radius(2)) else {
            panic!("valid params rejected")
        };
        let input: Vec<f64> = (0..125).map(f64::from).collect();
        for out in [naive(&input, &p), sweep(&input, &p)] {
            let Ok(out) = out else { panic!("{out:?}") };
            // Only the centre cell 62 is two cells from every face; its 12 neighbours
            // are 62 +- 1, 2, 5, 10, 25, 50.
            assert_eq!(out[62], 12.0 * 62.0);
            let copied = (0..125).filter(|&i| i != 62).all(|i| out[i] == input[i]);
            assert!(copied);
        }
    }

    #[test]
    fn first_difference_compares_bits() {
        assert_eq!(first_difference(&[1f32, 2.0], &[1.0, 2.0]), None);
        assert_eq!(first_difference(&[1f32, 0.0], &[1.0, -0.0]), Some(1));
        assert_eq!(first_difference(&[f64::NAN], &[f64::NAN]), None);
        assert_eq!(first_difference(&[1f32, 2.0], &[1.0]), Some(1));
    }
}
