/* Batches of small real matrices (n <= AV_BATCHED_MAX_N) computed across SIMD lanes: lane l of
 * every vector belongs to matrix l of a group of 16 (f32) or 8 (f64), so one pass of plain
 * vector arithmetic factors or solves the whole group, with no call per matrix. Matrices are
 * row-major [batch, n, n]. */
#ifndef ANVIL_RUNTIME_KERNELS_LINALG_BATCHED_H
#define ANVIL_RUNTIME_KERNELS_LINALG_BATCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels/linalg.h"

enum {
  AV_BATCHED_MAX_N = 32,
  /* LU with partial pivoting across lanes pays a per-lane row exchange at every step; above
   * this size one LAPACK getrf per matrix (batches split over the pool) is faster: 512 32x32
   * f32 LUs take 2.2 ms that way against 3.9 ms across lanes, 1024 24x24 2.3 against 3.8;
   * at 16 the lanes win slightly, at 12 and below clearly (AMD Zen 4, 2 threads). */
  AV_BATCHED_GETRF_MAX_N = 16,
};

/* Cholesky of each matrix (the `lower` triangle read, the other result triangle zero); a
 * matrix that is not positive definite becomes all NaN, as in av_kernel_cholesky. False when
 * out of memory. */
bool av_cholesky_batched_f32(bool lower, const float *a, float *out, int64_t n, int64_t batch);
bool av_cholesky_batched_f64(bool lower, const double *a, double *out, int64_t n, int64_t batch);

/* XLA:CPU's triangular solve (triangular_solve_xla.c): direct substitution for n < 32, the
 * inversion of the one diagonal block up to n = 128, the same operations in the same order
 * per matrix, so the same bits: b is [batch, m, nb], a [batch, n, n], out like b. Only for
 * batches XLA expands that way: av_trsm_batched_applies. */
bool av_trsm_batched_applies(int64_t n, int64_t batch);
bool av_trsm_batched_f32(const av_triangular_solve_params *p, const float *a, const float *b,
                         float *out, int64_t n, int64_t m, int64_t nb, int64_t batch);
bool av_trsm_batched_f64(const av_triangular_solve_params *p, const double *a, const double *b,
                         double *out, int64_t n, int64_t m, int64_t nb, int64_t batch);

/* LAPACK getrf on each n x n matrix (column-major storage, as the custom call holds it), in
 * place: partial pivoting by the first largest magnitude, ipiv 1-based (n per matrix), info
 * the first zero pivot (1-based) or 0. */
bool av_getrf_batched_f32(float *a, int *ipiv, int *info, int64_t n, int64_t batch);
bool av_getrf_batched_f64(double *a, int *ipiv, int *info, int64_t n, int64_t batch);

/* LAPACK syevd on each n x n symmetric matrix (column-major, the `lower` or upper triangle
 * read) by cyclic Jacobi: ascending eigenvalues into w (n per matrix), the eigenvectors (when
 * `vectors`) as the columns of a, info 0. Groups of matrices run on `pool` (may be NULL). */
struct av_thread_pool;
bool av_syevd_batched_f32(bool lower, bool vectors, float *a, float *w, int *info, int64_t n,
                          int64_t batch, struct av_thread_pool *pool);
bool av_syevd_batched_f64(bool lower, bool vectors, double *a, double *w, int *info, int64_t n,
                          int64_t batch, struct av_thread_pool *pool);

#endif
