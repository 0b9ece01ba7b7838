/* batch_norm_inference / _training / _grad. Everything is computed in double: per feature,
 * the sums (of x, of squared deviations, of grad_y and grad_y * (x - mean)) over the elements
 * of that feature, then one pass applying per-feature constants. The array is walked as
 * runs: for each outer index and feature, `inner` contiguous elements (NCHW: a plane; NHWC:
 * one element, and the feature loop is then the contiguous one). Sums over a run go to four
 * partial sums, so the loops vectorise; the per-element work has no square root or division
 * (a PyTorch CNN's BatchNorm backward over 32x32x32x32 took 12 ms with them). */
#include "runtime/kernels/batch_norm.h"

#include <math.h>
#include <stdlib.h>

#include "runtime/kernels/simd_clones.h"

/* The walk: the body (variadic: it has commas) with run offset e and feature c, every run. */
#define FOR_RUNS(...)                          \
  for (int64_t o = 0; o < outer; o++)          \
    for (int64_t c = 0; c < C; c++) {          \
      int64_t e = (o * C + c) * inner;         \
      __VA_ARGS__;                             \
    }

#define BN_KERNELS(T, SUF)                                                                   \
  /* s1[c] += sum of x (sq: of (x - mean[c])^2) over the feature's elements */              \
  AV_CLONES static void sums_##SUF(const T *x, const double *mean, bool sq, int64_t outer,   \
                                   int64_t C, int64_t inner, double *s1) {                   \
    FOR_RUNS({                                                                               \
      const T *r = x + e;                                                                    \
      double m = mean ? mean[c] : 0, p[4] = {0, 0, 0, 0};                                    \
      int64_t i = 0;                                                                         \
      for (; i + 4 <= inner; i += 4)                                                         \
        for (int q = 0; q < 4; q++) {                                                        \
          double t = (double)r[i + q] - m;                                                   \
          p[q] += sq ? t * t : t;                                                            \
        }                                                                                    \
      for (; i < inner; i++) {                                                               \
        double t = (double)r[i] - m;                                                         \
        p[0] += sq ? t * t : t;                                                              \
      }                                                                                      \
      s1[c] += (p[0] + p[1]) + (p[2] + p[3]);                                                \
    })                                                                                       \
  }                                                                                          \
  /* gsum[c] += sum of grad_y, gdev[c] += sum of grad_y * (x - mean[c]) */                   \
  AV_CLONES static void grad_sums_##SUF(const T *x, const T *gy, const double *mean,         \
                                        int64_t outer, int64_t C, int64_t inner,             \
                                        double *gsum, double *gdev) {                        \
    FOR_RUNS({                                                                               \
      const T *r = x + e, *g = gy + e;                                                       \
      double m = mean[c], a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};                          \
      int64_t i = 0;                                                                         \
      for (; i + 4 <= inner; i += 4)                                                         \
        for (int q = 0; q < 4; q++) {                                                        \
          a[q] += (double)g[i + q];                                                          \
          b[q] += (double)g[i + q] * ((double)r[i + q] - m);                                 \
        }                                                                                    \
      for (; i < inner; i++) {                                                               \
        a[0] += (double)g[i];                                                                \
        b[0] += (double)g[i] * ((double)r[i] - m);                                           \
      }                                                                                      \
      gsum[c] += (a[0] + a[1]) + (a[2] + a[3]);                                              \
      gdev[c] += (b[0] + b[1]) + (b[2] + b[3]);                                              \
    })                                                                                       \
  }                                                                                          \
  /* y = mul[c] * (x - mean[c]) + add[c], or with gy: mul[c] * (gy - add[c] - k[c] (x -    \
   * mean[c])) (the input gradient) */                                                       \
  AV_CLONES static void apply_##SUF(const T *x, const T *gy, const double *mean,             \
                                    const double *mul, const double *add, const double *k,   \
                                    int64_t outer, int64_t C, int64_t inner, T *y) {         \
    FOR_RUNS({                                                                               \
      const T *r = x + e;                                                                    \
      T *w = y + e;                                                                          \
      double m = mean[c], a = mul[c], b = add[c];                                            \
      if (gy) {                                                                              \
        const T *g = gy + e;                                                                 \
        double kk = k[c];                                                                    \
        for (int64_t i = 0; i < inner; i++)                                                  \
          w[i] = (T)(a * ((double)g[i] - b - kk * ((double)r[i] - m)));                      \
      } else {                                                                               \
        for (int64_t i = 0; i < inner; i++) w[i] = (T)(a * ((double)r[i] - m) + b);          \
      }                                                                                      \
    })                                                                                       \
  }

BN_KERNELS(float, f32)
BN_KERNELS(double, f64)

static double ld(const av_view *v, int64_t i) {
  return v->dtype == AV_DT_F64 ? ((const double *)v->data)[i] : ((const float *)v->data)[i];
}
static void st(av_view *v, int64_t i, double x) {
  if (v->dtype == AV_DT_F64) ((double *)v->data)[i] = x;
  else ((float *)v->data)[i] = (float)x;
}

av_code av_kernel_batch_norm(const av_batch_norm_params *p, const av_view *in, av_view *out,
                             av_diag *d) {
  const av_view *x = &in[0];
  int r = x->rank;
  int64_t f = p->feature_index;
  if (f < 0 || f >= r || (x->dtype != AV_DT_F32 && x->dtype != AV_DT_F64))
    return av_diag_set(d, AV_UNIMPLEMENTED, "batch_norm: f32/f64 with a valid feature_index only");
  int64_t C = x->dims[f], inner = 1, outer = 1;
  for (int k = (int)f + 1; k < r; k++) inner *= x->dims[k];
  for (int k = 0; k < f; k++) outer *= x->dims[k];
  int64_t n = outer * inner; /* elements per feature */
  int nvec = p->kind == AV_BN_TRAINING ? 2 : p->kind == AV_BN_GRAD ? 3 : 4;
  if (p->kind == AV_BN_GRAD) {
    bool same = in[4].rank == r && in[4].dtype == x->dtype;
    for (int k = 0; same && k < r; k++) same = in[4].dims[k] == x->dims[k];
    if (!same) return av_diag_set(d, AV_INVALID_ARGUMENT, "batch_norm_grad: grad_output shape differs");
  }
  for (int i = 1; i <= nvec; i++)
    if (in[i].rank != 1 || in[i].dims[0] != C || in[i].dtype != x->dtype)
      return av_diag_set(d, AV_INVALID_ARGUMENT, "batch_norm: per-feature operands must be [%lld]",
                         (long long)C);
  double *acc = calloc((size_t)(6 * C + 1), sizeof *acc);
  if (!acc) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "batch_norm: out of memory");
  double *mean = acc, *var = acc + C, *s1 = acc + 2 * C, *s2 = acc + 3 * C;
  double *mul = acc + 4 * C, *add = acc + 5 * C;
  bool f64 = x->dtype == AV_DT_F64;
  double nn = n ? (double)n : 1;
  if (p->kind == AV_BN_TRAINING) {
    if (f64) sums_f64(x->data, NULL, false, outer, C, inner, mean);
    else sums_f32(x->data, NULL, false, outer, C, inner, mean);
    for (int64_t c = 0; c < C; c++) mean[c] /= nn;
    if (f64) sums_f64(x->data, mean, true, outer, C, inner, var);
    else sums_f32(x->data, mean, true, outer, C, inner, var);
    for (int64_t c = 0; c < C; c++) var[c] /= nn;
  } else {
    int mi = p->kind == AV_BN_INFERENCE ? 3 : 2;
    for (int64_t c = 0; c < C; c++) {
      mean[c] = ld(&in[mi], c);
      var[c] = ld(&in[mi + 1], c);
    }
  }
  if (p->kind == AV_BN_GRAD) {
    /* grad_scale = sum gy * xhat = s1 / sd, grad_offset = sum gy = s2;
     * grad_x = scale / sd * (gy - s2 / n - xhat * grad_scale / n), xhat = (x - mean) / sd */
    if (f64) grad_sums_f64(x->data, in[4].data, mean, outer, C, inner, s2, s1);
    else grad_sums_f32(x->data, in[4].data, mean, outer, C, inner, s2, s1);
    double *k = var; /* var is read for the last time here */
    for (int64_t c = 0; c < C; c++) {
      double sd = sqrt(var[c] + p->epsilon);
      s1[c] /= sd;
      mul[c] = ld(&in[1], c) / sd;
      add[c] = s2[c] / nn;
      k[c] = s1[c] / (nn * sd);
    }
    if (f64) apply_f64(x->data, in[4].data, mean, mul, add, k, outer, C, inner, out[0].data);
    else apply_f32(x->data, in[4].data, mean, mul, add, k, outer, C, inner, out[0].data);
    for (int64_t c = 0; c < C; c++) {
      st(&out[1], c, s1[c]);
      st(&out[2], c, s2[c]);
    }
  } else {
    for (int64_t c = 0; c < C; c++) {
      mul[c] = ld(&in[1], c) / sqrt(var[c] + p->epsilon);
      add[c] = ld(&in[2], c);
    }
    if (f64) apply_f64(x->data, NULL, mean, mul, add, NULL, outer, C, inner, out[0].data);
    else apply_f32(x->data, NULL, mean, mul, add, NULL, outer, C, inner, out[0].data);
    if (p->kind == AV_BN_TRAINING)
      for (int64_t c = 0; c < C; c++) {
        st(&out[1], c, mean[c]);
        st(&out[2], c, var[c]);
      }
  }
  free(acc);
  return AV_OK;
}
