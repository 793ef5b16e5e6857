// Zero-copy reads of pinned host memory (seed 001: the access patterns of NVIDIA's
// "Improving GPU Memory Oversubscription Performance"): grid-stride, block-stride and
// random-per-warp. memtune measures these over mapped pinned memory, never over
// oversubscribed managed memory (that can hang the GPU).
//
// Every kernel sums what it reads into one 64-bit word so that no read can be optimised
// away and the host can check the total: each thread accumulates in 64 bits (exact, no
// wrap for any buffer the probe uses), the warp reduces with shuffles and lane 0 adds the
// warp's total into *sum with one atomicAdd. Launch with blockDim.x a multiple of 32.
//
// Loads are __ldcg (cache in L2, not L1). Grid-stride and block-stride use 16-byte loads
// (uint4: one warp reads 512 contiguous bytes per step); random-warp uses 4-byte loads, as
// the seed defines it: one warp reads one 128-byte segment (32 words) per step.
//
// No #include: NVRTC compiles this without any CUDA headers.

__device__ __forceinline__ void memtune_warp_sum_add(unsigned long long acc,
                                                     unsigned long long* sum)
{
    for (int offset = 16; offset > 0; offset >>= 1) {
        acc += __shfl_down_sync(0xffffffffu, acc, offset);
    }
    if ((threadIdx.x & 31u) == 0) {
        atomicAdd(sum, acc);
    }
}

__device__ __forceinline__ unsigned long long memtune_sum_vec(uint4 v)
{
    return (unsigned long long)v.x + v.y + v.z + v.w;
}

// Grid-stride: thread i of T = gridDim.x * blockDim.x reads 16-byte vectors i, i + T,
// i + 2T, ... below n_vec. Each step the whole grid reads T * 16 contiguous bytes.
//   data    device-visible address of the buffer (mapped pinned host memory), 16-byte aligned
//   n_vec   buffer size in 16-byte vectors
//   sum     one u64, zeroed by the host before the launch; receives the sum of every
//           4-byte word of the buffer
extern "C" __global__ void memtune_zero_copy_grid_stride(const uint4* __restrict__ data,
                                                         unsigned long long n_vec,
                                                         unsigned long long* sum)
{
    unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long acc = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n_vec; i += threads) {
        acc += memtune_sum_vec(__ldcg(&data[i]));
    }
    memtune_warp_sum_add(acc, sum);
}

// Block-stride: the buffer is cut into gridDim.x contiguous chunks of
// ceil(n_vec / gridDim.x) vectors; block b reads chunk b, its threads stepping by
// blockDim.x through it (coalesced within the block). Resident blocks thus read far-apart
// regions at once.
//   data, n_vec, sum   as for memtune_zero_copy_grid_stride
extern "C" __global__ void memtune_zero_copy_block_stride(const uint4* __restrict__ data,
                                                          unsigned long long n_vec,
                                                          unsigned long long* sum)
{
    unsigned long long chunk = (n_vec + gridDim.x - 1) / gridDim.x;
    unsigned long long begin = chunk * blockIdx.x;
    unsigned long long end = begin + chunk < n_vec ? begin + chunk : n_vec;
    unsigned long long acc = 0;
    for (unsigned long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
        acc += memtune_sum_vec(__ldcg(&data[i]));
    }
    memtune_warp_sum_add(acc, sum);
}

// Random-warp: global warp w (= global thread index / 32) seeds a 64-bit LCG with
// seed ^ (w * golden ratio); `steps` times it steps the LCG, picks segment
// s = high 64 bits of state * n_segments (uniform in [0, n_segments)) and its 32 lanes
// read the 32 words data[32 s + lane]: one random, 128-byte aligned, coalesced 128-byte
// read per warp per step (4-byte loads).
//   data        device-visible address of the buffer, 128-byte aligned
//   n_segments  buffer size in 128-byte segments
//   steps       segments each warp reads
//   seed        stream seed
//   sum         one u64, zeroed by the host before the launch
extern "C" __global__ void memtune_zero_copy_random_warp(const unsigned int* __restrict__ data,
                                                         unsigned long long n_segments,
                                                         unsigned int steps,
                                                         unsigned long long seed,
                                                         unsigned long long* sum)
{
    unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long w = t >> 5;
    unsigned int lane = threadIdx.x & 31u;
    unsigned long long x = seed ^ (w * 0x9e3779b97f4a7c15ull);
    unsigned long long acc = 0;
    for (unsigned int r = 0; r < steps; ++r) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned long long s = __umul64hi(x, n_segments);
        acc += __ldcg(&data[s * 32ull + lane]);
    }
    memtune_warp_sum_add(acc, sum);
}

// L2 read: a device region small enough to stay in L2, read `repeats` times with __ldcg
// (L2, not L1) by the whole grid; repeat r starts each thread r * 4099 vectors further
// (wrapping), so no repeat reads the same addresses in the same order as the one before
// and none can be folded into it. Gives the L2's read bandwidth once the warm-up has
// brought the region in.
//   data     device region, 16-byte aligned
//   n_vec    region size in 16-byte vectors
//   repeats  times the region is read
//   sum      one u64, zeroed by the host; receives repeats x the sum of the region's words
//            (mod 2^64)
extern "C" __global__ void memtune_l2_read(const uint4* __restrict__ data,
                                           unsigned long long n_vec,
                                           unsigned int repeats,
                                           unsigned long long* sum)
{
    unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long acc = 0;
    for (unsigned int r = 0; r < repeats; ++r) {
        unsigned long long shift = ((unsigned long long)r * 4099ull) % n_vec;
        for (unsigned long long i = first; i < n_vec; i += threads) {
            unsigned long long j = i + shift;
            acc += memtune_sum_vec(__ldcg(&data[j < n_vec ? j : j - n_vec]));
        }
    }
    memtune_warp_sum_add(acc, sum);
}
