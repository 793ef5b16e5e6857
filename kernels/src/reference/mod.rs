//! CPU references for the tuned reference kernels (`sampling.cu`, `grouping.cu`,
//! `stencil.cu`): what GPU tests compare the kernels' results against. Integer results
//! must match exactly; so must the stencil's floats (see [`stencil`] for why).
//! [`access`] emulates the kernels' address streams, for reuse-distance analysis.

pub mod access;
pub mod grouping;
pub mod sampling;
pub mod stencil;
