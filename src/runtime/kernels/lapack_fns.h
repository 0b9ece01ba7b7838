/* The LAPACK/BLAS routines the LAPACK custom calls use, as a table that can replace the ones
 * anvil links (the system OpenBLAS). JAX's CPU backend runs scipy's LAPACK (jaxlib takes the
 * function pointers scipy.linalg.cython_lapack / cython_blas export); given the same pointers
 * (client create option `lapack_functions`, set by the Python package), anvil's results are
 * bit-identical to XLA:CPU's. Different LAPACK builds give different, equally valid answers
 * where the answer is not unique (e.g. the Schur form of a 100x100 matrix), and JAX's tests
 * compare those against scipy's. An entry left NULL uses the linked routine. */
#ifndef ANVIL_RUNTIME_KERNELS_LAPACK_FNS_H
#define ANVIL_RUNTIME_KERNELS_LAPACK_FNS_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/kernels/lapack_fortran.h"

#define AV_LAPACK_FN_NAMES(X)                                                                  \
  X(spotrf) X(dpotrf) X(cpotrf) X(zpotrf) X(sgetrf) X(dgetrf) X(cgetrf) X(zgetrf)              \
  X(sgeqrf) X(dgeqrf) X(cgeqrf) X(zgeqrf) X(sgeqp3) X(dgeqp3) X(cgeqp3) X(zgeqp3)              \
  X(sorgqr) X(dorgqr) X(cungqr) X(zungqr) X(sormqr) X(dormqr) X(cunmqr) X(zunmqr)              \
  X(strsm) X(dtrsm) X(ctrsm) X(ztrsm) X(sgtsv) X(dgtsv) X(cgtsv) X(zgtsv)                      \
  X(ssyevd) X(dsyevd) X(cheevd) X(zheevd) X(sgesdd) X(dgesdd) X(cgesdd) X(zgesdd)              \
  X(sgesvd) X(dgesvd) X(cgesvd) X(zgesvd) X(sgeev) X(dgeev) X(cgeev) X(zgeev)                  \
  X(sgees) X(dgees) X(cgees) X(zgees) X(sgehrd) X(dgehrd) X(cgehrd) X(zgehrd)                  \
  X(ssytrd) X(dsytrd) X(chetrd) X(zhetrd)

typedef struct av_lapack_fns {
#define AV_LAPACK_FN_FIELD(name) __typeof__(name##_) *name;
  AV_LAPACK_FN_NAMES(AV_LAPACK_FN_FIELD)
#undef AV_LAPACK_FN_FIELD
} av_lapack_fns;

/* A table from a list of {routine name ("dgees"), address} ending with a NULL name; an
 * unknown name is refused (NULL, with why in err). Free with av_lapack_table_free. */
typedef struct av_lapack_fn_entry {
  const char *name;
  void *fn;
} av_lapack_fn_entry;
av_lapack_fns *av_lapack_table_new(const av_lapack_fn_entry *entries, char *err, size_t errcap);
void av_lapack_table_free(av_lapack_fns *f);

/* Sets entry `name` (e.g. "dgees"); false for a name not in the table. */
bool av_lapack_fns_set(av_lapack_fns *f, const char *name, void *fn);

/* The routine to call: the table's entry when there is one, else the linked routine. */
#define AV_LAPACK(fns, name) ((fns) && (fns)->name ? (fns)->name : name##_)

#endif
