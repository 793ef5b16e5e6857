// Kernel-structure experiments, run standalone with nvcc on the GPU machine
// (scripts/explore-kernels.sh). Not part of memtune: it times candidate structures for the
// stencil and the sampling kernel so that only the winners are ported to kernels/cuda/.
//
// Stencil: 6-neighbour sum, repeats 1, the addition order of kernels/cuda/stencil.cu, every
// variant checked bitwise against a CPU reference. Sampling: the generator and scope test
// of kernels/cuda/sampling.cu; every scoped run must sum exactly what its unscoped run sums.
// Times: CUDA events, 3 warm-ups, median of RUNS.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static const int RUNS = 15;

template <class F> static float median_ms(F launch, int runs = RUNS)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) launch();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < runs; ++i) {
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return t[t.size() / 2];
}

// ---------------------------------------------------------------- stencil ---------------

struct Dims {
    unsigned nx, ny, nz;
};

__device__ __forceinline__ unsigned long long cell(Dims d, unsigned x, unsigned y, unsigned z)
{
    return ((unsigned long long)z * d.ny + y) * d.nx + x;
}

// The current streaming kernel (kernels/cuda/stencil.cu), repeats 1.
template <class T, int BX, int BY>
__global__ void __launch_bounds__(BX * BY) stream_scalar(const T* in, T* out, Dims p)
{
    __shared__ T plane[BY + 2][BX + 2];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned x = blockIdx.x * BX + tx, y = blockIdx.y * BY + ty;
    unsigned long long sy = p.nx, sz = sy * p.ny;
    unsigned long long chunk = ((unsigned long long)p.nz + gridDim.z - 1) / gridDim.z;
    unsigned long long zb = blockIdx.z * chunk;
    unsigned long long ze = zb + chunk < p.nz ? zb + chunk : p.nz;
    bool column = x < p.nx && y < p.ny;
    bool ixy = column && x > 0 && x + 1 < p.nx && y > 0 && y + 1 < p.ny;
    unsigned long long i = column ? ((zb * p.ny + y) * p.nx + x) : 0;
    T below = 0, cur = 0, above = 0;
    if (column && zb < ze) {
        cur = in[i];
        if (zb > 0) below = in[i - sz];
    }
    for (unsigned long long z = zb; z < ze; ++z, i += sz) {
        if (column && z + 1 < p.nz) above = in[i + sz];
        if (column) plane[ty + 1][tx + 1] = cur;
        if (ixy) {
            if (tx == 0) plane[ty + 1][0] = in[i - 1];
            if (tx == BX - 1) plane[ty + 1][BX + 1] = in[i + 1];
            if (ty == 0) plane[0][tx + 1] = in[i - sy];
            if (ty == BY - 1) plane[BY + 1][tx + 1] = in[i + sy];
        }
        __syncthreads();
        if (ixy && z > 0 && z + 1 < p.nz) {
            T s = plane[ty + 1][tx] + plane[ty + 1][tx + 2];
            s += plane[ty][tx + 1];
            s += plane[ty + 2][tx + 1];
            s += below;
            s += above;
            T acc = 0;
            acc += s;
            out[i] = acc;
        } else if (column) {
            out[i] = cur;
        }
        __syncthreads();
        below = cur;
        cur = above;
    }
}

// 16 bytes of consecutive x cells: one vector load or store.
template <class T> struct __align__(16) V16 {
    static const int N = 16 / sizeof(T);
    T v[N];
};

template <class T> __device__ __forceinline__ V16<T> ld16(const T* p)
{
    return *reinterpret_cast<const V16<T>*>(p);
}

template <class T> __device__ __forceinline__ V16<T> zero16()
{
    V16<T> r;
#pragma unroll
    for (int j = 0; j < V16<T>::N; ++j) r.v[j] = 0;
    return r;
}

// One output vector: cells x0..x0+N-1 of row (y, z), boundary cells copied.
template <class T>
__device__ __forceinline__ void emit(T* out, Dims p, unsigned long long i, unsigned x0, unsigned y,
                                     unsigned long long z, const V16<T>& c, T left, T right,
                                     const V16<T>& ym, const V16<T>& yp, const V16<T>& zm,
                                     const V16<T>& zp)
{
    const int N = V16<T>::N;
    bool iyz = y > 0 && y + 1 < p.ny && z > 0 && z + 1 < p.nz;
    V16<T> o;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        unsigned x = x0 + j;
        T l = j == 0 ? left : c.v[j - 1];
        T r = j == N - 1 ? right : c.v[j + 1];
        if (iyz && x > 0 && x + 1 < p.nx) {
            T s = l + r;
            s += ym.v[j];
            s += yp.v[j];
            s += zm.v[j];
            s += zp.v[j];
            T acc = 0;
            acc += s;
            o.v[j] = acc;
        } else {
            o.v[j] = c.v[j];
        }
    }
    *reinterpret_cast<V16<T>*>(out + i) = o;
}

// Plain with vectors: one 16-byte vector of cells a thread, a 3-D grid, every neighbour
// from global memory (L1/L2 catch the reuse). Needs nx % N == 0.
template <class T>
__global__ void plain_vec(const T* in, T* out, Dims p)
{
    const int N = V16<T>::N;
    unsigned x0 = (blockIdx.x * blockDim.x + threadIdx.x) * N;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned z = blockIdx.z;
    if (x0 >= p.nx || y >= p.ny) return;
    unsigned long long sy = p.nx, sz = sy * p.ny;
    unsigned long long i = cell(p, x0, y, z);
    V16<T> c = ld16(in + i);
    bool iyz = y > 0 && y + 1 < p.ny && z > 0 && z + 1 < p.nz;
    if (!iyz) {
        *reinterpret_cast<V16<T>*>(out + i) = c;
        return;
    }
    V16<T> ym = ld16(in + i - sy), yp = ld16(in + i + sy);
    V16<T> zm = ld16(in + i - sz), zp = ld16(in + i + sz);
    T left = x0 > 0 ? in[i - 1] : T(0);
    T right = x0 + N < p.nx ? in[i + N] : T(0);
    emit(out, p, i, x0, y, z, c, left, right, ym, yp, zm, zp);
}

// Streaming with vectors: 32 x BY threads, each a 16-byte vector of one row, marching along
// z over a chunk. z neighbours in registers, x neighbours by shuffles (lanes 0 and 31 load
// the cell beyond the warp), y neighbours from a shared plane (SHM) or from global memory.
// Everything the next plane needs is loaded one plane ahead. Needs nx % (32 N) == 0.
template <class T, int BY, bool SHM>
__global__ void __launch_bounds__(32 * BY) stream_vec(const T* in, T* out, Dims p)
{
    const int N = V16<T>::N;
    __shared__ V16<T> plane[SHM ? BY + 2 : 1][32];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned x0 = (blockIdx.x * 32 + tx) * N;
    unsigned y = blockIdx.y * BY + ty;
    unsigned long long sy = p.nx, sz = sy * p.ny;
    unsigned long long chunk = ((unsigned long long)p.nz + gridDim.z - 1) / gridDim.z;
    unsigned long long zb = blockIdx.z * chunk;
    unsigned long long ze = zb + chunk < p.nz ? zb + chunk : p.nz;
    bool row = y < p.ny;  // x always inside: nx % (32 N) == 0
    bool has_ym = row && y > 0, has_yp = row && y + 1 < p.ny;
    bool load_l = tx == 0 && x0 > 0, load_r = tx == 31 && x0 + N < p.nx;
    unsigned long long i = row ? cell(p, x0, y, (unsigned)zb) : 0;
    V16<T> below = zero16<T>(), cur = zero16<T>(), above = zero16<T>();
    V16<T> ym = zero16<T>(), yp = zero16<T>();
    T el = 0, er = 0;
    if (zb < ze && row) {
        cur = ld16(in + i);
        if (zb > 0) below = ld16(in + i - sz);
        if (zb + 1 < p.nz) above = ld16(in + i + sz);
        // y neighbours are read from shared memory only at the block's edges.
        if (has_ym && (!SHM || ty == 0)) ym = ld16(in + i - sy);
        if (has_yp && (!SHM || ty == BY - 1)) yp = ld16(in + i + sy);
        if (load_l) el = in[i - 1];
        if (load_r) er = in[i + N];
    }
    for (unsigned long long z = zb; z < ze; ++z, i += sz) {
        // Prefetch what plane z + 1 needs.
        V16<T> n_above = zero16<T>(), n_ym = zero16<T>(), n_yp = zero16<T>();
        T n_el = 0, n_er = 0;
        bool next = row && z + 1 < ze;
        if (next) {
            unsigned long long j = i + sz;
            if (z + 2 < p.nz) n_above = ld16(in + j + sz);
            if (has_ym && (!SHM || ty == 0)) n_ym = ld16(in + j - sy);
            if (has_yp && (!SHM || ty == BY - 1)) n_yp = ld16(in + j + sy);
            if (load_l) n_el = in[j - 1];
            if (load_r) n_er = in[j + N];
        }
        V16<T> up = ym, down = yp;
        if (SHM) {
            plane[ty + 1][tx] = cur;
            if (ty == 0) plane[0][tx] = ym;
            if (ty == BY - 1) plane[BY + 1][tx] = yp;
            __syncthreads();
            up = plane[ty][tx];
            down = plane[ty + 2][tx];
        }
        T left = __shfl_up_sync(0xffffffffu, cur.v[N - 1], 1);
        T right = __shfl_down_sync(0xffffffffu, cur.v[0], 1);
        if (tx == 0) left = el;
        if (tx == 31) right = er;
        if (row) emit(out, p, i, x0, y, z, cur, left, right, up, down, below, above);
        if (SHM) __syncthreads();
        below = cur;
        cur = above;
        above = n_above;
        ym = n_ym;
        yp = n_yp;
        el = n_el;
        er = n_er;
    }
}

template <class T> static void cpu_stencil(const std::vector<T>& in, std::vector<T>& out, Dims d)
{
    size_t sy = d.nx, sz = sy * d.ny;
    for (unsigned z = 0; z < d.nz; ++z)
        for (unsigned y = 0; y < d.ny; ++y)
            for (unsigned x = 0; x < d.nx; ++x) {
                size_t i = z * sz + y * sy + x;
                if (x > 0 && x + 1 < d.nx && y > 0 && y + 1 < d.ny && z > 0 && z + 1 < d.nz) {
                    T s = in[i - 1] + in[i + 1];
                    s += in[i - sy];
                    s += in[i + sy];
                    s += in[i - sz];
                    s += in[i + sz];
                    T acc = 0;
                    acc += s;
                    out[i] = acc;
                } else {
                    out[i] = in[i];
                }
            }
}

template <class T> __global__ void fill(T* a, unsigned long long n, unsigned long long seed)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long h = (i + seed) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 31;
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 29;
        a[i] = T((h >> 11) % 1000003) / T(1000003) + T(0.5);
    }
}

static int g_sms = 132;
static double g_copy_gbs = 0;

template <class T> static void stencil_suite(unsigned n, const char* tname)
{
    Dims d{n, n, n};
    size_t cells = (size_t)n * n * n, bytes = cells * sizeof(T);
    T *in, *out;
    CK(cudaMalloc(&in, bytes));
    CK(cudaMalloc(&out, bytes));
    fill<T><<<1024, 256>>>(in, cells, 7);
    CK(cudaGetLastError());
    std::vector<T> hin(cells), want(cells), got(cells);
    CK(cudaMemcpy(hin.data(), in, bytes, cudaMemcpyDeviceToHost));
    cpu_stencil(hin, want, d);
    const int N = 16 / sizeof(T);
    auto report = [&](const char* name, int by, int planes, float ms) {
        CK(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost));
        bool ok = memcmp(got.data(), want.data(), bytes) == 0;
        double gbs = 2.0 * bytes / (ms * 1e6);
        printf("stencil %s %u^3 %-22s by=%-3d zchunk=%-4d %8.4f ms %7.0f GB/s %5.1f%% of copy %s\n",
               tname, n, name, by, planes, ms, gbs, 100.0 * gbs / g_copy_gbs, ok ? "ok" : "MISMATCH");
        fflush(stdout);
        CK(cudaMemset(out, 0, bytes));
    };
    // Current best scalar streaming shapes.
    {
        unsigned planes = 16;
        dim3 g(n / 128, n / 2, (n + planes - 1) / planes);
        float ms = median_ms([&] { stream_scalar<T, 128, 2><<<g, dim3(128, 2)>>>(in, out, d); });
        report("stream_scalar 128x2", 2, planes, ms);
        dim3 g2(n / 32, n / 8, (n + planes - 1) / planes);
        ms = median_ms([&] { stream_scalar<T, 32, 8><<<g2, dim3(32, 8)>>>(in, out, d); });
        report("stream_scalar 32x8", 8, planes, ms);
    }
    for (int by : {2, 4, 8, 16}) {
        dim3 g(n / (32 * N), (n + by - 1) / by, n);
        float ms = median_ms([&] { plain_vec<T><<<g, dim3(32, by)>>>(in, out, d); });
        report("plain_vec 32", by, 1, ms);
    }
    {
        dim3 g(n / (64 * N), (n + 3) / 4, n);
        float ms = median_ms([&] { plain_vec<T><<<g, dim3(64, 4)>>>(in, out, d); });
        report("plain_vec 64", 4, 1, ms);
    }
    auto stream = [&](auto kernel, int by, const char* name) {
        for (int planes : {8, 16, 32, 64, 128}) {
            if ((unsigned)planes > n) continue;
            dim3 g(n / (32 * N), (n + by - 1) / by, (n + planes - 1) / planes);
            float ms = median_ms([&] { kernel<<<g, dim3(32, by)>>>(in, out, d); });
            report(name, by, planes, ms);
        }
    };
    stream(stream_vec<T, 4, true>, 4, "stream_vec shm");
    stream(stream_vec<T, 8, true>, 8, "stream_vec shm");
    stream(stream_vec<T, 16, true>, 16, "stream_vec shm");
    stream(stream_vec<T, 4, false>, 4, "stream_vec global");
    stream(stream_vec<T, 8, false>, 8, "stream_vec global");
    stream(stream_vec<T, 16, false>, 16, "stream_vec global");
    CK(cudaFree(in));
    CK(cudaFree(out));
}

// ---------------------------------------------------------------- sampling --------------

struct SP {
    unsigned long long n_words, seed, sb, se;
    unsigned reads;
};

template <int UNROLL>
__global__ void sampling(const unsigned* data, unsigned long long* sum, SP p)
{
    unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long x = p.seed ^ (t * 0x9e3779b97f4a7c15ull);
    unsigned long long acc = 0;
#pragma unroll UNROLL
    for (unsigned r = 0; r < p.reads; ++r) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned long long pos = __umul64hi(x, p.n_words);
        if (pos >= p.sb && pos < p.se) acc += data[pos];
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

// Warp-compacted: in-scope positions are gathered in a per-warp shared queue and read K a
// lane with every lane active, so a sparse pass keeps full warps of loads in flight.
template <int K>
__global__ void __launch_bounds__(256) sampling_compact(const unsigned* data,
                                                        unsigned long long* sum, SP p)
{
    __shared__ unsigned long long q[8][32 * K + 32];
    unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long x = p.seed ^ (t * 0x9e3779b97f4a7c15ull);
    unsigned long long acc = 0;
    unsigned count = 0;
    unsigned below = (1u << lane) - 1;
    for (unsigned r = 0; r < p.reads; ++r) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned long long pos = __umul64hi(x, p.n_words);
        bool in = pos >= p.sb && pos < p.se;
        unsigned m = __ballot_sync(0xffffffffu, in);
        if (in) q[w][count + __popc(m & below)] = pos;
        count += __popc(m);
        if (count >= 32 * K) {
            __syncwarp();
            unsigned v[K];
#pragma unroll
            for (int k = 0; k < K; ++k) v[k] = data[q[w][k * 32 + lane]];
#pragma unroll
            for (int k = 0; k < K; ++k) acc += v[k];
            count -= 32 * K;
            unsigned long long rest = lane < count ? q[w][32 * K + lane] : 0;
            __syncwarp();
            if (lane < count) q[w][lane] = rest;
            __syncwarp();
        }
    }
    __syncwarp();
    for (unsigned k = lane; k < count; k += 32) acc += data[q[w][k]];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) atomicAdd(sum, acc);
}

static void sampling_suite()
{
    size_t free_b, total_b;
    CK(cudaMemGetInfo(&free_b, &total_b));
    size_t top = 32ull << 30;
    while (top > free_b / 2) top >>= 1;
    unsigned* data;
    CK(cudaMalloc(&data, top));
    fill<unsigned><<<4096, 256>>>(data, top / 4, 3);
    CK(cudaGetLastError());
    unsigned long long* sum;
    CK(cudaMalloc(&sum, 8));
    struct Variant {
        const char* name;
        int blocks_per_sm;
        void (*k)(const unsigned*, unsigned long long*, SP);
    };
    Variant vs[] = {
        {"unroll8 x4/SM (now)", 4, sampling<8>},   {"unroll8 x8/SM", 8, sampling<8>},
        {"unroll16 x4/SM", 4, sampling<16>},       {"unroll16 x8/SM", 8, sampling<16>},
        {"unroll32 x8/SM", 8, sampling<32>},       {"compact K4 x4/SM", 4, sampling_compact<4>},
        {"compact K4 x8/SM", 8, sampling_compact<4>}, {"compact K8 x4/SM", 4, sampling_compact<8>},
    };
    for (size_t region : {(size_t)64 << 20, (size_t)512 << 20, (size_t)4 << 30, top}) {
        if (region > top) continue;
        for (auto& v : vs) {
            unsigned blocks = g_sms * v.blocks_per_sm;
            unsigned long long n = region / 4;
            unsigned long long base_sum = 0;
            double base_ms = 0;
            for (int passes : {1, 2, 4, 8, 16, 32, 64}) {
                if (region / passes < (16u << 20)) continue;
                unsigned long long scope = (n + passes - 1) / passes;
                auto run = [&] {
                    for (int k = 0; k < passes; ++k) {
                        SP p{n, 0x1234567ull, k * scope, std::min(n, (k + 1) * scope), 1024};
                        v.k<<<blocks, 256>>>(data, sum, p);
                    }
                };
                CK(cudaMemset(sum, 0, 8));
                run();
                CK(cudaGetLastError());
                unsigned long long got;
                CK(cudaMemcpy(&got, sum, 8, cudaMemcpyDeviceToHost));
                if (passes == 1) base_sum = got;
                float ms = median_ms(run, 9);
                if (passes == 1) base_ms = ms;
                double reads = (double)blocks * 256 * 1024;
                printf("sampling %6zu MiB %-22s p=%-3d %8.3f ms %6.1f Gread/s x%.2f vs 1 pass %s\n",
                       region >> 20, v.name, passes, ms, reads / (ms * 1e6), base_ms / ms,
                       got == base_sum ? "ok" : "SUM-MISMATCH");
                fflush(stdout);
            }
            // Draw cost: an empty scope.
            SP p{n, 0x1234567ull, 0, 0, 1024};
            float ms = median_ms([&] { v.k<<<blocks, 256>>>(data, sum, p); }, 9);
            printf("sampling %6zu MiB %-22s empty scope %8.3f ms (%.3f of 1 pass)\n", region >> 20,
                   v.name, ms, ms / base_ms);
        }
    }
    CK(cudaFree(data));
    CK(cudaFree(sum));
}


#include "pinned.cuh"

int main(int argc, char** argv)
{
    bool do_stencil = argc < 2 || strcmp(argv[1], "stencil") == 0;
    bool do_sampling = argc < 2 || strcmp(argv[1], "sampling") == 0;
    bool do_atomics = argc < 2 || strcmp(argv[1], "atomics") == 0;
    bool do_pinned = argc < 2 || strcmp(argv[1], "pinned") == 0;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    printf("device %s, %d SMs, L2 %d MiB\n", prop.name, g_sms, prop.l2CacheSize >> 20);
    {
        size_t bytes = 1ull << 30;
        void *a, *b;
        CK(cudaMalloc(&a, bytes));
        CK(cudaMalloc(&b, bytes));
        fill<unsigned><<<1024, 256>>>((unsigned*)a, bytes / 4, 1);
        float ms = median_ms([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
        g_copy_gbs = 2.0 * bytes / (ms * 1e6);
        printf("device copy 1 GiB: %.4f ms, %.0f GB/s (read + written)\n", ms, g_copy_gbs);
        CK(cudaFree(a));
        CK(cudaFree(b));
    }
    if (do_stencil) {
        stencil_suite<float>(512, "f32");
        stencil_suite<double>(512, "f64");
        stencil_suite<float>(256, "f32");
        stencil_suite<double>(256, "f64");
    }
    if (do_atomics) pinned_atomic_suite();
    if (do_sampling) sampling_suite();
    if (do_pinned) pinned_sampling_suite();
    return 0;
}
