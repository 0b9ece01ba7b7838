/* The step of a custom_call served by a registered handler (see ffi.h).
 *
 * Buffers: every operand and result is handed over as XLA:CPU hands it: logical dimensions,
 * the bytes in the layout the op asks for (operand_layouts / result_layouts; anvil keeps
 * row-major, so other layouts are copied in and out around the call), at least 16-byte
 * aligned, never NULL (tokens and empty arrays get a dummy). A result aliased to an operand
 * (output_operand_aliases) gets the same pointer as that operand, holding the operand's
 * value: the operand's own storage when it dies here and nobody else sees it, a copy
 * otherwise (the operand's value stays intact for its other users). */
#include <stdlib.h>
#include <string.h>

#include "runtime/ffi/ffi.h"
#include "runtime/kernels/shape.h"

/* What tokens and zero-sized buffers point at. */
static _Alignas(64) unsigned char dummy[64];

typedef struct call_buf {
  void *data;     /* what the handler sees */
  void *temp;     /* a layout or alignment copy (freed after the call), or NULL */
} call_buf;

static bool permuted(const av_ffi_operand *o) { return o->minor_to_major != NULL; }

/* Strides (in elements) of logical dimensions stored in the operand's physical layout. */
static void physical_strides(const av_ffi_operand *o, int64_t *st) {
  int64_t s = 1;
  for (int64_t j = 0; j < o->rank; j++) {
    int64_t dim = o->minor_to_major[j];
    st[dim] = s;
    s *= o->dims[dim];
  }
}

/* Copies between row-major (logical) and the operand's physical layout. */
static void relayout(const av_ffi_operand *o, const void *src, void *dst, bool to_physical) {
  av_box b;
  b.rank = (int)o->rank;
  for (int j = 0; j < b.rank; j++) b.dims[j] = o->dims[j];
  int64_t row[AV_BOX_MAX_RANK], phys[AV_BOX_MAX_RANK];
  av_row_major_strides(b.rank, o->dims, row);
  physical_strides(o, phys);
  memcpy(b.sstride, to_physical ? row : phys, sizeof(int64_t) * (size_t)b.rank);
  memcpy(b.dstride, to_physical ? phys : row, sizeof(int64_t) * (size_t)b.rank);
  av_box_copy(&b, src, dst, o->esize);
}

static void *alloc_aligned(size_t n) { return aligned_alloc(64, (n + 63) / 64 * 64); }

/* The buffer operand i is passed in (`src` its row-major bytes). */
static av_code arg_buffer(const av_ffi_operand *o, const av_slot_type *t, void *src,
                          call_buf *b, av_diag *d) {
  if (t->token || t->nbytes == 0) {
    b->data = dummy;
    return AV_OK;
  }
  if (!permuted(o) && ((uintptr_t)src % 16) == 0) {
    b->data = src;
    return AV_OK;
  }
  if (!(b->temp = alloc_aligned(t->nbytes)))
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory for a custom call operand");
  if (permuted(o)) relayout(o, src, b->temp, true);
  else memcpy(b->temp, src, t->nbytes);
  b->data = b->temp;
  return AV_OK;
}

/* Allocates result k and decides the buffer the handler writes. */
static av_code ret_buffer(const av_step *s, av_frame *f, const av_ffi_call_params *p, uint32_t k,
                          call_buf *args, call_buf *b, av_diag *d) {
  const av_ffi_operand *o = &p->rets[k];
  const av_slot_type *t = av_out_type(s, f, k);
  av_code c;
  if (o->alias >= 0 && !t->token && t->nbytes) {
    uint32_t i = (uint32_t)o->alias;
    if (args[i].temp) { /* the operand was copied (a layout): that copy is the shared buffer */
      if ((c = av_step_alloc_out(s, f, k, d)) != AV_OK) return c;
      b->data = args[i].data;
      return AV_OK;
    }
    const void *in = av_in(s, f, i);
    if ((c = av_step_alloc_out_reuse(s, f, k, i, d)) != AV_OK) return c;
    void *out = av_out(s, f, k);
    if (out != in) memcpy(out, in, t->nbytes);
    b->data = args[i].data = out; /* both sides see the result's storage */
    return AV_OK;
  }
  if ((c = av_step_alloc_out(s, f, k, d)) != AV_OK) return c;
  if (t->token || t->nbytes == 0) {
    b->data = dummy;
  } else if (permuted(o)) {
    if (!(b->temp = alloc_aligned(t->nbytes)))
      return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory for a custom call result");
    b->data = b->temp;
  } else {
    b->data = av_out(s, f, k);
  }
  return AV_OK;
}

typedef void (*legacy_original)(void *out, const void **in);
typedef void (*legacy_status)(void *out, const void **in, void *status);
typedef void (*legacy_opaque)(void *out, const void **in, const char *opaque, size_t len,
                              void *status);

static av_code call_legacy(const av_ffi_call_params *p, const av_step *s, const av_frame *f,
                           call_buf *args, call_buf *rets, av_diag *d) {
  const void **in = calloc((size_t)p->nargs + 1, sizeof *in);
  void **outs = calloc((size_t)p->nrets + 1, sizeof *outs);
  if (!in || !outs) {
    free(in);
    free(outs);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  uint32_t nin = 0, nout = 0;
  for (uint32_t i = 0; i < p->nargs; i++)
    if (!av_in_type(s, f, i)->token) in[nin++] = args[i].data;
  for (uint32_t k = 0; k < p->nrets; k++)
    if (!av_out_type(s, f, k)->token) outs[nout++] = rets[k].data;
  /* one result: its buffer; several: an array of their buffers (XLA:CPU's tuple result) */
  void *out = nout == 1 ? outs[0] : (void *)outs;
  av_ffi_status st;
  av_ffi_status_init(&st);
  void *fn = p->handler->legacy;
  if (p->kind == AV_FFI_CALL_ORIGINAL) {
    legacy_original g;
    memcpy(&g, &fn, sizeof g);
    g(out, in);
  } else if (p->kind == AV_FFI_CALL_STATUS) {
    legacy_status g;
    memcpy(&g, &fn, sizeof g);
    g(out, in, &st);
  } else {
    legacy_opaque g;
    memcpy(&g, &fn, sizeof g);
    g(out, in, p->opaque ? p->opaque : "", p->opaque_len, &st);
  }
  free(in);
  free(outs);
  if (st.failed)
    return av_diag_set(d, AV_INTERNAL, "custom call @%s: %s", p->target,
                       st.message[0] ? st.message : "(failed without a message)");
  return AV_OK;
}

static av_code call_typed(const av_ffi_call_params *p, av_frame *f, call_buf *args,
                          call_buf *rets, av_diag *d) {
  uint32_t n = p->nargs + p->nrets;
  av_xffi_buffer *bufs = calloc((size_t)n + 1, sizeof *bufs);
  void **ptrs = calloc((size_t)n + 1, sizeof *ptrs);
  int32_t *kinds = calloc((size_t)n + 1, sizeof *kinds);
  if (!bufs || !ptrs || !kinds) {
    free(bufs);
    free(ptrs);
    free(kinds);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (uint32_t j = 0; j < n; j++) {
    bool is_arg = j < p->nargs;
    const av_ffi_operand *o = is_arg ? &p->args[j] : &p->rets[j - p->nargs];
    bufs[j].struct_size = AV_XFFI_BUFFER_SIZE;
    bufs[j].dtype = o->dtype;
    bufs[j].data = is_arg ? args[j].data : rets[j - p->nargs].data;
    bufs[j].rank = o->rank;
    bufs[j].dims = o->dims;
    ptrs[j] = &bufs[j];
    kinds[j] = AV_XFFI_ARG_BUFFER;
  }
  av_xffi_args a = {AV_XFFI_ARGS_SIZE, NULL, p->nargs, kinds, ptrs};
  av_xffi_rets r = {AV_XFFI_ARGS_SIZE, NULL, p->nrets, kinds + p->nargs, ptrs + p->nargs};
  av_xffi_ctx ctx;
  int32_t ordinal = f->mem_device >= 0 ? f->mem_device : f->device_index;
  av_ffi_ctx_init(&ctx, AV_XFFI_EXECUTE, p->site, f->pool, f->run_id, ordinal, f->user_data);
  av_code c = av_ffi_invoke(p->handler->bundle.execute, &ctx, &a, &r, p->attrs, p->target, d);
  free(bufs);
  free(ptrs);
  free(kinds);
  return c;
}

av_code av_step_ffi(const av_step *s, av_frame *f, av_diag *d) {
  const av_ffi_call_params *p = s->params;
  call_buf *args = calloc((size_t)p->nargs + 1, sizeof *args);
  call_buf *rets = calloc((size_t)p->nrets + 1, sizeof *rets);
  av_code c = args && rets ? AV_OK : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t i = 0; i < p->nargs && c == AV_OK; i++)
    c = arg_buffer(&p->args[i], av_in_type(s, f, i), av_in(s, f, i), &args[i], d);
  for (uint32_t k = 0; k < p->nrets && c == AV_OK; k++)
    c = ret_buffer(s, f, p, k, args, &rets[k], d);
  if (c == AV_OK)
    c = p->kind == AV_FFI_CALL_TYPED ? call_typed(p, f, args, rets, d)
                                     : call_legacy(p, s, f, args, rets, d);
  /* results the handler wrote in another layout (or into an operand's copy) come back */
  for (uint32_t k = 0; k < p->nrets && c == AV_OK; k++) {
    const av_ffi_operand *o = &p->rets[k];
    const av_slot_type *t = av_out_type(s, f, k);
    if (t->token || t->nbytes == 0 || rets[k].data == av_out(s, f, k)) continue;
    if (permuted(o)) relayout(o, rets[k].data, av_out(s, f, k), false);
    else memcpy(av_out(s, f, k), rets[k].data, t->nbytes);
  }
  for (uint32_t i = 0; args && i < p->nargs; i++) free(args[i].temp);
  for (uint32_t k = 0; rets && k < p->nrets; k++) free(rets[k].temp);
  free(args);
  free(rets);
  return c;
}

int32_t av_ffi_dtype(av_dtype t) {
  switch (t) {
    case AV_DT_PRED: return AV_XFFI_PRED;
    case AV_DT_S1: return AV_XFFI_S1;
    case AV_DT_S2: return AV_XFFI_S2;
    case AV_DT_S4: return AV_XFFI_S4;
    case AV_DT_S8: return AV_XFFI_S8;
    case AV_DT_S16: return AV_XFFI_S16;
    case AV_DT_S32: return AV_XFFI_S32;
    case AV_DT_S64: return AV_XFFI_S64;
    case AV_DT_U1: return AV_XFFI_U1;
    case AV_DT_U2: return AV_XFFI_U2;
    case AV_DT_U4: return AV_XFFI_U4;
    case AV_DT_U8: return AV_XFFI_U8;
    case AV_DT_U16: return AV_XFFI_U16;
    case AV_DT_U32: return AV_XFFI_U32;
    case AV_DT_U64: return AV_XFFI_U64;
    case AV_DT_F4E2M1FN: return AV_XFFI_F4E2M1FN;
    case AV_DT_F8E3M4: return AV_XFFI_F8E3M4;
    case AV_DT_F8E4M3: return AV_XFFI_F8E4M3;
    case AV_DT_F8E4M3FN: return AV_XFFI_F8E4M3FN;
    case AV_DT_F8E4M3FNUZ: return AV_XFFI_F8E4M3FNUZ;
    case AV_DT_F8E4M3B11FNUZ: return AV_XFFI_F8E4M3B11FNUZ;
    case AV_DT_F8E5M2: return AV_XFFI_F8E5M2;
    case AV_DT_F8E5M2FNUZ: return AV_XFFI_F8E5M2FNUZ;
    case AV_DT_F8E8M0FNU: return AV_XFFI_F8E8M0FNU;
    case AV_DT_BF16: return AV_XFFI_BF16;
    case AV_DT_F16: return AV_XFFI_F16;
    case AV_DT_F32: return AV_XFFI_F32;
    case AV_DT_F64: return AV_XFFI_F64;
    case AV_DT_C64: return AV_XFFI_C64;
    case AV_DT_C128: return AV_XFFI_C128;
    default: return AV_XFFI_INVALID; /* f6 types: XLA's FFI has none */
  }
}
