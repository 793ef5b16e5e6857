/* 10^8 u64 addresses, 64 B apart, uniform over 12.5 M lines (xorshift64*): a trace of about
   12 M distinct items for timing exact-gpu. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
int main(int argc, char** argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], 0, 10) : 100000000ull, items = 12500000ull, x = 0x9e3779b97f4a7c15ull;
    FILE* f = fopen(argc > 2 ? argv[2] : "/tmp/t.u64", "wb");
    if (!f) return 1;
    uint64_t buf[1 << 16];
    for (uint64_t i = 0; i < n;) {
        size_t k = 0;
        for (; k < (1u << 16) && i < n; k++, i++) {
            x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
            buf[k] = 0x7f0000000000ull + ((x * 0x2545f4914f6cdd1dull) % items) * 64;
        }
        if (fwrite(buf, 8, k, f) != k) return 1;
    }
    return fclose(f);
}
