// user-gather: a user's own random gather, tuned by memtune's autotuner.
//
// Each thread draws `reads` positions from its own splitmix64 stream and reads the 4-byte
// float there, but only when the position lies inside this pass's scope
// [scope_begin, scope_end) (in words). Every pass redraws the same streams, so over the
// passes of a plan each drawn position is read exactly once, whatever the split.
//
// Per read: y = fma(v, 0.5, 0.25), then `work` more rounds of y = fma(y, 0.75, 0.375)
// (0..64: arithmetic per read). y stays in [0.75, 1.5), so y * 2^20 is an exact float whose
// integer part is added to a 64-bit integer: integer sums do not depend on the order of
// the additions, so the result of a plan is the same for every split into passes, bit for
// bit (float or double accumulation would differ in the last bits).
//
// Entries:
//   user_gather_fill(data, n_words)   data[i] = a float in [1, 2) hashed from i (never 0)
//   user_gather(data, sum, n_words, scope_begin, scope_end, seed, reads, work)
//     adds the thread's fixed-point sum to *sum (one atomic per warp).
// Launch: 1-D grid, 1-D blocks of a multiple of 32 threads, at most USER_GATHER_BLOCK.
// The grid is part of the result: it sets how many streams are drawn.
//
// No headers: NVRTC compiles this file alone. The CPU model is src/reference.rs.

#define USER_GATHER_BLOCK 256

// The data of word i: 1 + (23 bits of a hash of i) / 2^23, exact in a float.
__device__ __forceinline__ float user_gather_value(unsigned long long i)
{
    unsigned long long x = i * 0x9e3779b97f4a7c15ull;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    unsigned int h = (unsigned int)x;
    return __uint_as_float(0x3f800000u | (h >> 9));
}

extern "C" __global__ void user_gather_fill(float* data, unsigned long long n_words)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n_words; i += stride) {
        data[i] = user_gather_value(i);
    }
}

extern "C" __global__ void __launch_bounds__(USER_GATHER_BLOCK)
    user_gather(const float* data, unsigned long long* sum, unsigned long long n_words,
                unsigned long long scope_begin, unsigned long long scope_end,
                unsigned long long seed, unsigned int reads, unsigned int work)
{
    unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long s = seed ^ (t * 0xd1b54a32d192ed03ull);
    unsigned long long acc = 0;
#pragma unroll 8
    for (unsigned int r = 0; r < reads; ++r) {
        // splitmix64
        s += 0x9e3779b97f4a7c15ull;
        unsigned long long z = s;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        unsigned long long pos = __umul64hi(z, n_words);
        if (pos >= scope_begin && pos < scope_end) {
            float y = fmaf(__ldg(data + pos), 0.5f, 0.25f);
            for (unsigned int w = 0; w < work; ++w) {
                y = fmaf(y, 0.75f, 0.375f);
            }
            acc += (unsigned long long)(y * 1048576.0f);
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        acc += __shfl_down_sync(0xffffffffu, acc, offset);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(sum, acc);
    }
}
