// Digest of a buffer's bits on the GPU, so that checking two outputs for bitwise equality
// does not read them back (a 512³ f64 output is 1 GiB). Order-independent: the sum, mod
// 2^64, of mix(word index, word) over the 4-byte words; `memtune_kernels::digest::words`
// computes the same on the CPU.
//
// No #include: NVRTC compiles this without any CUDA headers.

// SplitMix64's finaliser.
__device__ __forceinline__ unsigned long long memtune_mix64(unsigned long long x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

//   data     n_words 4-byte words
//   out      one u64 the host zeroes first; the kernel adds every block's partial sum
// Any grid (grid-stride loop); blocks of a multiple of 32 threads, at most 1024.
extern "C" __global__ void memtune_digest_words(const unsigned int* data,
                                                unsigned long long n_words,
                                                unsigned long long* out)
{
    __shared__ unsigned long long partial[32];
    unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long sum = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n_words; i += threads) {
        sum += memtune_mix64(memtune_mix64(i) ^ data[i]);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
        partial[warp] = sum;
    }
    __syncthreads();
    if (warp == 0) {
        sum = lane < blockDim.x / 32 ? partial[lane] : 0;
        for (int offset = 16; offset > 0; offset /= 2) {
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        }
        if (lane == 0) {
            atomicAdd(out, sum);
        }
    }
}
