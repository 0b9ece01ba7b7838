/* The custom partitioner registry and the calls into registered callbacks (see
 * custom_partitioner.h). Whatever a callback returns is checked before use: its error
 * header, the counts and pointers of what it hands back, every sharding (decoded onto the
 * program's mesh). */
#include "compiler/custom_partitioner.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"
#include "frontend/hlo_view.h"
#include "util/proto_writer.h"

/* ------------------------------------------------------------------ registry */

typedef struct cp_entry {
  char *name;
  av_cp_callbacks *cb;
  struct cp_entry *next;
} cp_entry;

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static cp_entry *registry; /* newest first; entries are never freed (compilations may hold them) */

av_code av_custom_partitioner_register(const char *name, size_t len, av_cp_callbacks *cb, av_diag *d) {
  if (!name || !len || len > 4096 || memchr(name, '\0', len))
    return av_diag_set(d, AV_INVALID_ARGUMENT, "custom partitioner: bad target name");
  if (!cb) return av_diag_set(d, AV_INVALID_ARGUMENT, "custom partitioner %.*s: no callbacks", (int)len, name);
  if (cb->version < 0)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "custom partitioner %.*s: callbacks of version %lld", (int)len, name,
                       (long long)cb->version);
  cp_entry *e = malloc(sizeof *e);
  char *n = malloc(len + 1);
  if (!e || !n) {
    free(e);
    free(n);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  memcpy(n, name, len);
  n[len] = '\0';
  e->name = n;
  e->cb = cb;
  pthread_mutex_lock(&registry_mu);
  e->next = registry;
  registry = e;
  pthread_mutex_unlock(&registry_mu);
  return AV_OK;
}

av_cp_callbacks *av_custom_partitioner_find(const char *target) {
  if (!target) return NULL;
  av_cp_callbacks *cb = NULL;
  pthread_mutex_lock(&registry_mu);
  for (const cp_entry *e = registry; e && !cb; e = e->next)
    if (strcmp(e->name, target) == 0) cb = e->cb;
  pthread_mutex_unlock(&registry_mu);
  return cb;
}

av_cp_callbacks *av_custom_partitioner_of(const av_op *op) {
  if (op->code != AV_OP_CUSTOM_CALL) return NULL;
  return av_custom_partitioner_find(av_attr_get_str(op, "call_target_name"));
}

/* ------------------------------------------------------------ marshalling */

/* The buffers strings handed to a callback point into, freed together after the call. */
typedef struct cp_scratch {
  uint8_t **bufs;
  size_t n, cap;
  av_diag *d;
  bool failed;
} cp_scratch;

static void scratch_free(cp_scratch *s) {
  for (size_t i = 0; i < s->n; i++) free(s->bufs[i]);
  free(s->bufs);
}

/* Keeps buffer b (malloc'd, n bytes; NULL when empty) in s and points `out` at it. */
static av_code keep_raw(cp_scratch *s, uint8_t *b, size_t n, av_cp_string *out) {
  *out = (av_cp_string){"", 0};
  if (!b) return AV_OK;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    uint8_t **nb = realloc(s->bufs, cap * sizeof *nb);
    if (!nb) {
      free(b);
      s->failed = true;
      return av_diag_set(s->d, AV_RESOURCE_EXHAUSTED, "out of memory");
    }
    s->bufs = nb;
    s->cap = cap;
  }
  s->bufs[s->n++] = b;
  *out = (av_cp_string){(const char *)b, n};
  return AV_OK;
}

/* Takes w's bytes into `out` (kept in s). */
static av_code keep(cp_scratch *s, av_pbw *w, av_cp_string *out) {
  if (w->failed || s->failed) {
    av_pbw_free(w);
    s->failed = true;
    return av_diag_set(s->d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  size_t len = 0;
  uint8_t *b = av_pbw_take(w, &len);
  return keep_raw(s, b, len, out);
}

static av_code write_shape(av_pbw *w, const av_type *t, const av_op *op, av_diag *d) {
  if (!t || t->kind != AV_TYPE_TENSOR || !av_type_is_static(t) || t->quant)
    return av_diag_set(d, AV_UNIMPLEMENTED, "%s at %s: a custom partitioner's operands and results must be tensors of static shape",
                       op->name, op->loc);
  av_hlo_view_value v = {.dtype = t->dtype, .rank = t->rank, .dims = t->dims};
  return av_hlo_view_shape(w, &v, d);
}

/* ShapeProto of one value, or of a tuple of `n` values when n != 1 (how XLA sees a call with
 * several results). */
static av_code shape_of(cp_scratch *s, const av_type *const *types, uint32_t n, bool tuple, const av_op *op,
                        av_cp_string *out) {
  av_pbw w;
  av_pbw_init(&w);
  av_code rc = AV_OK;
  if (!tuple) {
    rc = write_shape(&w, types[0], op, s->d);
  } else {
    av_pbw_varint(&w, 2, 13); /* element_type: TUPLE */
    for (uint32_t i = 0; i < n && rc == AV_OK; i++) {
      size_t mark = av_pbw_begin(&w, 4); /* tuple_shapes */
      rc = write_shape(&w, types[i], op, s->d);
      av_pbw_end(&w, mark);
    }
  }
  if (rc != AV_OK) {
    av_pbw_free(&w);
    return rc;
  }
  return keep(s, &w, out);
}

/* Serialized OpSharding of sh (malloc'd; NULL with *n = 0 for REPLICATED, the empty
 * message; NULL with *n = (size_t)-1 when out of memory). */
static uint8_t *op_sharding_bytes(const av_sharding *sh, size_t *n) {
  *n = 0;
  if (!sh || !sh->mesh || av_sharding_is_replicated(sh)) return NULL;
  *n = av_sharding_to_op_sharding(sh, NULL, 0);
  uint8_t *b = *n == (size_t)-1 ? NULL : malloc(*n ? *n : 1);
  if (!b) *n = (size_t)-1;
  else av_sharding_to_op_sharding(sh, b, *n);
  return b;
}

/* OpSharding of one value, or a TUPLE of `n` when `tuple`. */
static av_code sharding_of(cp_scratch *s, const av_sharding *const *sh, uint32_t n, bool tuple, av_cp_string *out) {
  size_t len;
  if (!tuple) {
    uint8_t *b = op_sharding_bytes(sh[0], &len);
    if (len == (size_t)-1) return av_diag_set(s->d, AV_RESOURCE_EXHAUSTED, "out of memory");
    return keep_raw(s, b, len, out);
  }
  av_pbw w;
  av_pbw_init(&w);
  av_pbw_varint(&w, 1, 2); /* type: TUPLE */
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *b = op_sharding_bytes(sh[i], &len);
    if (len == (size_t)-1) w.failed = true;
    else av_pbw_bytes(&w, 5, b, len); /* tuple_shardings */
    free(b);
  }
  return keep(s, &w, out);
}

/* -------------------------------------------------------------- the calls */

enum { CP_MAX_MESSAGE = 3000, CP_MAX_MODULE = 1 << 30 };

static bool string_ok(av_cp_string s) { return s.size == 0 || (s.data && s.size < CP_MAX_MODULE); }

static const char *target_of(const av_op *op) {
  const char *t = av_attr_get_str(op, "call_target_name");
  return t ? t : "?";
}

/* A failure the callback reported, as an error of its code carrying its message. */
static av_code callback_error(const av_cp_header *h, const char *what, const av_op *op, av_diag *d) {
  av_code code = h->code > AV_OK && h->code <= AV_UNAUTHENTICATED ? (av_code)h->code : AV_INTERNAL;
  bool has_msg = h->error_msg.size && h->error_msg.data && h->error_msg.size < CP_MAX_MODULE;
  static const char none[] = "failed without a message";
  int len = has_msg ? (int)(h->error_msg.size < CP_MAX_MESSAGE ? h->error_msg.size : CP_MAX_MESSAGE) : (int)sizeof none - 1;
  return av_diag_set(d, code, "custom partitioner of @%s (%s): %.*s%s (at %s)", target_of(op), what, len,
                     has_msg ? h->error_msg.data : none, has_msg && h->error_msg.size > CP_MAX_MESSAGE ? "..." : "",
                     op->loc);
}

static void cleanup(av_cp_header *h) {
  if (h->cleanup_fn) h->cleanup_fn(h->data);
  h->cleanup_fn = NULL;
}

static av_code bad_result(const char *what, const av_op *op, const char *why, av_diag *d) {
  return av_diag_set(d, AV_INVALID_ARGUMENT, "custom partitioner of @%s (%s): %s (at %s)", target_of(op), what, why,
                     op->loc);
}

static av_cp_string backend_config(const av_op *op) {
  const av_attr *a = av_op_attr(op, "backend_config");
  if (a && (a->kind == AV_ATTR_STRING || a->kind == AV_ATTR_OPAQUE)) return (av_cp_string){a->u.str.s, a->u.str.len};
  return (av_cp_string){"", 0};
}

static void decode_note(av_diag *d, const char *what, const av_op *op) {
  av_diag_set(d, d->code, "  in the %s the custom partitioner of @%s returned for %s", what, target_of(op), op->loc);
}

void av_cp_partition_result_free(av_cp_partition_result *r) {
  free(r->module);
  free(r->args);
  free(r->results);
  memset(r, 0, sizeof *r);
}

static const av_type **result_types(const av_op *op) {
  const av_type **t = calloc((size_t)op->nresults + 1, sizeof *t);
  for (uint32_t i = 0; t && i < op->nresults; i++) t[i] = op->results[i].type;
  return t;
}

/* Operand avals: shapes of `types`, shardings when `always` or given. */
static av_code operand_avals(cp_scratch *s, const av_op *op, const av_type *const *types,
                             const av_sharding *const *sh, bool always, av_cp_aval *out) {
  for (uint32_t i = 0; i < op->noperands; i++) {
    av_code rc = shape_of(s, &types[i], 1, false, op, &out[i].shape);
    out[i].has_sharding = always || sh[i];
    if (rc == AV_OK && out[i].has_sharding) rc = sharding_of(s, &sh[i], 1, false, &out[i].sharding);
    if (rc != AV_OK) return rc;
  }
  return AV_OK;
}

av_code av_cp_call_partition(av_cp_callbacks *cb, const av_op *op, const av_type *const *operand_types,
                             const av_sharding *const *operand_shardings,
                             const av_sharding *const *result_shardings, const av_mesh *mesh,
                             av_cp_partition_result *out, av_diag *d) {
  memset(out, 0, sizeof *out);
  const char *what = "partition";
  if (!cb->partition) return bad_result(what, op, "no partition callback", d);
  uint32_t nin = op->noperands, nres = op->nresults;
  if (!nres) return av_diag_set(d, AV_UNIMPLEMENTED, "%s at %s: a custom-partitioned call without results", op->name, op->loc);
  cp_scratch s = {.d = d};
  av_cp_aval *avals = calloc((size_t)nin + 1, sizeof *avals);
  const av_type **rtypes = result_types(op);
  int *ranks = calloc((size_t)nin + nres + 1, sizeof *ranks);
  av_cp_partition_args a;
  memset(&a, 0, sizeof a);
  av_code rc = avals && rtypes && ranks ? AV_OK : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  if (rc == AV_OK) rc = operand_avals(&s, op, operand_types, operand_shardings, true, avals);
  if (rc == AV_OK) rc = shape_of(&s, rtypes, nres, nres != 1, op, &a.op_result.shape);
  a.op_result.has_sharding = true;
  if (rc == AV_OK) rc = sharding_of(&s, result_shardings, nres, nres != 1, &a.op_result.sharding);
  if (rc == AV_OK) {
    a.header.api_version = 0;
    a.num_args = nin;
    a.op_args = avals;
    a.backend_config = backend_config(op);
    cb->partition(cb, &a);
    if (a.header.has_error) rc = callback_error(&a.header, what, op, d);
    else if (a.num_args != nin) rc = bad_result(what, op, "it changed the operand count", d);
    else if (nin && !a.args_sharding) rc = bad_result(what, op, "no operand shardings", d);
    else if (!string_ok(a.mlir_module) || !a.mlir_module.size) rc = bad_result(what, op, "no module", d);
    else if (!string_ok(a.result_sharding)) rc = bad_result(what, op, "a bad result sharding", d);
    for (uint32_t i = 0; rc == AV_OK && i < nin; i++)
      if (!string_ok(a.args_sharding[i])) rc = bad_result(what, op, "a bad operand sharding", d);
  }
  if (rc == AV_OK) {
    for (uint32_t i = 0; i < nin; i++) ranks[i] = operand_types[i]->rank;
    for (uint32_t i = 0; i < nres; i++) ranks[nin + i] = rtypes[i]->rank;
    out->module = malloc(a.mlir_module.size);
    out->module_size = a.mlir_module.size;
    out->args = calloc((size_t)nin + 1, sizeof *out->args);
    out->results = calloc((size_t)nres + 1, sizeof *out->results);
    if (!out->module || !out->args || !out->results) rc = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    else memcpy(out->module, a.mlir_module.data, a.mlir_module.size);
  }
  if (rc == AV_OK) {
    rc = av_op_sharding_decode(a.result_sharding.data, a.result_sharding.size, mesh, (int)nres, ranks + nin, out->results, d);
    if (rc != AV_OK) decode_note(d, "result sharding", op);
  }
  for (uint32_t i = 0; rc == AV_OK && i < nin; i++) {
    rc = av_op_sharding_decode(a.args_sharding[i].data, a.args_sharding[i].size, mesh, 1, &ranks[i], &out->args[i], d);
    if (rc != AV_OK) {
      char what_arg[48];
      snprintf(what_arg, sizeof what_arg, "sharding of operand %u", i);
      decode_note(d, what_arg, op);
    }
  }
  cleanup(&a.header);
  if (rc != AV_OK) av_cp_partition_result_free(out);
  free(avals);
  free(rtypes);
  free(ranks);
  scratch_free(&s);
  return rc;
}

av_code av_cp_call_infer(av_cp_callbacks *cb, const av_op *op, const av_sharding *const *operand_shardings,
                         bool *has, av_sharding *results, av_diag *d) {
  *has = false;
  const char *what = "infer_sharding_from_operands";
  if (!cb->infer_sharding || !op->nresults) return AV_OK;
  uint32_t nin = op->noperands, nres = op->nresults;
  cp_scratch s = {.d = d};
  av_cp_aval *avals = calloc((size_t)nin + 1, sizeof *avals);
  const av_type **otypes = calloc((size_t)nin + 1, sizeof *otypes);
  const av_type **rtypes = result_types(op);
  int *ranks = calloc((size_t)nres + 1, sizeof *ranks);
  av_cp_infer_args a;
  memset(&a, 0, sizeof a);
  av_code rc = avals && otypes && rtypes && ranks ? AV_OK : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t i = 0; rc == AV_OK && i < nin; i++) otypes[i] = op->operands[i]->type;
  if (rc == AV_OK) rc = operand_avals(&s, op, otypes, operand_shardings, false, avals);
  if (rc == AV_OK) rc = shape_of(&s, rtypes, nres, nres != 1, op, &a.result_shape);
  if (rc == AV_OK) {
    a.header.api_version = 0;
    a.num_args = nin;
    a.op_args = avals;
    a.backend_config = backend_config(op);
    cb->infer_sharding(cb, &a);
    if (a.header.has_error) rc = callback_error(&a.header, what, op, d);
    else if (a.has_result_sharding && !string_ok(a.result_sharding)) rc = bad_result(what, op, "a bad result sharding", d);
  }
  /* onto the first operand mesh that can hold it (those of a GSPMD-form program differ) */
  for (uint32_t i = 0; i < nres && rc == AV_OK; i++) ranks[i] = rtypes[i]->rank;
  for (uint32_t i = 0; rc == AV_OK && a.has_result_sharding && !*has && i < nin; i++) {
    const av_mesh *mesh = operand_shardings[i] ? operand_shardings[i]->mesh : NULL;
    if (!mesh || mesh->ndevices <= 1) continue;
    av_diag tmp;
    av_diag_init(&tmp);
    av_code c = av_op_sharding_decode(a.result_sharding.data, a.result_sharding.size, mesh, (int)nres, ranks, results, &tmp);
    if (c == AV_OK) *has = true;
    else if (c != AV_UNIMPLEMENTED) rc = av_diag_set(d, c, "%s", tmp.msg);
  }
  if (rc != AV_OK) decode_note(d, "result sharding", op);
  cleanup(&a.header);
  free(avals);
  free(otypes);
  free(rtypes);
  free(ranks);
  scratch_free(&s);
  return rc;
}
