/* sort: every row along `dimension` is sorted as a permutation of its positions with a
 * stable bottom-up merge sort, then every operand is permuted the same way. The comparator
 * is either the region body (generic) or, for a `simple` LT/GT compare of operand 0, a key
 * comparison: integers, floats in TOTALORDER (sign-magnitude bits mapped to an unsigned
 * order), floats in FLOAT order (rows with NaNs go through the body). */
#include "runtime/kernels/sort.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/reduce_elem.h"

typedef struct row_ctx {
  const av_sort_params *p;
  const av_view *in;
  const size_t *es;
  int64_t base, stride; /* element offsets of the current row */
  av_diag *d;
  av_code err;
  /* fast keys */
  const uint64_t *ukeys;
  const double *fkeys;
  bool greater;
} row_ctx;

static bool less_body(row_ctx *c, int64_t i, int64_t j) {
  if (c->err) return false;
  const void *args[2 * AV_KMAX_VARIADIC];
  for (int k = 0; k < c->p->ninputs; k++) {
    const char *b = (const char *)c->in[k].data;
    args[2 * k] = b + (c->base + i * c->stride) * (int64_t)c->es[k];
    args[2 * k + 1] = b + (c->base + j * c->stride) * (int64_t)c->es[k];
  }
  unsigned char r = 0;
  void *res[1] = {&r};
  av_code e = c->p->comparator.call(c->p->comparator.ctx, args, res, c->d);
  if (e) {
    c->err = e;
    return false;
  }
  return r & 1;
}

static inline bool less_u(row_ctx *c, int64_t i, int64_t j) {
  return c->greater ? c->ukeys[i] > c->ukeys[j] : c->ukeys[i] < c->ukeys[j];
}
static inline bool less_f(row_ctx *c, int64_t i, int64_t j) {
  return c->greater ? c->fkeys[i] > c->fkeys[j] : c->fkeys[i] < c->fkeys[j];
}

typedef bool (*less_fn)(row_ctx *, int64_t, int64_t);

/* Stable merge sort of perm[0..n) with tmp scratch of n entries. */
static void merge_sort(int64_t *perm, int64_t *tmp, int64_t n, less_fn less, row_ctx *c) {
  /* insertion sort runs of 16, then merge */
  const int64_t run = 16;
  for (int64_t s = 0; s < n; s += run) {
    int64_t e = s + run < n ? s + run : n;
    for (int64_t i = s + 1; i < e; i++) {
      int64_t v = perm[i], j = i;
      while (j > s && less(c, v, perm[j - 1])) {
        perm[j] = perm[j - 1];
        j--;
      }
      perm[j] = v;
    }
  }
  int64_t *a = perm, *b = tmp;
  for (int64_t w = run; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) b[k++] = less(c, a[j], a[i]) ? a[j++] : a[i++];
      while (i < mid) b[k++] = a[i++];
      while (j < hi) b[k++] = a[j++];
    }
    int64_t *t = a;
    a = b;
    b = t;
  }
  if (a != perm) memcpy(perm, a, (size_t)n * sizeof *perm);
}

/* Sortable unsigned key for TOTALORDER floats / ints; false if the dtype has no such key. */
static bool total_key(av_dtype t, const void *p, uint64_t *key) {
  if (av_dtype_is_signed_int(t)) {
    *key = av_kel_load_bits(t, p) ^ ((uint64_t)1 << 63);
    return true;
  }
  if (av_dtype_is_unsigned_int(t) || t == AV_DT_PRED) {
    *key = av_kel_load_bits(t == AV_DT_PRED ? AV_DT_U8 : t, p);
    return true;
  }
  uint64_t bits, sign;
  switch (t) {
    case AV_DT_F32: { uint32_t x; memcpy(&x, p, 4); bits = x; sign = 1ull << 31; break; }
    case AV_DT_F64: memcpy(&bits, p, 8); sign = 1ull << 63; break;
    case AV_DT_BF16: case AV_DT_F16: { uint16_t x; memcpy(&x, p, 2); bits = x; sign = 1ull << 15; break; }
    default: return false;
  }
  *key = (bits & sign) ? (~bits & (sign | (sign - 1))) : (bits | sign);
  return true;
}

/* Stable LSD radix sort of (key, index) records by unsigned key, skipping bytes on which all
 * keys agree; small rows use insertion sort. Leaves the sorted indices in perm. */
typedef struct kv {
  uint64_t key;
  int64_t idx;
} kv;

static void radix_sort(kv *a, kv *t, int64_t n, int64_t *perm) {
  if (n <= 32) {
    for (int64_t i = 1; i < n; i++) {
      kv v = a[i];
      int64_t j = i;
      while (j > 0 && a[j - 1].key > v.key) {
        a[j] = a[j - 1];
        j--;
      }
      a[j] = v;
    }
  } else {
    static const int kPasses = 8;
    int64_t count[8][256];
    memset(count, 0, sizeof count);
    for (int64_t i = 0; i < n; i++)
      for (int b = 0; b < kPasses; b++) count[b][(a[i].key >> (8 * b)) & 255]++;
    for (int b = 0; b < kPasses; b++) {
      bool trivial = false;
      for (int v = 0; v < 256; v++)
        if (count[b][v] == n) trivial = true;
      if (trivial) continue;
      int64_t pos[256], acc = 0;
      for (int v = 0; v < 256; v++) {
        pos[v] = acc;
        acc += count[b][v];
      }
      for (int64_t i = 0; i < n; i++) t[pos[(a[i].key >> (8 * b)) & 255]++] = a[i];
      kv *sw = a;
      a = t;
      t = sw;
    }
  }
  for (int64_t i = 0; i < n; i++) perm[i] = a[i].idx;
}

/* Total-order key of a double with -0 folded into +0 (FLOAT comparisons treat them equal). */
static uint64_t float_key(double v) {
  if (v == 0) v = 0.0;
  uint64_t bits;
  memcpy(&bits, &v, 8);
  return (bits >> 63) ? ~bits : (bits | (1ull << 63));
}

av_code av_kernel_sort(const av_sort_params *p, const av_view *inputs, av_view *outputs,
                       av_diag *d) {
  int n = p->ninputs;
  if (n < 1 || n > AV_KMAX_VARIADIC) return av_diag_set(d, AV_INVALID_ARGUMENT, "sort: %d inputs", n);
  int r = inputs[0].rank;
  if (r < 1 || r > AV_KMAX_RANK) return av_diag_set(d, AV_INVALID_ARGUMENT, "sort: rank %d", r);
  int64_t dim = p->dimension < 0 ? p->dimension + r : p->dimension;
  if (dim < 0 || dim >= r) return av_diag_set(d, AV_INVALID_ARGUMENT, "sort: dimension %lld out of range", (long long)p->dimension);
  size_t es[AV_KMAX_VARIADIC];
  size_t maxes = 1;
  for (int k = 0; k < n; k++) {
    if (inputs[k].rank != r || outputs[k].rank != r || outputs[k].dtype != inputs[k].dtype)
      return av_diag_set(d, AV_INVALID_ARGUMENT, "sort: operand %d rank/type mismatch", k);
    for (int i = 0; i < r; i++)
      if (inputs[k].dims[i] != inputs[0].dims[i] || outputs[k].dims[i] != inputs[0].dims[i])
        return av_diag_set(d, AV_INVALID_ARGUMENT, "sort: operand %d shape mismatch", k);
    es[k] = av_dtype_size(inputs[k].dtype);
    if (es[k] > maxes) maxes = es[k];
  }
  int64_t total = av_view_num_elements(&inputs[0]);
  if (total == 0) return AV_OK;
  int64_t len = inputs[0].dims[dim], stride = 1;
  for (int i = r - 1; i > dim; i--) stride *= inputs[0].dims[i];
  int64_t rows = total / len;

  /* fast path selection */
  const av_scalar_fn *cmp = &p->comparator;
  bool fast = false, greater = false, use_float = false;
  if (cmp->simple == AV_OP_COMPARE && cmp->direction &&
      (strcmp(cmp->direction, "LT") == 0 || strcmp(cmp->direction, "GT") == 0)) {
    greater = cmp->direction[0] == 'G';
    av_dtype t = inputs[0].dtype;
    const char *ct = cmp->compare_type ? cmp->compare_type : "";
    bool isf = av_dtype_is_float(t);
    uint64_t dummy;
    if (isf && strcmp(ct, "TOTALORDER") == 0 && total_key(t, inputs[0].data, &dummy)) fast = true;
    else if (isf && strcmp(ct, "TOTALORDER") != 0) fast = use_float = true;
    else if (!isf && !av_dtype_is_complex(t)) fast = true;
  }
  if (!fast && !cmp->call) return av_diag_set(d, AV_INVALID_ARGUMENT, "sort: no comparator");

  int64_t *perm = malloc((size_t)len * sizeof *perm), *tmp = malloc((size_t)len * sizeof *tmp);
  uint64_t *ukeys = fast && !use_float ? malloc((size_t)len * sizeof *ukeys) : NULL;
  double *fkeys = use_float ? malloc((size_t)len * sizeof *fkeys) : NULL;
  char *stage = malloc((size_t)len * maxes);
  kv *recs = fast ? malloc((size_t)len * 2 * sizeof *recs) : NULL;
  av_code rc = AV_OK;
  if (!perm || !tmp || !stage || (fast && !use_float && !ukeys) || (use_float && !fkeys) || (fast && !recs)) {
    rc = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "sort: out of memory");
    goto done;
  }
  row_ctx c = {.p = p, .in = inputs, .es = es, .stride = stride, .d = d, .greater = greater,
               .ukeys = ukeys, .fkeys = fkeys};
  for (int64_t row = 0; row < rows; row++) {
    c.base = (row / stride) * len * stride + row % stride;
    for (int64_t i = 0; i < len; i++) perm[i] = i;
    less_fn less = less_body;
    if (fast) {
      const char *b = inputs[0].data;
      av_dtype t = inputs[0].dtype;
      if (use_float) {
        bool has_nan = false;
        for (int64_t i = 0; i < len; i++) {
          fkeys[i] = av_kel_load_real(t, b + (c.base + i * stride) * (int64_t)es[0]);
          if (isnan(fkeys[i])) has_nan = true;
        }
        if (!has_nan) less = less_f;
        else if (!cmp->call) {
          rc = av_diag_set(d, AV_INVALID_ARGUMENT, "sort: no comparator");
          goto done;
        }
      } else {
        for (int64_t i = 0; i < len; i++) total_key(t, b + (c.base + i * stride) * (int64_t)es[0], &ukeys[i]);
        less = less_u;
      }
    }
    if (less == less_u || less == less_f) {
      /* both key kinds become unsigned keys; descending = ascending on inverted keys, which
       * keeps equal keys in their original order (stable) */
      for (int64_t i = 0; i < len; i++) {
        uint64_t k = less == less_u ? ukeys[i] : float_key(fkeys[i]);
        recs[i].key = greater ? ~k : k;
        recs[i].idx = i;
      }
      radix_sort(recs, recs + len, len, perm);
    } else {
      merge_sort(perm, tmp, len, less, &c);
    }
    if (c.err) {
      rc = c.err;
      goto done;
    }
    for (int k = 0; k < n; k++) {
      const char *src = inputs[k].data;
      char *dst = outputs[k].data;
      for (int64_t i = 0; i < len; i++)
        memcpy(stage + i * (int64_t)es[k], src + (c.base + perm[i] * stride) * (int64_t)es[k], es[k]);
      for (int64_t i = 0; i < len; i++)
        memcpy(dst + (c.base + i * stride) * (int64_t)es[k], stage + i * (int64_t)es[k], es[k]);
    }
  }
done:
  free(perm);
  free(tmp);
  free(ukeys);
  free(fkeys);
  free(stage);
  free(recs);
  return rc;
}
