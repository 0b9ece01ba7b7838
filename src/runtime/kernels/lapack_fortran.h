/* Fortran LAPACK/BLAS entry points (OpenBLAS exports them with a trailing underscore).
 *
 * Matrices are passed as void * (the routines see float, double or interleaved complex
 * pairs; all are plain pointers in the calling convention), integers as 32-bit ints, and
 * every CHARACTER argument gets gfortran's hidden length (size_t 1) after the last argument:
 * omitting those can crash Fortran code built with tail-call optimisation.
 * The tables index s, d, c, z in that order (see lapack_type_index). */
#ifndef ANVIL_RUNTIME_KERNELS_LAPACK_FORTRAN_H
#define ANVIL_RUNTIME_KERNELS_LAPACK_FORTRAN_H

#include <stddef.h>

typedef int lapack_int;
typedef int (*lapack_select_fn)(void); /* gees SELECT: unused (sort = 'N') */

#define LAPACK_ALL4(decl) decl(s) decl(d) decl(c) decl(z)

/* potrf(uplo, n, a, lda, info) */
#define DECL_POTRF(t) \
  void t##potrf_(const char *, const int *, void *, const int *, int *, size_t);
LAPACK_ALL4(DECL_POTRF)
/* getrf(m, n, a, lda, ipiv, info) */
#define DECL_GETRF(t) void t##getrf_(const int *, const int *, void *, const int *, int *, int *);
LAPACK_ALL4(DECL_GETRF)
/* geqrf(m, n, a, lda, tau, work, lwork, info) */
#define DECL_GEQRF(t) \
  void t##geqrf_(const int *, const int *, void *, const int *, void *, void *, const int *, int *);
LAPACK_ALL4(DECL_GEQRF)
/* geqp3(m, n, a, lda, jpvt, tau, work, lwork, [rwork,] info) */
void sgeqp3_(const int *, const int *, void *, const int *, int *, void *, void *, const int *,
             int *);
void dgeqp3_(const int *, const int *, void *, const int *, int *, void *, void *, const int *,
             int *);
void cgeqp3_(const int *, const int *, void *, const int *, int *, void *, void *, const int *,
             void *, int *);
void zgeqp3_(const int *, const int *, void *, const int *, int *, void *, void *, const int *,
             void *, int *);
/* orgqr/ungqr(m, n, k, a, lda, tau, work, lwork, info) */
#define DECL_ORGQR(t, name)                                                                      \
  void t##name##_(const int *, const int *, const int *, void *, const int *, const void *, void *, \
                  const int *, int *);
DECL_ORGQR(s, orgqr)
DECL_ORGQR(d, orgqr)
DECL_ORGQR(c, ungqr)
DECL_ORGQR(z, ungqr)
/* ormqr/unmqr(side, trans, m, n, k, a, lda, tau, c, ldc, work, lwork, info) */
#define DECL_ORMQR(t, name)                                                                    \
  void t##name##_(const char *, const char *, const int *, const int *, const int *, const void *, \
                  const int *, const void *, void *, const int *, void *, const int *, int *,    \
                  size_t, size_t);
DECL_ORMQR(s, ormqr)
DECL_ORMQR(d, ormqr)
DECL_ORMQR(c, unmqr)
DECL_ORMQR(z, unmqr)
/* trsm(side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb) */
#define DECL_TRSM(t)                                                                          \
  void t##trsm_(const char *, const char *, const char *, const char *, const int *, const int *, \
                const void *, const void *, const int *, void *, const int *, size_t, size_t,   \
                size_t, size_t);
LAPACK_ALL4(DECL_TRSM)
/* gtsv(n, nrhs, dl, d, du, b, ldb, info) */
#define DECL_GTSV(t) \
  void t##gtsv_(const int *, const int *, void *, void *, void *, void *, const int *, int *);
LAPACK_ALL4(DECL_GTSV)
/* syevd(jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info) */
void ssyevd_(const char *, const char *, const int *, void *, const int *, void *, void *,
             const int *, int *, const int *, int *, size_t, size_t);
void dsyevd_(const char *, const char *, const int *, void *, const int *, void *, void *,
             const int *, int *, const int *, int *, size_t, size_t);
/* heevd(jobz, uplo, n, a, lda, w, work, lwork, rwork, lrwork, iwork, liwork, info) */
void cheevd_(const char *, const char *, const int *, void *, const int *, void *, void *,
             const int *, void *, const int *, int *, const int *, int *, size_t, size_t);
void zheevd_(const char *, const char *, const int *, void *, const int *, void *, void *,
             const int *, void *, const int *, int *, const int *, int *, size_t, size_t);
/* gesdd(jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, [rwork,] iwork, info) */
void sgesdd_(const char *, const int *, const int *, void *, const int *, void *, void *,
             const int *, void *, const int *, void *, const int *, int *, int *, size_t);
void dgesdd_(const char *, const int *, const int *, void *, const int *, void *, void *,
             const int *, void *, const int *, void *, const int *, int *, int *, size_t);
void cgesdd_(const char *, const int *, const int *, void *, const int *, void *, void *,
             const int *, void *, const int *, void *, const int *, void *, int *, int *, size_t);
void zgesdd_(const char *, const int *, const int *, void *, const int *, void *, void *,
             const int *, void *, const int *, void *, const int *, void *, int *, int *, size_t);
/* gesvd(jobu, jobvt, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, [rwork,] info) */
void sgesvd_(const char *, const char *, const int *, const int *, void *, const int *, void *,
             void *, const int *, void *, const int *, void *, const int *, int *, size_t, size_t);
void dgesvd_(const char *, const char *, const int *, const int *, void *, const int *, void *,
             void *, const int *, void *, const int *, void *, const int *, int *, size_t, size_t);
void cgesvd_(const char *, const char *, const int *, const int *, void *, const int *, void *,
             void *, const int *, void *, const int *, void *, const int *, void *, int *, size_t,
             size_t);
void zgesvd_(const char *, const char *, const int *, const int *, void *, const int *, void *,
             void *, const int *, void *, const int *, void *, const int *, void *, int *, size_t,
             size_t);
/* geev real(jobvl, jobvr, n, a, lda, wr, wi, vl, ldvl, vr, ldvr, work, lwork, info);
 * complex(jobvl, jobvr, n, a, lda, w, vl, ldvl, vr, ldvr, work, lwork, rwork, info) */
void sgeev_(const char *, const char *, const int *, void *, const int *, void *, void *, void *,
            const int *, void *, const int *, void *, const int *, int *, size_t, size_t);
void dgeev_(const char *, const char *, const int *, void *, const int *, void *, void *, void *,
            const int *, void *, const int *, void *, const int *, int *, size_t, size_t);
void cgeev_(const char *, const char *, const int *, void *, const int *, void *, void *,
            const int *, void *, const int *, void *, const int *, void *, int *, size_t, size_t);
void zgeev_(const char *, const char *, const int *, void *, const int *, void *, void *,
            const int *, void *, const int *, void *, const int *, void *, int *, size_t, size_t);
/* gees real(jobvs, sort, select, n, a, lda, sdim, wr, wi, vs, ldvs, work, lwork, bwork, info);
 * complex(jobvs, sort, select, n, a, lda, sdim, w, vs, ldvs, work, lwork, rwork, bwork, info) */
void sgees_(const char *, const char *, lapack_select_fn, const int *, void *, const int *, int *,
            void *, void *, void *, const int *, void *, const int *, int *, int *, size_t,
            size_t);
void dgees_(const char *, const char *, lapack_select_fn, const int *, void *, const int *, int *,
            void *, void *, void *, const int *, void *, const int *, int *, int *, size_t,
            size_t);
void cgees_(const char *, const char *, lapack_select_fn, const int *, void *, const int *, int *,
            void *, void *, const int *, void *, const int *, void *, int *, int *, size_t,
            size_t);
void zgees_(const char *, const char *, lapack_select_fn, const int *, void *, const int *, int *,
            void *, void *, const int *, void *, const int *, void *, int *, int *, size_t,
            size_t);
/* gehrd(n, ilo, ihi, a, lda, tau, work, lwork, info) */
#define DECL_GEHRD(t)                                                                          \
  void t##gehrd_(const int *, const int *, const int *, void *, const int *, void *, void *,   \
                 const int *, int *);
LAPACK_ALL4(DECL_GEHRD)
/* sytrd/hetrd(uplo, n, a, lda, d, e, tau, work, lwork, info) */
#define DECL_SYTRD(t, name)                                                                     \
  void t##name##_(const char *, const int *, void *, const int *, void *, void *, void *, void *, \
                  const int *, int *, size_t);
DECL_SYTRD(s, sytrd)
DECL_SYTRD(d, sytrd)
DECL_SYTRD(c, hetrd)
DECL_SYTRD(z, hetrd)

#undef DECL_POTRF
#undef DECL_GETRF
#undef DECL_GEQRF
#undef DECL_ORGQR
#undef DECL_ORMQR
#undef DECL_TRSM
#undef DECL_GTSV
#undef DECL_GEHRD
#undef DECL_SYTRD
#undef LAPACK_ALL4

#endif
