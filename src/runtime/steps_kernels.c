#include "runtime/steps_kernels.h"

#include "runtime/thread_pool.h"

#include <stdlib.h>
#include <string.h>

enum { SMALL = 8 };

/* Runs a region body on single elements. The elements are borrowed into the block's argument
 * slots for the duration of the call; results are copied out. Calls on one frame must not
 * overlap (kernels call region bodies from one thread). */
av_code av_region_scalar_call(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  av_region_ctx *rc = ctx;
  if (rc->prog) return av_scalar_prog_run(rc->prog, rc->f, in, out, d);
  const av_block_plan *b = rc->block;
  av_slot small_args[SMALL], small_res[SMALL];
  av_slot *args = b->nargs <= SMALL ? small_args : calloc(b->nargs, sizeof *args);
  av_slot *res = b->nresults <= SMALL ? small_res : calloc(b->nresults, sizeof *res);
  av_code c = AV_OK;
  if (!args || !res) {
    c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < b->nargs; i++) {
    args[i].data = (void *)in[i];
    args[i].st = NULL;
  }
  c = av_run_block(b, rc->f, args, res, d);
  if (c == AV_OK) {
    for (uint32_t i = 0; i < b->nresults; i++) {
      size_t nb = rc->f->fn->types[b->results[i]].nbytes;
      if (res[i].data && nb) memcpy(out[i], res[i].data, nb);
      av_slot_release(&res[i]);
    }
  }
done:
  if (args != small_args) free(args);
  if (res != small_res) free(res);
  return c;
}

static av_code run_map(const av_scalar_fn *fn, const av_view *in, uint32_t nin, av_view *out,
                       av_diag *d) {
  int64_t n = av_view_num_elements(out);
  size_t osz = av_dtype_size(out->dtype);
  const void *small[SMALL];
  const void **ptrs = nin <= SMALL ? small : calloc(nin, sizeof *ptrs);
  if (!ptrs) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  av_code c = AV_OK;
  for (int64_t i = 0; i < n && c == AV_OK; i++) {
    for (uint32_t k = 0; k < nin; k++)
      ptrs[k] = (const char *)in[k].data + (size_t)i * av_dtype_size(in[k].dtype);
    void *o = (char *)out->data + (size_t)i * osz;
    c = fn->call(fn->ctx, ptrs, &o, d);
  }
  if (ptrs != small) free(ptrs);
  return c;
}

static void make_view(const av_frame *f, int32_t slot, av_view *v) {
  const av_slot_type *t = &f->fn->types[slot];
  v->data = f->slots[slot].data;
  v->dtype = t->dtype;
  v->rank = t->rank;
  v->dims = t->dims;
}

/* Whether no other input of `s` names input k's slot. */
static bool input_used_once(const av_step *s, uint32_t k) {
  for (uint32_t j = 0; j < s->nin; j++)
    if (j != k && s->in[j] == s->in[k]) return false;
  return true;
}

av_code av_step_kernel(const av_step *s, av_frame *f, av_diag *d) {
  const av_kernel_params *kp = s->params;
  av_kernel_params p = *kp;
  av_region_ctx rc[2] = {{f, kp->regions[0], kp->progs[0]}, {f, kp->regions[1], kp->progs[1]}};
  av_scalar_fn *fns[2] = {NULL, NULL};
  switch (p.kind) {
    case AV_K_REDUCE:
      fns[0] = &p.u.reduce.body;
      p.u.reduce.pool = f->pool;
      break;
    case AV_K_REDUCE_WINDOW:
      fns[0] = &p.u.reduce_window.body;
      p.u.reduce_window.pool = f->pool;
      break;
    case AV_K_SELECT_AND_SCATTER:
      fns[0] = &p.u.sas.select;
      fns[1] = &p.u.sas.scatter;
      break;
    case AV_K_SCATTER:
      fns[0] = &p.u.scatter.update;
      p.u.scatter.pool = f->pool;
      break;
    case AV_K_SORT:
      fns[0] = &p.u.sort.comparator;
      p.u.sort.pool = f->pool;
      break;
    case AV_K_MAP: fns[0] = &p.u.map; break;
    default: break;
  }
  for (int r = 0; r < 2; r++) {
    if (!fns[r]) continue;
    fns[r]->call = av_region_scalar_call;
    fns[r]->ctx = &rc[r];
  }
  av_view small[2 * SMALL];
  size_t nviews = (size_t)s->nin + s->nout;
  av_view *v = nviews <= 2 * SMALL ? small : calloc(nviews, sizeof *v);
  if (!v) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  av_view *in = v, *out = v + s->nin;
  for (uint32_t i = 0; i < s->nin; i++) make_view(f, s->in[i], &in[i]);
  av_code c = AV_OK;
  for (uint32_t k = 0; k < s->nout && c == AV_OK; k++) {
    /* scatter's result k starts as operand k: it updates a dying operand in place (a donated
     * buffer, a loop's carried array), as XLA does; the kernel skips the copy then. Not when
     * the operand is also read as another input (the indices or the updates). */
    bool in_place = p.kind == AV_K_SCATTER && k < (uint32_t)p.u.scatter.ninputs &&
                    input_used_once(s, k);
    c = in_place ? av_step_alloc_out_reuse(s, f, k, k, d) : av_step_alloc_out(s, f, k, d);
    if (c == AV_OK) make_view(f, s->out[k], &out[k]);
  }
  if (c == AV_OK) {
    switch (p.kind) {
      case AV_K_REDUCE: {
        int n = p.u.reduce.ninputs;
        c = av_kernel_reduce(&p.u.reduce, in, in + n, out, d);
        break;
      }
      case AV_K_REDUCE_WINDOW: {
        int n = p.u.reduce_window.ninputs;
        c = av_kernel_reduce_window(&p.u.reduce_window, in, in + n, out, d);
        break;
      }
      case AV_K_SELECT_AND_SCATTER:
        c = av_kernel_select_and_scatter(&p.u.sas, &in[0], &in[1], &in[2], out, d);
        break;
      case AV_K_DOT:
        av_thread_pool_prepare_blas(f->pool, f->blas_share);
        p.u.dot.pool = f->pool;
        c = av_kernel_dot_general(&p.u.dot, &in[0], &in[1], out, d);
        break;
      case AV_K_CONV:
        p.u.conv.pool = f->pool;
        p.u.conv.blas_share = f->blas_share;
        c = av_kernel_convolution(&p.u.conv, &in[0], &in[1], out, d);
        break;
      case AV_K_GATHER:
        p.u.gather.pool = f->pool;
        c = av_kernel_gather(&p.u.gather, &in[0], &in[1], out, d);
        break;
      case AV_K_SCATTER: {
        int n = p.u.scatter.ninputs;
        c = av_kernel_scatter(&p.u.scatter, in, &in[n], &in[n + 1], out, d);
        break;
      }
      case AV_K_SORT: c = av_kernel_sort(&p.u.sort, in, out, d); break;
      case AV_K_FFT:
        p.u.fft.pool = f->pool;
        c = av_kernel_fft(&p.u.fft, &in[0], out, d);
        break;
      case AV_K_CHOLESKY:
        p.u.cholesky.pool = f->pool;
        c = av_kernel_cholesky(&p.u.cholesky, &in[0], out, d);
        break;
      case AV_K_TRIANGULAR_SOLVE:
        p.u.tsolve.pool = f->pool;
        c = av_kernel_triangular_solve(&p.u.tsolve, &in[0], &in[1], out, d);
        break;
      case AV_K_RNG_BIT_GENERATOR:
        c = av_kernel_rng_bit_generator(&p.u.rbg, &in[0], &out[0], &out[1], d);
        break;
      case AV_K_RNG: c = av_kernel_rng(&p.u.rng, &in[0], &in[1], out, d); break;
      case AV_K_QR: c = av_kernel_qr(&in[0], &out[0], &out[1], d); break;
      case AV_K_HOUSEHOLDER_PRODUCT: c = av_kernel_householder_product(&in[0], &in[1], &out[0], d); break;
      case AV_K_BATCH_NORM: c = av_kernel_batch_norm(&p.u.batch_norm, in, out, d); break;
      case AV_K_TOP_K: c = av_kernel_top_k(p.u.top_k, &in[0], &out[0], &out[1], d); break;
      case AV_K_MAP: c = run_map(&p.u.map, in, s->nin, &out[0], d); break;
    }
  }
  if (v != small) free(v);
  return c;
}
