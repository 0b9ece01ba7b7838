/* HLO module -> IR: computations, functions, regions and value trees. The per-instruction
 * mapping lives in hlo_ops.c. */
#include "frontend/hlo.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frontend/hlo_internal.h"

enum { kMaxNesting = 64, kOpsPerInputByte = 4, kMinOpsBudget = 1 << 20 };

/* ------------------------------------------------------------------- maps */

static size_t map_slot(int64_t key, size_t cap) {
  uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 17) & (cap - 1);
}

bool hlo_map_init(hlo_map *map, av_arena *a, size_t expected) {
  size_t cap = 16;
  while (cap < expected * 2 + 2) {
    if (cap > SIZE_MAX / 4) return false;
    cap *= 2;
  }
  map->keys = av_arena_calloc(a, cap, sizeof *map->keys);
  map->vals = av_arena_calloc(a, cap, sizeof *map->vals);
  map->cap = cap;
  map->count = 0;
  return map->keys && map->vals;
}

/* Fails on a duplicate key or a full table (the table is sized for all entries up front). */
bool hlo_map_put(hlo_map *map, int64_t key, void *val) {
  if (map->count + 1 >= map->cap) return false;
  for (size_t i = map_slot(key, map->cap);; i = (i + 1) & (map->cap - 1)) {
    if (!map->vals[i]) {
      map->keys[i] = key;
      map->vals[i] = val;
      map->count++;
      return true;
    }
    if (map->keys[i] == key) return false;
  }
}

void *hlo_map_get(const hlo_map *map, int64_t key) {
  if (!map->cap) return NULL;
  for (size_t i = map_slot(key, map->cap);; i = (i + 1) & (map->cap - 1)) {
    if (!map->vals[i]) return NULL;
    if (map->keys[i] == key) return map->vals[i];
  }
}

/* ----------------------------------------------------------------- errors */

bool hlo_fail(hlo_scope *s, const hlo_instr *in, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* every allocation failure here says "out of memory" */
  av_code code = strcmp(fmt, "out of memory") == 0 ? AV_RESOURCE_EXHAUSTED : AV_INVALID_ARGUMENT;
  if (in)
    av_diag_set(s->ctx->d, code, "hlo: computation '%s': instruction '%s' (%s): %s",
                s->comp->name, in->name, in->opcode, msg);
  else
    av_diag_set(s->ctx->d, code, "hlo: computation '%s': %s", s->comp->name, msg);
  return false;
}

/* ---------------------------------------------------------------- locations */

/* Appends `s` as an MLIR string literal body (quotes, backslashes and non-printable bytes
 * as \XX escapes). Returns the new length; writes nothing past cap. */
static size_t put_escaped(char *out, size_t k, size_t cap, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\' || ch < 0x20 || ch >= 0x7f) {
      if (k + 3 < cap) {
        out[k] = '\\';
        out[k + 1] = hex[ch >> 4];
        out[k + 2] = hex[ch & 15];
      }
      k += 3;
    } else {
      if (k + 1 < cap) out[k] = (char)ch;
      k++;
    }
  }
  return k;
}

const char *hlo_loc(av_module *m, const char *name, hlo_bytes file, int64_t line) {
  size_t nlen = strlen(name);
  if (!nlen) return "unknown";
  size_t cap = 3 * (nlen + file.n) + 48;
  char *out = av_arena_alloc(&m->arena, cap);
  if (!out) return "unknown";
  size_t k = 0;
  out[k++] = '"';
  k = put_escaped(out, k, cap, name, nlen);
  out[k++] = '"';
  if (file.n) {
    out[k++] = '(';
    out[k++] = '"';
    k = put_escaped(out, k, cap, (const char *)file.p, file.n);
    k += (size_t)snprintf(out + k, cap - k, "\":%lld:0)", (long long)(line > 0 ? line : 0));
  }
  out[k < cap ? k : cap - 1] = '\0';
  return out;
}

/* ------------------------------------------------------------ value trees */

hlo_val *hlo_val_leaf(hlo_ctx *c, av_value *v) {
  hlo_val *t = av_arena_alloc(c->scratch, sizeof *t);
  if (t) {
    t->leaf = v;
    t->nleaves = 1;
  }
  return t;
}

size_t hlo_val_count(const hlo_val *v) { return v->nleaves; }

void hlo_val_flatten(const hlo_val *v, av_value **out, size_t *k) {
  if (v->leaf) {
    out[(*k)++] = v->leaf;
    return;
  }
  for (size_t i = 0; i < v->nkids; i++) hlo_val_flatten(v->kids[i], out, k);
}

hlo_val *hlo_val_from_leaves(hlo_ctx *c, const hlo_shape *shape, av_value *const *leaves,
                             size_t *k) {
  if (!hlo_shape_is_tuple(shape)) return hlo_val_leaf(c, leaves[(*k)++]);
  hlo_val *t = av_arena_alloc(c->scratch, sizeof *t);
  if (!t) return NULL;
  t->nkids = shape->ntuple;
  t->kids = av_arena_calloc(c->scratch, shape->ntuple ? shape->ntuple : 1, sizeof *t->kids);
  if (!t->kids) return NULL;
  for (size_t i = 0; i < shape->ntuple; i++) {
    if (!(t->kids[i] = hlo_val_from_leaves(c, &shape->tuple[i], leaves, k))) return NULL;
    t->nleaves += t->kids[i]->nleaves;
    if (t->kids[i]->depth >= t->depth) t->depth = t->kids[i]->depth + 1;
  }
  if (!shape->ntuple) t->depth = 1;
  return t;
}

/* ------------------------------------------------------------ computations */

static const hlo_instr *find_root(const hlo_computation *comp) {
  for (size_t i = 0; i < comp->ninstrs; i++)
    if (comp->instrs[i].id == comp->root_id) return &comp->instrs[i];
  return comp->ninstrs ? &comp->instrs[comp->ninstrs - 1] : NULL;
}

/* Parameter instructions of `comp` by number; checks they are 0..n-1, each once. */
static bool collect_params(hlo_scope *s, const hlo_instr ***params, size_t *n) {
  const hlo_computation *comp = s->comp;
  size_t count = 0;
  for (size_t i = 0; i < comp->ninstrs; i++)
    if (strcmp(comp->instrs[i].opcode, "parameter") == 0) count++;
  *n = count;
  *params = av_arena_calloc(s->ctx->scratch, count ? count : 1, sizeof **params);
  if (!*params) return hlo_fail(s, NULL, "out of memory");
  for (size_t i = 0; i < comp->ninstrs; i++) {
    const hlo_instr *in = &comp->instrs[i];
    if (strcmp(in->opcode, "parameter") != 0) continue;
    if (in->parameter_number < 0 || (uint64_t)in->parameter_number >= count)
      return hlo_fail(s, in, "parameter number %lld out of range (%zu parameters)",
                      (long long)in->parameter_number, count);
    if ((*params)[in->parameter_number])
      return hlo_fail(s, in, "parameter number %lld appears twice",
                      (long long)in->parameter_number);
    (*params)[in->parameter_number] = in;
  }
  return true;
}

bool hlo_import_body(hlo_ctx *c, const hlo_computation *comp, av_block *block,
                     hlo_val *const *params, size_t nparams, hlo_val **root) {
  hlo_scope s = {.ctx = c, .comp = comp, .block = block, .params = params, .nparams = nparams};
  if (!hlo_map_init(&s.vals, c->scratch, comp->ninstrs))
    return hlo_fail(&s, NULL, "out of memory");
  const hlo_instr *root_in = find_root(comp);
  if (!root_in) return hlo_fail(&s, NULL, "computation has no instructions");
  for (size_t i = 0; i < comp->ninstrs; i++) {
    const hlo_instr *in = &comp->instrs[i];
    if (c->ops_budget == 0)
      return av_diag_set(c->d, AV_RESOURCE_EXHAUSTED,
                         "hlo: computation '%s': too many ops after inlining regions",
                         comp->name) == AV_OK;
    c->ops_budget--;
    hlo_val *v = NULL;
    if (!hlo_import_instr(&s, in, &v)) return false;
    if (!v) return hlo_fail(&s, in, "out of memory");
    if (!hlo_map_put(&s.vals, in->id, v))
      return hlo_fail(&s, in, "duplicate instruction id %lld", (long long)in->id);
  }
  *root = hlo_map_get(&s.vals, root_in->id);
  return *root != NULL;
}

const hlo_computation *hlo_called(hlo_scope *s, const hlo_instr *in, size_t i) {
  if (i >= in->called_ids.n) {
    hlo_fail(s, in, "needs at least %zu called computations, has %zu", i + 1, in->called_ids.n);
    return NULL;
  }
  const hlo_computation *comp = hlo_map_get(&s->ctx->comps, in->called_ids.v[i]);
  if (!comp) hlo_fail(s, in, "called computation id %lld not found", (long long)in->called_ids.v[i]);
  return comp;
}

/* Flattened parameter leaf types of `comp` (for region/function arguments). */
static bool param_leaves(hlo_scope *s, const hlo_instr *in, const hlo_computation *comp,
                         const hlo_instr ***params, size_t *nparams, const av_type ***types,
                         size_t *ntypes) {
  hlo_scope inner = {.ctx = s->ctx, .comp = comp};
  if (!collect_params(&inner, params, nparams)) return false;
  size_t n = 0;
  for (size_t i = 0; i < *nparams; i++) n += hlo_shape_leaf_count(&(*params)[i]->shape);
  *types = av_arena_calloc(s->ctx->scratch, n ? n : 1, sizeof **types);
  if (!*types) return hlo_fail(s, in, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < *nparams; i++) {
    const char *err = "bad shape";
    if (!hlo_shape_leaf_types(s->ctx->m, &(*params)[i]->shape, *types + k, &err))
      return hlo_fail(&inner, (*params)[i], "%s", err);
    k += hlo_shape_leaf_count(&(*params)[i]->shape);
  }
  *ntypes = n;
  return true;
}

static bool enter(hlo_scope *s, const hlo_instr *in, const hlo_computation *comp) {
  size_t idx = (size_t)(comp - s->ctx->pb->comps);
  if (s->ctx->active[idx])
    return hlo_fail(s, in, "computation '%s' calls itself (recursion)", comp->name);
  if (s->ctx->depth >= kMaxNesting) return hlo_fail(s, in, "computations nested too deeply");
  s->ctx->active[idx] = true;
  s->ctx->depth++;
  return true;
}

static void leave(hlo_scope *s, const hlo_computation *comp) {
  s->ctx->active[comp - s->ctx->pb->comps] = false;
  s->ctx->depth--;
}

/* Imports `comp` into `block` with parameters bound from the block arguments, then appends
 * `terminator` with the flattened root. Returns the root's leaf count in *nres. */
static bool body_from_args(hlo_scope *s, const hlo_instr *in, const hlo_computation *comp,
                           av_block *block, const hlo_instr **params, size_t nparams,
                           const char *terminator, av_op **term) {
  hlo_ctx *c = s->ctx;
  hlo_val **trees = av_arena_calloc(c->scratch, nparams ? nparams : 1, sizeof *trees);
  if (!trees) return hlo_fail(s, in, "out of memory");
  av_value **args = av_arena_calloc(c->scratch, block->nargs + 1, sizeof *args);
  if (!args) return hlo_fail(s, in, "out of memory");
  for (uint32_t i = 0; i < block->nargs; i++) args[i] = &block->args[i];
  size_t k = 0;
  for (size_t i = 0; i < nparams; i++)
    if (!(trees[i] = hlo_val_from_leaves(c, &params[i]->shape, args, &k)))
      return hlo_fail(s, in, "out of memory");
  hlo_val *root;
  if (!enter(s, in, comp)) return false;
  bool ok = hlo_import_body(c, comp, block, trees, nparams, &root);
  leave(s, comp);
  if (!ok) return false;
  size_t nres = hlo_val_count(root);
  av_op *ret = av_op_new(c->m, terminator, (uint32_t)nres, 0, NULL, 0, 0);
  if (!ret) return hlo_fail(s, in, "out of memory");
  size_t j = 0;
  hlo_val_flatten(root, ret->operands, &j);
  av_block_append(block, ret);
  if (term) *term = ret;
  return true;
}

bool hlo_region_with_args(hlo_scope *s, const hlo_instr *in, const hlo_computation *comp,
                          av_region *r) {
  const hlo_instr **params;
  size_t nparams, ntypes;
  const av_type **types;
  if (!param_leaves(s, in, comp, &params, &nparams, &types, &ntypes)) return false;
  av_block *b = av_region_add_block(s->ctx->m, r, (uint32_t)ntypes, types);
  if (!b) return hlo_fail(s, in, "out of memory");
  return body_from_args(s, in, comp, b, params, nparams, "stablehlo.return", NULL);
}

bool hlo_region_capturing(hlo_scope *s, const hlo_instr *in, const hlo_computation *comp,
                          hlo_val *arg, av_region *r) {
  hlo_ctx *c = s->ctx;
  av_block *b = av_region_add_block(c->m, r, 0, NULL);
  if (!b) return hlo_fail(s, in, "out of memory");
  hlo_val *params[1] = {arg};
  hlo_val *root;
  if (!enter(s, in, comp)) return false;
  bool ok = hlo_import_body(c, comp, b, params, 1, &root);
  leave(s, comp);
  if (!ok) return false;
  size_t nres = hlo_val_count(root);
  av_op *ret = av_op_new(c->m, "stablehlo.return", (uint32_t)nres, 0, NULL, 0, 0);
  if (!ret) return hlo_fail(s, in, "out of memory");
  size_t j = 0;
  hlo_val_flatten(root, ret->operands, &j);
  av_block_append(b, ret);
  return true;
}

/* A function name not used yet: the computation's name, else name_<id>. */
static const char *func_name(hlo_ctx *c, const hlo_computation *comp) {
  if (comp->name[0] && !av_module_find_func(c->m, comp->name)) return comp->name;
  char buf[64];
  for (int attempt = 0; attempt < 1000; attempt++) {
    snprintf(buf, sizeof buf, "computation_%lld%s%d", (long long)comp->id, attempt ? "_" : "",
             attempt);
    if (!av_module_find_func(c->m, buf)) return av_arena_strdup(&c->m->arena, buf);
  }
  return NULL;
}

/* Builds a function from `comp`: arguments are the flattened parameters, results the
 * flattened root. */
static av_func *build_func(hlo_scope *s, const hlo_instr *in, const hlo_computation *comp,
                           const char *name, bool is_public) {
  hlo_ctx *c = s->ctx;
  const hlo_instr **params;
  size_t nparams, ntypes;
  const av_type **types;
  if (!param_leaves(s, in, comp, &params, &nparams, &types, &ntypes)) return NULL;
  const hlo_instr *root = find_root(comp);
  if (!root) {
    hlo_scope inner = {.ctx = c, .comp = comp};
    hlo_fail(&inner, NULL, "computation has no instructions");
    return NULL;
  }
  size_t nres = hlo_shape_leaf_count(&root->shape);
  const av_type **res = av_arena_calloc(c->scratch, nres ? nres : 1, sizeof *res);
  const char *err = "bad shape";
  if (!res) {
    hlo_fail(s, in, "out of memory");
    return NULL;
  }
  if (!hlo_shape_leaf_types(c->m, &root->shape, res, &err)) {
    hlo_scope inner = {.ctx = c, .comp = comp};
    hlo_fail(&inner, root, "%s", err);
    return NULL;
  }
  const av_type *ft = av_type_function(c->m, (int)ntypes, types, (int)nres, res);
  av_func *f = ft ? av_func_new(c->m, name, ft) : NULL;
  if (!f) {
    hlo_fail(s, in, "out of memory");
    return NULL;
  }
  f->is_public = is_public;
  f->loc = hlo_loc(c->m, comp->name, (hlo_bytes){0}, 0);
  av_block *b = av_region_add_block(c->m, &f->body, (uint32_t)ntypes, types);
  if (!b) {
    hlo_fail(s, in, "out of memory");
    return NULL;
  }
  av_op *ret = NULL;
  if (!body_from_args(s, in, comp, b, params, nparams, "func.return", &ret)) return NULL;
  /* The root's declared shape gave the signature; the imported root must agree. */
  if (ret->noperands != nres) {
    hlo_fail(s, in, "computation '%s' root has %u values, its shape says %zu", comp->name,
             ret->noperands, nres);
    return NULL;
  }
  for (size_t i = 0; i < nres; i++)
    if (!av_type_equal(ret->operands[i]->type, res[i])) {
      hlo_scope inner = {.ctx = c, .comp = comp};
      hlo_fail(&inner, root, "root value %zu does not have the root's declared type", i);
      return NULL;
    }
  return f;
}

av_func *hlo_func_for(hlo_scope *s, const hlo_instr *in, const hlo_computation *comp) {
  size_t idx = (size_t)(comp - s->ctx->pb->comps);
  if (s->ctx->comp_funcs[idx]) return s->ctx->comp_funcs[idx];
  const char *name = func_name(s->ctx, comp);
  if (!name) {
    hlo_fail(s, in, "cannot name the function for computation '%s'", comp->name);
    return NULL;
  }
  av_func *f = build_func(s, in, comp, name, false);
  s->ctx->comp_funcs[idx] = f;
  return f;
}

/* ------------------------------------------------------------------ module */

static const hlo_computation *find_entry(hlo_ctx *c) {
  const hlo_module_pb *pb = c->pb;
  if (pb->has_entry_id) {
    const hlo_computation *e = hlo_map_get(&c->comps, pb->entry_id);
    if (e) return e;
  }
  for (size_t i = 0; i < pb->ncomps; i++)
    if (pb->entry_name[0] && strcmp(pb->comps[i].name, pb->entry_name) == 0) return &pb->comps[i];
  /* Older producers put the entry last. */
  return pb->ncomps ? &pb->comps[pb->ncomps - 1] : NULL;
}

/* Flat leaf position of the sub-shape at `index` inside `shape`; -1 if the index does not
 * name an array leaf. */
static int64_t leaf_offset(const hlo_shape *shape, const hlo_ints *index) {
  int64_t off = 0;
  for (size_t k = 0; k < index->n; k++) {
    if (!hlo_shape_is_tuple(shape) || index->v[k] < 0 || (uint64_t)index->v[k] >= shape->ntuple)
      return -1;
    for (int64_t j = 0; j < index->v[k]; j++) off += (int64_t)hlo_shape_leaf_count(&shape->tuple[j]);
    shape = &shape->tuple[index->v[k]];
  }
  return hlo_shape_is_tuple(shape) ? -1 : off;
}

/* Flat argument position of (parameter, shape index) of the entry; -1 if invalid. */
static int64_t arg_offset(const hlo_computation *entry, int64_t param, const hlo_ints *index) {
  int64_t base = 0;
  const hlo_instr *target = NULL;
  for (size_t i = 0; i < entry->ninstrs; i++) {
    const hlo_instr *in = &entry->instrs[i];
    if (strcmp(in->opcode, "parameter") != 0) continue;
    if (in->parameter_number < param) base += (int64_t)hlo_shape_leaf_count(&in->shape);
    if (in->parameter_number == param) target = in;
  }
  if (!target) return -1;
  int64_t off = leaf_offset(&target->shape, index);
  return off < 0 ? -1 : base + off;
}

/* Sets one attribute in argument `i`'s dictionary (creating or extending it). */
static bool add_arg_attr(av_module *m, av_func *f, int64_t i, const char *name,
                         const av_attr *value) {
  if (i < 0 || i >= f->type->ninputs || !value) return value != NULL;
  const av_attr *old = f->arg_attrs[i];
  size_t n = old ? old->u.dict.n : 0;
  av_named_attr items[8];
  if (n >= 8) return true;
  for (size_t k = 0; k < n; k++) {
    if (strcmp(old->u.dict.items[k].name, name) == 0) return true; /* first entry wins */
    items[k] = old->u.dict.items[k];
  }
  items[n] = (av_named_attr){name, value};
  f->arg_attrs[i] = av_attr_dict(m, n + 1, items);
  return f->arg_attrs[i] != NULL;
}

/* Donation: input_output_alias entries become "tf.aliasing_output" = output index on the
 * flattened argument (what the StableHLO path carries); buffer donors without a fixed
 * output become "jax.buffer_donor" = true. Invalid entries are ignored: donation is only a
 * permission. */
static bool import_donation(hlo_ctx *c, const hlo_computation *entry, av_func *f) {
  const hlo_instr *root = find_root(entry);
  if (!root) return true;
  for (size_t i = 0; i < c->pb->naliases; i++) {
    const hlo_alias *a = &c->pb->aliases[i];
    int64_t out = leaf_offset(&root->shape, &a->output_index);
    int64_t arg = arg_offset(entry, a->parameter_number, &a->parameter_index);
    if (out >= 0 && arg >= 0 &&
        !add_arg_attr(c->m, f, arg, "tf.aliasing_output", av_attr_int(c->m, out, c->i32)))
      return false;
  }
  for (size_t i = 0; i < c->pb->ndonors; i++) {
    const hlo_alias *a = &c->pb->donors[i];
    int64_t arg = arg_offset(entry, a->parameter_number, &a->parameter_index);
    if (arg >= 0 && !add_arg_attr(c->m, f, arg, "jax.buffer_donor", av_attr_bool(c->m, true)))
      return false;
  }
  return true;
}

av_module *av_load_hlo_proto(const void *data, size_t size, av_diag *d) {
  av_module *m = av_module_new();
  av_arena scratch;
  av_arena_init(&scratch);
  hlo_module_pb pb;
  if (!m) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "hlo: out of memory");
    return NULL;
  }
  bool ok = hlo_proto_decode(data, size, &scratch, &pb, d);
  hlo_ctx c = {.m = m, .scratch = &scratch, .d = d, .pb = &pb};
  if (ok) {
    c.comp_funcs = av_arena_calloc(&scratch, pb.ncomps + 1, sizeof *c.comp_funcs);
    c.active = av_arena_calloc(&scratch, pb.ncomps + 1, sizeof *c.active);
    c.i64 = av_type_tensor(m, AV_DT_S64, 0, NULL);
    c.i32 = av_type_tensor(m, AV_DT_S32, 0, NULL);
    c.f32 = av_type_tensor(m, AV_DT_F32, 0, NULL);
    c.ops_budget = size > SIZE_MAX / kOpsPerInputByte ? SIZE_MAX : size * kOpsPerInputByte;
    if (c.ops_budget < kMinOpsBudget) c.ops_budget = kMinOpsBudget;
    ok = c.comp_funcs && c.active && c.i64 && c.i32 && c.f32 &&
         hlo_map_init(&c.comps, &scratch, pb.ncomps);
    if (!ok) av_diag_set(d, AV_RESOURCE_EXHAUSTED, "hlo: out of memory");
  }
  for (size_t i = 0; ok && i < pb.ncomps; i++) {
    if (!hlo_map_put(&c.comps, pb.comps[i].id, &pb.comps[i])) {
      av_diag_set(d, AV_INVALID_ARGUMENT, "hlo: duplicate computation id %lld ('%s')",
                  (long long)pb.comps[i].id, pb.comps[i].name);
      ok = false;
    }
  }
  const hlo_computation *entry = ok ? find_entry(&c) : NULL;
  if (ok && !entry) {
    av_diag_set(d, AV_INVALID_ARGUMENT, "hlo: module has no computations");
    ok = false;
  }
  if (ok) {
    m->name = av_arena_strdup(&m->arena, pb.name);
    m->producer = "hlo";
    hlo_scope top = {.ctx = &c, .comp = entry};
    /* The entry is imported like a called function, but public and named "main". */
    size_t idx = (size_t)(entry - pb.comps);
    av_func *f = build_func(&top, NULL, entry, "main", true);
    c.comp_funcs[idx] = f;
    ok = f != NULL;
    if (f) f->loc = hlo_loc(m, entry->name, (hlo_bytes){0}, 0);
    if (ok && !import_donation(&c, entry, f)) {
      av_diag_set(d, AV_RESOURCE_EXHAUSTED, "hlo: out of memory");
      ok = false;
    }
  }
  av_arena_free(&scratch);
  if (!ok) {
    av_module_free(m);
    return NULL;
  }
  return m;
}
