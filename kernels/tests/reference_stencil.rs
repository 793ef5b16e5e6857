//! The stencil reference: the row-wise `sweep` matches the cell-by-cell `naive` version
//! bit for bit, and both give the analytic result on a linear field, at radius 1 (the
//! 7-point star) and 2 (the 13-point star).

use memtune_kernels::params::StencilParams;
use memtune_kernels::reference::stencil::{first_difference, naive, sweep, Element};

/// The seed's repeat counts.
const REPEATS: [u32; 3] = [1, 6, 12];

/// Volumes: single cells, too thin for an interior, one interior cell, odd shapes.
const DIMS: &[(u32, u32, u32)] = &[
    (1, 1, 1),
    (2, 5, 7),
    (5, 2, 7),
    (5, 7, 2),
    (3, 3, 3),
    (4, 3, 5),
    (17, 9, 5),
    (33, 6, 10),
    (6, 6, 6),
];

/// The radii the kernels are built for.
const RADII: [u32; 2] = [1, 2];

fn params(nx: u32, ny: u32, nz: u32, repeats: u32, radius: u32) -> StencilParams {
    StencilParams::new(nx, ny, nz, repeats)
        .and_then(|p| p.with_radius(radius))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Pseudo-random values in (-1, 1) with full mantissas, so any change of the addition
/// order would show in the bits.
fn noise<T: Element + From<f32>>(cells: usize, seed: u64) -> Vec<T> {
    let mut x = seed | 1;
    (0..cells)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            T::from((x >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        })
        .collect()
}

fn naive_equals_sweep<T: Element + From<f32>>() {
    for (case, &(nx, ny, nz)) in DIMS.iter().enumerate() {
        for (repeats, radius) in REPEATS.into_iter().flat_map(|r| RADII.map(|d| (r, d))) {
            let p = params(nx, ny, nz, repeats, radius);
            let input: Vec<T> = noise((nx * ny * nz) as usize, case as u64 + 1);
            let (a, b) = (naive(&input, &p), sweep(&input, &p));
            let (Ok(a), Ok(b)) = (a, b) else {
                panic!("{nx}x{ny}x{nz}: rejected")
            };
            assert_eq!(
                first_difference(&a, &b),
                None,
                "{nx}x{ny}x{nz}, {repeats} repeats, radius {radius}"
            );
        }
    }
}

#[test]
fn naive_equals_sweep_f32() {
    naive_equals_sweep::<f32>();
}

#[test]
fn naive_equals_sweep_f64() {
    naive_equals_sweep::<f64>();
}

/// On f(x, y, z) = a x + b y + c z + d the 6 r neighbours of radius r sum to 6 r f
/// exactly (each pair averages to the centre), so an interior cell ends at
/// 6 r x repeats x f; with small integers every step is exact in f32 and f64.
fn linear_field<T: Element + From<f32>>() {
    for &(nx, ny, nz) in DIMS {
        for (repeats, r) in REPEATS.into_iter().flat_map(|n| RADII.map(|d| (n, d))) {
            let p = params(nx, ny, nz, repeats, r);
            let f = |x: u32, y: u32, z: u32| (3 * x + 5 * y + 7 * z + 11) as f32;
            let mut input = Vec::new();
            let mut expected = Vec::new();
            for z in 0..nz {
                for y in 0..ny {
                    for x in 0..nx {
                        let inner = |c: u32, n: u32| c >= r && c + r < n;
                        let interior = inner(x, nx) && inner(y, ny) && inner(z, nz);
                        let scale = if interior {
                            6.0 * (r * repeats) as f32
                        } else {
                            1.0
                        };
                        input.push(T::from(f(x, y, z)));
                        expected.push(T::from(scale * f(x, y, z)));
                    }
                }
            }
            for out in [naive(&input, &p), sweep(&input, &p)] {
                let out = out.unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    first_difference(&expected, &out),
                    None,
                    "{nx}x{ny}x{nz}, {repeats} repeats, radius {r}"
                );
            }
        }
    }
}

#[test]
fn linear_field_f32() {
    linear_field::<f32>();
}

#[test]
fn linear_field_f64() {
    linear_field::<f64>();
}

#[test]
fn volumes_without_interior_are_copied() {
    let thin = [(1, 1, 1), (2, 9, 9), (9, 2, 9), (9, 9, 2), (1, 50, 3)];
    // Radius 2 needs 5 cells along every axis for an interior.
    let thin_for_two = [(4, 9, 9), (9, 4, 9), (9, 9, 4)];
    let cases = thin
        .iter()
        .map(|&d| (d, 1))
        .chain(thin.iter().chain(&thin_for_two).map(|&d| (d, 2)));
    for ((nx, ny, nz), radius) in cases {
        let p = params(nx, ny, nz, 12, radius);
        let input: Vec<f64> = noise((nx * ny * nz) as usize, 5);
        for out in [naive(&input, &p), sweep(&input, &p)] {
            let out = out.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                first_difference(&input, &out),
                None,
                "{nx}x{ny}x{nz} r{radius}"
            );
        }
    }
}

#[test]
fn radii_the_kernels_lack_are_refused() {
    let mut p = params(5, 5, 5, 1, 1);
    p.radius = 3;
    let input = vec![1f32; 125];
    assert!(naive(&input, &p).is_err() && sweep(&input, &p).is_err());
}
