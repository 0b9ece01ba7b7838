/* Run-time side of the LAPACK custom calls: moves operands from our row-major storage into
 * the layouts the call names, runs the routine, and moves results back. */
#include "runtime/kernels/lapack.h"

#include <limits.h>
#include <stdio.h>

#include "runtime/kernels/lapack_internal.h"
#include "runtime/kernels/shape.h"
#include "runtime/thread_pool.h"

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

static av_code run_call(const av_lapack_call *call, const av_lapack_fns *fns,
                        struct av_thread_pool *pool, void *const *phys_in, void *const *phys_out,
                        av_diag *d) {
  int ti = type_index(call->dtype);
  lapack_ctx x = {call, ti, av_dtype_size(call->dtype), ti == 0 || ti == 2 ? 4 : 8, phys_in,
                  phys_out, d, fns, pool};
  return lapack_run_factor(&x);
}

/* ----------------------------------------------- batches split over threads
 *
 * A batch of small matrices runs as chunks of whole matrices on the thread pool, each chunk
 * the same call on fewer matrices. Every matrix gets the calls of a serial run: chunks hold at
 * least kSplitMin matrices (the SIMD-lane paths need 8, so none switches algorithm), and the
 * matrices are small enough that OpenBLAS never threads inside a call. */
enum { kSplitMin = 8, kSplitMaxN = 64 };

/* Matrices per argument when the batch is the most major part of every argument's layout
 * (dims 0..k-1 multiply to the batch and are the outermost, in order); false otherwise. */
static bool batch_leads(const av_lapack_arg *a, int64_t batch, int64_t *per) {
  int64_t prod = 1;
  int k = 0;
  while (k < a->rank && prod < batch) prod *= a->dims[k++];
  if (prod != batch || batch <= 0) return false;
  for (int j = 0; j < k; j++) /* dim j is the (j+1)-th most major */
    if (a->minor_to_major[a->rank - 1 - j] != j) return false;
  *per = lapack_elems(a) / batch;
  return true;
}

static int64_t largest_dim(const av_lapack_arg *a) {
  int64_t m = 0;
  for (int i = a->rank >= 2 ? a->rank - 2 : 0; i < a->rank; i++) m = a->dims[i] > m ? a->dims[i] : m;
  return m;
}

typedef struct split_ctx {
  const av_lapack_call *call;
  const av_lapack_fns *fns;
  void *const *in, *const *out;
  int64_t per_in[AV_LAPACK_MAX_ARGS], per_out[AV_LAPACK_MAX_ARGS], chunk;
  av_code *codes; /* per chunk */
  av_diag *diags;
} split_ctx;

/* The argument of a chunk of `count` of the `batch` matrices: its batch dims become
 * [count, 1, ...]. */
static void chunk_arg(av_lapack_arg *a, int64_t count, int64_t batch) {
  int k = 0;
  int64_t prod = 1;
  while (k < a->rank && prod < batch) prod *= a->dims[k++];
  for (int j = 0; j < k; j++) a->dims[j] = j == 0 ? count : 1;
}

static void run_chunks(void *ctx, int64_t c0, int64_t c1) {
  split_ctx *sc = ctx;
  for (int64_t c = c0; c < c1; c++) {
    int64_t b0 = c * sc->chunk, count = sc->call->batch - b0 < sc->chunk ? sc->call->batch - b0 : sc->chunk;
    av_lapack_call sub = *sc->call;
    void *in[AV_LAPACK_MAX_ARGS] = {NULL}, *out[AV_LAPACK_MAX_ARGS] = {NULL};
    for (uint32_t i = 0; i < sub.nin; i++) {
      chunk_arg(&sub.in[i], count, sc->call->batch);
      in[i] = lapack_at(sc->in[i], b0, sc->per_in[i], av_dtype_size(sub.in[i].dtype));
    }
    for (uint32_t k = 0; k < sub.nout; k++) {
      chunk_arg(&sub.out[k], count, sc->call->batch);
      out[k] = lapack_at(sc->out[k], b0, sc->per_out[k], av_dtype_size(sub.out[k].dtype));
    }
    sub.batch = count;
    av_diag_init(&sc->diags[c]);
    sc->codes[c] = run_call(&sub, sc->fns, NULL, in, out, &sc->diags[c]);
  }
}

av_code av_lapack_run(const av_lapack_call *call, const av_lapack_fns *fns,
                      struct av_thread_pool *pool, void *const *phys_in, void *const *phys_out,
                      av_diag *d) {
  int threads = pool ? av_thread_pool_size(pool) : 1;
  bool split = threads >= 2 && call->batch >= 2 * kSplitMin && !call->lanes_eigh;
  split_ctx sc = {call, fns, phys_in, phys_out, {0}, {0}, 0, NULL, NULL};
  for (uint32_t i = 0; split && i < call->nin; i++)
    split = batch_leads(&call->in[i], call->batch, &sc.per_in[i]) && largest_dim(&call->in[i]) <= kSplitMaxN;
  for (uint32_t k = 0; split && k < call->nout; k++)
    split = batch_leads(&call->out[k], call->batch, &sc.per_out[k]);
  if (!split) return run_call(call, fns, pool, phys_in, phys_out, d);
  int64_t nchunks = threads * 4 < call->batch / kSplitMin ? threads * 4 : call->batch / kSplitMin;
  sc.chunk = (call->batch + nchunks - 1) / nchunks;
  nchunks = (call->batch + sc.chunk - 1) / sc.chunk; /* the last chunk is never below kSplitMin */
  if (call->batch - (nchunks - 1) * sc.chunk < kSplitMin) return run_call(call, fns, pool, phys_in, phys_out, d);
  sc.codes = calloc((size_t)nchunks, sizeof *sc.codes);
  sc.diags = malloc((size_t)nchunks * sizeof *sc.diags);
  if (!sc.codes || !sc.diags) {
    free(sc.codes);
    free(sc.diags);
    return run_call(call, fns, pool, phys_in, phys_out, d);
  }
  av_parallel_for(pool, nchunks, 1, 1, run_chunks, &sc);
  av_code rc = AV_OK;
  for (int64_t c = 0; c < nchunks && rc == AV_OK; c++) /* the first failing chunk's report */
    if (sc.codes[c] != AV_OK) {
      *d = sc.diags[c];
      rc = sc.codes[c];
    }
  free(sc.codes);
  free(sc.diags);
  return rc;
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

/* Copies between row-major `rm` and the layout's `phys` (to_phys picks the direction): one
 * strided box copy, whose transposing path moves each matrix in tiles. */
static void relayout(const av_lapack_arg *a, void *rm, void *phys, bool to_phys) {
  size_t es = av_dtype_size(a->dtype);
  int64_t total = lapack_elems(a);
  if (total == 0 || a->rank == 0) {
    if (total) memcpy(to_phys ? phys : rm, to_phys ? rm : phys, es);
    return;
  }
  int64_t st[AV_LAPACK_MAX_RANK] = {0}, rs[AV_LAPACK_MAX_RANK] = {0};
  phys_strides(a, st);
  av_row_major_strides(a->rank, a->dims, rs);
  av_box b = {.rank = a->rank};
  for (int k = 0; k < a->rank; k++) {
    b.dims[k] = a->dims[k];
    b.sstride[k] = to_phys ? rs[k] : st[k];
    b.dstride[k] = to_phys ? st[k] : rs[k];
  }
  av_box_copy(&b, to_phys ? rm : phys, to_phys ? phys : rm, es);
}

/* Whether two arguments lie the same way in memory (dtype, dims and layout). */
static bool same_layout(const av_lapack_arg *a, const av_lapack_arg *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k] || a->minor_to_major[k] != b->minor_to_major[k]) return false;
  return true;
}

/* Routines whose first result starts as a copy of their first operand and which never read
 * the operand again: a relayout can write it straight into the result's buffer, and the
 * routine's copy (lapack_copy_in, skipped when the two are one buffer) disappears. */
static bool factors_in_place(const av_lapack_call *c) {
  return (c->routine == AV_LAPACK_GETRF || c->routine == AV_LAPACK_POTRF) && c->nin >= 1 &&
         c->nout >= 1 && same_layout(&c->in[0], &c->out[0]);
}

av_code av_step_lapack(const av_step *s, av_frame *f, av_diag *d) {
  const av_lapack_call *c = s->params;
  void *pin[AV_LAPACK_MAX_ARGS] = {NULL}, *pout[AV_LAPACK_MAX_ARGS] = {NULL};
  bool own_in[AV_LAPACK_MAX_ARGS] = {false}, own_out[AV_LAPACK_MAX_ARGS] = {false};
  av_code rc = AV_OK;
  if (s->nin != c->nin || s->nout != c->nout)
    return av_diag_set(d, AV_INTERNAL, "LAPACK step: operand counts differ from the call");
  lapack_ctx x = {.d = d};
  /* getrf / potrf of a column-major operand: relayout into the result's scratch, factor
   * there (a 1024^2 f64 lu: one 8 MB buffer and copy fewer) */
  bool into_out = factors_in_place(c) && !is_row_major(&c->in[0]) && lapack_elems(&c->in[0]) > 0;
  for (uint32_t i = 0; i < c->nin && rc == AV_OK; i++) {
    if (is_row_major(&c->in[i]) && lapack_elems(&c->in[i]) > 0) {
      pin[i] = av_in(s, f, i); /* read only: the routines copy what they modify */
      continue;
    }
    if (i == 0 && into_out) continue; /* below, once the result's buffer exists */
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
  if (rc == AV_OK && into_out) {
    relayout(&c->in[0], av_in(s, f, 0), pout[0], true);
    pin[0] = pout[0];
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
