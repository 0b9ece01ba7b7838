/* Batched small matrices across SIMD lanes (linalg_batched.c), against independent oracles:
 * cholesky: L L^T rebuilds A (in long double) and L equals LAPACK's potrf within rounding;
 * triangular solve: the same bits as triangular_solve_xla.c's per-matrix XLA algorithm;
 * getrf: the info of LAPACK's getrf, its pivots and factors on small matrices, P A = L U. Batch sizes leave
 * partial lane groups (17 = 16 + 1 for f32, 8 + 8 + 1 for f64). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/linalg_batched.h"
#include "runtime/kernels/triangular_solve_xla.h"

extern void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
extern void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);

enum { BATCH = 17 };

/* A deterministic SPD matrix: M M^T + n I. */
static void spd(double *a, int64_t n, int seed) {
  double *m = malloc(sizeof(double) * (size_t)(n * n));
  assert_non_null(m);
  for (int64_t i = 0; i < n * n; i++) m[i] = sin((double)(i * 7 + seed * 13) * 0.61) * 1.3;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = i == j ? (double)n : 0;
      for (int64_t k = 0; k < n; k++) s += m[i * n + k] * m[j * n + k];
      a[i * n + j] = s;
    }
  free(m);
}

static void test_cholesky_f64_rebuilds_and_matches_lapack(void **state) {
  (void)state;
  static const int64_t sizes[] = {1, 2, 4, 5, 8, 13, 32};
  for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
    int64_t n = sizes[c], nn = n * n;
    double *a = malloc(sizeof(double) * (size_t)(nn * BATCH)), *l = malloc(sizeof(double) * (size_t)(nn * BATCH));
    double *ref = malloc(sizeof(double) * (size_t)nn);
    assert_true(a && l && ref);
    for (int b = 0; b < BATCH; b++) spd(a + b * nn, n, b);
    assert_true(av_cholesky_batched_f64(true, a, l, n, BATCH));
    for (int b = 0; b < BATCH; b++) {
      const double *A = a + b * nn, *L = l + b * nn;
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
          if (j > i) assert_true(L[i * n + j] == 0);
          long double s = 0;
          for (int64_t k = 0; k < n; k++) s += (long double)L[i * n + k] * L[j * n + k];
          assert_true(fabsl(s - A[i * n + j]) <= 1e-13L * (long double)fabs(A[i * n + i]));
        }
      /* LAPACK (column-major 'U' of the row-major matrix is its lower factor) */
      memcpy(ref, A, sizeof(double) * (size_t)nn);
      int in = (int)n, info = 0;
      dpotrf_("U", &in, ref, &in, &info);
      assert_int_equal(info, 0);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) assert_true(fabs(ref[i * n + j] - L[i * n + j]) < 1e-12 * sqrt((double)n) * 4);
    }
    /* upper: reads the upper triangle, A = U^T U */
    assert_true(av_cholesky_batched_f64(false, a, l, n, BATCH));
    for (int b = 0; b < BATCH; b++)
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
          const double *U = l + b * nn;
          if (j < i) assert_true(U[i * n + j] == 0);
          long double s = 0;
          for (int64_t k = 0; k < n; k++) s += (long double)U[k * n + i] * U[k * n + j];
          assert_true(fabsl(s - a[b * nn + i * n + j]) <= 1e-13L * (long double)fabs(a[b * nn + i * n + i]));
        }
    free(a);
    free(l);
    free(ref);
  }
}

static void test_cholesky_f32_not_positive_definite_is_nan(void **state) {
  (void)state;
  enum { N = 3 };
  float a[BATCH * N * N], l[BATCH * N * N];
  for (int b = 0; b < BATCH; b++)
    for (int i = 0; i < N * N; i++) a[b * N * N + i] = i % (N + 1) == 0 ? (b == 5 ? -1.0f : 4.0f) : 0.0f;
  assert_true(av_cholesky_batched_f32(true, a, l, N, BATCH));
  for (int b = 0; b < BATCH; b++)
    for (int i = 0; i < N * N; i++) {
      if (b == 5) assert_true(isnan(l[b * N * N + i]));
      else assert_true(l[b * N * N + i] == (i % (N + 1) == 0 ? 2.0f : 0.0f));
    }
}

/* Every combination of side, triangle, transpose and unit diagonal: the same bits as the
 * per-matrix XLA algorithm. */
static void test_trsm_same_bits_as_per_matrix(void **state) {
  (void)state;
  static const int64_t sizes[] = {2, 3, 8, 31, 32, 45, 128}; /* 32 up: the block inversion */
  for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
    int64_t n = sizes[c], nn = n * n, m = n, nb = 3;
    for (int side = 0; side < 2; side++) {
      int64_t rows = side ? nb : m, cols = side ? n : nb, bn = rows * cols;
      float *a = malloc(sizeof(float) * (size_t)(nn * BATCH)), *b = malloc(sizeof(float) * (size_t)(bn * BATCH)),
            *x = malloc(sizeof(float) * (size_t)(bn * BATCH)), *y = malloc(sizeof(float) * (size_t)bn);
      assert_true(a && b && x && y);
      for (int64_t i = 0; i < nn * BATCH; i++) a[i] = (float)(cos((double)i * 0.37) + ((i % nn) % (n + 1) == 0 ? 3.0 : 0.0));
      for (int64_t i = 0; i < bn * BATCH; i++) b[i] = (float)sin((double)i * 0.23);
      for (int mode = 0; mode < 8; mode++) {
        av_triangular_solve_params p = {.left_side = !side, .lower = mode & 1, .unit_diagonal = (mode >> 1) & 1,
                                        .transpose_a = (mode >> 2) & 1 ? AV_TRANSPOSE_TRANSPOSE : AV_TRANSPOSE_NO_TRANSPOSE};
        assert_true(av_trsm_batched_applies(n, BATCH));
        assert_true(av_trsm_batched_f32(&p, a, b, x, n, rows, cols, BATCH));
        for (int bi = 0; bi < BATCH; bi++) {
          memcpy(y, b + bi * bn, sizeof(float) * (size_t)bn);
          assert_true(av_trsm_xla_f32(&p, a + bi * nn, n, y, rows, cols, BATCH));
          assert_memory_equal(y, x + bi * bn, sizeof(float) * (size_t)bn);
        }
      }
      free(a);
      free(b);
      free(x);
      free(y);
    }
  }
}

static void test_getrf_f64_matches_lapack(void **state) {
  (void)state;
  static const int64_t sizes[] = {1, 3, 4, 9, 32};
  for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
    int64_t n = sizes[c], nn = n * n;
    double *a = malloc(sizeof(double) * (size_t)(nn * BATCH)), *lu = malloc(sizeof(double) * (size_t)(nn * BATCH));
    int *ipiv = malloc(sizeof(int) * (size_t)(n * BATCH)), info[BATCH], rpiv[32];
    assert_true(a && lu && ipiv);
    for (int64_t i = 0; i < nn * BATCH; i++) a[i] = sin((double)i * 1.7 + 0.3) * (1 + (double)(i % 5));
    for (int64_t i = 0; i < nn; i++) a[3 * nn + i] = 0; /* a singular matrix: info = 1 */
    memcpy(lu, a, sizeof(double) * (size_t)(nn * BATCH));
    assert_true(av_getrf_batched_f64(lu, ipiv, info, n, BATCH));
    double *ref = malloc(sizeof(double) * (size_t)nn);
    assert_non_null(ref);
    for (int b = 0; b < BATCH; b++) {
      memcpy(ref, a + b * nn, sizeof(double) * (size_t)nn);
      int in = (int)n, rinfo = 0;
      dgetrf_(&in, &in, ref, &in, rpiv, &rinfo);
      assert_int_equal(info[b], rinfo);
      if (n <= 9) { /* larger matrices meet near-ties that rounding may decide either way */
        for (int64_t k = 0; k < n; k++) assert_int_equal(ipiv[b * n + k], rpiv[k]);
        for (int64_t i = 0; i < nn; i++) assert_true(fabs(ref[i] - lu[b * nn + i]) < 1e-12);
      }
      /* P A = L U, column-major, in long double */
      const double *A = a + b * nn, *F = lu + b * nn;
      int perm[32];
      for (int64_t i = 0; i < n; i++) perm[i] = (int)i;
      for (int64_t k = 0; k < n; k++) {
        int t = perm[k];
        perm[k] = perm[ipiv[b * n + k] - 1];
        perm[ipiv[b * n + k] - 1] = t;
      }
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
          long double s = 0;
          for (int64_t k = 0; k <= (i < j ? i : j); k++)
            s += (long double)(k == i ? 1.0 : F[i + k * n]) * F[k + j * n];
          assert_true(fabsl(s - A[perm[i] + j * n]) < 1e-12L * (long double)n);
        }
    }
    free(a);
    free(lu);
    free(ipiv);
    free(ref);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cholesky_f64_rebuilds_and_matches_lapack),
      cmocka_unit_test(test_cholesky_f32_not_positive_definite_is_nan),
      cmocka_unit_test(test_trsm_same_bits_as_per_matrix),
      cmocka_unit_test(test_getrf_f64_matches_lapack),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
