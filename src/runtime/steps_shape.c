/* Data movement steps. */
#include <string.h>

#include "runtime/steps.h"
#include "runtime/thread_pool.h"

/* Large copies are split along the box's outermost non-trivial axis over the pool. */
enum { BOX_MIN_CHUNK = 64 * 1024 }; /* elements */

typedef struct box_split {
  const av_box *box;
  int axis;
  const char *src;
  char *dst;
  size_t esize;
} box_split;

static void box_split_range(void *ctx, int64_t b, int64_t e) {
  const box_split *w = ctx;
  av_box sub = *w->box;
  sub.dims[w->axis] = e - b;
  int64_t es = (int64_t)w->esize;
  av_box_copy(&sub, w->src + b * sub.sstride[w->axis] * es, w->dst + b * sub.dstride[w->axis] * es,
              w->esize);
}

static void box_copy_pool(av_thread_pool *pool, const av_box *b, const char *src, char *dst,
                          size_t esize) {
  int axis = 0;
  int64_t n = 1;
  while (axis < b->rank && b->dims[axis] == 1) axis++;
  for (int k = 0; k < b->rank; k++) n *= b->dims[k];
  if (!pool || axis >= b->rank || n < 2 * BOX_MIN_CHUNK) {
    av_box_copy(b, src, dst, esize);
    return;
  }
  int64_t per = n / b->dims[axis];
  box_split w = {b, axis, src, dst, esize};
  av_parallel_for(pool, b->dims[axis], 1, (BOX_MIN_CHUNK + per - 1) / per, box_split_range, &w);
}

av_code av_step_box(const av_step *s, av_frame *f, av_diag *d) {
  const av_box_params *p = s->params;
  const char *in = av_in(s, f, 0);
  av_code c = av_step_alloc_out(s, f, 0, d);
  if (c != AV_OK) return c;
  box_copy_pool(f->pool, &p->box, in + p->soff * (int64_t)p->esize, av_out(s, f, 0), p->esize);
  return AV_OK;
}

av_code av_step_pad(const av_step *s, av_frame *f, av_diag *d) {
  const av_pad_params *p = s->params;
  const char *in = av_in(s, f, 0);
  const void *value = av_in(s, f, 1);
  av_code c = av_step_alloc_out(s, f, 0, d);
  if (c != AV_OK) return c;
  char *out = av_out(s, f, 0);
  av_fill(out, av_out_type(s, f, 0)->nelems, value, p->esize);
  av_box_copy(&p->box, in + p->soff * (int64_t)p->esize, out + p->doff * (int64_t)p->esize,
              p->esize);
  return AV_OK;
}

av_code av_step_concat(const av_step *s, av_frame *f, av_diag *d) {
  const av_concat_params *p = s->params;
  av_code c = av_step_alloc_out(s, f, 0, d);
  if (c != AV_OK) return c;
  char *out = av_out(s, f, 0);
  for (uint32_t i = 0; i < p->n; i++)
    av_box_copy(&p->boxes[i], av_in(s, f, i), out + p->doff[i] * (int64_t)p->esize, p->esize);
  return AV_OK;
}

int64_t av_read_index(const void *p, av_dtype t) {
  switch (t) {
    case AV_DT_S8: case AV_DT_S4: case AV_DT_S2: case AV_DT_S1: return *(const int8_t *)p;
    case AV_DT_S16: return *(const int16_t *)p;
    case AV_DT_S32: return *(const int32_t *)p;
    case AV_DT_S64: return *(const int64_t *)p;
    case AV_DT_U8: case AV_DT_U4: case AV_DT_U2: case AV_DT_U1: case AV_DT_PRED:
      return *(const uint8_t *)p;
    case AV_DT_U16: return *(const uint16_t *)p;
    case AV_DT_U32: return *(const uint32_t *)p;
    case AV_DT_U64: {
      uint64_t v = *(const uint64_t *)p;
      return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    default: return 0;
  }
}

int64_t av_dyn_slice_offset(const av_dyn_slice_params *p, const void *const *starts) {
  int64_t off = 0;
  for (int k = 0; k < p->rank; k++) {
    int64_t st = av_read_index(starts[k], p->index_dtype[k]);
    int64_t hi = p->dims[k] - p->sizes[k];
    if (st > hi) st = hi;
    if (st < 0) st = 0;
    off += st * p->strides[k];
  }
  return off;
}

void av_dyn_slice_copy(const av_dyn_slice_params *p, char *operand, char *dense, bool into) {
  /* one run of memory when every dim after the first that is cut short is whole (xs[i] of a
   * scan: a row): the common case, without the box walk */
  int cut = 0;
  while (cut < p->rank && p->sizes[cut] == 1) cut++;
  bool contiguous = true;
  for (int q = cut + 1; q < p->rank; q++) contiguous = contiguous && p->sizes[q] == p->dims[q];
  if (contiguous) {
    int64_t n = 1;
    for (int q = 0; q < p->rank; q++) n *= p->sizes[q];
    if (into)
      memcpy(operand, dense, (size_t)n * p->esize);
    else
      memcpy(dense, operand, (size_t)n * p->esize);
    return;
  }
  av_box b;
  int64_t dstr[AV_BOX_MAX_RANK];
  av_row_major_strides(p->rank, p->sizes, dstr);
  b.rank = p->rank;
  for (int k = 0; k < p->rank; k++) {
    b.dims[k] = p->sizes[k];
    b.sstride[k] = into ? dstr[k] : p->strides[k];
    b.dstride[k] = into ? p->strides[k] : dstr[k];
  }
  if (into)
    av_box_copy(&b, dense, operand, p->esize);
  else
    av_box_copy(&b, operand, dense, p->esize);
}

/* Clamped start offset (in elements) of a dynamic slice/update whose start scalars are the
 * step inputs from `first`. */
static int64_t step_offset(const av_dyn_slice_params *p, const av_step *s, const av_frame *f,
                           uint32_t first) {
  const void *starts[AV_BOX_MAX_RANK];
  for (int k = 0; k < p->rank; k++) starts[k] = av_in(s, f, first + (uint32_t)k);
  return av_dyn_slice_offset(p, starts);
}

av_code av_step_dynamic_slice(const av_step *s, av_frame *f, av_diag *d) {
  const av_dyn_slice_params *p = s->params;
  char *in = av_in(s, f, 0);
  int64_t off = step_offset(p, s, f, 1);
  av_code c = av_step_alloc_out(s, f, 0, d);
  if (c != AV_OK) return c;
  av_dyn_slice_copy(p, in + off * (int64_t)p->esize, av_out(s, f, 0), false);
  return AV_OK;
}

av_code av_step_dynamic_update_slice(const av_step *s, av_frame *f, av_diag *d) {
  const av_dyn_slice_params *p = s->params;
  const char *operand = av_in(s, f, 0);
  char *update = av_in(s, f, 1);
  int64_t off = step_offset(p, s, f, 2);
  /* Update in place when the operand's storage is ours alone. */
  av_code c = av_step_alloc_out_reuse(s, f, 0, 0, d);
  if (c != AV_OK) return c;
  char *out = av_out(s, f, 0);
  if (out != operand) memcpy(out, operand, av_out_type(s, f, 0)->nbytes);
  av_dyn_slice_copy(p, out + off * (int64_t)p->esize, update, true);
  return AV_OK;
}
