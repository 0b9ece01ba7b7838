/* dot_general: validate the dimension numbers, bring both operands into batch x M x K and
 * batch x K x N form (skipping the copy when the layout already fits, possibly as a BLAS
 * transpose), then one GEMM per batch (BLAS for f32/f64/c64/c128, f32 accumulation for
 * narrow floats, exact wrap-around loops for integers, or/and for pred). */
#include "runtime/kernels/dot.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ir/float_codec.h"
#include "runtime/kernels/reduce_elem.h"
#include "runtime/kernels/simd_clones.h"
#include "runtime/kernels/simd_transpose.h"
#include "runtime/thread_pool.h"

/* libgomp, which oneDNN links: its sgemm takes the calling thread's OpenMP thread count */
int omp_get_max_threads(void);
void omp_set_num_threads(int n);

typedef struct dot_plan {
  int lperm[AV_KMAX_RANK], rperm[AV_KMAX_RANK]; /* batch, free, contract / batch, contract, free */
  int lfree[AV_KMAX_RANK], rfree[AV_KMAX_RANK];
  int nlfree, nrfree;
  int64_t B, M, N, K;
} dot_plan;

static bool in_list(const int64_t *v, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return true;
  return false;
}

static av_code check_dims(const char *what, const int64_t *v, int n, int rank, av_diag *d) {
  for (int i = 0; i < n; i++) {
    if (v[i] < 0 || v[i] >= rank)
      return av_diag_set(d, AV_INVALID_ARGUMENT, "dot_general: %s[%d] = %lld out of range [0, %d)",
                         what, i, (long long)v[i], rank);
    for (int j = 0; j < i; j++)
      if (v[j] == v[i])
        return av_diag_set(d, AV_INVALID_ARGUMENT, "dot_general: %s repeats dimension %lld", what,
                           (long long)v[i]);
  }
  return AV_OK;
}

static av_code make_plan(const av_dot_params *p, const av_view *l, const av_view *r,
                         const av_view *o, dot_plan *pl, av_diag *d) {
  if (p->nbatch < 0 || p->ncontract < 0 || p->nbatch > AV_KMAX_RANK || p->ncontract > AV_KMAX_RANK)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "dot_general: bad dimension counts");
  if (l->rank > AV_KMAX_RANK || r->rank > AV_KMAX_RANK || o->rank > AV_KMAX_RANK || l->rank < 0 ||
      r->rank < 0)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "dot_general: rank over %d", AV_KMAX_RANK);
  av_code c;
  if ((c = check_dims("lhs_batching_dimensions", p->lhs_batch, p->nbatch, l->rank, d)) ||
      (c = check_dims("rhs_batching_dimensions", p->rhs_batch, p->nbatch, r->rank, d)) ||
      (c = check_dims("lhs_contracting_dimensions", p->lhs_contract, p->ncontract, l->rank, d)) ||
      (c = check_dims("rhs_contracting_dimensions", p->rhs_contract, p->ncontract, r->rank, d)))
    return c;
  pl->B = pl->M = pl->N = pl->K = 1;
  int li = 0, ri = 0;
  for (int i = 0; i < p->nbatch; i++) {
    if (in_list(p->lhs_contract, p->ncontract, p->lhs_batch[i]) ||
        in_list(p->rhs_contract, p->ncontract, p->rhs_batch[i]))
      return av_diag_set(d, AV_INVALID_ARGUMENT, "dot_general: a dimension is both batch and contracting");
    if (l->dims[p->lhs_batch[i]] != r->dims[p->rhs_batch[i]])
      return av_diag_set(d, AV_INVALID_ARGUMENT, "dot_general: batch dimension %d sizes differ", i);
    pl->B *= l->dims[p->lhs_batch[i]];
    pl->lperm[li++] = (int)p->lhs_batch[i];
    pl->rperm[ri++] = (int)p->rhs_batch[i];
  }
  pl->nlfree = pl->nrfree = 0;
  for (int i = 0; i < l->rank; i++)
    if (!in_list(p->lhs_batch, p->nbatch, i) && !in_list(p->lhs_contract, p->ncontract, i)) {
      pl->lfree[pl->nlfree++] = i;
      pl->lperm[li++] = i;
      pl->M *= l->dims[i];
    }
  for (int i = 0; i < p->ncontract; i++) {
    if (l->dims[p->lhs_contract[i]] != r->dims[p->rhs_contract[i]])
      return av_diag_set(d, AV_INVALID_ARGUMENT, "dot_general: contracting dimension %d sizes differ", i);
    pl->K *= l->dims[p->lhs_contract[i]];
    pl->lperm[li++] = (int)p->lhs_contract[i];
    pl->rperm[ri++] = (int)p->rhs_contract[i];
  }
  for (int i = 0; i < r->rank; i++)
    if (!in_list(p->rhs_batch, p->nbatch, i) && !in_list(p->rhs_contract, p->ncontract, i)) {
      pl->rfree[pl->nrfree++] = i;
      pl->rperm[ri++] = i;
      pl->N *= r->dims[i];
    }
  /* Result shape: batch, lhs free, rhs free. */
  int orank = p->nbatch + pl->nlfree + pl->nrfree;
  if (o->rank != orank)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "dot_general: result rank %d, expected %d", o->rank, orank);
  int k = 0;
  for (int i = 0; i < p->nbatch; i++, k++)
    if (o->dims[k] != l->dims[p->lhs_batch[i]]) goto bad_shape;
  for (int i = 0; i < pl->nlfree; i++, k++)
    if (o->dims[k] != l->dims[pl->lfree[i]]) goto bad_shape;
  for (int i = 0; i < pl->nrfree; i++, k++)
    if (o->dims[k] != r->dims[pl->rfree[i]]) goto bad_shape;
  return AV_OK;
bad_shape:
  return av_diag_set(d, AV_INVALID_ARGUMENT, "dot_general: result dimension %d does not match operands", k);
}

static bool is_identity(const int *perm, int n) {
  for (int i = 0; i < n; i++)
    if (perm[i] != i) return false;
  return true;
}

/* Swaps the two trailing groups [nb, nb+g1) and [nb+g1, nb+g1+g2) of a permutation. */
static void swap_groups(const int *perm, int nb, int g1, int g2, int *outp) {
  int k = 0;
  for (int i = 0; i < nb; i++) outp[k++] = perm[i];
  for (int i = 0; i < g2; i++) outp[k++] = perm[nb + g1 + i];
  for (int i = 0; i < g1; i++) outp[k++] = perm[nb + i];
}

/* How an operand reaches GEMM: in place (maybe transposed) or packed into `buf`. */
typedef struct operand_src {
  const void *data;
  bool trans;
  void *owned;
} operand_src;

static bool is_narrow16(av_dtype t) { return t == AV_DT_BF16 || t == AV_DT_F16; }

/* bf16/f16 -> f32 (exact) over n contiguous elements (wide-vector clones: a 1024^2 bf16
 * product converts 3M elements around its GEMM). */
AV_CLONES static void narrow16_to_f32(av_dtype t, float *dst, const void *src, int64_t n) {
  const uint16_t *s = src;
  if (t == AV_DT_BF16)
    for (int64_t i = 0; i < n; i++) dst[i] = av_bf16_to_f32(s[i]);
  else
    for (int64_t i = 0; i < n; i++) dst[i] = av_f16_to_f32(s[i]);
}

/* f32 -> bf16/f16, rounded to nearest even, over n contiguous elements. */
AV_CLONES static void f32_to_narrow16(av_dtype t, void *dst, const float *src, int64_t n) {
  uint16_t *o = dst;
  if (t == AV_DT_BF16)
    for (int64_t i = 0; i < n; i++) o[i] = av_f32_to_bf16(src[i]);
  else
    for (int64_t i = 0; i < n; i++) o[i] = av_f32_to_f16(src[i]);
}

/* The two conversions above over the pool: a bf16 product's widening and narrowing ran on one
 * thread while the other waited (3M elements around a 1024x1024x1024 GEMM). Chunks hold
 * whole cache lines of both sides; each element converts alone, so the bits never depend
 * on the split. */
typedef struct convert16 {
  av_dtype t;
  bool widen;
  void *dst;
  const void *src;
} convert16;

static void convert16_range(void *ctx, int64_t begin, int64_t end) {
  const convert16 *c = ctx;
  if (c->widen)
    narrow16_to_f32(c->t, (float *)c->dst + begin, (const uint16_t *)c->src + begin, end - begin);
  else
    f32_to_narrow16(c->t, (uint16_t *)c->dst + begin, (const float *)c->src + begin, end - begin);
}

static void convert16_parallel(struct av_thread_pool *pool, av_dtype t, bool widen, void *dst,
                               const void *src, int64_t n) {
  convert16 c = {t, widen, dst, src};
  av_parallel_for(pool, n, 32, 64 * 1024, convert16_range, &c);
}

/* batched_trans: a transposed layout may be read in place with batch dimensions too (the
 * GEMM paths take each batch's matrix as it lies; the small loops and integers do not). */
static av_code prepare(const av_view *v, const int *perm, int nb, int g1, int g2, av_dtype ct,
                       bool batched_trans, struct av_thread_pool *pool, operand_src *s, av_diag *d) {
  s->owned = NULL;
  s->trans = false;
  int64_t n = av_view_num_elements(v);
  void *widened = NULL;
  const void *data = v->data;
  av_dtype dt = v->dtype;
  if (dt != ct && ct == AV_DT_F32 && is_narrow16(dt)) {
    /* widen the whole operand with a tight loop first; layout handling then sees f32 */
    widened = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (!widened) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "dot_general: out of memory widening operand");
    convert16_parallel(pool, dt, true, widened, v->data, n);
    data = widened;
    dt = AV_DT_F32;
  }
  if (dt == ct) {
    bool in_place = is_identity(perm, v->rank);
    if (!in_place) {
      int alt[AV_KMAX_RANK];
      swap_groups(perm, nb, g1, g2, alt);
      if ((nb == 0 || batched_trans) && is_identity(alt, v->rank)) in_place = s->trans = true;
    }
    if (in_place) {
      s->data = data;
      s->owned = widened;
      return AV_OK;
    }
  }
  s->owned = malloc((size_t)(n ? n : 1) * av_dtype_size(ct));
  if (!s->owned) {
    free(widened);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "dot_general: out of memory packing operand");
  }
  av_kel_permute_copy(ct, s->owned, dt, data, v->rank, v->dims, perm);
  free(widened);
  s->data = s->owned;
  return AV_OK;
}

/* Small products in the plain loop: one sequential sum per output element, products rounded
 * before adding - for real types the layouts small_gemm_* does not take; complex dots
 * (NAIVE_COMPLEX) always, as the conformance data's expected values were made so. */
#define NAIVE_REAL(T)                                                                          \
  for (int64_t bi = 0; bi < B; bi++) {                                                         \
    const T *Ab = (const T *)a->data + bi * M * K, *Bb = (const T *)b->data + bi * K * N;      \
    T *Cb = (T *)c + bi * M * N;                                                               \
    for (int64_t i = 0; i < M; i++)                                                            \
      for (int64_t j = 0; j < N; j++) {                                                        \
        T acc = 0;                                                                             \
        for (int64_t k = 0; k < K; k++) {                                                      \
          T x = a->trans ? Ab[k * M + i] : Ab[i * K + k];                                      \
          T y = b->trans ? Bb[j * K + k] : Bb[k * N + j];                                      \
          T prod = x * y;                                                                      \
          acc = acc + prod;                                                                    \
        }                                                                                      \
        Cb[i * N + j] = acc;                                                                   \
      }                                                                                        \
  }

/* Small real products without BLAS's call overhead. Wide results go across j (each element
 * still one sequential sum over k); narrow ones (matrix-vector products, B transposed) are
 * dot products of two contiguous rows, summed in 16 lanes and the lanes added pairwise - the
 * way XLA:CPU's vectorised dots reassociate too. Other layouts keep the sequential loop.
 * Across j, blocks of 4 rows x one 64-byte vector of columns keep their sums in registers
 * over the whole k loop (4 independent chains; the row loop below, which reloads and stores
 * its sums every k, ran 3-7x slower on an RNN's 8x64x64 and MCMC's 256 16x16 products); the
 * columns past the last whole vector use a zero-padded copy of those columns of B (the panel:
 * an LSTM read-out's 16x128 by 128x8 went from 14 to under 2 us), and the rows past the
 * blocks the row loop. The operations per element are the same, so the bits are too. */
#define DOT_LANES 16
#define SMALL_GEMM_PANEL 16384 /* bytes of each stack buffer below */

typedef float rows4_vec __attribute__((vector_size(64), aligned(sizeof(float))));

/* lane sums of 16 blocks at once, in the scalar pairwise order (simd_transpose.h) */
AV_DEFINE_PAIRWISE_SUMS16(rows4_reduce16, rows4_vec)

/* The row-dot path below for f32, sixteen rows of A at a time: sixteen chains of lane sums
 * in registers, whose pairwise lane sums rows4_reduce16 adds for all sixteen rows in 15
 * vector adds. Adding each row's 16 lanes one by one cost as much as its multiplies for a
 * 512-long row (a conjugate-gradient solve's 512x512 matrix-vector products). Each row's
 * operations are those of the single-row loop, so the bits are the same. Returns the rows
 * done (a multiple of 16). */
AV_CLONES static int64_t rows16_dots_f32(int64_t M, int64_t N, int64_t K, const float *Ab,
                                         const float *Bb, float *Cb) {
  int64_t kv = K / DOT_LANES * DOT_LANES, i16 = 0;
  for (; i16 + 16 <= M; i16 += 16)
    for (int64_t j = 0; j < N; j++) {
      const float *y = Bb + j * K;
      rows4_vec s[16], xv, yv;
      memset(s, 0, sizeof s);
      for (int64_t k = 0; k < kv; k += DOT_LANES) {
        memcpy(&yv, y + k, sizeof yv);
        for (int r = 0; r < 16; r++) {
          memcpy(&xv, Ab + (i16 + r) * K + k, sizeof xv);
          s[r] = s[r] + xv * yv;
        }
      }
      float sums[16];
      rows4_reduce16(s, sums);
      for (int r = 0; r < 16; r++) {
        const float *x = Ab + (i16 + r) * K;
        float acc = sums[r];
        for (int64_t k = kv; k < K; k++) acc = acc + x[k] * y[k];
        Cb[(i16 + r) * N + j] = acc;
      }
    }
  return i16;
}

static int64_t rows16_dots_none(int64_t M, int64_t N, int64_t K, const double *Ab, const double *Bb,
                                double *Cb) {
  return 0; /* f64's 8-lane vectors: the four-row loop */
}
#define DEFINE_SMALL_GEMM(name, T, ROWS16)                                                     \
  typedef T name##_vec __attribute__((vector_size(64), aligned(sizeof(T))));                  \
  AV_CLONES static bool name(int64_t B, int64_t M, int64_t N, int64_t K, const T *A, bool at,   \
                             const T *Bm, bool bt, T *C) {                                     \
    const int64_t vl = (int64_t)(64 / sizeof(T));                                             \
    /* B transposed with fewer k than lanes (an LSTM read-out's backward, 16x8 by 128x8): its \
     * dot products are plain sequential sums, which is what across j computes too, from B  \
     * transposed back into `bt_copy` */                                                      \
    T bt_copy[SMALL_GEMM_PANEL / sizeof(T)];                                                   \
    bool flip = bt && !at && N >= 8 && K < DOT_LANES &&                                        \
                (size_t)(K * N) * sizeof(T) <= sizeof bt_copy;                                 \
    bool across_j = N >= 8 && (!bt || flip), rows = !at && (bt || N == 1) && !flip;            \
    if (!across_j && !rows) return false;                                                      \
    /* columns past the last whole vector: read from `panel`, padded to a vector per k */     \
    T panel[SMALL_GEMM_PANEL / sizeof(T)];                                                     \
    int64_t nv = N / vl * vl, nvec = nv;                                                       \
    if (nv < N && K * vl <= (int64_t)(sizeof panel / sizeof *panel)) nvec = nv + vl;           \
    for (int64_t bi = 0; bi < B; bi++) {                                                       \
      const T *Ab = A + bi * M * K, *Bb = Bm + bi * K * N;                                     \
      T *Cb = C + bi * M * N;                                                                  \
      if (flip) {                                                                              \
        for (int64_t j = 0; j < N; j++)                                                        \
          for (int64_t k = 0; k < K; k++) bt_copy[k * N + j] = Bb[j * K + k];                  \
        Bb = bt_copy;                                                                          \
      }                                                                                        \
      if (across_j && nvec > nv) {                                                             \
        memset(panel, 0, sizeof(T) * (size_t)(K * vl));                                        \
        for (int64_t k = 0; k < K; k++)                                                        \
          memcpy(panel + k * vl, Bb + k * N + nv, sizeof(T) * (size_t)(N - nv));               \
      }                                                                                        \
      if (across_j) {                                                                          \
        int64_t i0 = 0;                                                                        \
        for (; i0 + 4 <= M; i0 += 4) {                                                         \
          int64_t j0 = 0;                                                                      \
          /* 4 rows x 4 vectors: sixteen chains, enough to hide an add's latency (4 chains    \
           * waited on it: an RNN step's 8x64 by 64x64 took 4x the arithmetic's time) */       \
          for (; j0 + 4 * vl <= nv; j0 += 4 * vl) {                                            \
            /* named sums, not an array: gcc kept an array on the stack */                     \
            name##_vec s00 = {0}, s01 = {0}, s02 = {0}, s03 = {0}, s10 = {0}, s11 = {0};       \
            name##_vec s12 = {0}, s13 = {0}, s20 = {0}, s21 = {0}, s22 = {0}, s23 = {0};       \
            name##_vec s30 = {0}, s31 = {0}, s32 = {0}, s33 = {0}, r0, r1, r2, r3;             \
            const T *ak = at ? Ab + i0 : Ab + i0 * K, *bk = Bb + j0;                           \
            int64_t astep = at ? M : 1, arow = at ? 1 : K;                                     \
            for (int64_t k = 0; k < K; k++, ak += astep, bk += N) {                            \
              memcpy(&r0, bk, sizeof r0);                                                      \
              memcpy(&r1, bk + vl, sizeof r1);                                                 \
              memcpy(&r2, bk + 2 * vl, sizeof r2);                                             \
              memcpy(&r3, bk + 3 * vl, sizeof r3);                                             \
              T a0 = ak[0], a1 = ak[arow], a2 = ak[2 * arow], a3 = ak[3 * arow];               \
              s00 = s00 + a0 * r0; s01 = s01 + a0 * r1; s02 = s02 + a0 * r2; s03 = s03 + a0 * r3; \
              s10 = s10 + a1 * r0; s11 = s11 + a1 * r1; s12 = s12 + a1 * r2; s13 = s13 + a1 * r3; \
              s20 = s20 + a2 * r0; s21 = s21 + a2 * r1; s22 = s22 + a2 * r2; s23 = s23 + a2 * r3; \
              s30 = s30 + a3 * r0; s31 = s31 + a3 * r1; s32 = s32 + a3 * r2; s33 = s33 + a3 * r3; \
            }                                                                                  \
            T *c0 = Cb + i0 * N + j0, *c1 = c0 + N, *c2 = c1 + N, *c3 = c2 + N;                \
            memcpy(c0, &s00, sizeof s00); memcpy(c0 + vl, &s01, sizeof s01);                   \
            memcpy(c0 + 2 * vl, &s02, sizeof s02); memcpy(c0 + 3 * vl, &s03, sizeof s03);     \
            memcpy(c1, &s10, sizeof s10); memcpy(c1 + vl, &s11, sizeof s11);                   \
            memcpy(c1 + 2 * vl, &s12, sizeof s12); memcpy(c1 + 3 * vl, &s13, sizeof s13);     \
            memcpy(c2, &s20, sizeof s20); memcpy(c2 + vl, &s21, sizeof s21);                   \
            memcpy(c2 + 2 * vl, &s22, sizeof s22); memcpy(c2 + 3 * vl, &s23, sizeof s23);     \
            memcpy(c3, &s30, sizeof s30); memcpy(c3 + vl, &s31, sizeof s31);                   \
            memcpy(c3 + 2 * vl, &s32, sizeof s32); memcpy(c3 + 3 * vl, &s33, sizeof s33);     \
          }                                                                                    \
          for (; j0 < nvec; j0 += vl) {                                                        \
            name##_vec s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, row;                            \
            /* A's four entries of column k: adjacent (A transposed) or a row apart */         \
            const T *ak = at ? Ab + i0 : Ab + i0 * K;                                          \
            const T *bk = j0 < nv ? Bb + j0 : panel;                                           \
            int64_t astep = at ? M : 1, arow = at ? 1 : K, bstep = j0 < nv ? N : vl;           \
            for (int64_t k = 0; k < K; k++, ak += astep, bk += bstep) {                        \
              memcpy(&row, bk, sizeof row);                                                    \
              s0 = s0 + ak[0] * row;                                                           \
              s1 = s1 + ak[arow] * row;                                                        \
              s2 = s2 + ak[2 * arow] * row;                                                    \
              s3 = s3 + ak[3 * arow] * row;                                                    \
            }                                                                                  \
            size_t wb = sizeof(T) * (size_t)(N - j0 < vl ? N - j0 : vl);                      \
            memcpy(Cb + i0 * N + j0, &s0, wb);                                                 \
            memcpy(Cb + (i0 + 1) * N + j0, &s1, wb);                                           \
            memcpy(Cb + (i0 + 2) * N + j0, &s2, wb);                                           \
            memcpy(Cb + (i0 + 3) * N + j0, &s3, wb);                                           \
          }                                                                                    \
        }                                                                                      \
        for (int64_t i = 0; i < M; i++) { /* rows past the blocks; columns past the vectors */ \
          int64_t j1 = i < i0 ? (nvec > N ? N : nvec) : 0;                                     \
          T *cr = Cb + i * N;                                                                  \
          for (int64_t j = j1; j < N; j++) cr[j] = 0;                                          \
          for (int64_t k = 0; k < K && j1 < N; k++) {                                          \
            T x = at ? Ab[k * M + i] : Ab[i * K + k];                                          \
            const T *row = Bb + k * N;                                                         \
            AV_IVDEP                                                                           \
            for (int64_t j = j1; j < N; j++) cr[j] = cr[j] + x * row[j];                       \
          }                                                                                    \
        }                                                                                      \
        continue;                                                                              \
      }                                                                                        \
      /* four rows at a time: four independent chains of lane sums (one row's chain waits an  \
       * add's latency per step), each row's sums exactly those of the single-row loop after  \
       * it */                                                                                 \
      enum { NV = DOT_LANES * sizeof(T) / sizeof(name##_vec) };                                \
      int64_t i4 = ROWS16(M, N, K, Ab, Bb, Cb);                                                \
      for (; i4 + 4 <= M; i4 += 4)                                                             \
        for (int64_t j = 0; j < N; j++) {                                                      \
          const T *y = Bb + j * K;                                                             \
          name##_vec s[4][NV], xv, yv;                                                         \
          memset(s, 0, sizeof s);                                                              \
          int64_t k = 0;                                                                       \
          for (; k + DOT_LANES <= K; k += DOT_LANES)                                           \
            for (int v = 0; v < NV; v++) {                                                     \
              memcpy(&yv, y + k + v * vl, sizeof yv);                                          \
              for (int r = 0; r < 4; r++) {                                                    \
                memcpy(&xv, Ab + (i4 + r) * K + k + v * vl, sizeof xv);                        \
                s[r][v] = s[r][v] + xv * yv;                                                   \
              }                                                                                \
            }                                                                                  \
          for (int r = 0; r < 4; r++) {                                                        \
            T lane[DOT_LANES];                                                                 \
            memcpy(lane, s[r], sizeof lane);                                                   \
            for (int w = DOT_LANES / 2; w > 0; w /= 2)                                         \
              for (int q = 0; q < w; q++) lane[q] = lane[q] + lane[q + w];                     \
            const T *x = Ab + (i4 + r) * K;                                                    \
            T acc = lane[0];                                                                   \
            for (int64_t kk = k; kk < K; kk++) acc = acc + x[kk] * y[kk];                      \
            Cb[(i4 + r) * N + j] = acc;                                                        \
          }                                                                                    \
        }                                                                                      \
      for (int64_t i = i4; i < M; i++)                                                         \
        for (int64_t j = 0; j < N; j++) {                                                      \
          const T *x = Ab + i * K, *y = Bb + j * K; /* N == 1: B's only column */             \
          T lane[DOT_LANES];                                                                   \
          for (int q = 0; q < DOT_LANES; q++) lane[q] = 0;                                     \
          int64_t k = 0;                                                                       \
          for (; k + DOT_LANES <= K; k += DOT_LANES)                                           \
            for (int q = 0; q < DOT_LANES; q++) lane[q] = lane[q] + x[k + q] * y[k + q];       \
          for (int w = DOT_LANES / 2; w > 0; w /= 2)                                           \
            for (int q = 0; q < w; q++) lane[q] = lane[q] + lane[q + w];                       \
          T acc = lane[0];                                                                     \
          for (; k < K; k++) acc = acc + x[k] * y[k];                                          \
          Cb[i * N + j] = acc;                                                                 \
        }                                                                                      \
    }                                                                                          \
    return true;                                                                               \
  }
DEFINE_SMALL_GEMM(small_gemm_f32, float, rows16_dots_f32)
DEFINE_SMALL_GEMM(small_gemm_f64, double, rows16_dots_none)

/* A few rows times a transposed matrix (an RNN's backward dg @ W.T: 16x512 by 128x512): every
 * element the dot product of two contiguous rows, accumulated with fused multiply-adds in 16
 * lanes that are then added pairwise (as XLA:CPU's vectorised dots reassociate), for blocks
 * of 4 x 4 elements whose lane sums stay in registers over the whole k loop. oneDNN's N,T
 * kernel took 1.5x XLA:CPU's time on these shapes. The multiply-adds are contracted in this
 * function only (the rest of anvil builds with -ffp-contract=off): a multiply then an add
 * took twice the time, and every copy of it (AVX-512, AVX2 with FMA) fuses the same ones. */

#if defined(__clang__)
#define ROWS_CONTRACT
#else
#define ROWS_CONTRACT __attribute__((optimize("fp-contract=fast")))
#endif

/* columns [j0, j1) of one batch's product (j0 a multiple of 4) */
AV_CLONES_FMA ROWS_CONTRACT static void rows_times_bt_f32(int64_t M, int64_t N, int64_t K, const float *Ab,
                                                          const float *Bb, float *Cb, int64_t j_begin,
                                                          int64_t j_end) {
#if defined(__clang__)
#pragma STDC FP_CONTRACT ON
#endif
  int64_t kv = K / DOT_LANES * DOT_LANES;
  for (int64_t i0 = 0; i0 < M; i0 += 4)
    for (int64_t j0 = j_begin; j0 < j_end; j0 += 4) {
      int mi = M - i0 < 4 ? (int)(M - i0) : 4, nj = j_end - j0 < 4 ? (int)(j_end - j0) : 4;
      rows4_vec s[4][4];
      memset(s, 0, sizeof s);
      const float *ar[4], *br[4];
      for (int q = 0; q < 4; q++) { /* rows past the edge repeat the last one, unstored */
        ar[q] = Ab + (i0 + (q < mi ? q : mi - 1)) * K;
        br[q] = Bb + (j0 + (q < nj ? q : nj - 1)) * K;
      }
      for (int64_t k = 0; k < kv; k += DOT_LANES) {
        rows4_vec a[4], b[4];
        for (int q = 0; q < 4; q++) {
          memcpy(&a[q], ar[q] + k, sizeof a[q]);
          memcpy(&b[q], br[q] + k, sizeof b[q]);
        }
        for (int q = 0; q < 4; q++)
          for (int r = 0; r < 4; r++) s[q][r] = a[q] * b[r] + s[q][r];
      }
      float sums[16];
      rows4_reduce16(&s[0][0], sums);
      for (int q = 0; q < mi; q++)
        for (int r = 0; r < nj; r++) {
          float acc = sums[4 * q + r];
          for (int64_t k = kv; k < K; k++) acc = fmaf(ar[q][k], br[r][k], acc);
          Cb[(i0 + q) * N + j0 + r] = acc;
        }
    }
}

/* The pool shares out blocks of ROWS_BT_COLS columns per batch: every element is the same
 * computation wherever it runs, so the bits do not depend on the thread count. */
enum { ROWS_BT_COLS = 32 };

typedef struct rows_bt {
  int64_t M, N, K, blocks; /* blocks of columns per batch */
  const float *A, *Bt;
  float *C;
} rows_bt;

static void rows_bt_range(void *ctx, int64_t begin, int64_t end) {
  const rows_bt *g = ctx;
  for (int64_t t = begin; t < end; t++) {
    int64_t bi = t / g->blocks, j0 = (t % g->blocks) * ROWS_BT_COLS;
    int64_t j1 = g->N - j0 < ROWS_BT_COLS ? g->N : j0 + ROWS_BT_COLS;
    rows_times_bt_f32(g->M, g->N, g->K, g->A + bi * g->M * g->K, g->Bt + bi * g->N * g->K,
                      g->C + bi * g->M * g->N, j0, j1);
  }
}

#define NAIVE_COMPLEX(T)                                                                       \
  for (int64_t bi = 0; bi < B; bi++) {                                                         \
    const T *Ab = (const T *)a->data + 2 * bi * M * K, *Bb = (const T *)b->data + 2 * bi * K * N; \
    T *Cb = (T *)c + 2 * bi * M * N;                                                           \
    for (int64_t i = 0; i < M; i++)                                                            \
      for (int64_t j = 0; j < N; j++) {                                                        \
        T re = 0, im = 0;                                                                      \
        for (int64_t k = 0; k < K; k++) {                                                      \
          const T *x = a->trans ? Ab + 2 * (k * M + i) : Ab + 2 * (i * K + k);                \
          const T *y = b->trans ? Bb + 2 * (j * K + k) : Bb + 2 * (k * N + j);                \
          T pr1 = x[0] * y[0], pr2 = x[1] * y[1], pi1 = x[0] * y[1], pi2 = x[1] * y[0];       \
          T pr = pr1 - pr2, pi = pi1 + pi2;                                                    \
          re = re + pr;                                                                        \
          im = im + pi;                                                                        \
        }                                                                                      \
        Cb[2 * (i * N + j)] = re;                                                              \
        Cb[2 * (i * N + j) + 1] = im;                                                          \
      }                                                                                        \
  }

static void gemm_naive(av_dtype ct, const dot_plan *pl, const operand_src *a, const operand_src *b,
                       void *c) {
  int64_t B = pl->B, M = pl->M, N = pl->N, K = pl->K;
  if (ct == AV_DT_F32 && small_gemm_f32(B, M, N, K, a->data, a->trans, b->data, b->trans, c)) return;
  if (ct == AV_DT_F64 && small_gemm_f64(B, M, N, K, a->data, a->trans, b->data, b->trans, c)) return;
  switch (ct) {
    case AV_DT_F32: NAIVE_REAL(float) break;
    case AV_DT_F64: NAIVE_REAL(double) break;
    case AV_DT_C64: NAIVE_COMPLEX(float) break;
    default: NAIVE_COMPLEX(double) break;
  }
}

/* f32 GEMMs on oneDNN's sgemm (measured 10-15% faster than OpenBLAS 0.3.21 on this
 * machine's AVX-512 for the model shapes, single-threaded), in tiles of the result per batch
 * that the pool shares out as they come (no static split waiting on a descheduled thread, no
 * BLAS threads spinning). Tiles are at most GEMM_TILE square, halved (down to GEMM_TILE_MIN,
 * and while a half keeps GEMM_SHARE_MACS) until a product has GEMM_MIN_TILES of them, from
 * the shapes alone. Each tile is one single-threaded sgemm over the whole K, so a result
 * element's sum never depends on the number of threads. */
enum { GEMM_TILE = 256, GEMM_TILE_MIN = 64, GEMM_MIN_TILES = 8 };
#define GEMM_SHARE_MACS 2e5 /* a tile with fewer multiply-adds stays on the calling thread */

typedef struct gemm_tiles {
  const dot_plan *pl;
  const operand_src *a, *b;
  float *c;
  int64_t tm, tn; /* tile size */
  int64_t mt, nt; /* tiles along M and N */
  atomic_bool failed;
} gemm_tiles;

static void gemm_tile_range(void *ctx, int64_t begin, int64_t end) {
  gemm_tiles *g = ctx;
  const dot_plan *pl = g->pl;
  int64_t M = pl->M, N = pl->N, K = pl->K;
  int64_t lda = g->a->trans ? M : K, ldb = g->b->trans ? K : N;
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  for (int64_t t = begin; t < end; t++) {
    int64_t bi = t / (g->mt * g->nt), r = t % (g->mt * g->nt);
    int64_t i0 = (r / g->nt) * g->tm, j0 = (r % g->nt) * g->tn;
    int64_t m = M - i0 < g->tm ? M - i0 : g->tm, n = N - j0 < g->tn ? N - j0 : g->tn;
    const float *A = (const float *)g->a->data + bi * M * K, *B = (const float *)g->b->data + bi * K * N;
    const float *At = g->a->trans ? A + i0 : A + i0 * K;
    const float *Bt = g->b->trans ? B + j0 * K : B + j0;
    float *C = g->c + bi * M * N + i0 * N + j0;
    if (dnnl_sgemm(g->a->trans ? 'T' : 'N', g->b->trans ? 'T' : 'N', m, n, K, 1.0f, At, lda, Bt,
                   ldb, 0.0f, C, N) != dnnl_success)
      atomic_store(&g->failed, true);
  }
  omp_set_num_threads(saved);
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* false when oneDNN refused (the caller then uses OpenBLAS for the whole product) */
static bool gemm_dnnl(const dot_plan *pl, const operand_src *a, const operand_src *b, float *c,
                      struct av_thread_pool *pool) {
  gemm_tiles g = {.pl = pl, .a = a, .b = b, .c = c, .tm = GEMM_TILE, .tn = GEMM_TILE};
  /* first the smallest tile side that still covers a short dimension in one, so that halving
   * below can split it (an LSTM's 16x512 by 512x128 gradient product ran as one 16x256 tile
   * on one thread: 47 us, against XLA:CPU's 33) */
  while (g.tm > GEMM_TILE_MIN && pl->M <= g.tm / 2) g.tm /= 2;
  while (g.tn > GEMM_TILE_MIN && pl->N <= g.tn / 2) g.tn /= 2;
  for (;;) {
    g.mt = ceil_div(pl->M, g.tm);
    g.nt = ceil_div(pl->N, g.tn);
    if (pl->B * g.mt * g.nt >= GEMM_MIN_TILES) break;
    /* tiles too small to share out run one after another on the calling thread: there, more
     * sgemm calls only cost (an LSTM step's 16x512x128 product: 8 tiles of 16x64 took 55 us
     * on one thread, 4 of 16x128 ~40, one call 32) */
    double tile_macs = (double)(pl->M < g.tm ? pl->M : g.tm) * (double)(pl->N < g.tn ? pl->N : g.tn) * (double)pl->K;
    if (tile_macs / 2 < GEMM_SHARE_MACS) break;
    /* halve the longer tile side (square tiles pack the fewest panels per product: 256x64
     * tiles made a 256x512x512 product 10% slower than 128x128 ones, one thread, Zen 4),
     * of equal sides the one that cuts the most */
    bool m_ok = g.tm > GEMM_TILE_MIN && pl->M > g.tm / 2, n_ok = g.tn > GEMM_TILE_MIN && pl->N > g.tn / 2;
    bool m_first = g.tm != g.tn ? g.tm > g.tn : ceil_div(pl->M, g.tm) >= ceil_div(pl->N, g.tn);
    if (m_ok && (!n_ok || m_first)) g.tm /= 2;
    else if (n_ok) g.tn /= 2;
    else break;
  }
  int64_t ntiles = pl->B * g.mt * g.nt;
  /* a tile per chunk; small tiles stay on the calling thread */
  double macs_per_tile = (double)pl->M * (double)pl->N * (double)pl->K / (double)(g.mt * g.nt);
  av_parallel_for(pool, ntiles, 1, macs_per_tile >= GEMM_SHARE_MACS ? 1 : ntiles, gemm_tile_range, &g);
  return !atomic_load(&g.failed);
}

/* Matrix-vector products (N == 1, A's rows contiguous) past the small size: the small loops'
 * four-row dot products, in blocks of GEMV_ROWS rows that the pool shares out when a thread's
 * share has GEMM_SHARE_MACS. A 512x512 matrix by a vector on oneDNN's sgemm took 29 us as a
 * step (a conjugate-gradient solve's while loop) and 115 us per product in a loop program;
 * this takes 11.7 in the loop program (XLA:CPU 11.5, both measured with another job on the
 * second core). Every row's sum is the same whatever the blocks, so the bits do not depend on
 * the thread count. */
enum { GEMV_ROWS = 64 };

typedef struct gemv_rows {
  av_dtype ct;
  const dot_plan *pl;
  const operand_src *a, *b;
  void *c;
  int64_t blocks; /* per batch */
} gemv_rows;

static void gemv_range(void *ctx, int64_t begin, int64_t end) {
  const gemv_rows *g = ctx;
  int64_t M = g->pl->M, K = g->pl->K;
  for (int64_t t = begin; t < end; t++) {
    int64_t bi = t / g->blocks, i0 = (t % g->blocks) * GEMV_ROWS;
    int64_t m = M - i0 < GEMV_ROWS ? M - i0 : GEMV_ROWS, row = bi * M + i0;
    if (g->ct == AV_DT_F32)
      small_gemm_f32(1, m, 1, K, (const float *)g->a->data + row * K, false, (const float *)g->b->data + bi * K,
                     g->b->trans, (float *)g->c + row);
    else
      small_gemm_f64(1, m, 1, K, (const double *)g->a->data + row * K, false, (const double *)g->b->data + bi * K,
                     g->b->trans, (double *)g->c + row);
  }
}

static void gemv(av_dtype ct, const dot_plan *pl, const operand_src *a, const operand_src *b, void *c,
                 struct av_thread_pool *pool) {
  gemv_rows g = {ct, pl, a, b, c, ceil_div(pl->M, GEMV_ROWS)};
  double block_macs = (double)GEMV_ROWS * (double)pl->K;
  int64_t min_items = (int64_t)(GEMM_SHARE_MACS / block_macs) + 1;
  av_parallel_for(pool, pl->B * g.blocks, 1, min_items, gemv_range, &g);
}

static void gemm_blas(av_dtype ct, const dot_plan *pl, const operand_src *a, const operand_src *b,
                      void *c, bool dnnl, struct av_thread_pool *pool) {
  if ((double)pl->M * (double)pl->N * (double)pl->K <= 65536.0) {
    gemm_naive(ct, pl, a, b, c);
    return;
  }
  if (pl->N == 1 && !a->trans && (ct == AV_DT_F32 || ct == AV_DT_F64)) {
    gemv(ct, pl, a, b, c, pool);
    return;
  }
  if (ct == AV_DT_F32 && b->trans && !a->trans && pl->M <= 32 && pl->K >= 4 * DOT_LANES) {
    rows_bt g = {pl->M, pl->N, pl->K, ceil_div(pl->N, ROWS_BT_COLS), a->data, b->data, c};
    double block_macs = (double)pl->M * ROWS_BT_COLS * (double)pl->K;
    av_parallel_for(pool, pl->B * g.blocks, 1, (int64_t)(GEMM_SHARE_MACS / block_macs) + 1, rows_bt_range, &g);
    return;
  }
  if (ct == AV_DT_F32 && dnnl && gemm_dnnl(pl, a, b, c, pool)) return;
  int64_t M = pl->M, N = pl->N, K = pl->K;
  size_t es = av_dtype_size(ct);
  const char *A = a->data, *Bm = b->data;
  char *C = c;
  int lda = (int)(a->trans ? (M > 0 ? M : 1) : (K > 0 ? K : 1));
  int ldb = (int)(b->trans ? (K > 0 ? K : 1) : (N > 0 ? N : 1));
  int ldc = (int)(N > 0 ? N : 1);
  CBLAS_TRANSPOSE ta = a->trans ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = b->trans ? CblasTrans : CblasNoTrans;
  for (int64_t bi = 0; bi < pl->B; bi++) {
    const void *Ab = A + (size_t)(bi * M * K) * es;
    const void *Bb = Bm + (size_t)(bi * K * N) * es;
    void *Cb = C + (size_t)(bi * M * N) * es;
    switch (ct) {
      case AV_DT_F32:
        cblas_sgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0f, Ab, lda, Bb, ldb, 0.0f, Cb, ldc);
        break;
      case AV_DT_F64:
        cblas_dgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0, Ab, lda, Bb, ldb, 0.0, Cb, ldc);
        break;
      case AV_DT_C64: {
        const float one[2] = {1, 0}, zero[2] = {0, 0};
        cblas_cgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, one, Ab, lda, Bb, ldb, zero, Cb, ldc);
        break;
      }
      default: {
        const double one[2] = {1, 0}, zero[2] = {0, 0};
        cblas_zgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, one, Ab, lda, Bb, ldb, zero, Cb, ldc);
        break;
      }
    }
  }
}

/* Integers: operands converted to the result type and widened to 64 bits; products and sums
 * wrap modulo 2^64, whose low bits equal the wrap in the narrower result type. */
static void gemm_int(const dot_plan *pl, const uint64_t *A, const uint64_t *Bm, uint64_t *C,
                     bool pred) {
  int64_t M = pl->M, N = pl->N, K = pl->K;
  for (int64_t bi = 0; bi < pl->B; bi++) {
    const uint64_t *Ab = A + bi * M * K, *Bb = Bm + bi * K * N;
    uint64_t *Cb = C + bi * M * N;
    memset(Cb, 0, (size_t)(M * N) * sizeof *Cb);
    for (int64_t i = 0; i < M; i++)
      for (int64_t k = 0; k < K; k++) {
        uint64_t a = Ab[i * K + k];
        if (!a) continue;
        const uint64_t *brow = Bb + k * N;
        uint64_t *crow = Cb + i * N;
        if (pred)
          for (int64_t j = 0; j < N; j++) crow[j] |= brow[j];
        else
          for (int64_t j = 0; j < N; j++) crow[j] += a * brow[j];
      }
  }
}

av_code av_kernel_dot_general(const av_dot_params *p, const av_view *lhs, const av_view *rhs,
                              av_view *out, av_diag *d) {
  dot_plan pl;
  av_code c = make_plan(p, lhs, rhs, out, &pl, d);
  if (c) return c;
  av_dtype ot = out->dtype;
  size_t oes = av_dtype_size(ot);
  int64_t on = pl.B * pl.M * pl.N;
  if (on == 0) return AV_OK;
  if (pl.K == 0) {
    for (int64_t i = 0; i < on; i++) av_kel_store_real(ot, (char *)out->data + i * (int64_t)oes, 0.0);
    return AV_OK;
  }
  if (pl.M > INT32_MAX || pl.N > INT32_MAX || pl.K > INT32_MAX)
    return av_diag_set(d, AV_UNIMPLEMENTED, "dot_general: matrix dimension over 2^31");
  bool is_int = av_dtype_is_int(ot) || ot == AV_DT_PRED;
  av_dtype ct;
  if (is_int) ct = AV_DT_U64;
  else if (ot == AV_DT_F64 || ot == AV_DT_C64 || ot == AV_DT_C128) ct = ot;
  else if (av_dtype_is_float(ot)) ct = AV_DT_F32;
  else return av_diag_set(d, AV_UNIMPLEMENTED, "dot_general: result type %s", av_dtype_mlir_name(ot));

  operand_src a = {0}, b = {0};
  void *cbuf = NULL;
  int nb = p->nbatch;
  if (is_int) {
    /* convert to the result type first so the wrap happens in it, then widen */
    c = prepare(lhs, pl.lperm, nb, pl.nlfree, p->ncontract, ot, false, p->pool, &a, d);
    if (!c) c = prepare(rhs, pl.rperm, nb, p->ncontract, pl.nrfree, ot, false, p->pool, &b, d);
    /* widen (and pack, if prepare kept the original layout) into u64 */
    uint64_t *wa = NULL, *wb = NULL;
    if (!c) {
      wa = malloc((size_t)(pl.B * pl.M * pl.K) * 8);
      wb = malloc((size_t)(pl.B * pl.K * pl.N) * 8);
      cbuf = malloc((size_t)on * 8);
      if (!wa || !wb || !cbuf) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "dot_general: out of memory");
    }
    if (!c) {
      /* `prepare` only returns the original layout untransposed here (nb may be > 0) or
       * transposed with nb == 0; re-pack transposed ones through permute_copy. */
      int64_t dims_a[2] = {pl.K, pl.M}, dims_b[2] = {pl.N, pl.K};
      int tp[2] = {1, 0};
      if (a.trans) av_kel_permute_copy(AV_DT_U64, wa, ot, a.data, 2, dims_a, tp);
      if (b.trans) av_kel_permute_copy(AV_DT_U64, wb, ot, b.data, 2, dims_b, tp);
      size_t es = av_dtype_size(ot);
      if (!a.trans)
        for (int64_t i = 0; i < pl.B * pl.M * pl.K; i++)
          wa[i] = av_kel_load_bits(ot == AV_DT_PRED ? AV_DT_U8 : ot, (const char *)a.data + i * (int64_t)es);
      if (!b.trans)
        for (int64_t i = 0; i < pl.B * pl.K * pl.N; i++)
          wb[i] = av_kel_load_bits(ot == AV_DT_PRED ? AV_DT_U8 : ot, (const char *)b.data + i * (int64_t)es);
      if (ot == AV_DT_PRED) {
        for (int64_t i = 0; i < pl.B * pl.M * pl.K; i++) wa[i] = wa[i] != 0;
        for (int64_t i = 0; i < pl.B * pl.K * pl.N; i++) wb[i] = wb[i] != 0;
      }
      gemm_int(&pl, wa, wb, cbuf, ot == AV_DT_PRED);
      for (int64_t i = 0; i < on; i++) av_kel_store_bits(ot, (char *)out->data + i * (int64_t)oes, ((uint64_t *)cbuf)[i]);
    }
    free(wa);
    free(wb);
  } else {
    /* products past the small loops' size go to GEMM (gemm_blas), which reads transposed
     * batches in place */
    bool gemm = (double)pl.M * (double)pl.N * (double)pl.K > 65536.0;
    c = prepare(lhs, pl.lperm, nb, pl.nlfree, p->ncontract, ct, gemm, p->pool, &a, d);
    if (!c) c = prepare(rhs, pl.rperm, nb, p->ncontract, pl.nrfree, ct, gemm, p->pool, &b, d);
    if (!c) {
      void *dst = out->data;
      if (ct != ot) {
        cbuf = malloc((size_t)on * av_dtype_size(ct));
        if (!cbuf) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "dot_general: out of memory");
        dst = cbuf;
      }
      if (!c) {
        gemm_blas(ct, &pl, &a, &b, dst, p->dnnl_gemm, p->pool);
        if (ct != ot) {
          size_t ces = av_dtype_size(ct);
          if (ct == AV_DT_F32 && is_narrow16(ot)) convert16_parallel(p->pool, ot, false, out->data, cbuf, on);
          else
            for (int64_t i = 0; i < on; i++)
              av_kel_convert(ot, (char *)out->data + i * (int64_t)oes, ct, (const char *)cbuf + i * (int64_t)ces);
        }
      }
    }
  }
  free(a.owned);
  free(b.owned);
  free(cbuf);
  return c;
}
