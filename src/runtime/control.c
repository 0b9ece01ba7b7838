/* Control flow steps: while, if/case, calls.
 *
 * Loop bodies run these steps once per iteration, so the common cases avoid the heap: slot
 * arrays live on the stack when small, inputs whose slot dies at the step are moved (not
 * shared) into the callee so its elementwise steps can write them in place, and conditions
 * (or whole loops) made of scalar ops run as register programs (runtime/scalar_prog.h). */
#include <stdlib.h>
#include <string.h>

#include "runtime/loop_prog.h"
#include "runtime/scalar_prog.h"
#include "runtime/steps.h"

enum { SMALL = 16 }; /* slot arrays up to this size stay on the stack */

static void release_all(av_slot *v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) av_slot_release(&v[i]);
}

/* `n` slots (zeroed) from `small` (room for `cap`) when they fit, else from the heap. */
static av_slot *slot_array(av_slot *small, size_t cap, size_t n, av_diag *d) {
  av_slot *v = n <= cap ? small : calloc(n, sizeof *v);
  if (!v) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  if (v == small) memset(v, 0, n * sizeof *v);
  return v;
}

static void free_slot_array(av_slot *v, const av_slot *small) {
  if (v != small) free(v);
}

/* Input i's reference can be handed over instead of shared: its slot is released right after
 * this step anyway, it is not borrowed, and no other input of the step names the same slot. */
static bool can_move_input(const av_step *s, const av_frame *f, uint32_t i, uint32_t keep) {
  if (i >= 32 || !(s->in_dies >> i & 1u) || (keep >> i & 1u) || !f->slots[s->in[i]].st)
    return false;
  for (uint32_t j = 0; j < s->nin; j++)
    if (j != i && s->in[j] == s->in[i]) return false;
  return true;
}

/* Like share_inputs (all of the step's inputs), moving the references that can be moved
 * (bit i of `keep`: input i must stay in its slot). */
static av_code take_inputs(const av_step *s, av_frame *f, av_slot *dst, uint32_t keep,
                           av_diag *d) {
  for (uint32_t i = 0; i < s->nin; i++) {
    av_slot *src = &f->slots[s->in[i]];
    if (can_move_input(s, f, i, keep)) {
      dst[i] = *src;
      src->st = NULL;
      src->data = NULL;
      continue;
    }
    av_code c = av_slot_share(src, av_in_type(s, f, i)->nbytes, &dst[i], d);
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

/* Runs the condition: its register program on the carried bytes when there is one, else its
 * block on new references (so the body can still update the carried values in place). */
static av_code eval_cond(const av_while_params *p, av_frame *f, const av_slot *cur, av_slot *tmp,
                         uint32_t n, const void **ptrs, bool *go, av_diag *d) {
  if (p->cond_prog) {
    uint8_t pred = 0;
    void *out[1] = {&pred};
    for (uint32_t i = 0; i < n; i++) ptrs[i] = cur[i].data;
    av_code c = av_scalar_prog_run(p->cond_prog, f, ptrs, out, d);
    *go = pred != 0;
    return c;
  }
  for (uint32_t i = 0; i < n; i++) {
    av_code c = av_slot_share(&cur[i], p->nbytes[i], &tmp[i], d);
    if (c != AV_OK) {
      release_all(tmp, i);
      return c;
    }
  }
  av_slot pred = {0};
  av_code c = av_run_block(p->cond, f, tmp, &pred, d);
  if (c != AV_OK) return c;
  *go = pred.data && *(const uint8_t *)pred.data;
  av_slot_release(&pred);
  return AV_OK;
}

/* A loop whose body is a register program: the carried values get private storage once, and
 * each iteration rewrites them in place (the program reads every argument before it writes
 * any result). */
static av_code scalar_loop(const av_while_params *p, av_frame *f, av_slot *cur, av_slot *tmp,
                           uint32_t n, const void **ptrs, av_diag *d) {
  void *outs[AV_SPROG_MAX_REGS];
  const void *ins[AV_SPROG_MAX_REGS];
  for (uint32_t i = 0; i < n; i++) {
    av_code c = av_slot_make_private(&cur[i], p->nbytes[i], d);
    if (c != AV_OK) return c;
    outs[i] = cur[i].data;
    ins[i] = cur[i].data;
  }
  av_sregs body_regs, cond_regs;
  av_scalar_prog_init(p->body_prog, f, body_regs); /* constants and captures: loaded once */
  if (p->cond_prog) av_scalar_prog_init(p->cond_prog, f, cond_regs);
  for (;;) {
    bool go = false;
    if (p->cond_prog) {
      uint8_t pred = 0;
      void *pout[1] = {&pred};
      av_scalar_prog_exec(p->cond_prog, cond_regs, ins, pout);
      go = pred != 0;
    } else {
      av_code c = eval_cond(p, f, cur, tmp, n, ptrs, &go, d);
      if (c != AV_OK) return c;
    }
    if (!go) return AV_OK;
    av_scalar_prog_exec(p->body_prog, body_regs, ins, outs);
  }
}

static av_code run_while(const av_step *s, av_frame *f, av_diag *d) {
  const av_while_params *p = s->params;
  uint32_t n = s->nin;
  av_slot small[2 * SMALL];
  const void *small_ptrs[SMALL];
  av_slot *cur = slot_array(small, 2 * SMALL, 2 * (size_t)n + 2, d);
  const void **ptrs = n <= SMALL ? small_ptrs : calloc((size_t)n + 1, sizeof *ptrs);
  if (!cur || !ptrs) {
    if (cur) free_slot_array(cur, small);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  av_slot *tmp = cur + n + 1;
  av_code c = take_inputs(s, f, cur, p->captured, d);
  if (c == AV_OK && p->loop_prog) {
    c = av_loop_prog_run(p->loop_prog, f, cur, d);
  } else if (c == AV_OK && p->body_prog && n <= AV_SPROG_MAX_REGS) {
    c = scalar_loop(p, f, cur, tmp, n, ptrs, d);
  } else {
    while (c == AV_OK) {
      bool go = false;
      c = eval_cond(p, f, cur, tmp, n, ptrs, &go, d);
      if (c != AV_OK || !go) break;
      c = av_run_block(p->body, f, cur, tmp, d);
      if (c != AV_OK) break;
      memcpy(cur, tmp, n * sizeof *cur);
      memset(tmp, 0, n * sizeof *tmp);
    }
  }
  if (c == AV_OK) move_to_outputs(s, f, cur);
  release_all(cur, 2 * n + 2);
  free_slot_array(cur, small);
  if (ptrs != small_ptrs) free(ptrs);
  return c;
}

av_code av_step_while(const av_step *s, av_frame *f, av_diag *d) {
  /* profiled: the condition's and body's steps are recorded too, one loop deeper (loops run
   * as register programs have no steps: they stay one event) */
  struct av_prof_run *prof = f->prof_inner;
  if (!prof) return run_while(s, f, d);
  f->prof = prof;
  f->prof_inner = NULL;
  f->prof_depth++;
  av_code c = run_while(s, f, d);
  f->prof = NULL;
  f->prof_inner = prof;
  f->prof_depth--;
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
  av_slot small[SMALL];
  av_slot *res = slot_array(small, SMALL, (size_t)s->nout + 1, d);
  if (!res) return d->code;
  av_code c = av_run_block(p->branches[idx], f, NULL, res, d);
  if (c == AV_OK) move_to_outputs(s, f, res);
  release_all(res, s->nout);
  free_slot_array(res, small);
  return c;
}

static av_code run_region(const av_step *s, av_frame *f, av_diag *d);

/* A called function (a JAX program's main often only calls @inv or @solve; MCMC's step function
 * in a loop body) records its steps too, one level deeper, when profiled. */
av_code av_step_region(const av_step *s, av_frame *f, av_diag *d) {
  struct av_prof_run *prof = f->prof_inner;
  if (!prof) return run_region(s, f, d);
  f->prof = prof;
  f->prof_inner = NULL;
  f->prof_depth++;
  av_code c = run_region(s, f, d);
  f->prof = NULL;
  f->prof_inner = prof;
  f->prof_depth--;
  return c;
}

static av_code run_region(const av_step *s, av_frame *f, av_diag *d) {
  const av_region_step_params *p = s->params;
  av_slot small[SMALL];
  av_slot *buf = slot_array(small, SMALL, (size_t)s->nin + s->nout + 1, d);
  if (!buf) return d->code;
  av_slot *args = buf, *res = buf + s->nin;
  av_code c = take_inputs(s, f, args, p->isolated ? 0 : ~0u, d);
  if (c == AV_OK) c = av_run_block(p->block, f, args, res, d);
  if (c == AV_OK) move_to_outputs(s, f, res);
  release_all(buf, s->nin + s->nout);
  free_slot_array(buf, small);
  return c;
}

av_code av_step_call(const av_step *s, av_frame *f, av_diag *d) {
  const av_call_params *p = s->params;
  const av_func_plan *callee = *p->callee;
  if (!callee) return av_diag_set(d, AV_INTERNAL, "call to a function that was not compiled");
  av_slot small[SMALL];
  av_slot *buf = slot_array(small, SMALL, (size_t)s->nin + s->nout + 1, d);
  if (!buf) return d->code;
  av_slot *args = buf, *res = buf + s->nin;
  av_code c = take_inputs(s, f, args, 0, d); /* a callee sees only its arguments */
  if (c == AV_OK) c = av_run_callee(f, callee, args, res, d);
  if (c == AV_OK) move_to_outputs(s, f, res);
  release_all(buf, s->nin + s->nout);
  free_slot_array(buf, small);
  return c;
}
