// user-stencil: a user's own 27-point box stencil, in the three forms memtune's stencil
// plans name (plain, staged, streaming), for f32 and f64.
//
// Volume nx x ny x nz, x fastest: cell (x, y, z) is element (z * ny + y) * nx + x.
//
// Per interior cell (0 < x < nx-1, 0 < y < ny-1, 0 < z < nz-1), over the 27 offsets
// (dx, dy, dz) in {-1, 0, 1}^3 visited in one fixed order, z slowest then y then x:
//   face   = sum of the  6 values with one nonzero offset   (in that order, from 0)
//   edge   = sum of the 12 values with two nonzero offsets  (in that order, from 0)
//   corner = sum of the  8 values with three nonzero offsets (in that order, from 0)
//   s      = fma(W_CENTRE, centre, fma(W_FACE, face, fma(W_EDGE, edge, W_CORNER * corner)))
// and then, `repeats` times, each time re-reading the 27 values: acc = acc + s (acc from
// 0), out = acc. Boundary cells are copied: out = in.
// Every variant evaluates this same expression through user_stencil_point, so all three
// give the same bits; the multiplies are explicit fma calls or a lone product (nothing
// for the compiler to contract), so src/reference.rs reproduces them with mul_add.
//
// Entries (T = float for _f32, double for _f64); in and out must not overlap:
//   user_stencil_plain_T(in, out, nx, ny, nz, repeats)
//       3-D blocks of any shape; every value read from global memory. Grid: x and y
//       cover the volume, z loops in steps of gridDim.z * blockDim.z.
//   user_stencil_staged_T(in, out, nx, ny, nz, repeats)
//       3-D blocks; each block first copies its cells and a one-cell halo (faces, edges
//       and corners) into a (bx+2)(by+2)(bz+2) tile of dynamic shared memory, then reads
//       all 27 values from it. Grid as plain. Dynamic shared memory: the tile's bytes.
//   user_stencil_streaming_T(in, out, nx, ny, nz, repeats, chunk)
//       one-plane blocks (blockDim.z == 1) marching along z: block z covers the output
//       planes [blockIdx.z * chunk, + chunk). Each step stages one input plane with its x/y
//       halo in a (bx+2)(by+2) shared plane; each thread keeps the 3x3 windows of the
//       planes below, at and above its cell in registers, so every plane is read from
//       global memory once per chunk (plus the two planes bounding the chunk).
//       Dynamic shared memory: the plane's bytes.
//   user_stencil_fill_T(data, n)      data[i] = a value in [1, 2) hashed from i (never 0)
//   user_stencil_compare(a, b, n_words, result)
//       result[0] += words where a and b differ, result[1] = min(result[1], first such
//       word): the bitwise check of a plan's output against the untuned output.
//
// No headers: NVRTC compiles this file alone.

#define W_CENTRE 0.28
#define W_FACE 0.06
#define W_EDGE 0.025
#define W_CORNER 0.0075

// Makes the compiler forget what it loaded: each repeat re-reads its values from memory
// (global or shared), which is what the repeats are for.
__device__ __forceinline__ void user_stencil_reread()
{
    asm volatile("" ::: "memory");
}

__device__ __forceinline__ float user_stencil_fma(float a, float b, float c)
{
    return fmaf(a, b, c);
}

__device__ __forceinline__ double user_stencil_fma(double a, double b, double c)
{
    return fma(a, b, c);
}

// The stencil of one cell; v(dx, dy, dz) gives the value at that offset. The loops unroll
// completely, so each class test is resolved at compile time.
template <typename T, typename V>
__device__ __forceinline__ T user_stencil_point(const V& v)
{
    T face = 0, edge = 0, corner = 0;
#pragma unroll
    for (int dz = -1; dz <= 1; ++dz) {
#pragma unroll
        for (int dy = -1; dy <= 1; ++dy) {
#pragma unroll
            for (int dx = -1; dx <= 1; ++dx) {
                int n = (dx != 0) + (dy != 0) + (dz != 0);
                if (n == 1) {
                    face += v(dx, dy, dz);
                } else if (n == 2) {
                    edge += v(dx, dy, dz);
                } else if (n == 3) {
                    corner += v(dx, dy, dz);
                }
            }
        }
    }
    T s = (T)W_CORNER * corner;
    s = user_stencil_fma((T)W_EDGE, edge, s);
    s = user_stencil_fma((T)W_FACE, face, s);
    return user_stencil_fma((T)W_CENTRE, v(0, 0, 0), s);
}

template <typename T, typename V>
__device__ __forceinline__ T user_stencil_repeat(const V& v, unsigned int repeats)
{
    T acc = 0;
    for (unsigned int r = 0; r < repeats; ++r) {
        user_stencil_reread();
        acc += user_stencil_point<T>(v);
    }
    return acc;
}

__device__ __forceinline__ bool user_stencil_boundary(unsigned int x, unsigned int y,
                                                      unsigned int z, unsigned int nx,
                                                      unsigned int ny, unsigned int nz)
{
    return x == 0 || y == 0 || z == 0 || x + 1 >= nx || y + 1 >= ny || z + 1 >= nz;
}

template <typename T>
__device__ __forceinline__ void user_stencil_plain(const T* __restrict__ in, T* __restrict__ out,
                                                   unsigned int nx, unsigned int ny,
                                                   unsigned int nz, unsigned int repeats)
{
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) {
        return;
    }
    long long sy = nx;
    long long sz = sy * ny;
    for (unsigned int z = blockIdx.z * blockDim.z + threadIdx.z; z < nz;
         z += gridDim.z * blockDim.z) {
        long long i = z * sz + y * sy + x;
        if (user_stencil_boundary(x, y, z, nx, ny, nz)) {
            out[i] = in[i];
            continue;
        }
        auto v = [&](int dx, int dy, int dz) { return in[i + dz * sz + dy * sy + dx]; };
        out[i] = user_stencil_repeat<T>(v, repeats);
    }
}

template <typename T>
__device__ __forceinline__ void user_stencil_staged(const T* __restrict__ in, T* __restrict__ out,
                                                    unsigned int nx, unsigned int ny,
                                                    unsigned int nz, unsigned int repeats)
{
    extern __shared__ __align__(16) unsigned char user_stencil_smem[];
    T* tile = reinterpret_cast<T*>(user_stencil_smem);
    const unsigned int bx = blockDim.x, by = blockDim.y, bz = blockDim.z;
    const unsigned int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    const unsigned int px = bx + 2, py = by + 2, pz = bz + 2;
    const unsigned int tile_cells = px * py * pz;
    const unsigned int tid = tx + bx * (ty + by * tz);
    const unsigned int threads = bx * by * bz;
    const long long x0 = (long long)blockIdx.x * bx - 1, y0 = (long long)blockIdx.y * by - 1;
    const unsigned int x = blockIdx.x * bx + tx, y = blockIdx.y * by + ty;
    const long long sy = nx, sz = sy * ny;
    // Block-uniform loop bounds: every thread reaches the barriers.
    for (unsigned int zs = blockIdx.z * bz; zs < nz; zs += gridDim.z * bz) {
        const long long z0 = (long long)zs - 1;
        for (unsigned int t = tid; t < tile_cells; t += threads) {
            unsigned int a = t % px, b = (t / px) % py, c = t / (px * py);
            long long gx = x0 + a, gy = y0 + b, gz = z0 + c;
            bool inside = gx >= 0 && gx < nx && gy >= 0 && gy < ny && gz >= 0 && gz < nz;
            tile[t] = inside ? in[gz * sz + gy * sy + gx] : (T)0;
        }
        __syncthreads();
        unsigned int z = zs + tz;
        if (x < nx && y < ny && z < nz) {
            const int ly = px, lz = px * py;
            const int l = (tx + 1) + ly * (ty + 1) + lz * (tz + 1);
            long long i = z * sz + y * sy + x;
            if (user_stencil_boundary(x, y, z, nx, ny, nz)) {
                out[i] = tile[l];
            } else {
                auto v = [&](int dx, int dy, int dz) { return tile[l + dz * lz + dy * ly + dx]; };
                out[i] = user_stencil_repeat<T>(v, repeats);
            }
        }
        // The next slab overwrites the tile.
        __syncthreads();
    }
}

template <typename T>
__device__ __forceinline__ void user_stencil_streaming(const T* __restrict__ in,
                                                       T* __restrict__ out, unsigned int nx,
                                                       unsigned int ny, unsigned int nz,
                                                       unsigned int repeats, unsigned int chunk)
{
    extern __shared__ __align__(16) unsigned char user_stencil_smem[];
    T* plane = reinterpret_cast<T*>(user_stencil_smem);
    const unsigned int bx = blockDim.x, by = blockDim.y;
    const unsigned int tx = threadIdx.x, ty = threadIdx.y;
    const unsigned int px = bx + 2, py = by + 2;
    const unsigned int plane_cells = px * py;
    const unsigned int tid = tx + bx * ty;
    const unsigned int threads = bx * by;
    const long long x0 = (long long)blockIdx.x * bx - 1, y0 = (long long)blockIdx.y * by - 1;
    const unsigned int x = blockIdx.x * bx + tx, y = blockIdx.y * by + ty;
    const long long sy = nx, sz = sy * ny;
    const long long z_begin = (long long)blockIdx.z * chunk;
    if (z_begin >= nz) {
        return; // the whole block: no barrier is skipped by part of it
    }
    const long long z_end = z_begin + chunk < nz ? z_begin + chunk : nz;
    // w[p][j][k]: the value at (x + k - 1, y + j - 1) of the plane below (p = 0), at (1)
    // and above (2) the output plane.
    T w[3][3][3] = {};
    // Step q stages input plane q; output plane q - 1 then has its three planes.
    for (long long q = z_begin - 1; q <= z_end; ++q) {
        bool plane_inside = q >= 0 && q < nz;
        for (unsigned int t = tid; t < plane_cells; t += threads) {
            unsigned int a = t % px, b = t / px;
            long long gx = x0 + a, gy = y0 + b;
            bool inside = plane_inside && gx >= 0 && gx < nx && gy >= 0 && gy < ny;
            plane[t] = inside ? in[q * sz + gy * sy + gx] : (T)0;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < 3; ++j) {
#pragma unroll
            for (int k = 0; k < 3; ++k) {
                w[0][j][k] = w[1][j][k];
                w[1][j][k] = w[2][j][k];
                w[2][j][k] = plane[(ty + j) * px + tx + k];
            }
        }
        // The next step overwrites the plane.
        __syncthreads();
        long long z = q - 1;
        if (z >= z_begin && x < nx && y < ny) {
            long long i = z * sz + y * sy + x;
            if (user_stencil_boundary(x, y, (unsigned int)z, nx, ny, nz)) {
                out[i] = w[1][1][1];
            } else {
                auto v = [&](int dx, int dy, int dz) { return w[dz + 1][dy + 1][dx + 1]; };
                out[i] = user_stencil_repeat<T>(v, repeats);
            }
        }
    }
}

// The data of element i: 1 + (mantissa bits of a hash of i), exact in its type.
__device__ __forceinline__ unsigned long long user_stencil_hash(unsigned long long i)
{
    unsigned long long x = (i + 0x632be59bd9b4e019ull) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    return x;
}

__device__ __forceinline__ void user_stencil_value(float* out, unsigned long long i)
{
    *out = __uint_as_float(0x3f800000u | (unsigned int)(user_stencil_hash(i) >> 41));
}

__device__ __forceinline__ void user_stencil_value(double* out, unsigned long long i)
{
    *out = __longlong_as_double(
        (long long)(0x3ff0000000000000ull | (user_stencil_hash(i) >> 12)));
}

template <typename T>
__device__ __forceinline__ void user_stencil_fill(T* data, unsigned long long n)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        user_stencil_value(data + i, i);
    }
}

// Every block shape up to 1024 threads must launch: the bound caps the registers (f64
// needs more than 64 a thread otherwise).
#define USER_STENCIL_KERNEL extern "C" __global__ void __launch_bounds__(1024)

#define USER_STENCIL_ENTRIES(T, S)                                                          \
    USER_STENCIL_KERNEL user_stencil_plain_##S(const T* in, T* out, unsigned int nx, \
                                                      unsigned int ny, unsigned int nz,     \
                                                      unsigned int repeats)                 \
    {                                                                                       \
        user_stencil_plain<T>(in, out, nx, ny, nz, repeats);                                \
    }                                                                                       \
    USER_STENCIL_KERNEL user_stencil_staged_##S(const T* in, T* out, unsigned int nx, \
                                                       unsigned int ny, unsigned int nz,    \
                                                       unsigned int repeats)                \
    {                                                                                       \
        user_stencil_staged<T>(in, out, nx, ny, nz, repeats);                               \
    }                                                                                       \
    USER_STENCIL_KERNEL user_stencil_streaming_##S(                                  \
        const T* in, T* out, unsigned int nx, unsigned int ny, unsigned int nz,             \
        unsigned int repeats, unsigned int chunk)                                           \
    {                                                                                       \
        user_stencil_streaming<T>(in, out, nx, ny, nz, repeats, chunk);                     \
    }                                                                                       \
    extern "C" __global__ void user_stencil_fill_##S(T* data, unsigned long long n)         \
    {                                                                                       \
        user_stencil_fill<T>(data, n);                                                      \
    }

USER_STENCIL_ENTRIES(float, f32)
USER_STENCIL_ENTRIES(double, f64)

extern "C" __global__ void user_stencil_compare(const unsigned int* a, const unsigned int* b,
                                                unsigned long long n_words,
                                                unsigned long long* result)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long differ = 0, first = ~0ull;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n_words; i += stride) {
        if (a[i] != b[i]) {
            differ += 1;
            first = first < i ? first : i;
        }
    }
    if (differ != 0) {
        atomicAdd(result, differ);
        atomicMin(result + 1, first);
    }
}
