/* Kernel parameters of tuned-app, shared by its CUDA sources and its Rust code (through
 * bindgen: src/params_ffi.rs is the committed copy for builds without libclang). */
#ifndef TUNED_PARAMS_H
#define TUNED_PARAMS_H

/* A 7-point stencil over an nx * ny * nz grid of floats (x fastest), zero outside. */
typedef struct tuned_stencil_params {
    unsigned int nx;
    unsigned int ny;
    unsigned int nz;
    float center;    /* weight of the cell itself */
    float neighbour; /* weight of each of its six neighbours */
} tuned_stencil_params;

/* One pass of TLB-scoped random sampling: each thread draws `reads` positions of the
 * region and adds the words at those inside this pass's scope. */
typedef struct tuned_sampling_params {
    unsigned long long n_words; /* 4-byte words in the region */
    unsigned long long seed;
    unsigned int reads; /* draws per thread */
    unsigned int pass;  /* the scope: words [pass * scope, (pass + 1) * scope) */
} tuned_sampling_params;

#endif
