/* Row groups (steps.h, av_rows_params): the members' outputs are allocated in member order,
 * then workers take blocks of rows and run every member over those rows before the next
 * block, so a row written by one member is read back by the next from L1/L2 instead of
 * memory. Each member computes exactly what it computes alone (the same loops, the same
 * order within a row), only restricted to some rows at a time. */
#include <stdatomic.h>
#include <string.h>

#include "runtime/kernels/reduce.h"
#include "runtime/steps.h"
#include "runtime/thread_pool.h"

enum {
  ROWS_BLOCK_ELEMS = 16384,    /* a block's rows hold about this many elements (64 KiB of f32) */
  ROWS_MIN_CHUNK = 32 * 1024,  /* elements worth handing to another thread */
};

typedef struct rows_run {
  const av_rows_params *p;
  const av_frame *f;
  int64_t block; /* rows per block */
  atomic_bool failed;
} rows_run;

static void ew_range(const av_step *s, const av_frame *f, int64_t begin, int64_t end) {
  const void *in[AV_EW_MAX_IN] = {0};
  for (uint32_t i = 0; i < s->nin && i < AV_EW_MAX_IN; i++)
    in[i] = (const char *)av_in(s, f, i) + (size_t)begin * av_dtype_size(av_in_type(s, f, i)->dtype);
  char *out = (char *)av_out(s, f, 0) + (size_t)begin * av_dtype_size(av_out_type(s, f, 0)->dtype);
  av_ew_run(s->params, in, out, end - begin);
}

/* Members over rows [r0, r1). */
static bool run_block(const av_rows_params *p, const av_frame *f, int64_t r0, int64_t r1) {
  for (uint32_t i = 0; i < p->nmembers; i++) {
    const av_rows_member *m = &p->m[i];
    const av_step *s = &m->step;
    switch (m->kind) {
      case AV_ROWS_FUSED:
        if (!av_fused_run_range(s, f, r0 * m->unit, r1 * m->unit)) return false;
        break;
      case AV_ROWS_EW: ew_range(s, f, r0 * m->unit, r1 * m->unit); break;
      case AV_ROWS_REDUCE: {
        const float *in = av_in(s, f, 0);
        float *out = av_out(s, f, 0);
        if (!av_reduce_rows(m->reduce_op, AV_DT_F32, in + r0 * p->row_len, r1 - r0, p->row_len,
                            av_in(s, f, 1), out + r0))
          return false;
        break;
      }
      default: break; /* aliases ran before the first block */
    }
  }
  return true;
}

static void rows_range(void *ctx, int64_t begin, int64_t end) {
  rows_run *rr = ctx;
  for (int64_t r = begin; r < end; r += rr->block) {
    int64_t e = end - r < rr->block ? end : r + rr->block;
    if (!run_block(rr->p, rr->f, r, e)) {
      atomic_store(&rr->failed, true);
      return;
    }
  }
}

av_code av_step_rows(const av_step *s, av_frame *f, av_diag *d) {
  const av_rows_params *p = s->params;
  for (uint32_t i = 0; i < p->nmembers; i++) {
    const av_rows_member *m = &p->m[i];
    const av_step *ms = &m->step;
    av_code c = AV_OK;
    switch (m->kind) {
      case AV_ROWS_FUSED: c = av_fused_alloc_outputs(ms, f, d); break;
      case AV_ROWS_ALIAS: c = av_step_alias(ms, f, d); break;
      case AV_ROWS_EW: {
        size_t nb = av_out_type(ms, f, 0)->nbytes;
        bool done = false;
        for (uint32_t k = 0; k < ms->nin && k < 32 && !done && c == AV_OK; k++) {
          if (!(ms->in_dies >> k & 1u) || av_in_type(ms, f, k)->nbytes != nb ||
              !av_slot_is_private(&f->slots[ms->in[k]], nb))
            continue;
          c = av_step_alloc_out_reuse(ms, f, 0, k, d);
          done = true;
        }
        if (!done && c == AV_OK) c = av_step_alloc_out(ms, f, 0, d);
        break;
      }
      default: c = av_step_alloc_out(ms, f, 0, d); break;
    }
    if (c != AV_OK) return c;
  }
  int64_t block = ROWS_BLOCK_ELEMS / p->row_len;
  if (block < 1) block = 1;
  int64_t min_rows = (ROWS_MIN_CHUNK + p->row_len - 1) / p->row_len;
  rows_run rr = {p, f, block, false};
  av_parallel_for(f->pool, p->rows, block, min_rows, rows_range, &rr);
  if (atomic_load(&rr.failed))
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory for a fused row group");
  return AV_OK;
}
