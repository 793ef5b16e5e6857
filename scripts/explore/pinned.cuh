// Pinned-memory suites of scripts/explore/kernels.cu (included there after the stencil and
// sampling suites, whose helpers and globals they use): random atomics and zero-copy
// sampling over mapped pinned host memory.
#pragma once

// ---------------------------------------------------------------- pinned atomics --------

// Random atomicAdd(+1) into a region: the grouping insert's count update, on device memory
// or on mapped pinned host memory (a table too large for the device).
__global__ void random_atomic(unsigned* data, unsigned long long n_words, unsigned reads,
                              unsigned long long seed)
{
    unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long x = seed ^ (t * 0x9e3779b97f4a7c15ull);
    for (unsigned r = 0; r < reads; ++r) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        atomicAdd(&data[__umul64hi(x, n_words)], 1u);
    }
}

static void pinned_atomic_suite()
{
    int dev = 0, native = 0, can_map = 0;
    CK(cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, dev));
    CK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, dev));
    printf("atomics: hostNativeAtomicSupported=%d canMapHostMemory=%d\n", native, can_map);
    unsigned blocks = g_sms * 4, threads = blocks * 256;
    for (int pinned = 0; pinned < 2; ++pinned) {
        for (size_t region : {(size_t)1 << 20, (size_t)4 << 20, (size_t)16 << 20, (size_t)64 << 20,
                              (size_t)256 << 20, (size_t)1 << 30, (size_t)4 << 30}) {
          // 16 updates a thread (the first look), and the probe's 64 (its atomic curve's shape).
          for (unsigned reads : {16u, 64u}) {
            if (!pinned && reads == 16) continue;
            unsigned* host = nullptr;
            unsigned* data = nullptr;
            if (pinned) {
                CK(cudaHostAlloc((void**)&host, region, cudaHostAllocMapped));
                CK(cudaHostGetDevicePointer((void**)&data, host, 0));
            } else {
                CK(cudaMalloc(&data, region));
            }
            CK(cudaMemset(data, 0, region));
            CK(cudaDeviceSynchronize());
            random_atomic<<<blocks, 256>>>(data, region / 4, reads, 99);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            unsigned long long total = 0;
            std::vector<unsigned> h;
            const unsigned* words = host;
            if (!pinned) {
                h.resize(region / 4);
                CK(cudaMemcpy(h.data(), data, region, cudaMemcpyDeviceToHost));
                words = h.data();
            }
            for (size_t i = 0; i < region / 4; ++i) total += words[i];
            unsigned long long want = (unsigned long long)threads * reads;
            float ms = median_ms([&] { random_atomic<<<blocks, 256>>>(data, region / 4, reads, 99); }, 5);
            printf("atomics %-6s %6zu MiB %2u a thread: %8.3f ms for %llu atomicAdd, %7.3f G/s, counts %s (%llu of %llu)\n",
                   pinned ? "pinned" : "device", region >> 20, reads, ms, want, want / (ms * 1e6),
                   total == want ? "exact" : "WRONG", total, want);
            fflush(stdout);
            if (pinned) CK(cudaFreeHost(host)); else CK(cudaFree(data));
          }
        }
    }
}

// ---------------------------------------------------------------- zero-copy sampling ----

// Nonzero words from the index: the probe fills its buffer on the GPU like this.
__global__ void fill_words(unsigned* a, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long h = (i + 1) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 31;
        a[i] = (unsigned)(h >> 32) | 1u;
    }
}

// Why does one unscoped pass over 128-512 MiB of mapped pinned memory run slower in the
// benchmark than in the probe's curve, and slower than passes of 16-64 MiB scopes? Times
// memtune's sampling structure (unroll 8, 4 blocks of 256 a SM, 16 reads a thread) over:
// 8 GiB buffers filled by the CPU (random words; copies of one 64 MiB block, as the
// benchmark's) or by the GPU (as the probe's), then rewritten by the other side; regions at
// the start and 4 GiB in; buffers of exactly the region. With scopes, with 8 and 32 reads a
// thread (pressure on the link), and one pass again at the end.
static void pinned_sampling_suite()
{
    const size_t big = 8ull << 30;
    unsigned long long* sum;
    CK(cudaMalloc(&sum, 8));
    auto alloc = [](size_t bytes, unsigned** host, unsigned** dev) {
        CK(cudaHostAlloc((void**)host, bytes, cudaHostAllocMapped));
        CK(cudaHostGetDevicePointer((void**)dev, *host, 0));
    };
    auto cpu_fill = [](unsigned* h, size_t words) {
        unsigned long long x = 0x5a3b;
        for (size_t i = 0; i < words; ++i) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            h[i] = (unsigned)((x * 0x2545f4914f6cdd1dull) >> 32) | 1u;
        }
    };
    unsigned blocks = g_sms * 4;
    double threads = (double)blocks * 256;
    // Times `passes` scopes over `n` words at `data`; checks the sum against 1 pass.
    auto time = [&](const char* buf, unsigned* data, size_t off_mib, unsigned long long n,
                    int passes, unsigned reads, unsigned long long* want) {
        unsigned long long scope = (n + passes - 1) / passes;
        auto run = [&] {
            for (int k = 0; k < passes; ++k) {
                SP p{n, 0x5eedull, k * scope, std::min(n, (k + 1) * scope), reads};
                sampling<8><<<blocks, 256>>>(data, sum, p);
            }
        };
        CK(cudaMemset(sum, 0, 8));
        run();
        CK(cudaGetLastError());
        unsigned long long got;
        CK(cudaMemcpy(&got, sum, 8, cudaMemcpyDeviceToHost));
        if (*want == 0) *want = got;
        float ms = median_ms(run, 9);
        printf("zero-copy %-10s +%4zu MiB %4llu MiB p=%-2d r=%-2u %7.3f ms %6.3f Gread/s %s\n",
               buf, off_mib, (n * 4) >> 20, passes, reads, ms, threads * reads / (ms * 1e6),
               got == *want ? "ok" : (reads == 16 ? "SUM-MISMATCH" : "(other stream)"));
        fflush(stdout);
    };
    // One region: 1 pass, scopes, other pressures, and 1 pass again.
    auto region_set = [&](const char* buf, unsigned* base, size_t off_mib, size_t mib) {
        unsigned* data = base + (off_mib << 18);
        unsigned long long n = (unsigned long long)mib << 18, want = 0, other = 0;
        time(buf, data, off_mib, n, 1, 16, &want);
        for (int p : {2, 4, 8})
            if (mib / p >= 16) time(buf, data, off_mib, n, p, 16, &want);
        time(buf, data, off_mib, n, 1, 8, &other);
        other = 0;
        time(buf, data, off_mib, n, 1, 32, &other);
        time(buf, data, off_mib, n, 1, 16, &want);
    };
    // Three 8 GiB buffers: CPU-written random words, GPU-written words, and CPU-written
    // copies of one 64 MiB block (the benchmark's buffer); then each rewritten by the other
    // side, and timed again.
    const size_t block = 16u << 20;
    auto cpu_periodic = [&](unsigned* h, size_t words) {
        cpu_fill(h, block);
        for (size_t at = block; at < words; at += block)
            memcpy(h + at, h, std::min(block, words - at) * 4);
    };
    auto gpu_fill = [&](unsigned* d, size_t words) {
        fill_words<<<4096, 256>>>(d, words);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    };
    unsigned *h_cpu, *d_cpu, *h_gpu, *d_gpu, *h_per, *d_per;
    alloc(big, &h_cpu, &d_cpu);
    cpu_fill(h_cpu, big / 4);
    alloc(big, &h_gpu, &d_gpu);
    gpu_fill(d_gpu, big / 4);
    alloc(big, &h_per, &d_per);
    cpu_periodic(h_per, big / 4);
    for (size_t mib : {64, 128, 256, 512}) {
        region_set("cpu-filled", d_cpu, 0, mib);
        region_set("gpu-filled", d_gpu, 0, mib);
        region_set("cpu-64MiB", d_per, 0, mib);
        region_set("cpu-filled", d_cpu, 4096, mib);
    }
    gpu_fill(d_cpu, big / 4);
    cpu_fill(h_gpu, big / 4);
    gpu_fill(d_per, big / 4);
    for (size_t mib : {64, 128, 256}) {
        region_set("cpu>gpu", d_cpu, 0, mib);
        region_set("gpu>cpu", d_gpu, 0, mib);
        region_set("64MiB>gpu", d_per, 0, mib);
    }
    CK(cudaFreeHost(h_cpu));
    CK(cudaFreeHost(h_gpu));
    CK(cudaFreeHost(h_per));
    for (size_t mib : {128, 256}) {
        unsigned *h, *d;
        alloc(mib << 20, &h, &d);
        cpu_fill(h, (mib << 20) / 4);
        region_set("exact", d, 0, mib);
        CK(cudaFreeHost(h));
    }
    CK(cudaFree(sum));
}

