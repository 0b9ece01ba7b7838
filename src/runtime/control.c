/* Control flow steps: while, if/case, calls. */
#include <stdlib.h>
#include <string.h>

#include "runtime/steps.h"

static void release_all(av_slot *v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) av_slot_release(&v[i]);
}

static av_code share_inputs(const av_step *s, av_frame *f, uint32_t first, uint32_t n,
                            av_slot *dst, av_diag *d) {
  for (uint32_t i = 0; i < n; i++) {
    av_code c = av_slot_share(&f->slots[s->in[first + i]], av_in_type(s, f, first + i)->nbytes,
                              &dst[i], d);
    if (c != AV_OK) {
      release_all(dst, i);
      return c;
    }
  }
  return AV_OK;
}

static void move_to_outputs(const av_step *s, av_frame *f, av_slot *vals) {
  for (uint32_t k = 0; k < s->nout; k++) {
    av_slot_release(&f->slots[s->out[k]]);
    f->slots[s->out[k]] = vals[k];
    vals[k].st = NULL;
    vals[k].data = NULL;
  }
}

av_code av_step_while(const av_step *s, av_frame *f, av_diag *d) {
  const av_while_params *p = s->params;
  uint32_t n = s->nin;
  av_slot *cur = calloc(2 * (size_t)n + 2, sizeof *cur);
  if (!cur) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  av_slot *tmp = cur + n + 1;
  av_code c = share_inputs(s, f, 0, n, cur, d);
  while (c == AV_OK) {
    /* the condition gets its own references, so the body can still update in place */
    for (uint32_t i = 0; i < n && c == AV_OK; i++) c = av_slot_share(&cur[i], p->nbytes[i], &tmp[i], d);
    if (c != AV_OK) break;
    av_slot pred = {0};
    c = av_run_block(p->cond, f, tmp, &pred, d);
    if (c != AV_OK) break;
    bool go = pred.data && *(const uint8_t *)pred.data;
    av_slot_release(&pred);
    if (!go) break;
    c = av_run_block(p->body, f, cur, tmp, d);
    if (c != AV_OK) break;
    memcpy(cur, tmp, n * sizeof *cur);
    memset(tmp, 0, n * sizeof *tmp);
  }
  if (c == AV_OK) move_to_outputs(s, f, cur);
  release_all(cur, 2 * n + 2);
  free(cur);
  return c;
}

av_code av_step_branch(const av_step *s, av_frame *f, av_diag *d) {
  const av_branch_params *p = s->params;
  int64_t idx;
  if (p->is_if) {
    idx = *(const uint8_t *)av_in(s, f, 0) ? 0 : 1;
  } else {
    idx = av_read_index(av_in(s, f, 0), p->index_dtype);
    /* out-of-range indices select the last branch */
    if (idx < 0 || idx >= (int64_t)p->nbranches) idx = (int64_t)p->nbranches - 1;
  }
  av_slot *res = calloc((size_t)s->nout + 1, sizeof *res);
  if (!res) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  av_code c = av_run_block(p->branches[idx], f, NULL, res, d);
  if (c == AV_OK) move_to_outputs(s, f, res);
  release_all(res, s->nout);
  free(res);
  return c;
}

av_code av_step_region(const av_step *s, av_frame *f, av_diag *d) {
  const av_region_step_params *p = s->params;
  av_slot *buf = calloc((size_t)s->nin + s->nout + 1, sizeof *buf);
  if (!buf) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  av_slot *args = buf, *res = buf + s->nin;
  av_code c = share_inputs(s, f, 0, s->nin, args, d);
  if (c == AV_OK) c = av_run_block(p->block, f, args, res, d);
  if (c == AV_OK) move_to_outputs(s, f, res);
  release_all(buf, s->nin + s->nout);
  free(buf);
  return c;
}

av_code av_step_call(const av_step *s, av_frame *f, av_diag *d) {
  const av_call_params *p = s->params;
  const av_func_plan *callee = *p->callee;
  if (!callee) return av_diag_set(d, AV_INTERNAL, "call to a function that was not compiled");
  av_slot *buf = calloc((size_t)s->nin + s->nout + 1, sizeof *buf);
  if (!buf) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  av_slot *args = buf, *res = buf + s->nin;
  av_code c = share_inputs(s, f, 0, s->nin, args, d);
  if (c == AV_OK) c = av_run_func(f->plan, callee, f->device_index, f->depth + 1, args, res, d);
  if (c == AV_OK) move_to_outputs(s, f, res);
  release_all(buf, s->nin + s->nout);
  free(buf);
  return c;
}
