/* Batched small real matrices across SIMD lanes (see linalg_batched.h).
 *
 * A group of LANES matrices is moved into "lane-major" storage, element e of matrix l at
 * s[e * LANES + l], so that every loop over l is one vector operation; the algorithms are the
 * textbook ones written with those loops innermost, in AV_CLONES_FMA functions (fused
 * multiply-adds are explicit fma calls: one instruction in the clones that have it, the same
 * rounding in the baseline copy). Lanes past the batch hold an identity matrix. */
#include "runtime/kernels/linalg_batched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/simd_clones.h"
#include "runtime/thread_pool.h"

#if defined(__GNUC__) && !defined(__clang__)
/* 64-byte vectors only live inside the functions (the SIMD clones) that use them */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/* XLA's block size: up to it, one diagonal block (triangular_solve_xla.c) */
enum { kXlaTrsmBlock = 128 };

bool av_trsm_batched_applies(int64_t n, int64_t batch) {
  /* where triangular_solve_xla.c's XLA algorithm is the direct substitution (n < 32), or the
   * inversion of the one diagonal block (n up to XLA's block size) */
  return n >= 2 && n <= kXlaTrsmBlock && batch > 8;
}

enum { GATHER_BLOCK = 64 }; /* elements per block of gather_ / scatter_ */

#define DEFINE_BATCHED(SUF, T, LANES, FMA, SQRT, ABS)                                             \
  /* s[e * LANES + l] = src[(g + l) * nn + e]; lanes past cnt get `fill` (identity or 0).    \
   * In blocks of GATHER_BLOCK elements: one lane at a time over the whole matrix walked all   \
   * of s (64 KiB for 16 32x32 f32 matrices, more than L1) once per lane. */                  \
  static void gather_##SUF(T *restrict s, const T *restrict src, int64_t g, int cnt,          \
                           int64_t nn, int64_t n_ident) {                                      \
    for (int64_t e0 = 0; e0 < nn; e0 += GATHER_BLOCK) {                                        \
      int64_t e1 = nn - e0 < GATHER_BLOCK ? nn : e0 + GATHER_BLOCK;                            \
      for (int l = 0; l < cnt; l++) {                                                          \
        const T *m = src + (g + l) * nn;                                                       \
        for (int64_t e = e0; e < e1; e++) s[e * LANES + l] = m[e];                             \
      }                                                                                        \
    }                                                                                          \
    for (int l = cnt; l < LANES; l++)                                                          \
      for (int64_t e = 0; e < nn; e++)                                                         \
        s[e * LANES + l] = n_ident && e % (n_ident + 1) == 0 ? 1 : 0;                          \
  }                                                                                            \
  static void scatter_##SUF(T *restrict dst, const T *restrict s, int64_t g, int cnt,         \
                            int64_t nn) {                                                      \
    for (int64_t e0 = 0; e0 < nn; e0 += GATHER_BLOCK) {                                        \
      int64_t e1 = nn - e0 < GATHER_BLOCK ? nn : e0 + GATHER_BLOCK;                            \
      for (int l = 0; l < cnt; l++) {                                                          \
        T *m = dst + (g + l) * nn;                                                             \
        for (int64_t e = e0; e < e1; e++) m[e] = s[e * LANES + l];                             \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
                                                                                               \
  /* Cholesky-Crout of the lower triangle of s (lane-major, row-major n x n) into L, in       \
   * place; bad[l] set where a pivot is not positive. */                                      \
  AV_CLONES_FMA static void chol_lanes_##SUF(T *restrict s, int *restrict bad, int64_t n) {    \
    T d[LANES], t[LANES];                                                                      \
    for (int64_t j = 0; j < n; j++) {                                                          \
      T *sjj = s + (j * n + j) * LANES;                                                        \
      for (int l = 0; l < LANES; l++) t[l] = sjj[l];                                           \
      for (int64_t k = 0; k < j; k++) {                                                        \
        const T *ljk = s + (j * n + k) * LANES;                                                \
        for (int l = 0; l < LANES; l++) t[l] = FMA(-ljk[l], ljk[l], t[l]);                     \
      }                                                                                        \
      for (int l = 0; l < LANES; l++) {                                                        \
        bad[l] |= !(t[l] > 0);                                                                 \
        d[l] = SQRT(t[l]);                                                                     \
        sjj[l] = d[l];                                                                         \
      }                                                                                        \
      int64_t i = j + 1;                                                                       \
      /* four rows at a time: four independent chains of fused multiply-adds (one row's      \
       * chain waited on the previous one's latency at every k), each row's the same */       \
      for (; i + 4 <= n; i += 4) {                                                             \
        T t0[LANES], t1[LANES], t2[LANES], t3[LANES];                                          \
        T *si = s + (i * n + j) * LANES;                                                       \
        for (int l = 0; l < LANES; l++) {                                                      \
          t0[l] = si[l];                                                                       \
          t1[l] = si[n * LANES + l];                                                           \
          t2[l] = si[2 * n * LANES + l];                                                       \
          t3[l] = si[3 * n * LANES + l];                                                       \
        }                                                                                      \
        for (int64_t k = 0; k < j; k++) {                                                      \
          const T *lik = s + (i * n + k) * LANES, *ljk = s + (j * n + k) * LANES;              \
          for (int l = 0; l < LANES; l++) {                                                    \
            T lj = ljk[l];                                                                     \
            t0[l] = FMA(-lik[l], lj, t0[l]);                                                   \
            t1[l] = FMA(-lik[n * LANES + l], lj, t1[l]);                                       \
            t2[l] = FMA(-lik[2 * n * LANES + l], lj, t2[l]);                                   \
            t3[l] = FMA(-lik[3 * n * LANES + l], lj, t3[l]);                                   \
          }                                                                                    \
        }                                                                                      \
        for (int l = 0; l < LANES; l++) {                                                      \
          si[l] = t0[l] / d[l];                                                                \
          si[n * LANES + l] = t1[l] / d[l];                                                    \
          si[2 * n * LANES + l] = t2[l] / d[l];                                                \
          si[3 * n * LANES + l] = t3[l] / d[l];                                                \
        }                                                                                      \
      }                                                                                        \
      for (; i < n; i++) {                                                                     \
        T *sij = s + (i * n + j) * LANES;                                                      \
        for (int l = 0; l < LANES; l++) t[l] = sij[l];                                         \
        for (int64_t k = 0; k < j; k++) {                                                      \
          const T *lik = s + (i * n + k) * LANES, *ljk = s + (j * n + k) * LANES;              \
          for (int l = 0; l < LANES; l++) t[l] = FMA(-lik[l], ljk[l], t[l]);                   \
        }                                                                                      \
        for (int l = 0; l < LANES; l++) sij[l] = t[l] / d[l];                                  \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
                                                                                               \
  bool av_cholesky_batched_##SUF(bool lower, const T *a, T *out, int64_t n, int64_t batch) {   \
    int64_t nn = n * n;                                                                        \
    T *s = malloc(sizeof(T) * (size_t)(nn * LANES));                                           \
    if (!s) return false;                                                                      \
    for (int64_t g = 0; g < batch; g += LANES) {                                               \
      int cnt = batch - g < LANES ? (int)(batch - g) : LANES;                                  \
      gather_##SUF(s, a, g, cnt, nn, n);                                                       \
      if (!lower) /* the upper triangle, read as the lower one of the transpose */            \
        for (int64_t i = 0; i < n; i++)                                                        \
          for (int64_t j = 0; j < i; j++)                                                      \
            memcpy(s + (i * n + j) * LANES, s + (j * n + i) * LANES, sizeof(T) * LANES);       \
      int bad[LANES] = {0};                                                                    \
      chol_lanes_##SUF(s, bad, n);                                                             \
      /* the result triangle (upper: the transpose back), the other zero, NaN where bad */     \
      for (int64_t i = 0; i < n; i++)                                                          \
        for (int64_t j = 0; j < i; j++) {                                                      \
          T *lo = s + (i * n + j) * LANES, *up = s + (j * n + i) * LANES;                      \
          for (int l = 0; l < LANES; l++) {                                                    \
            up[l] = lower ? 0 : lo[l];                                                         \
            lo[l] = lower ? lo[l] : 0;                                                         \
          }                                                                                    \
        }                                                                                      \
      for (int64_t e = 0; e < nn; e++)                                                         \
        for (int l = 0; l < LANES; l++)                                                        \
          if (bad[l]) s[e * LANES + l] = (T)NAN;                                               \
      scatter_##SUF(out, s, g, cnt, nn);                                                       \
    }                                                                                          \
    free(s);                                                                                   \
    return true;                                                                               \
  }                                                                                            \
                                                                                               \
  /* XLA's direct substitution on lane-major a (n x n) and b (m x nb), b overwritten with x;  \
   * acc (nb lanes) and w (n lanes) are scratch. See triangular_solve_xla.c. */                 \
  AV_CLONES_FMA static void trsm_lanes_##SUF(const av_triangular_solve_params *p,              \
                                             const T *restrict a, T *restrict b,               \
                                             T *restrict acc, T *restrict w, int64_t n,        \
                                             int64_t m, int64_t nb) {                          \
    bool tr = p->transpose_a != AV_TRANSPOSE_NO_TRANSPOSE;                                     \
    bool forward = tr ^ p->lower ^ !p->left_side;                                              \
    for (int64_t i = 0; i < n; i++) {                                                          \
      int64_t j = forward ? i : n - 1 - i;                                                     \
      int64_t k0 = forward ? 0 : j + 1, k1 = forward ? j : n, cnt = k1 - k0;                   \
      const T *diag = a + (j * n + j) * LANES;                                                 \
      if (p->left_side) { /* b[j, :] -= op(a)[j, k0:k1] @ b[k0:k1, :], summed from k0 */      \
        for (int64_t k = 0; k < cnt; k++) {                                                    \
          const T *src = a + (tr ? (k0 + k) * n + j : j * n + k0 + k) * LANES;                 \
          for (int l = 0; l < LANES; l++) w[k * LANES + l] = src[l];                           \
        }                                                                                      \
        for (int64_t c = 0; c < nb * LANES; c++) acc[c] = 0;                                   \
        for (int64_t k = 0; k < cnt; k++)                                                      \
          for (int64_t c = 0; c < nb; c++) {                                                   \
            const T *bk = b + ((k0 + k) * nb + c) * LANES, *wk = w + k * LANES;                \
            T *ac = acc + c * LANES;                                                           \
            for (int l = 0; l < LANES; l++) ac[l] = FMA(wk[l], bk[l], ac[l]);                  \
          }                                                                                    \
        for (int64_t c = 0; c < nb; c++) {                                                     \
          T *bj = b + (j * nb + c) * LANES;                                                    \
          const T *ac = acc + c * LANES;                                                       \
          for (int l = 0; l < LANES; l++) {                                                    \
            T v = bj[l] - ac[l];                                                               \
            bj[l] = p->unit_diagonal ? v : v / diag[l];                                        \
          }                                                                                    \
        }                                                                                      \
      } else { /* b[:, j] -= b[:, k0:k1] @ op(a)[k0:k1, j] */                                 \
        for (int64_t r = 0; r < m; r++) {                                                      \
          T *sum = acc;                                                                        \
          for (int l = 0; l < LANES; l++) sum[l] = 0;                                          \
          for (int64_t k = 0; k < cnt; k++) {                                                  \
            const T *bk = b + (r * nb + k0 + k) * LANES;                                       \
            const T *ak = a + (tr ? j * n + k0 + k : (k0 + k) * n + j) * LANES;                \
            for (int l = 0; l < LANES; l++) sum[l] = FMA(bk[l], ak[l], sum[l]);                \
          }                                                                                    \
          T *bj = b + (r * nb + j) * LANES;                                                    \
          for (int l = 0; l < LANES; l++) {                                                    \
            T v = bj[l] - sum[l];                                                              \
            bj[l] = p->unit_diagonal ? v : v / diag[l];                                        \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
                                                                                               \
  /* XLA's inversion of the one diagonal block, then the product (triangular_solve_xla.c's   \
   * _inverse, the same operations per lane): on lane-major a (n x n) and b (m x nb), b       \
   * overwritten with x. Scratch: s, o (n x n each), x (m x nb), d (n), odd (max(n, nb)). */  \
  AV_CLONES_FMA static void trsm_inv_lanes_##SUF(const av_triangular_solve_params *p,          \
                                                 const T *restrict a, T *restrict b,           \
                                                 T *restrict s, T *restrict o, T *restrict x,  \
                                                 T *restrict d, T *restrict odd, int64_t n,    \
                                                 int64_t m, int64_t nb) {                      \
    for (int64_t r = 0; r < n; r++) /* the triangle read, scaled to a unit diagonal */         \
      for (int64_t c = 0; c < n; c++) {                                                        \
        bool in = p->lower ? c <= r : c >= r;                                                  \
        const T *src = a + (r * n + c) * LANES;                                                \
        T *dst = s + (r * n + c) * LANES;                                                      \
        for (int l = 0; l < LANES; l++)                                                        \
          dst[l] = r == c ? (p->unit_diagonal ? 1 : src[l]) : in ? src[l] : 0;                 \
      }                                                                                        \
    for (int64_t i = 0; i < n; i++)                                                            \
      for (int l = 0; l < LANES; l++) d[i * LANES + l] = s[(i * n + i) * LANES + l];           \
    for (int64_t r = 0; r < n; r++)                                                            \
      for (int64_t c = 0; c < n; c++)                                                          \
        for (int l = 0; l < LANES; l++) s[(r * n + c) * LANES + l] /= d[c * LANES + l];        \
    /* With every entry of s finite, a product with a zero entry of o is a zero that leaves     \
     * the running sum as it was (the sum starts at +0 and never becomes -0), so each sum       \
     * below may skip the k where o[k][c] is known zero: half the work, the same bits. */     \
    int finite = 1;                                                                            \
    for (int64_t e = 0; e < n * n * LANES; e++) finite &= s[e] - s[e] == 0;                    \
    int64_t first = p->lower ? 0 : n - 1;                                                      \
    for (int64_t r = 0; r < n; r++)                                                            \
      for (int64_t c = 0; c < n; c++)                                                          \
        for (int l = 0; l < LANES; l++)                                                        \
          o[(r * n + c) * LANES + l] = r == c ? (r == first ? 1 : -1) : 0;                     \
    /* row j <- -(s[j, :] @ o), summed in order; the terms past j's side of the triangle     \
     * are 0 * (0 or -1) (rows of o not computed yet): adding them changes no bit */          \
    for (int64_t i = 1; i < n; i++) {                                                          \
      int64_t j = p->lower ? i : n - 1 - i;                                                    \
      int64_t k0 = p->lower ? 0 : j, k1 = p->lower ? j + 1 : n;                                \
      int64_t c = 0;                                                                           \
      for (; c + 4 <= n; c += 4) { /* four columns' sums held in registers across k */        \
        T acc[4][LANES];                                                                       \
        for (int q = 0; q < 4; q++)                                                            \
          for (int l = 0; l < LANES; l++) acc[q][l] = 0;                                       \
        /* o is triangular: o[k][c'] is zero for k < c' (lower) or k > c' (upper) */           \
        int64_t kb = finite && p->lower && c > k0 ? c : k0;                                    \
        int64_t ke = finite && !p->lower && c + 4 < k1 ? c + 4 : k1;                           \
        for (int64_t k = kb; k < ke; k++) {                                                    \
          const T *w = s + (j * n + k) * LANES, *ok = o + (k * n + c) * LANES;                 \
          for (int q = 0; q < 4; q++)                                                          \
            for (int l = 0; l < LANES; l++) acc[q][l] = FMA(w[l], ok[q * LANES + l], acc[q][l]); \
        }                                                                                      \
        for (int q = 0; q < 4; q++)                                                            \
          for (int l = 0; l < LANES; l++) o[(j * n + c + q) * LANES + l] = -acc[q][l];         \
      }                                                                                        \
      for (; c < n; c++) {                                                                     \
        T acc[LANES];                                                                          \
        for (int l = 0; l < LANES; l++) acc[l] = 0;                                            \
        int64_t kb = finite && p->lower && c > k0 ? c : k0;                                    \
        int64_t ke = finite && !p->lower && c + 1 < k1 ? c + 1 : k1;                           \
        for (int64_t k = kb; k < ke; k++) {                                                    \
          const T *w = s + (j * n + k) * LANES, *ok = o + (k * n + c) * LANES;                 \
          for (int l = 0; l < LANES; l++) acc[l] = FMA(w[l], ok[l], acc[l]);                   \
        }                                                                                      \
        for (int l = 0; l < LANES; l++) o[(j * n + c) * LANES + l] = -acc[l];                  \
      }                                                                                        \
    }                                                                                          \
    for (int64_t r = 0; r < n; r++)                                                            \
      for (int64_t c = 0; c < n; c++)                                                          \
        for (int l = 0; l < LANES; l++) o[(r * n + c) * LANES + l] /= d[r * LANES + l];        \
    bool tr = p->transpose_a != AV_TRANSPOSE_NO_TRANSPOSE; /* s <- op(inverse) */             \
    for (int64_t r = 0; r < n; r++)                                                            \
      for (int64_t c = 0; c < n; c++)                                                          \
        for (int l = 0; l < LANES; l++)                                                        \
          s[(r * n + c) * LANES + l] = o[(tr ? c * n + r : r * n + c) * LANES + l];            \
    /* x = op(inv) @ b (left) or b @ op(inv) (right), each element in Eigen's order: the     \
     * first (K / 8) * 8 terms alternate between two partial sums, added before the rest */   \
    int64_t nc = p->left_side ? nb : n, peeled = n & ~(int64_t)7;                              \
    for (int64_t r = 0; r < m; r++) {                                                          \
      const T *w = p->left_side ? s + r * n * LANES : b + r * nb * LANES;                      \
      const T *rows = p->left_side ? b : s;                                                    \
      T *out = x + r * nc * LANES;                                                             \
      for (int64_t c = 0; c < nc * LANES; c++) out[c] = odd[c] = 0;                            \
      for (int64_t k = 0; k < peeled; k += 2) {                                                \
        const T *r0 = rows + k * nc * LANES, *r1 = r0 + nc * LANES;                            \
        const T *w0 = w + k * LANES, *w1 = w0 + LANES;                                         \
        for (int64_t c = 0; c < nc; c++)                                                       \
          for (int l = 0; l < LANES; l++) {                                                    \
            out[c * LANES + l] = FMA(w0[l], r0[c * LANES + l], out[c * LANES + l]);            \
            odd[c * LANES + l] = FMA(w1[l], r1[c * LANES + l], odd[c * LANES + l]);            \
          }                                                                                    \
      }                                                                                        \
      for (int64_t c = 0; c < nc * LANES; c++) out[c] += odd[c];                               \
      for (int64_t k = peeled; k < n; k++) {                                                   \
        const T *r0 = rows + k * nc * LANES, *w0 = w + k * LANES;                              \
        for (int64_t c = 0; c < nc; c++)                                                       \
          for (int l = 0; l < LANES; l++)                                                      \
            out[c * LANES + l] = FMA(w0[l], r0[c * LANES + l], out[c * LANES + l]);            \
      }                                                                                        \
    }                                                                                          \
    memcpy(b, x, sizeof(T) * (size_t)(m * nb * LANES));                                        \
  }                                                                                            \
                                                                                               \
  static bool trsm_inv_batched_##SUF(const av_triangular_solve_params *p, const T *a,          \
                                     const T *b, T *out, int64_t n, int64_t m, int64_t nb,     \
                                     int64_t batch) {                                          \
    int64_t nn = n * n, bn = m * nb, wide = nb > n ? nb : n;                                   \
    T *sa = malloc(sizeof(T) * (size_t)((3 * nn + 2 * bn + n + wide) * LANES));                \
    if (!sa) return false;                                                                     \
    T *sb = sa + nn * LANES, *s = sb + bn * LANES, *o = s + nn * LANES, *x = o + nn * LANES;   \
    T *d = x + bn * LANES, *odd = d + n * LANES;                                               \
    for (int64_t g = 0; g < batch; g += LANES) {                                               \
      int cnt = batch - g < LANES ? (int)(batch - g) : LANES;                                  \
      gather_##SUF(sa, a, g, cnt, nn, n);                                                      \
      gather_##SUF(sb, b, g, cnt, bn, 0);                                                      \
      trsm_inv_lanes_##SUF(p, sa, sb, s, o, x, d, odd, n, m, nb);                              \
      scatter_##SUF(out, sb, g, cnt, bn);                                                      \
    }                                                                                          \
    free(sa);                                                                                  \
    return true;                                                                               \
  }                                                                                            \
                                                                                               \
  bool av_trsm_batched_##SUF(const av_triangular_solve_params *p, const T *a, const T *b,      \
                             T *out, int64_t n, int64_t m, int64_t nb, int64_t batch) {        \
    if (n >= 32) return trsm_inv_batched_##SUF(p, a, b, out, n, m, nb, batch);                 \
    int64_t nn = n * n, bn = m * nb, wn = nb > 1 ? nb : 1;                                     \
    T *s = malloc(sizeof(T) * (size_t)((nn + bn + wn + n) * LANES));                           \
    if (!s) return false;                                                                      \
    T *sb = s + nn * LANES, *acc = sb + bn * LANES, *w = acc + wn * LANES;                     \
    for (int64_t g = 0; g < batch; g += LANES) {                                               \
      int cnt = batch - g < LANES ? (int)(batch - g) : LANES;                                  \
      gather_##SUF(s, a, g, cnt, nn, n);                                                       \
      gather_##SUF(sb, b, g, cnt, bn, 0);                                                      \
      trsm_lanes_##SUF(p, s, sb, acc, w, n, m, nb);                                            \
      scatter_##SUF(out, sb, g, cnt, bn);                                                      \
    }                                                                                          \
    free(s);                                                                                   \
    return true;                                                                               \
  }                                                                                            \
                                                                                               \
  /* Right-looking LU with partial pivoting of lane-major column-major s (element (i, j) at   \
   * (i + j n) * LANES); piv[k * LANES + l] gets the 0-based pivot row of step k. */          \
  AV_CLONES_FMA static void getrf_lanes_##SUF(T *restrict s, int *restrict piv,                \
                                              int *restrict info, int64_t n) {                 \
    T best[LANES], pv[LANES];                                                                  \
    int idx[LANES];                                                                            \
    for (int64_t k = 0; k < n; k++) {                                                          \
      const T *col = s + k * n * LANES;                                                        \
      for (int l = 0; l < LANES; l++) best[l] = ABS(col[k * LANES + l]), idx[l] = (int)k;       \
      for (int64_t i = k + 1; i < n; i++)                                                      \
        for (int l = 0; l < LANES; l++) {                                                      \
          T v = ABS(col[i * LANES + l]);                                                       \
          bool gt = v > best[l];                                                               \
          best[l] = gt ? v : best[l];                                                          \
          idx[l] = gt ? (int)i : idx[l];                                                       \
        }                                                                                      \
      for (int l = 0; l < LANES; l++) piv[k * LANES + l] = idx[l];                             \
      for (int64_t i = k + 1; i < n; i++) /* swap rows k and idx, lane by lane */             \
        for (int64_t j = 0; j < n; j++) {                                                      \
          T *rk = s + (k + j * n) * LANES, *ri = s + (i + j * n) * LANES;                      \
          for (int l = 0; l < LANES; l++) {                                                    \
            bool sw = idx[l] == (int)i;                                                        \
            T t = rk[l];                                                                       \
            rk[l] = sw ? ri[l] : t;                                                            \
            ri[l] = sw ? t : ri[l];                                                            \
          }                                                                                    \
        }                                                                                      \
      T *diag = s + (k + k * n) * LANES;                                                       \
      for (int l = 0; l < LANES; l++) {                                                        \
        pv[l] = diag[l];                                                                       \
        if (pv[l] == 0 && info[l] == 0) info[l] = (int)k + 1;                                  \
      }                                                                                        \
      for (int64_t i = k + 1; i < n; i++) { /* a zero pivot leaves its column unscaled */     \
        T *e = s + (i + k * n) * LANES;                                                        \
        for (int l = 0; l < LANES; l++) e[l] = pv[l] != 0 ? e[l] / pv[l] : e[l];               \
      }                                                                                        \
      for (int64_t j = k + 1; j < n; j++) {                                                    \
        const T *ukj = s + (k + j * n) * LANES;                                                \
        for (int64_t i = k + 1; i < n; i++) {                                                  \
          const T *lik = s + (i + k * n) * LANES;                                              \
          T *e = s + (i + j * n) * LANES;                                                      \
          for (int l = 0; l < LANES; l++) e[l] = FMA(-lik[l], ukj[l], e[l]);                   \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
                                                                                               \
  bool av_getrf_batched_##SUF(T *a, int *ipiv, int *info, int64_t n, int64_t batch) {          \
    int64_t nn = n * n;                                                                        \
    T *s = malloc(sizeof(T) * (size_t)(nn * LANES));                                           \
    int *piv = malloc(sizeof(int) * (size_t)(n * LANES));                                      \
    if (!s || !piv) {                                                                          \
      free(s);                                                                                 \
      free(piv);                                                                               \
      return false;                                                                            \
    }                                                                                          \
    for (int64_t g = 0; g < batch; g += LANES) {                                               \
      int cnt = batch - g < LANES ? (int)(batch - g) : LANES;                                  \
      int inf[LANES] = {0};                                                                    \
      gather_##SUF(s, a, g, cnt, nn, n);                                                       \
      getrf_lanes_##SUF(s, piv, inf, n);                                                       \
      scatter_##SUF(a, s, g, cnt, nn);                                                         \
      for (int l = 0; l < cnt; l++) {                                                          \
        info[g + l] = inf[l];                                                                  \
        for (int64_t k = 0; k < n; k++) ipiv[(g + l) * n + k] = piv[k * LANES + l] + 1;        \
      }                                                                                        \
    }                                                                                          \
    free(s);                                                                                   \
    free(piv);                                                                                 \
    return true;                                                                               \
  }

#define DEFINE_SYEVD(SUF, T, LANES, SQRT, ABS, EPS)                                            \
  typedef T vec_##SUF __attribute__((vector_size(LANES * sizeof(T))));                         \
  /* One cyclic Jacobi sweep over lane-major symmetric s, of which only the diagonal and the \
   * upper triangle (i < j at i n + j) are read and kept, and the eigenvector matrix v;       \
   * returns per lane the off-diagonal and the Frobenius square sums before the sweep. */      \
  AV_CLONES static void jacobi_sweep_##SUF(T *restrict s, T *restrict v, int64_t n, bool vec,  \
                                           T *restrict off2, T *restrict fro2) {               \
    T sn[LANES], t[LANES], r[LANES];                                                           \
    for (int l = 0; l < LANES; l++) off2[l] = 0, fro2[l] = 0;                                  \
    for (int64_t p = 0; p < n; p++)                                                            \
      for (int64_t q = p; q < n; q++) {                                                        \
        const T *e = s + (p * n + q) * LANES;                                                  \
        for (int l = 0; l < LANES; l++) {                                                      \
          T sq = e[l] * e[l];                                                                  \
          fro2[l] += p != q ? 2 * sq : sq;                                                     \
          off2[l] += p != q ? 2 * sq : 0;                                                      \
        }                                                                                      \
      }                                                                                        \
    for (int64_t p = 0; p < n; p++)                                                            \
      for (int64_t q = p + 1; q < n; q++) {                                                    \
        T *spp = s + (p * n + p) * LANES, *sqq = s + (q * n + q) * LANES;                      \
        T *spq = s + (p * n + q) * LANES;                                                      \
        int any = 0;                                                                           \
        for (int l = 0; l < LANES; l++) { /* Golub & Van Loan's sym.schur2 */                 \
          T apq = spq[l], tau = (sqq[l] - spp[l]) / (2 * apq);                                 \
          T tt = (tau >= 0 ? 1 : -1) / (ABS(tau) + SQRT(1 + tau * tau));                       \
          /* no rotation where apq is already negligible: each rotation rounds */              \
          bool rot = ABS(apq) > (T)EPS * SQRT(ABS(spp[l]) * ABS(sqq[l])) && tt == tt;          \
          tt = rot ? tt : 0;                                                                   \
          any |= rot;                                                                          \
          T cc = 1 / SQRT(1 + tt * tt);                                                        \
          t[l] = tt, sn[l] = tt * cc;                                                          \
          r[l] = sn[l] / (1 + cc); /* Rutishauser's form: x - s (y + r x), y + s (x - r y) */   \
        }                                                                                      \
        if (!any) continue;                                                                    \
        /* explicit vectors: the rows and columns alias as far as the compiler knows */       \
        vec_##SUF vs, vr, x, y, nx, ny;                                                        \
        memcpy(&vs, sn, sizeof vs);                                                            \
        memcpy(&vr, r, sizeof vr);                                                             \
        for (int64_t k = 0; k < n; k++) {                                                      \
          if (k == p || k == q) continue;                                                      \
          /* (k, p) and (k, q) in the upper triangle */                                       \
          T *kp = s + (k < p ? k * n + p : p * n + k) * LANES;                                 \
          T *kq = s + (k < q ? k * n + q : q * n + k) * LANES;                                 \
          memcpy(&x, kp, sizeof x);                                                            \
          memcpy(&y, kq, sizeof y);                                                            \
          nx = x - vs * (y + vr * x);                                                          \
          ny = y + vs * (x - vr * y);                                                          \
          memcpy(kp, &nx, sizeof nx);                                                          \
          memcpy(kq, &ny, sizeof ny);                                                          \
        }                                                                                      \
        for (int l = 0; l < LANES; l++) {                                                      \
          T apq = spq[l];                                                                      \
          spp[l] -= t[l] * apq;                                                                \
          sqq[l] += t[l] * apq;                                                                \
          spq[l] = 0;                                                                          \
        }                                                                                      \
        if (vec)                                                                               \
          for (int64_t k = 0; k < n; k++) {                                                    \
            T *kp = v + (k * n + p) * LANES, *kq = v + (k * n + q) * LANES;                    \
            memcpy(&x, kp, sizeof x);                                                          \
            memcpy(&y, kq, sizeof y);                                                          \
            nx = x - vs * (y + vr * x);                                                        \
            ny = y + vs * (x - vr * y);                                                        \
            memcpy(kp, &nx, sizeof nx);                                                        \
            memcpy(kq, &ny, sizeof ny);                                                        \
          }                                                                                    \
      }                                                                                        \
  }                                                                                            \
                                                                                               \
  typedef struct syevd_ctx_##SUF {                                                             \
    bool lower, vec;                                                                           \
    T *a, *w;                                                                                  \
    int *info;                                                                                 \
    int64_t n, batch;                                                                          \
    int failed;                                                                                \
  } syevd_ctx_##SUF;                                                                           \
                                                                                               \
  /* groups [g0, g1) of LANES matrices */                                                      \
  static void syevd_groups_##SUF(void *vctx, int64_t g0, int64_t g1) {                         \
    syevd_ctx_##SUF *cx = vctx;                                                                \
    bool lower = cx->lower, vec = cx->vec;                                                     \
    T *a = cx->a, *w = cx->w;                                                                  \
    int *info = cx->info;                                                                      \
    int64_t n = cx->n, batch = cx->batch, nn = n * n;                                          \
    T *s = malloc(sizeof(T) * (size_t)(2 * nn * LANES)), *v = s + nn * LANES;                  \
    if (!s) {                                                                                  \
      __atomic_store_n(&cx->failed, 1, __ATOMIC_RELAXED);                                      \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t g = g0 * LANES; g < g1 * LANES && g < batch; g += LANES) {                    \
      int cnt = batch - g < LANES ? (int)(batch - g) : LANES;                                  \
      gather_##SUF(s, a, g, cnt, nn, n);                                                       \
      /* column-major: (i, j) at i + j n; the upper triangle of the sweeps (i < j at       \
       * i n + j) is the lower one as stored when `lower` (nothing to move), else its mirror */ \
      if (!lower)                                                                              \
        for (int64_t i = 0; i < n; i++)                                                        \
          for (int64_t j = i + 1; j < n; j++)                                                  \
            memcpy(s + (i * n + j) * LANES, s + (i + j * n) * LANES, sizeof(T) * LANES);       \
      for (int64_t e = 0; e < nn; e++)                                                         \
        for (int l = 0; l < LANES; l++) v[e * LANES + l] = e % (n + 1) == 0 ? 1 : 0;           \
      T off2[LANES], fro2[LANES];                                                              \
      for (int sweep = 0; sweep < 40; sweep++) {                                               \
        jacobi_sweep_##SUF(s, v, n, vec, off2, fro2);                                          \
        bool done = true;                                                                      \
        for (int l = 0; l < cnt; l++)                                                          \
          done &= off2[l] <= (T)(EPS * EPS) * fro2[l] || !(off2[l] == off2[l]);                \
        if (done) break;                                                                       \
      }                                                                                        \
      /* ascending eigenvalues, vectors (columns of v, row-major) in the same order */        \
      for (int l = 0; l < cnt; l++) {                                                          \
        int64_t idx[AV_BATCHED_MAX_N];                                                         \
        T *wl = w + (g + l) * n, *al = a + (g + l) * nn;                                       \
        for (int64_t i = 0; i < n; i++) idx[i] = i;                                            \
        for (int64_t i = 1; i < n; i++) /* insertion sort, stable */                          \
          for (int64_t j = i; j > 0 && s[(idx[j] * (n + 1)) * LANES + l] <                     \
                                           s[(idx[j - 1] * (n + 1)) * LANES + l]; j--) {       \
            int64_t tmp = idx[j];                                                              \
            idx[j] = idx[j - 1], idx[j - 1] = tmp;                                             \
          }                                                                                    \
        for (int64_t j = 0; j < n; j++) {                                                      \
          wl[j] = s[(idx[j] * (n + 1)) * LANES + l];                                           \
          for (int64_t i = 0; i < n; i++)                                                      \
            al[i + j * n] = vec ? v[(i * n + idx[j]) * LANES + l] : 0;                         \
        }                                                                                      \
        info[g + l] = 0;                                                                       \
      }                                                                                        \
    }                                                                                          \
    free(s);                                                                                   \
  }                                                                                            \
                                                                                               \
  bool av_syevd_batched_##SUF(bool lower, bool vec, T *a, T *w, int *info, int64_t n,          \
                              int64_t batch, struct av_thread_pool *pool) {                    \
    syevd_ctx_##SUF cx = {lower, vec, a, w, info, n, batch, 0};                                \
    int64_t groups = (batch + LANES - 1) / LANES, work = n * n * n;                            \
    av_parallel_for(pool, groups, 1, work >= 4096 ? 1 : 4096 / work, syevd_groups_##SUF, &cx);  \
    return !cx.failed;                                                                         \
  }

DEFINE_BATCHED(f32, float, 16, fmaf, sqrtf, fabsf)
DEFINE_BATCHED(f64, double, 8, fma, sqrt, fabs)
DEFINE_SYEVD(f32, float, 16, sqrtf, fabsf, 1.1920929e-07)
DEFINE_SYEVD(f64, double, 8, sqrt, fabs, 2.220446049250313e-16)
