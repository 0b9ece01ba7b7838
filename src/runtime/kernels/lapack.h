/* JAX's CPU linear-algebra custom calls (`lapack_<t><routine>_ffi`, t in s/d/c/z), served by
 * the LAPACK inside OpenBLAS.
 *
 * JAX lowers eigh, svd, eig, qr, schur, hessenberg... for its "cpu" platform to typed-FFI
 * custom calls (api_version 4) whose operands and results are batches of matrices in the
 * layouts named by operand_layouts/result_layouts (column-major matrices, batch dims
 * outermost), with attributes in mhlo.backend_config. Our values are row-major, so each
 * operand is first laid out as its layout says, the routine runs on those bytes exactly as
 * jaxlib's kernel would, and results are read back through their layouts.
 *
 * Compile time: av_lapack_prepare checks the call's signature against what the routine
 * produces and decodes its attributes. Run time: av_step_lapack. */
#ifndef ANVIL_RUNTIME_KERNELS_LAPACK_H
#define ANVIL_RUNTIME_KERNELS_LAPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/kernels/kernel_api.h"
#include "runtime/plan.h"

typedef enum av_lapack_routine {
  AV_LAPACK_POTRF,
  AV_LAPACK_GETRF,
  AV_LAPACK_GEQRF,
  AV_LAPACK_GEQP3,
  AV_LAPACK_ORGQR, /* orgqr / ungqr */
  AV_LAPACK_ORMQR, /* ormqr / unmqr */
  AV_LAPACK_TRSM,
  AV_LAPACK_GTSV,
  AV_LAPACK_SYEVD, /* syevd / heevd */
  AV_LAPACK_GESDD,
  AV_LAPACK_GESVD,
  AV_LAPACK_GEEV,
  AV_LAPACK_GEES,
  AV_LAPACK_GEHRD,
  AV_LAPACK_SYTRD, /* sytrd / hetrd */
  /* tridiagonal_solve_perturbed_ffi (jaxlib's own kernel, not LAPACK's): a pivoted solve whose
   * near-zero pivots are perturbed so that a singular system still gives finite values */
  AV_LAPACK_GTSV_PERTURBED,
} av_lapack_routine;

enum { AV_LAPACK_MAX_ARGS = 8, AV_LAPACK_MAX_RANK = 16 };

/* Shape of one operand or result, with the layout the custom call gives it. */
typedef struct av_lapack_arg {
  av_dtype dtype;
  int rank;
  int64_t dims[AV_LAPACK_MAX_RANK];
  int64_t minor_to_major[AV_LAPACK_MAX_RANK]; /* a permutation of 0..rank-1 */
} av_lapack_arg;

typedef struct av_lapack_call {
  av_lapack_routine routine;
  av_dtype dtype; /* the matrices' element type: f32, f64, c64 or c128 */
  uint32_t nin, nout;
  av_lapack_arg in[AV_LAPACK_MAX_ARGS], out[AV_LAPACK_MAX_ARGS];
  /* decoded attributes (LAPACK's one-letter codes), per routine */
  char uplo, side, trans, diag; /* potrf/syevd/sytrd: uplo; trsm: all four; ormqr: side/trans */
  char mode;                    /* syevd: 'V'/'N'; gesdd/gesvd: 'A'/'S'/'N'; gees: 'V'/'N' */
  char jobvl, jobvr;            /* geev */
  int32_t low, high;            /* gehrd */
  int64_t batch;                /* product of the leading (batch) dims of the main matrix */
  /* syevd: a batch of small real matrices may run as Jacobi across SIMD lanes (faster for
   * thousands of tiny matrices; eigenvector signs then differ from LAPACK's). Off unless the
   * compiler was asked (ANVIL_BATCHED_EIGH=1): with it, signs would change with the batch
   * size, so a vmapped or sharded eigh would disagree with its unbatched self. */
  bool lanes_eigh;
} av_lapack_call;

/* Whether `target` names a call served here; sets the routine and element type (AV_DT_INVALID
 * for tridiagonal_solve_perturbed_ffi, whose name has no type letter: its operands tell). */
bool av_lapack_target(const char *target, av_lapack_routine *routine, av_dtype *dtype);

/* Fills `call` for target `target` from the operand/result shapes already in call->in/out
 * (nin, nout set; a layout the call does not give must be row-major, i.e. rank-1..0) and the
 * backend_config dictionary (may be NULL). On a mismatch writes why into err and returns
 * AV_INVALID_ARGUMENT (or AV_UNIMPLEMENTED for options we do not serve). */
av_code av_lapack_prepare(const char *target, const av_attr *backend_config, av_lapack_call *call,
                          char *err, size_t errcap);

/* Step: in = the call's operands, out = its results (params: av_lapack_call). */
av_code av_step_lapack(const av_step *s, av_frame *f, av_diag *d);

/* Runs the routine on buffers already in the call's layouts (phys_in/phys_out hold the
 * bytes as the custom call's layouts place them). */
struct av_lapack_fns;
struct av_thread_pool;
/* `pool` (may be NULL) runs batches of small matrices in chunks of whole matrices, and the
 * batched small-matrix routines (linalg_batched.h); results do not depend on its size. */
av_code av_lapack_run(const av_lapack_call *call, const struct av_lapack_fns *fns,
                      struct av_thread_pool *pool, void *const *phys_in, void *const *phys_out,
                      av_diag *d);

#endif
