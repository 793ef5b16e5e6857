// 3-D 6-neighbour stencil (Korpala, "Data management in CUDA programming for high
// bandwidth memory in GPU accelerators": sections 2-4) over an nx x ny x nz volume
// stored x fastest: cell (x, y, z) is element (z * ny + y) * nx + x.
//
// Per interior cell (0 < x < nx-1, 0 < y < ny-1, 0 < z < nz-1) the seed's computation,
// "the sum of 6 neighbours, made 1, 6 or 12 times" to vary how often each cell's data is
// accessed, is done p.repeats times, each time re-reading the six neighbours:
//   s   = ((((in[x-1] + in[x+1]) + in[y-1]) + in[y+1]) + in[z-1]) + in[z+1]
//   acc = acc + s        (acc starts at 0; repeated p.repeats times)
//   out = acc
// Boundary cells are copied: out = in. Only IEEE additions in this fixed order, no
// multiplies (so no FMA contraction): memtune_kernels::reference::stencil reproduces the
// result bit for bit.
//
// Entries, all (in, out, p: memtune_stencil_params); in and out must not overlap:
//   memtune_stencil_plain      every neighbour read from global memory (the seed's
//                              "VRAM only"). Blocks of any 3-D shape.
//   memtune_stencil_staged     a (BX+2) x (BY+2) x (BZ+2) shared-memory tile holds the
//                              block's cells plus a one-cell halo, loaded by the threads
//                              on the tile's faces (the seed's Table 1). Blocks must be
//                              exactly MEMTUNE_BX x MEMTUNE_BY x MEMTUNE_BZ.
//   memtune_stencil_streaming  2.5-D: a (BX+2) x (BY+2) shared tile of the current plane
//                              marches along z; each thread keeps its column's z-1 and
//                              z+1 values in registers. Blocks must be exactly
//                              MEMTUNE_BX x MEMTUNE_BY x 1.
// Grid: x and y cover the volume in blocks, ceil(nx / blockDim.x) x ceil(ny / blockDim.y).
// z: plain and staged loop over z in steps of gridDim.z * blockDim.z, so gridDim.z = 1
// is the seed's "3-D blocks in a 2-D grid" (Fig. 4) and gridDim.z = ceil(nz / blockDim.z)
// one block per z slab; streaming splits z into gridDim.z contiguous chunks, one march
// per block.
//
// Defines (block defaults in memtune_params.h):
//   MEMTUNE_STENCIL_T          element type: float (default) or double
//   MEMTUNE_BX/BY/BZ           block shape; sizes the shared tiles statically
//
// No CUDA headers: NVRTC compiles this with only memtune_params.h.

#include "memtune_params.h"

#ifndef MEMTUNE_STENCIL_T
#define MEMTUNE_STENCIL_T float
#endif

typedef MEMTUNE_STENCIL_T memtune_real;

static_assert(MEMTUNE_BX >= 1 && MEMTUNE_BY >= 1 && MEMTUNE_BZ >= 1 &&
                  MEMTUNE_BX * MEMTUNE_BY * MEMTUNE_BZ <= 1024,
              "MEMTUNE_BX x MEMTUNE_BY x MEMTUNE_BZ must be 1 to 1024 threads");
static_assert(sizeof(memtune_real) * (MEMTUNE_BX + 2) * (MEMTUNE_BY + 2) * (MEMTUNE_BZ + 2) <=
                  48 * 1024,
              "the staged tile must fit 48 KiB of static shared memory");

// Makes the compiler forget what it loaded: each repeat then re-reads the neighbours
// from memory instead of reusing registers, which is what the repeats are for.
__device__ __forceinline__ void memtune_reread()
{
    asm volatile("" ::: "memory");
}

__device__ __forceinline__ unsigned long long memtune_cell(const memtune_stencil_params& p,
                                                           unsigned int x, unsigned int y,
                                                           unsigned int z)
{
    return ((unsigned long long)z * p.ny + y) * p.nx + x;
}

__device__ __forceinline__ bool memtune_interior(const memtune_stencil_params& p,
                                                 unsigned int x, unsigned int y,
                                                 unsigned int z)
{
    return x > 0 && x + 1 < p.nx && y > 0 && y + 1 < p.ny && z > 0 && z + 1 < p.nz;
}

extern "C" __global__ void memtune_stencil_plain(const memtune_real* in, memtune_real* out,
                                                 memtune_stencil_params p)
{
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.nx || y >= p.ny) {
        return;
    }
    unsigned long long sy = p.nx;
    unsigned long long sz = sy * p.ny;
    for (unsigned int z = blockIdx.z * blockDim.z + threadIdx.z; z < p.nz;
         z += gridDim.z * blockDim.z) {
        unsigned long long i = memtune_cell(p, x, y, z);
        if (!memtune_interior(p, x, y, z)) {
            out[i] = in[i];
            continue;
        }
        memtune_real acc = 0;
        for (unsigned int r = 0; r < p.repeats; ++r) {
            memtune_reread();
            memtune_real s = in[i - 1] + in[i + 1];
            s += in[i - sy];
            s += in[i + sy];
            s += in[i - sz];
            s += in[i + sz];
            acc += s;
        }
        out[i] = acc;
    }
}

extern "C" __global__ void __launch_bounds__(MEMTUNE_BX * MEMTUNE_BY * MEMTUNE_BZ)
    memtune_stencil_staged(const memtune_real* in, memtune_real* out, memtune_stencil_params p)
{
    __shared__ memtune_real tile[MEMTUNE_BZ + 2][MEMTUNE_BY + 2][MEMTUNE_BX + 2];
    unsigned int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    unsigned int x = blockIdx.x * MEMTUNE_BX + tx;
    unsigned int y = blockIdx.y * MEMTUNE_BY + ty;
    unsigned long long sy = p.nx;
    unsigned long long sz = sy * p.ny;
    // The loop bounds are the same for the whole block, so every thread reaches the
    // barriers, including those outside the volume.
    for (unsigned int z0 = blockIdx.z * MEMTUNE_BZ; z0 < p.nz; z0 += gridDim.z * MEMTUNE_BZ) {
        unsigned int z = z0 + tz;
        bool inside = x < p.nx && y < p.ny && z < p.nz;
        bool interior = inside && memtune_interior(p, x, y, z);
        unsigned long long i = inside ? memtune_cell(p, x, y, z) : 0;
        if (inside) {
            tile[tz + 1][ty + 1][tx + 1] = in[i];
        }
        // Halo: a thread on a tile face loads the neighbour beyond it. Only interior
        // cells use neighbours, and an interior cell's neighbours all exist.
        if (interior) {
            if (tx == 0) tile[tz + 1][ty + 1][0] = in[i - 1];
            if (tx == MEMTUNE_BX - 1) tile[tz + 1][ty + 1][MEMTUNE_BX + 1] = in[i + 1];
            if (ty == 0) tile[tz + 1][0][tx + 1] = in[i - sy];
            if (ty == MEMTUNE_BY - 1) tile[tz + 1][MEMTUNE_BY + 1][tx + 1] = in[i + sy];
            if (tz == 0) tile[0][ty + 1][tx + 1] = in[i - sz];
            if (tz == MEMTUNE_BZ - 1) tile[MEMTUNE_BZ + 1][ty + 1][tx + 1] = in[i + sz];
        }
        __syncthreads();
        if (interior) {
            memtune_real acc = 0;
            for (unsigned int r = 0; r < p.repeats; ++r) {
                memtune_reread();
                memtune_real s = tile[tz + 1][ty + 1][tx] + tile[tz + 1][ty + 1][tx + 2];
                s += tile[tz + 1][ty][tx + 1];
                s += tile[tz + 1][ty + 2][tx + 1];
                s += tile[tz][ty + 1][tx + 1];
                s += tile[tz + 2][ty + 1][tx + 1];
                acc += s;
            }
            out[i] = acc;
        } else if (inside) {
            out[i] = tile[tz + 1][ty + 1][tx + 1];
        }
        // The next slab overwrites the tile.
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(MEMTUNE_BX * MEMTUNE_BY)
    memtune_stencil_streaming(const memtune_real* in, memtune_real* out,
                              memtune_stencil_params p)
{
    __shared__ memtune_real plane[MEMTUNE_BY + 2][MEMTUNE_BX + 2];
    unsigned int tx = threadIdx.x, ty = threadIdx.y;
    unsigned int x = blockIdx.x * MEMTUNE_BX + tx;
    unsigned int y = blockIdx.y * MEMTUNE_BY + ty;
    unsigned long long sy = p.nx;
    unsigned long long sz = sy * p.ny;
    unsigned long long chunk = ((unsigned long long)p.nz + gridDim.z - 1) / gridDim.z;
    unsigned long long z_begin = blockIdx.z * chunk;
    unsigned long long z_end = z_begin + chunk < p.nz ? z_begin + chunk : p.nz;
    bool column = x < p.nx && y < p.ny;
    bool interior_xy = column && x > 0 && x + 1 < p.nx && y > 0 && y + 1 < p.ny;
    unsigned long long i = column ? ((z_begin * p.ny + y) * p.nx + x) : 0;
    memtune_real below = 0, cur = 0, above = 0;
    if (column && z_begin < z_end) {
        cur = in[i];
        if (z_begin > 0) below = in[i - sz];
    }
    // Block-uniform bounds: every thread reaches the barriers.
    for (unsigned long long z = z_begin; z < z_end; ++z, i += sz) {
        if (column && z + 1 < p.nz) above = in[i + sz];
        if (column) plane[ty + 1][tx + 1] = cur;
        if (interior_xy) {
            if (tx == 0) plane[ty + 1][0] = in[i - 1];
            if (tx == MEMTUNE_BX - 1) plane[ty + 1][MEMTUNE_BX + 1] = in[i + 1];
            if (ty == 0) plane[0][tx + 1] = in[i - sy];
            if (ty == MEMTUNE_BY - 1) plane[MEMTUNE_BY + 1][tx + 1] = in[i + sy];
        }
        __syncthreads();
        if (interior_xy && z > 0 && z + 1 < p.nz) {
            memtune_real acc = 0;
            for (unsigned int r = 0; r < p.repeats; ++r) {
                memtune_reread();
                memtune_real s = plane[ty + 1][tx] + plane[ty + 1][tx + 2];
                s += plane[ty][tx + 1];
                s += plane[ty + 2][tx + 1];
                s += below;
                s += above;
                acc += s;
            }
            out[i] = acc;
        } else if (column) {
            out[i] = cur;
        }
        // The next plane overwrites the tile.
        __syncthreads();
        below = cur;
        cur = above;
    }
}
