#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

static const char *const kOpNames[AV_OP_COUNT] = {
    [AV_OP_UNKNOWN] = "<unknown>",
#define AV_OP(e, name) [AV_OP_##e] = name,
#include "ir/ops.def"
#undef AV_OP
};

const char *av_opcode_name(av_opcode op) {
  return (unsigned)op < AV_OP_COUNT ? kOpNames[op] : kOpNames[AV_OP_UNKNOWN];
}

/* Name lengths, so the lookup compares bytes only for names of the right length. */
static const uint8_t kOpNameLens[AV_OP_COUNT] = {
#define AV_OP(e, name) [AV_OP_##e] = (uint8_t)(sizeof(name) - 1),
#include "ir/ops.def"
#undef AV_OP
};

av_opcode av_opcode_from_name(const char *name, size_t len) {
  /* A linear scan, called once per op while loading: comparing lengths first keeps it to a
   * few memcmp calls (it was 15% of compiling a transformer with strncmp on every entry). */
  for (int i = 1; i < AV_OP_COUNT; i++) {
    if (kOpNameLens[i] == len && memcmp(kOpNames[i], name, len) == 0) return (av_opcode)i;
  }
  return AV_OP_UNKNOWN;
}

/* ---------------------------------------------------------------- types */

int64_t av_type_num_elements(const av_type *t) {
  if (!t || t->kind != AV_TYPE_TENSOR) return -1;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    int64_t d = t->dims[i];
    if (d < 0) return -1;
    if (d != 0 && n > INT64_MAX / d) return -1;
    n *= d;
  }
  return n;
}

bool av_type_is_static(const av_type *t) { return av_type_num_elements(t) >= 0; }

bool av_type_equal(const av_type *a, const av_type *b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind) return false;
  switch (a->kind) {
    case AV_TYPE_TENSOR:
      if (a->dtype != b->dtype || a->rank != b->rank) return false;
      for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
      return av_quant_equal(a->quant, b->quant);
    case AV_TYPE_TOKEN:
      return true;
    case AV_TYPE_TUPLE:
    case AV_TYPE_FUNCTION:
      if (a->nelems != b->nelems || a->ninputs != b->ninputs) return false;
      for (int i = 0; i < a->nelems; i++)
        if (!av_type_equal(a->elems[i], b->elems[i])) return false;
      return true;
    case AV_TYPE_OTHER:
      return a->text && b->text && strcmp(a->text, b->text) == 0;
  }
  return false;
}

bool av_quant_equal(const av_quant *a, const av_quant *b) {
  if (a == b) return true;
  if (!a || !b || a->expressed != b->expressed || a->storage_min != b->storage_min ||
      a->storage_max != b->storage_max || a->axis != b->axis || a->n != b->n)
    return false;
  for (uint32_t i = 0; i < a->n; i++)
    if (a->scales[i] != b->scales[i] || a->zero_points[i] != b->zero_points[i]) return false;
  return true;
}

bool av_quant_storage_range(av_dtype storage, int64_t *min, int64_t *max) {
  int bits = av_dtype_bits(storage);
  if (!av_dtype_is_int(storage) || bits < 1 || bits > 64) return false;
  if (av_dtype_is_signed_int(storage)) {
    *min = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
    *max = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
  } else {
    *min = 0;
    *max = bits >= 63 ? INT64_MAX : ((int64_t)1 << bits) - 1;
  }
  return true;
}

/* ------------------------------------------------------------- building */

av_module *av_module_new(void) {
  av_module *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  av_arena_init(&m->arena);
  return m;
}

void av_module_free(av_module *m) {
  if (!m) return;
  av_arena_free(&m->arena);
  free(m);
}

const av_type *av_type_tensor(av_module *m, av_dtype dt, int rank, const int64_t *dims) {
  if (rank < 0) return NULL;
  av_type *t = av_arena_alloc(&m->arena, sizeof *t);
  if (!t) return NULL;
  t->kind = AV_TYPE_TENSOR;
  t->dtype = dt;
  t->rank = rank;
  if (rank > 0) {
    int64_t *d = av_arena_memdup(&m->arena, dims, sizeof(int64_t) * (size_t)rank);
    if (!d) return NULL;
    t->dims = d;
  }
  return t;
}

const av_type *av_type_quantized(av_module *m, av_dtype storage, int rank, const int64_t *dims,
                                 const av_quant *q) {
  av_type *t = (av_type *)av_type_tensor(m, storage, rank, dims);
  av_quant *c = av_arena_memdup(&m->arena, q, sizeof *q);
  if (!t || !c || q->n == 0) return NULL;
  c->scales = av_arena_memdup(&m->arena, q->scales, sizeof(double) * q->n);
  c->zero_points = av_arena_memdup(&m->arena, q->zero_points, sizeof(int64_t) * q->n);
  if (!c->scales || !c->zero_points) return NULL;
  t->quant = c;
  return t;
}

const av_type *av_type_token(av_module *m) {
  av_type *t = av_arena_alloc(&m->arena, sizeof *t);
  if (t) t->kind = AV_TYPE_TOKEN;
  return t;
}

static const av_type *make_composite(av_module *m, av_type_kind kind, int n, int nin,
                                     const av_type *const *in, const av_type *const *out) {
  if (n < 0 || nin < 0 || nin > n) return NULL;
  av_type *t = av_arena_alloc(&m->arena, sizeof *t);
  const av_type **elems = av_arena_calloc(&m->arena, (size_t)n + 1, sizeof *elems);
  if (!t || !elems) return NULL;
  for (int i = 0; i < nin; i++) elems[i] = in[i];
  for (int i = nin; i < n; i++) elems[i] = out[i - nin];
  t->kind = kind;
  t->nelems = n;
  t->ninputs = kind == AV_TYPE_FUNCTION ? nin : 0;
  t->elems = elems;
  return t;
}

const av_type *av_type_tuple(av_module *m, int n, const av_type *const *elems) {
  return make_composite(m, AV_TYPE_TUPLE, n, n, elems, NULL);
}

const av_type *av_type_function(av_module *m, int nin, const av_type *const *in, int nout,
                                const av_type *const *out) {
  if (nout < 0 || nin > INT32_MAX - nout) return NULL;
  return make_composite(m, AV_TYPE_FUNCTION, nin + nout, nin, in, out);
}

static av_attr *new_attr(av_module *m, av_attr_kind kind) {
  av_attr *a = av_arena_alloc(&m->arena, sizeof *a);
  if (a) a->kind = kind;
  return a;
}

const av_attr *av_attr_unit(av_module *m) { return new_attr(m, AV_ATTR_UNIT); }

const av_attr *av_attr_bool(av_module *m, bool b) {
  av_attr *a = new_attr(m, AV_ATTR_BOOL);
  if (a) a->u.b = b;
  return a;
}

const av_attr *av_attr_int(av_module *m, int64_t v, const av_type *type) {
  av_attr *a = new_attr(m, AV_ATTR_INT);
  if (a) {
    a->u.i = v;
    a->type = type;
  }
  return a;
}

const av_attr *av_attr_float(av_module *m, double v, const av_type *type) {
  av_attr *a = new_attr(m, AV_ATTR_FLOAT);
  if (a) {
    a->u.f = v;
    a->type = type;
  }
  return a;
}

const av_attr *av_attr_string(av_module *m, av_attr_kind kind, const char *s, size_t len) {
  av_attr *a = new_attr(m, kind);
  if (!a) return NULL;
  char *copy = av_arena_strndup(&m->arena, s, len);
  if (!copy) return NULL;
  a->u.str.s = copy;
  a->u.str.len = len;
  return a;
}

const av_attr *av_attr_type(av_module *m, const av_type *t) {
  av_attr *a = new_attr(m, AV_ATTR_TYPE);
  if (a) a->type = t;
  return a;
}

const av_attr *av_attr_array(av_module *m, size_t n, const av_attr *const *items) {
  av_attr *a = new_attr(m, AV_ATTR_ARRAY);
  if (!a) return NULL;
  const av_attr **copy = av_arena_calloc(&m->arena, n ? n : 1, sizeof *copy);
  if (!copy) return NULL;
  for (size_t i = 0; i < n; i++) copy[i] = items[i];
  a->u.array.items = copy;
  a->u.array.n = n;
  return a;
}

const av_attr *av_attr_dict(av_module *m, size_t n, const av_named_attr *items) {
  av_attr *a = new_attr(m, AV_ATTR_DICT);
  if (!a) return NULL;
  av_named_attr *copy = av_arena_calloc(&m->arena, n ? n : 1, sizeof *copy);
  if (!copy) return NULL;
  for (size_t i = 0; i < n; i++) copy[i] = items[i];
  a->u.dict.items = copy;
  a->u.dict.n = n;
  return a;
}

const av_attr *av_attr_ints(av_module *m, size_t n, const int64_t *v) {
  av_attr *a = new_attr(m, AV_ATTR_INTS);
  if (!a) return NULL;
  int64_t *copy = av_arena_calloc(&m->arena, n ? n : 1, sizeof *copy);
  if (!copy) return NULL;
  if (n) memcpy(copy, v, n * sizeof *copy);
  a->u.ints.v = copy;
  a->u.ints.n = n;
  return a;
}

const av_attr *av_attr_bools(av_module *m, size_t n, const bool *v) {
  av_attr *a = new_attr(m, AV_ATTR_BOOLS);
  if (!a) return NULL;
  bool *copy = av_arena_calloc(&m->arena, n ? n : 1, sizeof *copy);
  if (!copy) return NULL;
  if (n) memcpy(copy, v, n * sizeof *copy);
  a->u.bools.v = copy;
  a->u.bools.n = n;
  return a;
}

const av_attr *av_attr_dense(av_module *m, const av_type *type, const void *data, size_t size,
                             bool splat, bool borrow) {
  av_attr *a = new_attr(m, AV_ATTR_DENSE);
  if (!a) return NULL;
  a->type = type;
  if (borrow || size == 0) {
    a->u.dense.data = data;
  } else {
    a->u.dense.data = av_arena_memdup(&m->arena, data, size);
    if (!a->u.dense.data) return NULL;
  }
  a->u.dense.size = size;
  a->u.dense.splat = splat;
  return a;
}

static const av_attr *find_named(const av_named_attr *items, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (items[i].name && strcmp(items[i].name, name) == 0) return items[i].value;
  return NULL;
}

const av_attr *av_op_attr(const av_op *op, const char *name) {
  return find_named(op->attrs, op->nattrs, name);
}

const av_attr *av_dict_get(const av_attr *dict, const char *name) {
  if (!dict || dict->kind != AV_ATTR_DICT) return NULL;
  return find_named(dict->u.dict.items, dict->u.dict.n, name);
}

av_func *av_func_new(av_module *m, const char *name, const av_type *ftype) {
  if (!ftype || ftype->kind != AV_TYPE_FUNCTION) return NULL;
  av_func *f = av_arena_alloc(&m->arena, sizeof *f);
  if (!f) return NULL;
  f->name = av_arena_strdup(&m->arena, name);
  f->type = ftype;
  f->loc = "unknown";
  int nin = ftype->ninputs, nout = ftype->nelems - ftype->ninputs;
  f->arg_attrs = av_arena_calloc(&m->arena, (size_t)nin + 1, sizeof *f->arg_attrs);
  f->res_attrs = av_arena_calloc(&m->arena, (size_t)nout + 1, sizeof *f->res_attrs);
  if (!f->name || !f->arg_attrs || !f->res_attrs) return NULL;
  if (m->nfuncs == m->funcs_cap) { /* grow by doubling: linear total cost */
    if (m->funcs_cap > UINT32_MAX / 2) return NULL;
    uint32_t cap = m->funcs_cap ? 2 * m->funcs_cap : 8;
    av_func **funcs = av_arena_calloc(&m->arena, cap, sizeof *funcs);
    if (!funcs) return NULL;
    if (m->nfuncs) memcpy(funcs, m->funcs, m->nfuncs * sizeof *funcs);
    m->funcs = funcs;
    m->funcs_cap = cap;
  }
  m->funcs[m->nfuncs++] = f;
  return f;
}

av_op *av_op_new(av_module *m, const char *name, uint32_t noperands, uint32_t nresults,
                 const av_type *const *result_types, uint32_t nattrs, uint32_t nregions) {
  av_arena *a = &m->arena;
  av_op *op = av_arena_alloc(a, sizeof *op);
  if (!op) return NULL;
  op->name = av_arena_strdup(a, name);
  op->code = av_opcode_from_name(name, strlen(name));
  op->operands = av_arena_calloc(a, (size_t)noperands + 1, sizeof *op->operands);
  op->results = av_arena_calloc(a, (size_t)nresults + 1, sizeof *op->results);
  op->attrs = av_arena_calloc(a, (size_t)nattrs + 1, sizeof *op->attrs);
  op->regions = av_arena_calloc(a, (size_t)nregions + 1, sizeof *op->regions);
  if (!op->name || !op->operands || !op->results || !op->attrs || !op->regions) return NULL;
  op->noperands = noperands;
  op->nresults = nresults;
  op->nattrs = nattrs;
  op->nregions = nregions;
  op->loc = "unknown";
  for (uint32_t i = 0; i < nresults; i++) {
    op->results[i].type = result_types ? result_types[i] : NULL;
    op->results[i].def = op;
    op->results[i].index = i;
    op->results[i].id = m->next_value_id++;
  }
  return op;
}

void av_block_append(av_block *b, av_op *op) {
  op->parent = b;
  op->next = NULL;
  op->prev = b->last;
  if (b->last)
    b->last->next = op;
  else
    b->first = op;
  b->last = op;
  b->nops++;
}

void av_block_insert_before(av_block *b, av_op *before, av_op *op) {
  if (!before) {
    av_block_append(b, op);
    return;
  }
  op->parent = b;
  op->next = before;
  op->prev = before->prev;
  if (before->prev)
    before->prev->next = op;
  else
    b->first = op;
  before->prev = op;
  b->nops++;
}

void av_block_remove(av_block *b, av_op *op) {
  if (op->prev)
    op->prev->next = op->next;
  else
    b->first = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    b->last = op->prev;
  op->prev = op->next = NULL;
  op->parent = NULL;
  b->nops--;
}

static int count_uses_at(const av_region *rg, const av_value *v, int cap, int depth) {
  int n = 0;
  if (depth > 64) return cap;
  for (uint32_t b = 0; b < rg->nblocks && n < cap; b++)
    for (const av_op *op = rg->blocks[b].first; op && n < cap; op = op->next) {
      for (uint32_t i = 0; i < op->noperands; i++) n += op->operands[i] == v;
      for (uint32_t i = 0; i < op->nregions && n < cap; i++)
        n += count_uses_at(&op->regions[i], v, cap - n, depth + 1);
    }
  return n;
}

int av_region_count_uses(const av_region *rg, const av_value *v, int cap) {
  return count_uses_at(rg, v, cap, 0);
}

av_block *av_region_add_block(av_module *m, av_region *r, uint32_t nargs,
                              const av_type *const *types) {
  if (r->nblocks == r->blocks_cap) { /* grow by doubling: linear total cost */
    if (r->blocks_cap > UINT32_MAX / 2) return NULL;
    uint32_t cap = r->blocks_cap ? 2 * r->blocks_cap : 1;
    av_block *blocks = av_arena_calloc(&m->arena, cap, sizeof *blocks);
    if (!blocks) return NULL;
    /* Blocks move: re-point their ops and arguments at the new storage. */
    for (uint32_t i = 0; i < r->nblocks; i++) {
      blocks[i] = r->blocks[i];
      for (av_op *op = blocks[i].first; op; op = op->next) op->parent = &blocks[i];
      for (uint32_t j = 0; j < blocks[i].nargs; j++) blocks[i].args[j].owner = &blocks[i];
    }
    r->blocks = blocks;
    r->blocks_cap = cap;
  }
  av_block *b = &r->blocks[r->nblocks];
  b->parent = r;
  b->args = av_arena_calloc(&m->arena, (size_t)nargs + 1, sizeof *b->args);
  if (!b->args) return NULL;
  b->nargs = nargs;
  for (uint32_t i = 0; i < nargs; i++) {
    b->args[i].type = types ? types[i] : NULL;
    b->args[i].owner = b;
    b->args[i].index = i;
    b->args[i].id = m->next_value_id++;
  }
  r->nblocks++;
  return b;
}

av_func *av_module_find_func(const av_module *m, const char *name) {
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
  return NULL;
}

av_func *av_module_entry(const av_module *m) {
  av_func *main_fn = av_module_find_func(m, "main");
  if (main_fn && main_fn->is_public) return main_fn;
  av_func *only = NULL;
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    if (!m->funcs[i]->is_public) continue;
    if (only) return main_fn; /* several public functions: only "main" qualifies */
    only = m->funcs[i];
  }
  return only ? only : main_fn;
}
