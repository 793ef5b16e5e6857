// 3-D star stencil (Korpala, "Data management in CUDA programming for high bandwidth
// memory in GPU accelerators": sections 2-4) over an nx x ny x nz volume stored x fastest:
// cell (x, y, z) is element (z * ny + y) * nx + x. Radius R = MEMTUNE_STENCIL_RADIUS:
// R = 1 is the seed's 6-neighbour sum (the 7-point star), R = 2 adds the cells two away
// (the 13-point star: a wider halo and more reads per cell).
//
// Per interior cell (R <= x < nx-R, likewise y and z) the seed's computation, "the sum of
// 6 neighbours, made 1, 6 or 12 times" to vary how often each cell's data is accessed, is
// done p.repeats times, each time re-reading the neighbours:
//   s   = ((((in[x-1] + in[x+1]) + in[y-1]) + in[y+1]) + in[z-1]) + in[z+1]
//   then for d = 2..R, in this order: s += in[x-d], in[x+d], in[y-d], in[y+d], in[z-d],
//   in[z+d]
//   acc = acc + s        (acc starts at 0; repeated p.repeats times)
//   out = acc
// Boundary cells are copied: out = in. Only IEEE additions in this fixed order, no
// multiplies (so no FMA contraction): memtune_kernels::reference::stencil reproduces the
// result bit for bit.
//
// Entries, all (in, out, p: memtune_stencil_params); in and out must not overlap:
//   memtune_stencil_plain      every neighbour read from global memory (the seed's
//                              "VRAM only"). Blocks of any 3-D shape.
//   memtune_stencil_staged     a (BX+2R) x (BY+2R) x (BZ+2R) shared-memory tile holds the
//                              block's cells plus an R-cell halo on each face (the seed's
//                              Table 1). Blocks must be exactly MEMTUNE_BX x MEMTUNE_BY x
//                              MEMTUNE_BZ.
//   memtune_stencil_streaming  2.5-D: each thread holds one 16-byte vector of x cells
//                              (4 f32 or 2 f64) and marches it along z, the 2R planes
//                              around it in registers and everything the next plane needs
//                              loaded one plane ahead; y neighbours come from a
//                              (BY+2R) x BX shared plane of vectors, x neighbours from the
//                              neighbouring lanes (lanes 0 and 31 load the vector beyond
//                              the warp). Blocks must be exactly MEMTUNE_BX x MEMTUNE_BY
//                              x 1 with MEMTUNE_BX a multiple of 32 and MEMTUNE_BY >= R,
//                              and nx a multiple of the vector's cells (16 bytes a row
//                              start).
// Grid: x and y cover the volume in blocks, ceil(nx / blockDim.x) x ceil(ny / blockDim.y)
// (streaming: ceil(nx / (blockDim.x * cells a vector)) along x).
// z: plain and staged loop over z in steps of gridDim.z * blockDim.z, so gridDim.z = 1
// is the seed's "3-D blocks in a 2-D grid" (Fig. 4) and gridDim.z = ceil(nz / blockDim.z)
// one block per z slab; streaming splits z into gridDim.z contiguous chunks, one march
// per block.
//
// Defines (defaults in memtune_params.h):
//   MEMTUNE_STENCIL_T          element type: float (default) or double
//   MEMTUNE_STENCIL_RADIUS     R, 1 (default) or 2; equal to p.radius
//   MEMTUNE_BX/BY/BZ           block shape; sizes the shared tiles statically
//
// No CUDA headers: NVRTC compiles this with only memtune_params.h.

#include "memtune_params.h"

#ifndef MEMTUNE_STENCIL_T
#define MEMTUNE_STENCIL_T float
#endif

typedef MEMTUNE_STENCIL_T memtune_real;

#define MEMTUNE_R MEMTUNE_STENCIL_RADIUS

static_assert(MEMTUNE_R >= 1 && MEMTUNE_R <= MEMTUNE_STENCIL_MAX_RADIUS,
              "MEMTUNE_STENCIL_RADIUS must be 1 to MEMTUNE_STENCIL_MAX_RADIUS");
static_assert(MEMTUNE_BX >= 1 && MEMTUNE_BY >= 1 && MEMTUNE_BZ >= 1 &&
                  MEMTUNE_BX * MEMTUNE_BY * MEMTUNE_BZ <= 1024,
              "MEMTUNE_BX x MEMTUNE_BY x MEMTUNE_BZ must be 1 to 1024 threads");
static_assert(sizeof(memtune_real) * (MEMTUNE_BX + 2 * MEMTUNE_R) * (MEMTUNE_BY + 2 * MEMTUNE_R) *
                      (MEMTUNE_BZ + 2 * MEMTUNE_R) <=
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
    return x >= MEMTUNE_R && x + MEMTUNE_R < p.nx && y >= MEMTUNE_R && y + MEMTUNE_R < p.ny &&
           z >= MEMTUNE_R && z + MEMTUNE_R < p.nz;
}

// The neighbour sum of the cell at c, in the order above: sy and sz are the distances to
// the next row and plane (of the volume, or of a shared tile).
__device__ __forceinline__ memtune_real memtune_star(const memtune_real* c, long long sy,
                                                     long long sz)
{
    memtune_real s = c[-1] + c[1];
    s += c[-sy];
    s += c[sy];
    s += c[-sz];
    s += c[sz];
#pragma unroll
    for (long long d = 2; d <= MEMTUNE_R; ++d) {
        s += c[-d];
        s += c[d];
        s += c[-d * sy];
        s += c[d * sy];
        s += c[-d * sz];
        s += c[d * sz];
    }
    return s;
}

extern "C" __global__ void memtune_stencil_plain(const memtune_real* in, memtune_real* out,
                                                 memtune_stencil_params p)
{
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.nx || y >= p.ny) {
        return;
    }
    long long sy = p.nx;
    long long sz = sy * p.ny;
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
            acc += memtune_star(in + i, sy, sz);
        }
        out[i] = acc;
    }
}

#define MEMTUNE_TX (MEMTUNE_BX + 2 * MEMTUNE_R)
#define MEMTUNE_TY (MEMTUNE_BY + 2 * MEMTUNE_R)
#define MEMTUNE_TZ (MEMTUNE_BZ + 2 * MEMTUNE_R)

extern "C" __global__ void __launch_bounds__(MEMTUNE_BX * MEMTUNE_BY * MEMTUNE_BZ)
    memtune_stencil_staged(const memtune_real* in, memtune_real* out, memtune_stencil_params p)
{
    __shared__ memtune_real tile[MEMTUNE_TZ][MEMTUNE_TY][MEMTUNE_TX];
    unsigned int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    unsigned int x0 = blockIdx.x * MEMTUNE_BX, y0 = blockIdx.y * MEMTUNE_BY;
    unsigned int x = x0 + tx;
    unsigned int y = y0 + ty;
    // The loop bounds are the same for the whole block, so every thread reaches the
    // barriers, including those outside the volume.
    for (unsigned int z0 = blockIdx.z * MEMTUNE_BZ; z0 < p.nz; z0 += gridDim.z * MEMTUNE_BZ) {
        unsigned int z = z0 + tz;
        bool inside = x < p.nx && y < p.ny && z < p.nz;
        bool interior = inside && memtune_interior(p, x, y, z);
        unsigned long long i = inside ? memtune_cell(p, x, y, z) : 0;
        if (inside) {
            tile[tz + MEMTUNE_R][ty + MEMTUNE_R][tx + MEMTUNE_R] = in[i];
        }
        // Halo: the R cells beyond each face, along the thread's own row, column or pillar,
        // loaded where they lie in the volume (an interior cell's neighbours all do).
        // Halo cell h of a face goes to the thread at h, cycling when the face is thinner
        // than R.
        for (unsigned int h = tx; h < MEMTUNE_R; h += MEMTUNE_BX) {
            if (y < p.ny && z < p.nz) {
                if (x0 + h >= MEMTUNE_R) {
                    tile[tz + MEMTUNE_R][ty + MEMTUNE_R][h] =
                        in[memtune_cell(p, x0 + h - MEMTUNE_R, y, z)];
                }
                if (x0 + MEMTUNE_BX + h < p.nx) {
                    tile[tz + MEMTUNE_R][ty + MEMTUNE_R][MEMTUNE_BX + MEMTUNE_R + h] =
                        in[memtune_cell(p, x0 + MEMTUNE_BX + h, y, z)];
                }
            }
        }
        for (unsigned int h = ty; h < MEMTUNE_R; h += MEMTUNE_BY) {
            if (x < p.nx && z < p.nz) {
                if (y0 + h >= MEMTUNE_R) {
                    tile[tz + MEMTUNE_R][h][tx + MEMTUNE_R] =
                        in[memtune_cell(p, x, y0 + h - MEMTUNE_R, z)];
                }
                if (y0 + MEMTUNE_BY + h < p.ny) {
                    tile[tz + MEMTUNE_R][MEMTUNE_BY + MEMTUNE_R + h][tx + MEMTUNE_R] =
                        in[memtune_cell(p, x, y0 + MEMTUNE_BY + h, z)];
                }
            }
        }
        for (unsigned int h = tz; h < MEMTUNE_R; h += MEMTUNE_BZ) {
            if (x < p.nx && y < p.ny) {
                if (z0 + h >= MEMTUNE_R) {
                    tile[h][ty + MEMTUNE_R][tx + MEMTUNE_R] =
                        in[memtune_cell(p, x, y, z0 + h - MEMTUNE_R)];
                }
                if (z0 + MEMTUNE_BZ + h < p.nz) {
                    tile[MEMTUNE_BZ + MEMTUNE_R + h][ty + MEMTUNE_R][tx + MEMTUNE_R] =
                        in[memtune_cell(p, x, y, z0 + MEMTUNE_BZ + h)];
                }
            }
        }
        __syncthreads();
        if (interior) {
            memtune_real acc = 0;
            for (unsigned int r = 0; r < p.repeats; ++r) {
                memtune_reread();
                acc += memtune_star(&tile[tz + MEMTUNE_R][ty + MEMTUNE_R][tx + MEMTUNE_R],
                                    MEMTUNE_TX, MEMTUNE_TX * MEMTUNE_TY);
            }
            out[i] = acc;
        } else if (inside) {
            out[i] = tile[tz + MEMTUNE_R][ty + MEMTUNE_R][tx + MEMTUNE_R];
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

// Lanes exchange x neighbours with shuffles, so a streaming block is whole warps along x,
// and its y halo is loaded by one row of threads a halo row. Built for another block (the
// staged kernel's, say), this file has no streaming entry.
#if MEMTUNE_BX % 32 == 0 && MEMTUNE_BY >= MEMTUNE_R
static_assert(MEMTUNE_R <= 16 / sizeof(memtune_real),
              "x neighbours must lie in the adjacent lanes' vectors");

extern "C" __global__ void __launch_bounds__(MEMTUNE_BX * MEMTUNE_BY)
    memtune_stencil_streaming(const memtune_real* in, memtune_real* out,
                              memtune_stencil_params p)
{
    __shared__ memtune_vec plane[MEMTUNE_BY + 2 * MEMTUNE_R][MEMTUNE_BX];
    const memtune_vec zero = {};
    unsigned int tx = threadIdx.x, ty = threadIdx.y, lane = tx & 31;
    unsigned int x0 = (blockIdx.x * MEMTUNE_BX + tx) * MEMTUNE_VEC;
    unsigned int y0 = blockIdx.y * MEMTUNE_BY;
    unsigned int y = y0 + ty;
    unsigned long long sy = p.nx;
    unsigned long long sz = sy * p.ny;
    unsigned long long chunk = ((unsigned long long)p.nz + gridDim.z - 1) / gridDim.z;
    unsigned long long z_begin = blockIdx.z * chunk;
    unsigned long long z_end = z_begin + chunk < p.nz ? z_begin + chunk : p.nz;
    // nx is a multiple of MEMTUNE_VEC, so a vector is either wholly inside or outside.
    bool column = x0 < p.nx;
    bool row = column && y < p.ny;
    // Loads beyond the tile: thread row h < R loads halo row h below the tile and halo
    // row h above it; lanes 0 and 31 load the vector left and right of the warp's span.
    bool load_ym = column && ty < MEMTUNE_R && y0 + ty >= MEMTUNE_R;
    bool load_yp = column && ty < MEMTUNE_R && y0 + MEMTUNE_BY + ty < p.ny;
    bool load_l = row && lane == 0 && x0 > 0;
    bool load_r = row && lane == 31 && x0 + MEMTUNE_VEC < p.nx;
    // Offsets of this thread's vector and of its halo rows from the plane's start.
    unsigned long long at = (unsigned long long)y * p.nx + x0;
    unsigned long long at_ym = ((unsigned long long)y0 + ty - MEMTUNE_R) * p.nx + x0;
    unsigned long long at_yp = ((unsigned long long)y0 + MEMTUNE_BY + ty) * p.nx + x0;
    // The planes z-R..z+R of this thread's vector: win[MEMTUNE_R] is plane z.
    memtune_vec win[2 * MEMTUNE_R + 1];
    memtune_vec ym = zero, yp = zero, lv = zero, rv = zero;
#pragma unroll
    for (int k = 0; k <= 2 * MEMTUNE_R; ++k) {
        long long zk = (long long)z_begin - MEMTUNE_R + k;
        win[k] = zero;
        if (row && z_begin < z_end && zk >= 0 && zk < (long long)p.nz) {
            win[k] = memtune_load_vec(in + zk * sz + at);
        }
    }
    if (z_begin < z_end) {
        unsigned long long base = z_begin * sz;
        if (load_ym) ym = memtune_load_vec(in + base + at_ym);
        if (load_yp) yp = memtune_load_vec(in + base + at_yp);
        if (load_l) lv = memtune_load_vec(in + base + at - MEMTUNE_VEC);
        if (load_r) rv = memtune_load_vec(in + base + at + MEMTUNE_VEC);
    }
    // Block-uniform bounds: every thread reaches the barriers and the shuffles.
    for (unsigned long long z = z_begin; z < z_end; ++z) {
        unsigned long long base = z * sz;
        // What plane z + 1 needs is loaded one plane ahead of its use.
        memtune_vec next_far = zero, next_ym = zero, next_yp = zero, next_l = zero,
                    next_r = zero;
        if (z + 1 < z_end) {
            unsigned long long next = base + sz;
            if (row && z + 1 + MEMTUNE_R < p.nz) {
                next_far = memtune_load_vec(in + next + MEMTUNE_R * sz + at);
            }
            if (load_ym) next_ym = memtune_load_vec(in + next + at_ym);
            if (load_yp) next_yp = memtune_load_vec(in + next + at_yp);
            if (load_l) next_l = memtune_load_vec(in + next + at - MEMTUNE_VEC);
            if (load_r) next_r = memtune_load_vec(in + next + at + MEMTUNE_VEC);
        }
        const memtune_vec cur = win[MEMTUNE_R];
        plane[ty + MEMTUNE_R][tx] = cur;
        if (ty < MEMTUNE_R) {
            plane[ty][tx] = ym;
            plane[MEMTUNE_BY + MEMTUNE_R + ty][tx] = yp;
        }
        __syncthreads();
        // The neighbouring lanes' vectors (lanes 0 and 31: the loaded ones).
        memtune_vec left, right;
#pragma unroll
        for (unsigned int k = 0; k < MEMTUNE_VEC; ++k) {
            left.v[k] = __shfl_up_sync(0xffffffffu, cur.v[k], 1);
            right.v[k] = __shfl_down_sync(0xffffffffu, cur.v[k], 1);
        }
        if (lane == 0) left = lv;
        if (lane == 31) right = rv;
        if (row) {
            bool interior_yz = y >= MEMTUNE_R && y + MEMTUNE_R < p.ny && z >= MEMTUNE_R &&
                               z + MEMTUNE_R < p.nz;
            memtune_vec acc = zero;
            for (unsigned int r = 0; r < p.repeats; ++r) {
                memtune_reread();
#pragma unroll
                for (unsigned int k = 0; k < MEMTUNE_VEC; ++k) {
                    memtune_real s = 0;
#pragma unroll
                    for (int d = 1; d <= MEMTUNE_R; ++d) {
                        int l = (int)k - d, h = (int)k + d;
                        memtune_real xm = l >= 0 ? cur.v[l] : left.v[l + MEMTUNE_VEC];
                        memtune_real xp = h < (int)MEMTUNE_VEC ? cur.v[h]
                                                               : right.v[h - MEMTUNE_VEC];
                        if (d == 1) {
                            s = xm + xp;
                        } else {
                            s += xm;
                            s += xp;
                        }
                        s += plane[ty + MEMTUNE_R - d][tx].v[k];
                        s += plane[ty + MEMTUNE_R + d][tx].v[k];
                        s += win[MEMTUNE_R - d].v[k];
                        s += win[MEMTUNE_R + d].v[k];
                    }
                    acc.v[k] += s;
                }
            }
            memtune_vec o;
#pragma unroll
            for (unsigned int k = 0; k < MEMTUNE_VEC; ++k) {
                unsigned int x = x0 + k;
                o.v[k] = interior_yz && x >= MEMTUNE_R && x + MEMTUNE_R < p.nx ? acc.v[k]
                                                                                 : cur.v[k];
            }
            *reinterpret_cast<memtune_vec*>(out + base + at) = o;
        }
        // The next plane overwrites the tile.
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 2 * MEMTUNE_R; ++k) {
            win[k] = win[k + 1];
        }
        win[2 * MEMTUNE_R] = next_far;
        ym = next_ym;
        yp = next_yp;
        lv = next_l;
        rv = next_r;
    }
}
#endif
