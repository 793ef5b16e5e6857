// Cache probe chases (Wong et al., ISPASS 2010, section III): one thread walks a ring of
// dependent loads, so each step costs one access latency. Launch one block (any size);
// thread 0 walks, first `warm_steps` untimed steps (>= the ring length, so the caches
// hold what they can of the ring), then `steps` timed ones.
//   out  2 x u64: out[0] cycles of the timed steps, out[1] what the walk reached (a data
//        sink that keeps the walk alive)
//
// No #include: NVRTC compiles this without any CUDA headers.

// Cycle counter read after `p` has arrived: the volatile shared store consumes `p`, and a
// warp issues in order, so the clock read cannot overtake the pending load.
__device__ __forceinline__ long long memtune_cycles_after(unsigned long long p)
{
    __shared__ volatile unsigned long long sink;
    sink = p;
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory");
    return t;
}

// A load cached in L1 and L2 (.ca), the path whose L1 size and ways the probe reads.
__device__ __forceinline__ unsigned long long memtune_load_ca(unsigned long long addr)
{
    unsigned long long value;
    asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(value) : "l"(addr) : "memory");
    return value;
}

// L1 path: a ring written by memtune_chase_init (pointer_chase.cu), absolute addresses.
extern "C" __global__ void memtune_chase_ca(unsigned long long start,
                                            unsigned int warm_steps,
                                            unsigned int steps,
                                            unsigned long long* out)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) {
        return;
    }
    unsigned long long p = start;
    for (unsigned int i = 0; i < warm_steps; ++i) {
        p = memtune_load_ca(p);
    }
    long long t0 = memtune_cycles_after(p);
    for (unsigned int i = 0; i < steps; ++i) {
        p = memtune_load_ca(p);
    }
    long long t1 = memtune_cycles_after(p);
    out[0] = (unsigned long long)(t1 - t0);
    out[1] = p;
}

// Constant path: the ring lives in this bank; each element holds the word index of the
// next, written by the host (cuModuleGetGlobal + copy). 64 KiB, one constant bank.
__constant__ unsigned int memtune_const_ring[16384];

extern "C" __global__ void memtune_chase_const(unsigned int start,
                                               unsigned int warm_steps,
                                               unsigned int steps,
                                               unsigned long long* out)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) {
        return;
    }
    unsigned int p = start;
    for (unsigned int i = 0; i < warm_steps; ++i) {
        p = memtune_const_ring[p];
    }
    long long t0 = memtune_cycles_after(p);
    for (unsigned int i = 0; i < steps; ++i) {
        p = memtune_const_ring[p];
    }
    long long t1 = memtune_cycles_after(p);
    out[0] = (unsigned long long)(t1 - t0);
    out[1] = p;
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
    unsigned int p = 0;
    for (unsigned int i = 0; i < count; ++i) {
        p = r[p];
    }
    long long t0 = memtune_cycles_after(p);
    for (unsigned int i = 0; i < steps; ++i) {
        p = r[p];
    }
    long long t1 = memtune_cycles_after(p);
    out[0] = (unsigned long long)(t1 - t0);
    out[1] = p;
}
