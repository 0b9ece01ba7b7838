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

#include "runtime/kernels/conv_dnnl.h"
#include "runtime/kernels/reduce_elem.h"
#include "runtime/thread_pool.h"

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

/* C[M][N] (row stride ldc) = A[M][K] (row stride lda) x B[N][K]^T in compute type ct, rows
 * [r0, r1) of C only; B is dense row-major. `small`: one sequential sum per element in ascending k, like
 * XLA's loop emitter (see dot.c); otherwise BLAS (r0 = 0, r1 = M: one call). */
static void conv_gemm_nt(av_dtype ct, bool pred, bool small, int64_t r0, int64_t r1, int64_t N,
                         int64_t K, const void *A, int64_t lda, const void *B, void *C,
                         int64_t ldc) {
  size_t ces = av_dtype_size(ct);
  if (K == 0) {
    for (int64_t i = r0; i < r1; i++) memset((char *)C + (size_t)(i * ldc) * ces, 0, (size_t)N * ces);
    return;
  }
  if (ct != AV_DT_U64 && small) {
    for (int64_t i = r0; i < r1; i++)
      for (int64_t j = 0; j < N; j++) {
        if (ct == AV_DT_F32) {
          const float *x = (const float *)A + i * lda, *y = (const float *)B + j * K;
          float acc = 0;
          for (int64_t kk = 0; kk < K; kk++) {
            float prod = y[kk] * x[kk];
            acc = acc + prod;
          }
          ((float *)C)[i * ldc + j] = acc;
        } else if (ct == AV_DT_F64) {
          const double *x = (const double *)A + i * lda, *y = (const double *)B + j * K;
          double acc = 0;
          for (int64_t kk = 0; kk < K; kk++) {
            double prod = y[kk] * x[kk];
            acc = acc + prod;
          }
          ((double *)C)[i * ldc + j] = acc;
        } else if (ct == AV_DT_C64) {
          float re = 0, im = 0;
          for (int64_t kk = 0; kk < K; kk++) {
            const float *x = (const float *)B + 2 * (j * K + kk), *y = (const float *)A + 2 * (i * lda + kk);
            float pr1 = x[0] * y[0], pr2 = x[1] * y[1], pi1 = x[0] * y[1], pi2 = x[1] * y[0];
            re = re + (pr1 - pr2);
            im = im + (pi1 + pi2);
          }
          ((float *)C)[2 * (i * ldc + j)] = re;
          ((float *)C)[2 * (i * ldc + j) + 1] = im;
        } else {
          double re = 0, im = 0;
          for (int64_t kk = 0; kk < K; kk++) {
            const double *x = (const double *)B + 2 * (j * K + kk), *y = (const double *)A + 2 * (i * lda + kk);
            double pr1 = x[0] * y[0], pr2 = x[1] * y[1], pi1 = x[0] * y[1], pi2 = x[1] * y[0];
            re = re + (pr1 - pr2);
            im = im + (pi1 + pi2);
          }
          ((double *)C)[2 * (i * ldc + j)] = re;
          ((double *)C)[2 * (i * ldc + j) + 1] = im;
        }
      }
    return;
  }
  int m = (int)(r1 - r0), n = (int)N, k = (int)K, ld = (int)ldc;
  const char *Ar = (const char *)A + (size_t)(r0 * lda) * ces;
  int la = (int)lda;
  char *Cr = (char *)C + (size_t)(r0 * ldc) * ces;
  switch (ct) {
    case AV_DT_F32:
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, (const float *)Ar, la, B, k,
                  0.0f, (float *)Cr, ld);
      return;
    case AV_DT_F64:
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0, (const double *)Ar, la, B, k,
                  0.0, (double *)Cr, ld);
      return;
    case AV_DT_C64: {
      const float one[2] = {1, 0}, zero[2] = {0, 0};
      cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, one, Ar, la, B, k, zero, Cr, ld);
      return;
    }
    case AV_DT_C128: {
      const double one[2] = {1, 0}, zero[2] = {0, 0};
      cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, one, Ar, la, B, k, zero, Cr, ld);
      return;
    }
    default: {
      const uint64_t *a = A, *b = B;
      uint64_t *c = C;
      for (int64_t i = r0; i < r1; i++)
        for (int64_t j = 0; j < N; j++) {
          const uint64_t *x = a + i * lda, *y = b + j * K;
          uint64_t acc = 0;
          if (pred)
            for (int64_t kk = 0; kk < K; kk++) acc |= x[kk] & y[kk];
          else
            for (int64_t kk = 0; kk < K; kk++) acc += x[kk] * y[kk];
          c[i * ldc + j] = acc;
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

enum {
  CONV_COL_BUDGET = 8 << 20, /* bytes of patch matrix per block of batches */
  CONV_MIN_WORK = 32 * 1024, /* elements copied or multiplied worth another thread */
  ROW_GROUP = 16,            /* batches gathered together (position-major rows) */
};

static int64_t conv_min_rows(int64_t per_row) {
  return per_row > 0 ? (CONV_MIN_WORK + per_row - 1) / per_row : CONV_MIN_WORK;
}

/* One block of batches of one (batch group, feature group) pair. */
typedef struct conv_job {
  av_dtype ct, ot;
  bool pred, small, pos_major;
  size_t ces, oes;
  int64_t Cg, KS, P, Kdim, Og, nb;
  int64_t ldcol; /* ColT row stride: Kdim, padded off multiples of 1 KiB (cache-set conflicts) */
  const int64_t *ioffT; /* [position][window position]: input spatial offset or -1 */
  const char *src;      /* input at the block's first batch and the group's first feature */
  int64_t bstride, cstride, ofstride;
  const char *W;        /* kernel rows of the group's output features: Og x Kdim */
  char *ColT;           /* rows x Kdim (row stride ldcol) */
  char *T;              /* rows x Og when not written straight into the result */
  char *C;              /* where the GEMM writes: T or the result */
  char *out;            /* the result's data */
  int64_t ldc;
  const int64_t *rowoff; /* result element offset of each row's first feature */
} conv_job;

/* ColT[row][w*Cg + c] = input(batch of row, feature c, window position w at the row's output
 * position), 0 in padding and dilation holes. */
static void conv_im2col_range(void *ctx, int64_t g0, int64_t g1) {
  const conv_job *j = ctx;
  size_t es = j->ces;
  int64_t ngroups_per_pos = (j->nb + ROW_GROUP - 1) / ROW_GROUP;
  for (int64_t g = g0; g < g1; g++) {
    int64_t pp, bb0, nbb, r0;
    if (j->pos_major) {
      pp = g / ngroups_per_pos;
      bb0 = (g % ngroups_per_pos) * ROW_GROUP;
      nbb = j->nb - bb0 < ROW_GROUP ? j->nb - bb0 : ROW_GROUP;
      r0 = pp * j->nb + bb0;
    } else {
      pp = g % j->P;
      bb0 = g / j->P;
      nbb = 1;
      r0 = g;
    }
    const int64_t *io = j->ioffT + pp * j->KS;
    char *row0 = j->ColT + (size_t)(r0 * j->ldcol) * es;
    for (int64_t w = 0; w < j->KS; w++) {
      int64_t col = w * j->Cg;
      if (io[w] < 0) {
        for (int64_t bb = 0; bb < nbb; bb++)
          memset(row0 + (size_t)(bb * j->ldcol + col) * es, 0, (size_t)j->Cg * es);
        continue;
      }
      const char *s0 = j->src + (size_t)(io[w] + bb0 * j->bstride) * es;
      if (nbb == 1 && j->cstride == 1) {
        memcpy(row0 + (size_t)col * es, s0, (size_t)j->Cg * es);
      } else if (es == 4) {
        for (int64_t c = 0; c < j->Cg; c++) {
          const float *sc = (const float *)(const void *)s0 + c * j->cstride;
          float *dc = (float *)(void *)row0 + col + c;
          for (int64_t bb = 0; bb < nbb; bb++) dc[bb * j->ldcol] = sc[bb * j->bstride];
        }
      } else {
        for (int64_t c = 0; c < j->Cg; c++)
          for (int64_t bb = 0; bb < nbb; bb++)
            memcpy(row0 + (size_t)(bb * j->ldcol + col + c) * es,
                   s0 + (size_t)(c * j->cstride + bb * j->bstride) * es, es);
      }
    }
  }
}

/* Kernel rows [o0, o1) of W[o][w*Cg + c] from rhs (koffs: window position offsets). */
typedef struct pack_job {
  const char *R;
  char *W;
  const int64_t *koffs;
  size_t es;
  int64_t KS, Cg, Kdim, ostride, cstride;
} pack_job;

static void conv_pack_range(void *ctx, int64_t o0, int64_t o1) {
  const pack_job *j = ctx;
  for (int64_t o = o0; o < o1; o++) {
    char *row = j->W + (size_t)(o * j->Kdim) * j->es;
    for (int64_t w = 0; w < j->KS; w++) {
      const char *src = j->R + (size_t)(j->koffs[w] + o * j->ostride) * j->es;
      char *dst = row + (size_t)(w * j->Cg) * j->es;
      if (j->es == 4) {
        for (int64_t c = 0; c < j->Cg; c++)
          ((float *)(void *)dst)[c] = ((const float *)(const void *)src)[c * j->cstride];
      } else {
        for (int64_t c = 0; c < j->Cg; c++)
          memcpy(dst + (size_t)c * j->es, src + (size_t)(c * j->cstride) * j->es, j->es);
      }
    }
  }
}

static void conv_gemm_range(void *ctx, int64_t r0, int64_t r1) {
  const conv_job *j = ctx;
  conv_gemm_nt(j->ct, j->pred, true, r0, r1, j->Og, j->Kdim, j->ColT, j->ldcol, j->W, j->C,
               j->ldc);
}

/* result[row's offset + o * feature stride] = T[row][o], converted to the result type */
static void conv_scatter_range(void *ctx, int64_t r0, int64_t r1) {
  const conv_job *j = ctx;
  for (int64_t r = r0; r < r1; r++) {
    const char *trow = j->T + (size_t)(r * j->Og) * j->ces;
    int64_t base = j->rowoff[r];
    if (j->ct == j->ot && j->oes == 4) {
      const float *tf = (const float *)(const void *)trow;
      float *of = (float *)(void *)j->out + base;
      for (int64_t o = 0; o < j->Og; o++) of[o * j->ofstride] = tf[o];
      continue;
    }
    for (int64_t o = 0; o < j->Og; o++) {
      const char *tv = trow + (size_t)o * j->ces;
      char *dst = (char *)j->out + (size_t)(base + o * j->ofstride) * j->oes;
      if (j->ct == j->ot) memcpy(dst, tv, j->oes);
      else if (j->ct == AV_DT_U64) av_kel_store_bits(j->ot, dst, *(const uint64_t *)(const void *)tv);
      else av_kel_convert(j->ot, dst, j->ct, tv);
    }
  }
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
  if (p->dnnl) {
    bool handled;
    av_code c = av_conv_dnnl_run(p->dnnl, p->pool, lhs, rhs, out, &handled, d);
    if (handled) return c;
  }
  int64_t Kdim = Cg * KS;
  if (Kdim > INT32_MAX || P > INT32_MAX || O > INT32_MAX) return av_diag_set(d, AV_UNIMPLEMENTED, "convolution: too large");

  size_t ces = av_dtype_size(ct), oes = av_dtype_size(ot);
  int64_t lstr[AV_KMAX_RANK], rstr[AV_KMAX_RANK], ostr[AV_KMAX_RANK];
  strides_of(lhs, lstr);
  strides_of(rhs, rstr);
  strides_of(out, ostr);
  bool lown = false, rown = false;
  void *L = NULL, *R = NULL, *W = NULL, *ColT = NULL, *T = NULL;
  int64_t *ioffT = NULL, *ooff = NULL, *rowoff = NULL, *koffs = NULL;
  av_code rc = AV_OK;
  L = to_compute(lhs, ct, ot, &lown);
  R = to_compute(rhs, ct, ot, &rown);
  W = malloc(nonzero(O * Kdim) * ces);
  ioffT = malloc(nonzero(KS * P) * sizeof *ioffT);
  koffs = malloc(nonzero(KS) * sizeof *koffs);
  ooff = malloc(nonzero(P) * sizeof *ooff);
  if (!L || !R || !W || !ioffT || !ooff || !koffs) {
    rc = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "convolution: out of memory");
    goto done;
  }
  /* W[o][w*Cg + c] = rhs[c, o, window position w (reversed where asked)] */
  {
    int64_t widx[AV_KMAX_RANK] = {0};
    for (int64_t w = 0; w < KS; w++) {
      int64_t koff = 0;
      for (int i = 0; i < ns; i++) {
        int64_t k = p->window_reversal[i] ? ksz[i] - 1 - widx[i] : widx[i];
        koff += k * rstr[p->kernel_spatial_dimensions[i]];
      }
      koffs[w] = koff;
      for (int i = ns - 1; i >= 0; i--) {
        if (++widx[i] < ksz[i]) break;
        widx[i] = 0;
      }
    }
    pack_job pj = {R, W, koffs, ces, KS, Cg, Kdim, rstr[p->kernel_output_feature_dimension],
                   rstr[p->kernel_input_feature_dimension]};
    av_parallel_for(p->pool, O, 1, conv_min_rows(Kdim), conv_pack_range, &pj);
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
        ioffT[pp * KS + w] = off;
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
  /* Batches go in blocks whose patch matrix stays within CONV_COL_BUDGET bytes. Rows of the
   * patch matrix are (batch, position) pairs; when the input's batch stride is the smaller
   * one they go position-major so that neighbouring rows read neighbouring elements. */
  int64_t ldcol = Kdim;
  if ((Kdim * (int64_t)ces) % 1024 == 0) ldcol += 64 / (int64_t)ces;
  int64_t row_bytes = ldcol * (int64_t)ces;
  int64_t NB = CONV_COL_BUDGET / (P * (row_bytes > 0 ? row_bytes : 1));
  if (NB < 1) NB = 1;
  if (NB > Nout) NB = Nout;
  if (Nout > 0) NB = (Nout + (Nout + NB - 1) / NB - 1) / ((Nout + NB - 1) / NB); /* even blocks */
  bool pos_major = lstr[p->input_batch_dimension] < lstr[p->input_feature_dimension];
  int64_t rows_max = NB * P;
  ColT = malloc(nonzero(rows_max * ldcol) * ces);
  T = malloc(nonzero(rows_max * O) * ces);
  rowoff = malloc(nonzero(rows_max) * sizeof *rowoff);
  if (!ColT || !T || !rowoff) {
    rc = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "convolution: out of memory");
    goto done;
  }
  conv_job job = {.ct = ct, .ot = ot, .pred = pred, .ces = ces, .oes = oes, .Cg = Cg, .KS = KS,
                  .P = P, .Kdim = Kdim, .ldcol = ldcol, .ioffT = ioffT, .ColT = ColT, .T = T, .rowoff = rowoff,
                  .bstride = lstr[p->input_batch_dimension],
                  .cstride = lstr[p->input_feature_dimension],
                  .ofstride = ostr[p->output_feature_dimension], .pos_major = pos_major,
                  .out = out->data};
  for (int64_t gb = 0; gb < bgc; gb++)
    for (int64_t g = 0; g < fgc; g++) {
      int64_t olo = gb * ob > g * of ? gb * ob : g * of;
      int64_t ohi = (gb + 1) * ob < (g + 1) * of ? (gb + 1) * ob : (g + 1) * of;
      if (ohi <= olo) continue;
      int64_t Og = ohi - olo;
      job.small = ct != AV_DT_U64 && (double)Og * (double)P * (double)Kdim <= 65536.0;
      job.Og = Og;
      job.W = (const char *)W + (olo * Kdim) * (int64_t)ces;
      for (int64_t b0 = 0; b0 < Nout; b0 += NB) {
        int64_t nb = Nout - b0 < NB ? Nout - b0 : NB, rows = nb * P;
        job.nb = nb;
        job.src = (const char *)L + ((gb * Nout + b0) * job.bstride + g * Cg * job.cstride) * (int64_t)ces;
        /* output element offset of each row's feature olo */
        for (int64_t r = 0; r < rows; r++) {
          int64_t bb = pos_major ? r % nb : r / P, pp = pos_major ? r / nb : r % P;
          rowoff[r] = (b0 + bb) * ostr[p->output_batch_dimension] + ooff[pp] +
                      olo * job.ofstride;
        }
        /* straight into the result when its rows are evenly spaced, features contiguous */
        int64_t ld = rows > 1 ? rowoff[1] - rowoff[0] : Og;
        bool direct = ct == ot && (job.ofstride == 1 || Og == 1) && ld >= Og && ld <= INT32_MAX;
        for (int64_t r = 1; direct && r < rows; r++) direct = rowoff[r] == rowoff[0] + r * ld;
        job.C = direct ? (char *)out->data + rowoff[0] * (int64_t)oes : T;
        job.ldc = direct ? ld : Og;
        /* im2col: row groups (a position and a run of batches, or one row) */
        int64_t groups = pos_major ? P * ((nb + ROW_GROUP - 1) / ROW_GROUP) : rows;
        av_parallel_for(p->pool, groups, 1, (CONV_MIN_WORK + Kdim - 1) / (Kdim ? Kdim : 1),
                        conv_im2col_range, &job);
        if (job.small) {
          av_parallel_for(p->pool, rows, 1, conv_min_rows(Og * Kdim), conv_gemm_range, &job);
        } else {
          av_thread_pool_prepare_blas(p->pool, p->blas_share);
          conv_gemm_nt(ct, pred, false, 0, rows, Og, Kdim, ColT, job.ldcol, job.W, job.C, job.ldc);
        }
        if (!direct) av_parallel_for(p->pool, rows, 1, conv_min_rows(Og), conv_scatter_range, &job);
      }
    }
done:
  if (lown) free(L);
  if (rown) free(R);
  free(W);
  free(ColT);
  free(T);
  free(ioffT);
  free(ooff);
  free(rowoff);
  free(koffs);
  return rc;
}
