// A trace replayed on the GPU: one thread loads, in trace order, the word each reference
// names, each load's address depending on the value the one before returned, so that the
// mean cycles per load is the trace's mean latency through L1 (ld.global.ca), L2, DRAM and
// the TLBs. The other threads of the block stage the next chunk of offsets in shared
// memory between timed chunks, so reading the trace itself is neither timed nor cached.
//
// No #include: NVRTC compiles this without any CUDA headers.

typedef unsigned long long u64;
typedef unsigned int u32;

#define MEMTUNE_REPLAY_CHUNK 4096

__device__ __forceinline__ u64 memtune_replay_clock()
{
    u64 t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory");
    return t;
}

// Offsets are read streaming (evict first), to leave the caches to the trace's own loads.
__device__ __forceinline__ u32 memtune_replay_stream(const u32* addr)
{
    u32 value;
    asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(value) : "l"(addr) : "memory");
    return value;
}

__device__ __forceinline__ u32 memtune_replay_load(const u32* addr)
{
    u32 value;
    asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(value) : "l"(addr) : "memory");
    return value;
}

//   offsets  n word offsets into data, in trace order
//   data     the words the trace touches (zeroes: each load returns 0)
//   mask     0 at run time: makes each address depend on the previous load's value
//   out      [0] cycles of the timed loads, [1] the last value (keeps the loads)
// One block of any size (a multiple of 32, at most 1024); thread 0 chases.
extern "C" __global__ void memtune_replay(const u32* offsets, u32 n, const u32* data, u32 mask,
                                          u64* out)
{
    __shared__ u32 chunk[MEMTUNE_REPLAY_CHUNK];
    // Consumes the last load before the clock is read: a warp issues in order.
    __shared__ volatile u32 sink;
    u64 cycles = 0;
    u32 v = 0;
    for (u32 base = 0; base < n; base += MEMTUNE_REPLAY_CHUNK) {
        u32 len = n - base < MEMTUNE_REPLAY_CHUNK ? n - base : MEMTUNE_REPLAY_CHUNK;
        for (u32 i = threadIdx.x; i < len; i += blockDim.x) {
            chunk[i] = memtune_replay_stream(offsets + base + i);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            u64 t0 = memtune_replay_clock();
            for (u32 i = 0; i < len; i++) {
                v = memtune_replay_load(data + (chunk[i] ^ (v & mask)));
            }
            sink = v;
            u64 t1 = memtune_replay_clock();
            cycles += t1 - t0;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[0] = cycles;
        out[1] = v;
    }
}
