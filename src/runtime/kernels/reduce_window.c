/* reduce_window: for every result index, walk its window over the conceptually padded and
 * base-dilated inputs (never materialised). Positions that fall on padding or on a
 * base-dilation hole read the init value, as the spec's pad() does. */
#include "runtime/kernels/reduce_window.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/simd_clones.h"
#include "runtime/thread_pool.h"

void av_reduce_window_params_init(av_reduce_window_params *p, int rank) {
  memset(p, 0, sizeof *p);
  p->rank = rank;
  p->ninputs = 1;
  for (int i = 0; i < AV_KMAX_RANK; i++)
    p->window_dimensions[i] = p->window_strides[i] = p->base_dilations[i] = p->window_dilations[i] = 1;
}

/* Result size of one dimension; -1 if the parameters are invalid. */
static int64_t out_size(int64_t in, int64_t win, int64_t stride, int64_t bdil, int64_t wdil,
                        int64_t lo, int64_t hi) {
  const int64_t lim = (int64_t)1 << 31; /* keeps the arithmetic below from overflowing */
  if (win < 0 || stride < 1 || bdil < 1 || wdil < 1 || in < 0) return -1;
  if (win > lim || stride > lim || bdil > lim || wdil > lim || lo > lim || lo < -lim || hi > lim || hi < -lim)
    return -1;
  int64_t padded = (in == 0 ? 0 : (in - 1) * bdil + 1) + lo + hi;
  int64_t dwin = win == 0 ? 0 : (win - 1) * wdil + 1;
  if (padded < 0) return -1;
  if (padded < dwin) return 0;
  return (padded - dwin) / stride + 1;
}

static av_code validate(const av_reduce_window_params *p, const av_view *in, const av_view *init,
                        const av_view *out, av_diag *d) {
  if (p->ninputs < 1 || p->ninputs > AV_KMAX_VARIADIC)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce_window: %d inputs", p->ninputs);
  int r = p->rank;
  if (r < 0 || r > AV_KMAX_RANK || in[0].rank != r)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce_window: rank mismatch or over %d", AV_KMAX_RANK);
  for (int k = 0; k < p->ninputs; k++) {
    if (in[k].rank != r || out[k].rank != r || init[k].rank != 0 || in[k].dtype != out[k].dtype ||
        init[k].dtype != out[k].dtype || av_dtype_size(out[k].dtype) > 16)
      return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce_window: operand %d type/rank mismatch", k);
    for (int i = 0; i < r; i++) {
      if (in[k].dims[i] != in[0].dims[i])
        return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce_window: input %d shape differs", k);
      int64_t o = out_size(in[0].dims[i], p->window_dimensions[i], p->window_strides[i],
                           p->base_dilations[i], p->window_dilations[i], p->padding_lo[i],
                           p->padding_hi[i]);
      if (o < 0 || o != out[k].dims[i])
        return av_diag_set(d, AV_INVALID_ARGUMENT,
                           "reduce_window: dimension %d: result size %lld, window parameters give %lld",
                           i, (long long)out[k].dims[i], (long long)o);
    }
  }
  return AV_OK;
}

/* Maps a padded coordinate to an input coordinate, or -1 for padding / dilation holes. */
static inline int64_t to_input(int64_t pc, int64_t lo, int64_t bdil, int64_t n) {
  int64_t x = pc - lo;
  if (x < 0 || x % bdil) return -1;
  x /= bdil;
  return x < n ? x : -1;
}

typedef enum fast_op { F_NONE, F_ADD, F_MUL, F_MAX, F_MIN } fast_op;

#define DEFINE_WINDOW_FOLD(name, T)                                                          \
  static T name(fast_op op, T acc, T v) {                                                    \
    switch (op) {                                                                            \
      case F_ADD: return acc + v;                                                            \
      case F_MUL: return acc * v;                                                            \
      case F_MAX: return isnan(acc) ? acc : isnan(v) ? v : (acc > v ? acc : v);              \
      default: return isnan(acc) ? acc : isnan(v) ? v : (acc < v ? acc : v);                 \
    }                                                                                        \
  }
DEFINE_WINDOW_FOLD(fold_f32, float)
DEFINE_WINDOW_FOLD(fold_f64, double)

enum {
  RW_MIN_WORK = 64 * 1024, /* window elements worth another thread */
  RW_ROW_MIN = 8,          /* innermost extent worth the row path */
  RW_ROW_BLOCK = 512,      /* row elements folded at a time (accumulators stay in L1) */
  RW_TABLE_MAX = 1 << 20,  /* coordinate table entries worth building */
  RW_LIST_MAX = 256,       /* window positions the listed row path holds per list */
};

typedef struct rw_job {
  const av_reduce_window_params *p;
  const av_view *inputs, *inits, *outputs;
  int r, n;
  int64_t wn;
  fast_op fop;
  av_dtype dt;
  const int64_t *woff;
  int64_t istr[AV_KMAX_RANK];
  size_t es[AV_KMAX_VARIADIC];
  av_code code; /* first error of a region call (serial runs only) */
  av_diag *d;
  /* row path: per outer dimension, the input index of each padded coordinate (-1: padding
   * or a dilation hole), so no division runs per window position; and whether the init value
   * is the op's identity, so folding it in changes nothing and padding is skipped */
  const int64_t *to_in[AV_KMAX_RANK];
  bool skip_pad;
  bool listed; /* the window's outer positions fit the listed row path's lists */
} rw_job;

/* Results [o0, o1) (row-major). */
static void rw_range(void *ctx, int64_t o0, int64_t o1) {
  rw_job *j = ctx;
  const av_reduce_window_params *p = j->p;
  const av_view *inputs = j->inputs, *inits = j->inits, *outputs = j->outputs;
  int r = j->r, n = j->n;
  int64_t wn = j->wn;
  fast_op fop = j->fop;
  av_dtype dt = j->dt;
  const int64_t *woff = j->woff, *istr = j->istr;
  const size_t *es = j->es;
  av_diag *d = j->d;
  av_code c = AV_OK;
  int64_t oidx[AV_KMAX_RANK] = {0};
  { /* the multi-index of o0 */
    int64_t rem = o0;
    for (int i = r - 1; i >= 0; i--) {
      int64_t dim = outputs[0].dims[i];
      oidx[i] = dim > 0 ? rem % dim : 0;
      rem = dim > 0 ? rem / dim : 0;
    }
  }
  const void *args[2 * AV_KMAX_VARIADIC];
  void *res[AV_KMAX_VARIADIC];
  unsigned char acc[AV_KMAX_VARIADIC][16], tmp[AV_KMAX_VARIADIC][16];
  for (int k = 0; k < n; k++) {
    res[k] = tmp[k];
    args[k] = acc[k];
  }
  for (int64_t o = o0; o < o1; o++) {
    if (woff) {
      bool inside = true;
      int64_t base = 0;
      for (int i = 0; i < r && inside; i++) {
        int64_t st = oidx[i] * p->window_strides[i] - p->padding_lo[i];
        inside = st >= 0 && st + (p->window_dimensions[i] - 1) * p->window_dilations[i] < inputs[0].dims[i];
        base += st * istr[i];
      }
      if (inside) {
        if (dt == AV_DT_F32) {
          const float *src = (const float *)inputs[0].data + base;
          float a;
          memcpy(&a, inits[0].data, 4);
          if (fop == F_ADD)
            for (int64_t w = 0; w < wn; w++) a += src[woff[w]];
          else
            for (int64_t w = 0; w < wn; w++) a = fold_f32(fop, a, src[woff[w]]);
          memcpy((char *)outputs[0].data + o * 4, &a, 4);
        } else {
          const double *src = (const double *)inputs[0].data + base;
          double a;
          memcpy(&a, inits[0].data, 8);
          if (fop == F_ADD)
            for (int64_t w = 0; w < wn; w++) a += src[woff[w]];
          else
            for (int64_t w = 0; w < wn; w++) a = fold_f64(fop, a, src[woff[w]]);
          memcpy((char *)outputs[0].data + o * 8, &a, 8);
        }
        for (int i = r - 1; i >= 0; i--) {
          if (++oidx[i] < outputs[0].dims[i]) break;
          oidx[i] = 0;
        }
        continue;
      }
    }
    for (int k = 0; k < n; k++) memcpy(acc[k], inits[k].data, es[k]);
    int64_t widx[AV_KMAX_RANK] = {0};
    for (int64_t w = 0; w < wn; w++) {
      int64_t off = 0;
      bool pad = false;
      for (int i = 0; i < r; i++) {
        int64_t pc = oidx[i] * p->window_strides[i] + widx[i] * p->window_dilations[i];
        int64_t x = to_input(pc, p->padding_lo[i], p->base_dilations[i], inputs[0].dims[i]);
        if (x < 0) {
          pad = true;
          break;
        }
        off += x * istr[i];
      }
      if (fop != F_NONE) {
        if (dt == AV_DT_F32) {
          float a, v;
          memcpy(&a, acc[0], 4);
          memcpy(&v, pad ? inits[0].data : (const char *)inputs[0].data + off * 4, 4);
          a = fold_f32(fop, a, v);
          memcpy(acc[0], &a, 4);
        } else {
          double a, v;
          memcpy(&a, acc[0], 8);
          memcpy(&v, pad ? inits[0].data : (const char *)inputs[0].data + off * 8, 8);
          a = fold_f64(fop, a, v);
          memcpy(acc[0], &a, 8);
        }
      } else {
        for (int k = 0; k < n; k++)
          args[n + k] = pad ? inits[k].data : (const char *)inputs[k].data + off * (int64_t)es[k];
        c = p->body.call(p->body.ctx, args, res, d);
        if (c) {
          j->code = c;
          return;
        }
        for (int k = 0; k < n; k++) memcpy(acc[k], tmp[k], es[k]);
      }
      for (int i = r - 1; i >= 0; i--) {
        if (++widx[i] < p->window_dimensions[i]) break;
        widx[i] = 0;
      }
    }
    for (int k = 0; k < n; k++) memcpy((char *)outputs[k].data + o * (int64_t)es[k], acc[k], es[k]);
    for (int i = r - 1; i >= 0; i--) {
      if (++oidx[i] < outputs[0].dims[i]) break;
      oidx[i] = 0;
    }
  }
}

/* Row path: when the window spans one element of the innermost dimension (stride 1, no
 * padding or dilation there; pooling over NHWC's H and W), every result row of that dimension
 * folds whole input rows, and whether a window position falls on padding or a base-dilation
 * hole is the same for the whole row. Each element still folds its window positions in the
 * same order, with the init value at padding, as rw_range does: the same bits, vectorised
 * across the row (one clone per ISA of the whole loop, so short rows pay no call per fold). */
#define FOLD_ROW(T, op, acc, src, n) FOLD_ROW_TO(T, op, acc, acc, src, n)
/* dst[c] = acc[c] (op) src[c]; dst may be acc */
#define FOLD_ROW_TO(T, op, dst, acc, src, n)                                                  \
  switch (op) {                                                                               \
    case F_ADD: for (int64_t c = 0; c < n; c++) dst[c] = acc[c] + src[c]; break;              \
    case F_MUL: for (int64_t c = 0; c < n; c++) dst[c] = acc[c] * src[c]; break;              \
    case F_MAX:                                                                               \
      for (int64_t c = 0; c < n; c++) {                                                       \
        T a_ = acc[c], v_ = src[c];                                                           \
        dst[c] = a_ != a_ ? a_ : v_ != v_ ? v_ : (a_ > v_ ? a_ : v_);                         \
      }                                                                                       \
      break;                                                                                  \
    default:                                                                                  \
      for (int64_t c = 0; c < n; c++) {                                                       \
        T a_ = acc[c], v_ = src[c];                                                           \
        dst[c] = a_ != a_ ? a_ : v_ != v_ ? v_ : (a_ < v_ ? a_ : v_);                         \
      }                                                                                       \
      break;                                                                                  \
  }

#define DEFINE_ROWS(name, T)                                                                  \
  AV_CLONES static void name(const rw_job *j, int64_t r0, int64_t r1) {                       \
    const av_reduce_window_params *p = j->p;                                                  \
    int outer = j->r - 1;                                                                     \
    const av_view *in = &j->inputs[0], *out = &j->outputs[0];                                 \
    int64_t C = out->dims[j->r - 1];                                                          \
    fast_op op = j->fop;                                                                      \
    T init;                                                                                   \
    memcpy(&init, j->inits[0].data, sizeof init);                                             \
    _Alignas(64) T pads[RW_ROW_BLOCK];                                                        \
    for (int64_t c = 0; c < RW_ROW_BLOCK; c++) pads[c] = init;                                \
    int64_t oidx[AV_KMAX_RANK] = {0};                                                         \
    for (int64_t rem = r0, i = outer - 1; i >= 0; i--) {                                      \
      oidx[i] = rem % out->dims[i];                                                           \
      rem /= out->dims[i];                                                                    \
    }                                                                                         \
    for (int64_t row = r0; row < r1; row++) {                                                 \
      T *dst = (T *)out->data + row * C;                                                      \
      for (int64_t c0 = 0; c0 < C; c0 += RW_ROW_BLOCK) {                                      \
        int64_t nc = C - c0 < RW_ROW_BLOCK ? C - c0 : RW_ROW_BLOCK;                           \
        _Alignas(64) T acc[RW_ROW_BLOCK];                                                     \
        for (int64_t c = 0; c < nc; c++) acc[c] = init;                                       \
        int64_t widx[AV_KMAX_RANK] = {0};                                                     \
        for (int64_t w = 0; w < j->wn; w++) {                                                 \
          int64_t off = 0;                                                                    \
          bool pad = false;                                                                   \
          for (int i = 0; i < outer && !pad; i++) {                                           \
            int64_t pc = oidx[i] * p->window_strides[i] + widx[i] * p->window_dilations[i];   \
            int64_t x = j->to_in[i] ? j->to_in[i][pc]                                         \
                                    : to_input(pc, p->padding_lo[i], p->base_dilations[i], in->dims[i]); \
            pad = x < 0;                                                                      \
            off += x * j->istr[i];                                                            \
          }                                                                                   \
          if (!pad || !j->skip_pad) {                                                         \
            const T *src = pad ? pads : (const T *)in->data + off + c0;                       \
            FOLD_ROW(T, op, acc, src, nc)                                                     \
          }                                                                                   \
          for (int i = outer - 1; i >= 0; i--) {                                              \
            if (++widx[i] < p->window_dimensions[i]) break;                                   \
            widx[i] = 0;                                                                      \
          }                                                                                   \
        }                                                                                     \
        memcpy(dst + c0, acc, (size_t)nc * sizeof(T));                                        \
      }                                                                                       \
      for (int i = outer - 1; i >= 0; i--) {                                                  \
        if (++oidx[i] < out->dims[i]) break;                                                  \
        oidx[i] = 0;                                                                          \
      }                                                                                       \
    }                                                                                         \
  }
DEFINE_ROWS(rows_f32, float)
DEFINE_ROWS(rows_f64, double)

/* The window positions of one outer dimension at result coordinate o, in window order: each
 * the element offset of its input coordinate, or RW_PAD (padding or a base-dilation hole;
 * dropped when skip_pad). Returns how many. */
#define RW_PAD INT64_MIN
static int dim_positions(const rw_job *j, int i, int64_t o, int64_t *pos) {
  const av_reduce_window_params *p = j->p;
  int n = 0;
  for (int64_t w = 0; w < p->window_dimensions[i]; w++) {
    int64_t pc = o * p->window_strides[i] + w * p->window_dilations[i];
    int64_t x = j->to_in[i] ? j->to_in[i][pc]
                            : to_input(pc, p->padding_lo[i], p->base_dilations[i], j->inputs[0].dims[i]);
    if (x >= 0) pos[n++] = x * j->istr[i];
    else if (!j->skip_pad) pos[n++] = RW_PAD;
  }
  return n;
}

/* The row path with the window's positions listed once per result row, not found per
 * position: the outer dimensions but the last ("upper") combine into one list of offsets,
 * rebuilt only when the upper coordinates change; the last outer dimension's list is built
 * per row. The fold visits upper positions outer, last-dimension positions inner: window
 * (row-major) order, so the bits are those of the per-position loop above. */
#define DEFINE_ROWS_LISTED(name, T)                                                           \
  AV_CLONES static void name(const rw_job *j, int64_t r0, int64_t r1) {                       \
    int outer = j->r - 1;                                                                     \
    const av_view *in = &j->inputs[0], *out = &j->outputs[0];                                 \
    int64_t C = out->dims[j->r - 1];                                                          \
    fast_op op = j->fop;                                                                      \
    T init;                                                                                   \
    memcpy(&init, j->inits[0].data, sizeof init);                                             \
    _Alignas(64) T pads[RW_ROW_BLOCK];                                                        \
    for (int64_t c = 0; c < RW_ROW_BLOCK; c++) pads[c] = init;                                \
    int64_t oidx[AV_KMAX_RANK] = {0};                                                         \
    for (int64_t rem = r0, i = outer - 1; i >= 0; i--) {                                      \
      oidx[i] = rem % out->dims[i];                                                           \
      rem /= out->dims[i];                                                                    \
    }                                                                                         \
    int64_t upper[RW_LIST_MAX], last[RW_LIST_MAX], part[RW_LIST_MAX];                         \
    int nu = 0, nl = 1;                                                                       \
    last[0] = 0;                                                                              \
    for (int64_t row = r0; row < r1; row++) {                                                 \
      if (row == r0 || outer < 1 || oidx[outer - 1] == 0) { /* upper coordinates moved */     \
        nu = 1;                                                                               \
        upper[0] = 0;                                                                         \
        for (int i = 0; i < outer - 1 && nu > 0; i++) {                                       \
          int np = dim_positions(j, i, oidx[i], part), m = 0;                                 \
          int64_t prev[RW_LIST_MAX];                                                          \
          memcpy(prev, upper, (size_t)nu * sizeof *prev);                                     \
          for (int a = 0; a < nu; a++)                                                        \
            for (int b = 0; b < np; b++)                                                      \
              upper[m++] = prev[a] == RW_PAD || part[b] == RW_PAD ? RW_PAD : prev[a] + part[b]; \
          nu = m;                                                                             \
        }                                                                                     \
      }                                                                                       \
      if (outer >= 1) nl = dim_positions(j, outer - 1, oidx[outer - 1], last);                \
      T *dst = (T *)out->data + row * C;                                                      \
      for (int64_t c0 = 0; c0 < C; c0 += RW_ROW_BLOCK) {                                      \
        int64_t nc = C - c0 < RW_ROW_BLOCK ? C - c0 : RW_ROW_BLOCK;                           \
        _Alignas(64) T acc[RW_ROW_BLOCK];                                                     \
        for (int64_t c = 0; c < nc; c++) acc[c] = init;                                       \
        const T *base = (const T *)in->data + c0;                                             \
        /* the last fold writes the result (a copy loop would become a memcpy call) */      \
        for (int a = 0, k = 1; a < nu; a++)                                                   \
          for (int b = 0; b < nl; b++, k++) {                                                 \
            const T *src = upper[a] == RW_PAD || last[b] == RW_PAD ? pads : base + upper[a] + last[b]; \
            T *to = k == nu * nl ? dst + c0 : acc;                                            \
            FOLD_ROW_TO(T, op, to, acc, src, nc)                                              \
          }                                                                                   \
        if (nu * nl == 0)                                                                     \
          for (int64_t c = 0; c < nc; c++) dst[c0 + c] = init;                                \
      }                                                                                       \
      for (int i = outer - 1; i >= 0; i--) {                                                  \
        if (++oidx[i] < out->dims[i]) break;                                                  \
        oidx[i] = 0;                                                                          \
      }                                                                                       \
    }                                                                                         \
  }
DEFINE_ROWS_LISTED(rows_listed_f32, float)
DEFINE_ROWS_LISTED(rows_listed_f64, double)

/* Whether folding the init value into any accumulator the fold can produce leaves it as it
 * is: +0 for add (a sum that starts at +0 is never -0), 1 for multiply, -inf for max, +inf
 * for min (NaNs stay NaNs). Then window positions on padding can be skipped. */
static bool init_is_identity(fast_op op, av_dtype dt, const void *init) {
  double v;
  if (dt == AV_DT_F32) {
    float f;
    memcpy(&f, init, 4);
    v = f;
  } else {
    memcpy(&v, init, 8);
  }
  switch (op) {
    case F_ADD: return v == 0 && !signbit(v);
    case F_MUL: return v == 1;
    case F_MAX: return isinf(v) && v < 0;
    case F_MIN: return isinf(v) && v > 0;
    default: return false;
  }
}

/* Result rows [r0, r1) (rows of the innermost dimension, row-major). */
static void rw_rows(void *ctx, int64_t r0, int64_t r1) {
  const rw_job *j = ctx;
  if (j->listed && j->dt == AV_DT_F32) rows_listed_f32(j, r0, r1);
  else if (j->listed) rows_listed_f64(j, r0, r1);
  else if (j->dt == AV_DT_F32) rows_f32(j, r0, r1);
  else rows_f64(j, r0, r1);
}

static bool row_path(const av_reduce_window_params *p, fast_op fop, const av_view *in,
                     const av_view *out) {
  int l = p->rank - 1;
  return fop != F_NONE && l >= 0 && p->window_dimensions[l] == 1 && p->window_strides[l] == 1 &&
         p->padding_lo[l] == 0 && p->padding_hi[l] == 0 && p->base_dilations[l] == 1 &&
         in->dims[l] == out->dims[l] && out->dims[l] >= RW_ROW_MIN;
}

av_code av_kernel_reduce_window(const av_reduce_window_params *p, const av_view *inputs,
                                const av_view *inits, av_view *outputs, av_diag *d) {
  av_code c = validate(p, inputs, inits, outputs, d);
  if (c) return c;
  int r = p->rank, n = p->ninputs;
  int64_t istr[AV_KMAX_RANK];
  for (int i = r - 1, s = 1; i >= 0; i--) {
    istr[i] = s;
    s *= inputs[0].dims[i];
  }
  int64_t on = av_view_num_elements(&outputs[0]);
  int64_t wn = 1;
  for (int i = 0; i < r; i++) {
    if (p->window_dimensions[i] > 0 && wn > ((int64_t)1 << 40) / p->window_dimensions[i])
      return av_diag_set(d, AV_INVALID_ARGUMENT, "%s: window has too many elements", "reduce_window");
    wn *= p->window_dimensions[i];
  }
  size_t es[AV_KMAX_VARIADIC];
  for (int k = 0; k < n; k++) es[k] = av_dtype_size(inputs[k].dtype);

  fast_op fop = F_NONE;
  av_dtype dt = inputs[0].dtype;
  if (n == 1 && (dt == AV_DT_F32 || dt == AV_DT_F64)) {
    switch (p->body.simple) {
      case AV_OP_ADD: fop = F_ADD; break;
      case AV_OP_MULTIPLY: fop = F_MUL; break;
      case AV_OP_MAXIMUM: fop = F_MAX; break;
      case AV_OP_MINIMUM: fop = F_MIN; break;
      default: break;
    }
  }
  if (fop == F_NONE && !p->body.call)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "reduce_window: no body function");

  /* Interior fast path (simple f32/f64 body, no base dilation): window element offsets are
   * precomputed, and windows lying wholly inside the input skip all bounds checks. */
  int64_t *woff = NULL;
  bool nobdil = true;
  for (int i = 0; i < r; i++) nobdil = nobdil && p->base_dilations[i] == 1;
  bool rows = on > 0 && row_path(p, fop, &inputs[0], &outputs[0]);
  if (!rows && fop != F_NONE && nobdil && wn > 0 && wn <= ((int64_t)1 << 20)) {
    woff = malloc((size_t)wn * sizeof *woff);
    if (woff) {
      int64_t widx[AV_KMAX_RANK] = {0};
      for (int64_t w = 0; w < wn; w++) {
        int64_t off = 0;
        for (int i = 0; i < r; i++) off += widx[i] * p->window_dilations[i] * istr[i];
        woff[w] = off;
        for (int i = r - 1; i >= 0; i--) {
          if (++widx[i] < p->window_dimensions[i]) break;
          widx[i] = 0;
        }
      }
    }
  }
  rw_job job = {p, inputs, inits, outputs, r, n, wn, fop, dt, woff, {0}, {0}, AV_OK, d, {0}, false, false};
  memcpy(job.istr, istr, sizeof istr);
  memcpy(job.es, es, sizeof es);
  int64_t *tables = NULL;
  if (rows) { /* coordinate tables of the outer dimensions: every window position lands in one */
    int64_t total = 0, ext[AV_KMAX_RANK];
    for (int i = 0; i < r - 1; i++) {
      ext[i] = (outputs[0].dims[i] - 1) * p->window_strides[i] +
               (p->window_dimensions[i] - 1) * p->window_dilations[i] + 1;
      total += ext[i];
    }
    /* huge paddings: no tables (nor when they cannot be had), the divisions instead */
    tables = total <= RW_TABLE_MAX ? malloc((size_t)(total > 0 ? total : 1) * sizeof *tables) : NULL;
    for (int64_t i = 0, at = 0; tables && i < r - 1; at += ext[i], i++) {
      for (int64_t pc = 0; pc < ext[i]; pc++)
        tables[at + pc] = to_input(pc, p->padding_lo[i], p->base_dilations[i], inputs[0].dims[i]);
      job.to_in[i] = tables + at;
    }
    job.skip_pad = init_is_identity(fop, dt, inits[0].data);
    int64_t upper = 1; /* positions of the outer dimensions but the last */
    for (int i = 0; i < r - 2 && upper <= RW_LIST_MAX; i++) upper *= p->window_dimensions[i];
    job.listed = upper <= RW_LIST_MAX && (r < 2 || p->window_dimensions[r - 2] <= RW_LIST_MAX);
  }
  if (rows) {
    int64_t C = outputs[0].dims[r - 1], per_row = C * (wn > 0 ? wn : 1);
    av_parallel_for(p->pool, on / C, 1, (RW_MIN_WORK + per_row - 1) / per_row, rw_rows, &job);
  } else if (fop != F_NONE) /* no region calls: windows are independent, split the results */
    av_parallel_for(p->pool, on, 1, (RW_MIN_WORK + wn - 1) / (wn > 0 ? wn : 1), rw_range, &job);
  else
    rw_range(&job, 0, on);
  free(woff);
  free(tables);
  return job.code;
}
