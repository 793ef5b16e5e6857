// Pointer-chase probe for TLBs and caches (Karnagel et al., DaMoN'17, section 3.1):
// a single thread walks a ring of pointers laid out at a fixed stride over a fixed
// distance; every load's address is the value of the previous load, so loads cannot
// overlap and the cycles per step are the latency of one access. A first walk
// (warm_steps) fills the TLBs and L2; the timed walk (steps) then shows TLB misses only
// once the distance exceeds what the TLBs cover.
//
// No CUDA headers: NVRTC compiles this with only memtune_params.h.

#include "memtune_params.h"

// Init: for i in [0, count), stores at base + i*stride_bytes the absolute address of
// element (i + 1) % count, closing the ring.
//   base          device-visible address of the buffer (device, managed, or the device
//                 pointer of mapped pinned host memory); 8-byte aligned
//   stride_bytes  distance between elements; a multiple of 8
//   count         number of elements; the buffer spans count * stride_bytes bytes
// Any grid shape works (grid-stride loop).
extern "C" __global__ void memtune_chase_init(unsigned long long base,
                                              unsigned long long stride_bytes,
                                              unsigned long long count)
{
    unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned long long i = first; i < count; i += threads) {
        unsigned long long next = (i + 1 == count) ? 0 : i + 1;
        *(unsigned long long*)(base + i * stride_bytes) = base + next * stride_bytes;
    }
}

// The SM this thread runs on.
__device__ __forceinline__ unsigned int memtune_smid()
{
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

// One load that bypasses L1 (.cg: cache in L2 only), so that hits are L2 hits and
// translation goes through the TLBs on every step.
__device__ __forceinline__ unsigned long long memtune_load_cg(unsigned long long addr)
{
    unsigned long long value;
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(value) : "l"(addr) : "memory");
    return value;
}

// Chase: one thread walks the ring from `start`, first warm_steps untimed steps, then
// `steps` timed steps.
//   start       address of any ring element (from memtune_chase_init)
//   warm_steps  untimed steps; >= count to touch every element once
//   steps       timed steps
//   target_sm   SM to run on, or -1 for whichever SM runs block 0. Launch enough blocks
//               (e.g. a few per SM) that one lands on target_sm; the others return.
//   out         3 x u64, which the host must pre-fill with ~0ull (the sentinel):
//                 out[0] cycles for the `steps` timed steps
//                 out[1] address reached (data sink, keeps the walk alive)
//                 out[2] SM that ran the walk
//               out[2] still ~0ull afterwards means no block ran on target_sm.
// Launch with any block size; only thread 0 of the chosen block works.
extern "C" __global__ void memtune_pointer_chase(unsigned long long start,
                                                 unsigned int warm_steps,
                                                 unsigned int steps,
                                                 int target_sm,
                                                 unsigned long long* out)
{
    if (threadIdx.x != 0) {
        return;
    }
    unsigned int sm = memtune_smid();
    if (target_sm < 0 ? blockIdx.x != 0 : sm != (unsigned int)target_sm) {
        return;
    }
    // Several blocks may share target_sm: the first to claim out[2] runs the walk.
    if (atomicCAS(&out[2], ~0ull, (unsigned long long)sm) != ~0ull) {
        return;
    }

    memtune_timed_walk(
        start, warm_steps, steps, [](unsigned long long p) { return memtune_load_cg(p); }, out);
}

// Walks `steps` loads from `p` with the clock read after the last one arrives.
__device__ __forceinline__ unsigned long long memtune_walk(unsigned long long p, unsigned int steps)
{
    for (unsigned int i = 0; i < steps; ++i) {
        p = memtune_load_cg(p);
    }
    return p;
}

// Pair chase, for TLB sharing between SMs (seed 000, section 3.3): the block on SM `sm_a`
// walks ring A like memtune_pointer_chase, while the block on SM `sm_b` walks its own ring
// B over the same time (its warm walk, then `steps` three times, so it is still walking
// while A is timed). If the two SMs share a TLB level, B's pages evict A's and A's timed
// loads get slower.
//   start_a, start_b  rings from memtune_chase_init over disjoint memory
//   warm_steps        untimed steps of each walk (>= ring length)
//   steps             timed steps of A
//   sm_a, sm_b        the two SMs (distinct)
//   out               6 x u64 pre-filled with ~0ull: out[0..3] as memtune_pointer_chase's
//                     for A; out[3] B's address reached, out[4] unused, out[5] B's SM.
// Launch several blocks per SM so that one lands on each; only thread 0 of the chosen
// blocks works, and both must be resident at once (they are: a few 32-thread blocks per SM).
extern "C" __global__ void memtune_pointer_chase_pair(unsigned long long start_a,
                                                      unsigned long long start_b,
                                                      unsigned int warm_steps,
                                                      unsigned int steps,
                                                      int sm_a,
                                                      int sm_b,
                                                      unsigned long long* out)
{
    if (threadIdx.x != 0) {
        return;
    }
    unsigned int sm = memtune_smid();
    if (sm == (unsigned int)sm_a && atomicCAS(&out[2], ~0ull, (unsigned long long)sm) == ~0ull) {
        memtune_timed_walk(
            start_a, warm_steps, steps, [](unsigned long long p) { return memtune_load_cg(p); },
            out);
    } else if (sm == (unsigned int)sm_b &&
               atomicCAS(&out[5], ~0ull, (unsigned long long)sm) == ~0ull) {
        unsigned long long p = memtune_walk(start_b, warm_steps);
        p = memtune_walk(p, steps);
        p = memtune_walk(p, steps);
        out[3] = memtune_walk(p, steps);
    }
}
