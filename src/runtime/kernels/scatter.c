/* scatter: outputs = copies of inputs; then the updates are walked row-major. For each
 * update scatter position the window start in the operand is computed (index vector +
 * batching coordinates, unclamped); if the whole update window does not fit in the operand,
 * that window is skipped. Otherwise each update element is combined into its operand
 * element with the update computation. */
#include "runtime/kernels/scatter.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/reduce_elem.h"
#include "runtime/kernels/window_starts.h"
#include "runtime/thread_pool.h"

static av_code bad(av_diag *d, const char *what) {
  return av_diag_set(d, AV_INVALID_ARGUMENT, "scatter: %s", what);
}

/* How the common single-input bodies combine a contiguous run of n update elements into n
 * operand elements at once: replace (the body returns the update), or the body's one
 * elementwise op run over the whole run - the very loop the body would run per element, so
 * the results are the same bit for bit. */
typedef struct run_combiner {
  bool replace;
  av_ew_kernel ew;
} run_combiner;

static bool combiner_prepare(const av_scatter_params *p, av_dtype t, run_combiner *c) {
  memset(c, 0, sizeof *c);
  if (p->ninputs != 1) return false;
  if (p->update_is_replace) return c->replace = true;
  if (p->update.simple == AV_OP_UNKNOWN || p->update.simple == AV_OP_COMPARE) return false;
  return av_ew_prepare(p->update.simple, t, t, AV_CMP_EQ, AV_CMP_DEFAULT, &c->ew);
}

/* dst[i] = body(dst[i], upd[i]) for i < n; the elementwise loops read element i before
 * writing it, so dst may be their first operand and their result. */
static void combine_run(const run_combiner *c, size_t es, void *dst, const void *upd, int64_t n) {
  if (c->replace) {
    memmove(dst, upd, (size_t)n * es);
    return;
  }
  const void *in[AV_EW_MAX_IN] = {dst, upd, NULL};
  av_ew_run(&c->ew, in, dst, n);
}

/* Parallel copy of the operand into the result (chunks of kCopyGrain bytes). */
enum { kCopyGrain = 1 << 18 };
typedef struct copy_ctx {
  char *dst;
  const char *src;
} copy_ctx;

static void copy_chunk(void *ctx, int64_t begin, int64_t end) {
  copy_ctx *c = ctx;
  memcpy(c->dst + begin, c->src + begin, (size_t)(end - begin));
}

av_code av_kernel_scatter(const av_scatter_params *p, const av_view *inputs,
                          const av_view *scatter_indices, const av_view *updates,
                          av_view *outputs, av_diag *d) {
  int n = p->ninputs;
  if (n < 1 || n > AV_KMAX_VARIADIC) return bad(d, "bad number of inputs");
  const av_view *op0 = &inputs[0], *up0 = &updates[0], *si = scatter_indices;
  int orank = op0->rank, irank = si->rank, urank = up0->rank;
  if (orank < 0 || orank > AV_KMAX_RANK || irank < 0 || irank > AV_KMAX_RANK || urank < 0 ||
      urank > AV_KMAX_RANK)
    return bad(d, "rank out of range");
  if (p->n_update_window_dims < 0 || p->n_inserted_window_dims < 0 || p->n_input_batching_dims < 0 ||
      p->n_scatter_indices_batching_dims != p->n_input_batching_dims ||
      p->n_scatter_dims_to_operand_dims < 0 || p->n_update_window_dims > AV_KMAX_RANK ||
      p->n_inserted_window_dims > AV_KMAX_RANK || p->n_input_batching_dims > AV_KMAX_RANK ||
      p->n_scatter_dims_to_operand_dims > AV_KMAX_RANK)
    return bad(d, "bad dimension-number counts");
  if (!av_dtype_is_int(si->dtype)) return bad(d, "scatter_indices must be integers");
  size_t es[AV_KMAX_VARIADIC];
  for (int k = 0; k < n; k++) {
    if (inputs[k].rank != orank || outputs[k].rank != orank || updates[k].rank != urank ||
        outputs[k].dtype != inputs[k].dtype || updates[k].dtype != inputs[k].dtype)
      return bad(d, "inputs/updates/results disagree in rank or type");
    for (int i = 0; i < orank; i++)
      if (inputs[k].dims[i] != op0->dims[i] || outputs[k].dims[i] != op0->dims[i]) return bad(d, "input shapes differ");
    for (int i = 0; i < urank; i++)
      if (updates[k].dims[i] != up0->dims[i]) return bad(d, "update shapes differ");
    es[k] = av_dtype_size(inputs[k].dtype);
    if (es[k] > 16) return bad(d, "element too large");
  }
  int64_t ivd = p->index_vector_dim;
  if (ivd < 0 || ivd > irank) return bad(d, "index_vector_dim out of range");
  int64_t nidx = ivd < irank ? si->dims[ivd] : 1;
  if (nidx != p->n_scatter_dims_to_operand_dims) return bad(d, "scatter_dims_to_operand_dims size != index vector size");
  int nsb = irank - (ivd < irank ? 1 : 0); /* scatter batch rank */
  if (urank != nsb + p->n_update_window_dims) return bad(d, "updates rank mismatch");
  if (p->n_update_window_dims + p->n_inserted_window_dims + p->n_input_batching_dims != orank)
    return bad(d, "update_window_dims + inserted_window_dims + input_batching_dims != operand rank");
  for (int i = 0; i < p->n_inserted_window_dims; i++) {
    int64_t c = p->inserted_window_dims[i];
    if (c < 0 || c >= orank || av_kel_dims_have(p->input_batching_dims, p->n_input_batching_dims, c)) return bad(d, "bad inserted_window_dims");
  }
  for (int i = 0; i < p->n_scatter_dims_to_operand_dims; i++) {
    int64_t c = p->scatter_dims_to_operand_dims[i];
    if (c < 0 || c >= orank || av_kel_dims_have(p->input_batching_dims, p->n_input_batching_dims, c))
      return bad(d, "bad scatter_dims_to_operand_dims");
  }
  int bpos[AV_KMAX_RANK];
  for (int i = 0; i < orank; i++) bpos[i] = -1;
  for (int i = 0; i < p->n_input_batching_dims; i++) {
    int64_t od = p->input_batching_dims[i], sd = p->scatter_indices_batching_dims[i];
    if (od < 0 || od >= orank || sd < 0 || sd >= irank || sd == ivd || bpos[od] >= 0 ||
        op0->dims[od] != si->dims[sd])
      return bad(d, "bad input_batching_dims / scatter_indices_batching_dims");
    bpos[od] = (int)(sd < ivd ? sd : sd - 1);
  }
  bool is_win[AV_KMAX_RANK] = {0};
  int win_od[AV_KMAX_RANK];
  int64_t wsize[AV_KMAX_RANK]; /* window extent per operand dim */
  for (int i = 0; i < orank; i++) wsize[i] = 1;
  for (int i = 0, od = 0; i < p->n_update_window_dims; i++) {
    while (od < orank && (av_kel_dims_have(p->inserted_window_dims, p->n_inserted_window_dims, od) ||
                          av_kel_dims_have(p->input_batching_dims, p->n_input_batching_dims, od)))
      od++;
    int64_t ud = p->update_window_dims[i];
    if (ud < 0 || ud >= urank || is_win[ud] || (i > 0 && ud <= p->update_window_dims[i - 1]))
      return bad(d, "update_window_dims must be sorted, unique and in range");
    if (up0->dims[ud] > op0->dims[od]) return bad(d, "update window larger than operand");
    is_win[ud] = true;
    win_od[ud] = od;
    wsize[od] = up0->dims[ud];
    od++;
  }
  int64_t sbdims[AV_KMAX_RANK];
  for (int i = 0, k = 0; i < irank; i++)
    if (i != ivd) sbdims[k++] = si->dims[i];
  for (int ud = 0, k = 0; ud < urank; ud++)
    if (!is_win[ud] && up0->dims[ud] != sbdims[k++]) return bad(d, "update scatter dimension mismatch");
  if (!inputs[0].data && !outputs[0].data) return AV_OK; /* shapes only (av_scatter_check) */

  /* outputs start as the inputs */
  for (int k = 0; k < n; k++)
    if (outputs[k].data != inputs[k].data) {
      size_t bytes = (size_t)av_view_num_elements(op0) * es[k];
      const char *a = inputs[k].data;
      char *b = outputs[k].data;
      if (a + bytes <= b || b + bytes <= a) {
        copy_ctx cc = {b, a};
        av_parallel_for(p->pool, (int64_t)bytes, kCopyGrain, kCopyGrain, copy_chunk, &cc);
      } else {
        memmove(b, a, bytes);
      }
    }
  int64_t un = av_view_num_elements(up0);
  if (un == 0) return AV_OK;

  int64_t ostr[AV_KMAX_RANK], sistr[AV_KMAX_RANK];
  for (int i = orank - 1, s = 1; i >= 0; i--) {
    ostr[i] = s;
    s *= op0->dims[i];
  }
  for (int i = irank - 1, s = 1; i >= 0; i--) {
    sistr[i] = s;
    s *= si->dims[i];
  }
  int64_t vstride = ivd < irank ? sistr[ivd] : 0;
  size_t ies = av_dtype_size(si->dtype);
  run_combiner comb;
  bool fast = combiner_prepare(p, op0->dtype, &comb);
  if (!fast && !p->update.call) return bad(d, "no update computation");

  /* window start (operand element offset) of every scatter-batch position, -1: skipped */
  int64_t nsbt = 1;
  for (int i = 0; i < nsb; i++) nsbt *= sbdims[i];
  int64_t *base = malloc((size_t)(nsbt ? nsbt : 1) * sizeof *base);
  if (!base) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "scatter: out of memory");
  /* one index per scatter position, no batching dims (x.at[idx]): index b is element b; the
   * other window dims start at 0 */
  bool scalar_index = p->n_scatter_dims_to_operand_dims == 1 && p->n_input_batching_dims == 0;
  if (scalar_index) {
    int64_t od = p->scatter_dims_to_operand_dims[0], hi = op0->dims[od] - wsize[od];
    for (int k = 0; k < orank; k++)
      if (op0->dims[k] < wsize[k]) hi = -1; /* an empty operand dim: every window is out */
    const char *sd = si->data;
    for (int64_t b = 0; b < nsbt; b++) {
      int64_t v = av_kel_index_at(si->dtype, sd + b * (int64_t)ies);
      base[b] = v < 0 || v > hi ? -1 : v * ostr[od];
    }
  }
  /* each index names its own operand dim (as the spec asks; the general loop below also
   * serves programs that break it): window_starts.h (a batching coordinate always fits: its
   * window is one element) */
  bool distinct = !scalar_index;
  for (int j = 0; distinct && j < p->n_scatter_dims_to_operand_dims; j++)
    for (int i = 0; i < j; i++)
      if (p->scatter_dims_to_operand_dims[i] == p->scatter_dims_to_operand_dims[j]) distinct = false;
  for (int k = 0; distinct && k < orank; k++)
    if (op0->dims[k] < wsize[k]) distinct = false; /* an empty operand dim: the general loop */
  if (distinct) {
    int64_t hi[AV_KMAX_RANK];
    for (int j = 0; j < p->n_scatter_dims_to_operand_dims; j++)
      hi[j] = op0->dims[p->scatter_dims_to_operand_dims[j]] - wsize[p->scatter_dims_to_operand_dims[j]];
    av_window_starts w = {si->data, si->dtype, irank, si->dims, ivd, p->n_scatter_dims_to_operand_dims,
                          p->scatter_dims_to_operand_dims, hi, orank, ostr, bpos, true};
    av_window_starts_fill(&w, base);
  }
  if (!scalar_index && !distinct) {
    int64_t bidx[AV_KMAX_RANK] = {0};
    for (int64_t b = 0; b < nsbt; b++) {
      int64_t soff = 0;
      for (int i = 0, k = 0; i < irank; i++)
        if (i != ivd) soff += bidx[k++] * sistr[i];
      int64_t start[AV_KMAX_RANK];
      for (int od = 0; od < orank; od++) start[od] = 0;
      for (int j = 0; j < p->n_scatter_dims_to_operand_dims; j++) {
        int64_t v = av_kel_index_at(si->dtype, (const char *)si->data + (soff + j * vstride) * (int64_t)ies);
        /* keep far out-of-range indices far out of range without overflowing below */
        if (v > ((int64_t)1 << 48)) v = (int64_t)1 << 48;
        if (v < -((int64_t)1 << 48)) v = -((int64_t)1 << 48);
        start[p->scatter_dims_to_operand_dims[j]] += v;
      }
      int64_t off = 0;
      for (int od = 0; od < orank; od++) {
        if (bpos[od] >= 0) start[od] += bidx[bpos[od]];
        if (start[od] < 0 || start[od] > op0->dims[od] - wsize[od]) off = -1;
        if (off >= 0) off += start[od] * ostr[od];
      }
      base[b] = off;
      for (int i = nsb - 1; i >= 0; i--) {
        if (++bidx[i] < sbdims[i]) break;
        bidx[i] = 0;
      }
    }
  }
  /* walk the updates row-major in runs of the innermost dimension: per update dim, the step
   * of the scatter-batch position (bstr) and of the operand offset within the window (wstep) */
  int64_t bstr[AV_KMAX_RANK], wstep[AV_KMAX_RANK];
  {
    int64_t sacc = 1;
    for (int ud = urank - 1; ud >= 0; ud--) {
      bstr[ud] = is_win[ud] ? 0 : sacc;
      if (!is_win[ud]) sacc *= up0->dims[ud];
      wstep[ud] = is_win[ud] ? ostr[win_od[ud]] : 0;
    }
  }
  const void *args[2 * AV_KMAX_VARIADIC];
  void *res[AV_KMAX_VARIADIC];
  unsigned char tmp[AV_KMAX_VARIADIC][16];
  for (int k = 0; k < n; k++) res[k] = tmp[k];
  av_code rc = AV_OK;
  /* Common JAX form (x.at[idx].add(rows)): the update's window dims trail its batch dims and
   * the window is one contiguous operand range, so each batch position is one run of
   * `wn` elements on both sides. */
  if (fast && urank > 0) {
    bool trailing = true, contiguous = true;
    int64_t wn = 1;
    for (int ud = urank - 1; ud >= 0; ud--) {
      if (!is_win[ud]) {
        for (int k = ud; k >= 0; k--)
          if (is_win[k]) trailing = false;
        break;
      }
      if (wstep[ud] != wn && up0->dims[ud] != 1) contiguous = false;
      wn *= up0->dims[ud];
    }
    if (trailing && contiguous && wn > 0) {
      char *out = outputs[0].data;
      const char *upd = updates[0].data;
      int64_t e = (int64_t)es[0];
      if (comb.replace && wn * e == 4) { /* four bytes per position (x.at[i, j].set of a 32-bit
                                             * element, or a row of four bytes) */
        for (int64_t b = 0; b < nsbt; b++)
          if (base[b] >= 0) memcpy(out + base[b] * e, upd + b * 4, 4); /* base: in elements */
        goto done;
      }
      for (int64_t b = 0; b < nsbt; b++) {
        if (b + 8 < nsbt && base[b + 8] >= 0) __builtin_prefetch(out + base[b + 8] * e, 1);
        if (base[b] < 0) continue;
        combine_run(&comb, es[0], out + base[b] * e, upd + b * wn * e, wn);
      }
      goto done;
    }
  }
  int last = urank - 1;
  int64_t inner = urank ? up0->dims[last] : 1;
  int64_t istep_b = urank ? bstr[last] : 0, istep_w = urank ? wstep[last] : 0;
  /* a run is contiguous in the operand when it moves along a window dim with step 1 */
  bool run_contig = urank && is_win[last] && istep_w == 1;
  int64_t uidx[AV_KMAX_RANK] = {0};
  int64_t blin = 0, wsum = 0;
  for (int64_t u = 0; u < un; u += inner) {
    if (fast && run_contig) {
      if (base[blin] >= 0) {
        int64_t off = base[blin] + wsum;
        combine_run(&comb, es[0], (char *)outputs[0].data + off * (int64_t)es[0],
                    (const char *)updates[0].data + u * (int64_t)es[0], inner);
      }
      goto next_run;
    }
    for (int64_t j = 0; j < inner; j++) {
      int64_t b0 = base[blin + j * istep_b];
      if (b0 < 0) continue;
      int64_t off = b0 + wsum + j * istep_w, ue = u + j;
      if (fast) {
        combine_run(&comb, es[0], (char *)outputs[0].data + off * (int64_t)es[0],
                    (const char *)updates[0].data + ue * (int64_t)es[0], 1);
        continue;
      }
      if (!p->update.call) {
        rc = bad(d, "no update computation");
        goto done;
      }
      for (int k = 0; k < n; k++) {
        args[k] = (char *)outputs[k].data + off * (int64_t)es[k];
        args[n + k] = (const char *)updates[k].data + ue * (int64_t)es[k];
      }
      av_code c = p->update.call(p->update.ctx, args, res, d);
      if (c) {
        rc = c;
        goto done;
      }
      for (int k = 0; k < n; k++) memcpy((char *)outputs[k].data + off * (int64_t)es[k], tmp[k], es[k]);
    }
  next_run:
    for (int k = last - 1; k >= 0; k--) {
      uidx[k]++;
      blin += bstr[k];
      wsum += wstep[k];
      if (uidx[k] < up0->dims[k]) break;
      blin -= bstr[k] * up0->dims[k];
      wsum -= wstep[k] * up0->dims[k];
      uidx[k] = 0;
    }
  }
done:
  free(base);
  return rc;
}

av_code av_scatter_check(const av_scatter_params *p, const av_view *inputs,
                         const av_view *scatter_indices, const av_view *updates, av_diag *d) {
  if (p->ninputs < 1 || p->ninputs > AV_KMAX_VARIADIC) return bad(d, "bad number of inputs");
  av_view outputs[AV_KMAX_VARIADIC];
  for (int k = 0; k < p->ninputs; k++) outputs[k] = inputs[k]; /* same shapes, no data */
  return av_kernel_scatter(p, inputs, scatter_indices, updates, outputs, d);
}
