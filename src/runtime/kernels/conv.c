/* convolution as im2col + GEMM, for every dtype.
 *
 * Operands are first converted (if needed) to a compute type: f32 (f32 and narrower floats),
 * f64, c64, c128 (BLAS GEMM), or u64 for integers (wrap-around loop GEMM; pred uses or/and).
 * The kernel is packed once into W[o][w*Cg + c] (w: window position, window reversal applied
 * here; this reduction order - window positions outer, input features inner - is XLA's). Then
 * for each output batch element and each (batch group, feature group) pair with a non-empty
 * output-feature range, the input patches are gathered into Col[w*Cg + c][p]
 * (p: output spatial position; padding and lhs-dilation holes read 0) and
 * Out[o][p] = W[o][:] x Col[:][p] is scattered into the result layout. */
#include "runtime/kernels/conv.h"

#include <cblas.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/reduce_elem.h"

void av_conv_params_init(av_conv_params *p) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < AV_KMAX_RANK; i++) p->window_strides[i] = p->lhs_dilation[i] = p->rhs_dilation[i] = 1;
  p->feature_group_count = p->batch_group_count = 1;
}

static size_t nonzero(int64_t n) { return n > 0 ? (size_t)n : 1; }

static av_code bad(av_diag *d, const char *what) {
  return av_diag_set(d, AV_INVALID_ARGUMENT, "convolution: %s", what);
}

static void strides_of(const av_view *v, int64_t *s) {
  for (int i = v->rank - 1, a = 1; i >= 0; i--) {
    s[i] = a;
    a *= v->dims[i];
  }
}

static bool dims_distinct(int64_t b, int64_t f, const int64_t *sp, int ns, int rank) {
  bool seen[AV_KMAX_RANK + 2] = {0};
  int64_t all[AV_KMAX_RANK + 2];
  all[0] = b;
  all[1] = f;
  for (int i = 0; i < ns; i++) all[2 + i] = sp[i];
  for (int i = 0; i < ns + 2; i++) {
    if (all[i] < 0 || all[i] >= rank || seen[all[i]]) return false;
    seen[all[i]] = true;
  }
  return true;
}

/* C[M][N] = A[M][K] x B[K][N] in compute type ct (row-major, dense). */
static void conv_gemm(av_dtype ct, bool pred, int64_t M, int64_t N, int64_t K, const void *A,
                      const void *B, void *C) {
  if (K == 0) {
    memset(C, 0, (size_t)(M * N) * av_dtype_size(ct));
    return;
  }
  if (ct != AV_DT_U64 && (double)M * (double)N * (double)K <= 65536.0) {
    /* small: one sequential sum per element, like XLA's loop emitter (see dot.c) */
    bool cx = av_dtype_is_complex(ct);
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        if (ct == AV_DT_F32) {
          float acc = 0;
          for (int64_t kk = 0; kk < K; kk++) {
            float prod = ((const float *)A)[i * K + kk] * ((const float *)B)[kk * N + j];
            acc = acc + prod;
          }
          ((float *)C)[i * N + j] = acc;
        } else if (ct == AV_DT_F64) {
          double acc = 0;
          for (int64_t kk = 0; kk < K; kk++) {
            double prod = ((const double *)A)[i * K + kk] * ((const double *)B)[kk * N + j];
            acc = acc + prod;
          }
          ((double *)C)[i * N + j] = acc;
        } else if (cx && ct == AV_DT_C64) {
          float re = 0, im = 0;
          for (int64_t kk = 0; kk < K; kk++) {
            const float *x = (const float *)A + 2 * (i * K + kk), *y = (const float *)B + 2 * (kk * N + j);
            float pr1 = x[0] * y[0], pr2 = x[1] * y[1], pi1 = x[0] * y[1], pi2 = x[1] * y[0];
            re = re + (pr1 - pr2);
            im = im + (pi1 + pi2);
          }
          ((float *)C)[2 * (i * N + j)] = re;
          ((float *)C)[2 * (i * N + j) + 1] = im;
        } else {
          double re = 0, im = 0;
          for (int64_t kk = 0; kk < K; kk++) {
            const double *x = (const double *)A + 2 * (i * K + kk), *y = (const double *)B + 2 * (kk * N + j);
            double pr1 = x[0] * y[0], pr2 = x[1] * y[1], pi1 = x[0] * y[1], pi2 = x[1] * y[0];
            re = re + (pr1 - pr2);
            im = im + (pi1 + pi2);
          }
          ((double *)C)[2 * (i * N + j)] = re;
          ((double *)C)[2 * (i * N + j) + 1] = im;
        }
      }
    return;
  }
  int m = (int)M, n = (int)N, k = (int)K;
  switch (ct) {
    case AV_DT_F32:
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, A, k, B, n, 0.0f, C, n);
      return;
    case AV_DT_F64:
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, A, k, B, n, 0.0, C, n);
      return;
    case AV_DT_C64: {
      const float one[2] = {1, 0}, zero[2] = {0, 0};
      cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, one, A, k, B, n, zero, C, n);
      return;
    }
    case AV_DT_C128: {
      const double one[2] = {1, 0}, zero[2] = {0, 0};
      cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, one, A, k, B, n, zero, C, n);
      return;
    }
    default: {
      const uint64_t *a = A, *b = B;
      uint64_t *c = C;
      memset(c, 0, (size_t)(M * N) * 8);
      for (int64_t i = 0; i < M; i++)
        for (int64_t kk = 0; kk < K; kk++) {
          uint64_t av = a[i * K + kk];
          if (!av) continue;
          const uint64_t *brow = b + kk * N;
          uint64_t *crow = c + i * N;
          if (pred)
            for (int64_t j = 0; j < N; j++) crow[j] |= brow[j];
          else
            for (int64_t j = 0; j < N; j++) crow[j] += av * brow[j];
        }
    }
  }
}

/* Converts a whole view to the compute type (integers: to the result type, then widened). */
static void *to_compute(const av_view *v, av_dtype ct, av_dtype ot, bool *owned) {
  int64_t n = av_view_num_elements(v);
  *owned = false;
  if (v->dtype == ct && (ct != AV_DT_U64 || ot == AV_DT_U64 || ot == AV_DT_S64)) return v->data;
  void *buf = malloc((size_t)(n ? n : 1) * av_dtype_size(ct));
  if (!buf) return NULL;
  *owned = true;
  size_t es = av_dtype_size(v->dtype);
  const char *s = v->data;
  if (ct == AV_DT_U64) {
    uint64_t *u = buf;
    unsigned char tmp[16];
    for (int64_t i = 0; i < n; i++) {
      av_kel_convert(ot, tmp, v->dtype, s + i * (int64_t)es);
      u[i] = ot == AV_DT_PRED ? (tmp[0] != 0) : av_kel_load_bits(ot, tmp);
    }
  } else {
    size_t ces = av_dtype_size(ct);
    for (int64_t i = 0; i < n; i++) av_kel_convert(ct, (char *)buf + i * (int64_t)ces, v->dtype, s + i * (int64_t)es);
  }
  return buf;
}

av_code av_kernel_convolution(const av_conv_params *p, const av_view *lhs, const av_view *rhs,
                              av_view *out, av_diag *d) {
  int ns = p->nspatial, rank = ns + 2;
  if (ns < 0 || ns > AV_KMAX_RANK - 2) return bad(d, "bad number of spatial dimensions");
  if (lhs->rank != rank || rhs->rank != rank || out->rank != rank) return bad(d, "operand ranks must be nspatial + 2");
  if (!dims_distinct(p->input_batch_dimension, p->input_feature_dimension, p->input_spatial_dimensions, ns, rank) ||
      !dims_distinct(p->kernel_input_feature_dimension, p->kernel_output_feature_dimension, p->kernel_spatial_dimensions, ns, rank) ||
      !dims_distinct(p->output_batch_dimension, p->output_feature_dimension, p->output_spatial_dimensions, ns, rank))
    return bad(d, "dimension numbers must be distinct and in range");
  int64_t fgc = p->feature_group_count, bgc = p->batch_group_count;
  int64_t N = lhs->dims[p->input_batch_dimension], C = lhs->dims[p->input_feature_dimension];
  int64_t Cg = rhs->dims[p->kernel_input_feature_dimension], O = rhs->dims[p->kernel_output_feature_dimension];
  if (fgc < 1 || bgc < 1) return bad(d, "group counts must be >= 1");
  if (C != Cg * fgc) return bad(d, "input features != kernel input features * feature_group_count");
  if (O % fgc || O % bgc || N % bgc) return bad(d, "group counts must divide the feature / batch sizes");
  int64_t Nout = N / bgc;
  if (out->dims[p->output_batch_dimension] != Nout || out->dims[p->output_feature_dimension] != O)
    return bad(d, "result batch / feature size mismatch");
  int64_t osz[AV_KMAX_RANK], ksz[AV_KMAX_RANK], isz[AV_KMAX_RANK];
  int64_t P = 1, KS = 1;
  for (int i = 0; i < ns; i++) {
    int64_t in = lhs->dims[p->input_spatial_dimensions[i]], k = rhs->dims[p->kernel_spatial_dimensions[i]];
    int64_t st = p->window_strides[i], ld = p->lhs_dilation[i], rd = p->rhs_dilation[i];
    if (st < 1 || ld < 1 || rd < 1) return bad(d, "strides and dilations must be >= 1");
    /* keep the size arithmetic below far from int64 overflow on hostile attributes */
    const int64_t lim = (int64_t)1 << 31;
    if (st > lim || ld > lim || rd > lim || p->padding_lo[i] > lim || p->padding_lo[i] < -lim ||
        p->padding_hi[i] > lim || p->padding_hi[i] < -lim)
      return bad(d, "stride, dilation or padding out of range");
    int64_t padded = (in == 0 ? 0 : (in - 1) * ld + 1) + p->padding_lo[i] + p->padding_hi[i];
    int64_t dw = k == 0 ? 0 : (k - 1) * rd + 1;
    int64_t o = padded < dw || padded < 0 ? 0 : (padded - dw) / st + 1;
    if (out->dims[p->output_spatial_dimensions[i]] != o)
      return av_diag_set(d, AV_INVALID_ARGUMENT, "convolution: result spatial dimension %d is %lld, expected %lld", i,
                         (long long)out->dims[p->output_spatial_dimensions[i]], (long long)o);
    osz[i] = o;
    ksz[i] = k;
    isz[i] = in;
    P *= o;
    KS *= k;
  }
  av_dtype ot = out->dtype, ct;
  bool pred = ot == AV_DT_PRED;
  if (av_dtype_is_int(ot) || pred) ct = AV_DT_U64;
  else if (ot == AV_DT_F64 || ot == AV_DT_C64 || ot == AV_DT_C128) ct = ot;
  else if (av_dtype_is_float(ot)) ct = AV_DT_F32;
  else return av_diag_set(d, AV_UNIMPLEMENTED, "convolution: result type %s", av_dtype_mlir_name(ot));
  int64_t on = av_view_num_elements(out);
  if (on == 0) return AV_OK;
  int64_t Kdim = Cg * KS;
  if (Kdim > INT32_MAX || P > INT32_MAX || O > INT32_MAX) return av_diag_set(d, AV_UNIMPLEMENTED, "convolution: too large");

  size_t ces = av_dtype_size(ct), oes = av_dtype_size(ot);
  int64_t lstr[AV_KMAX_RANK], rstr[AV_KMAX_RANK], ostr[AV_KMAX_RANK];
  strides_of(lhs, lstr);
  strides_of(rhs, rstr);
  strides_of(out, ostr);
  bool lown = false, rown = false;
  void *L = NULL, *R = NULL, *W = NULL, *Col = NULL, *T = NULL;
  int64_t *ioff = NULL, *ooff = NULL;
  av_code rc = AV_OK;
  L = to_compute(lhs, ct, ot, &lown);
  R = to_compute(rhs, ct, ot, &rown);
  W = malloc(nonzero(O * Kdim) * ces);
  Col = malloc(nonzero(Kdim * P) * ces);
  T = malloc(nonzero(O * P) * ces);
  ioff = malloc(nonzero(KS * P) * sizeof *ioff);
  ooff = malloc(nonzero(P) * sizeof *ooff);
  if (!L || !R || !W || !Col || !T || !ioff || !ooff) {
    rc = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "convolution: out of memory");
    goto done;
  }
  /* W[o][c*KS + w] = rhs[c, o, window position w (reversed where asked)] */
  {
    int64_t widx[AV_KMAX_RANK] = {0};
    for (int64_t w = 0; w < KS; w++) {
      int64_t koff = 0;
      for (int i = 0; i < ns; i++) {
        int64_t k = p->window_reversal[i] ? ksz[i] - 1 - widx[i] : widx[i];
        koff += k * rstr[p->kernel_spatial_dimensions[i]];
      }
      for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < Cg; c++)
          memcpy((char *)W + ((o * Kdim) + w * Cg + c) * (int64_t)ces,
                 (char *)R + (koff + o * rstr[p->kernel_output_feature_dimension] +
                              c * rstr[p->kernel_input_feature_dimension]) * (int64_t)ces,
                 ces);
      for (int i = ns - 1; i >= 0; i--) {
        if (++widx[i] < ksz[i]) break;
        widx[i] = 0;
      }
    }
  }
  /* input spatial offset of (window position, output position), -1 for padding/holes */
  {
    int64_t widx[AV_KMAX_RANK] = {0};
    for (int64_t w = 0; w < KS; w++) {
      int64_t pidx[AV_KMAX_RANK] = {0};
      for (int64_t pp = 0; pp < P; pp++) {
        int64_t off = 0;
        for (int i = 0; i < ns; i++) {
          int64_t x = pidx[i] * p->window_strides[i] + widx[i] * p->rhs_dilation[i] - p->padding_lo[i];
          if (x < 0 || x % p->lhs_dilation[i] || x / p->lhs_dilation[i] >= isz[i]) {
            off = -1;
            break;
          }
          off += (x / p->lhs_dilation[i]) * lstr[p->input_spatial_dimensions[i]];
        }
        ioff[w * P + pp] = off;
        for (int i = ns - 1; i >= 0; i--) {
          if (++pidx[i] < osz[i]) break;
          pidx[i] = 0;
        }
      }
      for (int i = ns - 1; i >= 0; i--) {
        if (++widx[i] < ksz[i]) break;
        widx[i] = 0;
      }
    }
    int64_t pidx[AV_KMAX_RANK] = {0};
    for (int64_t pp = 0; pp < P; pp++) {
      int64_t off = 0;
      for (int i = 0; i < ns; i++) off += pidx[i] * ostr[p->output_spatial_dimensions[i]];
      ooff[pp] = off;
      for (int i = ns - 1; i >= 0; i--) {
        if (++pidx[i] < osz[i]) break;
        pidx[i] = 0;
      }
    }
  }
  int64_t ob = O / bgc, of = O / fgc;
  for (int64_t gb = 0; gb < bgc; gb++)
    for (int64_t g = 0; g < fgc; g++) {
      int64_t olo = gb * ob > g * of ? gb * ob : g * of;
      int64_t ohi = (gb + 1) * ob < (g + 1) * of ? (gb + 1) * ob : (g + 1) * of;
      if (ohi <= olo) continue;
      for (int64_t b = 0; b < Nout; b++) {
        int64_t bin = gb * Nout + b;
        const char *src = (const char *)L + (bin * lstr[p->input_batch_dimension]) * (int64_t)ces;
        for (int64_t c = 0; c < Cg; c++) {
          const char *sc = src + ((g * Cg + c) * lstr[p->input_feature_dimension]) * (int64_t)ces;
          for (int64_t w = 0; w < KS; w++) {
            char *dst = (char *)Col + ((w * Cg + c) * P) * (int64_t)ces;
            const int64_t *io = ioff + w * P;
            if (ces == 4) {
              float *df = (float *)dst;
              const float *sf = (const float *)sc;
              for (int64_t pp = 0; pp < P; pp++) df[pp] = io[pp] < 0 ? 0.0f : sf[io[pp]];
            } else {
              for (int64_t pp = 0; pp < P; pp++) {
                if (io[pp] < 0) memset(dst + pp * (int64_t)ces, 0, ces);
                else memcpy(dst + pp * (int64_t)ces, sc + io[pp] * (int64_t)ces, ces);
              }
            }
          }
        }
        conv_gemm(ct, pred, ohi - olo, P, Kdim, (char *)W + (olo * Kdim) * (int64_t)ces, Col, T);
        char *obase = (char *)out->data + (b * ostr[p->output_batch_dimension]) * (int64_t)oes;
        for (int64_t o = olo; o < ohi; o++) {
          char *orow = obase + (o * ostr[p->output_feature_dimension]) * (int64_t)oes;
          const char *trow = (const char *)T + ((o - olo) * P) * (int64_t)ces;
          for (int64_t pp = 0; pp < P; pp++) {
            const char *tv = trow + pp * (int64_t)ces;
            char *ov = orow + ooff[pp] * (int64_t)oes;
            if (ct == ot) memcpy(ov, tv, oes);
            else if (ct == AV_DT_U64) av_kel_store_bits(ot, ov, *(const uint64_t *)(const void *)tv);
            else av_kel_convert(ot, ov, ct, tv);
          }
        }
      }
    }
done:
  if (lown) free(L);
  if (rown) free(R);
  free(W);
  free(Col);
  free(T);
  free(ioff);
  free(ooff);
  return rc;
}
