/* The executor: runs the steps of a plan over a frame of slots. */
#include <stdlib.h>
#include <string.h>

#include "runtime/net.h"
#include "runtime/plan.h"
#include "runtime/profiler.h"
#include "runtime/thread_pool.h"
#include "util/clock.h"

void av_slot_release(av_slot *s) {
  if (s->st) av_storage_release(s->st);
  s->st = NULL;
  s->data = NULL;
}

av_code av_slot_share(const av_slot *s, size_t nbytes, av_slot *out, av_diag *d) {
  if (s->st) {
    out->st = av_storage_retain(s->st);
    out->data = s->data;
    return AV_OK;
  }
  if (!s->data) { /* tokens */
    out->st = NULL;
    out->data = NULL;
    return AV_OK;
  }
  av_storage *st = av_storage_alloc_uninit(nbytes);
  if (!st) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory copying %zu bytes", nbytes);
  memcpy(st->data, s->data, nbytes);
  out->st = st;
  out->data = st->data;
  return AV_OK;
}

bool av_slot_is_private(const av_slot *s, size_t nbytes) {
  av_storage *st = s->st;
  return st && st->owned && s->data == st->data && st->size == nbytes &&
         atomic_load_explicit(&st->refcount, memory_order_acquire) == 1;
}

av_code av_slot_make_private(av_slot *s, size_t nbytes, av_diag *d) {
  if (av_slot_is_private(s, nbytes)) return AV_OK;
  av_storage *st = av_storage_alloc_uninit(nbytes);
  if (!st) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory copying %zu bytes", nbytes);
  if (nbytes) memcpy(st->data, s->data, nbytes);
  av_slot_release(s);
  s->st = st;
  s->data = st->data;
  return AV_OK;
}

av_code av_step_alloc_out(const av_step *s, av_frame *f, uint32_t k, av_diag *d) {
  const av_slot_type *t = av_out_type(s, f, k);
  av_slot *o = &f->slots[s->out[k]];
  av_slot_release(o);
  if (t->token) return AV_OK;
  av_storage *st = av_storage_alloc_cached_for(f->cache, f->mem_device, t->nbytes);
  if (!st)
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes", t->nbytes);
  o->st = st;
  o->data = st->data;
  return AV_OK;
}

av_code av_step_alloc_out_reuse(const av_step *s, av_frame *f, uint32_t k, uint32_t in_index,
                                av_diag *d) {
  if (in_index < 32 && in_index < s->nin && (s->in_dies >> in_index & 1u)) {
    av_slot *in = &f->slots[s->in[in_index]];
    if (av_slot_is_private(in, av_out_type(s, f, k)->nbytes) && s->out[k] != s->in[in_index]) {
      /* The same slot may appear twice among the inputs (add(x, x)); elementwise kernels
       * read each element before writing it, so sharing is fine for them. */
      /* The output takes the input's reference; the input slot keeps pointing at the bytes
       * (the kernel still reads them) as a borrowed value until its release after the step:
       * no reference-count traffic, which loop bodies would pay every iteration. */
      av_slot *o = &f->slots[s->out[k]];
      av_slot_release(o);
      o->st = in->st;
      o->data = in->data;
      in->st = NULL;
      return AV_OK;
    }
  }
  return av_step_alloc_out(s, f, k, d);
}

/* run_steps reading the clock after every step, for the profiler's record: a step's event
 * lasts from the end of the one before (the release of that one's dead values included) to
 * its own end. Blocks the steps run themselves (regions, branches) see no record: their time
 * is part of the step's; a while loop records its condition's and body's steps too, at a
 * depth below its own (runtime/control.c: f->prof_inner), so loops are broken down. */
static av_code run_steps_profiled(const av_block_plan *b, av_frame *f, av_diag *d) {
  av_prof_run *r = f->prof, *inner = f->prof_inner;
  f->prof = NULL;
  f->prof_inner = r;
  av_code c = AV_OK;
  int64_t t = av_now_ns();
  for (uint32_t i = 0; i < b->nsteps; i++) {
    const av_step *s = &b->steps[i];
    c = s->run(s, f, d);
    int64_t t1 = av_now_ns();
    av_prof_step(r, s, t, t1, f->prof_depth);
    t = t1;
    if (c != AV_OK) {
      av_diag_set(d, c, "  in %s at %s", s->opname, s->loc);
      break;
    }
    for (uint32_t j = 0; j < s->ndead; j++) av_slot_release(&f->slots[s->dead[j]]);
  }
  f->prof = r;
  f->prof_inner = inner;
  return c;
}

static av_code run_steps(const av_block_plan *b, av_frame *f, av_diag *d) {
  if (f->prof) return run_steps_profiled(b, f, d);
  for (uint32_t i = 0; i < b->nsteps; i++) {
    const av_step *s = &b->steps[i];
    av_code c = s->run(s, f, d);
    if (c != AV_OK) {
      av_diag_set(d, c, "  in %s at %s", s->opname, s->loc);
      return c;
    }
    for (uint32_t j = 0; j < s->ndead; j++) av_slot_release(&f->slots[s->dead[j]]);
  }
  return AV_OK;
}

/* Result i's slot is released at the block's exit anyway (its last use is the terminator)
 * and no later result names it, so its reference can be moved into the result. Loop bodies
 * return their carried values this way every iteration; the scan is bounded for huge blocks. */
static bool result_can_move(const av_block_plan *b, uint32_t i) {
  if ((uint64_t)b->nresults * b->ndead_exit > 4096) return false;
  int32_t slot = b->results[i];
  for (uint32_t j = i + 1; j < b->nresults; j++)
    if (b->results[j] == slot) return false;
  for (uint32_t j = 0; j < b->ndead_exit; j++)
    if (b->dead_at_exit[j] == slot) return true;
  return false;
}

av_code av_run_block(const av_block_plan *b, av_frame *f, av_slot *args, av_slot *results,
                     av_diag *d) {
  for (uint32_t i = 0; i < b->nargs; i++) {
    av_slot *dst = &f->slots[b->args[i]];
    av_slot_release(dst);
    *dst = args[i];
    args[i].st = NULL;
    args[i].data = NULL;
  }
  for (uint32_t i = 0; i < b->ndead_entry; i++) av_slot_release(&f->slots[b->dead_at_entry[i]]);
  av_code c = run_steps(b, f, d);
  if (c != AV_OK) return c;
  for (uint32_t i = 0; i < b->nresults; i++) {
    av_slot *src = &f->slots[b->results[i]];
    results[i].data = src->data;
    results[i].st = NULL;
    if (!src->st) continue;
    if (result_can_move(b, i)) { /* hand the block's reference over instead of sharing it */
      results[i].st = src->st;
      src->st = NULL;
    } else {
      results[i].st = av_storage_retain(src->st);
    }
  }
  for (uint32_t i = 0; i < b->ndead_exit; i++) av_slot_release(&f->slots[b->dead_at_exit[i]]);
  return AV_OK;
}

/* The lane of the plan's pool that device `device_index`'s top-level runs use: the runs
 * sharing the cores are the program's devices in this process (blas_share of them, or the
 * process's own ones in a multi-process job). */
static struct av_thread_pool *device_lane(const av_plan *plan, int device_index) {
  struct av_thread_pool *pool = atomic_load_explicit(&((av_plan *)plan)->pool, memory_order_acquire);
  int share = plan->blas_share > 0 ? plan->blas_share : 1, index = device_index;
  const av_plan_net *pn = atomic_load_explicit(&((av_plan *)plan)->net, memory_order_acquire);
  if (share > 1 && pn && !pn->global_run && device_index >= 0 && device_index < pn->ndev &&
      pn->local_rank[device_index] >= 0) {
    share = pn->nlocal;
    index = pn->local_rank[device_index];
  }
  return av_thread_pool_lane(pool, share, index);
}

static av_code run_func(const av_plan *plan, const av_func_plan *fn, int device_index,
                        int mem_device, int depth, struct av_thread_pool *pool, int blas_share,
                        int64_t run_id, const av_user_data_list *user_data, const av_frame *caller,
                        av_slot *args, av_slot *results, av_diag *d);

static _Atomic int64_t next_run_id = 1;

av_code av_run_func(const av_plan *plan, const av_func_plan *fn, int device_index, int mem_device, int depth,
                    const av_user_data_list *user_data, av_slot *args, av_slot *results,
                    av_diag *d) {
  struct av_thread_pool *pool =
      depth == 0 ? device_lane(plan, device_index)
                 : atomic_load_explicit(&((av_plan *)plan)->pool, memory_order_acquire);
  return run_func(plan, fn, device_index, mem_device, depth, pool,
                  plan->blas_share > 0 ? plan->blas_share : 1,
                  atomic_fetch_add_explicit(&next_run_id, 1, memory_order_relaxed), user_data,
                  NULL, args, results, d);
}

av_code av_run_callee(const av_frame *caller, const av_func_plan *fn, av_slot *args,
                      av_slot *results, av_diag *d) {
  return run_func(caller->plan, fn, caller->device_index, caller->mem_device, caller->depth + 1,
                  caller->pool, caller->blas_share, caller->run_id, caller->user_data, caller, args,
                  results, d);
}

static av_code run_func(const av_plan *plan, const av_func_plan *fn, int device_index,
                        int mem_device, int depth, struct av_thread_pool *pool, int blas_share,
                        int64_t run_id, const av_user_data_list *user_data, const av_frame *caller,
                        av_slot *args, av_slot *results, av_diag *d) {
  if (depth > AV_MAX_CALL_DEPTH) {
    for (uint32_t i = 0; i < fn->body.nargs; i++) av_slot_release(&args[i]);
    return av_diag_set(d, AV_FAILED_PRECONDITION, "call depth exceeds %d calling @%s",
                       AV_MAX_CALL_DEPTH, fn->name);
  }
  av_frame f;
  /* small frames (called functions in loop bodies) live on the stack */
  av_slot small[64];
  f.slots = fn->nslots <= 64 ? memset(small, 0, fn->nslots * sizeof *small)
                             : calloc(fn->nslots, sizeof *f.slots);
  if (!f.slots) {
    for (uint32_t i = 0; i < fn->body.nargs; i++) av_slot_release(&args[i]);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory for the frame of @%s", fn->name);
  }
  f.fn = fn;
  f.plan = plan;
  f.pool = pool;
  f.cache = atomic_load_explicit(&((av_plan *)plan)->cache, memory_order_acquire);
  f.device_index = device_index;
  f.mem_device = mem_device;
  f.depth = depth;
  f.blas_share = blas_share;
  f.run_id = run_id;
  f.user_data = user_data;
  f.prof = f.prof_inner = NULL;
  f.prof_depth = 0;
  if (caller && caller->prof_inner) { /* a profiled caller: the callee's steps one level deeper */
    f.prof = caller->prof_inner;
    f.prof_depth = caller->prof_depth + 1;
  }
  uint32_t fp_saved = 0;
  if (depth == 0) {
    fp_saved = av_fp_enter(plan->denormals); /* restored before returning to the caller */
    f.prof = av_prof_run_begin(atomic_load_explicit(&((av_plan *)plan)->profiler,
                                                    memory_order_acquire),
                               plan, fn, device_index);
  }
  if (depth == 0) av_thread_pool_hot(pool, true);
  av_code c = av_run_block(&fn->body, &f, args, results, d);
  if (depth == 0) av_thread_pool_hot(pool, false);
  if (depth == 0) av_prof_run_end(f.prof);
  if (c == AV_OK) {
    /* Results must own their bytes: the frame's borrowed data does not outlive the call. */
    for (uint32_t i = 0; i < fn->body.nresults && c == AV_OK; i++) {
      if (!results[i].st && results[i].data) {
        av_slot owned;
        c = av_slot_share(&results[i], fn->types[fn->body.results[i]].nbytes, &owned, d);
        results[i] = owned;
      }
    }
    if (c != AV_OK)
      for (uint32_t i = 0; i < fn->body.nresults; i++) av_slot_release(&results[i]);
  }
  for (uint32_t i = 0; i < fn->nslots; i++) av_slot_release(&f.slots[i]);
  if (f.slots != small) free(f.slots);
  if (depth == 0) av_fp_leave(fp_saved);
  if (c != AV_OK) av_diag_set(d, c, "  in @%s", fn->name);
  return c;
}
