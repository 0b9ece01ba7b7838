/* Shared by the LAPACK routine files (lapack_factor.c, lapack_eigen.c). */
#ifndef ANVIL_RUNTIME_KERNELS_LAPACK_INTERNAL_H
#define ANVIL_RUNTIME_KERNELS_LAPACK_INTERNAL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/lapack.h"
#include "runtime/kernels/lapack_fns.h"

/* One call's buffers, already in the custom call's layouts. */
typedef struct lapack_ctx {
  const av_lapack_call *c;
  int ti;    /* 0 s, 1 d, 2 c, 3 z */
  size_t es; /* element size */
  size_t rs; /* size of the real type */
  void *const *in;
  void *const *out;
  av_diag *d;
  const av_lapack_fns *fns; /* routines replacing the linked ones, or NULL */
  struct av_thread_pool *pool; /* for the batched small-matrix routines; may be NULL */
} lapack_ctx;

/* The routine `name` (e.g. dgees) for this call. */
#define LAPACK_FN(x, name) AV_LAPACK((x)->fns, name)

static inline int64_t lapack_elems(const av_lapack_arg *a) {
  int64_t n = 1;
  for (int i = 0; i < a->rank; i++) n *= a->dims[i];
  return n;
}
static inline size_t lapack_bytes(const av_lapack_arg *a) {
  return (size_t)lapack_elems(a) * av_dtype_size(a->dtype);
}
static inline int lapack_ld(int64_t rows) { return rows > 1 ? (int)rows : 1; }
static inline int64_t lapack_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t lapack_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* Output k starts as a copy of input i (the routines work in place). */
static inline void lapack_copy_in(const lapack_ctx *x, uint32_t k, uint32_t i) {
  size_t nb = lapack_bytes(&x->c->in[i]);
  if (nb && x->out[k] != x->in[i]) memcpy(x->out[k], x->in[i], nb);
}

/* Zeroed scratch of n elements of size es (at least one element, so never NULL for n = 0);
 * NULL only when out of memory (reported into d). */
void *lapack_scratch(const lapack_ctx *x, int64_t n, size_t es);
/* Size from a workspace query's first element (real part), at least 1; -1 if too large. */
int lapack_work_size(const lapack_ctx *x, const void *query);
/* The buffer of element `i` of a batch with `step` elements per matrix. */
static inline char *lapack_at(void *base, int64_t i, int64_t step, size_t es) {
  return (char *)base + (size_t)(i * step) * es;
}

av_code lapack_run_factor(const lapack_ctx *x); /* potrf getrf geqrf geqp3 orgqr ormqr trsm gtsv */
av_code lapack_run_eigen(const lapack_ctx *x);  /* syevd gesdd gesvd geev gees gehrd sytrd */
av_code lapack_run_gtsv_perturbed(const lapack_ctx *x); /* lapack_gtsv_perturbed.c */

#endif
