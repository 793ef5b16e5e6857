// tuned-app's random sampling in TLB scopes: every pass redraws the same positions and
// adds only those inside its scope, so each pass's reads stay within what the TLB holds.
// The scope is the sampling plan's, passed by memtune_tuner::build as a define.
#include "tuned_params.h"

#ifndef MEMTUNE_SAMPLING_SCOPE_BYTES
#error "MEMTUNE_SAMPLING_* come from Kernels::sampling_plan in build.rs"
#endif

#define SCOPE_WORDS ((unsigned long long)(MEMTUNE_SAMPLING_SCOPE_BYTES) / 4ull)

// splitmix64's finaliser: the CPU reference (src/reference.rs) computes the same.
__device__ __forceinline__ unsigned long long mix(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

extern "C" __global__ void tuned_fill(unsigned int* data, unsigned long long n_words) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n_words; i += stride) {
        data[i] = (unsigned int)mix(i);
    }
}

extern "C" __global__ void tuned_sample(const unsigned int* data, tuned_sampling_params p,
                                        unsigned long long* sum) {
    const unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long begin = (unsigned long long)p.pass * SCOPE_WORDS;
    const unsigned long long end = begin + SCOPE_WORDS;
    unsigned long long acc = 0;
    for (unsigned int r = 0; r < p.reads; ++r) {
        const unsigned long long pos = mix(p.seed ^ (thread * p.reads + r)) % p.n_words;
        if (pos >= begin && pos < end) {
            acc += data[pos];
        }
    }
    atomicAdd(sum, acc);
}
