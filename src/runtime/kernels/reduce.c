/* reduce: outputs start as the init values; the input is walked once in row-major order and
 * each element is folded into the output element it reduces into. Adjacent axes that are
 * both kept or both reduced are merged first, so the innermost loop is either a contiguous
 * fold into one accumulator (reduced inner axis) or a contiguous element-wise fold into a
 * row of accumulators (kept inner axis) - both vectorise for the `simple` bodies. */
#include "runtime/kernels/reduce.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/convert.h"
#include "runtime/kernels/reduce_elem.h"
#include "runtime/kernels/simd_clones.h"
#include "runtime/thread_pool.h"

typedef struct red_shape {
  int rank;
  int64_t dims[AV_KMAX_RANK];
  int64_t istride[AV_KMAX_RANK]; /* elements */
  int64_t ostride[AV_KMAX_RANK]; /* elements; 0 for reduced axes */
  bool reduced[AV_KMAX_RANK];
} red_shape;

static av_code validate(const av_reduce_params *p, const av_view *in, const av_view *init,
                        const av_view *out, red_shape *s, av_diag *d) {
  if (p->ninputs < 1 || p->ninputs > AV_KMAX_VARIADIC)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce: %d inputs (1..%d supported)", p->ninputs,
                       AV_KMAX_VARIADIC);
  int rank = in[0].rank;
  if (rank < 0 || rank > AV_KMAX_RANK)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce: rank %d unsupported", rank);
  if (p->ndims < 0 || p->ndims > rank)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce: %d dimensions for rank %d", p->ndims, rank);
  bool red[AV_KMAX_RANK] = {0};
  for (int i = 0; i < p->ndims; i++) {
    if (p->dims[i] < 0 || p->dims[i] >= rank || red[p->dims[i]])
      return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce: bad or repeated dimension %lld",
                         (long long)p->dims[i]);
    red[p->dims[i]] = true;
  }
  for (int k = 0; k < p->ninputs; k++) {
    if (in[k].rank != rank || memcmp(in[k].dims, in[0].dims, sizeof(int64_t) * (size_t)rank) != 0)
      return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce: input %d shape differs from input 0", k);
    if (init[k].rank != 0 || init[k].dtype != out[k].dtype || in[k].dtype != out[k].dtype)
      return av_diag_set(d, AV_INVALID_ARGUMENT,
                         "reduce: input/init/result %d must share one element type (init scalar)", k);
    if (out[k].rank != rank - p->ndims)
      return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce: result %d has rank %d, expected %d", k,
                         out[k].rank, rank - p->ndims);
    for (int i = 0, j = 0; i < rank; i++)
      if (!red[i] && out[k].dims[j++] != in[0].dims[i])
        return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce: result %d dimension %d mismatch", k, j - 1);
  }
  /* strides, then merge adjacent axes of the same kind (size-1 axes merge with anything) */
  int64_t is[AV_KMAX_RANK], os[AV_KMAX_RANK];
  for (int i = rank - 1, a = 1, b = 1; i >= 0; i--) {
    is[i] = a;
    a *= in[0].dims[i];
    os[i] = red[i] ? 0 : b;
    if (!red[i]) b *= in[0].dims[i];
  }
  s->rank = 0;
  for (int i = 0; i < rank; i++) {
    int64_t n = in[0].dims[i];
    if (n == 1) continue;
    if (s->rank > 0 && s->reduced[s->rank - 1] == red[i]) {
      int t = s->rank - 1;
      s->dims[t] *= n;
      s->istride[t] = is[i];
      s->ostride[t] = os[i];
      continue;
    }
    s->dims[s->rank] = n;
    s->istride[s->rank] = is[i];
    s->ostride[s->rank] = os[i];
    s->reduced[s->rank] = red[i];
    s->rank++;
  }
  if (s->rank == 0) { /* scalar (or all-ones) input */
    s->rank = 1;
    s->dims[0] = 1;
    s->istride[0] = 1;
    s->ostride[0] = 0;
    s->reduced[0] = true;
  }
  return AV_OK;
}

/* ---- fast paths: one input, simple body ---- */

#define FMAXF(a, b) (isnan(a) ? (a) : isnan(b) ? (b) : ((a) > (b) ? (a) : (b)))
#define FMINF(a, b) (isnan(a) ? (a) : isnan(b) ? (b) : ((a) < (b) ? (a) : (b)))
#define IMAX(a, b) ((a) > (b) ? (a) : (b))
#define IMIN(a, b) ((a) < (b) ? (a) : (b))
#define IADD(a, b) ((a) + (b))
#define IMUL(a, b) ((a) * (b))
#define IAND(a, b) ((a) & (b))
#define IOR(a, b) ((a) | (b))
#define IXOR(a, b) ((a) ^ (b))

/* Walks the merged shape; the inner axis is contiguous in the input (istride 1). */
#define NO_RUN(src, n, acc) false
#define DEFINE_FOLD(name, T, OP) DEFINE_FOLD_RUN(name, T, OP, NO_RUN)
/* RUN(src, n, &acc): folds a contiguous run into acc exactly as the loop would, or returns
 * false (acc untouched) to leave it to the loop. */
#define DEFINE_FOLD_RUN(name, T, OP, RUN)                                                     \
  AV_CLONES static void name(const red_shape *s, const T *in, T *out) {                       \
    int r = s->rank;                                                                          \
    int64_t idx[AV_KMAX_RANK] = {0};                                                          \
    int64_t inner = s->dims[r - 1], total = 1;                                                \
    for (int i = 0; i < r; i++) total *= s->dims[i];                                          \
    int64_t ioff = 0, ooff = 0;                                                               \
    bool inner_red = s->reduced[r - 1];                                                       \
    for (int64_t done = 0; done < total; done += inner) {                                     \
      const T *src = in + ioff;                                                               \
      if (inner_red) {                                                                        \
        T acc = out[ooff];                                                                    \
        if (!RUN(src, inner, &acc))                                                           \
          for (int64_t j = 0; j < inner; j++) acc = OP(acc, src[j]);                          \
        out[ooff] = acc;                                                                      \
      } else {                                                                                \
        T *dst = out + ooff;                                                                  \
        for (int64_t j = 0; j < inner; j++) dst[j] = OP(dst[j], src[j]);                      \
      }                                                                                       \
      for (int k = r - 2; k >= 0; k--) {                                                      \
        idx[k]++;                                                                             \
        ioff += s->istride[k];                                                                \
        ooff += s->ostride[k];                                                                \
        if (idx[k] < s->dims[k]) break;                                                       \
        ioff -= s->istride[k] * s->dims[k];                                                   \
        ooff -= s->ostride[k] * s->dims[k];                                                   \
        idx[k] = 0;                                                                           \
      }                                                                                       \
    }                                                                                         \
  }

/* Float max/min of a contiguous run in SIMD lanes. The sequential fold keeps the later of
 * equal values and the first NaN, which lanes would not reproduce for NaNs and signed zeros;
 * but when the run has no NaN or infinity and its extreme is not zero, every element equal
 * to the extreme has the same bits, so the lane result is exactly the fold's. Otherwise
 * (probe lanes x*0 turn NaN) the caller runs the sequential loop. */
#define DEFINE_EXTREME_RUN(name, T, MASK, CMP)                                                \
  static inline bool name(const T *restrict src, int64_t n, T *acc) {                         \
    enum { L = 16 };                                                                          \
    /* explicit vectors: gcc does not vectorise the ternary max over lane arrays */           \
    typedef T vec __attribute__((vector_size(L * sizeof(T))));                                \
    typedef MASK mask __attribute__((vector_size(L * sizeof(T))));                            \
    if (n < 2 * L || isnan(*acc)) return false;                                               \
    vec m, probe, zero = {0};                                                                 \
    memcpy(&m, src, sizeof m);                                                                \
    probe = m * zero;                                                                         \
    int64_t j = L;                                                                            \
    for (; j + L <= n; j += L) {                                                              \
      vec x;                                                                                  \
      memcpy(&x, src + j, sizeof x);                                                          \
      mask take = (mask)(x CMP m);                                                            \
      m = (vec)(((mask)x & take) | ((mask)m & ~take));                                        \
      probe += x * zero;                                                                      \
    }                                                                                         \
    for (; j < n; j++) {                                                                      \
      T x = src[j];                                                                           \
      m[0] = x CMP m[0] ? x : m[0];                                                           \
      probe[0] += x * (T)0;                                                                   \
    }                                                                                         \
    T best = m[0], bad = probe[0];                                                            \
    for (int k = 1; k < L; k++) {                                                             \
      best = m[k] CMP best ? m[k] : best;                                                     \
      bad += probe[k];                                                                        \
    }                                                                                         \
    if (isnan(bad) || best == 0) return false;                                                \
    *acc = *acc CMP best ? *acc : best;                                                       \
    return true;                                                                              \
  }

#define DEFINE_FOLDS_FLOAT(T, MASK, sfx)                                                      \
  DEFINE_EXTREME_RUN(max_run_##sfx, T, MASK, >)                                               \
  DEFINE_EXTREME_RUN(min_run_##sfx, T, MASK, <)                                               \
  DEFINE_FOLD(fold_add_##sfx, T, IADD)                                                        \
  DEFINE_FOLD(fold_mul_##sfx, T, IMUL)                                                        \
  DEFINE_FOLD_RUN(fold_max_##sfx, T, FMAXF, max_run_##sfx)                                    \
  DEFINE_FOLD_RUN(fold_min_##sfx, T, FMINF, min_run_##sfx)
#define DEFINE_FOLDS_INT(T, sfx)                                                              \
  DEFINE_FOLD(fold_add_##sfx, T, IADD)                                                        \
  DEFINE_FOLD(fold_mul_##sfx, T, IMUL)                                                        \
  DEFINE_FOLD(fold_max_##sfx, T, IMAX)                                                        \
  DEFINE_FOLD(fold_min_##sfx, T, IMIN)                                                        \
  DEFINE_FOLD(fold_and_##sfx, T, IAND)                                                        \
  DEFINE_FOLD(fold_or_##sfx, T, IOR)                                                          \
  DEFINE_FOLD(fold_xor_##sfx, T, IXOR)

DEFINE_FOLDS_FLOAT(float, int32_t, f32)
DEFINE_FOLDS_FLOAT(double, int64_t, f64)
/* Wrapping integer add/mul: done on unsigned types of the same width; max/min need signed. */
DEFINE_FOLDS_INT(uint8_t, u8)
DEFINE_FOLDS_INT(uint16_t, u16)
DEFINE_FOLDS_INT(uint32_t, u32)
DEFINE_FOLDS_INT(uint64_t, u64)
DEFINE_FOLD(fold_max_s8, int8_t, IMAX)
DEFINE_FOLD(fold_min_s8, int8_t, IMIN)
DEFINE_FOLD(fold_max_s16, int16_t, IMAX)
DEFINE_FOLD(fold_min_s16, int16_t, IMIN)
DEFINE_FOLD(fold_max_s32, int32_t, IMAX)
DEFINE_FOLD(fold_min_s32, int32_t, IMIN)
DEFINE_FOLD(fold_max_s64, int64_t, IMAX)
DEFINE_FOLD(fold_min_s64, int64_t, IMIN)

/* ---- f32/f64 sums: accurate and vectorisable ----
 * A running sum that adds one element at a time loses about n*eps relative accuracy (1e6
 * f32 copies of tanh(1) came out 1% low). Here a contiguous reduced run is summed in blocks
 * of SUM_BLOCK elements with SUM_LANES independent accumulators (each lane adds only
 * SUM_BLOCK/SUM_LANES elements, and the lanes map onto SIMD registers), block results are
 * added in double, and every output keeps a double accumulator until the end, so
 * accumulating along leading (kept-inner) axes is exact to double precision as well. */
#define SUM_LANES 16
#define SUM_BLOCK 256
#define SUM_COLS 64 /* kept columns summed at a time down the rows */

/* A last block shorter than SUM_BLOCK still goes through the lanes when it holds SUM_LANES or
 * more elements (attention's 128-long softmax rows were one serial chain of double adds);
 * fewer than SUM_LANES left are added one by one. */
#define DEFINE_SUM_RUN(name, T)                                                               \
  static inline double name(const T *restrict src, int64_t n) {                               \
    double total = -0.0; /* -0 is the additive identity: a sum of -0s stays -0 */             \
    int64_t j = 0;                                                                            \
    while (n - j >= SUM_LANES) {                                                              \
      int64_t m = n - j >= SUM_BLOCK ? SUM_BLOCK : (n - j) / SUM_LANES * SUM_LANES;           \
      T lane[SUM_LANES];                                                                      \
      for (int k = 0; k < SUM_LANES; k++) lane[k] = (T)-0.0;                                  \
      for (int64_t b = 0; b < m; b += SUM_LANES)                                              \
        for (int k = 0; k < SUM_LANES; k++) lane[k] += src[j + b + k];                        \
      for (int w = SUM_LANES / 2; w > 0; w /= 2) /* pairwise across lanes */                  \
        for (int k = 0; k < w; k++) lane[k] += lane[k + w];                                   \
      total += (double)lane[0];                                                               \
      j += m;                                                                                 \
    }                                                                                         \
    for (; j < n; j++) total += (double)src[j];                                               \
    return total;                                                                             \
  }
DEFINE_SUM_RUN(sum_run_f32, float)

static inline double sum_run_f64(const double *restrict src, int64_t n) {
  double lane[SUM_LANES];
  for (int k = 0; k < SUM_LANES; k++) lane[k] = -0.0;
  int64_t j = 0;
  for (; j + SUM_LANES <= n; j += SUM_LANES)
    for (int k = 0; k < SUM_LANES; k++) lane[k] += src[j + k];
  for (int w = SUM_LANES / 2; w > 0; w /= 2)
    for (int k = 0; k < w; k++) lane[k] += lane[k + w];
  double total = lane[0];
  for (; j < n; j++) total += src[j];
  return total;
}

/* Returns false (nothing written) when the double scratch cannot be allocated. */
#define DEFINE_SUM(name, T, RUN)                                                              \
  AV_CLONES static bool name(const red_shape *s, const T *in, T *out, int64_t nout) {         \
    double *acc = malloc((size_t)(nout > 0 ? nout : 1) * sizeof(double));                     \
    if (!acc) return false;                                                                   \
    for (int64_t i = 0; i < nout; i++) acc[i] = (double)out[i];                               \
    int r = s->rank;                                                                          \
    int64_t idx[AV_KMAX_RANK] = {0};                                                          \
    int64_t inner = s->dims[r - 1], total = 1;                                                \
    for (int i = 0; i < r; i++) total *= s->dims[i];                                          \
    int64_t ioff = 0, ooff = 0;                                                               \
    bool inner_red = s->reduced[r - 1];                                                       \
    if (r == 2 && !inner_red) { /* [rows reduced, row kept]: NHWC's per-channel sums */      \
      for (int64_t j0 = 0; j0 < inner; j0 += SUM_COLS) { /* accumulators in registers */      \
        int64_t nj = inner - j0 < SUM_COLS ? inner - j0 : SUM_COLS;                           \
        double col[SUM_COLS];                                                                 \
        for (int64_t j = 0; j < nj; j++) col[j] = acc[j0 + j];                                \
        for (int64_t i = 0; i < s->dims[0]; i++) {                                            \
          const T *restrict src = in + i * s->istride[0] + j0;                                \
          for (int64_t j = 0; j < nj; j++) col[j] += (double)src[j];                          \
        }                                                                                     \
        for (int64_t j = 0; j < nj; j++) acc[j0 + j] = col[j];                                \
      }                                                                                       \
      total = 0;                                                                              \
    }                                                                                         \
    for (int64_t done = 0; done < total; done += inner) {                                     \
      const T *restrict src = in + ioff;                                                      \
      if (inner_red) {                                                                        \
        acc[ooff] += RUN(src, inner);                                                         \
      } else {                                                                                \
        double *restrict dst = acc + ooff;                                                    \
        for (int64_t j = 0; j < inner; j++) dst[j] += (double)src[j];                         \
      }                                                                                       \
      for (int k = r - 2; k >= 0; k--) {                                                      \
        idx[k]++;                                                                             \
        ioff += s->istride[k];                                                                \
        ooff += s->ostride[k];                                                                \
        if (idx[k] < s->dims[k]) break;                                                       \
        ioff -= s->istride[k] * s->dims[k];                                                   \
        ooff -= s->ostride[k] * s->dims[k];                                                   \
        idx[k] = 0;                                                                           \
      }                                                                                       \
    }                                                                                         \
    for (int64_t i = 0; i < nout; i++) out[i] = (T)acc[i];                                    \
    free(acc);                                                                                \
    return true;                                                                              \
  }
DEFINE_SUM(sum_f32, float, sum_run_f32)
DEFINE_SUM(sum_f64, double, sum_run_f64)

typedef void (*fold_fn)(const red_shape *, const void *, void *);

#define PICK_INT(W)                                                                           \
  switch (op) {                                                                               \
    case AV_OP_ADD: return (fold_fn)fold_add_u##W;                                            \
    case AV_OP_MULTIPLY: return (fold_fn)fold_mul_u##W;                                       \
    case AV_OP_AND: return (fold_fn)fold_and_u##W;                                            \
    case AV_OP_OR: return (fold_fn)fold_or_u##W;                                              \
    case AV_OP_XOR: return (fold_fn)fold_xor_u##W;                                            \
    case AV_OP_MAXIMUM: return sgn ? (fold_fn)fold_max_s##W : (fold_fn)fold_max_u##W;         \
    case AV_OP_MINIMUM: return sgn ? (fold_fn)fold_min_s##W : (fold_fn)fold_min_u##W;         \
    default: return NULL;                                                                     \
  }

static fold_fn pick_fold(av_opcode op, av_dtype t) {
  if (t == AV_DT_F32 || t == AV_DT_F64) {
    bool f = t == AV_DT_F32;
    switch (op) {
      case AV_OP_ADD: return f ? (fold_fn)fold_add_f32 : (fold_fn)fold_add_f64;
      case AV_OP_MULTIPLY: return f ? (fold_fn)fold_mul_f32 : (fold_fn)fold_mul_f64;
      case AV_OP_MAXIMUM: return f ? (fold_fn)fold_max_f32 : (fold_fn)fold_max_f64;
      case AV_OP_MINIMUM: return f ? (fold_fn)fold_min_f32 : (fold_fn)fold_min_f64;
      default: return NULL;
    }
  }
  if (t == AV_DT_PRED) { /* 0/1 bytes: and/or/max/min are exact on bytes */
    switch (op) {
      case AV_OP_AND: case AV_OP_MINIMUM: case AV_OP_MULTIPLY: return (fold_fn)fold_and_u8;
      case AV_OP_OR: case AV_OP_MAXIMUM: return (fold_fn)fold_or_u8;
      case AV_OP_XOR: return (fold_fn)fold_xor_u8;
      default: return NULL; /* add on pred: leave to the body */
    }
  }
  if (!av_dtype_is_int(t) || av_dtype_bits(t) != (int)av_dtype_size(t) * 8) return NULL;
  bool sgn = av_dtype_is_signed_int(t);
  switch (av_dtype_size(t)) {
    case 1: PICK_INT(8)
    case 2: PICK_INT(16)
    case 4: PICK_INT(32)
    case 8: PICK_INT(64)
    default: return NULL;
  }
}

/* ---- generic path: any body, any number of inputs ---- */

static av_code fold_generic(const av_reduce_params *p, const red_shape *s, const av_view *in,
                            av_view *out, av_diag *d) {
  int n = p->ninputs, r = s->rank;
  size_t es[AV_KMAX_VARIADIC];
  for (int k = 0; k < n; k++) es[k] = av_dtype_size(in[k].dtype);
  const void *args[2 * AV_KMAX_VARIADIC];
  void *res[AV_KMAX_VARIADIC];
  unsigned char tmp[AV_KMAX_VARIADIC][16];
  for (int k = 0; k < n; k++) res[k] = tmp[k];
  int64_t idx[AV_KMAX_RANK] = {0};
  int64_t total = 1;
  for (int i = 0; i < r; i++) total *= s->dims[i];
  int64_t ioff = 0, ooff = 0;
  int64_t inner = s->dims[r - 1], iis = s->istride[r - 1], ios = s->ostride[r - 1];
  for (int64_t done = 0; done < total; done += inner) {
    for (int64_t j = 0; j < inner; j++) {
      for (int k = 0; k < n; k++) {
        args[k] = (char *)out[k].data + (ooff + j * ios) * (int64_t)es[k];
        args[n + k] = (const char *)in[k].data + (ioff + j * iis) * (int64_t)es[k];
      }
      av_code c = p->body.call(p->body.ctx, args, res, d);
      if (c) return c;
      for (int k = 0; k < n; k++) memcpy((void *)args[k], tmp[k], es[k]);
    }
    for (int k = r - 2; k >= 0; k--) {
      idx[k]++;
      ioff += s->istride[k];
      ooff += s->ostride[k];
      if (idx[k] < s->dims[k]) break;
      ioff -= s->istride[k] * s->dims[k];
      ooff -= s->ostride[k] * s->dims[k];
      idx[k] = 0;
    }
  }
  return AV_OK;
}

/* One input with a simple body on a contiguous inner axis: the vectorised loops. Returns
 * false when no fast loop applies (or the sum's scratch could not be allocated; nothing was
 * written then). `nout`: output elements the shape covers (contiguous from `out`). */
static bool reduce_fast(const av_reduce_params *p, const red_shape *s, av_dtype t, const void *in,
                        void *out, int64_t nout) {
  if (p->ninputs != 1 || p->body.simple == AV_OP_UNKNOWN || s->istride[s->rank - 1] != 1)
    return false;
  if (p->body.simple == AV_OP_ADD && (t == AV_DT_F32 || t == AV_DT_F64)) {
    bool done = t == AV_DT_F32 ? sum_f32(s, in, out, nout) : sum_f64(s, in, out, nout);
    if (done) return true;
  }
  fold_fn f = pick_fold(p->body.simple, t);
  if (!f) return false;
  f(s, in, out);
  return true;
}

/* Parallel fast path: the outermost kept axis is split, so each worker owns a contiguous
 * block of outputs and folds into each of them exactly as the serial walk does (same
 * elements, same order): results are bit-identical whatever the split. */
typedef struct reduce_split {
  const av_reduce_params *p;
  const red_shape *s;
  int axis;
  av_dtype t;
  size_t es;
  const char *in;
  char *out;
  atomic_bool failed;
} reduce_split;

static void reduce_split_range(void *ctx, int64_t b, int64_t e) {
  reduce_split *w = ctx;
  red_shape sub = *w->s;
  sub.dims[w->axis] = e - b;
  int64_t nout = (e - b) * sub.ostride[w->axis];
  const char *in = w->in + (size_t)(b * sub.istride[w->axis]) * w->es;
  char *out = w->out + (size_t)(b * sub.ostride[w->axis]) * w->es;
  if (!reduce_fast(w->p, &sub, w->t, in, out, nout)) atomic_store(&w->failed, true);
}

enum { REDUCE_MIN_CHUNK = 64 * 1024 }; /* input elements worth another thread */

/* 1: done; 0: no fast loop applies; -1: out of memory (outputs partly written). */
static int reduce_fast_parallel(const av_reduce_params *p, const red_shape *s, const av_view *in,
                                av_view *out) {
  int64_t total = av_view_num_elements(in);
  int axis = -1;
  for (int i = 0; i < s->rank && axis < 0; i++)
    if (!s->reduced[i]) axis = i;
  if (!p->pool || axis < 0 || total < 2 * REDUCE_MIN_CHUNK || s->dims[axis] < 2)
    return reduce_fast(p, s, in->dtype, in->data, out->data, av_view_num_elements(out)) ? 1 : 0;
  if (p->ninputs != 1 || p->body.simple == AV_OP_UNKNOWN || s->istride[s->rank - 1] != 1 ||
      (!(p->body.simple == AV_OP_ADD && (in->dtype == AV_DT_F32 || in->dtype == AV_DT_F64)) &&
       !pick_fold(p->body.simple, in->dtype)))
    return 0;
  int64_t per_index = total / s->dims[axis]; /* input elements under one index of the axis */
  int64_t min_idx = (REDUCE_MIN_CHUNK + per_index - 1) / per_index;
  size_t es = av_dtype_size(in->dtype);
  /* split along the contiguous axis ([rows, channels] sums): whole cache lines per worker, or
   * every worker walks all the rows for a few bytes of each (32 channels went 4 per chunk) */
  int64_t grain = axis == s->rank - 1 && es <= 64 ? (int64_t)(64 / es) : 1;
  reduce_split w = {p, s, axis, in->dtype, es, in->data, out->data, false};
  av_parallel_for(p->pool, s->dims[axis], grain, min_idx, reduce_split_range, &w);
  return atomic_load(&w.failed) ? -1 : 1; /* failed: a chunk's sum scratch */
}

/* bf16 / f16 input with an add, max or min body: folded in f32 by the loops above, rounded to
 * the type once at the end. For max and min that is exactly what the body computes (it
 * works in f32 and returns one of its operands); a sum gets f32/double accuracy instead of a
 * running 16-bit sum, as on XLA:CPU (a bf16 running sum of ones stops growing at 256; XLA
 * gives 4096 for 4096 ones), and runs ~100x faster than calling the body per element.
 * 1: done; 0: not this case; -1: out of memory (outputs untouched). */
static int reduce_narrow_float(const av_reduce_params *p, const red_shape *s, const av_view *in,
                               av_view *out) {
  av_dtype t = in->dtype;
  av_opcode op = p->body.simple;
  if (p->ninputs != 1 || (t != AV_DT_BF16 && t != AV_DT_F16) || s->istride[s->rank - 1] != 1 ||
      (op != AV_OP_ADD && op != AV_OP_MAXIMUM && op != AV_OP_MINIMUM))
    return 0;
  av_convert up, down;
  if (!av_convert_prepare(t, AV_DT_F32, &up) || !av_convert_prepare(AV_DT_F32, t, &down)) return 0;
  int64_t n = av_view_num_elements(in), nout = av_view_num_elements(out);
  float *wide = malloc(((size_t)n + (size_t)nout) * sizeof *wide);
  if (!wide) return -1;
  float *wide_out = wide + n;
  av_convert_run(&up, in->data, wide, n);
  av_convert_run(&up, out->data, wide_out, nout); /* the init values */
  av_view win = *in, wout = *out;
  win.dtype = wout.dtype = AV_DT_F32;
  win.data = wide;
  wout.data = wide_out;
  int r = reduce_fast_parallel(p, s, &win, &wout);
  if (r > 0) av_convert_run(&down, wide_out, out->data, nout);
  free(wide);
  return r;
}

av_code av_kernel_reduce(const av_reduce_params *p, const av_view *inputs, const av_view *inits,
                         av_view *outputs, av_diag *d) {
  red_shape s;
  av_code c = validate(p, inputs, inits, outputs, &s, d);
  if (c) return c;
  for (int k = 0; k < p->ninputs; k++) {
    size_t es = av_dtype_size(outputs[k].dtype);
    if (es > 16) return av_diag_set(d, AV_UNIMPLEMENTED, "reduce: element size %zu", es);
    int64_t on = av_view_num_elements(&outputs[k]);
    char *o = outputs[k].data;
    av_kel_fill(o, inits[k].data, es, on);
  }
  if (av_view_num_elements(&inputs[0]) == 0) return AV_OK;
  int fast = reduce_narrow_float(p, &s, &inputs[0], &outputs[0]);
  if (fast == 0) fast = reduce_fast_parallel(p, &s, &inputs[0], &outputs[0]);
  if (fast > 0) return AV_OK;
  if (fast < 0) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "reduce: out of memory");
  if (!p->body.call) return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce: no body function");
  return fold_generic(p, &s, inputs, outputs, d);
}

/* sum_f32's order for rows reduced whole: a double accumulator from the init, one run each */
AV_CLONES static void sum_rows_f32(const float *src, int64_t rows, int64_t len, float init,
                                   float *dst) {
  for (int64_t i = 0; i < rows; i++) dst[i] = (float)((double)init + sum_run_f32(src + i * len, len));
}

bool av_reduce_rows(av_opcode op, av_dtype t, const void *in, int64_t rows, int64_t len,
                    const void *init, void *out) {
  if (t != AV_DT_F32 || rows < 1 || len < 1) return false;
  const float *src = in;
  float *dst = out, start;
  memcpy(&start, init, sizeof start);
  if (op == AV_OP_ADD) {
    sum_rows_f32(src, rows, len, start, dst);
    return true;
  }
  fold_fn f = op == AV_OP_MAXIMUM || op == AV_OP_MINIMUM ? pick_fold(op, t) : NULL;
  if (!f) return false;
  red_shape s = {.rank = 2, .dims = {rows, len}, .istride = {len, 1}, .ostride = {1, 0},
                 .reduced = {false, true}};
  for (int64_t i = 0; i < rows; i++) dst[i] = start;
  f(&s, in, out);
  return true;
}
