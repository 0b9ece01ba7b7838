/* cholesky (LAPACK potrf from OpenBLAS; real matrices up to 32 x 32 across SIMD lanes,
 * linalg_batched.c) and triangular_solve (CBLAS trsm; real systems up to 128 x 128 as XLA:CPU
 * computes them, triangular_solve_xla.c, large batches of small ones across SIMD lanes),
 * batched over the leading dimensions. Matrices are converted to a compute type first (f32 for f32 and the
 * narrow floats, f64, c64, c128), then converted back.
 *
 * Row-major vs LAPACK's column-major: a row-major Hermitian matrix read column-major is its
 * conjugate, and the column-major upper factor of conj(A) is, read row-major, the lower factor
 * L of A = L L^H - so lower=true calls potrf with 'U', and vice versa. */
#include "runtime/kernels/linalg.h"

#include <cblas.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/linalg_batched.h"
#include "runtime/thread_pool.h"
#include "runtime/kernels/reduce_elem.h"
#include "runtime/kernels/triangular_solve_xla.h"

/* LAPACK (OpenBLAS exports these with 32-bit integers). */
extern void spotrf_(const char *uplo, const int *n, float *a, const int *lda, int *info);
extern void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
extern void cpotrf_(const char *uplo, const int *n, void *a, const int *lda, int *info);
extern void zpotrf_(const char *uplo, const int *n, void *a, const int *lda, int *info);

static av_dtype compute_type(av_dtype t) {
  if (t == AV_DT_F64 || t == AV_DT_C64 || t == AV_DT_C128 || t == AV_DT_F32) return t;
  if (av_dtype_is_float(t)) return AV_DT_F32;
  return AV_DT_INVALID;
}

static void convert_block(av_dtype dt, void *dst, av_dtype st, const void *src, int64_t n) {
  size_t des = av_dtype_size(dt), ses = av_dtype_size(st);
  if (dt == st) {
    memcpy(dst, src, (size_t)n * des);
    return;
  }
  for (int64_t i = 0; i < n; i++) av_kel_convert(dt, (char *)dst + i * (int64_t)des, st, (const char *)src + i * (int64_t)ses);
}

static void set_nan(av_dtype ct, void *p) {
  if (ct == AV_DT_F32 || ct == AV_DT_C64) {
    float v[2] = {NAN, NAN};
    memcpy(p, v, ct == AV_DT_F32 ? 4 : 8);
  } else {
    double v[2] = {NAN, NAN};
    memcpy(p, v, ct == AV_DT_F64 ? 8 : 16);
  }
}

/* Batches of small matrices across SIMD lanes, split over the thread pool in chunks of whole
 * lane groups: each matrix's lane computes the same operations whatever its chunk. */
enum { kChunkMatrices = 64 };

typedef struct batched_ctx {
  const av_cholesky_params *chol;
  const av_triangular_solve_params *ts;
  av_dtype ct;
  const char *a, *b;
  char *out;
  int64_t n, m, nb, batch;
  atomic_bool failed;
} batched_ctx;

static void batched_chunks(void *ctx, int64_t c0, int64_t c1) {
  batched_ctx *x = ctx;
  int64_t b0 = c0 * kChunkMatrices, b1 = c1 * kChunkMatrices < x->batch ? c1 * kChunkMatrices : x->batch;
  size_t es = x->ct == AV_DT_F32 ? sizeof(float) : sizeof(double);
  int64_t an = x->n * x->n, bn = x->m * x->nb;
  const char *a = x->a + (size_t)(b0 * an) * es;
  bool ok;
  if (x->chol) {
    char *o = x->out + (size_t)(b0 * an) * es;
    ok = x->ct == AV_DT_F32 ? av_cholesky_batched_f32(x->chol->lower, (const float *)a, (float *)o, x->n, b1 - b0)
                            : av_cholesky_batched_f64(x->chol->lower, (const double *)a, (double *)o, x->n, b1 - b0);
  } else {
    const char *b = x->b + (size_t)(b0 * bn) * es;
    char *o = x->out + (size_t)(b0 * bn) * es;
    ok = x->ct == AV_DT_F32
             ? av_trsm_batched_f32(x->ts, (const float *)a, (const float *)b, (float *)o, x->n, x->m, x->nb, b1 - b0)
             : av_trsm_batched_f64(x->ts, (const double *)a, (const double *)b, (double *)o, x->n, x->m, x->nb, b1 - b0);
  }
  if (!ok) atomic_store(&x->failed, true);
}

static bool run_batched(batched_ctx *x, struct av_thread_pool *pool) {
  atomic_init(&x->failed, false);
  int64_t chunks = (x->batch + kChunkMatrices - 1) / kChunkMatrices;
  av_parallel_for(pool, chunks, 1, 1, batched_chunks, x);
  return !atomic_load(&x->failed);
}

av_code av_kernel_cholesky(const av_cholesky_params *p, const av_view *a, av_view *out,
                           av_diag *d) {
  int r = a->rank;
  if (r < 2 || out->rank != r || a->dims[r - 1] != a->dims[r - 2])
    return av_diag_set(d, AV_INVALID_ARGUMENT, "cholesky: operand must be [..., n, n]");
  for (int i = 0; i < r; i++)
    if (out->dims[i] != a->dims[i]) return av_diag_set(d, AV_INVALID_ARGUMENT, "cholesky: result shape differs");
  av_dtype ct = compute_type(a->dtype);
  if (ct == AV_DT_INVALID || out->dtype != a->dtype)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "cholesky: unsupported element type %s", av_dtype_mlir_name(a->dtype));
  int64_t n = a->dims[r - 1];
  if (n > INT32_MAX) return av_diag_set(d, AV_UNIMPLEMENTED, "cholesky: matrix too large");
  int64_t nn = n * n, batch = n ? av_view_num_elements(a) / nn : 0;
  if (nn == 0 || batch == 0) return AV_OK;
  if (n <= AV_BATCHED_MAX_N && ct == a->dtype && (ct == AV_DT_F32 || ct == AV_DT_F64)) {
    batched_ctx x = {.chol = p, .ct = ct, .a = a->data, .out = out->data, .n = n, .batch = batch};
    return run_batched(&x, p->pool) ? AV_OK : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "cholesky: out of memory");
  }
  size_t ces = av_dtype_size(ct), es = av_dtype_size(a->dtype);
  char *m = malloc((size_t)nn * ces);
  if (!m) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "cholesky: out of memory");
  int in = (int)n, info = 0;
  const char uplo = p->lower ? 'U' : 'L';
  for (int64_t b = 0; b < batch; b++) {
    convert_block(ct, m, a->dtype, (const char *)a->data + b * nn * (int64_t)es, nn);
    switch (ct) {
      case AV_DT_F32: spotrf_(&uplo, &in, (float *)m, &in, &info); break;
      case AV_DT_F64: dpotrf_(&uplo, &in, (double *)m, &in, &info); break;
      case AV_DT_C64: cpotrf_(&uplo, &in, m, &in, &info); break;
      default: zpotrf_(&uplo, &in, m, &in, &info); break;
    }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        char *e = m + (i * n + j) * (int64_t)ces;
        if (info != 0) set_nan(ct, e); /* not positive definite (JAX also yields NaNs) */
        else if (p->lower ? j > i : j < i) memset(e, 0, ces);
      }
    convert_block(out->dtype, (char *)out->data + b * nn * (int64_t)es, ct, m, nn);
  }
  free(m);
  return AV_OK;
}

av_code av_kernel_triangular_solve(const av_triangular_solve_params *p, const av_view *a,
                                   const av_view *b, av_view *out, av_diag *d) {
  int r = a->rank;
  if (r < 2 || b->rank != r || out->rank != r || a->dims[r - 1] != a->dims[r - 2])
    return av_diag_set(d, AV_INVALID_ARGUMENT, "triangular_solve: a must be [..., n, n] and b of the same rank");
  int64_t M = b->dims[r - 2], N = b->dims[r - 1], n = a->dims[r - 1];
  if (n != (p->left_side ? M : N))
    return av_diag_set(d, AV_INVALID_ARGUMENT, "triangular_solve: a is %lldx%lld but b is %lldx%lld (%s side)",
                       (long long)n, (long long)n, (long long)M, (long long)N, p->left_side ? "left" : "right");
  for (int i = 0; i < r; i++) {
    if (i < r - 2 && a->dims[i] != b->dims[i])
      return av_diag_set(d, AV_INVALID_ARGUMENT, "triangular_solve: batch dimensions differ");
    if (out->dims[i] != b->dims[i]) return av_diag_set(d, AV_INVALID_ARGUMENT, "triangular_solve: result shape differs from b");
  }
  av_dtype ct = compute_type(b->dtype);
  if (ct == AV_DT_INVALID || a->dtype != b->dtype || out->dtype != b->dtype)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "triangular_solve: unsupported or mismatched element types");
  if (M > INT32_MAX || N > INT32_MAX) return av_diag_set(d, AV_UNIMPLEMENTED, "triangular_solve: too large");
  int64_t an = n * n, bn = M * N;
  if (bn == 0) return AV_OK;
  int64_t batch = av_view_num_elements(b) / bn;
  if ((ct == AV_DT_F32 || ct == AV_DT_F64) && ct == b->dtype && av_trsm_batched_applies(n, batch)) {
    batched_ctx x = {.ts = p, .ct = ct, .a = a->data, .b = b->data, .out = out->data, .n = n,
                     .m = M, .nb = N, .batch = batch};
    return run_batched(&x, p->pool) ? AV_OK : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "triangular_solve: out of memory");
  }
  size_t ces = av_dtype_size(ct), es = av_dtype_size(b->dtype);
  /* f16/bf16 are solved in f32 copies; other types in place: a read where it is, b copied
   * into the result, which trsm overwrites (copying a 1024^2 f64 `a` into fresh memory took
   * a millisecond per solve, as long as the solve itself) */
  bool convert = ct != b->dtype;
  char *am = convert ? malloc((size_t)(an ? an : 1) * ces) : NULL;
  char *bm = convert ? malloc((size_t)bn * ces) : NULL;
  if (convert && (!am || !bm)) {
    free(am);
    free(bm);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "triangular_solve: out of memory");
  }
  CBLAS_SIDE side = p->left_side ? CblasLeft : CblasRight;
  CBLAS_UPLO uplo = p->lower ? CblasLower : CblasUpper;
  CBLAS_TRANSPOSE tr = p->transpose_a == AV_TRANSPOSE_NO_TRANSPOSE ? CblasNoTrans
                       : p->transpose_a == AV_TRANSPOSE_TRANSPOSE  ? CblasTrans
                                                                   : CblasConjTrans;
  CBLAS_DIAG diag = p->unit_diagonal ? CblasUnit : CblasNonUnit;
  int im = (int)M, in = (int)N, lda = (int)(n ? n : 1);
  for (int64_t bi = 0; bi < batch; bi++) {
    const char *ab = (const char *)a->data + bi * an * (int64_t)es, *bb = (const char *)b->data + bi * bn * (int64_t)es;
    char *ob = (char *)out->data + bi * bn * (int64_t)es;
    const void *sa = ab; /* what trsm reads */
    void *sb = ob;       /* and solves in */
    if (convert) {
      convert_block(ct, am, a->dtype, ab, an);
      convert_block(ct, bm, b->dtype, bb, bn);
      sa = am;
      sb = bm;
    } else if (ob != bb) {
      memmove(ob, bb, (size_t)bn * es);
    }
    /* real systems up to XLA's block size: XLA:CPU's own algorithm, for the same rounding */
    bool real = ct == AV_DT_F32 || ct == AV_DT_F64;
    if (real && av_trsm_xla_applies(n)) {
      bool ok = ct == AV_DT_F32 ? av_trsm_xla_f32(p, (const float *)sa, n, (float *)sb, M, N, batch)
                                : av_trsm_xla_f64(p, (const double *)sa, n, (double *)sb, M, N, batch);
      if (!ok) {
        free(am);
        free(bm);
        return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "triangular_solve: out of memory");
      }
    } else {
      switch (ct) {
        case AV_DT_F32: cblas_strsm(CblasRowMajor, side, uplo, tr, diag, im, in, 1.0f, (const float *)sa, lda, (float *)sb, in); break;
        case AV_DT_F64: cblas_dtrsm(CblasRowMajor, side, uplo, tr, diag, im, in, 1.0, (const double *)sa, lda, (double *)sb, in); break;
        case AV_DT_C64: {
          const float one[2] = {1, 0};
          cblas_ctrsm(CblasRowMajor, side, uplo, tr, diag, im, in, one, sa, lda, sb, in);
          break;
        }
        default: {
          const double one[2] = {1, 0};
          cblas_ztrsm(CblasRowMajor, side, uplo, tr, diag, im, in, one, sa, lda, sb, in);
          break;
        }
      }
    }
    if (convert) convert_block(out->dtype, ob, ct, bm, bn);
  }
  free(am);
  free(bm);
  return AV_OK;
}
