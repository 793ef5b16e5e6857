// memtune's chase methods beside mt4g's (caps-tum/mt4g) on one GPU, to find where their
// H100 figures differ and why (docs/profile.md, "memtune against mt4g"). Standalone:
//   nvcc -O3 -arch=sm_90 -o compare compare.cu && ./compare
// Every figure is a median over REPEATS launches. Methods:
//   chain   one thread walks a ring; cycles of the whole walk / hops (memtune's caches)
//   window  mt4g's: %clock read before and after each dependent load, the difference
//           stored in shared memory; p50 of the samples
//   index   the ring holds u32 indices (mt4g), the load address is base + 4 * index;
//   pointer the ring holds absolute u64 addresses (memtune)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static const int REPEATS = 5;
static const int SAMPLES = 2048;

// Load kinds: 0 .ca (L1), 1 .cg (L2), 2 .cv + membar.gl (mt4g's main memory), 3 .cv alone,
// 4 .cg + membar.gl.
template <int K> __device__ __forceinline__ uint32_t ld32(uint64_t a)
{
    uint32_t r;
    if (K == 0) asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(r) : "l"(a) : "memory");
    if (K == 1) asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(r) : "l"(a) : "memory");
    if (K == 2) asm volatile("ld.global.cv.u32 %0, [%1];\n\tmembar.gl;" : "=r"(r) : "l"(a) : "memory");
    if (K == 3) asm volatile("ld.global.cv.u32 %0, [%1];" : "=r"(r) : "l"(a) : "memory");
    if (K == 4) asm volatile("ld.global.cg.u32 %0, [%1];\n\tmembar.gl;" : "=r"(r) : "l"(a) : "memory");
    return r;
}
// Evicts everything from L2: reads every 128-byte line of a buffer far larger than it.
__global__ void flush(const uint32_t* b, size_t words, uint32_t* sink)
{
    uint32_t acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words / 32;
         i += (size_t)gridDim.x * blockDim.x)
        acc += ld32<1>((uint64_t)(b + i * 32));
    if (acc == 0x12345678u) *sink = acc;
}
static uint32_t* g_flush;
static uint32_t* g_sink;
static const size_t FLUSH_WORDS = (512ull << 20) / 4;
static void flush_l2()
{
    flush<<<1024, 256>>>(g_flush, FLUSH_WORDS, g_sink);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
}
template <int K> __device__ __forceinline__ uint64_t ld64(uint64_t a)
{
    uint64_t r;
    if (K == 0) asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(r) : "l"(a) : "memory");
    if (K == 1) asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(r) : "l"(a) : "memory");
    if (K == 2) asm volatile("ld.global.cv.u64 %0, [%1];\n\tmembar.gl;" : "=l"(r) : "l"(a) : "memory");
    if (K == 3) asm volatile("ld.global.cv.u64 %0, [%1];" : "=l"(r) : "l"(a) : "memory");
    return r;
}
__device__ __forceinline__ uint32_t clk32()
{
    uint32_t c;
    asm volatile("mov.u32 %0, %%clock;" : "=r"(c));
    return c;
}
// %clock64 once `p` has arrived (a shared store of it comes first), as memtune's kernels.
__device__ __forceinline__ long long clk_after(uint64_t p)
{
    __shared__ volatile uint64_t sink;
    sink = p;
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
    return t;
}

// mt4g's method: index ring, per-load %clock windows after `warm` hops.
template <int K>
__global__ void windows(const uint32_t* a, uint32_t warm, uint32_t* out, uint32_t* sink)
{
    __shared__ uint32_t s[SAMPLES];
    uint32_t i = 0;
    for (uint32_t h = 0; h < warm; ++h) i = ld32<K>((uint64_t)a + 4ull * i);
    for (uint32_t h = 0; h < SAMPLES; ++h) {
        uint32_t t0 = clk32();
        i = ld32<K>((uint64_t)a + 4ull * i);
        uint32_t t1 = clk32();
        s[h] = t1 - t0;
    }
    for (uint32_t h = 0; h < SAMPLES; ++h) out[h] = s[h];
    *sink = i;
}
// Index ring, whole-walk average.
template <int K>
__global__ void chain_index(const uint32_t* a, uint32_t warm, uint32_t hops, unsigned long long* out)
{
    uint32_t i = 0;
    for (uint32_t h = 0; h < warm; ++h) i = ld32<K>((uint64_t)a + 4ull * i);
    long long t0 = clk_after(i);
    for (uint32_t h = 0; h < hops; ++h) i = ld32<K>((uint64_t)a + 4ull * i);
    long long t1 = clk_after(i);
    out[0] = t1 - t0;
    out[1] = i;
}
// Pointer ring, whole-walk average (memtune's chase); with `per_sm`, the first block to
// start on each SM walks and writes out[2 * smid].
template <int K>
__global__ void chain_pointer(uint64_t start, uint32_t warm, uint32_t hops, unsigned long long* out,
                              int per_sm, unsigned int* claimed)
{
    if (threadIdx.x != 0) return;
    unsigned int sm = 0;
    if (per_sm) {
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        if (atomicCAS(&claimed[sm], 0u, 1u) != 0u) return;
    } else if (blockIdx.x != 0) {
        return;
    }
    uint64_t p = start;
    for (uint32_t h = 0; h < warm; ++h) p = ld64<K>(p);
    long long t0 = clk_after(p);
    for (uint32_t h = 0; h < hops; ++h) p = ld64<K>(p);
    long long t1 = clk_after(p);
    out[2 * sm] = t1 - t0;
    out[2 * sm + 1] = p;
}
// Whole-grid reads of 16-byte vectors through L2 (mt4g's L2 bandwidth kernel's shape).
__global__ void l2_read(const uint4* src, size_t n, int reps, uint4* dst)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    uint32_t acc = 0;
    for (int r = 0; r < reps; ++r) {
        size_t first = (((size_t)blockIdx.x + r) * blockDim.x + threadIdx.x) % stride;
        for (size_t i = first; i < n; i += stride) {
            uint32_t x, y, z, w;
            asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];"
                         : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
                         : "l"(src + i));
            acc ^= x ^ w;
        }
    }
    if (acc == 0x9e3779b9u) dst[threadIdx.x] = make_uint4(acc, 0, 0, 0);
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// A u32 index ring of `count` nodes `stride` words apart, in order or shuffled.
static uint32_t* index_ring(size_t count, size_t stride_words, bool shuffle, size_t* words)
{
    std::vector<uint32_t> order(count);
    std::iota(order.begin(), order.end(), 0u);
    if (shuffle) std::shuffle(order.begin() + 1, order.end(), std::mt19937_64(7));
    *words = count * stride_words;
    std::vector<uint32_t> h(*words, 1u);
    for (size_t k = 0; k < count; ++k)
        h[order[k] * stride_words] = (uint32_t)(order[(k + 1) % count] * stride_words);
    uint32_t* d;
    CK(cudaMalloc(&d, *words * 4));
    CK(cudaMemcpy(d, h.data(), *words * 4, cudaMemcpyHostToDevice));
    return d;
}
// A pointer ring of `count` nodes `stride` bytes apart, in order.
static uint64_t pointer_ring(size_t count, size_t stride, uint64_t** base)
{
    size_t words = count * stride / 8;
    std::vector<uint64_t> h(words, 1ull);
    CK(cudaMalloc(base, words * 8));
    uint64_t b = (uint64_t)*base;
    for (size_t k = 0; k < count; ++k) h[k * stride / 8] = b + ((k + 1) % count) * stride;
    CK(cudaMemcpy(*base, h.data(), words * 8, cudaMemcpyHostToDevice));
    return b;
}

template <int K> static double window_p50(const uint32_t* ring, uint32_t warm, bool cold = false)
{
    uint32_t *out, *sink;
    CK(cudaMalloc(&out, SAMPLES * 4));
    CK(cudaMalloc(&sink, 4));
    std::vector<double> meds;
    for (int r = 0; r < REPEATS; ++r) {
        if (cold) flush_l2();
        windows<K><<<1, 1>>>(ring, warm, out, sink);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        std::vector<uint32_t> h(SAMPLES);
        CK(cudaMemcpy(h.data(), out, SAMPLES * 4, cudaMemcpyDeviceToHost));
        std::vector<double> v(h.begin() + 1, h.end());
        meds.push_back(median(v));
    }
    CK(cudaFree(out));
    CK(cudaFree(sink));
    return median(meds);
}
template <int K>
static double chain_index_avg(const uint32_t* ring, uint32_t warm, uint32_t hops, bool cold = false)
{
    unsigned long long* out;
    CK(cudaMalloc(&out, 16));
    std::vector<double> v;
    for (int r = 0; r < REPEATS; ++r) {
        if (cold) flush_l2();
        chain_index<K><<<1, 1>>>(ring, warm, hops, out);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        unsigned long long h[2];
        CK(cudaMemcpy(h, out, 16, cudaMemcpyDeviceToHost));
        v.push_back((double)h[0] / hops);
    }
    CK(cudaFree(out));
    return median(v);
}
template <int K>
static std::vector<double> chain_pointer_avg(uint64_t start, uint32_t warm, uint32_t hops, bool per_sm, int sms)
{
    unsigned long long* out;
    unsigned int* claimed;
    CK(cudaMalloc(&out, 16 * 256));
    CK(cudaMalloc(&claimed, 4 * 256));
    std::vector<std::vector<double>> runs(per_sm ? sms : 1);
    for (int r = 0; r < REPEATS; ++r) {
        CK(cudaMemset(out, 0, 16 * 256));
        CK(cudaMemset(claimed, 0, 4 * 256));
        chain_pointer<K><<<per_sm ? sms * 8 : 1, 32>>>(start, warm, hops, out, per_sm, claimed);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        std::vector<unsigned long long> h(512);
        CK(cudaMemcpy(h.data(), out, 16 * 256, cudaMemcpyDeviceToHost));
        for (size_t s = 0; s < runs.size(); ++s)
            if (h[2 * s]) runs[s].push_back((double)h[2 * s] / hops);
    }
    std::vector<double> per;
    for (auto& r : runs)
        if (!r.empty()) per.push_back(median(r));
    CK(cudaFree(out));
    CK(cudaFree(claimed));
    return per;
}

int main()
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int sms = prop.multiProcessorCount;
    printf("device %s, %d SMs, L2 %d B\n", prop.name, sms, prop.l2CacheSize);
    CK(cudaMalloc(&g_flush, FLUSH_WORDS * 4));
    CK(cudaMemset(g_flush, 1, FLUSH_WORDS * 4));
    CK(cudaMalloc(&g_sink, 4));
    size_t words;

    // L1 hit: mt4g's ring (2048 u32, 4-byte stride) and memtune's (pointers, 32-byte stride, 4 KiB).
    uint32_t* seq = index_ring(SAMPLES, 1, false, &words);
    printf("L1 hit   window/index .ca p50 %.1f | chain/index .ca %.2f\n", window_p50<0>(seq, SAMPLES),
           chain_index_avg<0>(seq, SAMPLES, 65536));
    uint64_t* pb;
    uint64_t p4k = pointer_ring(128, 32, &pb);
    printf("L1 hit   chain/pointer .ca %.2f (memtune)\n", chain_pointer_avg<0>(p4k, 128, 65536, false, sms)[0]);
    printf("L2 hit   window/index .cg+membar.gl p50 %.1f (the fence's cost over .cg)\n", window_p50<4>(seq, SAMPLES));

    // L2 hit: the same rings with .cg.
    printf("L2 hit   window/index .cg p50 %.1f | chain/index .cg %.2f | chain/pointer .cg %.2f (memtune)\n",
           window_p50<1>(seq, SAMPLES), chain_index_avg<1>(seq, SAMPLES, 65536),
           chain_pointer_avg<1>(p4k, 128, 65536, false, sms)[0]);
    // L2 hit by SM: a 64 KiB pointer ring at 128-byte stride walked from each SM in turn.
    uint64_t* pb64;
    uint64_t p64k = pointer_ring(512, 128, &pb64);
    std::vector<double> by_sm = chain_pointer_avg<1>(p64k, 512, 8192, true, sms);
    std::vector<double> s = by_sm;
    std::sort(s.begin(), s.end());
    printf("L2 hit by SM (%zu SMs, chain/pointer .cg, 64 KiB): min %.1f p10 %.1f median %.1f p90 %.1f max %.1f\n",
           s.size(), s.front(), s[s.size() / 10], median(s), s[s.size() * 9 / 10], s.back());
    printf("L2 by SM:");
    for (double x : by_sm) printf(" %.0f", x);
    printf("\n");

    // Main memory: a random u32 index ring over 1 GiB at 1 KiB stride (mt4g's layout),
    // the L2 flushed before every launch so that each timed hop misses it.
    uint32_t* big = index_ring((1u << 30) / 1024, 256, true, &words);
    printf("DRAM     window/index p50: .cv+membar.gl %.1f (mt4g) | .cg+membar.gl %.1f | .cv %.1f | .cg %.1f\n",
           window_p50<2>(big, SAMPLES, true), window_p50<4>(big, SAMPLES, true),
           window_p50<3>(big, SAMPLES, true), window_p50<1>(big, SAMPLES, true));
    printf("DRAM     chain/index mean: .cg %.1f | .cv+membar.gl %.1f\n",
           chain_index_avg<1>(big, SAMPLES, 2048, true), chain_index_avg<2>(big, SAMPLES, 2048, true));

    // L2 read bandwidth: a quarter of the L2 (memtune) and 80% of it (mt4g).
    int blocks_per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, l2_read, 1024, 0));
    uint4 *src, *dst;
    size_t most = (size_t)prop.l2CacheSize;
    CK(cudaMalloc(&src, most));
    CK(cudaMemset(src, 1, most));
    CK(cudaMalloc(&dst, 1024 * 16));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (double share : {0.25, 0.5, 0.8}) {
        size_t bytes = (size_t)(most * share) / 16 * 16;
        size_t n = bytes / 16;
        int reps = (int)((4ull << 30) / bytes);
        std::vector<double> gibs;
        l2_read<<<sms * blocks_per_sm, 1024>>>(src, n, 4, dst);
        CK(cudaGetLastError());
        for (int r = 0; r < REPEATS; ++r) {
            CK(cudaEventRecord(e0));
            l2_read<<<sms * blocks_per_sm, 1024>>>(src, n, reps, dst);
            CK(cudaGetLastError());
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            gibs.push_back((double)bytes * reps / (1ull << 30) / (ms / 1e3));
        }
        printf("L2 read  %.0f%% of L2 (%.1f MiB): %.0f GiB/s (median of %d)\n", share * 100,
               bytes / 1048576.0, median(gibs), REPEATS);
    }
    CK(cudaFree(src));
    CK(cudaFree(dst));
    CK(cudaFree(seq));
    CK(cudaFree(big));
    CK(cudaFree(pb));
    CK(cudaFree(pb64));
    CK(cudaFree(g_flush));
    CK(cudaFree(g_sink));
    return 0;
}
