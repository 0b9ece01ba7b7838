/* The one header through which the runtime calls generated code (src/codegen/ builds it; the
 * compiler stores it in the plan). The runtime knows nothing else of code generation.
 *
 * A generated fused region is a function over a run of elements: every register of the fused
 * step (av_fused_params.regs) has a pointer in `ptr`:
 *   - IN, BOX and OUT registers: the register's element at the run's first element (for BOX,
 *     a gathered tile of the run, as the interpreter gathers it);
 *   - SCALAR registers: the one value;
 *   - TEMP registers: unused (NULL).
 * `n` is a positive multiple of the kernel's `lanes`: the caller runs any remainder on padded
 * copies (av_fused_gen_range in runtime/steps_fused.c), so generated code never reads or writes
 * past n elements of a pointer. `index0` is the run's first element within the whole array
 * (for iota values the region computes instead of reading). */
#ifndef ANVIL_RUNTIME_CODEGEN_ABI_H
#define ANVIL_RUNTIME_CODEGEN_ABI_H

#include <stdint.h>

typedef struct av_cg_args {
  void *const *ptr;
  int64_t n;
  int64_t index0;
} av_cg_args;

typedef void (*av_cg_entry)(const av_cg_args *a);

typedef struct av_cg_kernel {
  av_cg_entry entry;
  int lanes;        /* elements per iteration; n is a multiple of it */
  const char *isa;  /* "avx512", "avx2": for listings and anvil-check */
} av_cg_kernel;

/* A generated reduction nest (runtime/steps_nest.c): out[v, k] = init + the sum over r of an
 * expression of v, r and k, for one block of `lanes` consecutive v (v0, v0 + 1, ...; lanes
 * past the last v compute the last v again). `ptr` has the nest's inputs; `out` receives the
 * block's results k-major (out[k * lanes + lane], f32); `nr` is the reduced axis's extent. */
typedef struct av_cg_nest_args {
  const void *const *ptr;
  float *out;
  int64_t v0, vlast, nr;
} av_cg_nest_args;

typedef void (*av_cg_nest_entry)(const av_cg_nest_args *a);

typedef struct av_cg_nest_kernel {
  av_cg_nest_entry entry;
  int lanes;
  const char *isa;
} av_cg_nest_kernel;

#endif
