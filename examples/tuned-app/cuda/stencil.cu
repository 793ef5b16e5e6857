// tuned-app's 7-point stencil. The block shape and whether cells are staged in shared
// memory are the stencil plan's, passed by memtune_tuner::build as defines (and again by
// NVRTC when the plan is re-made at run time for another GPU).
#include "tuned_params.h"

#ifndef MEMTUNE_STENCIL_BLOCK_X
#error "MEMTUNE_STENCIL_* come from Kernels::stencil_plan in build.rs"
#endif

#define BX MEMTUNE_STENCIL_BLOCK_X
#define BY MEMTUNE_STENCIL_BLOCK_Y
#define BZ MEMTUNE_STENCIL_BLOCK_Z

__device__ __forceinline__ float cell(const float* g, const tuned_stencil_params& p, int x, int y,
                                      int z) {
    if (x < 0 || y < 0 || z < 0 || x >= (int)p.nx || y >= (int)p.ny || z >= (int)p.nz) {
        return 0.0f;
    }
    return g[((size_t)z * p.ny + y) * p.nx + x];
}

extern "C" __global__ void __launch_bounds__(BX * BY * BZ)
    tuned_stencil(const float* in, float* out, tuned_stencil_params p) {
    const int x = blockIdx.x * BX + threadIdx.x;
    const int y = blockIdx.y * BY + threadIdx.y;
    const int z = blockIdx.z * BZ + threadIdx.z;
#if MEMTUNE_STENCIL_STAGING
    // The block's cells and a one-cell halo, loaded once, read seven times.
    __shared__ float tile[BZ + 2][BY + 2][BX + 2];
    const int tid = (threadIdx.z * BY + threadIdx.y) * BX + threadIdx.x;
    const int x0 = blockIdx.x * BX - 1, y0 = blockIdx.y * BY - 1, z0 = blockIdx.z * BZ - 1;
    for (int i = tid; i < (BX + 2) * (BY + 2) * (BZ + 2); i += BX * BY * BZ) {
        const int lx = i % (BX + 2), ly = (i / (BX + 2)) % (BY + 2), lz = i / ((BX + 2) * (BY + 2));
        tile[lz][ly][lx] = cell(in, p, x0 + lx, y0 + ly, z0 + lz);
    }
    __syncthreads();
    if (x >= (int)p.nx || y >= (int)p.ny || z >= (int)p.nz) {
        return;
    }
    const int lx = threadIdx.x + 1, ly = threadIdx.y + 1, lz = threadIdx.z + 1;
    const float around = tile[lz][ly][lx - 1] + tile[lz][ly][lx + 1] + tile[lz][ly - 1][lx] +
                         tile[lz][ly + 1][lx] + tile[lz - 1][ly][lx] + tile[lz + 1][ly][lx];
    const float self = tile[lz][ly][lx];
#else
    if (x >= (int)p.nx || y >= (int)p.ny || z >= (int)p.nz) {
        return;
    }
    const float around = cell(in, p, x - 1, y, z) + cell(in, p, x + 1, y, z) +
                         cell(in, p, x, y - 1, z) + cell(in, p, x, y + 1, z) +
                         cell(in, p, x, y, z - 1) + cell(in, p, x, y, z + 1);
    const float self = cell(in, p, x, y, z);
#endif
    out[((size_t)z * p.ny + y) * p.nx + x] = p.center * self + p.neighbour * around;
}
