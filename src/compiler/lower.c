/* Lowering core: functions, blocks, slots, dead code, liveness. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "compiler/cost.h"
#include "compiler/lower_internal.h"
#include "compiler/sharding_lower.h"
#include "runtime/collectives.h"

bool av_lower_fail(av_lower *c, av_code code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  c->nerrors++;
  if (code == AV_RESOURCE_EXHAUSTED) c->out_of_memory = true;
  if (c->op)
    av_diag_set(c->d, code, "%s: %s (at %s)", c->op->name, msg, c->op->loc);
  else
    av_diag_set(c->d, code, "%s", msg);
  return false;
}

void *av_lower_alloc(av_lower *c, size_t size) {
  void *p = av_arena_alloc(c->a, size ? size : 1);
  if (!p) av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
  return p;
}

void av_op_list_name_start(av_op_list_name *l, const char *prefix) {
  size_t n = strlen(prefix);
  if (n > sizeof l->buf / 2) n = sizeof l->buf / 2;
  memcpy(l->buf, prefix, n);
  l->buf[n++] = '[';
  l->n = l->start = n;
  l->full = false;
}

void av_op_list_name_add(av_op_list_name *l, const char *op, size_t len) {
  if (l->full) return;
  size_t sep = l->n > l->start;
  if (l->n + sep + len + 5 > sizeof l->buf) { /* room for "...]" and the NUL */
    memcpy(l->buf + l->n, "...", 3);
    l->n += 3;
    l->full = true;
    return;
  }
  if (sep) l->buf[l->n++] = ',';
  memcpy(l->buf + l->n, op, len);
  l->n += len;
}

const char *av_op_list_name_finish(av_lower *c, av_op_list_name *l, const char *fallback) {
  l->buf[l->n++] = ']';
  char *name = av_lower_alloc(c, l->n + 1);
  if (!name) return fallback;
  memcpy(name, l->buf, l->n);
  name[l->n] = '\0';
  return name;
}

/* ------------------------------------------------------------------ slots */

int av_type_leaves(const av_type *t) {
  if (!t) return -1;
  switch (t->kind) {
    case AV_TYPE_TENSOR:
    case AV_TYPE_TOKEN: return 1;
    case AV_TYPE_TUPLE: {
      int n = 0;
      for (int i = 0; i < t->nelems; i++) {
        int k = av_type_leaves(t->elems[i]);
        if (k < 0) return -1;
        n += k;
      }
      return n;
    }
    default: return -1;
  }
}

static bool supported_dtype(av_dtype t) { return t > AV_DT_INVALID && t < AV_DT_COUNT; }

bool av_slot_type_of(av_lower *c, const av_type *t, av_slot_type *out) {
  memset(out, 0, sizeof *out);
  if (t->kind == AV_TYPE_TOKEN) {
    out->token = true;
    return true;
  }
  if (t->kind != AV_TYPE_TENSOR) return false;
  if (!supported_dtype(t->dtype)) return false;
  if (t->rank < 0 || t->rank > AV_BOX_MAX_RANK) return false;
  int64_t n = av_type_num_elements(t);
  if (n < 0) return false;
  size_t es = av_dtype_size(t->dtype);
  if ((uint64_t)n > (uint64_t)(SIZE_MAX / 2) / es) return false;
  out->dtype = t->dtype;
  out->rank = t->rank;
  int64_t *dims = av_arena_calloc(c->a, (size_t)t->rank + 1, sizeof *dims);
  if (!dims) return av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < t->rank; i++) dims[i] = t->dims[i];
  out->dims = dims;
  out->nelems = n;
  out->nbytes = (size_t)n * es;
  return true;
}

int32_t av_lower_new_slot(av_lower *c, const av_slot_type *t) {
  if (c->nslots == c->nchunks * AV_SLOT_CHUNK) {
    av_slot_type **nc = realloc(c->type_chunks, (c->nchunks + 1) * sizeof *nc);
    av_slot_type *chunk = nc ? malloc(AV_SLOT_CHUNK * sizeof *chunk) : NULL;
    if (nc) c->type_chunks = nc;
    if (!chunk) {
      av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
      return -1;
    }
    c->type_chunks[c->nchunks++] = chunk;
  }
  *av_stype(c, (int32_t)c->nslots) = *t;
  return (int32_t)c->nslots++;
}

static void type_text(const av_type *t, char *buf, size_t cap) {
  if (!t) {
    snprintf(buf, cap, "<none>");
    return;
  }
  switch (t->kind) {
    case AV_TYPE_OTHER: snprintf(buf, cap, "%s", t->text ? t->text : "<other>"); return;
    case AV_TYPE_TUPLE: snprintf(buf, cap, "tuple"); return;
    case AV_TYPE_FUNCTION: snprintf(buf, cap, "function"); return;
    case AV_TYPE_TOKEN: snprintf(buf, cap, "!stablehlo.token"); return;
    case AV_TYPE_TENSOR: break;
  }
  size_t len = (size_t)snprintf(buf, cap, "tensor<");
  for (int i = 0; i < t->rank && len < cap; i++) {
    if (t->dims[i] < 0)
      len += (size_t)snprintf(buf + len, cap - len, "?x");
    else
      len += (size_t)snprintf(buf + len, cap - len, "%lldx", (long long)t->dims[i]);
  }
  if (len < cap) snprintf(buf + len, cap - len, "%s>", av_dtype_mlir_name(t->dtype));
}

/* Assigns consecutive slots to the leaves of value v. */
static bool assign_leaves(av_lower *c, const av_type *t, int32_t *first) {
  if (t && t->kind == AV_TYPE_TUPLE) {
    for (int i = 0; i < t->nelems; i++) {
      int32_t f = -1;
      if (!assign_leaves(c, t->elems[i], &f)) return false;
      if (*first < 0) *first = f;
    }
    return true;
  }
  av_slot_type st;
  bool ok = t && av_slot_type_of(c, t, &st);
  if (!ok) {
    if (c->out_of_memory) return false;
    char buf[128];
    type_text(t, buf, sizeof buf);
    bool tensor = t && t->kind == AV_TYPE_TENSOR, dynamic = false;
    for (int i = 0; tensor && i < t->rank; i++) dynamic = dynamic || t->dims[i] < 0;
    if (tensor && !dynamic && av_type_num_elements(t) < 0)
      av_lower_fail(c, AV_INVALID_ARGUMENT, "the element count of %s overflows 64 bits", buf);
    else if (tensor && !dynamic && supported_dtype(t->dtype) && t->rank <= AV_BOX_MAX_RANK)
      av_lower_fail(c, AV_INVALID_ARGUMENT, "%s needs more bytes than an address space holds", buf);
    else
      av_lower_fail(c, AV_UNIMPLEMENTED, "%s: %s",
                    dynamic ? "dynamic shapes are not supported" : "type not supported", buf);
  } else if (!st.token && st.nbytes > c->memory_bytes) {
    /* no run could ever allocate it: refuse now, not at run time (or in a loop's 1000th trip) */
    char buf[128];
    type_text(t, buf, sizeof buf);
    av_lower_fail(c, AV_RESOURCE_EXHAUSTED,
                  "%s needs %zu bytes, more than this machine's %zu bytes of memory", buf,
                  st.nbytes, c->memory_bytes);
    ok = false;
  }
  if (!ok) {
    st = (av_slot_type){0};
    st.token = true; /* keep going so every problem gets reported */
  }
  int32_t s = av_lower_new_slot(c, &st);
  if (s < 0) return false;
  if (*first < 0) *first = s;
  return true;
}

static bool assign_value(av_lower *c, const av_value *v) {
  int32_t first = -1;
  if (v->type && v->type->kind == AV_TYPE_TUPLE && v->type->nelems == 0) {
    av_slot_type st = {0};
    st.token = true;
    first = av_lower_new_slot(c, &st); /* empty tuple: a placeholder slot */
  } else if (!assign_leaves(c, v->type, &first)) {
    return false;
  }
  if (v->id >= c->nvalues) {
    av_lower_fail(c, AV_INVALID_ARGUMENT, "value id %u out of range", v->id);
    return false;
  }
  c->slot_of[v->id] = first;
  c->owner[v->id] = c->func_no;
  return first >= 0;
}

static int value_leaves(const av_value *v) {
  int n = av_type_leaves(v->type);
  if (v->type && v->type->kind == AV_TYPE_TUPLE && v->type->nelems == 0) return 1;
  return n < 1 ? 1 : n;
}

const av_slot_type *av_vtype(const av_lower *c, const av_value *v) {
  int32_t s = av_vslot(c, v);
  return s < 0 ? NULL : av_stype(c, s);
}

const av_slot_type *av_tensor_of(av_lower *c, const av_value *v, const char *what) {
  if (!v->type || v->type->kind != AV_TYPE_TENSOR) {
    av_lower_fail(c, AV_INVALID_ARGUMENT, "%s must be a tensor", what);
    return NULL;
  }
  const av_slot_type *t = av_vtype(c, v);
  if (!t) {
    av_lower_fail(c, AV_INVALID_ARGUMENT, "%s is not defined where it is used", what);
    return NULL;
  }
  if (t->token) return NULL; /* type problem already reported */
  return t;
}

/* ------------------------------------------------------------------ steps */

av_step *av_emit(av_lower *c, av_step_fn fn, const void *params, uint32_t nin, uint32_t nout) {
  av_step_vec *sv = c->cur;
  if (sv->n == sv->cap) {
    uint32_t cap = sv->cap ? sv->cap * 2 : 16;
    av_step *nv = realloc(sv->v, cap * sizeof *nv);
    if (!nv) {
      av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
      return NULL;
    }
    sv->v = nv;
    sv->cap = cap;
  }
  av_step *s = &sv->v[sv->n];
  memset(s, 0, sizeof *s);
  int32_t *in = av_arena_calloc(c->a, (size_t)nin + 1, sizeof *in);
  int32_t *out = av_arena_calloc(c->a, (size_t)nout + 1, sizeof *out);
  if (!in || !out) {
    av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  sv->n++;
  s->run = fn;
  s->params = params;
  s->in = in;
  s->nin = nin;
  s->out = out;
  s->nout = nout;
  s->opname = c->op ? c->op->name : "";
  s->loc = c->op ? c->op->loc : "";
  if (c->op) {
    av_cost cost = av_op_cost(c->op);
    s->flops = cost.flops + cost.transcendentals;
    s->bytes = cost.bytes_accessed;
  }
  return s;
}

av_step *av_emit_op(av_lower *c, av_step_fn fn, const void *params) {
  const av_op *op = c->op;
  uint32_t nin = 0, nout = 0;
  for (uint32_t i = 0; i < op->noperands; i++) nin += (uint32_t)value_leaves(op->operands[i]);
  for (uint32_t i = 0; i < op->nresults; i++) nout += (uint32_t)value_leaves(&op->results[i]);
  for (uint32_t i = 0; i < op->noperands; i++)
    if (av_vslot(c, op->operands[i]) < 0)
      return av_lower_fail(c, AV_INTERNAL, "operand %u has no slot", i), NULL;
  for (uint32_t i = 0; i < op->nresults; i++)
    if (av_vslot(c, &op->results[i]) < 0)
      return av_lower_fail(c, AV_INTERNAL, "result %u has no slot", i), NULL;
  av_step *s = av_emit(c, fn, params, nin, nout);
  if (!s) return NULL;
  int32_t *in = (int32_t *)s->in, *out = (int32_t *)s->out;
  uint32_t k = 0;
  for (uint32_t i = 0; i < op->noperands; i++) {
    int n = value_leaves(op->operands[i]);
    for (int j = 0; j < n; j++) in[k++] = av_vslot(c, op->operands[i]) + j;
  }
  k = 0;
  for (uint32_t i = 0; i < op->nresults; i++) {
    int n = value_leaves(&op->results[i]);
    for (int j = 0; j < n; j++) out[k++] = av_vslot(c, &op->results[i]) + j;
  }
  return s;
}

/* Room for one more storage the plan releases when it is freed. */
static bool plan_keep_room(av_lower *c) {
  av_plan *p = c->plan;
  if (p->nconsts < p->consts_cap) return true;
  uint32_t cap = p->consts_cap ? p->consts_cap * 2 : 16;
  av_storage **nc = realloc(p->consts, cap * sizeof *nc);
  if (!nc) return av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
  p->consts = nc;
  p->consts_cap = cap;
  return true;
}

av_storage *av_lower_const_storage(av_lower *c, size_t nbytes) {
  av_plan *p = c->plan;
  if (!plan_keep_room(c)) return NULL;
  av_storage *st = av_storage_alloc(nbytes);
  if (!st) {
    av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory for a %zu byte constant", nbytes);
    return NULL;
  }
  p->consts[p->nconsts++] = st;
  return st;
}

struct av_cg_code *av_lower_code(av_lower *c) {
  if (!c->code) {
    av_cg_code *code = av_codegen_code_new();
    if (code && av_lower_own(c, code, av_codegen_code_free)) c->code = code;
  }
  return c->code;
}

bool av_lower_own(av_lower *c, void *obj, void (*free_fn)(void *)) {
  av_storage *st = plan_keep_room(c) ? av_storage_wrap(obj, 0, free_fn, obj) : NULL;
  if (!st) {
    free_fn(obj);
    return av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  c->plan->consts[c->plan->nconsts++] = st;
  return true;
}

av_storage *av_lower_dense(av_lower *c, const av_attr *a, const av_slot_type *t) {
  if (!a || a->kind != AV_ATTR_DENSE) {
    av_lower_fail(c, AV_INVALID_ARGUMENT, "expected a dense elements attribute");
    return NULL;
  }
  size_t es = av_dtype_size(t->dtype);
  if (a->type && a->type->kind == AV_TYPE_TENSOR && a->type->dtype != t->dtype) {
    av_lower_fail(c, AV_INVALID_ARGUMENT, "constant of %s used as %s",
                  av_dtype_mlir_name(a->type->dtype), av_dtype_mlir_name(t->dtype));
    return NULL;
  }
  if (a->u.dense.size != es && a->u.dense.size != t->nbytes) {
    av_lower_fail(c, AV_INVALID_ARGUMENT, "constant holds %zu bytes, its type needs %zu",
                  a->u.dense.size, a->u.dense.splat ? es : t->nbytes);
    return NULL;
  }
  av_storage *st = av_lower_const_storage(c, t->nbytes);
  if (!st) return NULL;
  if (!av_attr_dense_copy(a, t->dtype, t->nelems, st->data)) {
    av_lower_fail(c, AV_INVALID_ARGUMENT, "constant holds %zu bytes, its type needs %zu",
                  a->u.dense.size, es);
    return NULL;
  }
  return st;
}

/* ------------------------------------------------------------- functions */

const av_func_plan *const *av_lower_need_func(av_lower *c, const char *name) {
  for (uint32_t i = 0; i < c->m->nfuncs; i++) {
    if (strcmp(c->m->funcs[i]->name, name) == 0) {
      if (c->funcs[i].state == 0) c->funcs[i].state = 1;
      return &c->funcs[i].plan;
    }
  }
  av_lower_fail(c, AV_INVALID_ARGUMENT, "call to unknown function @%s", name);
  return NULL;
}

/* Visits the operands of op and of every op nested in its regions. */
typedef void (*operand_fn)(av_lower *c, const av_value *v, void *ctx);
static void for_each_operand_deep(av_lower *c, const av_op *op, operand_fn fn, void *ctx) {
  for (uint32_t i = 0; i < op->noperands; i++) fn(c, op->operands[i], ctx);
  for (uint32_t r = 0; r < op->nregions; r++)
    for (uint32_t b = 0; b < op->regions[r].nblocks; b++)
      for (const av_op *in = op->regions[r].blocks[b].first; in; in = in->next)
        for_each_operand_deep(c, in, fn, ctx);
}

bool av_op_has_side_effects(const av_op *op) {
  switch (op->code) {
    case AV_OP_CUSTOM_CALL: case AV_OP_UNKNOWN: case AV_OP_FUNC_CALL: case AV_OP_CALL:
    case AV_OP_OUTFEED: case AV_OP_SEND: case AV_OP_RECV: case AV_OP_INFEED:
    case AV_OP_RNG: case AV_OP_COMPOSITE:
      return true;
    default: break;
  }
  for (uint32_t r = 0; r < op->nregions; r++)
    for (uint32_t b = 0; b < op->regions[r].nblocks; b++)
      for (const av_op *in = op->regions[r].blocks[b].first; in; in = in->next)
        if (av_op_has_side_effects(in)) return true;
  return false;
}

static void mark_used(av_lower *c, const av_value *v, void *ctx) {
  (void)ctx;
  c->used[v->id] = 1;
}

typedef struct last_use_ctx {
  const av_block *b;
  int32_t index;
} last_use_ctx;

static const av_block *def_block(const av_value *v) { return v->def ? v->def->parent : v->owner; }

static void mark_last_use(av_lower *c, const av_value *v, void *ctx) {
  last_use_ctx *l = ctx;
  if (def_block(v) == l->b) c->last_use[v->id] = l->index;
}

static bool is_terminator(const av_op *op) {
  return op->code == AV_OP_FUNC_RETURN || op->code == AV_OP_RETURN ||
         op->code == AV_OP_SDY_RETURN;
}

typedef struct slot_list {
  int32_t *v;
  uint32_t n, cap;
} slot_list;

static bool list_push_value(slot_list *l, av_lower *c, const av_value *v) {
  int n = value_leaves(v);
  int32_t s0 = av_vslot(c, v);
  for (int j = 0; j < n; j++) {
    if (l->n == l->cap) {
      uint32_t cap = l->cap ? l->cap * 2 : 16;
      int32_t *nv = realloc(l->v, cap * sizeof *nv);
      if (!nv) return av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
      l->v = nv;
      l->cap = cap;
    }
    l->v[l->n++] = s0 < 0 ? -1 : s0 + j; /* -1: caught by the scope check */
  }
  return true;
}

static const int32_t *list_to_arena(av_lower *c, const slot_list *l) {
  int32_t *out = av_arena_calloc(c->a, (size_t)l->n + 1, sizeof *out);
  if (!out) av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
  else if (l->n) memcpy(out, l->v, l->n * sizeof *out);
  return out;
}

/* Whether a step reads a value an earlier step of the block released: the passes that move
 * reads (compose_boxes.c, fusion) must move releases with them. A plan that would read freed
 * storage is refused here, as an internal error, instead of crashing at run time. */
static void check_releases(av_lower *c, const av_step_vec *sv) {
  int32_t *released = malloc(sizeof *released * (c->nslots ? c->nslots : 1));
  if (!released) {
    av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  for (uint32_t i = 0; i < c->nslots; i++) released[i] = -1;
  for (uint32_t i = 0; i < sv->n; i++) {
    const av_step *s = &sv->v[i];
    for (uint32_t j = 0; j < s->nin; j++)
      if (released[s->in[j]] >= 0) {
        av_lower_fail(c, AV_INTERNAL,
                      "anvil internal error: %s at %s reads a value released by step %d (%s); "
                      "please report it with ANVIL_DUMP_DIR's program",
                      s->opname, s->loc, released[s->in[j]], sv->v[released[s->in[j]]].opname);
        free(released);
        return;
      }
    for (uint32_t j = 0; j < s->ndead; j++) released[s->dead[j]] = (int32_t)i;
  }
  free(released);
}

static void lower_block(av_lower *c, const av_block *b, av_block_plan *bp) {
  memset(bp, 0, sizeof *bp);
  av_step_vec steps = {0};
  av_step_vec *saved_cur = c->cur;
  const av_op *saved_op = c->op;
  c->cur = &steps;
  uint32_t n = b->nops;
  const av_op **ops = calloc((size_t)n + 1, sizeof *ops);
  uint8_t *live = calloc((size_t)n + 1, 1);
  slot_list *dead = calloc((size_t)n + 2, sizeof *dead); /* [0]: entry, [i+1]: after op i */
  slot_list args = {0}, pending = {0};
  uint8_t *fence = NULL; /* per step */
  uint32_t fence_cap = 0;
  if (!ops || !live || !dead) {
    av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  uint32_t k = 0;
  for (const av_op *op = b->first; op && k < n; op = op->next) ops[k++] = op;
  n = k;
  /* block arguments (a spliced call's body reads the caller's operands in their slots; the
   * caller releases them) */
  bool splice = b == c->splice_block;
  const int32_t *splice_args = c->splice_args;
  c->splice_block = NULL;
  for (uint32_t i = 0; i < b->nargs && !c->out_of_memory; i++) {
    if (splice) {
      c->slot_of[b->args[i].id] = splice_args[i];
      c->owner[b->args[i].id] = c->func_no;
    } else {
      assign_value(c, &b->args[i]);
    }
    list_push_value(&args, c, &b->args[i]);
    c->last_use[b->args[i].id] = -1;
  }
  /* dead code: an op stays if it has effects or a staying op uses one of its results */
  for (uint32_t i = n; i-- > 0;) {
    const av_op *op = ops[i];
    bool keep = is_terminator(op) || av_op_has_side_effects(op);
    for (uint32_t r = 0; r < op->nresults && !keep; r++) keep = c->used[op->results[r].id];
    if (!keep) continue;
    live[i] = 1;
    for_each_operand_deep(c, op, mark_used, NULL);
  }
  /* reduction nests: their absorbed ops go (live[] cleared), their inputs live to the root */
  enum { MAX_NESTS = 16 };
  av_nest nests[MAX_NESTS];
  uint32_t nnests = av_find_nests(c, b, ops, n, live, nests, MAX_NESTS);
  for (uint32_t i = 0; i < n; i++) {
    if (!live[i]) continue;
    for (uint32_t r = 0; r < ops[i]->nresults; r++) c->last_use[ops[i]->results[r].id] = -1;
    last_use_ctx l = {b, (int32_t)i};
    for_each_operand_deep(c, ops[i], mark_last_use, &l);
    for (uint32_t q = 0; q < nnests; q++)
      if (nests[q].root == i)
        for (uint32_t j = 0; j < nests[q].ninputs; j++) mark_last_use(c, nests[q].inputs[j], &l);
  }
  /* where each value dies: after its last use, or right away if never used */
  for (uint32_t i = 0; i < b->nargs && !splice; i++) {
    int32_t lu = c->last_use[b->args[i].id];
    list_push_value(&dead[lu < 0 ? 0 : lu + 1], c, &b->args[i]);
  }
  /* lower the ops */
  const av_op *term = NULL;
  for (uint32_t i = 0; i < n; i++) {
    if (!live[i]) continue;
    const av_op *op = ops[i];
    if (is_terminator(op)) {
      term = op;
      break;
    }
    c->op = op; /* problems with its result types name it */
    for (uint32_t r = 0; r < op->nresults; r++) assign_value(c, &op->results[r]);
    if (c->out_of_memory) break; /* values without slots: nothing below may run */
    uint32_t before = steps.n;
    int errors_before = c->nerrors;
    c->spliced = false;
    const av_nest *nest = NULL;
    for (uint32_t q = 0; q < nnests && !nest; q++)
      if (nests[q].root == i) nest = &nests[q];
    if (nest) { /* the reduce and what it absorbed: one generated kernel */
      av_step *s = av_emit(c, av_step_nest, nest->params, nest->ninputs, 1);
      if (s) {
        for (uint32_t q = 0; q < nest->ninputs; q++) ((int32_t *)s->in)[q] = av_vslot(c, nest->inputs[q]);
        ((int32_t *)s->out)[0] = av_vslot(c, &op->results[0]);
        s->opname = "nest[reduce]";
      }
    } else if (!av_lower_op(c, op) && c->nerrors == errors_before) {
      av_lower_fail(c, AV_INVALID_ARGUMENT, "could not be lowered");
    }
    c->op = saved_op;
    if (steps.n > fence_cap) { /* steps of ops with regions or effects: fusion never moves past them */
      uint32_t cap = steps.cap > steps.n ? steps.cap : steps.n;
      uint8_t *nf = realloc(fence, cap);
      if (!nf) {
        av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
        break;
      }
      fence = nf;
      fence_cap = cap;
    }
    for (uint32_t j = before; j < steps.n; j++)
      fence[j] = c->spliced ? 0 : op->nregions > 0 ? AV_FENCE_REGIONS : av_op_has_side_effects(op) ? AV_FENCE_EFFECTS : 0;
    c->spliced = false;
    for (uint32_t r = 0; r < op->nresults; r++) {
      int32_t lu = c->last_use[op->results[r].id];
      list_push_value(&dead[lu < 0 ? i + 1 : (uint32_t)lu + 1], c, &op->results[r]);
    }
    for (uint32_t j = 0; j < dead[i + 1].n; j++) {
      if (pending.n == pending.cap) {
        uint32_t cap = pending.cap ? pending.cap * 2 : 16;
        int32_t *nv = realloc(pending.v, cap * sizeof *nv);
        if (!nv) {
          av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
          break;
        }
        pending.v = nv;
        pending.cap = cap;
      }
      pending.v[pending.n++] = dead[i + 1].v[j];
    }
    if (steps.n > before && pending.n) {
      /* keep what the op's lowering already marked dead (its temporaries) */
      av_step *last = &steps.v[steps.n - 1];
      for (uint32_t j = 0; j < last->ndead; j++) {
        if (pending.n == pending.cap) {
          uint32_t cap = pending.cap * 2;
          int32_t *nv = realloc(pending.v, cap * sizeof *nv);
          if (!nv) {
          av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
          break;
        }
          pending.v = nv;
          pending.cap = cap;
        }
        pending.v[pending.n++] = last->dead[j];
      }
      last->dead = list_to_arena(c, &pending);
      last->ndead = pending.n;
      pending.n = 0;
    }
  }
  if (!term) {
    c->op = NULL;
    if (!c->out_of_memory) av_lower_fail(c, AV_INVALID_ARGUMENT, "block without a terminator");
    goto done;
  }
  {
    slot_list res = {0};
    for (uint32_t i = 0; i < term->noperands; i++) list_push_value(&res, c, term->operands[i]);
    bp->results = list_to_arena(c, &res);
    bp->nresults = res.n;
    free(res.v);
    /* values whose last use is the terminator, plus leftovers */
    uint32_t ti = 0;
    while (ti < n && ops[ti] != term) ti++;
    for (uint32_t j = 0; j < dead[ti + 1].n; j++) {
      if (pending.n == pending.cap) {
        uint32_t cap = pending.cap ? pending.cap * 2 : 16;
        int32_t *nv = realloc(pending.v, cap * sizeof *nv);
        if (!nv) {
          av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
          break;
        }
        pending.v = nv;
        pending.cap = cap;
      }
      pending.v[pending.n++] = dead[ti + 1].v[j];
    }
    bp->dead_at_exit = list_to_arena(c, &pending);
    bp->ndead_exit = pending.n;
  }
  bp->args = list_to_arena(c, &args);
  bp->nargs = args.n;
  bp->dead_at_entry = list_to_arena(c, &dead[0]);
  bp->ndead_entry = dead[0].n;
  /* every slot a step names must exist (guards against values used outside their scope) */
  for (uint32_t i = 0; i < steps.n; i++) {
    const av_step *s = &steps.v[i];
    bool ok = true;
    for (uint32_t j = 0; j < s->nin; j++) ok = ok && s->in[j] >= 0 && (uint32_t)s->in[j] < c->nslots;
    for (uint32_t j = 0; j < s->nout; j++) ok = ok && s->out[j] >= 0 && (uint32_t)s->out[j] < c->nslots;
    for (uint32_t j = 0; j < s->ndead; j++) ok = ok && s->dead[j] >= 0 && (uint32_t)s->dead[j] < c->nslots;
    if (!ok) {
      av_lower_fail(c, AV_INVALID_ARGUMENT, "%s at %s uses a value outside its scope", s->opname, s->loc);
      break;
    }
  }
  for (uint32_t i = 0; i < bp->nresults; i++)
    if (bp->results[i] < 0 || (uint32_t)bp->results[i] >= c->nslots) {
      av_lower_fail(c, AV_INVALID_ARGUMENT, "a region returns a value outside its scope");
      break;
    }
  if (c->nerrors == 0 && steps.n <= fence_cap && !splice) {
    av_split_broadcasts(c, &steps, &fence, &fence_cap);
    av_reshape_boxes(c, &steps, fence);
    av_fuse_elementwise(c, &steps, fence);
    av_compose_boxes(c, &steps);
    av_fuse_rows(c, &steps);
    check_releases(c, &steps);
  }
  /* in_dies: which inputs are released right after their step (a spliced body's steps get
   * theirs in the caller's block, where releases may still move) */
  for (uint32_t i = 0; i < steps.n && !splice; i++) {
    av_step *s = &steps.v[i];
    for (uint32_t j = 0; j < s->nin && j < 32; j++)
      for (uint32_t q = 0; q < s->ndead; q++)
        if (s->dead[q] == s->in[j]) s->in_dies |= 1u << j;
  }
  {
    av_step *arr = av_arena_calloc(c->a, (size_t)steps.n + 1, sizeof *arr);
    if (arr) {
      if (steps.n) memcpy(arr, steps.v, steps.n * sizeof *arr);
      bp->steps = arr;
      bp->nsteps = steps.n;
    } else {
      av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
    }
  }
done:
  if (dead)
    for (uint32_t i = 0; i < n + 2; i++) free(dead[i].v);
  free(dead);
  free(args.v);
  free(pending.v);
  free(live);
  free(fence);
  free(ops);
  free(steps.v);
  c->cur = saved_cur;
  c->op = saved_op;
}

const av_block_plan *av_lower_region(av_lower *c, const av_region *r) {
  if (r->nblocks != 1) {
    av_lower_fail(c, AV_UNIMPLEMENTED, "regions with %u blocks are not supported", r->nblocks);
    return NULL;
  }
  av_block_plan *bp = av_lower_alloc(c, sizeof *bp);
  if (!bp) return NULL;
  lower_block(c, &r->blocks[0], bp);
  return bp;
}

/* JAX's SPMD programs (pmap, shard_map) have a main that only wraps one
 * sdy.manual_computation over main's arguments: what each device runs is the region, on its
 * local shards (the PJRT layer hands over per-device shards). Returns that region's block. */
static const av_block *manual_entry_block(const av_module *m, const av_func *fn) {
  if (fn->body.nblocks != 1) return NULL;
  const av_block *b = &fn->body.blocks[0];
  const av_op *mc = b->first;
  if (!mc || mc->code != AV_OP_SDY_MANUAL_COMPUTATION || !mc->next || mc->next->next) return NULL;
  const av_op *ret = mc->next;
  if (mc->noperands != b->nargs || ret->noperands != mc->nresults || mc->nregions != 1 ||
      mc->regions[0].nblocks != 1)
    return NULL;
  for (uint32_t i = 0; i < b->nargs; i++)
    if (mc->operands[i] != &b->args[i]) return NULL;
  for (uint32_t i = 0; i < ret->noperands; i++)
    if (ret->operands[i] != &mc->results[i]) return NULL;
  if (!av_manual_entry_shardings_match(m, fn, mc)) return NULL; /* resharded as a whole */
  return &mc->regions[0].blocks[0];
}

static const av_func_plan *lower_func(av_lower *c, const av_func *fn) {
  av_func_plan *fp = av_lower_alloc(c, sizeof *fp);
  if (!fp) return NULL;
  fp->name = fn->name;
  c->nslots = 0;
  const av_op *saved = c->op;
  c->op = NULL;
  if (fn->body.nblocks != 1) {
    av_lower_fail(c, AV_INVALID_ARGUMENT, "function @%s has %u blocks", fn->name,
                  fn->body.nblocks);
    return NULL;
  }
  const av_block *manual = fn == av_module_entry(c->m) ? manual_entry_block(c->m, fn) : NULL;
  bool saved_per_device = c->per_device;
  if (manual) c->per_device = true; /* every device runs the region itself */
  c->lowering_fn = fn;
  lower_block(c, manual ? manual : &fn->body.blocks[0], &fp->body);
  c->lowering_fn = NULL;
  c->per_device = saved_per_device;
  if (manual) c->plan->manual_entry = true;
  c->op = saved;
  av_slot_type *types = av_arena_calloc(c->a, (size_t)c->nslots + 1, sizeof *types);
  if (!types) {
    av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  for (uint32_t i = 0; i < c->nslots; i++) types[i] = *av_stype(c, (int32_t)i);
  fp->types = types;
  fp->nslots = c->nslots;
  return fp;
}

void av_plan_free(av_plan *p) {
  if (!p) return;
  for (uint32_t i = 0; i < p->nconsts; i++) av_storage_release(p->consts[i]);
  free(p->consts);
  av_rendezvous_free(p->rv);
  av_arena_free(&p->arena);
  free(p);
}

/* One lowering; *refused: its generated code could not be made executable. */
static av_plan *lower_module(const av_module *m, av_diag *d, bool *refused) {
  av_plan *plan = calloc(1, sizeof *plan);
  if (!plan) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  av_arena_init(&plan->arena);
  av_lower c;
  memset(&c, 0, sizeof c);
  c.m = m;
  c.plan = plan;
  c.a = &plan->arena;
  c.d = d;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  c.memory_bytes = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : SIZE_MAX;
  size_t nv = (size_t)m->next_value_id + 1;
  c.slot_of = malloc(nv * sizeof *c.slot_of);
  c.last_use = malloc(nv * sizeof *c.last_use);
  c.used = calloc(nv, 1);
  c.owner = calloc(nv, sizeof *c.owner);
  c.nvalues = m->next_value_id;
  c.funcs = av_arena_calloc(c.a, (size_t)m->nfuncs + 1, sizeof *c.funcs);
  const av_func *entry = av_module_entry(m);
  if (!c.slot_of || !c.last_use || !c.used || !c.owner || !c.funcs) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    c.nerrors++;
  } else if (!entry) {
    av_diag_set(d, AV_INVALID_ARGUMENT, "the module has no entry function (public @main)");
    c.nerrors++;
  } else {
    for (size_t i = 0; i < nv; i++) c.slot_of[i] = -1, c.last_use[i] = -1;
    for (uint32_t i = 0; i < m->nfuncs; i++) {
      c.funcs[i].fn = m->funcs[i];
      if (m->funcs[i] == entry) c.funcs[i].state = 1;
    }
    /* lower the entry, then every function it (transitively) calls */
    bool progress = true;
    while (progress) {
      progress = false;
      for (uint32_t i = 0; i < m->nfuncs; i++) {
        if (c.funcs[i].state != 1) continue;
        c.funcs[i].state = 2;
        c.func_no++;
        c.funcs[i].plan = lower_func(&c, m->funcs[i]);
        if (m->funcs[i] == entry) plan->entry = c.funcs[i].plan;
        progress = true;
      }
    }
  }
  free(c.slot_of);
  free(c.last_use);
  free(c.used);
  free(c.owner);
  for (uint32_t i = 0; i < c.nchunks; i++) free(c.type_chunks[i]);
  free(c.type_chunks);
  int err = 0;
  if (!c.nerrors && c.code && !av_codegen_seal(c.code, &err)) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "generated code could not be made executable: %s",
                strerror(err));
    c.nerrors++;
    *refused = !av_codegen_enabled();
  }
  if (c.nerrors || !plan->entry) {
    if (!c.nerrors) av_diag_set(d, AV_INTERNAL, "entry function was not lowered");
    av_plan_free(plan);
    return NULL;
  }
  return plan;
}

av_plan *av_lower_module(const av_module *m, av_diag *d) {
  bool refused = false;
  av_plan *plan = lower_module(m, d, &refused);
  if (!plan && refused) { /* executable memory refused since the last compile: interpreted */
    av_diag_init(d);
    plan = lower_module(m, d, &refused);
  }
  return plan;
}
