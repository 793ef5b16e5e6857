/*
 * memtune_params.h: what the tuned reference kernels (sampling.cu, grouping.cu,
 * stencil.cu) share with the host.
 *
 *  - The parameter structs the kernels take by value. The Rust side
 *    (memtune_kernels::params) is generated from this file with bindgen, so the layout
 *    is defined once, here.
 *  - The defaults of the compile-time knobs. A tuned value arrives as a -D define and
 *    wins; the Rust side sees the defaults as constants.
 *
 * Plain C with no #include: NVRTC compiles the kernels without any headers, so the
 * fixed-width types are spelled out (unsigned int = 32 bits, unsigned long long =
 * 64 bits on every target memtune builds for). Every struct is laid out without
 * implicit padding, so every byte handed to cuLaunchKernel is a field.
 */
#ifndef MEMTUNE_PARAMS_H
#define MEMTUNE_PARAMS_H

/* ---- Compile-time knobs (override with -DNAME=VALUE) ------------------------------ */

/** Threads per block of memtune_sampling (its __launch_bounds__); a multiple of 32. */
#ifndef MEMTUNE_SAMPLING_BLOCK
#define MEMTUNE_SAMPLING_BLOCK 256
#endif

/** Sampling reads a thread keeps in flight: the unroll depth of its read loop. */
#ifndef MEMTUNE_SAMPLING_UNROLL
#define MEMTUNE_SAMPLING_UNROLL 8
#endif

/** Threads per block of the grouping kernels (their __launch_bounds__); a multiple of 32. */
#ifndef MEMTUNE_GROUPING_BLOCK
#define MEMTUNE_GROUPING_BLOCK 256
#endif

/** Stencil block shape (x, y, z); also the shape of the shared-memory tiles. */
#ifndef MEMTUNE_BX
#define MEMTUNE_BX 32
#endif
#ifndef MEMTUNE_BY
#define MEMTUNE_BY 4
#endif
#ifndef MEMTUNE_BZ
#define MEMTUNE_BZ 4
#endif

/**
 * Neighbours the stencil reads each side of a cell along each axis: 1 (the 7-point star)
 * or 2 (the 13-point star). Sizes the halos of the shared-memory tiles; the runtime builds
 * the kernel with the radius of memtune_stencil_params::radius.
 */
#ifndef MEMTUNE_STENCIL_RADIUS
#define MEMTUNE_STENCIL_RADIUS 1
#endif
/** The widest stencil the kernels are built for: the streaming kernel takes a cell's x
 *  neighbours from its own and the adjacent lanes' 16-byte vectors (2 cells of f64). */
#define MEMTUNE_STENCIL_MAX_RADIUS 2

/* ---- Random sampling (sampling.cu) ------------------------------------------------ */

/** Parameters of one memtune_sampling launch (one pass). */
typedef struct memtune_sampling_params {
    /** Region size in 4-byte words; positions are drawn uniformly from [0, n_words). */
    unsigned long long n_words;
    /** Seed of every thread's generator; the same in every pass of a scoped run. */
    unsigned long long seed;
    /** First word of this pass's TLB scope. */
    unsigned long long scope_begin;
    /** One past the last word of this pass's scope; n_words for an unscoped run. */
    unsigned long long scope_end;
    /** Positions each thread draws (and, within the scope, reads). */
    unsigned int reads_per_thread;
    /**
     * Rounds of Murmur3's 32-bit finalizer (fmix32) applied to each value read before it is summed:
     * the work a kernel does per read. 0: the value as read.
     */
    unsigned int work;
} memtune_sampling_params;

/* ---- Hash grouping (grouping.cu) -------------------------------------------------- */

/**
 * Key marking an empty bucket. Input keys equal to it are legal: they are counted in
 * memtune_grouping_counters::sentinel_count instead of in a bucket.
 */
#define MEMTUNE_GROUPING_EMPTY_KEY 0xFFFFFFFFu

/** One hash-table bucket: a key and how often it occurred (wraps at 2^32). */
typedef struct memtune_grouping_bucket {
    /** The key, or MEMTUNE_GROUPING_EMPTY_KEY. */
    unsigned int key;
    unsigned int count;
} memtune_grouping_bucket;

/** Counters next to the table; memtune_grouping_init zeroes them. */
typedef struct memtune_grouping_counters {
    /** Occurrences of the key MEMTUNE_GROUPING_EMPTY_KEY. */
    unsigned long long sentinel_count;
    /** Keys the copy approach's first pass appended to the spill buffer. */
    unsigned long long spilled;
    /** Keys not inserted because every bucket was taken (table too small): must stay 0. */
    unsigned long long dropped;
} memtune_grouping_counters;

/** Parameters of one grouping launch (one pass). */
typedef struct memtune_grouping_params {
    /** Keys in the input; memtune_grouping_insert_spilled reads its count from the counters. */
    unsigned long long n_keys;
    /** Buckets in the table: a power of two, at most 2^32, >= 2 x distinct keys. */
    unsigned long long capacity;
    /** First bucket of this pass's TLB scope: a key is handled in the pass whose scope holds its home bucket. */
    unsigned long long scope_begin;
    /** One past the last bucket of this pass's scope; capacity for an unscoped run. */
    unsigned long long scope_end;
    /**
     * Extra rounds of hashing per key before its home bucket is taken: per-key work that
     * every pass repeats for every key it reads. 0: one fmix32 (Murmur3's finalizer).
     */
    unsigned int work;
    /** Zero; spelled out so the struct has no implicit padding. */
    unsigned int pad;
} memtune_grouping_params;

/* ---- 3-D star stencil (stencil.cu) ------------------------------------------------- */

/** Parameters of one stencil sweep over an nx x ny x nz volume, x fastest. */
typedef struct memtune_stencil_params {
    unsigned int nx;
    unsigned int ny;
    unsigned int nz;
    /** Times each interior cell re-reads and sums its neighbours (the seed's 1, 6, 12). */
    unsigned int repeats;
    /**
     * Neighbours each side along each axis: 1 (6 neighbours) to MEMTUNE_STENCIL_MAX_RADIUS.
     * The kernel reads MEMTUNE_STENCIL_RADIUS, which must equal it (the runtime builds it so).
     */
    unsigned int radius;
} memtune_stencil_params;

/* ---- Device code shared by the kernels (CUDA only; bindgen never sees it) --------- */

#ifdef __CUDACC__
/** Murmur3's 32-bit finalizer: grouping's hash, and the work of sampling and grouping. */
__device__ __forceinline__ unsigned int memtune_fmix32(unsigned int h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/**
 * Adds every thread's `sum` into `*out`: a warp-shuffle sum per warp, the warps' partial
 * sums added by the first warp, then one atomicAdd per block. Every thread of the block
 * must call it; blocks of a multiple of 32 threads, at most 1024. It may be called several
 * times in a row (it synchronises before reusing its shared slots).
 */
__device__ __forceinline__ void memtune_block_add(unsigned long long sum, unsigned long long* out)
{
    __shared__ unsigned long long partial[32];
    __syncthreads();
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

/**
 * Adds `term(i)` for every i in [0, n) into `*out`: a grid-stride loop (any grid), then
 * [`memtune_block_add`].
 */
template <typename Term>
__device__ __forceinline__ void memtune_grid_sum(unsigned long long n, Term term,
                                                 unsigned long long* out)
{
    unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long sum = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += threads) {
        sum += term(i);
    }
    memtune_block_add(sum, out);
}

/**
 * Cycle counter read after `p` has arrived: the volatile shared store consumes `p`, and a
 * warp issues in order, so the clock read cannot overtake the pending load.
 */
__device__ __forceinline__ long long memtune_clock_after(unsigned long long p)
{
    __shared__ volatile unsigned long long sink;
    sink = p;
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory");
    return t;
}

/**
 * The walk of a chase, by one thread: `warm_steps` untimed steps `p = step(p)` from `p`,
 * then `steps` timed ones. out[0] gets the cycles of the timed steps, out[1] where the
 * walk ended (a data sink that keeps the walk alive).
 */
template <typename P, typename Step>
__device__ __forceinline__ void memtune_timed_walk(P p, unsigned int warm_steps,
                                                   unsigned int steps, Step step,
                                                   unsigned long long* out)
{
    for (unsigned int i = 0; i < warm_steps; ++i) {
        p = step(p);
    }
    long long t0 = memtune_clock_after(p);
    for (unsigned int i = 0; i < steps; ++i) {
        p = step(p);
    }
    long long t1 = memtune_clock_after(p);
    out[0] = (unsigned long long)(t1 - t0);
    out[1] = p;
}
#endif

#endif /* MEMTUNE_PARAMS_H */
