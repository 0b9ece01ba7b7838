#include "runtime/kernels/householder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double load(const void *p, int64_t i, bool f64) {
  return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}
static void store(void *p, int64_t i, double v, bool f64) {
  if (f64) ((double *)p)[i] = v;
  else ((float *)p)[i] = (float)v;
}

static bool real_float(av_dtype t) { return t == AV_DT_F32 || t == AV_DT_F64; }

av_code av_kernel_qr(const av_view *a, av_view *out, av_view *taus, av_diag *d) {
  int r = a->rank;
  if (r < 2 || !real_float(a->dtype) || out->dtype != a->dtype || taus->dtype != a->dtype ||
      out->rank != r || taus->rank != r - 1)
    return av_diag_set(d, AV_UNIMPLEMENTED, "Qr: real f32/f64 matrices only");
  int64_t m = a->dims[r - 2], n = a->dims[r - 1], k = m < n ? m : n, batch = 1;
  for (int i = 0; i < r - 2; i++) {
    if (out->dims[i] != a->dims[i] || taus->dims[i] != a->dims[i])
      return av_diag_set(d, AV_INVALID_ARGUMENT, "Qr: batch dimensions differ");
    batch *= a->dims[i];
  }
  if (out->dims[r - 2] != m || out->dims[r - 1] != n || taus->dims[r - 2] != k)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "Qr: result shapes do not match");
  bool f64 = a->dtype == AV_DT_F64;
  double *w = malloc((size_t)(m * n + n + 1) * sizeof *w);
  if (!w) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "Qr: out of memory");
  double *tmp = w + m * n;
  for (int64_t b = 0; b < batch; b++) {
    for (int64_t i = 0; i < m * n; i++) w[i] = load(a->data, b * m * n + i, f64);
    for (int64_t j = 0; j < k; j++) {
      double alpha = w[j * n + j], xnorm = 0;
      for (int64_t i = j + 1; i < m; i++) xnorm = hypot(xnorm, w[i * n + j]);
      double tau = 0;
      if (xnorm != 0) {
        double beta = -copysign(hypot(alpha, xnorm), alpha);
        tau = (beta - alpha) / beta;
        double scale = 1.0 / (alpha - beta);
        for (int64_t i = j + 1; i < m; i++) w[i * n + j] *= scale;
        w[j * n + j] = beta;
        /* apply H = I - tau v v^T to the trailing columns */
        for (int64_t c = j + 1; c < n; c++) {
          double s = w[j * n + c];
          for (int64_t i = j + 1; i < m; i++) s += w[i * n + j] * w[i * n + c];
          tmp[c] = tau * s;
        }
        for (int64_t c = j + 1; c < n; c++) {
          w[j * n + c] -= tmp[c];
          for (int64_t i = j + 1; i < m; i++) w[i * n + c] -= w[i * n + j] * tmp[c];
        }
      }
      store(taus->data, b * k + j, tau, f64);
    }
    for (int64_t i = 0; i < m * n; i++) store(out->data, b * m * n + i, w[i], f64);
  }
  free(w);
  return AV_OK;
}

av_code av_kernel_householder_product(const av_view *a, const av_view *taus, av_view *out,
                                      av_diag *d) {
  int r = a->rank;
  if (r < 2 || !real_float(a->dtype) || out->dtype != a->dtype || taus->dtype != a->dtype ||
      out->rank != r || taus->rank != r - 1)
    return av_diag_set(d, AV_UNIMPLEMENTED,
                       "ProductOfElementaryHouseholderReflectors: real f32/f64 matrices only");
  int64_t m = a->dims[r - 2], n = a->dims[r - 1], k = taus->dims[r - 2], batch = 1;
  for (int i = 0; i < r - 2; i++) {
    if (out->dims[i] != a->dims[i] || taus->dims[i] != a->dims[i])
      return av_diag_set(d, AV_INVALID_ARGUMENT, "Householder product: batch dimensions differ");
    batch *= a->dims[i];
  }
  if (out->dims[r - 2] != m || out->dims[r - 1] != n || k > n || k > m)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "Householder product: shapes do not match");
  bool f64 = a->dtype == AV_DT_F64;
  double *q = malloc((size_t)(m * n + n + 1) * sizeof *q);
  if (!q) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "Householder product: out of memory");
  double *tmp = q + m * n;
  const char *av = a->data;
  for (int64_t b = 0; b < batch; b++) {
    /* Q starts as the first n columns of the identity; reflectors apply from the last */
    for (int64_t i = 0; i < m; i++)
      for (int64_t c = 0; c < n; c++) q[i * n + c] = i == c ? 1.0 : 0.0;
    for (int64_t j = k - 1; j >= 0; j--) {
      double tau = load(taus->data, b * k + j, f64);
      if (tau == 0) continue;
      for (int64_t c = j; c < n; c++) {
        double s = q[j * n + c];
        for (int64_t i = j + 1; i < m; i++) s += load(av, b * m * n + i * n + j, f64) * q[i * n + c];
        tmp[c] = tau * s;
      }
      for (int64_t c = j; c < n; c++) {
        q[j * n + c] -= tmp[c];
        for (int64_t i = j + 1; i < m; i++) q[i * n + c] -= load(av, b * m * n + i * n + j, f64) * tmp[c];
      }
    }
    for (int64_t i = 0; i < m * n; i++) store(out->data, b * m * n + i, q[i], f64);
  }
  free(q);
  return AV_OK;
}
