/* gather: first the operand offset of every slice start (one per batch position: the start
 * index vector, clamped so the slice fits, plus the batching coordinates), then the result
 * is walked row-major, each element read at slice start + offset within the slice. */
#include "runtime/kernels/gather.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/reduce_elem.h"
#include "runtime/kernels/window_starts.h"
#include "runtime/thread_pool.h"

static av_code bad(av_diag *d, const char *what) {
  return av_diag_set(d, AV_INVALID_ARGUMENT, "gather: %s", what);
}

/* Rows [begin, end) of a row gather: row b copies `bytes` from operand element base[b]. */
typedef struct row_copy_ctx {
  char *dst;
  const char *src;
  const int64_t *base;
  int64_t bytes;
  size_t es;
} row_copy_ctx;

/* Copies of a size known here become plain loads and stores. */
#define COPY_ROWS_OF(n)                                                                 \
  for (int64_t b = begin; b < end; b++) memcpy(c->dst + b * (n), c->src + c->base[b] * es, (n))

static void copy_rows(void *ctx, int64_t begin, int64_t end) {
  const row_copy_ctx *c = ctx;
  int64_t es = (int64_t)c->es;
  switch (c->bytes) {
    case 1: COPY_ROWS_OF(1); break;
    case 2: COPY_ROWS_OF(2); break;
    case 4: COPY_ROWS_OF(4); break;
    case 8: COPY_ROWS_OF(8); break;
    case 16: COPY_ROWS_OF(16); break;
    default: COPY_ROWS_OF(c->bytes); break;
  }
}

/* n elements of `es` bytes from src + offset(j) (j = 0..n-1, offset(j) = base[j * bstride] +
 * j * step, in elements) to dst, contiguous. */
#define GATHER_RUN_OF(es)                                                                    \
  for (int64_t j = 0; j < n; j++)                                                            \
    memcpy(dst + j * (es), src + (base[j * bstride] + osum + j * step) * (es), (es))

static void gather_run(char *dst, const char *src, const int64_t *base, int64_t bstride,
                       int64_t osum, int64_t step, int64_t n, size_t es) {
  switch (es) {
    case 1: GATHER_RUN_OF(1); break;
    case 2: GATHER_RUN_OF(2); break;
    case 4: GATHER_RUN_OF(4); break;
    case 8: GATHER_RUN_OF(8); break;
    case 16: GATHER_RUN_OF(16); break;
    default: GATHER_RUN_OF((int64_t)es); break;
  }
}

av_code av_kernel_gather(const av_gather_params *p, const av_view *operand,
                         const av_view *start_indices, av_view *out, av_diag *d) {
  int orank = operand->rank, irank = start_indices->rank, rrank = out->rank;
  if (orank < 0 || orank > AV_KMAX_RANK || irank < 0 || irank > AV_KMAX_RANK || rrank < 0 ||
      rrank > AV_KMAX_RANK)
    return bad(d, "rank out of range");
  if (p->n_offset_dims < 0 || p->n_collapsed_slice_dims < 0 || p->n_operand_batching_dims < 0 ||
      p->n_start_index_map < 0 || p->n_start_indices_batching_dims != p->n_operand_batching_dims ||
      p->n_offset_dims > AV_KMAX_RANK || p->n_collapsed_slice_dims > AV_KMAX_RANK ||
      p->n_operand_batching_dims > AV_KMAX_RANK || p->n_start_index_map > AV_KMAX_RANK)
    return bad(d, "bad dimension-number counts");
  if (out->dtype != operand->dtype) return bad(d, "result type differs from operand type");
  if (!av_dtype_is_int(start_indices->dtype)) return bad(d, "start_indices must be integers");
  int64_t ivd = p->index_vector_dim;
  if (ivd < 0 || ivd > irank) return bad(d, "index_vector_dim out of range");
  int64_t nidx = ivd < irank ? start_indices->dims[ivd] : 1;
  if (nidx != p->n_start_index_map) return bad(d, "start_index_map size != index vector size");
  int nbatch = irank - (ivd < irank ? 1 : 0);
  if (rrank != nbatch + p->n_offset_dims) return bad(d, "result rank mismatch");
  if (p->n_offset_dims + p->n_collapsed_slice_dims + p->n_operand_batching_dims != orank)
    return bad(d, "offset_dims + collapsed_slice_dims + operand_batching_dims != operand rank");
  for (int i = 0; i < orank; i++)
    if (p->slice_sizes[i] < 0 || p->slice_sizes[i] > operand->dims[i]) return bad(d, "slice size out of range");
  for (int i = 0; i < p->n_collapsed_slice_dims; i++) {
    int64_t c = p->collapsed_slice_dims[i];
    if (c < 0 || c >= orank || p->slice_sizes[c] > 1 || av_kel_dims_have(p->operand_batching_dims, p->n_operand_batching_dims, c))
      return bad(d, "bad collapsed_slice_dims");
  }
  for (int i = 0; i < p->n_start_index_map; i++)
    if (p->start_index_map[i] < 0 || p->start_index_map[i] >= orank ||
        av_kel_dims_have(p->operand_batching_dims, p->n_operand_batching_dims, p->start_index_map[i]))
      return bad(d, "bad start_index_map");
  /* batch coordinate (position in the batch index) for each operand batching dim */
  int bpos[AV_KMAX_RANK];
  for (int i = 0; i < orank; i++) bpos[i] = -1;
  for (int i = 0; i < p->n_operand_batching_dims; i++) {
    int64_t od = p->operand_batching_dims[i], sd = p->start_indices_batching_dims[i];
    if (od < 0 || od >= orank || sd < 0 || sd >= irank || sd == ivd || p->slice_sizes[od] > 1 ||
        operand->dims[od] != start_indices->dims[sd] || bpos[od] >= 0)
      return bad(d, "bad operand_batching_dims / start_indices_batching_dims");
    bpos[od] = (int)(sd < ivd ? sd : sd - 1);
  }
  /* operand dim of each offset dim, and the result dims */
  int off_od[AV_KMAX_RANK];
  bool is_off[AV_KMAX_RANK] = {0};
  for (int i = 0, od = 0; i < p->n_offset_dims; i++) {
    while (od < orank && (av_kel_dims_have(p->collapsed_slice_dims, p->n_collapsed_slice_dims, od) ||
                          av_kel_dims_have(p->operand_batching_dims, p->n_operand_batching_dims, od)))
      od++;
    int64_t rd = p->offset_dims[i];
    if (rd < 0 || rd >= rrank || is_off[rd] || (i > 0 && rd <= p->offset_dims[i - 1]))
      return bad(d, "offset_dims must be sorted, unique and in range");
    is_off[rd] = true;
    off_od[rd] = od;
    if (out->dims[rd] != p->slice_sizes[od]) return bad(d, "result offset dimension != slice size");
    od++;
  }
  int64_t bdims[AV_KMAX_RANK]; /* batch dims of start_indices (without index_vector_dim) */
  for (int i = 0, k = 0; i < irank; i++)
    if (i != ivd) bdims[k++] = start_indices->dims[i];
  for (int rd = 0, k = 0; rd < rrank; rd++)
    if (!is_off[rd] && out->dims[rd] != bdims[k++]) return bad(d, "result batch dimension mismatch");
  if (!operand->data && !out->data) return AV_OK; /* shapes only (av_gather_check) */

  int64_t ostr[AV_KMAX_RANK];
  for (int i = orank - 1, s = 1; i >= 0; i--) {
    ostr[i] = s;
    s *= operand->dims[i];
  }
  int64_t nb = 1;
  for (int i = 0; i < nbatch; i++) nb *= bdims[i];
  int64_t rn = av_view_num_elements(out);
  if (rn == 0) return AV_OK;
  int64_t *base = malloc((size_t)(nb ? nb : 1) * sizeof *base);
  if (!base) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "gather: out of memory");
  /* slice starts */
  size_t ies = av_dtype_size(start_indices->dtype);
  /* one index per batch position, no batching dims (x[idx]): index b is element b */
  bool scalar_index = p->n_start_index_map == 1 && p->n_operand_batching_dims == 0;
  if (scalar_index) {
    int64_t od = p->start_index_map[0], hi = operand->dims[od] - p->slice_sizes[od];
    const char *si = start_indices->data;
    for (int64_t b = 0; b < nb; b++) {
      int64_t v = av_kel_index_at(start_indices->dtype, si + b * (int64_t)ies);
      v = v < 0 ? 0 : (v > hi ? hi : v);
      base[b] = v * ostr[od];
    }
  }
  if (!scalar_index) {
    int64_t hi[AV_KMAX_RANK];
    for (int j = 0; j < p->n_start_index_map; j++)
      hi[j] = operand->dims[p->start_index_map[j]] - p->slice_sizes[p->start_index_map[j]];
    av_window_starts w = {start_indices->data, start_indices->dtype, irank, start_indices->dims,
                          ivd, p->n_start_index_map, p->start_index_map, hi, orank, ostr, bpos,
                          false};
    av_window_starts_fill(&w, base);
  }
  size_t es = av_dtype_size(out->dtype);
  /* Common JAX form (x[idx]): the result's offset dims trail its batch dims and each slice
   * is one contiguous operand range, so batch position b is one copy of `sn` elements. */
  {
    bool trailing = true, contiguous = true;
    int64_t sn = 1;
    for (int rd = rrank - 1; rd >= 0; rd--) {
      if (!is_off[rd]) {
        for (int k = rd; k >= 0; k--)
          if (is_off[k]) trailing = false;
        break;
      }
      if (ostr[off_od[rd]] != sn && out->dims[rd] != 1) contiguous = false;
      sn *= out->dims[rd];
    }
    if (rrank > 0 && trailing && contiguous) {
      row_copy_ctx rc = {out->data, operand->data, base, sn * (int64_t)es, es};
      av_parallel_for(p->pool, nb, 64, 1024, copy_rows, &rc);
      free(base);
      return AV_OK;
    }
  }
  /* walk the result */
  int64_t bstr[AV_KMAX_RANK]; /* batch linear-index stride of each result batch dim */
  {
    int64_t s = 1;
    for (int rd = rrank - 1; rd >= 0; rd--)
      if (!is_off[rd]) {
        bstr[rd] = s;
        s *= out->dims[rd];
      } else {
        bstr[rd] = 0;
      }
  }
  int64_t rstep[AV_KMAX_RANK]; /* operand offset step of each result offset dim */
  for (int rd = 0; rd < rrank; rd++) rstep[rd] = is_off[rd] ? ostr[off_od[rd]] : 0;
  int64_t ridx[AV_KMAX_RANK] = {0};
  int64_t blin = 0, osum = 0;
  int last = rrank - 1;
  while (last > 0 && out->dims[last] == 1) last--; /* the innermost dim longer than 1 */
  int64_t inner = rrank ? out->dims[last] : 1;
  char *dst = out->data;
  const char *src = operand->data;
  for (int64_t done = 0; done < rn; done += inner) {
    if (rrank == 0) {
      memcpy(dst, src + base[0] * (int64_t)es, es);
      break;
    }
    if (is_off[last] && rstep[last] == 1) {
      memcpy(dst, src + (base[blin] + osum) * (int64_t)es, (size_t)inner * es);
    } else {
      gather_run(dst, src, base + blin, bstr[last], osum, rstep[last], inner, es);
    }
    dst += inner * (int64_t)es;
    for (int k = last - 1; k >= 0; k--) {
      ridx[k]++;
      blin += bstr[k];
      osum += rstep[k];
      if (ridx[k] < out->dims[k]) break;
      blin -= bstr[k] * out->dims[k];
      osum -= rstep[k] * out->dims[k];
      ridx[k] = 0;
    }
  }
  free(base);
  return AV_OK;
}

av_code av_gather_check(const av_gather_params *p, av_dtype dtype, int rank, const int64_t *dims,
                        av_dtype index_dtype, int index_rank, const int64_t *index_dims,
                        int out_rank, const int64_t *out_dims, av_diag *d) {
  av_view operand = {NULL, dtype, rank, dims}, indices = {NULL, index_dtype, index_rank, index_dims};
  av_view out = {NULL, dtype, out_rank, out_dims};
  return av_kernel_gather(p, &operand, &indices, &out, d);
}
