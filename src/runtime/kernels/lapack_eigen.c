/* Eigen/singular value routines and reductions: syevd/heevd, gesdd, gesvd, geev, gees, gehrd,
 * sytrd/hetrd, batched as jaxlib's kernels batch them. Outputs a routine does not write
 * (eigenvectors not asked for, results of a failed matrix) are zeros, not garbage. */
#include <math.h>

#include "runtime/kernels/lapack_fortran.h"
#include "runtime/kernels/lapack_internal.h"
#include "runtime/kernels/linalg_batched.h"

/* The routine `name` for the call `x` in scope (kernels/lapack_fns.h). */
#define L(name) LAPACK_FN(x, name)

static void zero_out(const lapack_ctx *x, uint32_t k) {
  size_t nb = lapack_bytes(&x->c->out[k]);
  if (nb) memset(x->out[k], 0, nb);
}

static void order(const av_lapack_arg *a, int *m, int *n) {
  *m = (int)a->dims[a->rank - 2];
  *n = (int)a->dims[a->rank - 1];
}

static av_code syevd(const lapack_ctx *x) {
  int n, unused, info, lwork = -1, lrwork = -1, liwork = -1, iq = 0;
  order(&x->c->in[0], &unused, &n);
  if (x->c->lanes_eigh && n <= AV_BATCHED_MAX_N && x->c->batch >= 8 && x->ti < 2) {
    /* Jacobi across SIMD lanes (ANVIL_BATCHED_EIGH=1) */
    lapack_copy_in(x, 0, 0);
    bool lower = x->c->uplo == 'L', vec = x->c->mode == 'V';
    bool ok = x->ti == 0
                  ? av_syevd_batched_f32(lower, vec, x->out[0], x->out[1], x->out[2], n, x->c->batch, x->pool)
                  : av_syevd_batched_f64(lower, vec, x->out[0], x->out[1], x->out[2], n, x->c->batch, x->pool);
    return ok ? AV_OK : av_diag_set(x->d, AV_RESOURCE_EXHAUSTED, "syevd: out of memory");
  }
  int lda = lapack_ld(n);
  const char *jobz = &x->c->mode, *uplo = &x->c->uplo;
  double query[2] = {0, 0}, rquery = 0;
  switch (x->ti) {
    case 0:
      L(ssyevd)(jobz, uplo, &n, NULL, &lda, NULL, query, &lwork, &iq, &liwork, &info, 1, 1);
      break;
    case 1:
      L(dsyevd)(jobz, uplo, &n, NULL, &lda, NULL, query, &lwork, &iq, &liwork, &info, 1, 1);
      break;
    case 2:
      L(cheevd)(jobz, uplo, &n, NULL, &lda, NULL, query, &lwork, &rquery, &lrwork, &iq, &liwork,
                &info, 1, 1);
      break;
    default:
      L(zheevd)(jobz, uplo, &n, NULL, &lda, NULL, query, &lwork, &rquery, &lrwork, &iq, &liwork,
                &info, 1, 1);
      break;
  }
  lwork = lapack_work_size(x, query);
  /* rwork's size comes back as a real of the same precision: read like a work query */
  lrwork = x->ti >= 2 ? lapack_work_size(x, &rquery) : 1;
  liwork = iq > 1 ? iq : 1;
  if (lwork < 0 || lrwork < 0) return x->d->code;
  void *work = lapack_scratch(x, lwork, x->es);
  void *rwork = lapack_scratch(x, lrwork, x->rs);
  int *iwork = lapack_scratch(x, liwork, sizeof(int));
  av_code rc = AV_OK;
  if (!work || !rwork || !iwork) {
    rc = x->d->code;
    goto done;
  }
  lapack_copy_in(x, 0, 0);
  int *infos = x->out[2];
  for (int64_t b = 0; b < x->c->batch; b++) {
    void *a = lapack_at(x->out[0], b, (int64_t)n * n, x->es);
    void *w = lapack_at(x->out[1], b, n, x->rs);
    switch (x->ti) {
      case 0:
        L(ssyevd)(jobz, uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, &infos[b], 1, 1);
        break;
      case 1:
        L(dsyevd)(jobz, uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, &infos[b], 1, 1);
        break;
      case 2:
        L(cheevd)(jobz, uplo, &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork, &liwork,
                  &infos[b], 1, 1);
        break;
      default:
        L(zheevd)(jobz, uplo, &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork, &liwork,
                  &infos[b], 1, 1);
        break;
    }
  }
done:
  free(work);
  free(rwork);
  free(iwork);
  return rc;
}

/* gesdd and gesvd: (a) -> (a destroyed, s, u, vt, info). */
static av_code svd(const lapack_ctx *x, bool dc) {
  int m, n, info, lwork = -1, um, un, vm, vn;
  order(&x->c->in[0], &m, &n);
  order(&x->c->out[2], &um, &un);
  order(&x->c->out[3], &vm, &vn);
  int lda = lapack_ld(m), ldu = lapack_ld(um), ldvt = lapack_ld(vm);
  int64_t mn = lapack_min(m, n), mx = lapack_max(m, n);
  const char *job = &x->c->mode;
  bool uv = x->c->mode != 'N';
  int64_t nrwork = !dc   ? 5 * mn
                   : !uv ? 7 * mn
                         : lapack_max(5 * mn * mn + 5 * mn, 2 * mx * mn + 2 * mn * mn + mn);
  void *rwork = x->ti >= 2 ? lapack_scratch(x, nrwork, x->rs) : NULL;
  int *iwork = dc ? lapack_scratch(x, 8 * mn, sizeof(int)) : NULL;
  void *work = NULL;
  av_code rc = AV_OK;
  if ((x->ti >= 2 && !rwork) || (dc && !iwork)) {
    rc = x->d->code;
    goto done;
  }
  double q[2] = {0, 0};
#define SVD_CALL(A, S, U, VT, W, LW, INFO)                                                     \
  do {                                                                                         \
    if (dc) {                                                                                  \
      switch (x->ti) {                                                                         \
        case 0: L(sgesdd)(job, &m, &n, A, &lda, S, U, &ldu, VT, &ldvt, W, LW, iwork, INFO, 1);   \
            break;                                                                             \
        case 1: L(dgesdd)(job, &m, &n, A, &lda, S, U, &ldu, VT, &ldvt, W, LW, iwork, INFO, 1);   \
            break;                                                                             \
        case 2:                                                                                \
          L(cgesdd)(job, &m, &n, A, &lda, S, U, &ldu, VT, &ldvt, W, LW, rwork, iwork, INFO, 1);  \
          break;                                                                               \
        default:                                                                               \
          L(zgesdd)(job, &m, &n, A, &lda, S, U, &ldu, VT, &ldvt, W, LW, rwork, iwork, INFO, 1);  \
          break;                                                                               \
      }                                                                                        \
    } else {                                                                                   \
      switch (x->ti) {                                                                         \
        case 0: L(sgesvd)(job, job, &m, &n, A, &lda, S, U, &ldu, VT, &ldvt, W, LW, INFO, 1, 1);  \
            break;                                                                             \
        case 1: L(dgesvd)(job, job, &m, &n, A, &lda, S, U, &ldu, VT, &ldvt, W, LW, INFO, 1, 1);  \
            break;                                                                             \
        case 2:                                                                                \
          L(cgesvd)(job, job, &m, &n, A, &lda, S, U, &ldu, VT, &ldvt, W, LW, rwork, INFO, 1, 1); \
          break;                                                                               \
        default:                                                                               \
          L(zgesvd)(job, job, &m, &n, A, &lda, S, U, &ldu, VT, &ldvt, W, LW, rwork, INFO, 1, 1); \
          break;                                                                               \
      }                                                                                        \
    }                                                                                          \
  } while (0)
  SVD_CALL(NULL, NULL, NULL, NULL, q, &lwork, &info);
  if ((lwork = lapack_work_size(x, q)) < 0 || !(work = lapack_scratch(x, lwork, x->es))) {
    rc = x->d->code;
    goto done;
  }
  lapack_copy_in(x, 0, 0);
  zero_out(x, 2);
  zero_out(x, 3);
  int *infos = x->out[4];
  for (int64_t b = 0; b < x->c->batch; b++) {
    void *a = lapack_at(x->out[0], b, (int64_t)m * n, x->es);
    void *s = lapack_at(x->out[1], b, mn, x->rs);
    void *u = lapack_at(x->out[2], b, (int64_t)um * un, x->es);
    void *vt = lapack_at(x->out[3], b, (int64_t)vm * vn, x->es);
    SVD_CALL(a, s, u, vt, work, &lwork, &infos[b]);
  }
#undef SVD_CALL
done:
  free(work);
  free(rwork);
  free(iwork);
  return rc;
}

static bool all_finite(const void *a, int64_t count, bool f64) {
  for (int64_t i = 0; i < count; i++) {
    double v = f64 ? ((const double *)a)[i] : ((const float *)a)[i];
    if (!isfinite(v)) return false;
  }
  return true;
}

/* LAPACK's real eigenvectors -> complex ones: a real eigenvalue's vector is column j; a pair
 * (wi[j] > 0) shares columns j, j+1 as re +- i*im. */
static void unpack_real_vectors(const lapack_ctx *x, int n, const void *wi, const void *v,
                                void *out) {
  bool f64 = x->ti == 1;
  for (int j = 0; j < n; j++) {
    double im = f64 ? ((const double *)wi)[j] : ((const float *)wi)[j];
    bool pair = im > 0 && j + 1 < n;
    for (int i = 0; i < n; i++) {
      int64_t p = (int64_t)j * n + i, q = (int64_t)(j + 1) * n + i;
      double re = f64 ? ((const double *)v)[p] : ((const float *)v)[p];
      double ii = !pair ? 0 : f64 ? ((const double *)v)[q] : ((const float *)v)[q];
      if (f64) {
        double *o = out;
        o[2 * p] = re, o[2 * p + 1] = ii;
        if (pair) o[2 * q] = re, o[2 * q + 1] = -ii;
      } else {
        float *o = out;
        o[2 * p] = (float)re, o[2 * p + 1] = (float)ii;
        if (pair) o[2 * q] = (float)re, o[2 * q + 1] = (float)-ii;
      }
    }
    if (pair) j++;
  }
}

static av_code geev(const lapack_ctx *x) {
  int n, unused, info, lwork = -1;
  order(&x->c->in[0], &unused, &n);
  int ld = lapack_ld(n);
  bool cplx = x->ti >= 2;
  const char *jl = &x->c->jobvl, *jr = &x->c->jobvr;
  int64_t nn = (int64_t)n * n;
  uint32_t v = cplx ? 1 : 2; /* index of the left eigenvectors among the results */
  void *a = lapack_scratch(x, nn, x->es);
  void *vl = cplx ? NULL : lapack_scratch(x, nn, x->es);
  void *vr = cplx ? NULL : lapack_scratch(x, nn, x->es);
  void *rwork = cplx ? lapack_scratch(x, 2 * (int64_t)n, x->rs) : NULL;
  void *work = NULL;
  av_code rc = AV_OK;
  if (!a || (cplx ? !rwork : (!vl || !vr))) {
    rc = x->d->code;
    goto done;
  }
  double q[2] = {0, 0};
  switch (x->ti) {
    case 0:
      L(sgeev)(jl, jr, &n, a, &ld, NULL, NULL, vl, &ld, vr, &ld, q, &lwork, &info, 1, 1);
      break;
    case 1:
      L(dgeev)(jl, jr, &n, a, &ld, NULL, NULL, vl, &ld, vr, &ld, q, &lwork, &info, 1, 1);
      break;
    case 2:
      L(cgeev)(jl, jr, &n, a, &ld, NULL, NULL, &ld, NULL, &ld, q, &lwork, rwork, &info, 1, 1);
      break;
    default:
      L(zgeev)(jl, jr, &n, a, &ld, NULL, NULL, &ld, NULL, &ld, q, &lwork, rwork, &info, 1, 1);
      break;
  }
  if ((lwork = lapack_work_size(x, q)) < 0 || !(work = lapack_scratch(x, lwork, x->es))) {
    rc = x->d->code;
    goto done;
  }
  for (uint32_t k = 0; k < x->c->nout; k++) zero_out(x, k);
  int *infos = x->out[v + 2];
  size_t ces = cplx ? x->es : 2 * x->es; /* eigenvector element size */
  for (int64_t b = 0; b < x->c->batch; b++) {
    memcpy(a, lapack_at(x->in[0], b, nn, x->es), (size_t)nn * x->es);
    /* LAPACK may loop forever on NaN/Inf input: jaxlib reports info = -4 instead */
    if (!all_finite(a, cplx ? 2 * nn : nn, x->ti == 1 || x->ti == 3)) {
      infos[b] = -4;
      continue;
    }
    void *w = lapack_at(x->out[0], b, n, x->es);
    void *lv = lapack_at(x->out[v], b, nn, ces), *rv = lapack_at(x->out[v + 1], b, nn, ces);
    switch (x->ti) {
      case 0:
      case 1: {
        void *wi = lapack_at(x->out[1], b, n, x->es);
        if (x->ti == 0)
          L(sgeev)(jl, jr, &n, a, &ld, w, wi, vl, &ld, vr, &ld, work, &lwork, &infos[b], 1, 1);
        else
          L(dgeev)(jl, jr, &n, a, &ld, w, wi, vl, &ld, vr, &ld, work, &lwork, &infos[b], 1, 1);
        if (infos[b] == 0) {
          if (*jl == 'V') unpack_real_vectors(x, n, wi, vl, lv);
          if (*jr == 'V') unpack_real_vectors(x, n, wi, vr, rv);
        }
        break;
      }
      case 2:
        L(cgeev)(jl, jr, &n, a, &ld, w, lv, &ld, rv, &ld, work, &lwork, rwork, &infos[b], 1, 1);
        break;
      default:
        L(zgeev)(jl, jr, &n, a, &ld, w, lv, &ld, rv, &ld, work, &lwork, rwork, &infos[b], 1, 1);
        break;
    }
  }
done:
  free(a);
  free(vl);
  free(vr);
  free(rwork);
  free(work);
  return rc;
}

static av_code gees(const lapack_ctx *x) {
  int n, unused, info, sdim, lwork = -1;
  order(&x->c->in[0], &unused, &n);
  int ld = lapack_ld(n);
  bool cplx = x->ti >= 2;
  const char *jobvs = &x->c->mode, sort = 'N';
  int64_t nn = (int64_t)n * n;
  void *rwork = cplx ? lapack_scratch(x, n, x->rs) : NULL;
  void *work = NULL;
  if (cplx && !rwork) return x->d->code;
  double q[2] = {0, 0};
  switch (x->ti) {
    case 0:
      L(sgees)(jobvs, &sort, NULL, &n, NULL, &ld, &sdim, NULL, NULL, NULL, &ld, q, &lwork, NULL,
               &info, 1, 1);
      break;
    case 1:
      L(dgees)(jobvs, &sort, NULL, &n, NULL, &ld, &sdim, NULL, NULL, NULL, &ld, q, &lwork, NULL,
               &info, 1, 1);
      break;
    case 2:
      L(cgees)(jobvs, &sort, NULL, &n, NULL, &ld, &sdim, NULL, NULL, &ld, q, &lwork, rwork, NULL,
               &info, 1, 1);
      break;
    default:
      L(zgees)(jobvs, &sort, NULL, &n, NULL, &ld, &sdim, NULL, NULL, &ld, q, &lwork, rwork, NULL,
               &info, 1, 1);
      break;
  }
  if ((lwork = lapack_work_size(x, q)) < 0 || !(work = lapack_scratch(x, lwork, x->es))) {
    free(rwork);
    return x->d->code;
  }
  lapack_copy_in(x, 0, 0);
  zero_out(x, 1);
  uint32_t e = cplx ? 3 : 4;
  int *sdims = x->out[e], *infos = x->out[e + 1];
  for (int64_t b = 0; b < x->c->batch; b++) {
    void *a = lapack_at(x->out[0], b, nn, x->es), *vs = lapack_at(x->out[1], b, nn, x->es);
    void *w = lapack_at(x->out[2], b, n, x->es);
    void *wi = cplx ? NULL : lapack_at(x->out[3], b, n, x->es);
    switch (x->ti) {
      case 0:
        L(sgees)(jobvs, &sort, NULL, &n, a, &ld, &sdims[b], w, wi, vs, &ld, work, &lwork, NULL,
                 &infos[b], 1, 1);
        break;
      case 1:
        L(dgees)(jobvs, &sort, NULL, &n, a, &ld, &sdims[b], w, wi, vs, &ld, work, &lwork, NULL,
                 &infos[b], 1, 1);
        break;
      case 2:
        L(cgees)(jobvs, &sort, NULL, &n, a, &ld, &sdims[b], w, vs, &ld, work, &lwork, rwork, NULL,
                 &infos[b], 1, 1);
        break;
      default:
        L(zgees)(jobvs, &sort, NULL, &n, a, &ld, &sdims[b], w, vs, &ld, work, &lwork, rwork, NULL,
                 &infos[b], 1, 1);
        break;
    }
  }
  free(work);
  free(rwork);
  return AV_OK;
}

typedef void gehrd_fn(const int *, const int *, const int *, void *, const int *, void *, void *,
                      const int *, int *);
typedef void sytrd_fn(const char *, const int *, void *, const int *, void *, void *, void *,
                      void *, const int *, int *, size_t);
#define GEHRD(x) \
  ((gehrd_fn *const[4]){L(sgehrd), L(dgehrd), L(cgehrd), L(zgehrd)})[(x)->ti]
#define SYTRD(x) \
  ((sytrd_fn *const[4]){L(ssytrd), L(dsytrd), L(chetrd), L(zhetrd)})[(x)->ti]

static av_code gehrd(const lapack_ctx *x) {
  int n, unused, info, lwork = -1;
  order(&x->c->in[0], &unused, &n);
  int lda = lapack_ld(n), lo = x->c->low, hi = x->c->high;
  double q[2] = {0, 0};
  GEHRD(x)(&n, &lo, &hi, NULL, &lda, NULL, q, &lwork, &info);
  void *work;
  if ((lwork = lapack_work_size(x, q)) < 0 || !(work = lapack_scratch(x, lwork, x->es)))
    return x->d->code;
  lapack_copy_in(x, 0, 0);
  int *infos = x->out[2];
  int64_t nt = n > 0 ? n - 1 : 0;
  for (int64_t b = 0; b < x->c->batch; b++)
    GEHRD(x)(&n, &lo, &hi, lapack_at(x->out[0], b, (int64_t)n * n, x->es), &lda,
             lapack_at(x->out[1], b, nt, x->es), work, &lwork, &infos[b]);
  free(work);
  return AV_OK;
}

static av_code sytrd(const lapack_ctx *x) {
  int n, unused, info, lwork = -1;
  order(&x->c->in[0], &unused, &n);
  int lda = lapack_ld(n);
  double q[2] = {0, 0};
  SYTRD(x)(&x->c->uplo, &n, NULL, &lda, NULL, NULL, NULL, q, &lwork, &info, 1);
  void *work;
  if ((lwork = lapack_work_size(x, q)) < 0 || !(work = lapack_scratch(x, lwork, x->es)))
    return x->d->code;
  lapack_copy_in(x, 0, 0);
  int *infos = x->out[4];
  int64_t nt = n > 0 ? n - 1 : 0;
  for (int64_t b = 0; b < x->c->batch; b++)
    SYTRD(x)(&x->c->uplo, &n, lapack_at(x->out[0], b, (int64_t)n * n, x->es), &lda,
             lapack_at(x->out[1], b, n, x->rs), lapack_at(x->out[2], b, nt, x->rs),
             lapack_at(x->out[3], b, nt, x->es), work, &lwork, &infos[b], 1);
  free(work);
  return AV_OK;
}

av_code lapack_run_eigen(const lapack_ctx *x) {
  switch (x->c->routine) {
    case AV_LAPACK_SYEVD: return syevd(x);
    case AV_LAPACK_GESDD: return svd(x, true);
    case AV_LAPACK_GESVD: return svd(x, false);
    case AV_LAPACK_GEEV: return geev(x);
    case AV_LAPACK_GEES: return gees(x);
    case AV_LAPACK_GEHRD: return gehrd(x);
    case AV_LAPACK_SYTRD: return sytrd(x);
    default: return av_diag_set(x->d, AV_INTERNAL, "LAPACK: unknown routine");
  }
}
