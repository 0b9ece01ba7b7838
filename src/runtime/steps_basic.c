/* Simple steps: constants, aliases, elementwise, convert, select, reduce_precision. */
#include <math.h>
#include <string.h>

#include "runtime/steps.h"
#include "runtime/thread_pool.h"

/* Large elementwise loops are split over the pool in chunks of whole EW_GRAIN blocks. */
enum { EW_GRAIN = 1024, EW_MIN_CHUNK = 64 * 1024 };
enum { SMALL_CONST_BYTES = 64 }; /* constants up to this size are lent, not shared */

typedef struct ew_split {
  enum { SPLIT_EW, SPLIT_CONVERT, SPLIT_SELECT } kind;
  const void *kernel; /* av_ew_kernel or av_convert */
  const void *in[AV_EW_MAX_IN];
  size_t in_size[AV_EW_MAX_IN];
  void *out;
  size_t out_size;
} ew_split;

static void ew_split_range(void *ctx, int64_t b, int64_t e) {
  const ew_split *w = ctx;
  const void *in[AV_EW_MAX_IN] = {0};
  for (int i = 0; i < AV_EW_MAX_IN; i++)
    if (w->in[i]) in[i] = (const char *)w->in[i] + (size_t)b * w->in_size[i];
  void *out = (char *)w->out + (size_t)b * w->out_size;
  switch (w->kind) {
    case SPLIT_EW: av_ew_run(w->kernel, in, out, e - b); break;
    case SPLIT_CONVERT: av_convert_run(w->kernel, in[0], out, e - b); break;
    case SPLIT_SELECT: av_select_run(in[0], in[1], in[2], out, e - b, w->out_size); break;
  }
}

/* Runs w over n elements, on the frame's pool when n is large. */
static void ew_split_run(const av_frame *f, ew_split *w, int64_t n) {
  av_parallel_for(f->pool, n, EW_GRAIN, EW_MIN_CHUNK, ew_split_range, w);
}

av_code av_step_const(const av_step *s, av_frame *f, av_diag *d) {
  (void)d;
  const av_const_params *p = s->params;
  av_slot *o = &f->slots[s->out[0]];
  av_slot_release(o);
  /* Small constants (the scalars of loop bodies, run every iteration) are lent: the plan
   * outlives every run, and whoever needs to own them copies a few bytes (av_slot_share)
   * instead of every use paying two atomic reference-count updates. */
  o->st = p->st->size <= SMALL_CONST_BYTES ? NULL : av_storage_retain(p->st);
  o->data = p->st->data;
  return AV_OK;
}

av_code av_step_alias(const av_step *s, av_frame *f, av_diag *d) {
  for (uint32_t k = 0; k < s->nout; k++) {
    av_slot tmp;
    av_code c = av_slot_share(&f->slots[s->in[k]], av_in_type(s, f, k)->nbytes, &tmp, d);
    if (c != AV_OK) return c;
    av_slot_release(&f->slots[s->out[k]]);
    f->slots[s->out[k]] = tmp;
  }
  return AV_OK;
}

av_code av_step_zero(const av_step *s, av_frame *f, av_diag *d) {
  av_code c = av_step_alloc_out(s, f, 0, d);
  if (c == AV_OK) memset(av_out(s, f, 0), 0, av_out_type(s, f, 0)->nbytes);
  return c;
}

av_code av_step_token(const av_step *s, av_frame *f, av_diag *d) {
  (void)d;
  for (uint32_t k = 0; k < s->nout; k++) av_slot_release(&f->slots[s->out[k]]);
  return AV_OK;
}

av_code av_step_device_id(const av_step *s, av_frame *f, av_diag *d) {
  av_code c = av_step_alloc_out(s, f, 0, d);
  if (c != AV_OK) return c;
  /* device_index = replica * num_partitions + partition */
  int np = f->plan->num_partitions > 0 ? f->plan->num_partitions : 1;
  const int *which = s->params; /* 0: replica id, 1: partition id */
  uint32_t id = (uint32_t)(which && *which ? f->device_index % np : f->device_index / np);
  memcpy(av_out(s, f, 0), &id, sizeof id);
  return AV_OK;
}

static av_code alloc_reusing(const av_step *s, av_frame *f, av_diag *d) {
  size_t nb = av_out_type(s, f, 0)->nbytes;
  for (uint32_t i = 0; i < s->nin && i < 32; i++) {
    if (!(s->in_dies >> i & 1u) || av_in_type(s, f, i)->nbytes != nb) continue;
    if (av_slot_is_private(&f->slots[s->in[i]], nb)) return av_step_alloc_out_reuse(s, f, 0, i, d);
  }
  return av_step_alloc_out(s, f, 0, d);
}

av_code av_step_ew(const av_step *s, av_frame *f, av_diag *d) {
  ew_split w = {.kind = SPLIT_EW, .kernel = s->params};
  for (uint32_t i = 0; i < s->nin && i < AV_EW_MAX_IN; i++) {
    w.in[i] = av_in(s, f, i);
    w.in_size[i] = av_dtype_size(av_in_type(s, f, i)->dtype);
  }
  av_code c = alloc_reusing(s, f, d);
  if (c != AV_OK) return c;
  w.out = av_out(s, f, 0);
  w.out_size = av_dtype_size(av_out_type(s, f, 0)->dtype);
  ew_split_run(f, &w, av_out_type(s, f, 0)->nelems);
  return AV_OK;
}

av_code av_step_convert(const av_step *s, av_frame *f, av_diag *d) {
  ew_split w = {.kind = SPLIT_CONVERT, .kernel = s->params};
  w.in[0] = av_in(s, f, 0);
  w.in_size[0] = av_dtype_size(av_in_type(s, f, 0)->dtype);
  av_code c = alloc_reusing(s, f, d);
  if (c != AV_OK) return c;
  w.out = av_out(s, f, 0);
  w.out_size = av_dtype_size(av_out_type(s, f, 0)->dtype);
  ew_split_run(f, &w, av_out_type(s, f, 0)->nelems);
  return AV_OK;
}

av_code av_step_select(const av_step *s, av_frame *f, av_diag *d) {
  const av_slot_type *pt = av_in_type(s, f, 0);
  const uint8_t *pred = av_in(s, f, 0);
  if (pt->rank == 0) { /* the whole array comes from one side: share it */
    uint32_t pick = pred[0] ? 1 : 2;
    av_slot tmp;
    av_code c = av_slot_share(&f->slots[s->in[pick]], av_out_type(s, f, 0)->nbytes, &tmp, d);
    if (c != AV_OK) return c;
    av_slot_release(&f->slots[s->out[0]]);
    f->slots[s->out[0]] = tmp;
    return AV_OK;
  }
  const av_slot_type *ot = av_out_type(s, f, 0);
  size_t es = av_dtype_size(ot->dtype);
  ew_split w = {.kind = SPLIT_SELECT,
                .in = {pred, av_in(s, f, 1), av_in(s, f, 2)},
                .in_size = {1, es, es},
                .out_size = es};
  av_code c = alloc_reusing(s, f, d);
  if (c != AV_OK) return c;
  w.out = av_out(s, f, 0);
  ew_split_run(f, &w, ot->nelems);
  return AV_OK;
}

/* ------------------------------------------------------ reduce_precision */

static float rp_f32(float x, int eb, int mb) {
  uint32_t u;
  memcpy(&u, &x, 4);
  /* NaN stays NaN unless no mantissa bits are left: then it becomes an infinity */
  if (isnan(x)) return mb > 0 ? x : (u >> 31 ? -INFINITY : INFINITY);
  if (mb < 23) {
    int sh = 23 - mb;
    uint32_t half = (1u << (sh - 1)) - 1 + ((u >> sh) & 1u);
    u += half;
    u &= ~((1u << sh) - 1);
  }
  if (eb < 8) {
    int32_t emax = (1 << (eb - 1)) - 1, emin = 1 - emax;
    int32_t e = (int32_t)((u >> 23) & 0xffu) - 127;
    if (e > emax) u = (u & 0x80000000u) | 0x7f800000u;
    else if (e < emin) u &= 0x80000000u;
  }
  float out;
  memcpy(&out, &u, 4);
  return out;
}

static double rp_f64(double x, int eb, int mb) {
  uint64_t u;
  memcpy(&u, &x, 8);
  if (isnan(x)) return mb > 0 ? x : (u >> 63 ? -INFINITY : INFINITY);
  if (mb < 52) {
    int sh = 52 - mb;
    uint64_t half = (1ull << (sh - 1)) - 1 + ((u >> sh) & 1u);
    u += half;
    u &= ~((1ull << sh) - 1);
  }
  if (eb < 11) {
    int64_t emax = (1ll << (eb - 1)) - 1, emin = 1 - emax;
    int64_t e = (int64_t)((u >> 52) & 0x7ffu) - 1023;
    if (e > emax) u = (u & 0x8000000000000000ull) | 0x7ff0000000000000ull;
    else if (e < emin) u &= 0x8000000000000000ull;
  }
  double out;
  memcpy(&out, &u, 8);
  return out;
}

av_code av_step_reduce_precision(const av_step *s, av_frame *f, av_diag *d) {
  const av_reduce_precision_params *p = s->params;
  const char *in = av_in(s, f, 0);
  av_code c = alloc_reusing(s, f, d);
  if (c != AV_OK) return c;
  char *out = av_out(s, f, 0);
  int64_t n = av_out_type(s, f, 0)->nelems;
  size_t es = av_dtype_size(av_out_type(s, f, 0)->dtype);
  enum { CH = 256 };
  double buf[CH];
  for (int64_t i = 0; i < n; i += CH) {
    int64_t m = n - i < CH ? n - i : CH;
    av_convert_run(&p->to_wide, in + (size_t)i * es, buf, m);
    if (p->f64) {
      for (int64_t k = 0; k < m; k++) buf[k] = rp_f64(buf[k], p->exponent_bits, p->mantissa_bits);
    } else {
      float *fb = (float *)buf;
      for (int64_t k = 0; k < m; k++) fb[k] = rp_f32(fb[k], p->exponent_bits, p->mantissa_bits);
    }
    av_convert_run(&p->from_wide, buf, out + (size_t)i * es, m);
  }
  return AV_OK;
}
