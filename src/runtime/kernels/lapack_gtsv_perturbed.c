/* tridiagonal_solve_perturbed_ffi: JAX's CPU lowering of
 * lax.linalg.tridiagonal_solve(..., perturb_singular=True) (jaxlib serves it with its own
 * kernel, not a LAPACK routine). Solves T X = B for a tridiagonal T by Gaussian elimination
 * with partial (row) pivoting, fused with the forward solve, then back substitution through
 * U's three diagonals, as LAPACK's xLAGTF/xLAGTS do. A pivot of U small enough that dividing
 * by it would overflow (zero included: T singular) is moved away from zero by
 * eps * max|U(i,j)|, doubled until the division is safe, so a singular system (inverse
 * iteration's (T - lambda I) X = B) gives large finite values instead of inf/nan.
 *
 * Operands dl, d, du (batch..., n; dl[0] and du[n-1] unused) and b (batch..., n, k), result x
 * like b; the custom call's layouts make b and x column-major (element (i, j) at i + j * n),
 * which the caller has applied. */
#include <complex.h>
#include <float.h>
#include <math.h>

#include "runtime/kernels/lapack_internal.h"

#define DEFINE_SOLVER(NAME, T, R, ABS, RE, EPS, RMIN, RMAX)                                      \
  /* Moves *pivot away from zero until row / *pivot cannot overflow (row may be rescaled). */  \
  static void NAME##_perturb(R perturb, T *pivot, T *row, int k) {                             \
    const R one = 1, small = one / RMAX;                                                       \
    const R safemin = small < RMIN ? RMIN : small * (one + EPS), bignum = one / safemin;       \
    R a = ABS(*pivot);                                                                         \
    if (a >= one) return;                                                                      \
    perturb = copysign(fmax(fabs(perturb), safemin), RE(*pivot));                              \
    R maxf = 0;                                                                                \
    for (int j = 0; j < k; j++) maxf = fmax(maxf, ABS(row[j]));                                \
    while (a < one) {                                                                          \
      if (a < safemin) {                                                                       \
        if (a == 0 || maxf * safemin > a) {                                                    \
          *pivot += perturb;                                                                   \
          perturb *= 2;                                                                        \
        } else { /* tiny but usable: scale the row and the pivot up together */                \
          *pivot *= bignum;                                                                    \
          for (int j = 0; j < k; j++) row[j] *= bignum;                                        \
          return;                                                                              \
        }                                                                                      \
      } else if (maxf > a * bignum) {                                                          \
        *pivot += perturb;                                                                     \
        perturb *= 2;                                                                          \
      } else {                                                                                 \
        return;                                                                                \
      }                                                                                        \
      a = ABS(*pivot);                                                                         \
    }                                                                                          \
  }                                                                                            \
                                                                                               \
  /* One system: u holds 3n scratch elements (U's diagonal, super, second super), row k. */    \
  static void NAME(int n, int k, const T *dl, const T *d, const T *du, const T *b, T *x, T *u, \
                   T *row) {                                                                   \
    if (n == 0) return;                                                                        \
    T *u0 = u, *u1 = u + n, *u2 = u + 2 * n;                                                   \
    for (int i = 0; i < 3 * n; i++) u[i] = 0;                                                  \
    for (int j = 0; j < k; j++) x[(size_t)j * n] = b[(size_t)j * n];                          \
    u0[0] = d[0];                                                                              \
    u1[0] = n > 1 ? du[0] : 0;                                                                 \
    R maxu = fmax(ABS(u0[0]), ABS(u1[0]));                                                     \
    for (int i = 0; i + 1 < n; i++) {                                                          \
      const T sub = dl[i + 1], next_du = i + 2 < n ? du[i + 1] : 0;                            \
      if (ABS(u0[i]) >= ABS(sub)) { /* row i stays the pivot row */                            \
        const T m = u0[i] != 0 ? sub / u0[i] : 0;                                              \
        u0[i + 1] = d[i + 1] - m * u1[i];                                                      \
        u1[i + 1] = next_du;                                                                   \
        for (int j = 0; j < k; j++) {                                                          \
          size_t at = (size_t)j * n + (size_t)i;                                               \
          x[at + 1] = b[at + 1] - m * x[at];                                                   \
        }                                                                                      \
      } else { /* row i + 1 becomes the pivot row; row i is eliminated with it */              \
        const T m = u0[i] / sub, old_u1 = u1[i];                                               \
        u0[i] = sub;                                                                           \
        u1[i] = d[i + 1];                                                                      \
        u2[i] = next_du;                                                                       \
        u0[i + 1] = old_u1 - m * d[i + 1];                                                     \
        u1[i + 1] = -m * next_du;                                                              \
        for (int j = 0; j < k; j++) {                                                          \
          size_t at = (size_t)j * n + (size_t)i;                                               \
          T kept = x[at];                                                                      \
          x[at] = b[at + 1];                                                                   \
          x[at + 1] = kept - m * b[at + 1];                                                    \
        }                                                                                      \
      }                                                                                        \
      maxu = fmax(maxu, fmax(fmax(ABS(u0[i]), ABS(u1[i])), ABS(u2[i])));                       \
      maxu = fmax(maxu, fmax(ABS(u0[i + 1]), ABS(u1[i + 1])));                                 \
    }                                                                                          \
    const R perturb = EPS * maxu;                                                              \
    for (int i = n - 1; i >= 0; i--) {                                                         \
      for (int j = 0; j < k; j++) {                                                            \
        size_t at = (size_t)j * n + (size_t)i;                                                 \
        T v = x[at];                                                                           \
        if (i + 1 < n) v -= u1[i] * x[at + 1];                                                 \
        if (i + 2 < n) v -= u2[i] * x[at + 2];                                                 \
        row[j] = v;                                                                            \
      }                                                                                        \
      T pivot = u0[i];                                                                         \
      NAME##_perturb(perturb, &pivot, row, k);                                                 \
      const T inv = 1 / pivot;                                                                 \
      for (int j = 0; j < k; j++) x[(size_t)j * n + (size_t)i] = row[j] * inv;                 \
    }                                                                                          \
  }

DEFINE_SOLVER(solve_s, float, float, fabsf, (float), FLT_EPSILON, FLT_MIN, FLT_MAX)
DEFINE_SOLVER(solve_d, double, double, fabs, (double), DBL_EPSILON, DBL_MIN, DBL_MAX)
DEFINE_SOLVER(solve_c, float complex, float, cabsf, crealf, FLT_EPSILON, FLT_MIN, FLT_MAX)
DEFINE_SOLVER(solve_z, double complex, double, cabs, creal, DBL_EPSILON, DBL_MIN, DBL_MAX)

av_code lapack_run_gtsv_perturbed(const lapack_ctx *x) {
  const av_lapack_arg *b = &x->c->in[3];
  int n = (int)b->dims[b->rank - 2], k = (int)b->dims[b->rank - 1];
  char *u = lapack_scratch(x, 3 * (int64_t)n, x->es);
  char *row = u ? lapack_scratch(x, k, x->es) : NULL;
  if (!u || !row) {
    free(u);
    return x->d->code;
  }
  for (int64_t i = 0; i < x->c->batch; i++) {
    const char *dl = lapack_at(x->in[0], i, n, x->es), *d = lapack_at(x->in[1], i, n, x->es);
    const char *du = lapack_at(x->in[2], i, n, x->es);
    const char *bi = lapack_at(x->in[3], i, (int64_t)n * k, x->es);
    char *xi = lapack_at(x->out[0], i, (int64_t)n * k, x->es);
#define SOLVE(fn) fn(n, k, (const void *)dl, (const void *)d, (const void *)du, \
                         (const void *)bi, (void *)xi, (void *)u, (void *)row)
    switch (x->ti) {
      case 0: SOLVE(solve_s); break;
      case 1: SOLVE(solve_d); break;
      case 2: SOLVE(solve_c); break;
      default: SOLVE(solve_z); break;
    }
#undef SOLVE
  }
  free(u);
  free(row);
  return AV_OK;
}
