/* stablehlo.custom_call whose target is a registered XLA FFI handler or legacy custom-call
 * target (runtime/ffi/ffi.h): the call's buffers, layouts and aliases, its attributes as the
 * sorted tree handlers decode (once, here), and the INSTANTIATE stage, run once per call site
 * with the site's state kept by the plan.
 *
 * Attributes convert as XLA converts them (../shared/research/xla_ffi.md 1.7): bools and
 * 8..64-bit integers and f32/f64 floats are scalars, dense integer/f32/f64 elements and dense
 * i64 arrays are arrays (flattened), strings are strings, dictionaries nest; anything else
 * (lists, f16 scalars, bool or complex arrays) is refused at compile time, as XLA refuses it.
 * They come from the discardable dictionary `mhlo.backend_config` (JAX's ffi_call) or, with
 * api_version 4, from a dictionary backend_config. */
#include <string.h>

#include "compiler/lower_internal.h"
#include "runtime/ffi/ffi.h"
#include "runtime/kernels/shape.h"
#include "runtime/tensor.h"

static bool unsupported_attr(av_lower *c, const char *target, const char *name) {
  return AV_INVALID(c, "@%s: Unsupported attribute type for attribute: %s", target, name);
}

/* Scalar dtype of an integer attribute's declared type (signless = signed). */
static int32_t int_attr_dtype(const av_attr *a) {
  if (!a->type) return AV_XFFI_S64;
  switch (a->type->dtype) {
    case AV_DT_PRED: return AV_XFFI_PRED;
    case AV_DT_S8: return AV_XFFI_S8;
    case AV_DT_S16: return AV_XFFI_S16;
    case AV_DT_S32: return AV_XFFI_S32;
    case AV_DT_S64: return AV_XFFI_S64;
    case AV_DT_U8: return AV_XFFI_U8;
    case AV_DT_U16: return AV_XFFI_U16;
    case AV_DT_U32: return AV_XFFI_U32;
    case AV_DT_U64: return AV_XFFI_U64;
    default: return AV_XFFI_INVALID;
  }
}

static size_t xffi_size(int32_t t) {
  switch (t) {
    case AV_XFFI_PRED: case AV_XFFI_S8: case AV_XFFI_U8: return 1;
    case AV_XFFI_S16: case AV_XFFI_U16: return 2;
    case AV_XFFI_S32: case AV_XFFI_U32: case AV_XFFI_F32: return 4;
    default: return 8;
  }
}

/* Writes integer v as a `t` element. */
static void put_int(void *dst, int32_t t, int64_t v) {
  switch (xffi_size(t)) {
    case 1: { int8_t x = (int8_t)v; memcpy(dst, &x, 1); break; }
    case 2: { int16_t x = (int16_t)v; memcpy(dst, &x, 2); break; }
    case 4: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); break; }
    default: memcpy(dst, &v, 8); break;
  }
}

static void *scalar_of(av_lower *c, const char *target, const char *name, const av_attr *a) {
  av_xffi_scalar *s = av_lower_alloc(c, sizeof *s);
  void *v = av_lower_alloc(c, 8);
  if (!s || !v) return NULL;
  s->value = v;
  if (a->kind == AV_ATTR_BOOL) {
    s->dtype = AV_XFFI_PRED;
    *(uint8_t *)v = a->u.b;
  } else if (a->kind == AV_ATTR_INT) {
    if ((s->dtype = int_attr_dtype(a)) == AV_XFFI_INVALID) {
      unsupported_attr(c, target, name);
      return NULL;
    }
    if (s->dtype == AV_XFFI_PRED) *(uint8_t *)v = a->u.i != 0;
    else put_int(v, s->dtype, a->u.i);
  } else { /* FLOAT: f32 or f64 only (XLA refuses f16 and bf16) */
    av_dtype t = a->type ? a->type->dtype : AV_DT_F64;
    if (t == AV_DT_F32) {
      float x = (float)a->u.f;
      memcpy(v, &x, 4);
      s->dtype = AV_XFFI_F32;
    } else if (t == AV_DT_F64) {
      memcpy(v, &a->u.f, 8);
      s->dtype = AV_XFFI_F64;
    } else {
      unsupported_attr(c, target, name);
      return NULL;
    }
  }
  return s;
}

static void *array_of(av_lower *c, const char *target, const char *name, const av_attr *a) {
  av_xffi_array *arr = av_lower_alloc(c, sizeof *arr);
  if (!arr) return NULL;
  if (a->kind == AV_ATTR_INTS) { /* a dense i64 array (array<i64: ...>) */
    arr->dtype = AV_XFFI_S64;
    arr->size = a->u.ints.n;
    arr->data = av_lower_alloc(c, a->u.ints.n * 8);
    if (!arr->data) return NULL;
    if (a->u.ints.n) memcpy(arr->data, a->u.ints.v, a->u.ints.n * 8);
    return arr;
  }
  /* DENSE: integer, f32 or f64 elements, flattened; a splat expanded */
  av_dtype dt = a->type ? a->type->dtype : AV_DT_INVALID;
  int32_t xt = av_ffi_dtype(dt);
  bool ok = (av_dtype_is_int(dt) && av_dtype_size(dt) * 8 == (size_t)av_dtype_bits(dt)) ||
            dt == AV_DT_F32 || dt == AV_DT_F64;
  int64_t n = a->type ? av_type_num_elements(a->type) : -1;
  if (!ok || n < 0) {
    unsupported_attr(c, target, name);
    return NULL;
  }
  size_t es = av_dtype_size(dt);
  arr->dtype = xt;
  arr->size = (size_t)n;
  arr->data = av_lower_alloc(c, (size_t)n * es);
  if (!arr->data) return NULL;
  for (int64_t i = 0; i < n; i++) {
    size_t from = a->u.dense.splat ? 0 : (size_t)i * es;
    if (from + es > a->u.dense.size) {
      AV_INVALID(c, "@%s: attribute %s: dense data too short", target, name);
      return NULL;
    }
    memcpy((char *)arr->data + (size_t)i * es, (const char *)a->u.dense.data + from, es);
  }
  return arr;
}

/* The attribute tree of dictionary `dict` (NULL: none), sorted by name at every level. */
static av_xffi_attrs *attrs_of(av_lower *c, const char *target, const av_attr *dict, int depth) {
  av_xffi_attrs *t = av_lower_alloc(c, sizeof *t);
  if (!t) return NULL;
  memset(t, 0, sizeof *t);
  t->struct_size = AV_XFFI_ATTRS_SIZE;
  size_t n = dict ? dict->u.dict.n : 0;
  if (depth > 32) {
    AV_INVALID(c, "@%s: attributes nested too deep", target);
    return NULL;
  }
  t->types = av_lower_alloc(c, (n + 1) * sizeof *t->types);
  t->names = av_lower_alloc(c, (n + 1) * sizeof *t->names);
  t->attrs = av_lower_alloc(c, (n + 1) * sizeof *t->attrs);
  if (!t->types || !t->names || !t->attrs) return NULL;
  for (size_t i = 0; i < n; i++) {
    const char *name = dict->u.dict.items[i].name;
    const av_attr *a = dict->u.dict.items[i].value;
    if (!a) {
      AV_INVALID(c, "@%s: attribute %s has no value", target, name);
      return NULL;
    }
    av_xffi_bytes *nm = av_lower_alloc(c, sizeof *nm);
    if (!nm) return NULL;
    nm->ptr = name;
    nm->len = strlen(name);
    void *v = NULL;
    int32_t kind;
    switch (a->kind) {
      case AV_ATTR_BOOL: case AV_ATTR_INT: case AV_ATTR_FLOAT:
        kind = AV_XFFI_ATTR_SCALAR;
        v = scalar_of(c, target, name, a);
        break;
      case AV_ATTR_DENSE: case AV_ATTR_INTS:
        kind = AV_XFFI_ATTR_ARRAY;
        v = array_of(c, target, name, a);
        break;
      case AV_ATTR_STRING: {
        kind = AV_XFFI_ATTR_STRING;
        av_xffi_bytes *s = av_lower_alloc(c, sizeof *s);
        if (s) {
          s->ptr = a->u.str.s;
          s->len = a->u.str.len;
        }
        v = s;
        break;
      }
      case AV_ATTR_DICT:
        kind = AV_XFFI_ATTR_DICT;
        v = attrs_of(c, target, a, depth + 1);
        break;
      default:
        unsupported_attr(c, target, name);
        return NULL;
    }
    if (!v) return NULL;
    t->types[i] = kind;
    t->names[i] = nm;
    t->attrs[i] = v;
  }
  t->size = (int64_t)n;
  av_ffi_attrs_sort(t);
  return t;
}

/* A layout that is not row-major (NULL when it is). */
static bool layout_of(av_lower *c, const char *target, const av_attr *layouts, uint32_t i,
                      av_ffi_operand *o, const char *what) {
  o->minor_to_major = NULL;
  if (!layouts || layouts->kind != AV_ATTR_ARRAY || o->dtype == AV_XFFI_TOKEN) return true;
  if (i >= layouts->u.array.n) return AV_INVALID(c, "@%s: %s_layouts has no entry %u", target, what, i);
  int64_t m2m[AV_MAX_RANK];
  size_t n = 0;
  if (!av_attr_ints_of(layouts->u.array.items[i], m2m, AV_MAX_RANK, &n) || n != (size_t)o->rank)
    return AV_INVALID(c, "@%s: %s %u: layout does not match its rank %lld", target, what, i,
                      (long long)o->rank);
  bool seen[AV_MAX_RANK] = {false}, row_major = true;
  for (size_t j = 0; j < n; j++) {
    if (m2m[j] < 0 || m2m[j] >= o->rank || seen[m2m[j]])
      return AV_INVALID(c, "@%s: %s %u: layout is not a permutation", target, what, i);
    seen[m2m[j]] = true;
    if (m2m[j] != o->rank - 1 - (int64_t)j) row_major = false;
  }
  if (row_major) return true;
  if (o->rank > AV_BOX_MAX_RANK)
    return AV_UNSUPPORTED(c, "@%s: %s %u: a layout of rank %lld", target, what, i, (long long)o->rank);
  int64_t *copy = av_lower_alloc(c, n * sizeof *copy);
  if (!copy) return false;
  memcpy(copy, m2m, n * sizeof *copy);
  o->minor_to_major = copy;
  return true;
}

static bool operand_of(av_lower *c, const char *target, const av_value *v, const av_attr *layouts,
                       uint32_t i, av_ffi_operand *o, const char *what) {
  const av_slot_type *t = av_vtype(c, v);
  if (!t || !v->type || (v->type->kind != AV_TYPE_TENSOR && v->type->kind != AV_TYPE_TOKEN))
    return AV_UNSUPPORTED(c, "@%s: %s %u is neither a tensor nor a token", target, what, i);
  o->alias = -1;
  o->esize = t->token ? 0 : av_dtype_size(t->dtype);
  if (t->token) {
    o->dtype = AV_XFFI_TOKEN;
    o->rank = 0;
  } else {
    o->dtype = av_ffi_dtype(t->dtype);
    if (o->dtype == AV_XFFI_INVALID)
      return AV_UNSUPPORTED(c, "@%s: %s %u: element type %s has no XLA FFI equivalent", target,
                            what, i, av_dtype_mlir_name(t->dtype));
    o->rank = t->rank;
  }
  o->dims = av_lower_alloc(c, ((size_t)o->rank + 1) * sizeof *o->dims);
  if (!o->dims) return false;
  for (int64_t j = 0; j < o->rank; j++) o->dims[j] = t->dims[j];
  return layout_of(c, target, layouts, i, o, what);
}

/* output_operand_aliases: #stablehlo.output_operand_alias<output_tuple_indices = [o],
 * operand_index = i, operand_tuple_indices = []> each. */
static bool aliases_of(av_lower *c, const char *target, const av_op *op, av_ffi_operand *args,
                       av_ffi_operand *rets) {
  const av_attr *al = av_op_attr(op, "output_operand_aliases");
  if (!al || al->kind != AV_ATTR_ARRAY) return true;
  for (size_t j = 0; j < al->u.array.n; j++) {
    const av_attr *a = al->u.array.items[j];
    const av_attr *oi = a && a->kind == AV_ATTR_DICT ? av_dict_get(a, "output_tuple_indices") : NULL;
    const av_attr *ii = a && a->kind == AV_ATTR_DICT ? av_dict_get(a, "operand_index") : NULL;
    const av_attr *ti = a && a->kind == AV_ATTR_DICT ? av_dict_get(a, "operand_tuple_indices") : NULL;
    int64_t out[2] = {0}, tin[1];
    size_t nout = 0, ntin = 0;
    if (!ii || ii->kind != AV_ATTR_INT || (oi && !av_attr_ints_of(oi, out, 2, &nout)) ||
        (ti && !av_attr_ints_of(ti, tin, 1, &ntin)))
      return AV_INVALID(c, "@%s: malformed output_operand_aliases", target);
    if (nout > 1 || ntin > 0)
      return AV_UNSUPPORTED(c, "@%s: an alias into a nested tuple", target);
    int64_t k = nout ? out[0] : 0, i = ii->u.i;
    if (k < 0 || k >= op->nresults || i < 0 || i >= op->noperands)
      return AV_INVALID(c, "@%s: output_operand_aliases names result %lld and operand %lld", target,
                        (long long)k, (long long)i);
    av_ffi_operand *r = &rets[k], *o = &args[i];
    bool same = r->dtype == o->dtype && r->rank == o->rank &&
                memcmp(r->dims, o->dims, (size_t)r->rank * sizeof *r->dims) == 0;
    bool same_layout = same && ((!r->minor_to_major && !o->minor_to_major) ||
                                (r->minor_to_major && o->minor_to_major &&
                                 memcmp(r->minor_to_major, o->minor_to_major,
                                        (size_t)r->rank * sizeof *r->minor_to_major) == 0));
    if (!same_layout)
      return AV_INVALID(c, "@%s: result %lld aliases operand %lld of another type or layout",
                        target, (long long)k, (long long)i);
    for (uint32_t q = 0; q < op->nresults; q++)
      if (rets[q].alias == i) return AV_INVALID(c, "@%s: operand %lld aliased twice", target, (long long)i);
    if (r->alias >= 0) return AV_INVALID(c, "@%s: result %lld aliased twice", target, (long long)k);
    r->alias = (int32_t)i;
  }
  return true;
}

/* How the op passes its attributes and which calling convention it asks for. */
static bool call_kind(av_lower *c, const char *target, const av_op *op, const av_ffi_handler *h,
                      av_ffi_call_params *p, const av_attr **dict) {
  int64_t version = 1; /* StableHLO's default: API_VERSION_ORIGINAL */
  const av_attr *va = av_op_attr(op, "api_version");
  if (va && va->kind == AV_ATTR_INT) version = va->u.i;
  const av_attr *mhlo = av_op_attr(op, "mhlo.backend_config");
  const av_attr *cfg = av_op_attr(op, "backend_config");
  *dict = NULL;
  if (h->typed) {
    if (mhlo && mhlo->kind == AV_ATTR_DICT) {
      *dict = mhlo;
    } else if (version == 4 && cfg && cfg->kind == AV_ATTR_DICT) {
      *dict = cfg;
    } else if (version == 4 && cfg && cfg->kind == AV_ATTR_STRING) {
      const char *s = cfg->u.str.s;
      while (*s == ' ') s++;
      if (*s && strcmp(s, "{}") != 0)
        return AV_UNSUPPORTED(c, "@%s: typed FFI attributes given as text (backend_config "
                              "\"%.60s\"); anvil reads them as a dictionary attribute", target,
                              cfg->u.str.s);
    } else if (version != 4) {
      return AV_INVALID(c, "@%s is registered as an XLA FFI handler, but the call uses the legacy "
                        "custom call API (api_version %lld)", target, (long long)version);
    }
    p->kind = AV_FFI_CALL_TYPED;
    return true;
  }
  switch (version) {
    case 0: case 1: p->kind = AV_FFI_CALL_ORIGINAL; break;
    case 2: p->kind = AV_FFI_CALL_STATUS; break;
    case 3: p->kind = AV_FFI_CALL_STATUS_OPAQUE; break;
    default:
      return AV_INVALID(c, "@%s is registered as a legacy custom call (api_version=0), but the "
                        "call uses the typed FFI (api_version %lld)", target, (long long)version);
  }
  if (cfg && cfg->kind == AV_ATTR_STRING) {
    p->opaque = cfg->u.str.s;
    p->opaque_len = cfg->u.str.len;
  }
  return true;
}

bool av_lower_ffi(av_lower *c, const av_op *op, const char *target, const av_ffi_handler *h) {
  av_ffi_call_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  memset(p, 0, sizeof *p);
  p->target = target;
  p->handler = h;
  const av_attr *dict;
  if (!call_kind(c, target, op, h, p, &dict)) return false;
  p->nargs = op->noperands;
  p->nrets = op->nresults;
  av_ffi_operand *args = av_lower_alloc(c, (p->nargs + 1) * sizeof *args);
  av_ffi_operand *rets = av_lower_alloc(c, (p->nrets + 1) * sizeof *rets);
  if (!args || !rets) return false;
  const av_attr *ol = av_op_attr(op, "operand_layouts"), *rl = av_op_attr(op, "result_layouts");
  for (uint32_t i = 0; i < p->nargs; i++)
    if (!operand_of(c, target, op->operands[i], ol, i, &args[i], "operand")) return false;
  for (uint32_t k = 0; k < p->nrets; k++)
    if (!operand_of(c, target, &op->results[k], rl, k, &rets[k], "result")) return false;
  if (!aliases_of(c, target, op, args, rets)) return false;
  p->args = args;
  p->rets = rets;
  if (p->kind == AV_FFI_CALL_TYPED) {
    if (dict && dict->kind != AV_ATTR_DICT) dict = NULL;
    av_xffi_attrs *attrs = attrs_of(c, target, dict, 0);
    if (!attrs) return false;
    p->attrs = attrs;
    p->site = av_ffi_site_new();
    if (!p->site) return av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
    if (!av_lower_own(c, p->site, av_ffi_site_free)) return false;
    if (h->bundle.instantiate) { /* once per call site, here (XLA: at thunk creation) */
      av_xffi_ctx ctx;
      av_ffi_ctx_init(&ctx, AV_XFFI_INSTANTIATE, p->site, NULL, 0, 0, NULL);
      av_diag d;
      av_diag_init(&d);
      if (av_ffi_invoke(h->bundle.instantiate, &ctx, NULL, NULL, attrs, target, &d) != AV_OK)
        return av_lower_fail(c, d.code, "instantiate: %s", d.msg);
    }
  }
  c->plan->calls_host = true; /* its errors reach the caller at the call, as on XLA:CPU */
  return av_emit_op(c, av_step_ffi, p) != NULL;
}
