/* Reduction nests (runtime/steps.h, av_nest_params): the generated kernel runs one block of
 * V indices per call, blocks shared out over the pool; each block's sums come back k-major in
 * a small buffer and are placed in the result (lanes past the last v are dropped). */
#include <stdlib.h>
#include <string.h>

#include "runtime/codegen_abi.h"
#include "runtime/steps.h"
#include "runtime/thread_pool.h"

enum { NEST_MAX_LANES = 16, NEST_MAX_K = 8, NEST_LOCAL_INPUTS = 16 };

typedef struct nest_run {
  const av_nest_params *p;
  const void *const *ptr;
  float *out;
} nest_run;

static void nest_range(void *ctx, int64_t begin, int64_t end) {
  const nest_run *w = ctx;
  const av_nest_params *p = w->p;
  int lanes = p->gen->lanes;
  float stage[NEST_MAX_K * NEST_MAX_LANES];
  for (int64_t blk = begin; blk < end; blk++) {
    int64_t v0 = blk * lanes;
    av_cg_nest_args a = {w->ptr, stage, v0, p->nv - 1, p->nr};
    p->gen->entry(&a);
    for (int l = 0; l < lanes && v0 + l < p->nv; l++)
      for (int64_t k = 0; k < p->nk; k++)
        w->out[(v0 + l) * p->out_vstride + k * p->out_kstride] = stage[k * lanes + l];
  }
}

av_code av_step_nest(const av_step *s, av_frame *f, av_diag *d) {
  const av_nest_params *p = s->params;
  av_code c = av_step_alloc_out(s, f, 0, d);
  if (c != AV_OK) return c;
  if (p->gen->lanes > NEST_MAX_LANES || p->nk > NEST_MAX_K || p->nv < 1)
    return av_diag_set(d, AV_INTERNAL, "reduction nest of %lld x %lld lanes", (long long)p->nk,
                       (long long)p->gen->lanes);
  const void *local[NEST_LOCAL_INPUTS];
  const void **ptr = s->nin <= NEST_LOCAL_INPUTS ? local : malloc(sizeof *ptr * s->nin);
  if (!ptr) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory for a reduction nest");
  for (uint32_t q = 0; q < s->nin; q++) ptr[q] = av_in(s, f, q);
  nest_run w = {p, ptr, av_out(s, f, 0)};
  int64_t blocks = (p->nv + p->gen->lanes - 1) / p->gen->lanes;
  /* a block is nr iterations of the kernel's loop: a few blocks are worth a thread */
  int64_t min_blocks = p->nr >= 1024 ? 1 : (1024 + p->nr - 1) / (p->nr > 0 ? p->nr : 1);
  av_parallel_for(f->pool, blocks, 1, min_blocks, nest_range, &w);
  if (ptr != local) free(ptr);
  return AV_OK;
}
