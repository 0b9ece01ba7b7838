#include "runtime/kernels/batch_norm.h"

#include <math.h>
#include <stdlib.h>

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
  double *acc = calloc((size_t)(4 * C + 1), sizeof *acc);
  if (!acc) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "batch_norm: out of memory");
  double *mean = acc, *var = acc + C, *g1 = acc + 2 * C, *g2 = acc + 3 * C;
#define FOR_ALL(body)                                                                      \
  for (int64_t o = 0; o < outer; o++)                                                      \
    for (int64_t c = 0; c < C; c++)                                                        \
      for (int64_t i = 0; i < inner; i++) {                                                \
        int64_t e = (o * C + c) * inner + i;                                               \
        body;                                                                              \
      }
  if (p->kind == AV_BN_TRAINING) {
    FOR_ALL(mean[c] += ld(x, e));
    for (int64_t c = 0; c < C; c++) mean[c] = n ? mean[c] / (double)n : 0;
    FOR_ALL(double t = ld(x, e) - mean[c]; var[c] += t * t);
    for (int64_t c = 0; c < C; c++) var[c] = n ? var[c] / (double)n : 0;
  } else {
    int mi = p->kind == AV_BN_INFERENCE ? 3 : 2;
    for (int64_t c = 0; c < C; c++) {
      mean[c] = ld(&in[mi], c);
      var[c] = ld(&in[mi + 1], c);
    }
  }
  if (p->kind == AV_BN_GRAD) {
    const av_view *gy = &in[4];
    FOR_ALL(double xh = (ld(x, e) - mean[c]) / sqrt(var[c] + p->epsilon);
            g1[c] += ld(gy, e) * xh; g2[c] += ld(gy, e));
    FOR_ALL(double sd = sqrt(var[c] + p->epsilon); double xh = (ld(x, e) - mean[c]) / sd;
            double nn = n ? (double)n : 1;
            st(&out[0], e, ld(&in[1], c) / sd * (ld(gy, e) - g2[c] / nn - xh * g1[c] / nn)));
    for (int64_t c = 0; c < C; c++) {
      st(&out[1], c, g1[c]);
      st(&out[2], c, g2[c]);
    }
  } else {
    FOR_ALL(st(&out[0], e, ld(&in[1], c) * (ld(x, e) - mean[c]) / sqrt(var[c] + p->epsilon) +
                               ld(&in[2], c)));
    if (p->kind == AV_BN_TRAINING)
      for (int64_t c = 0; c < C; c++) {
        st(&out[1], c, mean[c]);
        st(&out[2], c, var[c]);
      }
  }
#undef FOR_ALL
  free(acc);
  return AV_OK;
}
