/* The IR section of MLIR bytecode -> anvil IR: ops, regions, blocks, value numbering (scopes at
 * isolated-from-above ops), properties via the op schemas, and the mapping of VHLO ops onto the
 * IR (vhlo.X_vN -> stablehlo.X, vhlo.func_v1 -> av_func, vhlo.return_v1 -> func.return at the
 * end of a function body, vhlo.call_v1 -> func.call). */
#include <stdlib.h>
#include <string.h>

#include "frontend/bytecode_internal.h"
#include "frontend/vhlo_ops.h"

typedef struct bc_fixup {
  av_value **slot;
  size_t idx; /* absolute index in r->vals */
  size_t at;  /* file offset of the use, for the error message */
} bc_fixup;

typedef enum op_ctx {
  CTX_MODULE_BODY, /* directly inside the module: functions and module-level ops */
  CTX_FUNC_BODY,   /* directly inside a function body */
  CTX_OP_REGION,   /* inside a region of an op */
} op_ctx;

/* A region being read: its value range [base, base + count) in r->vals. */
typedef struct region_state {
  size_t base, count, next;
  size_t fixup_start;
} region_state;

static bool read_region(bc_reader *r, bc_cursor *c, av_region *out, op_ctx ctx);

static bool grow(void **buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t n = *cap ? *cap : 16;
  while (n < need) n *= 2;
  void *p = realloc(*buf, n * elem);
  if (!p) return false;
  *buf = p;
  *cap = n;
  return true;
}

/* ---------------------------------------------------------------- values */

static bool define_value(bc_reader *r, bc_cursor *c, region_state *rs, av_value *v) {
  if (rs->next >= rs->count)
    return bc_fail(r, c, "region defines more values than its header declares (%zu)", rs->count);
  r->vals[rs->base + rs->next++] = v;
  return true;
}

static bool use_value(bc_reader *r, bc_cursor *c, uint64_t idx, av_value **slot) {
  if (idx >= r->nvals - r->scope_base)
    return bc_fail(r, c, "operand refers to value %llu, outside the %zu values in scope",
                   (unsigned long long)idx, r->nvals - r->scope_base);
  size_t abs = r->scope_base + (size_t)idx;
  *slot = r->vals[abs];
  if (*slot) return true;
  if (!grow((void **)&r->fixups, &r->capfixups, r->nfixups + 1, sizeof *r->fixups))
    return bc_fail(r, NULL, "out of memory");
  r->fixups[r->nfixups++] = (bc_fixup){slot, abs, bc_offset(c)};
  return true;
}

/* At the end of a region, forward references into its value range must be resolved. */
static bool resolve_fixups(bc_reader *r, region_state *rs) {
  size_t keep = rs->fixup_start;
  for (size_t i = rs->fixup_start; i < r->nfixups; i++) {
    bc_fixup f = r->fixups[i];
    if (f.idx >= rs->base && f.idx < rs->base + rs->count) {
      if (!r->vals[f.idx])
        return bc_fail(r, NULL, "operand at byte offset %zu uses a value that is never defined",
                       f.at);
      *f.slot = r->vals[f.idx];
    } else {
      r->fixups[keep++] = f;
    }
  }
  r->nfixups = keep;
  return true;
}

/* --------------------------------------------------------- small parts */

static bool skip_uselist(bc_reader *r, bc_cursor *c, uint64_t nvalues) {
  uint64_t count = 1;
  if (nvalues > 1 && (!bc_read_varint(c, &count) || count > bc_remaining(c)))
    return bc_fail(r, c, "bad use-list order count");
  for (uint64_t i = 0; i < count; i++) {
    uint64_t idx, len;
    bool pairs;
    if (nvalues > 1 && !bc_read_varint(c, &idx)) return bc_fail(r, c, "truncated use-list order");
    if (!bc_read_varint_flag(c, &len, &pairs) || len > bc_remaining(c))
      return bc_fail(r, c, "bad use-list order length");
    for (uint64_t k = 0; k < len; k++)
      if (!bc_read_varint(c, &idx)) return bc_fail(r, c, "truncated use-list order");
  }
  return true;
}

static const char *loc_text(const av_attr *a) {
  if (a && (a->kind == AV_ATTR_OPAQUE || a->kind == AV_ATTR_STRING)) return a->u.str.s;
  return "unknown";
}

/* Named attributes of one op being read (properties first, then the attribute dictionary). */
typedef struct attr_list {
  av_named_attr *items;
  size_t n, cap;
} attr_list;

static bool attrs_add(bc_reader *r, attr_list *l, const char *name, const av_attr *v) {
  if (l->n == l->cap) {
    size_t ncap = l->cap ? l->cap * 2 : 16;
    av_named_attr *p = av_arena_calloc(&r->m->arena, ncap, sizeof *p);
    if (!p) return bc_fail(r, NULL, "out of memory");
    if (l->n) memcpy(p, l->items, l->n * sizeof *p);
    l->items = p;
    l->cap = ncap;
  }
  l->items[l->n++] = (av_named_attr){name, v};
  return true;
}

static bool attrs_add_dict(bc_reader *r, attr_list *l, const av_attr *dict) {
  for (size_t i = 0; i < dict->u.dict.n; i++)
    if (!attrs_add(r, l, dict->u.dict.items[i].name, dict->u.dict.items[i].value)) return false;
  return true;
}

static const av_attr *attrs_get(const attr_list *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->items[i].name, name) == 0) return l->items[i].value;
  return NULL;
}

/* Decodes a properties blob with one schema; false (without a diagnostic) if the blob does not
 * have that schema's shape. Attributes are resolved only once the shape matched. */
static bool try_props(bc_reader *r, const bc_op_schema *s, bc_str blob, attr_list *out,
                      bool *shape_ok) {
  uint64_t idx[32];
  bool present[32];
  *shape_ok = false;
  if (s->nprops > 32) return true;
  bc_cursor c = bc_cursor_make(r->file, (const uint8_t *)blob.s, blob.len);
  for (unsigned i = 0; i < s->nprops; i++) {
    present[i] = true;
    bool ok = s->props[i].optional ? bc_read_varint_flag(&c, &idx[i], &present[i])
                                   : bc_read_varint(&c, &idx[i]);
    if (!ok || (present[i] && idx[i] >= r->nattrs)) return true;
  }
  if (!bc_at_end(&c)) return true;
  *shape_ok = true;
  for (unsigned i = 0; i < s->nprops; i++) {
    if (!present[i]) continue;
    const av_attr *a = bc_attr(r, idx[i]);
    if (!a) return bc_fail(r, NULL, "property '%s' of %s", s->props[i].name, s->name);
    if (!attrs_add(r, out, s->props[i].name, a)) return false;
  }
  return true;
}

/* Structured attributes of native stablehlo ops are DICTs (see bytecode_native_attrs.c);
 * the IR wants their fields as flat op attributes, like VHLO has them. Unit attributes become
 * BOOL true (VHLO's form). */
static bool flatten_native(bc_reader *r, attr_list *l) {
  static const char *const kStructured[] = {"dot_dimension_numbers", "dimension_numbers",
                                            "scatter_dimension_numbers", "algorithm"};
  attr_list out = {0};
  for (size_t i = 0; i < l->n; i++) {
    const av_named_attr *na = &l->items[i];
    bool flat = false;
    for (size_t k = 0; k < sizeof kStructured / sizeof kStructured[0]; k++)
      if (strcmp(na->name, kStructured[k]) == 0 && na->value->kind == AV_ATTR_DICT) flat = true;
    if (flat) {
      if (!attrs_add_dict(r, &out, na->value)) return false;
    } else if (strcmp(na->name, "channel_handle") == 0 && na->value->kind == AV_ATTR_DICT) {
      const av_attr *h = av_dict_get(na->value, "handle"), *t = av_dict_get(na->value, "type");
      if ((h && !attrs_add(r, &out, "channel_id", h)) || (t && !attrs_add(r, &out, "channel_type", t)))
        return false;
    } else if (na->value->kind == AV_ATTR_UNIT) { /* use_global_device_ids: as in VHLO */
      const av_attr *t = av_attr_bool(r->m, true);
      if (!t || !attrs_add(r, &out, na->name, t)) return false;
    } else if (!attrs_add(r, &out, na->name, na->value)) {
      return false;
    }
  }
  *l = out;
  return true;
}

static const av_attr *as_symbol(bc_reader *r, const av_attr *a) {
  if (a && a->kind == AV_ATTR_STRING) return av_attr_string(r->m, AV_ATTR_SYMBOL, a->u.str.s, a->u.str.len);
  return a;
}

/* VHLO spells symbol references as strings; the IR uses SYMBOL. */
static bool fix_symbols(bc_reader *r, const char *ir_name, attr_list *l) {
  for (size_t i = 0; i < l->n; i++) {
    av_named_attr *na = &l->items[i];
    if ((strcmp(ir_name, "func.call") == 0 && strcmp(na->name, "callee") == 0) ||
        (strcmp(ir_name, "stablehlo.composite") == 0 && strcmp(na->name, "decomposition") == 0)) {
      if (!(na->value = as_symbol(r, na->value))) return false;
    } else if (strcmp(na->name, "called_computations") == 0 && na->value->kind == AV_ATTR_ARRAY) {
      size_t n = na->value->u.array.n;
      const av_attr **items = av_arena_calloc(&r->m->arena, n + 1, sizeof *items);
      if (!items) return false;
      for (size_t k = 0; k < n; k++)
        if (!(items[k] = as_symbol(r, na->value->u.array.items[k]))) return false;
      if (!(na->value = av_attr_array(r->m, n, items))) return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------- functions */

static bool is_func_name(const char *n) {
  return strcmp(n, "vhlo.func_v1") == 0 || strcmp(n, "func.func") == 0;
}

/* Like av_func_new, but collected in the reader (see bc_reader.funcs); duplicate names are
 * checked once all functions are known. */
static av_func *new_func(bc_reader *r, const char *name, const av_type *ftype) {
  av_arena *a = &r->m->arena;
  av_func *f = av_arena_alloc(a, sizeof *f);
  if (!f || !grow((void **)&r->funcs, &r->capfuncs, r->nfuncs + 1, sizeof *r->funcs)) return NULL;
  f->name = av_arena_strdup(a, name);
  f->type = ftype;
  f->loc = "unknown";
  int nin = ftype->ninputs, nout = ftype->nelems - ftype->ninputs;
  f->arg_attrs = av_arena_calloc(a, (size_t)nin + 1, sizeof *f->arg_attrs);
  f->res_attrs = av_arena_calloc(a, (size_t)nout + 1, sizeof *f->res_attrs);
  if (!f->name || !f->arg_attrs || !f->res_attrs) return NULL;
  r->funcs[r->nfuncs++] = f;
  return f;
}

static int cmp_func_names(const void *a, const void *b) {
  return strcmp((*(av_func *const *)a)->name, (*(av_func *const *)b)->name);
}

/* Moves the collected functions and module-level ops into the module. */
static bool finish_module(bc_reader *r) {
  av_module *m = r->m;
  if (r->nfuncs > UINT32_MAX || r->nextra_ops > UINT32_MAX) return bc_fail(r, NULL, "too many ops");
  m->funcs = av_arena_calloc(&m->arena, r->nfuncs + 1, sizeof *m->funcs);
  m->extra_ops = av_arena_calloc(&m->arena, r->nextra_ops + 1, sizeof *m->extra_ops);
  av_func **sorted = malloc((r->nfuncs + 1) * sizeof *sorted);
  if (!m->funcs || !m->extra_ops || !sorted) {
    free(sorted);
    return bc_fail(r, NULL, "out of memory");
  }
  if (r->nfuncs) {
    memcpy(m->funcs, r->funcs, r->nfuncs * sizeof *m->funcs);
    memcpy(sorted, r->funcs, r->nfuncs * sizeof *sorted);
  }
  if (r->nextra_ops) memcpy(m->extra_ops, r->extra_ops, r->nextra_ops * sizeof *m->extra_ops);
  m->nfuncs = (uint32_t)r->nfuncs;
  m->funcs_cap = m->nfuncs;
  m->nextra_ops = (uint32_t)r->nextra_ops;
  qsort(sorted, r->nfuncs, sizeof *sorted, cmp_func_names);
  for (size_t i = 1; i < r->nfuncs; i++)
    if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
      bc_fail(r, NULL, "duplicate function @%s", sorted[i]->name);
      free(sorted);
      return false;
    }
  free(sorted);
  return true;
}

static bool build_func(bc_reader *r, bc_cursor *c, attr_list *attrs, const char *loc,
                       uint64_t nregions, av_func **out) {
  const av_attr *name = attrs_get(attrs, "sym_name");
  const av_attr *ftype = attrs_get(attrs, "function_type");
  const av_attr *vis = attrs_get(attrs, "sym_visibility");
  if (!name || name->kind != AV_ATTR_STRING) return bc_fail(r, c, "function without a sym_name");
  if (!ftype || ftype->kind != AV_ATTR_TYPE || !ftype->type ||
      ftype->type->kind != AV_TYPE_FUNCTION)
    return bc_fail(r, c, "function @%s has no function type", name->u.str.s);
  if (nregions != 1) return bc_fail(r, c, "function @%s must have one region", name->u.str.s);
  av_func *f = new_func(r, name->u.str.s, ftype->type);
  if (!f) return bc_fail(r, NULL, "out of memory");
  f->is_public = !(vis && vis->kind == AV_ATTR_STRING && strcmp(vis->u.str.s, "private") == 0);
  f->loc = loc;
  int nin = ftype->type->ninputs, nout = ftype->type->nelems - nin;
  static const char *const kLists[] = {"arg_attrs", "res_attrs"};
  for (int k = 0; k < 2; k++) {
    const av_attr *list = attrs_get(attrs, kLists[k]);
    if (!list || list->kind != AV_ATTR_ARRAY) continue;
    int limit = k == 0 ? nin : nout;
    if (list->u.array.n != 0 && list->u.array.n != (size_t)limit)
      return bc_fail(r, c, "function @%s: %s has %zu entries for %d %s", f->name, kLists[k],
                     list->u.array.n, limit, k == 0 ? "arguments" : "results");
    for (size_t i = 0; i < list->u.array.n; i++) {
      const av_attr *d = list->u.array.items[i];
      if (d->kind != AV_ATTR_DICT) continue;
      if (k == 0)
        f->arg_attrs[i] = d;
      else
        f->res_attrs[i] = d;
    }
  }
  attr_list rest = {0};
  static const char *const kKnown[] = {"sym_name", "function_type", "sym_visibility", "arg_attrs",
                                       "res_attrs"};
  for (size_t i = 0; i < attrs->n; i++) {
    bool known = false;
    for (size_t k = 0; k < sizeof kKnown / sizeof kKnown[0]; k++)
      if (strcmp(attrs->items[i].name, kKnown[k]) == 0) known = true;
    if (!known && !attrs_add(r, &rest, attrs->items[i].name, attrs->items[i].value)) return false;
  }
  if (rest.n && !(f->attrs = av_attr_dict(r->m, rest.n, rest.items)))
    return bc_fail(r, NULL, "out of memory");
  *out = f;
  return true;
}

/* -------------------------------------------------------------------- ops */

static bool read_op(bc_reader *r, bc_cursor *c, av_block *block, region_state *rs, op_ctx ctx) {
  size_t op_offset = bc_offset(c);
  uint64_t name_idx;
  uint8_t mask;
  if (!bc_read_varint(c, &name_idx) || !bc_read_u8(c, &mask))
    return bc_fail(r, c, "IR section: truncated op");
  if (name_idx >= r->nopnames)
    return bc_fail(r, c, "IR section: op name index %llu out of range", (unsigned long long)name_idx);
  bc_opname *on = &r->opnames[name_idx];
  const char *full = on->full;
  if (mask & 0x80) return bc_fail(r, c, "op %s: unknown encoding mask bits 0x%02x", full, mask);
  const av_attr *loc = bc_read_attr(r, c);
  if (!loc) return bc_fail(r, c, "op %s: bad location", full);

  attr_list attrs = {0};
  if (!on->schema_known) { /* looked up once per op name, not per op */
    on->schema = bc_find_op_schema(full);
    on->schema_known = true;
  }
  const bc_op_schema *schema = on->schema;
  if (!schema && r->dialects[on->dialect].kind == BC_DIALECT_VHLO)
    return bc_fail(r, c, "unknown VHLO op '%s' (producer %s; this reader knows StableHLO up to "
                         "1.20.0)", full, r->m->producer ? r->m->producer : "?");
  if (mask & 0x01) {
    const av_attr *dict = bc_read_attr(r, c);
    if (!dict) return bc_fail(r, c, "op %s: bad attribute dictionary", full);
    if (dict->kind != AV_ATTR_DICT) return bc_fail(r, c, "op %s: attributes are not a dictionary", full);
    if (!attrs_add_dict(r, &attrs, dict)) return false;
  }
  if (mask & 0x40) {
    uint64_t pidx;
    if (r->version < 5) return bc_fail(r, c, "op %s: properties before bytecode version 5", full);
    if (!bc_read_varint(c, &pidx)) return bc_fail(r, c, "op %s: truncated properties", full);
    if (!on->registered) { /* properties stored as an attribute */
      const av_attr *p = bc_attr(r, pidx);
      if (!p) return bc_fail(r, c, "op %s: bad properties attribute", full);
      if (p->kind == AV_ATTR_DICT && !attrs_add_dict(r, &attrs, p)) return false;
    } else {
      if (pidx >= r->nprops)
        return bc_fail(r, c, "op %s: properties index %llu out of range", full,
                       (unsigned long long)pidx);
      attr_list props = {0};
      bool matched = false;
      for (const bc_op_schema *s = schema; s && !matched; s = bc_next_op_schema(s)) {
        if (!try_props(r, s, r->props[pidx], &props, &matched)) return false;
      }
      if (!matched && schema)
        return bc_fail(r, c, "op %s: properties blob %llu (%zu bytes) does not match the op's "
                             "attributes", full, (unsigned long long)pidx, r->props[pidx].len);
      /* Ops of dialects whose schemas we do not know keep only their discardable attributes. */
      for (size_t i = 0; i < attrs.n; i++)
        if (!attrs_add(r, &props, attrs.items[i].name, attrs.items[i].value)) return false;
      attrs = props;
    }
  }
  uint64_t nres = 0, nopnd = 0, nsucc = 0, nreg = 0;
  bool isolated = false;
  if (mask & 0x02) {
    if (!bc_read_varint(c, &nres) || nres > bc_remaining(c))
      return bc_fail(r, c, "op %s: bad result count", full);
    if (!grow((void **)&r->scratch_types, &r->cap_scratch_types, (size_t)nres + 1,
              sizeof *r->scratch_types))
      return bc_fail(r, NULL, "out of memory");
    for (uint64_t i = 0; i < nres; i++) {
      const bc_type_slot *t = bc_read_type(r, c);
      if (!t) return bc_fail(r, c, "op %s: bad result type", full);
      r->scratch_types[i] = t->t;
    }
  }
  if (mask & 0x04) {
    if (!bc_read_varint(c, &nopnd) || nopnd > bc_remaining(c))
      return bc_fail(r, c, "op %s: bad operand count", full);
    if (!grow((void **)&r->scratch_idx, &r->cap_scratch_idx, (size_t)nopnd + 1,
              sizeof *r->scratch_idx))
      return bc_fail(r, NULL, "out of memory");
    for (uint64_t i = 0; i < nopnd; i++)
      if (!bc_read_varint(c, &r->scratch_idx[i])) return bc_fail(r, c, "op %s: truncated operands", full);
  }
  if (mask & 0x08) { /* successors: StableHLO has no branches; parsed and dropped */
    if (!bc_read_varint(c, &nsucc) || nsucc > bc_remaining(c))
      return bc_fail(r, c, "op %s: bad successor count", full);
    for (uint64_t i = 0; i < nsucc; i++) {
      uint64_t b;
      if (!bc_read_varint(c, &b)) return bc_fail(r, c, "op %s: truncated successors", full);
    }
  }
  if ((mask & 0x20) && !skip_uselist(r, c, nres)) return false;
  if (mask & 0x10) {
    if (!bc_read_varint_flag(c, &nreg, &isolated) || nreg > bc_remaining(c) + 1 || nreg > 4096)
      return bc_fail(r, c, "op %s: bad region count", full);
  }

  const char *ir_name = schema ? schema->ir_name : full;
  if (strcmp(ir_name, "stablehlo.return") == 0 && ctx == CTX_FUNC_BODY) ir_name = "func.return";
  if (r->dialects[on->dialect].kind == BC_DIALECT_STABLEHLO && !flatten_native(r, &attrs))
    return false;
  if (!fix_symbols(r, ir_name, &attrs)) return false;

  /* Values defined by this op are numbered in the enclosing region (not at module level). */
  av_func *func = NULL;
  av_op *op = NULL;
  bool is_cast = strcmp(full, "builtin.unrealized_conversion_cast") == 0;
  if (ctx == CTX_MODULE_BODY && is_func_name(full)) {
    if (nres || nopnd) return bc_fail(r, c, "function op with operands or results");
    if (!build_func(r, c, &attrs, loc_text(loc), nreg, &func)) return false;
  } else if (is_cast && nres == nopnd && ctx != CTX_MODULE_BODY) {
    /* Casts between VHLO and builtin types are identities in the IR: the results become
     * the operands, when those are already known. */
    bool all_known = true;
    for (uint64_t i = 0; i < nopnd && all_known; i++) {
      if (r->scratch_idx[i] >= r->nvals - r->scope_base) return bc_fail(r, c, "cast of unknown value");
      all_known = r->vals[r->scope_base + r->scratch_idx[i]] != NULL;
    }
    if (all_known && nreg == 0) {
      for (uint64_t i = 0; i < nopnd; i++)
        if (!define_value(r, c, rs, r->vals[r->scope_base + r->scratch_idx[i]])) return false;
      return true;
    }
  }
  if (!func) {
    op = av_op_new(r->m, ir_name, (uint32_t)nopnd, (uint32_t)nres, r->scratch_types,
                   (uint32_t)attrs.n, (uint32_t)nreg);
    if (!op) return bc_fail(r, NULL, "out of memory");
    op->loc = loc_text(loc);
    if (attrs.n) memcpy(op->attrs, attrs.items, attrs.n * sizeof *attrs.items);
    for (uint64_t i = 0; i < nopnd; i++)
      if (!use_value(r, c, r->scratch_idx[i], &op->operands[i]))
        return bc_fail(r, c, "op %s", full);
    if (ctx == CTX_MODULE_BODY) {
      if (!grow((void **)&r->extra_ops, &r->capextra_ops, r->nextra_ops + 1, sizeof *r->extra_ops))
        return bc_fail(r, NULL, "out of memory");
      r->extra_ops[r->nextra_ops++] = op;
      for (uint64_t i = 0; i < nres; i++)
        if (!define_value(r, c, rs, &op->results[i])) return false;
    } else {
      av_block_append(block, op);
      for (uint64_t i = 0; i < nres; i++)
        if (!define_value(r, c, rs, &op->results[i])) return false;
    }
  }

  if (nreg == 0) return true;
  /* Regions follow immediately. An isolated op starts a new value scope; from bytecode v2 its
   * regions are wrapped in a nested IR section. */
  bc_cursor nested, *rc = c;
  if (isolated && r->version >= 2) {
    uint8_t id;
    uint64_t len;
    if (!bc_read_u8(c, &id) || (id & 0x7F) != 4 || !bc_read_varint(c, &len) ||
        len > bc_remaining(c))
      return bc_fail(r, c, "op %s: bad nested IR section for its regions", full);
    if (id & 0x80) {
      uint64_t align;
      if (!bc_read_varint(c, &align) || !bc_align_to(c, align) || len > bc_remaining(c))
        return bc_fail(r, c, "op %s: bad alignment of nested IR section", full);
    }
    bc_sub_cursor(c, (size_t)len, &nested);
    rc = &nested;
  }
  size_t saved_base = r->scope_base;
  if (isolated) r->scope_base = r->nvals;
  if (r->region_depth >= BC_MAX_DEPTH) return bc_fail(r, c, "op %s: regions nest too deeply", full);
  r->region_depth++;
  op_ctx inner = func ? CTX_FUNC_BODY : CTX_OP_REGION;
  for (uint64_t i = 0; i < nreg; i++) {
    av_region *reg = func ? &func->body : &op->regions[i];
    if (!read_region(r, rc, reg, inner)) {
      r->region_depth--;
      return bc_fail(r, NULL, "in op %s at byte offset %zu (loc %s)", full, op_offset,
                     loc_text(loc));
    }
  }
  r->region_depth--;
  r->scope_base = saved_base;
  if (rc == &nested && !bc_at_end(&nested))
    return bc_fail(r, &nested, "op %s: trailing bytes in its nested IR section", full);
  return true;
}

/* Block header: ops count, arguments (types and optional locations), use-list orders. */
static bool read_block(bc_reader *r, bc_cursor *c, av_region *out, region_state *rs, op_ctx ctx) {
  uint64_t hdr, nargs = 0;
  if (!bc_read_varint(c, &hdr)) return bc_fail(r, c, "truncated block header");
  uint64_t nops = hdr >> 1;
  if (nops > bc_remaining(c)) return bc_fail(r, c, "block claims %llu ops", (unsigned long long)nops);
  const av_type **types = NULL;
  if (hdr & 1) {
    if (!bc_read_varint(c, &nargs) || nargs > bc_remaining(c))
      return bc_fail(r, c, "bad block argument count");
    types = av_arena_calloc(&r->m->arena, (size_t)nargs + 1, sizeof *types);
    if (!types) return bc_fail(r, NULL, "out of memory");
    for (uint64_t i = 0; i < nargs; i++) {
      uint64_t tidx, lidx;
      bool has_loc = true;
      if (r->version >= 4) {
        if (!bc_read_varint_flag(c, &tidx, &has_loc)) return bc_fail(r, c, "truncated block argument");
      } else if (!bc_read_varint(c, &tidx)) {
        return bc_fail(r, c, "truncated block argument");
      }
      const bc_type_slot *t = bc_type(r, tidx);
      if (!t) return bc_fail(r, c, "bad block argument type");
      types[i] = t->t;
      if (has_loc && (!bc_read_varint(c, &lidx) || !bc_attr(r, lidx)))
        return bc_fail(r, c, "bad block argument location");
    }
    if (r->version >= 3) {
      uint8_t has_orders;
      if (!bc_read_u8(c, &has_orders)) return bc_fail(r, c, "truncated block header");
      if (has_orders && !skip_uselist(r, c, nargs)) return false;
    }
  }
  /* The region's block array was sized by its header (av_region_add_block would copy it for
   * every block); set this block up the same way. */
  av_block *b = &out->blocks[out->nblocks];
  b->parent = out;
  b->args = av_arena_calloc(&r->m->arena, (size_t)nargs + 1, sizeof *b->args);
  if (!b->args) return bc_fail(r, NULL, "out of memory");
  b->nargs = (uint32_t)nargs;
  for (uint32_t i = 0; i < b->nargs; i++) {
    b->args[i].type = types[i];
    b->args[i].owner = b;
    b->args[i].index = i;
    b->args[i].id = r->m->next_value_id++;
  }
  out->nblocks++;
  for (uint64_t i = 0; i < nargs; i++)
    if (!define_value(r, c, rs, &b->args[i])) return false;
  uint32_t bi = out->nblocks - 1;
  for (uint64_t i = 0; i < nops; i++)
    if (!read_op(r, c, &out->blocks[bi], rs, ctx)) return false;
  return true;
}

static bool read_region(bc_reader *r, bc_cursor *c, av_region *out, op_ctx ctx) {
  uint64_t nblocks, nvalues;
  if (!bc_read_varint(c, &nblocks)) return bc_fail(r, c, "truncated region");
  if (nblocks == 0) return true;
  if (nblocks > bc_remaining(c) || !bc_read_varint(c, &nvalues))
    return bc_fail(r, c, "bad region header");
  /* Every value needs at least one byte of its own somewhere in the file, so the live values
   * (this region and all enclosing ones) can never outnumber the file's bytes. */
  if (nvalues > bc_remaining(c) || r->nvals + nvalues > r->size + 16)
    return bc_fail(r, c, "region declares %llu values, more than the input can hold",
                   (unsigned long long)nvalues);
  /* Blocks are allocated from the declared count. Every real block takes at least one byte of
   * the input, so all declarations together can never exceed the input size; checking that
   * keeps nested over-declarations from allocating more than the input justifies. */
  if (nblocks > r->block_budget)
    return bc_fail(r, c, "region declares %llu blocks, more than the input can hold",
                   (unsigned long long)nblocks);
  r->block_budget -= (size_t)nblocks;
  if (!(out->blocks = av_arena_calloc(&r->m->arena, (size_t)nblocks, sizeof *out->blocks)))
    return bc_fail(r, NULL, "out of memory");
  out->nblocks = 0;
  out->blocks_cap = (uint32_t)nblocks;
  region_state rs = {r->nvals, (size_t)nvalues, 0, r->nfixups};
  if (!grow((void **)&r->vals, &r->capvals, rs.base + rs.count + 1, sizeof *r->vals))
    return bc_fail(r, NULL, "out of memory");
  memset(r->vals + rs.base, 0, rs.count * sizeof *r->vals);
  r->nvals = rs.base + rs.count;
  for (uint64_t b = 0; b < nblocks; b++)
    if (!read_block(r, c, out, &rs, ctx)) return false;
  if (rs.next != rs.count) /* the writer counts exactly; a mismatch means a damaged file */
    return bc_fail(r, c, "region declares %zu values but defines %zu", rs.count, rs.next);
  if (!resolve_fixups(r, &rs)) return false;
  r->nvals = rs.base;
  return true;
}

/* The IR section holds one top-level block whose single op is the builtin.module. */
bool bc_read_ir(bc_reader *r, bc_cursor *c) {
  uint64_t hdr;
  if (!bc_read_varint(c, &hdr)) return bc_fail(r, c, "IR section: truncated");
  if (hdr != 2) return bc_fail(r, c, "IR section: expected one top-level op without arguments");
  uint64_t name_idx;
  uint8_t mask;
  if (!bc_read_varint(c, &name_idx) || !bc_read_u8(c, &mask) || name_idx >= r->nopnames)
    return bc_fail(r, c, "IR section: bad top-level op");
  if (strcmp(r->opnames[name_idx].full, "builtin.module") != 0)
    return bc_fail(r, c, "IR section: top-level op is %s, expected builtin.module",
                   r->opnames[name_idx].full);
  if (mask & ~0x51) return bc_fail(r, c, "IR section: unexpected parts in builtin.module (mask 0x%02x)", mask);
  if (!bc_read_attr(r, c)) return bc_fail(r, c, "IR section: bad module location");
  attr_list attrs = {0};
  if (mask & 0x01) {
    const av_attr *dict = bc_read_attr(r, c);
    if (!dict || dict->kind != AV_ATTR_DICT) return bc_fail(r, c, "IR section: bad module attributes");
    if (!attrs_add_dict(r, &attrs, dict)) return false;
  }
  if (mask & 0x40) {
    uint64_t pidx;
    bool matched = false;
    if (!bc_read_varint(c, &pidx) || pidx >= r->nprops)
      return bc_fail(r, c, "IR section: bad module properties");
    if (!try_props(r, bc_find_op_schema("builtin.module"), r->props[pidx], &attrs, &matched))
      return false;
    if (!matched) return bc_fail(r, c, "IR section: malformed module properties");
  }
  attr_list rest = {0};
  for (size_t i = 0; i < attrs.n; i++) {
    const av_named_attr *na = &attrs.items[i];
    if (strcmp(na->name, "sym_name") == 0 && na->value->kind == AV_ATTR_STRING) {
      r->m->name = na->value->u.str.s;
    } else if (strcmp(na->name, "sym_visibility") != 0 && !attrs_add(r, &rest, na->name, na->value)) {
      return false;
    }
  }
  if (rest.n && !(r->m->attrs = av_attr_dict(r->m, rest.n, rest.items)))
    return bc_fail(r, NULL, "out of memory");
  uint64_t nreg = 0;
  bool isolated = false;
  if (mask & 0x10) {
    if (!bc_read_varint_flag(c, &nreg, &isolated) || nreg != 1)
      return bc_fail(r, c, "IR section: builtin.module must have one region");
  }
  bc_cursor body = *c;
  if (nreg && isolated && r->version >= 2) {
    uint8_t id;
    uint64_t len;
    if (!bc_read_u8(c, &id) || (id & 0x7F) != 4 || !bc_read_varint(c, &len) || (id & 0x80) ||
        len > bc_remaining(c) || !bc_sub_cursor(c, (size_t)len, &body))
      return bc_fail(r, c, "IR section: bad nested section of the module body");
  }
  if (nreg) {
    av_region module_body = {0};
    if (!read_region(r, &body, &module_body, CTX_MODULE_BODY))
      return bc_fail(r, NULL, "while reading the module body");
    if (!finish_module(r)) return false;
    if (isolated && r->version >= 2 && !bc_at_end(&body))
      return bc_fail(r, &body, "IR section: trailing bytes in the module body");
    if (!(isolated && r->version >= 2)) *c = body;
  }
  if (!bc_at_end(c)) return bc_fail(r, c, "IR section: trailing bytes after the module");
  return true;
}
