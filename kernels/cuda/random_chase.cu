// Main-memory latency distribution: one thread follows a pointer chain that visits the
// nodes of a large array in a random order, so that consecutive loads share no DRAM row,
// page or cache line, and times each dependent load on its own (the distribution mt4g
// reports for main memory: mean, p50, p95).
//
// The same kernels measure what one DRAM miss brings into the L2 (its fetch granularity):
// init given the identity order lays a chain out in address order at a small stride, the
// evict kernel below reads the rest of the buffer (and never the chain's lines), and the
// sample kernel then times each load of the chain from its first, cold node.
//
// No CUDA headers: NVRTC compiles this with only memtune_params.h.

#include "memtune_params.h"

// One load that bypasses L1 (.cg: cache in L2 only).
__device__ __forceinline__ unsigned long long memtune_random_load_cg(unsigned long long addr)
{
    unsigned long long value;
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(value) : "l"(addr) : "memory");
    return value;
}

// Init: for k in [0, count), stores at base + order[k]*stride_bytes the absolute address
// of node order[(k + 1) % count], closing the chain into one cycle over every node.
//   base          device address of the array; 8-byte aligned
//   stride_bytes  distance between nodes; a multiple of 8
//   order         count node indices, each of [0, count) once (a random order)
//   count         nodes; the array spans count * stride_bytes bytes
// Any grid shape works (grid-stride loop).
extern "C" __global__ void memtune_random_chase_init(unsigned long long base,
                                                     unsigned long long stride_bytes,
                                                     const unsigned int* order,
                                                     unsigned long long count)
{
    unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned long long k = first; k < count; k += threads) {
        unsigned long long next = (k + 1 == count) ? 0 : k + 1;
        unsigned long long from = base + (unsigned long long)order[k] * stride_bytes;
        unsigned long long to = base + (unsigned long long)order[next] * stride_bytes;
        *(unsigned long long*)from = to;
    }
}

// Evicts the chain from L2: reads one word of every `line_bytes` of the array except the
// first line of each node (the pointer), far more lines than an L2 holds, so that the
// nodes the init just wrote are no longer cached when the timed walk reaches them.
//   sink  written only if the loads sum to an impossible value: keeps the loads alive
// Any grid shape works (grid-stride loop).
extern "C" __global__ void memtune_random_chase_flush(unsigned long long base,
                                                      unsigned long long stride_bytes,
                                                      unsigned long long line_bytes,
                                                      unsigned long long count,
                                                      unsigned long long* sink)
{
    unsigned long long lines_per_node = stride_bytes / line_bytes;
    unsigned long long lines = count * lines_per_node;
    unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long sum = 0;
    for (unsigned long long i = first; i < lines; i += threads) {
        if (i % lines_per_node != 0) {
            sum += memtune_random_load_cg(base + i * line_bytes);
        }
    }
    if (sum == ~0ull) {
        *sink = sum;
    }
}

// Evicts the L2 by reading a region apart from the lines to evict: one word of every
// `line_bytes` of [base, base + bytes), far more lines than an L2 holds, so that lines
// written or read before (outside the region) are no longer cached. Nothing outside the
// region is read: a chain that lies just before `base` stays uncached.
//   base        device address of the region; 8-byte aligned
//   bytes       the region's size; a partial last line is not read
//   line_bytes  distance between the words read (one L2 line); a multiple of 8
//   sink        written only if the loads sum to an impossible value: keeps the loads alive
// Any grid shape works (grid-stride loop).
extern "C" __global__ void memtune_random_chase_evict(unsigned long long base,
                                                      unsigned long long bytes,
                                                      unsigned long long line_bytes,
                                                      unsigned long long* sink)
{
    unsigned long long lines = bytes / line_bytes;
    unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long sum = 0;
    for (unsigned long long i = first; i < lines; i += threads) {
        sum += memtune_random_load_cg(base + i * line_bytes);
    }
    if (sum == ~0ull) {
        *sink = sum;
    }
}

// Most loads one launch of memtune_random_chase_sample times (its shared-memory array).
#define MEMTUNE_RANDOM_CHASE_MAX_SAMPLES 2048

// Sample: thread 0 of block 0 walks `warm` hops from `start` untimed, then times each of
// `samples` hops on its own: the clock is read once the previous value has arrived, then
// one dependent load, then the clock again once its value has arrived
// (memtune_clock_after). Each sample goes to shared memory, so that no global store sits
// inside a timed window; they are copied out after the walk.
//   start    address of any node of the chain (from memtune_random_chase_init)
//   warm     untimed hops
//   samples  timed hops, at most MEMTUNE_RANDOM_CHASE_MAX_SAMPLES (more are not taken)
//   out      samples + 1 words: out[i] the cycles of hop i, out[samples] the address
//            reached (a data sink that keeps the walk alive)
// Launch one block of any size; the other threads return.
extern "C" __global__ void memtune_random_chase_sample(unsigned long long start,
                                                       unsigned int warm,
                                                       unsigned int samples,
                                                       unsigned long long* out)
{
    __shared__ unsigned int cycles[MEMTUNE_RANDOM_CHASE_MAX_SAMPLES];
    if (threadIdx.x != 0 || blockIdx.x != 0) {
        return;
    }
    if (samples > MEMTUNE_RANDOM_CHASE_MAX_SAMPLES) {
        samples = MEMTUNE_RANDOM_CHASE_MAX_SAMPLES;
    }
    unsigned long long p = start;
    for (unsigned int i = 0; i < warm; ++i) {
        p = memtune_random_load_cg(p);
    }
    for (unsigned int i = 0; i < samples; ++i) {
        long long t0 = memtune_clock_after(p);
        p = memtune_random_load_cg(p);
        long long t1 = memtune_clock_after(p);
        cycles[i] = (unsigned int)(t1 - t0);
    }
    for (unsigned int i = 0; i < samples; ++i) {
        out[i] = cycles[i];
    }
    out[samples] = p;
}
