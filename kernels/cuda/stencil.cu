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
//   memtune_stencil_streaming  2.5-D: each thread holds one 16-byte vector of x cells
//                              (4 f32 or 2 f64) and marches it along z, its z-1 and z+1
//                              vectors in registers and everything the next plane needs
//                              loaded one plane ahead; y neighbours come from a
//                              (BY+2) x BX shared plane of vectors, x neighbours from the
//                              neighbouring lanes (lanes 0 and 31 load the cell beyond
//                              the warp). Blocks must be exactly MEMTUNE_BX x MEMTUNE_BY
//                              x 1 with MEMTUNE_BX a multiple of 32, and nx a multiple
//                              of the vector's cells (16 bytes a row start).
// Grid: x and y cover the volume in blocks, ceil(nx / blockDim.x) x ceil(ny / blockDim.y)
// (streaming: ceil(nx / (blockDim.x * cells a vector)) along x).
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

// 16 bytes of consecutive x cells, moved with one vector load or store: a warp of the
// streaming kernel moves 512 bytes a load rather than 128 (f32), which is what it takes
// to keep enough bytes in flight to approach the copy bandwidth.
#define MEMTUNE_VEC ((unsigned int)(16 / sizeof(memtune_real)))

struct __align__(16) memtune_vec {
    memtune_real v[16 / sizeof(memtune_real)];
};

__device__ __forceinline__ memtune_vec memtune_load_vec(const memtune_real* p)
{
    return *reinterpret_cast<const memtune_vec*>(p);
}

// Lanes exchange x neighbours with shuffles, so a streaming block is whole warps along x.
// Built for another block (the staged kernel's, say), this file has no streaming entry.
#if MEMTUNE_BX % 32 == 0
extern "C" __global__ void __launch_bounds__(MEMTUNE_BX * MEMTUNE_BY)
    memtune_stencil_streaming(const memtune_real* in, memtune_real* out,
                              memtune_stencil_params p)
{
    __shared__ memtune_vec plane[MEMTUNE_BY + 2][MEMTUNE_BX];
    const memtune_vec zero = {};
    unsigned int tx = threadIdx.x, ty = threadIdx.y, lane = tx & 31;
    unsigned int x0 = (blockIdx.x * MEMTUNE_BX + tx) * MEMTUNE_VEC;
    unsigned int y = blockIdx.y * MEMTUNE_BY + ty;
    unsigned long long sy = p.nx;
    unsigned long long sz = sy * p.ny;
    unsigned long long chunk = ((unsigned long long)p.nz + gridDim.z - 1) / gridDim.z;
    unsigned long long z_begin = blockIdx.z * chunk;
    unsigned long long z_end = z_begin + chunk < p.nz ? z_begin + chunk : p.nz;
    // nx is a multiple of MEMTUNE_VEC, so a vector is either wholly inside or outside.
    bool row = x0 < p.nx && y < p.ny;
    // Loads beyond the tile: the rows below and above it (first and last thread rows), and
    // the cells left and right of each warp's span (lanes 0 and 31).
    bool load_ym = row && ty == 0 && y > 0;
    bool load_yp = row && ty == MEMTUNE_BY - 1 && y + 1 < p.ny;
    bool load_l = row && lane == 0 && x0 > 0;
    bool load_r = row && lane == 31 && x0 + MEMTUNE_VEC < p.nx;
    unsigned long long i = row ? (z_begin * p.ny + y) * p.nx + x0 : 0;
    memtune_vec below = zero, cur = zero, above = zero, ym = zero, yp = zero;
    memtune_real left_edge = 0, right_edge = 0;
    if (row && z_begin < z_end) {
        cur = memtune_load_vec(in + i);
        if (z_begin > 0) below = memtune_load_vec(in + i - sz);
        if (z_begin + 1 < p.nz) above = memtune_load_vec(in + i + sz);
        if (load_ym) ym = memtune_load_vec(in + i - sy);
        if (load_yp) yp = memtune_load_vec(in + i + sy);
        if (load_l) left_edge = in[i - 1];
        if (load_r) right_edge = in[i + MEMTUNE_VEC];
    }
    // Block-uniform bounds: every thread reaches the barriers and the shuffles.
    for (unsigned long long z = z_begin; z < z_end; ++z, i += sz) {
        // What plane z + 1 needs is loaded one plane ahead of its use.
        memtune_vec next_above = zero, next_ym = zero, next_yp = zero;
        memtune_real next_left = 0, next_right = 0;
        if (row && z + 1 < z_end) {
            unsigned long long j = i + sz;
            if (z + 2 < p.nz) next_above = memtune_load_vec(in + j + sz);
            if (load_ym) next_ym = memtune_load_vec(in + j - sy);
            if (load_yp) next_yp = memtune_load_vec(in + j + sy);
            if (load_l) next_left = in[j - 1];
            if (load_r) next_right = in[j + MEMTUNE_VEC];
        }
        plane[ty + 1][tx] = cur;
        if (ty == 0) plane[0][tx] = ym;
        if (ty == MEMTUNE_BY - 1) plane[MEMTUNE_BY + 1][tx] = yp;
        __syncthreads();
        memtune_real left = __shfl_up_sync(0xffffffffu, cur.v[MEMTUNE_VEC - 1], 1);
        memtune_real right = __shfl_down_sync(0xffffffffu, cur.v[0], 1);
        if (lane == 0) left = left_edge;
        if (lane == 31) right = right_edge;
        if (row) {
            bool interior_yz = y > 0 && y + 1 < p.ny && z > 0 && z + 1 < p.nz;
            memtune_vec acc = zero;
            for (unsigned int r = 0; r < p.repeats; ++r) {
                memtune_reread();
                memtune_vec up = plane[ty][tx], down = plane[ty + 2][tx];
#pragma unroll
                for (unsigned int k = 0; k < MEMTUNE_VEC; ++k) {
                    memtune_real s = (k == 0 ? left : cur.v[k - 1]) +
                                     (k == MEMTUNE_VEC - 1 ? right : cur.v[k + 1]);
                    s += up.v[k];
                    s += down.v[k];
                    s += below.v[k];
                    s += above.v[k];
                    acc.v[k] += s;
                }
            }
            memtune_vec o;
#pragma unroll
            for (unsigned int k = 0; k < MEMTUNE_VEC; ++k) {
                unsigned int x = x0 + k;
                o.v[k] = interior_yz && x > 0 && x + 1 < p.nx ? acc.v[k] : cur.v[k];
            }
            *reinterpret_cast<memtune_vec*>(out + i) = o;
        }
        // The next plane overwrites the tile.
        __syncthreads();
        below = cur;
        cur = above;
        above = next_above;
        ym = next_ym;
        yp = next_yp;
        left_edge = next_left;
        right_edge = next_right;
    }
}
#endif
