/* Factorizations and solves: potrf, getrf, geqrf, geqp3, orgqr/ungqr, ormqr/unmqr, trsm,
 * gtsv, batched as jaxlib's kernels batch them (one LAPACK call per matrix). */
#include "runtime/kernels/lapack_fortran.h"
#include "runtime/kernels/lapack_internal.h"
#include "runtime/kernels/linalg_batched.h"

/* The routine `name` for the call `x` in scope (kernels/lapack_fns.h). */
#define L(name) LAPACK_FN(x, name)

typedef void potrf_fn(const char *, const int *, void *, const int *, int *, size_t);
typedef void getrf_fn(const int *, const int *, void *, const int *, int *, int *);
typedef void geqrf_fn(const int *, const int *, void *, const int *, void *, void *, const int *,
                      int *);
typedef void orgqr_fn(const int *, const int *, const int *, void *, const int *, const void *,
                      void *, const int *, int *);
typedef void ormqr_fn(const char *, const char *, const int *, const int *, const int *,
                      const void *, const int *, const void *, void *, const int *, void *,
                      const int *, int *, size_t, size_t);
typedef void trsm_fn(const char *, const char *, const char *, const char *, const int *,
                     const int *, const void *, const void *, const int *, void *, const int *,
                     size_t, size_t, size_t, size_t);
typedef void gtsv_fn(const int *, const int *, void *, void *, void *, void *, const int *, int *);

/* The s/d/c/z routine (of function type T) for x's element type: the table's, or the linked one. */
#define PICK4(x, T, s, d, c, z)                                                                \
  ((T *const[4]){LAPACK_FN(x, s), LAPACK_FN(x, d), LAPACK_FN(x, c), LAPACK_FN(x, z)})[(x)->ti]
#define POTRF(x) PICK4(x, potrf_fn, spotrf, dpotrf, cpotrf, zpotrf)
#define GETRF(x) PICK4(x, getrf_fn, sgetrf, dgetrf, cgetrf, zgetrf)
#define GEQRF(x) PICK4(x, geqrf_fn, sgeqrf, dgeqrf, cgeqrf, zgeqrf)
#define ORGQR(x) PICK4(x, orgqr_fn, sorgqr, dorgqr, cungqr, zungqr)
#define ORMQR(x) PICK4(x, ormqr_fn, sormqr, dormqr, cunmqr, zunmqr)
#define TRSM(x) PICK4(x, trsm_fn, strsm, dtrsm, ctrsm, ztrsm)
#define GTSV(x) PICK4(x, gtsv_fn, sgtsv, dgtsv, cgtsv, zgtsv)

/* Rows and columns of a matrix argument. */
static void mn(const av_lapack_arg *a, int *m, int *n) {
  *m = (int)a->dims[a->rank - 2];
  *n = (int)a->dims[a->rank - 1];
}

static av_code potrf(const lapack_ctx *x) {
  int n, unused;
  mn(&x->c->in[0], &unused, &n);
  int lda = lapack_ld(n);
  int *info = x->out[1];
  lapack_copy_in(x, 0, 0);
  for (int64_t b = 0; b < x->c->batch; b++)
    POTRF(x)(&x->c->uplo, &n, lapack_at(x->out[0], b, (int64_t)n * n, x->es), &lda, &info[b],
             1);
  return AV_OK;
}

static av_code getrf(const lapack_ctx *x) {
  int m, n;
  mn(&x->c->in[0], &m, &n);
  int lda = lapack_ld(m);
  int *ipiv = x->out[1], *info = x->out[2];
  int64_t k = lapack_min(m, n);
  lapack_copy_in(x, 0, 0);
  if (m == n && n <= AV_BATCHED_GETRF_MAX_N && x->c->batch >= 8 && x->ti < 2) { /* lanes */
    bool ok = x->ti == 0 ? av_getrf_batched_f32(x->out[0], ipiv, info, n, x->c->batch)
                         : av_getrf_batched_f64(x->out[0], ipiv, info, n, x->c->batch);
    return ok ? AV_OK : av_diag_set(x->d, AV_RESOURCE_EXHAUSTED, "getrf: out of memory");
  }
  for (int64_t b = 0; b < x->c->batch; b++)
    GETRF(x)(&m, &n, lapack_at(x->out[0], b, (int64_t)m * n, x->es), &lda, ipiv + b * k,
             &info[b]);
  return AV_OK;
}

static av_code geqrf(const lapack_ctx *x) {
  int m, n, info, lwork = -1;
  mn(&x->c->in[0], &m, &n);
  int lda = lapack_ld(m);
  int64_t k = lapack_min(m, n);
  double query[2] = {0, 0};
  GEQRF(x)(&m, &n, NULL, &lda, NULL, query, &lwork, &info);
  if ((lwork = lapack_work_size(x, query)) < 0) return x->d->code;
  void *work = lapack_scratch(x, lwork, x->es);
  if (!work) return x->d->code;
  lapack_copy_in(x, 0, 0);
  for (int64_t b = 0; b < x->c->batch; b++)
    GEQRF(x)(&m, &n, lapack_at(x->out[0], b, (int64_t)m * n, x->es), &lda,
             lapack_at(x->out[1], b, k, x->es), work, &lwork, &info);
  free(work);
  return AV_OK;
}

static av_code geqp3(const lapack_ctx *x) {
  int m, n, info, lwork = -1;
  mn(&x->c->in[0], &m, &n);
  int lda = lapack_ld(m);
  int64_t k = lapack_min(m, n);
  bool cplx = x->ti >= 2;
  double query[2] = {0, 0};
  void *rwork = cplx ? lapack_scratch(x, 2 * (int64_t)n, x->rs) : NULL;
  if (cplx && !rwork) return x->d->code;
  switch (x->ti) {
    case 0: L(sgeqp3)(&m, &n, NULL, &lda, NULL, NULL, query, &lwork, &info); break;
    case 1: L(dgeqp3)(&m, &n, NULL, &lda, NULL, NULL, query, &lwork, &info); break;
    case 2: L(cgeqp3)(&m, &n, NULL, &lda, NULL, NULL, query, &lwork, rwork, &info); break;
    default: L(zgeqp3)(&m, &n, NULL, &lda, NULL, NULL, query, &lwork, rwork, &info); break;
  }
  void *work = NULL;
  if ((lwork = lapack_work_size(x, query)) < 0 || !(work = lapack_scratch(x, lwork, x->es))) {
    free(rwork);
    return x->d->code;
  }
  lapack_copy_in(x, 0, 0);
  lapack_copy_in(x, 1, 1);
  for (int64_t b = 0; b < x->c->batch; b++) {
    void *a = lapack_at(x->out[0], b, (int64_t)m * n, x->es);
    int *jpvt = (int *)x->out[1] + b * n;
    void *tau = lapack_at(x->out[2], b, k, x->es);
    switch (x->ti) {
      case 0: L(sgeqp3)(&m, &n, a, &lda, jpvt, tau, work, &lwork, &info); break;
      case 1: L(dgeqp3)(&m, &n, a, &lda, jpvt, tau, work, &lwork, &info); break;
      case 2: L(cgeqp3)(&m, &n, a, &lda, jpvt, tau, work, &lwork, rwork, &info); break;
      default: L(zgeqp3)(&m, &n, a, &lda, jpvt, tau, work, &lwork, rwork, &info); break;
    }
  }
  free(work);
  free(rwork);
  return AV_OK;
}

static av_code orgqr(const lapack_ctx *x) {
  int m, n, info, lwork = -1;
  mn(&x->c->in[0], &m, &n);
  const av_lapack_arg *t = &x->c->in[1];
  int k = (int)t->dims[t->rank - 1];
  int lda = lapack_ld(m);
  double query[2] = {0, 0};
  ORGQR(x)(&m, &n, &k, NULL, &lda, NULL, query, &lwork, &info);
  if ((lwork = lapack_work_size(x, query)) < 0) return x->d->code;
  void *work = lapack_scratch(x, lwork, x->es);
  if (!work) return x->d->code;
  lapack_copy_in(x, 0, 0);
  for (int64_t b = 0; b < x->c->batch; b++)
    ORGQR(x)(&m, &n, &k, lapack_at(x->out[0], b, (int64_t)m * n, x->es), &lda,
             lapack_at(x->in[1], b, k, x->es), work, &lwork, &info);
  free(work);
  return AV_OK;
}

static av_code ormqr(const lapack_ctx *x) {
  int am, an, m, n, info, lwork = -1;
  mn(&x->c->in[0], &am, &an);
  mn(&x->c->in[2], &m, &n);
  const av_lapack_arg *t = &x->c->in[1];
  int k = (int)t->dims[t->rank - 1];
  int lda = lapack_ld(am), ldc = lapack_ld(m);
  double query[2] = {0, 0};
  ORMQR(x)(&x->c->side, &x->c->trans, &m, &n, &k, NULL, &lda, NULL, NULL, &ldc, query, &lwork,
           &info, 1, 1);
  if ((lwork = lapack_work_size(x, query)) < 0) return x->d->code;
  void *work = lapack_scratch(x, lwork, x->es);
  if (!work) return x->d->code;
  lapack_copy_in(x, 0, 2);
  for (int64_t b = 0; b < x->c->batch; b++)
    ORMQR(x)(&x->c->side, &x->c->trans, &m, &n, &k,
             lapack_at(x->in[0], b, (int64_t)am * an, x->es), &lda,
             lapack_at(x->in[1], b, k, x->es), lapack_at(x->out[0], b, (int64_t)m * n, x->es),
             &ldc, work, &lwork, &info, 1, 1);
  free(work);
  return AV_OK;
}

static av_code trsm(const lapack_ctx *x) {
  int m, n;
  mn(&x->c->in[1], &m, &n);
  int q = x->c->side == 'L' ? m : n;
  int lda = lapack_ld(q), ldb = lapack_ld(m);
  double one[2] = {1, 0};
  float onef[2] = {1, 0};
  const void *alpha = x->c->nin > 2 ? x->in[2] : (x->ti == 0 || x->ti == 2) ? (void *)onef : one;
  lapack_copy_in(x, 0, 1);
  for (int64_t b = 0; b < x->c->batch; b++)
    TRSM(x)(&x->c->side, &x->c->uplo, &x->c->trans, &x->c->diag, &m, &n, alpha,
            lapack_at(x->in[0], b, (int64_t)q * q, x->es), &lda,
            lapack_at(x->out[0], b, (int64_t)m * n, x->es), &ldb, 1, 1, 1, 1);
  return AV_OK;
}

static av_code gtsv(const lapack_ctx *x) {
  int n, nrhs;
  mn(&x->c->in[3], &n, &nrhs);
  int ldb = lapack_ld(n);
  int *info = x->out[4];
  for (uint32_t i = 0; i < 4; i++) lapack_copy_in(x, i, i);
  for (int64_t b = 0; b < x->c->batch; b++) {
    char *dl = lapack_at(x->out[0], b, n, x->es);
    /* JAX's dl[0] is unused: LAPACK's subdiagonal starts at dl[1] */
    if (n > 0) dl += x->es;
    GTSV(x)(&n, &nrhs, dl, lapack_at(x->out[1], b, n, x->es), lapack_at(x->out[2], b, n, x->es),
            lapack_at(x->out[3], b, (int64_t)n * nrhs, x->es), &ldb, &info[b]);
  }
  return AV_OK;
}

av_code lapack_run_factor(const lapack_ctx *x) {
  switch (x->c->routine) {
    case AV_LAPACK_POTRF: return potrf(x);
    case AV_LAPACK_GETRF: return getrf(x);
    case AV_LAPACK_GEQRF: return geqrf(x);
    case AV_LAPACK_GEQP3: return geqp3(x);
    case AV_LAPACK_ORGQR: return orgqr(x);
    case AV_LAPACK_ORMQR: return ormqr(x);
    case AV_LAPACK_TRSM: return trsm(x);
    case AV_LAPACK_GTSV: return gtsv(x);
    case AV_LAPACK_GTSV_PERTURBED: return lapack_run_gtsv_perturbed(x);
    default: return lapack_run_eigen(x);
  }
}
