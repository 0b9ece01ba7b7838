/* Accuracy of long f32/f64 sums in the reduce kernel. A naive running f32 sum of 1e6 copies
 * of tanh(1) ends ~1% low (754357.9 instead of 761594.2); the references here are computed
 * independently in double (closed form n*v, or a double loop over the same inputs). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

#include "runtime/kernels/reduce.h"
#include "test_kernels_util.h"

/* |got - want| <= rel * scale, scale = sum of |x| (the natural bound for a summation). */
static void assert_close(double got, double want, double scale, double rel) {
  if (!(fabs(got - want) <= rel * scale))
    fail_msg("sum %.9g, reference %.9g (scale %.6g, tolerance %.3g)", got, want, scale, rel * scale);
}

/* Deterministic values in [-1, 1) with a positive bias so the sums do not cancel. */
static float pseudo(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)((*state >> 8) * (1.0 / 16777216.0)) * 1.5f - 0.5f;
}

static av_code reduce_f32(float *x, int rank, int64_t *xd, int ndims, const int64_t *dims, float init,
                          float *out, int orank, int64_t *od) {
  av_view X = tk_view(x, AV_DT_F32, rank, xd), I = tk_view(&init, AV_DT_F32, 0, NULL);
  av_view O = tk_view(out, AV_DT_F32, orank, od);
  av_reduce_params p = {.ninputs = 1, .ndims = ndims, .body = tk_fn(tk_add_f32, AV_OP_ADD)};
  for (int i = 0; i < ndims; i++) p.dims[i] = dims[i];
  av_diag d;
  av_diag_init(&d);
  return av_kernel_reduce(&p, &X, &I, &O, &d);
}

/* 2 rows of 1e6 copies of tanh(1) along the last axis: closed form n*v. */
static void test_last_axis_constant(void **state) {
  (void)state;
  const int64_t n = 1000000;
  float *x = malloc(sizeof(float) * 2 * (size_t)n);
  assert_non_null(x);
  float v = tanhf(1.0f);
  for (int64_t i = 0; i < 2 * n; i++) x[i] = v;
  float out[2];
  int64_t xd[2] = {2, n}, od[1] = {2};
  assert_int_equal(reduce_f32(x, 2, xd, 1, (int64_t[]){1}, 0.0f, out, 1, od), AV_OK);
  for (int r = 0; r < 2; r++) assert_close(out[r], (double)n * (double)v, (double)n * v, 1e-6);
  free(x);
}

/* Leading axis reduced (kept inner axis): 200000 x 5, reduce axis 0; reference: double loop. */
static void test_leading_axis_random(void **state) {
  (void)state;
  const int64_t rows = 200000, cols = 5;
  float *x = malloc(sizeof(float) * (size_t)(rows * cols));
  assert_non_null(x);
  uint32_t st = 12345;
  for (int64_t i = 0; i < rows * cols; i++) x[i] = pseudo(&st);
  float out[5];
  int64_t xd[2] = {rows, cols}, od[1] = {cols};
  assert_int_equal(reduce_f32(x, 2, xd, 1, (int64_t[]){0}, 1.0f, out, 1, od), AV_OK);
  for (int64_t c = 0; c < cols; c++) {
    double ref = 1.0, scale = 1.0;
    for (int64_t r = 0; r < rows; r++) {
      ref += x[r * cols + c];
      scale += fabs(x[r * cols + c]);
    }
    assert_close(out[c], ref, scale, 1e-6);
  }
  free(x);
}

/* Outer and inner axes reduced, middle kept: [40, 3, 25000] over (0, 2); also the full
 * reduction of the same data to a scalar. */
static void test_outer_and_inner_axes(void **state) {
  (void)state;
  const int64_t a = 40, b = 3, c = 25000;
  float *x = malloc(sizeof(float) * (size_t)(a * b * c));
  assert_non_null(x);
  uint32_t st = 777;
  for (int64_t i = 0; i < a * b * c; i++) x[i] = pseudo(&st);
  float out[3];
  int64_t xd[3] = {a, b, c}, od[1] = {b};
  assert_int_equal(reduce_f32(x, 3, xd, 2, (int64_t[]){2, 0}, 0.0f, out, 1, od), AV_OK);
  double all = 0, all_scale = 0;
  for (int64_t j = 0; j < b; j++) {
    double ref = 0, scale = 0;
    for (int64_t i = 0; i < a; i++)
      for (int64_t k = 0; k < c; k++) {
        float v = x[(i * b + j) * c + k];
        ref += v;
        scale += fabs(v);
      }
    all += ref;
    all_scale += scale;
    assert_close(out[j], ref, scale, 1e-6);
  }
  float total;
  assert_int_equal(reduce_f32(x, 3, xd, 3, (int64_t[]){0, 1, 2}, 0.0f, &total, 0, NULL), AV_OK);
  assert_close(total, all, all_scale, 1e-6);
  free(x);
}

/* Signed zeros and non-finite values keep their IEEE meaning in the blocked sum. */
static void test_zeros_and_non_finite(void **state) {
  (void)state;
  enum { N = 1000 };
  float x[N], out;
  int64_t xd[1] = {N};
  for (int i = 0; i < N; i++) x[i] = -0.0f;
  assert_int_equal(reduce_f32(x, 1, xd, 1, (int64_t[]){0}, -0.0f, &out, 0, NULL), AV_OK);
  assert_true(out == 0.0f && signbit(out)); /* -0 + -0 + ... = -0 */
  x[700] = INFINITY;
  assert_int_equal(reduce_f32(x, 1, xd, 1, (int64_t[]){0}, 0.0f, &out, 0, NULL), AV_OK);
  assert_true(isinf(out) && out > 0);
  x[3] = -INFINITY;
  assert_int_equal(reduce_f32(x, 1, xd, 1, (int64_t[]){0}, 0.0f, &out, 0, NULL), AV_OK);
  assert_true(isnan(out));
  x[3] = 0;
  x[700] = NAN;
  assert_int_equal(reduce_f32(x, 1, xd, 1, (int64_t[]){0}, 0.0f, &out, 0, NULL), AV_OK);
  assert_true(isnan(out));
}

/* Rows of every length around the lane and block sizes, through the kernel and through the
 * rows groups' av_reduce_rows: both against a double loop, and bit-equal to each other (a row
 * group runs each member as it runs alone). A lost or doubled tail element fails the bound. */
static void test_short_and_odd_rows(void **state) {
  (void)state;
  static const int64_t lens[] = {1, 2, 15, 16, 17, 31, 32, 100, 128, 200, 255, 256, 257, 300, 529};
  enum { ROWS = 6 };
  for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
    int64_t len = lens[t];
    float *x = malloc(sizeof(float) * (size_t)(ROWS * len));
    assert_non_null(x);
    uint32_t st = 777u + (uint32_t)len;
    for (int64_t i = 0; i < ROWS * len; i++) x[i] = pseudo(&st);
    float kernel[ROWS], rows[ROWS], init = 0.25f;
    int64_t xd[2] = {ROWS, len}, od[1] = {ROWS};
    assert_int_equal(reduce_f32(x, 2, xd, 1, (int64_t[]){1}, init, kernel, 1, od), AV_OK);
    assert_true(av_reduce_rows(AV_OP_ADD, AV_DT_F32, x, ROWS, len, &init, rows));
    for (int r = 0; r < ROWS; r++) {
      double ref = init, scale = fabs(init);
      for (int64_t j = 0; j < len; j++) {
        ref += x[r * len + j];
        scale += fabs(x[r * len + j]);
      }
      assert_close(kernel[r], ref, scale, 1e-6);
      assert_memory_equal(&kernel[r], &rows[r], sizeof(float));
    }
    free(x);
  }
  /* a row of -0s sums to -0 through the lanes too */
  float z[128], out, init = -0.0f;
  for (int i = 0; i < 128; i++) z[i] = -0.0f;
  assert_true(av_reduce_rows(AV_OP_ADD, AV_DT_F32, z, 1, 128, &init, &out));
  assert_true(out == 0.0f && signbit(out));
}

/* f64: 1e6 copies of 0.1 along the last axis and 1e6 x 2 along the leading axis (a running
 * double sum there: ~1e-11 relative error). */
static void test_f64_long_sums(void **state) {
  (void)state;
  const int64_t n = 1000000;
  double *x = malloc(sizeof(double) * 2 * (size_t)n);
  assert_non_null(x);
  for (int64_t i = 0; i < 2 * n; i++) x[i] = 0.1;
  double init = 0, out[2];
  av_view X = tk_view(x, AV_DT_F64, 2, (int64_t[]){2, n}), I = tk_view(&init, AV_DT_F64, 0, NULL);
  av_view O = tk_view(out, AV_DT_F64, 1, (int64_t[]){2});
  av_reduce_params p = {.ninputs = 1, .ndims = 1, .dims = {1}, .body = tk_fn(NULL, AV_OP_ADD)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_OK);
  for (int r = 0; r < 2; r++) assert_close(out[r], 100000.0, 100000.0, 1e-11);
  X = tk_view(x, AV_DT_F64, 2, (int64_t[]){n, 2});
  p.dims[0] = 0;
  assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_OK);
  for (int r = 0; r < 2; r++) assert_close(out[r], 100000.0, 100000.0, 1e-10);
  free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_last_axis_constant),
      cmocka_unit_test(test_leading_axis_random),
      cmocka_unit_test(test_outer_and_inner_axes),
      cmocka_unit_test(test_zeros_and_non_finite),
      cmocka_unit_test(test_short_and_odd_rows),
      cmocka_unit_test(test_f64_long_sums),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
