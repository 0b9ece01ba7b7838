/* batch_norm kernels against the textbook formulas evaluated here in long double, element by
 * element: training (batch mean, biased variance, normalised output), inference, and the
 * gradient, for the feature axis first after the batch (NCHW: runs of a plane), last (NHWC:
 * runs of one element) and in the middle, with run lengths that are not a multiple of the
 * kernel's four partial sums, in f32 and f64. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "runtime/kernels/batch_norm.h"
#include "test_kernels_util.h"

typedef struct shape {
  int rank;
  int64_t dims[4];
  int64_t feature;
} shape;

static const shape kShapes[] = {
    {4, {3, 5, 7, 9}, 1},  /* NCHW, planes of 63 */
    {4, {4, 6, 5, 6}, 3},  /* NHWC */
    {3, {2, 4, 11}, 1},    /* runs of 11 */
    {2, {13, 3}, 1},       /* features last, rank 2 */
};

static double val(const void *p, av_dtype t, int64_t i) {
  return t == AV_DT_F64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

static void put(void *p, av_dtype t, int64_t i, double v) {
  if (t == AV_DT_F64) ((double *)p)[i] = v;
  else ((float *)p)[i] = (float)v;
}

/* the feature of flat element e */
static int64_t feature_of(const shape *s, int64_t e) {
  int64_t inner = 1;
  for (int k = (int)s->feature + 1; k < s->rank; k++) inner *= s->dims[k];
  return e / inner % s->dims[s->feature];
}

static void check_close(const void *got, av_dtype t, int64_t i, long double want, const char *what) {
  double g = val(got, t, i), tol = t == AV_DT_F64 ? 1e-12 : 2e-6;
  if (!(fabs(g - (double)want) <= tol * (1 + fabsl(want))))
    fail_msg("%s[%lld] = %.17g, want %.17Lg", what, (long long)i, g, want);
}

static void run_case(const shape *s, av_dtype t) {
  int64_t n = 1, C = s->dims[s->feature];
  for (int k = 0; k < s->rank; k++) n *= s->dims[k];
  int64_t per = n / C;
  size_t es = t == AV_DT_F64 ? 8 : 4;
  void *x = malloc((size_t)n * es), *gy = malloc((size_t)n * es), *y = malloc((size_t)n * es);
  void *scale = malloc((size_t)C * es), *offset = malloc((size_t)C * es);
  void *mean = malloc((size_t)C * es), *var = malloc((size_t)C * es);
  void *g1 = malloc((size_t)C * es), *g2 = malloc((size_t)C * es);
  assert_true(x && gy && y && scale && offset && mean && var && g1 && g2);
  for (int64_t i = 0; i < n; i++) {
    put(x, t, i, sin((double)i * 0.71) * 2 + (double)feature_of(s, i));
    put(gy, t, i, cos((double)i * 0.37));
  }
  for (int64_t c = 0; c < C; c++) {
    put(scale, t, c, 0.5 + 0.25 * (double)c);
    put(offset, t, c, 0.1 * (double)c - 0.3);
  }
  long double *m = calloc((size_t)C, sizeof *m), *v = calloc((size_t)C, sizeof *v);
  assert_true(m && v);
  for (int64_t i = 0; i < n; i++) m[feature_of(s, i)] += val(x, t, i);
  for (int64_t c = 0; c < C; c++) m[c] /= per;
  for (int64_t i = 0; i < n; i++) {
    long double dd = val(x, t, i) - m[feature_of(s, i)];
    v[feature_of(s, i)] += dd * dd;
  }
  for (int64_t c = 0; c < C; c++) v[c] /= per;
  const double eps = 1e-3;
  av_batch_norm_params p = {AV_BN_TRAINING, eps, s->feature};
  int64_t cd[1] = {C};
  av_view in[5], out[3];
  in[0] = tk_view(x, t, s->rank, s->dims);
  in[1] = tk_view(scale, t, 1, cd);
  in[2] = tk_view(offset, t, 1, cd);
  out[0] = tk_view(y, t, s->rank, s->dims);
  out[1] = tk_view(mean, t, 1, cd);
  out[2] = tk_view(var, t, 1, cd);
  av_diag d;
  av_diag_init(&d);
  /* training */
  assert_int_equal(av_kernel_batch_norm(&p, in, out, &d), AV_OK);
  for (int64_t c = 0; c < C; c++) {
    check_close(mean, t, c, m[c], "batch mean");
    check_close(var, t, c, v[c], "batch variance");
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t c = feature_of(s, i);
    long double want = val(scale, t, c) * (val(x, t, i) - m[c]) / sqrtl(v[c] + eps) + val(offset, t, c);
    check_close(y, t, i, want, "training output");
  }
  /* inference with the batch statistics just computed */
  p.kind = AV_BN_INFERENCE;
  in[3] = tk_view(mean, t, 1, cd);
  in[4] = tk_view(var, t, 1, cd);
  assert_int_equal(av_kernel_batch_norm(&p, in, out, &d), AV_OK);
  for (int64_t i = 0; i < n; i++) {
    int64_t c = feature_of(s, i);
    long double mc = val(mean, t, c), vc = val(var, t, c);
    check_close(y, t, i, val(scale, t, c) * (val(x, t, i) - mc) / sqrtl(vc + eps) + val(offset, t, c),
                "inference output");
  }
  /* gradient: in x, scale, mean, variance, grad_y */
  p.kind = AV_BN_GRAD;
  in[2] = tk_view(mean, t, 1, cd);
  in[3] = tk_view(var, t, 1, cd);
  in[4] = tk_view(gy, t, s->rank, s->dims);
  out[1] = tk_view(g1, t, 1, cd);
  out[2] = tk_view(g2, t, 1, cd);
  assert_int_equal(av_kernel_batch_norm(&p, in, out, &d), AV_OK);
  long double *sg = calloc((size_t)C, sizeof *sg), *sgx = calloc((size_t)C, sizeof *sgx);
  assert_true(sg && sgx);
  for (int64_t i = 0; i < n; i++) {
    int64_t c = feature_of(s, i);
    long double sd = sqrtl((long double)val(var, t, c) + eps);
    sg[c] += val(gy, t, i);
    sgx[c] += val(gy, t, i) * (val(x, t, i) - val(mean, t, c)) / sd;
  }
  for (int64_t c = 0; c < C; c++) {
    check_close(g1, t, c, sgx[c], "grad scale");
    check_close(g2, t, c, sg[c], "grad offset");
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t c = feature_of(s, i);
    long double sd = sqrtl((long double)val(var, t, c) + eps);
    long double xh = (val(x, t, i) - val(mean, t, c)) / sd;
    long double want = val(scale, t, c) / sd * (val(gy, t, i) - sg[c] / per - xh * sgx[c] / per);
    check_close(y, t, i, want, "grad input");
  }
  free(sg);
  free(sgx);
  free(m);
  free(v);
  free(x);
  free(gy);
  free(y);
  free(scale);
  free(offset);
  free(mean);
  free(var);
  free(g1);
  free(g2);
}

static void test_layouts_against_formulas(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof kShapes / sizeof *kShapes; k++) {
    run_case(&kShapes[k], AV_DT_F32);
    run_case(&kShapes[k], AV_DT_F64);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layouts_against_formulas),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
