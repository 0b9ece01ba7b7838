/* Lowering of data movement ops into box copies with precomputed strides. */
#include <string.h>

#include "compiler/lower_internal.h"

typedef struct io {
  const av_slot_type *in, *out;
} io;

static bool unary_io(av_lower *c, const av_op *op, io *t) {
  if (op->noperands < 1 || op->nresults != 1)
    return AV_INVALID(c, "expected an operand and one result");
  t->in = av_tensor_of(c, op->operands[0], "operand");
  t->out = av_tensor_of(c, &op->results[0], "result");
  if (!t->in || !t->out) return false;
  if (t->in->dtype != t->out->dtype) return AV_INVALID(c, "operand and result element types differ");
  return true;
}

static av_box_params *new_box(av_lower *c, const io *t) {
  av_box_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return NULL;
  p->esize = av_dtype_size(t->out->dtype);
  p->box.rank = t->out->rank;
  for (int i = 0; i < t->out->rank; i++) p->box.dims[i] = t->out->dims[i];
  av_row_major_strides(t->out->rank, t->out->dims, p->box.dstride);
  return p;
}

static bool lower_broadcast_in_dim(av_lower *c, const av_op *op, const int64_t *dims, size_t n) {
  io t;
  if (!unary_io(c, op, &t)) return false;
  if (n != (size_t)t.in->rank) return AV_INVALID(c, "broadcast_dimensions has %zu entries for rank %d", n, t.in->rank);
  av_box_params *p = new_box(c, &t);
  if (!p) return false;
  int64_t istr[AV_BOX_MAX_RANK];
  av_row_major_strides(t.in->rank, t.in->dims, istr);
  for (int k = 0; k < t.out->rank; k++) p->box.sstride[k] = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t dk = dims[i];
    if (dk < 0 || dk >= t.out->rank) return AV_INVALID(c, "broadcast dimension %lld out of range", (long long)dk);
    for (size_t j = 0; j < i; j++)
      if (dims[j] == dk) return AV_INVALID(c, "repeated broadcast dimension");
    if (t.in->dims[i] != 1 && t.in->dims[i] != t.out->dims[dk])
      return AV_INVALID(c, "operand dimension %zu (%lld) does not match result dimension %lld",
                        i, (long long)t.in->dims[i], (long long)t.out->dims[dk]);
    if (t.in->dims[i] != 1) p->box.sstride[dk] = istr[i];
  }
  /* only size-1 axes added, the others in order (keepdims' (b,t) -> (b,t,1)): the bytes are
   * the same, so the result shares them (fusion passes see through it) */
  bool same_order = t.in->nelems == t.out->nelems;
  for (size_t i = 0, prev = 0, seen = 0; i < n && same_order; i++) {
    if (t.in->dims[i] == 1) continue;
    same_order = !seen || (size_t)dims[i] > prev;
    prev = (size_t)dims[i];
    seen = 1;
  }
  if (same_order) return av_emit_op(c, av_step_alias, NULL) != NULL;
  return av_emit_op(c, av_step_box, p) != NULL;
}

static bool lower_transpose(av_lower *c, const av_op *op) {
  io t;
  if (!unary_io(c, op, &t)) return false;
  int64_t perm[AV_BOX_MAX_RANK];
  size_t n;
  if (!av_attr_get_ints(op, "permutation", perm, AV_BOX_MAX_RANK, &n) || n != (size_t)t.in->rank ||
      t.out->rank != t.in->rank)
    return AV_INVALID(c, "bad permutation");
  av_box_params *p = new_box(c, &t);
  if (!p) return false;
  int64_t istr[AV_BOX_MAX_RANK];
  av_row_major_strides(t.in->rank, t.in->dims, istr);
  bool seen[AV_BOX_MAX_RANK] = {0};
  for (size_t k = 0; k < n; k++) {
    if (perm[k] < 0 || perm[k] >= t.in->rank || seen[perm[k]]) return AV_INVALID(c, "bad permutation");
    seen[perm[k]] = true;
    if (t.out->dims[k] != t.in->dims[perm[k]]) return AV_INVALID(c, "result shape does not match the permutation");
    p->box.sstride[k] = istr[perm[k]];
  }
  return av_emit_op(c, av_step_box, p) != NULL;
}

static bool lower_slice(av_lower *c, const av_op *op) {
  io t;
  if (!unary_io(c, op, &t)) return false;
  int64_t start[AV_BOX_MAX_RANK], limit[AV_BOX_MAX_RANK], strides[AV_BOX_MAX_RANK];
  size_t ns, nl, nst;
  int r = t.in->rank;
  if (!av_attr_get_ints(op, "start_indices", start, AV_BOX_MAX_RANK, &ns) ||
      !av_attr_get_ints(op, "limit_indices", limit, AV_BOX_MAX_RANK, &nl) || ns != (size_t)r ||
      nl != (size_t)r || t.out->rank != r)
    return AV_INVALID(c, "bad start_indices/limit_indices");
  if (!av_attr_get_ints(op, "strides", strides, AV_BOX_MAX_RANK, &nst)) {
    nst = (size_t)r;
    for (int k = 0; k < r; k++) strides[k] = 1;
  }
  if (nst != (size_t)r) return AV_INVALID(c, "bad strides");
  av_box_params *p = new_box(c, &t);
  if (!p) return false;
  int64_t istr[AV_BOX_MAX_RANK];
  av_row_major_strides(r, t.in->dims, istr);
  p->soff = 0;
  for (int k = 0; k < r; k++) {
    if (strides[k] < 1 || start[k] < 0 || limit[k] < start[k] || limit[k] > t.in->dims[k])
      return AV_INVALID(c, "slice bounds out of range in dimension %d", k);
    int64_t span = limit[k] - start[k];
    int64_t len = span == 0 ? 0 : (span - 1) / strides[k] + 1;
    if (len != t.out->dims[k]) return AV_INVALID(c, "result shape does not match the slice");
    /* a stride beyond the dimension only ever takes one element */
    int64_t step = strides[k] < t.in->dims[k] ? strides[k] : (t.in->dims[k] > 0 ? t.in->dims[k] : 1);
    p->soff += start[k] * istr[k];
    p->box.sstride[k] = istr[k] * step;
  }
  return av_emit_op(c, av_step_box, p) != NULL;
}

static bool lower_reverse(av_lower *c, const av_op *op) {
  io t;
  if (!unary_io(c, op, &t)) return false;
  int64_t dims[AV_BOX_MAX_RANK];
  size_t n;
  if (!av_attr_get_ints(op, "dimensions", dims, AV_BOX_MAX_RANK, &n)) return AV_INVALID(c, "bad dimensions");
  av_box_params *p = new_box(c, &t);
  if (!p) return false;
  int64_t istr[AV_BOX_MAX_RANK];
  av_row_major_strides(t.in->rank, t.in->dims, istr);
  for (int k = 0; k < t.in->rank; k++) p->box.sstride[k] = istr[k];
  for (size_t i = 0; i < n; i++) {
    int64_t k = dims[i];
    if (k < 0 || k >= t.in->rank || p->box.sstride[k] < 0) return AV_INVALID(c, "bad dimensions");
    if (t.in->dims[k] == 0) continue;
    p->soff += (t.in->dims[k] - 1) * istr[k];
    p->box.sstride[k] = -istr[k];
  }
  return av_emit_op(c, av_step_box, p) != NULL;
}

static bool lower_concatenate(av_lower *c, const av_op *op) {
  if (op->nresults != 1 || op->noperands < 1) return AV_INVALID(c, "bad operands");
  const av_slot_type *rt = av_tensor_of(c, &op->results[0], "result");
  if (!rt) return false;
  int64_t dim;
  if (!av_attr_get_int(op, "dimension", &dim) || dim < 0 || dim >= rt->rank)
    return AV_INVALID(c, "bad dimension");
  av_concat_params *p = av_lower_alloc(c, sizeof *p);
  av_box *boxes = av_lower_alloc(c, op->noperands * sizeof *boxes);
  int64_t *doff = av_lower_alloc(c, op->noperands * sizeof *doff);
  if (!p || !boxes || !doff) return false;
  int64_t ostr[AV_BOX_MAX_RANK];
  av_row_major_strides(rt->rank, rt->dims, ostr);
  int64_t at = 0;
  for (uint32_t i = 0; i < op->noperands; i++) {
    const av_slot_type *it = av_tensor_of(c, op->operands[i], "operand");
    if (!it) return false;
    if (it->rank != rt->rank || it->dtype != rt->dtype) return AV_INVALID(c, "operand %u type mismatch", i);
    for (int k = 0; k < rt->rank; k++)
      if (k != dim && it->dims[k] != rt->dims[k]) return AV_INVALID(c, "operand %u shape mismatch", i);
    boxes[i].rank = rt->rank;
    int64_t istr[AV_BOX_MAX_RANK];
    av_row_major_strides(it->rank, it->dims, istr);
    for (int k = 0; k < rt->rank; k++) {
      boxes[i].dims[k] = it->dims[k];
      boxes[i].sstride[k] = istr[k];
      boxes[i].dstride[k] = ostr[k];
    }
    doff[i] = at * ostr[dim];
    at += it->dims[dim];
  }
  if (at != rt->dims[dim]) return AV_INVALID(c, "operand sizes do not add up to the result");
  p->n = op->noperands;
  p->boxes = boxes;
  p->doff = doff;
  p->esize = av_dtype_size(rt->dtype);
  return av_emit_op(c, av_step_concat, p) != NULL;
}

static bool lower_pad(av_lower *c, const av_op *op) {
  io t;
  bool dyn = op->code == AV_OP_DYNAMIC_PAD;
  uint32_t want = dyn ? 5 : 2;
  if (op->noperands != want || !unary_io(c, op, &t)) return op->noperands == want ? false : AV_INVALID(c, "expected %u operands", want);
  const av_slot_type *vt = av_tensor_of(c, op->operands[1], "padding_value");
  if (!vt) return false;
  if (vt->rank != 0 || vt->dtype != t.in->dtype) return AV_INVALID(c, "padding_value must be a scalar of the operand type");
  int r = t.in->rank;
  int64_t lo[AV_BOX_MAX_RANK], hi[AV_BOX_MAX_RANK], in[AV_BOX_MAX_RANK];
  size_t nlo, nhi, nin;
  bool got = dyn ? av_const_operand_ints(op->operands[2], lo, AV_BOX_MAX_RANK, &nlo) &&
                       av_const_operand_ints(op->operands[3], hi, AV_BOX_MAX_RANK, &nhi) &&
                       av_const_operand_ints(op->operands[4], in, AV_BOX_MAX_RANK, &nin)
                 : av_attr_get_ints(op, "edge_padding_low", lo, AV_BOX_MAX_RANK, &nlo) &&
                       av_attr_get_ints(op, "edge_padding_high", hi, AV_BOX_MAX_RANK, &nhi) &&
                       av_attr_get_ints(op, "interior_padding", in, AV_BOX_MAX_RANK, &nin);
  if (dyn && !got) return AV_UNSUPPORTED(c, "padding amounts that are not constants");
  if (!got || nlo != (size_t)r || nhi != (size_t)r || nin != (size_t)r || t.out->rank != r)
    return AV_INVALID(c, "bad padding attributes");
  bool none = t.in->nelems == t.out->nelems; /* no padding at all (jnp.fft's irfft pads so) */
  for (int k = 0; k < r && none; k++)
    none = lo[k] == 0 && hi[k] == 0 && in[k] == 0 && t.in->dims[k] == t.out->dims[k];
  if (none) return av_emit_op(c, av_step_alias, NULL) != NULL;
  av_pad_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  p->esize = av_dtype_size(t.in->dtype);
  int64_t istr[AV_BOX_MAX_RANK], ostr[AV_BOX_MAX_RANK];
  av_row_major_strides(r, t.in->dims, istr);
  av_row_major_strides(r, t.out->dims, ostr);
  p->box.rank = r;
  for (int k = 0; k < r; k++) {
    int64_t d = t.in->dims[k];
    if (in[k] < 0) return AV_INVALID(c, "negative interior padding");
    /* bounded so the arithmetic below cannot overflow */
    if (in[k] > INT32_MAX || lo[k] > INT32_MAX || lo[k] < -INT32_MAX || hi[k] > INT32_MAX ||
        hi[k] < -INT32_MAX || d > INT32_MAX)
      return AV_INVALID(c, "padding out of range");
    int64_t full = d == 0 ? 0 : d + (d - 1) * in[k];
    if (lo[k] + full + hi[k] != t.out->dims[k]) return AV_INVALID(c, "result shape does not match the padding");
    /* input element i lands at lo + i * (interior + 1); keep those inside [0, out) */
    int64_t step = in[k] + 1;
    int64_t first = 0;
    if (lo[k] < 0) first = (-lo[k] + step - 1) / step;
    int64_t last = d - 1; /* largest i with lo + i*step < out */
    if (d > 0) {
      int64_t maxpos = t.out->dims[k] - 1 - lo[k];
      if (maxpos < 0) last = -1;
      else if (maxpos / step < last) last = maxpos / step;
    }
    int64_t cnt = last >= first ? last - first + 1 : 0;
    p->box.dims[k] = cnt;
    p->box.sstride[k] = istr[k];
    p->box.dstride[k] = ostr[k] * step;
    p->soff += first * istr[k];
    p->doff += cnt ? (lo[k] + first * step) * ostr[k] : 0;
  }
  return av_emit_op(c, av_step_pad, p) != NULL;
}

static bool lower_dynamic_slice(av_lower *c, const av_op *op, bool update) {
  io t;
  if (!unary_io(c, op, &t)) return false;
  int r = t.in->rank;
  uint32_t first = update ? 2 : 1;
  if (op->noperands != first + (uint32_t)r) return AV_INVALID(c, "expected %d start indices", r);
  av_dyn_slice_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  p->rank = r;
  p->esize = av_dtype_size(t.in->dtype);
  av_row_major_strides(r, t.in->dims, p->strides);
  const av_slot_type *sz = t.out;
  if (update) {
    sz = av_tensor_of(c, op->operands[1], "update");
    if (!sz) return false;
    if (sz->rank != r || sz->dtype != t.in->dtype) return AV_INVALID(c, "update type mismatch");
    if (t.out->rank != r) return AV_INVALID(c, "result type mismatch");
    for (int k = 0; k < r; k++)
      if (t.out->dims[k] != t.in->dims[k]) return AV_INVALID(c, "result type mismatch");
  } else {
    int64_t sizes[AV_BOX_MAX_RANK];
    size_t n;
    if (!av_attr_get_ints(op, "slice_sizes", sizes, AV_BOX_MAX_RANK, &n) || n != (size_t)r ||
        t.out->rank != r)
      return AV_INVALID(c, "bad slice_sizes");
    for (int k = 0; k < r; k++)
      if (sizes[k] != t.out->dims[k]) return AV_INVALID(c, "slice_sizes do not match the result");
  }
  for (int k = 0; k < r; k++) {
    p->dims[k] = t.in->dims[k];
    p->sizes[k] = sz->dims[k];
    if (p->sizes[k] < 0 || p->sizes[k] > p->dims[k]) return AV_INVALID(c, "slice larger than the operand");
    const av_slot_type *it = av_tensor_of(c, op->operands[first + (uint32_t)k], "start index");
    if (!it) return false;
    if (it->rank != 0 || (!av_dtype_is_int(it->dtype))) return AV_INVALID(c, "start indices must be integer scalars");
    p->index_dtype[k] = it->dtype;
  }
  return av_emit_op(c, update ? av_step_dynamic_update_slice : av_step_dynamic_slice, p) != NULL;
}

static bool lower_get_tuple_element(av_lower *c, const av_op *op) {
  if (op->noperands != 1 || op->nresults != 1) return AV_INVALID(c, "bad operands");
  const av_type *tt = op->operands[0]->type;
  int64_t index;
  if (!tt || tt->kind != AV_TYPE_TUPLE) return AV_INVALID(c, "operand is not a tuple");
  if (!av_attr_get_int(op, "index", &index) || index < 0 || index >= tt->nelems)
    return AV_INVALID(c, "bad index");
  int off = 0;
  for (int i = 0; i < index; i++) off += av_type_leaves(tt->elems[i]);
  int n = av_type_leaves(tt->elems[index]);
  if (n < 0 || !av_type_equal(tt->elems[index], op->results[0].type))
    return AV_INVALID(c, "result type differs from the tuple element");
  av_step *s = av_emit(c, av_step_alias, NULL, (uint32_t)n, (uint32_t)n);
  if (!s) return false;
  for (int j = 0; j < n; j++) {
    ((int32_t *)s->in)[j] = av_vslot(c, op->operands[0]) + off + j;
    ((int32_t *)s->out)[j] = av_vslot(c, &op->results[0]) + j;
  }
  return true;
}

bool av_lower_shape_op(av_lower *c, const av_op *op, bool *handled) {
  *handled = true;
  switch (op->code) {
    case AV_OP_BROADCAST_IN_DIM: {
      int64_t dims[AV_BOX_MAX_RANK];
      size_t n;
      if (!av_attr_get_ints(op, "broadcast_dimensions", dims, AV_BOX_MAX_RANK, &n))
        return AV_INVALID(c, "bad broadcast_dimensions");
      return lower_broadcast_in_dim(c, op, dims, n);
    }
    case AV_OP_BROADCAST: {
      io t;
      if (!unary_io(c, op, &t)) return false;
      int64_t dims[AV_BOX_MAX_RANK];
      int lead = t.out->rank - t.in->rank;
      if (lead < 0) return AV_INVALID(c, "result rank below operand rank");
      for (int i = 0; i < t.in->rank; i++) dims[i] = lead + i;
      return lower_broadcast_in_dim(c, op, dims, (size_t)t.in->rank);
    }
    case AV_OP_DYNAMIC_BROADCAST_IN_DIM: {
      /* static result type: the output_dimensions operand adds nothing */
      int64_t dims[AV_BOX_MAX_RANK];
      size_t n;
      if (op->noperands != 2 || !av_attr_get_ints(op, "broadcast_dimensions", dims, AV_BOX_MAX_RANK, &n))
        return AV_INVALID(c, "bad broadcast_dimensions");
      return lower_broadcast_in_dim(c, op, dims, n);
    }
    case AV_OP_DYNAMIC_RESHAPE:
    case AV_OP_RESHAPE: {
      io t;
      if (!unary_io(c, op, &t)) return false;
      if (t.in->nelems != t.out->nelems) return AV_INVALID(c, "reshape changes the element count");
      return av_emit_op(c, av_step_alias, NULL) != NULL;
    }
    case AV_OP_TRANSPOSE: return lower_transpose(c, op);
    case AV_OP_SLICE: return lower_slice(c, op);
    case AV_OP_REVERSE: return lower_reverse(c, op);
    case AV_OP_CONCATENATE: return lower_concatenate(c, op);
    case AV_OP_PAD: case AV_OP_DYNAMIC_PAD: return lower_pad(c, op);
    case AV_OP_DYNAMIC_SLICE: return lower_dynamic_slice(c, op, false);
    case AV_OP_DYNAMIC_UPDATE_SLICE: return lower_dynamic_slice(c, op, true);
    case AV_OP_GET_TUPLE_ELEMENT: return lower_get_tuple_element(c, op);
    default:
      *handled = false;
      return false;
  }
}
