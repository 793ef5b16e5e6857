// Cache probe chases (Wong et al., ISPASS 2010, section III): one thread walks a ring of
// dependent loads, so each step costs one access latency. Launch one block (any size);
// thread 0 walks, first `warm_steps` untimed steps (>= the ring length, so the caches
// hold what they can of the ring), then `steps` timed ones.
//   out  2 x u64: out[0] cycles of the timed steps, out[1] what the walk reached (a data
//        sink that keeps the walk alive)
//
// No CUDA headers: NVRTC compiles this with only memtune_params.h.

#include "memtune_params.h"

// A load cached in L1 and L2 (.ca), the path whose L1 size and ways the probe reads.
__device__ __forceinline__ unsigned long long memtune_load_ca(unsigned long long addr)
{
    unsigned long long value;
    asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(value) : "l"(addr) : "memory");
    return value;
}

// A load through the read-only (texture) data path (.nc), as __ldg emits it. The rings it
// walks are not written while the kernel runs, as .nc requires.
__device__ __forceinline__ unsigned long long memtune_load_nc(unsigned long long addr)
{
    unsigned long long value;
    asm volatile("ld.global.nc.u64 %0, [%1];" : "=l"(value) : "l"(addr) : "memory");
    return value;
}

// memtune_timed_walk by thread 0 of block 0; every other thread returns.
template <typename P, typename Step>
__device__ __forceinline__ void memtune_first_thread_walk(P start, unsigned int warm_steps,
                                                          unsigned int steps, Step step,
                                                          unsigned long long* out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        memtune_timed_walk(start, warm_steps, steps, step, out);
    }
}

// L1 path: a ring written by memtune_chase_init (pointer_chase.cu), absolute addresses.
extern "C" __global__ void memtune_chase_ca(unsigned long long start,
                                            unsigned int warm_steps,
                                            unsigned int steps,
                                            unsigned long long* out)
{
    memtune_first_thread_walk(
        start, warm_steps, steps, [](unsigned long long p) { return memtune_load_ca(p); }, out);
}

// Read-only path: the same rings as memtune_chase_ca, walked with .nc loads.
extern "C" __global__ void memtune_chase_nc(unsigned long long start,
                                            unsigned int warm_steps,
                                            unsigned int steps,
                                            unsigned long long* out)
{
    memtune_first_thread_walk(
        start, warm_steps, steps, [](unsigned long long p) { return memtune_load_nc(p); }, out);
}

// Whether the read-only path shares the L1's storage: thread 0 walks the .ca ring once
// (each line brought in, none hit yet), walks the .nc ring `nc_passes` times, then times
// `steps` .ca loads (each a second visit, `steps` <= ca_count). Launched with nc_passes 0
// (L1 hits) and 2: where the two paths share one storage the .nc lines, which the second
// pass hits, have evicted the .ca ones and the timing reads the L2.
//   out  2 x u64: out[0] cycles of the timed steps, out[1] a data sink of both walks
extern "C" __global__ void memtune_share_nc(unsigned long long ca_start,
                                            unsigned int ca_count,
                                            unsigned long long nc_start,
                                            unsigned int nc_count,
                                            unsigned int nc_passes,
                                            unsigned int steps,
                                            unsigned long long* out)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) {
        return;
    }
    unsigned long long p = ca_start;
    for (unsigned int i = 0; i < ca_count; ++i) {
        p = memtune_load_ca(p);
    }
    unsigned long long q = nc_start;
    for (unsigned int i = 0; i < nc_passes * nc_count; ++i) {
        q = memtune_load_nc(q);
    }
    // The .nc walk is not on the .ca chain: wait for its last load before the clock.
    long long t0 = memtune_clock_after(p + q);
    for (unsigned int i = 0; i < steps; ++i) {
        p = memtune_load_ca(p);
    }
    long long t1 = memtune_clock_after(p);
    out[0] = (unsigned long long)(t1 - t0);
    out[1] = p ^ q;
}

// Constant path: the ring lives in this bank; each element holds the word index of the
// next, written by the host (cuModuleGetGlobal + copy). 64 KiB, one constant bank.
__constant__ unsigned int memtune_const_ring[16384];

extern "C" __global__ void memtune_chase_const(unsigned int start,
                                               unsigned int warm_steps,
                                               unsigned int steps,
                                               unsigned long long* out)
{
    memtune_first_thread_walk(
        start, warm_steps, steps, [](unsigned int p) { return memtune_const_ring[p]; }, out);
}

// Shared memory: a ring of `count` word indices (stride `stride_words`) built by thread 0
// in a 4 KiB array, then walked like the others.
extern "C" __global__ void memtune_chase_shared(unsigned int count,
                                                unsigned int stride_words,
                                                unsigned int steps,
                                                unsigned long long* out)
{
    __shared__ unsigned int ring[1024];
    if (threadIdx.x != 0 || blockIdx.x != 0 || count == 0 || count * stride_words > 1024) {
        return;
    }
    for (unsigned int i = 0; i < count; ++i) {
        ring[i * stride_words] = ((i + 1) % count) * stride_words;
    }
    __syncwarp(1u);
    volatile unsigned int* r = ring;
    memtune_timed_walk(0u, count, steps, [=](unsigned int p) { return r[p]; }, out);
}
