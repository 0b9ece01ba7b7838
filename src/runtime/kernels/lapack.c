/* Run-time side of the LAPACK custom calls: moves operands from our row-major storage into
 * the layouts the call names, runs the routine, and moves results back. */
#include "runtime/kernels/lapack.h"

#include <limits.h>
#include <stdio.h>

#include "runtime/kernels/lapack_internal.h"

void *lapack_scratch(const lapack_ctx *x, int64_t n, size_t es) {
  if (n < 1) n = 1;
  if ((uint64_t)n > SIZE_MAX / 2 / es) {
    av_diag_set(x->d, AV_RESOURCE_EXHAUSTED, "LAPACK workspace of %lld elements is too large",
                (long long)n);
    return NULL;
  }
  void *p = calloc((size_t)n, es);
  if (!p) av_diag_set(x->d, AV_RESOURCE_EXHAUSTED, "out of memory for a LAPACK workspace");
  return p;
}

int lapack_work_size(const lapack_ctx *x, const void *query) {
  bool f64 = x->ti == 1 || x->ti == 3;
  double v = f64 ? *(const double *)query : *(const float *)query;
  /* single-precision queries can round a large size down: leave a margin */
  if (!f64) v = v * (1 + 1e-6) + 1;
  if (!(v < (double)INT_MAX)) {
    av_diag_set(x->d, AV_RESOURCE_EXHAUSTED, "LAPACK workspace query returned %g", v);
    return -1;
  }
  return v < 1 ? 1 : (int)v;
}

static int type_index(av_dtype t) {
  switch (t) {
    case AV_DT_F32: return 0;
    case AV_DT_F64: return 1;
    case AV_DT_C64: return 2;
    default: return 3;
  }
}

av_code av_lapack_run(const av_lapack_call *call, const av_lapack_fns *fns,
                      struct av_thread_pool *pool, void *const *phys_in, void *const *phys_out,
                      av_diag *d) {
  int ti = type_index(call->dtype);
  lapack_ctx x = {call, ti, av_dtype_size(call->dtype), ti == 0 || ti == 2 ? 4 : 8, phys_in,
                  phys_out, d, fns, pool};
  return lapack_run_factor(&x);
}

/* ------------------------------------------------------------- layouts */

/* Element strides of each logical dim in the layout's physical order. */
static void phys_strides(const av_lapack_arg *a, int64_t *stride) {
  int64_t s = 1;
  for (int j = 0; j < a->rank; j++) {
    int dim = (int)a->minor_to_major[j];
    stride[dim] = s;
    s *= a->dims[dim];
  }
}

static bool is_row_major(const av_lapack_arg *a) {
  for (int j = 0; j < a->rank; j++) {
    /* dims of size 1 do not move anything */
    if (a->minor_to_major[j] != a->rank - 1 - j) {
      int64_t st[AV_LAPACK_MAX_RANK];
      phys_strides(a, st);
      int64_t s = 1;
      for (int k = a->rank - 1; k >= 0; k--) {
        if (a->dims[k] != 1 && st[k] != s) return false;
        s *= a->dims[k];
      }
      return true;
    }
  }
  return true;
}

/* n elements of size es from src (stride ss elements) to dst (stride ds), typed moves for the
 * usual sizes: this loop is what a batch of small matrices costs, one element at a time. */
static void strided_copy(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, size_t es) {
#define STRIDED(T)                                                                    \
  for (int64_t i = 0; i < n; i++) {                                                   \
    T v;                                                                              \
    memcpy(&v, src + (size_t)(i * ss) * sizeof(T), sizeof(T));                        \
    memcpy(dst + (size_t)(i * ds) * sizeof(T), &v, sizeof(T));                        \
  }
  switch (es) {
    case 1: STRIDED(uint8_t) break;
    case 2: STRIDED(uint16_t) break;
    case 4: STRIDED(uint32_t) break;
    case 8: STRIDED(uint64_t) break;
    default:
      for (int64_t i = 0; i < n; i++)
        memcpy(dst + (size_t)(i * ds) * es, src + (size_t)(i * ss) * es, es);
  }
#undef STRIDED
}

/* Copies between row-major `rm` and the layout's `phys` (to_phys picks the direction), one
 * strided run per row of the innermost dimension. */
static void relayout(const av_lapack_arg *a, void *rm, void *phys, bool to_phys) {
  size_t es = av_dtype_size(a->dtype);
  int64_t total = lapack_elems(a);
  if (total == 0 || a->rank == 0) {
    if (total) memcpy(to_phys ? phys : rm, to_phys ? rm : phys, es);
    return;
  }
  int64_t st[AV_LAPACK_MAX_RANK] = {0}, idx[AV_LAPACK_MAX_RANK] = {0};
  phys_strides(a, st);
  int r = a->rank;
  int64_t inner = a->dims[r - 1], ist = st[r - 1], off = 0;
  for (int64_t i = 0; i < total; i += inner) {
    char *rp = (char *)rm + (size_t)i * es, *pp = (char *)phys + (size_t)off * es;
    if (to_phys)
      strided_copy(pp, ist, rp, 1, inner, es);
    else
      strided_copy(rp, 1, pp, ist, inner, es);
    for (int k = r - 2; k >= 0; k--) { /* row-major odometer over the outer dims */
      off += st[k];
      if (++idx[k] < a->dims[k]) break;
      off -= st[k] * a->dims[k];
      idx[k] = 0;
    }
  }
}

av_code av_step_lapack(const av_step *s, av_frame *f, av_diag *d) {
  const av_lapack_call *c = s->params;
  void *pin[AV_LAPACK_MAX_ARGS] = {NULL}, *pout[AV_LAPACK_MAX_ARGS] = {NULL};
  bool own_in[AV_LAPACK_MAX_ARGS] = {false}, own_out[AV_LAPACK_MAX_ARGS] = {false};
  av_code rc = AV_OK;
  if (s->nin != c->nin || s->nout != c->nout)
    return av_diag_set(d, AV_INTERNAL, "LAPACK step: operand counts differ from the call");
  lapack_ctx x = {.d = d};
  for (uint32_t i = 0; i < c->nin && rc == AV_OK; i++) {
    if (is_row_major(&c->in[i]) && lapack_elems(&c->in[i]) > 0) {
      pin[i] = av_in(s, f, i); /* read only: the routines copy what they modify */
      continue;
    }
    if (!(pin[i] = lapack_scratch(&x, lapack_elems(&c->in[i]), av_dtype_size(c->in[i].dtype)))) {
      rc = d->code;
      break;
    }
    own_in[i] = true;
    relayout(&c->in[i], av_in(s, f, i), pin[i], true);
  }
  for (uint32_t k = 0; k < c->nout && rc == AV_OK; k++) {
    if ((rc = av_step_alloc_out(s, f, k, d)) != AV_OK) break;
    /* zero-size buffers get scratch too, so LAPACK always sees a valid pointer */
    if (is_row_major(&c->out[k]) && lapack_elems(&c->out[k]) > 0) {
      pout[k] = av_out(s, f, k);
      continue;
    }
    if (!(pout[k] = lapack_scratch(&x, lapack_elems(&c->out[k]), av_dtype_size(c->out[k].dtype)))) {
      rc = d->code;
      break;
    }
    own_out[k] = true;
  }
  if (rc == AV_OK) rc = av_lapack_run(c, f->plan->lapack, f->pool, pin, pout, d);
  for (uint32_t k = 0; k < c->nout; k++) {
    if (rc == AV_OK && own_out[k]) relayout(&c->out[k], av_out(s, f, k), pout[k], false);
    if (own_out[k]) free(pout[k]);
  }
  for (uint32_t i = 0; i < c->nin; i++)
    if (own_in[i]) free(pin[i]);
  return rc;
}

bool av_lapack_fns_set(av_lapack_fns *f, const char *name, void *fn) {
  /* an object pointer handed over as a function pointer: copied bytewise (ISO C has no
   * conversion between the two; POSIX guarantees they have the same representation) */
#define AV_LAPACK_FN_SET(n)                        \
  if (strcmp(name, #n) == 0) {                     \
    _Static_assert(sizeof f->n == sizeof fn, #n);  \
    memcpy(&f->n, &fn, sizeof fn);                 \
    return true;                                   \
  }
  AV_LAPACK_FN_NAMES(AV_LAPACK_FN_SET)
#undef AV_LAPACK_FN_SET
  return false;
}

av_lapack_fns *av_lapack_table_new(const av_lapack_fn_entry *entries, char *err, size_t errcap) {
  av_lapack_fns *f = calloc(1, sizeof *f);
  if (!f) {
    snprintf(err, errcap, "out of memory");
    return NULL;
  }
  enum { MAX_ENTRIES = 1024, MAX_NAME = 32 };
  int n = 0;
  for (; n < MAX_ENTRIES && entries[n].name; n++) {
    const char *name = entries[n].name;
    if (strnlen(name, MAX_NAME) >= MAX_NAME || !entries[n].fn ||
        !av_lapack_fns_set(f, name, entries[n].fn)) {
      snprintf(err, errcap, "entry %d: '%.32s' is not a routine anvil calls (or has no address)",
               n, name);
      free(f);
      return NULL;
    }
  }
  if (n == MAX_ENTRIES) {
    snprintf(err, errcap, "more than %d entries (no NULL name at the end?)", MAX_ENTRIES);
    free(f);
    return NULL;
  }
  return f;
}

void av_lapack_table_free(av_lapack_fns *f) { free(f); }
