/* HLO proto frontend on real HloModuleProtos produced by JAX (tests/data/hlo/NAME.pb, see
 * gen_hlo.py; the expected facts are read by hand from the matching .txt HLO dumps) and on
 * small hand-encoded protos for tuples, unknown opcodes and malformed input. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/hlo.h"
#include "ir/verify.h"

/* ------------------------------------------------------------ file helpers */

typedef struct blob {
  unsigned char *p;
  size_t n;
} blob;

static bool read_data(const char *name, blob *b) {
  const char *src = getenv("ANVIL_SOURCE_DIR");
  if (!src) return false;
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/hlo/%s.pb", src, name);
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  b->p = malloc(len > 0 ? (size_t)len : 1);
  b->n = len > 0 ? fread(b->p, 1, (size_t)len, f) : 0;
  fclose(f);
  return true;
}

static av_module *load(const char *name) {
  blob b;
  if (!read_data(name, &b)) {
    print_message("tests/data/hlo/%s.pb not found (ANVIL_SOURCE_DIR unset?)\n", name);
    return NULL;
  }
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_hlo_proto(b.p, b.n, &d);
  if (!m) print_message("load %s: %s\n", name, d.msg);
  free(b.p);
  return m;
}

#define LOAD_OR_SKIP(var, name)              \
  av_module *var = load(name);               \
  if (!var && !getenv("ANVIL_SOURCE_DIR")) { \
    skip();                                  \
  }                                          \
  assert_non_null(var)

static const av_block *entry_block(const av_module *m) {
  av_func *f = av_module_entry(m);
  assert_non_null(f);
  assert_string_equal(f->name, "main");
  assert_true(f->is_public);
  assert_int_equal(f->body.nblocks, 1);
  return &f->body.blocks[0];
}

static const av_op *find_op(const av_block *b, const char *name) {
  for (const av_op *op = b->first; op; op = op->next)
    if (strcmp(op->name, name) == 0) return op;
  return NULL;
}

static const av_op *must_find(const av_block *b, const char *name) {
  const av_op *op = find_op(b, name);
  if (!op) fail_msg("no %s op", name);
  return op;
}

static void assert_ints(const av_attr *a, size_t n, const int64_t *want) {
  assert_non_null(a);
  assert_int_equal(a->kind, AV_ATTR_INTS);
  assert_int_equal(a->u.ints.n, n);
  for (size_t i = 0; i < n; i++) assert_int_equal(a->u.ints.v[i], want[i]);
}
#define ASSERT_INTS(attr, ...)                                        \
  do {                                                                \
    static const int64_t want_[] = {__VA_ARGS__};                     \
    assert_ints(attr, sizeof want_ / sizeof want_[0], want_);         \
  } while (0)
#define ASSERT_NO_INTS(attr) assert_ints(attr, 0, NULL)

static void assert_int_attr(const av_attr *a, int64_t v) {
  assert_non_null(a);
  assert_int_equal(a->kind, AV_ATTR_INT);
  assert_int_equal(a->u.i, v);
}

static void assert_enum(const av_attr *a, const char *v) {
  assert_non_null(a);
  assert_int_equal(a->kind, AV_ATTR_ENUM);
  assert_string_equal(a->u.str.s, v);
}

static void assert_tensor(const av_type *t, av_dtype dt, int rank, const int64_t *dims) {
  assert_non_null(t);
  assert_int_equal(t->kind, AV_TYPE_TENSOR);
  assert_int_equal(t->dtype, dt);
  assert_int_equal(t->rank, rank);
  for (int i = 0; i < rank; i++) assert_int_equal(t->dims[i], dims[i]);
}
#define ASSERT_TENSOR(t, dt, ...)                                         \
  do {                                                                    \
    static const int64_t dims_[] = {__VA_ARGS__};                         \
    assert_tensor(t, dt, (int)(sizeof dims_ / sizeof dims_[0]), dims_);   \
  } while (0)
#define ASSERT_SCALAR(t, dt) assert_tensor(t, dt, 0, NULL)

static const av_op *terminator(const av_block *b) {
  assert_non_null(b->last);
  return b->last;
}

/* ----------------------------------------------------- real JAX-made protos */

static void test_add(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "add");
  const av_block *b = entry_block(m);
  assert_int_equal(b->nargs, 2);
  ASSERT_TENSOR(b->args[0].type, AV_DT_F32, 2, 3);
  const av_op *add = must_find(b, "stablehlo.add");
  assert_int_equal(add->code, AV_OP_ADD);
  assert_ptr_equal(add->operands[0], &b->args[0]);
  assert_ptr_equal(add->operands[1], &b->args[1]);
  assert_string_equal(add->loc, "\"add.1\""); /* an MLIR NameLoc */
  const av_op *ret = terminator(b);
  assert_string_equal(ret->name, "func.return");
  assert_int_equal(ret->noperands, 1);
  assert_ptr_equal(ret->operands[0], &add->results[0]);
  av_module_free(m);
}

static void test_matmul(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "matmul");
  const av_op *dot = must_find(entry_block(m), "stablehlo.dot_general");
  ASSERT_INTS(av_op_attr(dot, "lhs_contracting_dimensions"), 1);
  ASSERT_INTS(av_op_attr(dot, "rhs_contracting_dimensions"), 0);
  ASSERT_NO_INTS(av_op_attr(dot, "lhs_batching_dimensions"));
  ASSERT_NO_INTS(av_op_attr(dot, "rhs_batching_dimensions"));
  ASSERT_TENSOR(dot->results[0].type, AV_DT_F32, 2, 4);
  av_module_free(m);
}

static void test_reduce(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "reduce");
  const av_block *b = entry_block(m);
  const av_op *red = must_find(b, "stablehlo.reduce");
  ASSERT_INTS(av_op_attr(red, "dimensions"), 1);
  assert_int_equal(red->noperands, 2);
  assert_ptr_equal(red->operands[0], &b->args[0]);
  /* init: constant 0.0f */
  const av_op *init = red->operands[1]->def;
  assert_string_equal(init->name, "stablehlo.constant");
  const av_attr *v = av_op_attr(init, "value");
  assert_int_equal(v->kind, AV_ATTR_DENSE);
  float zero;
  memcpy(&zero, v->u.dense.data, 4);
  assert_true(zero == 0.0f);
  ASSERT_TENSOR(red->results[0].type, AV_DT_F32, 2);
  assert_int_equal(red->nregions, 1);
  const av_block *body = &red->regions[0].blocks[0];
  assert_int_equal(body->nargs, 2);
  ASSERT_SCALAR(body->args[0].type, AV_DT_F32);
  const av_op *add = must_find(body, "stablehlo.add");
  assert_ptr_equal(add->operands[0], &body->args[0]);
  assert_ptr_equal(add->operands[1], &body->args[1]);
  assert_string_equal(terminator(body)->name, "stablehlo.return");
  av_module_free(m);
}

static void test_while(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "while");
  const av_block *b = entry_block(m);
  const av_op *w = must_find(b, "stablehlo.while");
  /* The (s32, s32, f32[4]) loop-state tuple is flattened into three operands/results. */
  assert_int_equal(w->noperands, 3);
  assert_int_equal(w->nresults, 3);
  assert_ptr_equal(w->operands[2], &b->args[0]);
  ASSERT_SCALAR(w->results[0].type, AV_DT_S32);
  ASSERT_TENSOR(w->results[2].type, AV_DT_F32, 4);
  /* main returns get-tuple-element(while, 2). */
  assert_ptr_equal(terminator(b)->operands[0], &w->results[2]);
  assert_int_equal(w->nregions, 2);
  /* Region 0 is the condition: i < 5 on the first state element. */
  const av_block *cond = &w->regions[0].blocks[0];
  assert_int_equal(cond->nargs, 3);
  const av_op *lt = must_find(cond, "stablehlo.compare");
  assert_enum(av_op_attr(lt, "comparison_direction"), "LT");
  assert_enum(av_op_attr(lt, "compare_type"), "SIGNED");
  assert_ptr_equal(lt->operands[0], &cond->args[0]);
  int32_t five;
  memcpy(&five, av_op_attr(lt->operands[1]->def, "value")->u.dense.data, 4);
  assert_int_equal(five, 5);
  ASSERT_SCALAR(terminator(cond)->operands[0]->type, AV_DT_PRED);
  /* Region 1 is the body; it calls the private function closed_call.1. */
  const av_block *body = &w->regions[1].blocks[0];
  const av_op *call = must_find(body, "func.call");
  const av_attr *callee = av_op_attr(call, "callee");
  assert_int_equal(callee->kind, AV_ATTR_SYMBOL);
  assert_string_equal(callee->u.str.s, "closed_call.1");
  assert_int_equal(terminator(body)->noperands, 3);
  av_func *f = av_module_find_func(m, "closed_call.1");
  assert_non_null(f);
  assert_false(f->is_public);
  assert_int_equal(f->type->ninputs, 2);
  assert_int_equal(f->type->nelems, 4);
  assert_int_equal(m->nfuncs, 2);
  av_module_free(m);
}

static void test_cond_becomes_case(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "cond");
  const av_block *b = entry_block(m);
  const av_op *c = must_find(b, "stablehlo.case");
  assert_int_equal(c->noperands, 1);
  ASSERT_SCALAR(c->operands[0]->type, AV_DT_S32);
  assert_int_equal(c->nregions, 2);
  /* Branch 0 (false) subtracts, branch 1 (true) adds; both capture main's %x. */
  const av_block *b0 = &c->regions[0].blocks[0], *b1 = &c->regions[1].blocks[0];
  assert_int_equal(b0->nargs, 0);
  assert_ptr_equal(must_find(b0, "stablehlo.subtract")->operands[0], &b->args[1]);
  assert_ptr_equal(must_find(b1, "stablehlo.add")->operands[0], &b->args[1]);
  assert_string_equal(terminator(b1)->name, "stablehlo.return");
  av_module_free(m);
}

static void test_switch_three_branches(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "switch");
  const av_op *c = must_find(entry_block(m), "stablehlo.case");
  assert_int_equal(c->nregions, 3);
  assert_non_null(find_op(&c->regions[2].blocks[0], "stablehlo.negate"));
  assert_non_null(find_op(&c->regions[1].blocks[0], "stablehlo.multiply"));
  av_module_free(m);
}

static void test_gather(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "gather");
  const av_op *g = must_find(entry_block(m), "stablehlo.gather");
  ASSERT_INTS(av_op_attr(g, "offset_dims"), 1);
  ASSERT_INTS(av_op_attr(g, "collapsed_slice_dims"), 0);
  ASSERT_INTS(av_op_attr(g, "start_index_map"), 0);
  ASSERT_INTS(av_op_attr(g, "slice_sizes"), 1, 3);
  assert_int_attr(av_op_attr(g, "index_vector_dim"), 1);
  ASSERT_TENSOR(g->operands[1]->type, AV_DT_S32, 2, 1);
  ASSERT_TENSOR(g->results[0].type, AV_DT_F32, 2, 3);
  av_module_free(m);
}

static void test_conv(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "conv");
  const av_op *c = must_find(entry_block(m), "stablehlo.convolution");
  /* window={size=3x2 stride=2x1 pad=1_1x0_2 rhs_dilate=1x2}, dim_labels=bf01_oi01->bf01 */
  ASSERT_INTS(av_op_attr(c, "window_strides"), 2, 1);
  ASSERT_INTS(av_op_attr(c, "lhs_dilation"), 1, 1);
  ASSERT_INTS(av_op_attr(c, "rhs_dilation"), 1, 2);
  const av_attr *pad = av_op_attr(c, "padding");
  assert_int_equal(pad->kind, AV_ATTR_DENSE);
  ASSERT_TENSOR(pad->type, AV_DT_S64, 2, 2);
  const int64_t want_pad[] = {1, 1, 0, 2};
  assert_memory_equal(pad->u.dense.data, want_pad, sizeof want_pad);
  assert_int_attr(av_op_attr(c, "input_batch_dimension"), 0);
  assert_int_attr(av_op_attr(c, "input_feature_dimension"), 1);
  ASSERT_INTS(av_op_attr(c, "input_spatial_dimensions"), 2, 3);
  assert_int_attr(av_op_attr(c, "kernel_output_feature_dimension"), 0);
  assert_int_attr(av_op_attr(c, "kernel_input_feature_dimension"), 1);
  ASSERT_INTS(av_op_attr(c, "kernel_spatial_dimensions"), 2, 3);
  assert_int_attr(av_op_attr(c, "output_batch_dimension"), 0);
  assert_int_attr(av_op_attr(c, "output_feature_dimension"), 1);
  ASSERT_INTS(av_op_attr(c, "output_spatial_dimensions"), 2, 3);
  assert_int_attr(av_op_attr(c, "feature_group_count"), 1);
  assert_int_attr(av_op_attr(c, "batch_group_count"), 1);
  ASSERT_TENSOR(c->results[0].type, AV_DT_F32, 1, 3, 3, 5);
  av_module_free(m);
}

static void test_tuple_result_is_flattened(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "tuple_out");
  av_func *f = av_module_entry(m);
  assert_int_equal(f->type->ninputs, 2);
  assert_int_equal(f->type->nelems - f->type->ninputs, 3);
  const av_block *b = entry_block(m);
  const av_op *ret = terminator(b);
  assert_int_equal(ret->noperands, 3);
  assert_string_equal(ret->operands[0]->def->name, "stablehlo.add");
  assert_string_equal(ret->operands[1]->def->name, "stablehlo.multiply");
  assert_string_equal(ret->operands[2]->def->name, "stablehlo.reduce");
  ASSERT_SCALAR(ret->operands[2]->type, AV_DT_F32);
  ASSERT_INTS(av_op_attr(ret->operands[2]->def, "dimensions"), 0, 1);
  /* No tuple ops survive in the IR. */
  assert_null(find_op(b, "stablehlo.tuple"));
  assert_null(find_op(b, "stablehlo.get_tuple_element"));
  av_module_free(m);
}

static const void *const_data(const av_op *ret, int i, av_dtype dt) {
  /* Operand i of the return is op(convert(x) or x, constant): find the constant. */
  const av_op *op = ret->operands[i]->def;
  const av_op *c = op->operands[1]->def;
  assert_string_equal(c->name, "stablehlo.constant");
  const av_attr *v = av_op_attr(c, "value");
  assert_int_equal(v->type->dtype, dt);
  return v->u.dense.data;
}

static void test_constants_of_several_types(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "constants");
  const av_op *ret = terminator(entry_block(m));
  assert_int_equal(ret->noperands, 5);
  const float f[] = {1.5f, -2.0f, 3.25f};
  assert_memory_equal(const_data(ret, 0, AV_DT_F32), f, sizeof f);
  const int32_t i[] = {-3, 7, 100000};
  assert_memory_equal(const_data(ret, 1, AV_DT_S32), i, sizeof i);
  const uint16_t bf[] = {0x3f00, 0x3f80, 0xc000}; /* bf16 0.5, 1, -2 */
  assert_memory_equal(const_data(ret, 2, AV_DT_BF16), bf, sizeof bf);
  const int8_t s8[] = {-1, 2, -128};
  assert_memory_equal(const_data(ret, 3, AV_DT_S8), s8, sizeof s8);
  const uint8_t pred[] = {1, 0, 1};
  assert_memory_equal(const_data(ret, 4, AV_DT_PRED), pred, sizeof pred);
  av_module_free(m);
}

static void test_scatter(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "scatter");
  const av_op *s = must_find(entry_block(m), "stablehlo.scatter");
  assert_int_equal(s->noperands, 3);
  ASSERT_NO_INTS(av_op_attr(s, "update_window_dims"));
  ASSERT_INTS(av_op_attr(s, "inserted_window_dims"), 0);
  ASSERT_INTS(av_op_attr(s, "scatter_dims_to_operand_dims"), 0);
  assert_int_attr(av_op_attr(s, "index_vector_dim"), 1);
  assert_non_null(find_op(&s->regions[0].blocks[0], "stablehlo.add"));
  av_module_free(m);
}

static void test_sort_in_called_function(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "sort");
  av_func *f = av_module_find_func(m, "sort.2");
  assert_non_null(f);
  const av_op *s = must_find(&f->body.blocks[0], "stablehlo.sort");
  assert_int_attr(av_op_attr(s, "dimension"), 1);
  assert_true(av_op_attr(s, "is_stable")->u.b);
  const av_block *cmp = &s->regions[0].blocks[0];
  assert_int_equal(cmp->nargs, 2);
  assert_enum(av_op_attr(terminator(cmp)->operands[0]->def, "compare_type"), "TOTALORDER");
  av_module_free(m);
}

static void test_reduce_window(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "reduce_window");
  const av_op *r = must_find(entry_block(m), "stablehlo.reduce_window");
  ASSERT_INTS(av_op_attr(r, "window_dimensions"), 2, 2);
  ASSERT_INTS(av_op_attr(r, "window_strides"), 1, 2);
  const int64_t want_pad[] = {0, 1, 1, 0};
  assert_memory_equal(av_op_attr(r, "padding")->u.dense.data, want_pad, sizeof want_pad);
  ASSERT_TENSOR(r->results[0].type, AV_DT_F32, 4, 3);
  av_module_free(m);
}

/* First op named `name` anywhere (nested regions and every function). */
static const av_op *deep_find_block(const av_block *b, const char *name);
static const av_op *deep_find_op(const av_op *op, const char *name) {
  if (strcmp(op->name, name) == 0) return op;
  for (uint32_t r = 0; r < op->nregions; r++)
    for (uint32_t k = 0; k < op->regions[r].nblocks; k++) {
      const av_op *hit = deep_find_block(&op->regions[r].blocks[k], name);
      if (hit) return hit;
    }
  return NULL;
}
static const av_op *deep_find_block(const av_block *b, const char *name) {
  for (const av_op *op = b->first; op; op = op->next) {
    const av_op *hit = deep_find_op(op, name);
    if (hit) return hit;
  }
  return NULL;
}
static const av_op *deep_find(const av_module *m, const char *name) {
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    const av_op *hit = deep_find_block(&m->funcs[i]->body.blocks[0], name);
    if (hit) return hit;
  }
  fail_msg("no %s op anywhere", name);
  return NULL;
}

static size_t count_unknown_block(const av_block *b) {
  size_t n = 0;
  for (const av_op *op = b->first; op; op = op->next) {
    if (op->code == AV_OP_UNKNOWN) {
      print_message("unknown op %s at %s\n", op->name, op->loc);
      n++;
    }
    for (uint32_t r = 0; r < op->nregions; r++)
      for (uint32_t k = 0; k < op->regions[r].nblocks; k++)
        n += count_unknown_block(&op->regions[r].blocks[k]);
  }
  return n;
}

/* Every op of every JAX-made program maps to a known op (no "hlo.*" leftovers), and the
 * result passes the IR verifier. */
static void test_all_programs_map_to_known_ops(void **state) {
  (void)state;
  static const char *const names[] = {
      "add",      "matmul",   "reduce",  "while",         "cond",        "switch",     "gather",
      "conv",     "tuple_out", "constants", "scatter",     "sort",        "reduce_window",
      "elementwise", "shapes", "reductions", "rng",        "linalg_fft",  "collectives",
      "donate"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    LOAD_OR_SKIP(m, names[i]);
    size_t unknown = 0;
    for (uint32_t f = 0; f < m->nfuncs; f++) unknown += count_unknown_block(&m->funcs[f]->body.blocks[0]);
    if (unknown) fail_msg("%s: %zu unknown ops", names[i], unknown);
    /* The IR verifier (types, scoping, terminators, calls) accepts the imported module. */
    av_diag d;
    av_diag_init(&d);
    if (av_module_verify(m, &d) != AV_OK) fail_msg("%s: verifier: %s", names[i], d.msg);
    av_module_free(m);
  }
}

static void assert_dense_i64(const av_attr *a, int64_t rows, int64_t cols, const int64_t *want) {
  assert_non_null(a);
  assert_int_equal(a->kind, AV_ATTR_DENSE);
  const int64_t dims[2] = {rows, cols};
  assert_tensor(a->type, AV_DT_S64, 2, dims);
  assert_memory_equal(a->u.dense.data, want, (size_t)(rows * cols) * sizeof(int64_t));
}

static void test_shape_ops(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "shapes");
  /* padding=1_2_1x0_-1_0 */
  const av_op *pad = deep_find(m, "stablehlo.pad");
  ASSERT_INTS(av_op_attr(pad, "edge_padding_low"), 1, 0);
  ASSERT_INTS(av_op_attr(pad, "edge_padding_high"), 2, -1);
  ASSERT_INTS(av_op_attr(pad, "interior_padding"), 1, 0);
  ASSERT_TENSOR(pad->results[0].type, AV_DT_F32, 10, 5);
  /* slice={[0:4:2], [1:5:2]} */
  const av_op *sl = deep_find(m, "stablehlo.slice");
  ASSERT_INTS(av_op_attr(sl, "start_indices"), 0, 1);
  ASSERT_INTS(av_op_attr(sl, "limit_indices"), 4, 5);
  ASSERT_INTS(av_op_attr(sl, "strides"), 2, 2);
  const av_op *ds = deep_find(m, "stablehlo.dynamic_slice");
  ASSERT_INTS(av_op_attr(ds, "slice_sizes"), 2, 3);
  assert_int_equal(ds->noperands, 3);
  assert_int_equal(deep_find(m, "stablehlo.dynamic_update_slice")->noperands, 4);
  ASSERT_INTS(av_op_attr(deep_find(m, "stablehlo.reverse"), "dimensions"), 0);
  assert_int_attr(av_op_attr(deep_find(m, "stablehlo.iota"), "iota_dimension"), 0);
  assert_int_attr(av_op_attr(deep_find(m, "stablehlo.concatenate"), "dimension"), 1);
  av_module_free(m);
}

static void test_reduction_family(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "reductions");
  const av_op *sas = deep_find(m, "stablehlo.select_and_scatter");
  ASSERT_INTS(av_op_attr(sas, "window_dimensions"), 2, 2);
  ASSERT_INTS(av_op_attr(sas, "window_strides"), 2, 2);
  assert_int_equal(sas->noperands, 3);
  assert_int_equal(sas->nregions, 2);
  /* select region returns a pred (GE comparison), scatter region adds. */
  ASSERT_SCALAR(terminator(&sas->regions[0].blocks[0])->operands[0]->type, AV_DT_PRED);
  assert_non_null(find_op(&sas->regions[1].blocks[0], "stablehlo.add"));
  /* window={size=4x1 pad=3_0x0_0}: cumsum */
  const av_op *rw = deep_find(m, "stablehlo.reduce_window");
  ASSERT_INTS(av_op_attr(rw, "window_dimensions"), 4, 1);
  const int64_t pad[] = {3, 0, 0, 0};
  assert_dense_i64(av_op_attr(rw, "padding"), 2, 2, pad);
  const av_op *dot = deep_find(m, "stablehlo.dot_general");
  ASSERT_INTS(av_op_attr(dot, "lhs_batching_dimensions"), 0);
  ASSERT_INTS(av_op_attr(dot, "rhs_batching_dimensions"), 0);
  ASSERT_INTS(av_op_attr(dot, "lhs_contracting_dimensions"), 2);
  ASSERT_INTS(av_op_attr(dot, "rhs_contracting_dimensions"), 1);
  ASSERT_TENSOR(dot->results[0].type, AV_DT_F32, 2, 3, 3);
  /* sort of (x, 2x): two operands and results, comparator on 4 scalars */
  const av_op *sort = deep_find(m, "stablehlo.sort");
  assert_int_equal(sort->noperands, 2);
  assert_int_equal(sort->nresults, 2);
  assert_int_equal(sort->regions[0].blocks[0].nargs, 4);
  const av_op *topk = deep_find(m, "chlo.top_k");
  assert_int_attr(av_op_attr(topk, "k"), 2);
  ASSERT_TENSOR(topk->results[1].type, AV_DT_S32, 4, 2);
  /* argmax: a variadic reduce over (values, indices) */
  const av_op *red = deep_find(m, "stablehlo.reduce");
  assert_int_equal(red->noperands, 4);
  assert_int_equal(red->nresults, 2);
  assert_int_equal(red->regions[0].blocks[0].nargs, 4);
  assert_non_null(deep_find(m, "stablehlo.optimization_barrier"));
  av_module_free(m);
}

static void test_rng_ops(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "rng");
  const av_op *g = deep_find(m, "stablehlo.rng_bit_generator");
  assert_enum(av_op_attr(g, "rng_algorithm"), "DEFAULT");
  ASSERT_TENSOR(g->results[0].type, AV_DT_U64, 2);
  ASSERT_TENSOR(g->results[1].type, AV_DT_U32, 3, 2);
  const av_op *u = deep_find(m, "stablehlo.rng");
  assert_enum(av_op_attr(u, "rng_distribution"), "UNIFORM");
  assert_int_equal(u->noperands, 3);
  const av_attr *shape_const = av_op_attr(u->operands[2]->def, "value");
  const int64_t four = 4;
  assert_tensor(shape_const->type, AV_DT_S64, 1, (const int64_t[]){1});
  assert_memory_equal(shape_const->u.dense.data, &four, sizeof four);
  av_module_free(m);
}

static void test_elementwise_and_custom_calls(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "elementwise");
  const av_op *rp = deep_find(m, "stablehlo.reduce_precision");
  assert_int_equal(av_op_attr(rp, "exponent_bits")->u.i, 5);
  assert_int_equal(av_op_attr(rp, "mantissa_bits")->u.i, 10);
  assert_int_equal(deep_find(m, "chlo.erf")->code, AV_OP_CHLO_ERF);
  ASSERT_TENSOR(deep_find(m, "stablehlo.bitcast_convert")->results[0].type, AV_DT_S32, 3);
  ASSERT_TENSOR(deep_find(m, "stablehlo.complex")->results[0].type, AV_DT_C64, 3);
  av_module_free(m);

  LOAD_OR_SKIP(l, "linalg_fft");
  const av_op *fft = deep_find(l, "stablehlo.fft");
  assert_enum(av_op_attr(fft, "fft_type"), "FFT");
  ASSERT_INTS(av_op_attr(fft, "fft_length"), 4);
  /* potrf: layout-constrained (column-major) operand, (factor, info) results */
  const av_op *cc = NULL;
  for (uint32_t i = 0; i < l->nfuncs && !cc; i++)
    for (const av_op *op = l->funcs[i]->body.blocks[0].first; op; op = op->next) {
      const av_attr *t = av_op_attr(op, "call_target_name");
      if (t && strcmp(t->u.str.s, "lapack_spotrf_ffi") == 0) cc = op;
    }
  assert_non_null(cc);
  assert_int_equal(cc->nresults, 2);
  assert_int_equal(av_op_attr(cc, "api_version")->u.i, 4);
  const av_attr *ol = av_op_attr(cc, "operand_layouts");
  assert_int_equal(ol->kind, AV_ATTR_ARRAY);
  assert_int_equal(ol->u.array.n, 1);
  const int64_t col_major[] = {0, 1};
  assert_memory_equal(ol->u.array.items[0]->u.dense.data, col_major, sizeof col_major);
  assert_int_equal(av_op_attr(cc, "result_layouts")->u.array.n, 2);
  av_module_free(l);
}

static void test_collectives(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "collectives");
  const int64_t groups[] = {0, 1, 2, 3};
  const av_op *ar = deep_find(m, "stablehlo.all_reduce");
  assert_dense_i64(av_op_attr(ar, "replica_groups"), 1, 4, groups);
  assert_int_attr(av_op_attr(ar, "channel_id"), 1);
  assert_true(av_op_attr(ar, "use_global_device_ids")->u.b);
  assert_non_null(find_op(&ar->regions[0].blocks[0], "stablehlo.add"));
  const av_op *ag = deep_find(m, "stablehlo.all_gather");
  assert_int_attr(av_op_attr(ag, "all_gather_dim"), 0);
  ASSERT_TENSOR(ag->results[0].type, AV_DT_F32, 8);
  const int64_t pairs[] = {0, 1, 1, 2, 2, 3, 3, 0};
  assert_dense_i64(av_op_attr(deep_find(m, "stablehlo.collective_permute"), "source_target_pairs"),
                   4, 2, pairs);
  assert_int_attr(av_op_attr(deep_find(m, "stablehlo.reduce_scatter"), "scatter_dimension"), 0);
  const av_op *a2a = deep_find(m, "stablehlo.all_to_all");
  assert_int_attr(av_op_attr(a2a, "split_count"), 4);
  assert_int_attr(av_op_attr(a2a, "split_dimension"), 0);
  av_module_free(m);
}

static void test_donation_from_input_output_alias(void **state) {
  (void)state;
  LOAD_OR_SKIP(m, "donate");
  /* input_output_alias={ {0}: (0, {}, may-alias) } */
  av_func *f = av_module_entry(m);
  const av_attr *a = av_dict_get(f->arg_attrs[0], "tf.aliasing_output");
  assert_non_null(a);
  assert_int_equal(a->kind, AV_ATTR_INT);
  assert_int_equal(a->u.i, 0);
  assert_null(av_dict_get(f->arg_attrs[1], "tf.aliasing_output"));
  av_module_free(m);
}

/* Every prefix and many single-byte corruptions of real protos: never crash (ASan checks
 * the bounds), and every failure is a diagnostic from the HLO loader. */
static void test_truncated_and_corrupted_inputs(void **state) {
  (void)state;
  static const char *const names[] = {"while", "conv", "constants", "sort"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    blob b;
    if (!read_data(names[k], &b)) skip();
    unsigned char *copy = malloc(b.n);
    size_t failures = 0;
    for (size_t len = 0; len < b.n; len++) {
      av_diag d;
      av_diag_init(&d);
      memcpy(copy, b.p, len);
      av_module *m = av_load_hlo_proto(len ? copy : NULL, len, &d);
      if (m) {
        av_module_free(m);
      } else {
        failures++;
        assert_int_equal(strncmp(d.msg, "hlo", 3), 0);
      }
    }
    assert_true(failures > 0);
    for (size_t pos = 0; pos < b.n; pos += 3) {
      memcpy(copy, b.p, b.n);
      copy[pos] ^= (unsigned char)(0x5a + pos);
      av_diag d;
      av_diag_init(&d);
      av_module *m = av_load_hlo_proto(copy, b.n, &d);
      if (m)
        av_module_free(m);
      else
        assert_int_equal(strncmp(d.msg, "hlo", 3), 0);
    }
    free(copy);
    free(b.p);
  }
}

/* ------------------------------------------------------- hand-encoded protos */

typedef struct pbw {
  unsigned char buf[4096];
  size_t n;
} pbw;

static void w_varint(pbw *w, uint64_t v) {
  do {
    unsigned char b = v & 0x7f;
    v >>= 7;
    w->buf[w->n++] = (unsigned char)(b | (v ? 0x80 : 0));
  } while (v);
}
static void w_int(pbw *w, uint32_t field, int64_t v) {
  w_varint(w, (uint64_t)field << 3);
  w_varint(w, (uint64_t)v);
}
static void w_bytes(pbw *w, uint32_t field, const void *p, size_t n) {
  w_varint(w, (uint64_t)field << 3 | 2);
  w_varint(w, n);
  memcpy(w->buf + w->n, p, n);
  w->n += n;
}
static void w_str(pbw *w, uint32_t field, const char *s) { w_bytes(w, field, s, strlen(s)); }
static void w_msg(pbw *w, uint32_t field, const pbw *sub) { w_bytes(w, field, sub->buf, sub->n); }

/* ShapeProto of an array: element_type=2, dimensions=3 (unpacked, also legal). */
static pbw shape(int type, size_t rank, const int64_t *dims) {
  pbw s = {.n = 0};
  w_int(&s, 2, type);
  for (size_t i = 0; i < rank; i++) w_int(&s, 3, dims[i]);
  return s;
}

static pbw instr(const char *name, const char *opcode, int64_t id, const pbw *shp,
                 size_t nops, const int64_t *ops) {
  pbw in = {.n = 0};
  w_str(&in, 1, name);
  w_str(&in, 2, opcode);
  w_msg(&in, 3, shp);
  w_int(&in, 35, id);
  for (size_t i = 0; i < nops; i++) w_int(&in, 36, ops[i]);
  return in;
}

enum { PT_PRED = 1, PT_S32 = 4, PT_F32 = 11, PT_TUPLE = 13 };

/* entry(p: (f32[2], s32[])) = tuple(foo-bar(gte(p, 0)), gte(p, 1)) */
static pbw tuple_module(const char *op_of_4, int64_t operand_of_4) {
  static const int64_t two[] = {2};
  pbw f2 = shape(PT_F32, 1, two), s32 = shape(PT_S32, 0, NULL);
  pbw tup = {.n = 0};
  w_int(&tup, 2, PT_TUPLE);
  w_msg(&tup, 4, &f2);
  w_msg(&tup, 4, &s32);
  pbw p = instr("p", "parameter", 1, &tup, 0, NULL);
  w_int(&p, 9, 0);
  const int64_t one = 1;
  pbw g1 = instr("g1", "get-tuple-element", 2, &s32, 1, &one);
  w_int(&g1, 13, 1);
  pbw g0 = instr("g0", "get-tuple-element", 3, &f2, 1, &one);
  pbw x = instr("x", op_of_4, 4, &f2, 1, &operand_of_4);
  const int64_t tops[] = {4, 2};
  pbw t = instr("t", "tuple", 5, &tup, 2, tops);
  pbw comp = {.n = 0};
  w_str(&comp, 1, "entry_comp");
  w_msg(&comp, 2, &p);
  w_msg(&comp, 2, &g1);
  w_msg(&comp, 2, &g0);
  w_msg(&comp, 2, &x);
  w_msg(&comp, 2, &t);
  w_int(&comp, 5, 7);
  w_int(&comp, 6, 5);
  pbw mod = {.n = 0};
  w_str(&mod, 1, "m");
  w_msg(&mod, 3, &comp);
  w_int(&mod, 6, 7);
  return mod;
}

static void test_tuple_parameter_and_unknown_opcode(void **state) {
  (void)state;
  pbw mod = tuple_module("foo-bar", 3);
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_hlo_proto(mod.buf, mod.n, &d);
  if (!m) fail_msg("%s", d.msg);
  const av_block *b = entry_block(m);
  /* The tuple parameter became two arguments. */
  assert_int_equal(b->nargs, 2);
  ASSERT_TENSOR(b->args[0].type, AV_DT_F32, 2);
  ASSERT_SCALAR(b->args[1].type, AV_DT_S32);
  const av_op *x = must_find(b, "hlo.foo-bar");
  assert_int_equal(x->code, AV_OP_UNKNOWN);
  assert_ptr_equal(x->operands[0], &b->args[0]);
  const av_op *ret = terminator(b);
  assert_int_equal(ret->noperands, 2);
  assert_ptr_equal(ret->operands[0], &x->results[0]);
  assert_ptr_equal(ret->operands[1], &b->args[1]);
  av_module_free(m);
}

/* entry(a: f32[2], b: f32[2]) = add(a, b) numbered as TensorFlow 2.21's tf2xla numbers
 * instructions: ids (1 << 32) | local id, operands by the local id. */
static pbw unique_id_module(int64_t high, int64_t root_id, int64_t second_param_id) {
  static const int64_t two[] = {2};
  pbw f2 = shape(PT_F32, 1, two);
  pbw a = instr("a", "parameter", high | 1, &f2, 0, NULL);
  pbw b = instr("b", "parameter", second_param_id, &f2, 0, NULL);
  w_int(&b, 9, 1);
  const int64_t ops[] = {1, 2};
  pbw add = instr("sum", "add", high | 3, &f2, 2, ops);
  pbw comp = {.n = 0};
  w_str(&comp, 1, "entry_comp");
  w_msg(&comp, 2, &a);
  w_msg(&comp, 2, &b);
  w_msg(&comp, 2, &add);
  w_int(&comp, 5, 1);
  w_int(&comp, 6, root_id);
  pbw mod = {.n = 0};
  w_str(&mod, 1, "m");
  w_msg(&mod, 3, &comp);
  w_int(&mod, 6, 1);
  return mod;
}

static void test_unique_ids_resolve_by_local_id(void **state) {
  (void)state;
  const int64_t high = (int64_t)1 << 32;
  pbw mod = unique_id_module(high, high | 3, high | 2);
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_hlo_proto(mod.buf, mod.n, &d);
  if (!m) fail_msg("%s", d.msg);
  const av_block *b = entry_block(m);
  assert_int_equal(b->nargs, 2);
  const av_op *add = must_find(b, "stablehlo.add");
  assert_ptr_equal(add->operands[0], &b->args[0]);
  assert_ptr_equal(add->operands[1], &b->args[1]);
  assert_ptr_equal(terminator(b)->operands[0], &add->results[0]);
  av_module_free(m);
  /* Two instructions whose ids differ only above bit 31 are the same instruction to XLA. */
  mod = unique_id_module(high, high | 3, ((int64_t)2 << 32) | 1);
  av_diag_init(&d);
  assert_null(av_load_hlo_proto(mod.buf, mod.n, &d));
  assert_non_null(strstr(d.msg, "duplicate instruction id 1"));
}

enum { PT_S4 = 21, PT_U4 = 22, PT_S64 = 5, PT_U32 = 8, PT_F16 = 10, PT_F64 = 12, PT_C64 = 15 };

/* A module whose entry returns the given constants (instruction ids 1..n). */
static pbw constants_module(size_t n, const pbw *shapes, const pbw *literals) {
  pbw comp = {.n = 0}, tup = {.n = 0}, mod = {.n = 0};
  w_str(&comp, 1, "consts");
  w_int(&tup, 2, PT_TUPLE);
  int64_t ids[16];
  for (size_t i = 0; i < n; i++) {
    pbw in = instr("c", "constant", (int64_t)i + 1, &shapes[i], 0, NULL);
    w_msg(&in, 8, &literals[i]);
    w_msg(&comp, 2, &in);
    w_msg(&tup, 4, &shapes[i]);
    ids[i] = (int64_t)i + 1;
  }
  pbw root = instr("t", "tuple", 100, &tup, n, ids);
  w_msg(&comp, 2, &root);
  w_int(&comp, 5, 1);
  w_int(&comp, 6, 100);
  w_msg(&mod, 3, &comp);
  return mod;
}

static const av_attr *returned_constant(const av_module *m, int i) {
  const av_op *ret = av_module_entry(m)->body.blocks[0].last;
  return av_op_attr(ret->operands[i]->def, "value");
}

/* Literal encodings of several element types, layouts and the storage normalisation of
 * sub-byte integers; expected bytes worked out by hand. */
static void test_literal_encodings(void **state) {
  (void)state;
  pbw shapes[9], lits[9];
  for (int i = 0; i < 9; i++) lits[i].n = 0;
  /* 0: f32[2,3] stored column-major (minor_to_major {0,1}); element (i,j) = 3i + j. */
  static const int64_t d23[] = {2, 3};
  shapes[0] = shape(PT_F32, 2, d23);
  pbw layout = {.n = 0}, lshape = shape(PT_F32, 2, d23);
  w_int(&layout, 1, 0);
  w_int(&layout, 1, 1);
  w_msg(&lshape, 5, &layout);
  w_msg(&lits[0], 1, &lshape);
  const float colmajor[] = {0, 3, 1, 4, 2, 5};
  w_bytes(&lits[0], 8, colmajor, sizeof colmajor); /* packed fixed32 */
  /* 1: s4[3] one element per byte: 0xf -> -1, 0x7 -> 7, 0x8 -> -8 */
  static const int64_t d3[] = {3}, d2[] = {2}, d1[] = {1};
  shapes[1] = shape(PT_S4, 1, d3);
  const uint8_t s4[] = {0x0f, 0x07, 0x08};
  w_bytes(&lits[1], 21, s4, sizeof s4);
  /* 2: u4[2]: high bits dropped */
  shapes[2] = shape(PT_U4, 1, d2);
  const uint8_t u4[] = {0x1f, 0x03};
  w_bytes(&lits[2], 22, u4, sizeof u4);
  /* 3: c64[2] as interleaved (re, im) floats */
  shapes[3] = shape(PT_C64, 1, d2);
  const float c64[] = {1, 2, 3, 4};
  w_bytes(&lits[3], 12, c64, sizeof c64);
  /* 4: s64[2] = {-5, 2^40} as unpacked varints */
  shapes[4] = shape(PT_S64, 1, d2);
  w_int(&lits[4], 5, -5);
  w_int(&lits[4], 5, (int64_t)1 << 40);
  /* 5: u32[1] = {4000000000} */
  shapes[5] = shape(PT_U32, 1, d1);
  pbw packed = {.n = 0};
  w_varint(&packed, 4000000000u);
  w_bytes(&lits[5], 6, packed.buf, packed.n);
  /* 6: f16[2] raw little-endian bytes: 1.0 = 0x3c00, -2.0 = 0xc000 */
  shapes[6] = shape(PT_F16, 1, d2);
  const uint8_t f16[] = {0x00, 0x3c, 0x00, 0xc0};
  w_bytes(&lits[6], 11, f16, sizeof f16);
  /* 7: f64[1] = {0.1} packed fixed64 */
  shapes[7] = shape(PT_F64, 1, d1);
  const double tenth = 0.1;
  w_bytes(&lits[7], 9, &tenth, sizeof tenth);
  /* 8: pred[3] as unpacked varints, 2 counts as true */
  shapes[8] = shape(PT_PRED, 1, d3);
  w_int(&lits[8], 2, 2);
  w_int(&lits[8], 2, 0);
  w_int(&lits[8], 2, 1);

  pbw mod = constants_module(9, shapes, lits);
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_hlo_proto(mod.buf, mod.n, &d);
  if (!m) fail_msg("%s", d.msg);
  const float rowmajor[] = {0, 1, 2, 3, 4, 5};
  assert_memory_equal(returned_constant(m, 0)->u.dense.data, rowmajor, sizeof rowmajor);
  const int8_t s4_want[] = {-1, 7, -8};
  assert_memory_equal(returned_constant(m, 1)->u.dense.data, s4_want, sizeof s4_want);
  const uint8_t u4_want[] = {0x0f, 0x03};
  assert_memory_equal(returned_constant(m, 2)->u.dense.data, u4_want, sizeof u4_want);
  assert_memory_equal(returned_constant(m, 3)->u.dense.data, c64, sizeof c64);
  const int64_t s64_want[] = {-5, (int64_t)1 << 40};
  assert_memory_equal(returned_constant(m, 4)->u.dense.data, s64_want, sizeof s64_want);
  const uint32_t u32_want = 4000000000u;
  assert_memory_equal(returned_constant(m, 5)->u.dense.data, &u32_want, 4);
  const uint16_t f16_want[] = {0x3c00, 0xc000};
  assert_memory_equal(returned_constant(m, 6)->u.dense.data, f16_want, sizeof f16_want);
  assert_memory_equal(returned_constant(m, 7)->u.dense.data, &tenth, sizeof tenth);
  const uint8_t pred_want[] = {1, 0, 1};
  assert_memory_equal(returned_constant(m, 8)->u.dense.data, pred_want, sizeof pred_want);
  av_module_free(m);

  /* A literal with fewer values than its shape is an error naming the instruction. */
  lits[0].n = 0;
  w_bytes(&lits[0], 8, colmajor, 5 * sizeof(float));
  mod = constants_module(1, shapes, lits);
  av_diag_init(&d);
  assert_null(av_load_hlo_proto(mod.buf, mod.n, &d));
  assert_non_null(strstr(d.msg, "'c' (constant)"));
  assert_non_null(strstr(d.msg, "fewer values"));

  /* A huge declared shape with a tiny literal is rejected before any allocation. */
  static const int64_t huge[] = {1000000, 1000000};
  shapes[0] = shape(PT_F32, 2, huge);
  mod = constants_module(1, shapes, lits);
  av_diag_init(&d);
  assert_null(av_load_hlo_proto(mod.buf, mod.n, &d));
  assert_non_null(strstr(d.msg, "fewer values"));
}

/* Token ops: after-all, infeed ((data), token) and outfeed(data, token). */
static void test_token_ops(void **state) {
  (void)state;
  static const int64_t two[] = {2};
  pbw f2 = shape(PT_F32, 1, two), tok = shape(17, 0, NULL);
  pbw data = {.n = 0}, inf_shape = {.n = 0}, root_shape = {.n = 0};
  w_int(&data, 2, PT_TUPLE);
  w_msg(&data, 4, &f2);
  w_int(&inf_shape, 2, PT_TUPLE);
  w_msg(&inf_shape, 4, &data);
  w_msg(&inf_shape, 4, &tok);
  w_int(&root_shape, 2, PT_TUPLE);
  w_msg(&root_shape, 4, &f2);
  w_msg(&root_shape, 4, &tok);
  pbw p = instr("p", "parameter", 1, &f2, 0, NULL);
  pbw aa = instr("aa", "after-all", 2, &tok, 0, NULL);
  const int64_t two_id = 2, three_id = 3, four_id = 4;
  pbw inf = instr("inf", "infeed", 3, &inf_shape, 1, &two_id);
  w_str(&inf, 27, "cfg");
  pbw g0 = instr("g0", "get-tuple-element", 4, &data, 1, &three_id);
  pbw g00 = instr("g00", "get-tuple-element", 5, &f2, 1, &four_id);
  const int64_t out_ops[] = {1, 2};
  pbw outf = instr("outf", "outfeed", 6, &tok, 2, out_ops);
  const int64_t root_ops[] = {5, 6};
  pbw root = instr("root", "tuple", 7, &root_shape, 2, root_ops);
  pbw comp = {.n = 0}, mod = {.n = 0};
  const pbw *all[] = {&p, &aa, &inf, &g0, &g00, &outf, &root};
  for (int i = 0; i < 7; i++) w_msg(&comp, 2, all[i]);
  w_int(&comp, 5, 1);
  w_int(&comp, 6, 7);
  w_msg(&mod, 3, &comp);
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_hlo_proto(mod.buf, mod.n, &d);
  if (!m) fail_msg("%s", d.msg);
  const av_block *b = entry_block(m);
  const av_op *after = must_find(b, "stablehlo.after_all");
  assert_int_equal(after->results[0].type->kind, AV_TYPE_TOKEN);
  const av_op *infeed = must_find(b, "stablehlo.infeed");
  assert_int_equal(infeed->nresults, 2);
  ASSERT_TENSOR(infeed->results[0].type, AV_DT_F32, 2);
  assert_int_equal(infeed->results[1].type->kind, AV_TYPE_TOKEN);
  assert_string_equal(av_op_attr(infeed, "infeed_config")->u.str.s, "cfg");
  const av_op *outfeed = must_find(b, "stablehlo.outfeed");
  assert_ptr_equal(outfeed->operands[0], &b->args[0]);
  assert_ptr_equal(outfeed->operands[1], &after->results[0]);
  const av_op *ret = terminator(b);
  assert_ptr_equal(ret->operands[0], &infeed->results[0]);
  assert_ptr_equal(ret->operands[1], &outfeed->results[0]);
  av_diag_init(&d);
  if (av_module_verify(m, &d) != AV_OK) fail_msg("verifier: %s", d.msg);
  av_module_free(m);
}

/* Aliases and donors name (parameter, shape index) pairs inside tuples; they land on the
 * flattened arguments. */
static void test_donation_inside_tuples(void **state) {
  (void)state;
  pbw mod = tuple_module("negate", 3);
  pbw entry = {.n = 0}, alias = {.n = 0}, donor_entry = {.n = 0}, donors = {.n = 0};
  w_int(&entry, 1, 1); /* output_shape_index {1} */
  w_int(&entry, 2, 0); /* parameter 0 */
  w_int(&entry, 3, 1); /* parameter_shape_index {1} */
  w_msg(&alias, 1, &entry);
  w_msg(&mod, 8, &alias);
  w_int(&donor_entry, 1, 0); /* parameter 0, shape index {0} */
  w_int(&donor_entry, 2, 0);
  w_msg(&donors, 1, &donor_entry);
  w_msg(&mod, 18, &donors);
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_hlo_proto(mod.buf, mod.n, &d);
  if (!m) fail_msg("%s", d.msg);
  av_func *f = av_module_entry(m);
  const av_attr *a = av_dict_get(f->arg_attrs[1], "tf.aliasing_output");
  assert_non_null(a);
  assert_int_equal(a->u.i, 1);
  assert_null(av_dict_get(f->arg_attrs[0], "tf.aliasing_output"));
  const av_attr *donor = av_dict_get(f->arg_attrs[0], "jax.buffer_donor");
  assert_non_null(donor);
  assert_true(donor->u.b);
  av_module_free(m);
}

/* OpMetadata source file/line become the location: "name"("file":line:0). */
static void test_metadata_location(void **state) {
  (void)state;
  static const int64_t two[] = {2};
  pbw f2 = shape(PT_F32, 1, two), meta = {.n = 0}, comp = {.n = 0}, mod = {.n = 0};
  pbw p = instr("p", "parameter", 1, &f2, 0, NULL);
  const int64_t one = 1;
  pbw neg = instr("ne\"g", "negate", 2, &f2, 1, &one);
  w_str(&meta, 1, "aten__neg");
  w_str(&meta, 3, "/tmp/train.py");
  w_int(&meta, 4, 12);
  w_msg(&neg, 7, &meta);
  w_msg(&comp, 2, &p);
  w_msg(&comp, 2, &neg);
  w_int(&comp, 5, 1);
  w_int(&comp, 6, 2);
  w_msg(&mod, 3, &comp);
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_hlo_proto(mod.buf, mod.n, &d);
  if (!m) fail_msg("%s", d.msg);
  const av_op *op = must_find(entry_block(m), "stablehlo.negate");
  assert_string_equal(op->loc, "\"ne\\22g\"(\"/tmp/train.py\":12:0)");
  av_module_free(m);
}

static void test_undefined_operand_names_the_instruction(void **state) {
  (void)state;
  pbw mod = tuple_module("negate", 99);
  av_diag d;
  av_diag_init(&d);
  assert_null(av_load_hlo_proto(mod.buf, mod.n, &d));
  assert_int_equal(d.code, AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "entry_comp"));
  assert_non_null(strstr(d.msg, "'x' (negate)"));
  assert_non_null(strstr(d.msg, "id 99"));
}

static void test_wrong_arity_is_an_error(void **state) {
  (void)state;
  /* get-tuple-element of a non-tuple: operand 3 is f32[2]. */
  pbw mod = tuple_module("get-tuple-element", 3);
  av_diag d;
  av_diag_init(&d);
  assert_null(av_load_hlo_proto(mod.buf, mod.n, &d));
  assert_non_null(strstr(d.msg, "not a tuple"));
}

/* Tuple arities that disagree: a tuple instruction with three operands whose shape has two
 * elements, and a get-tuple-element index past the tuple's end. */
static void test_mismatched_tuple_arity_is_an_error(void **state) {
  (void)state;
  static const int64_t two[] = {2};
  pbw f2 = shape(PT_F32, 1, two), s32 = shape(PT_S32, 0, NULL);
  pbw tup = {.n = 0};
  w_int(&tup, 2, PT_TUPLE);
  w_msg(&tup, 4, &f2);
  w_msg(&tup, 4, &s32);
  for (int variant = 0; variant < 2; variant++) {
    pbw p = instr("p", "parameter", 1, &tup, 0, NULL);
    w_int(&p, 9, 0);
    const int64_t one = 1;
    pbw g = instr("g", "get-tuple-element", 2, &s32, 1, &one);
    w_int(&g, 13, variant == 0 ? 1 : 5); /* index 5 of a 2-tuple */
    const int64_t three[] = {1, 2, 2}, pair[] = {1, 2};
    pbw t = variant == 0 ? instr("t", "tuple", 5, &tup, 3, three) : instr("t", "tuple", 5, &tup, 2, pair);
    pbw comp = {.n = 0};
    w_str(&comp, 1, "entry_comp");
    w_msg(&comp, 2, &p);
    w_msg(&comp, 2, &g);
    w_msg(&comp, 2, &t);
    w_int(&comp, 5, 7);
    w_int(&comp, 6, 5);
    pbw mod = {.n = 0};
    w_str(&mod, 1, "m");
    w_msg(&mod, 3, &comp);
    w_int(&mod, 6, 7);
    av_diag d;
    av_diag_init(&d);
    av_module *m = av_load_hlo_proto(mod.buf, mod.n, &d);
    if (m) {
      av_module_free(m);
      fail_msg("variant %d: a mismatched tuple arity was accepted", variant);
    }
    assert_int_equal(d.code, AV_INVALID_ARGUMENT);
    if (!strstr(d.msg, variant == 0 ? "'t' (tuple)" : "'g' (get-tuple-element)"))
      fail_msg("variant %d: %s", variant, d.msg);
  }
}

/* A computation that calls itself must be rejected, not recurse forever. */
static void test_recursive_call_is_rejected(void **state) {
  (void)state;
  pbw s32 = shape(PT_S32, 0, NULL);
  pbw p = instr("p", "parameter", 1, &s32, 0, NULL);
  const int64_t one = 1;
  pbw c = instr("c", "call", 2, &s32, 1, &one);
  w_int(&c, 38, 9);
  pbw comp = {.n = 0};
  w_str(&comp, 1, "self");
  w_msg(&comp, 2, &p);
  w_msg(&comp, 2, &c);
  w_int(&comp, 5, 9);
  w_int(&comp, 6, 2);
  pbw mod = {.n = 0};
  w_msg(&mod, 3, &comp);
  w_int(&mod, 6, 9);
  av_diag d;
  av_diag_init(&d);
  assert_null(av_load_hlo_proto(mod.buf, mod.n, &d));
  assert_non_null(strstr(d.msg, "recursion"));
}

/* conditional on a pred with two branches becomes stablehlo.if. */
static void test_pred_conditional_becomes_if(void **state) {
  (void)state;
  pbw pred = shape(PT_PRED, 0, NULL), s32 = shape(PT_S32, 0, NULL);
  pbw comps[2];
  const char *ops[2] = {"negate", "abs"};
  for (int i = 0; i < 2; i++) {
    pbw bp = instr("bp", "parameter", 10 + 10 * i, &s32, 0, NULL);
    const int64_t pid = 10 + 10 * i;
    pbw op = instr("bop", ops[i], 11 + 10 * i, &s32, 1, &pid);
    comps[i] = (pbw){.n = 0};
    w_str(&comps[i], 1, i ? "false_branch" : "true_branch");
    w_msg(&comps[i], 2, &bp);
    w_msg(&comps[i], 2, &op);
    w_int(&comps[i], 5, 100 + i);
    w_int(&comps[i], 6, 11 + 10 * i);
  }
  pbw p0 = instr("p0", "parameter", 1, &pred, 0, NULL);
  pbw p1 = instr("p1", "parameter", 2, &s32, 0, NULL);
  w_int(&p1, 9, 1);
  const int64_t cops[] = {1, 2, 2};
  pbw cnd = instr("cnd", "conditional", 3, &s32, 3, cops);
  w_int(&cnd, 38, 100);
  w_int(&cnd, 38, 101);
  pbw entry = {.n = 0};
  w_str(&entry, 1, "main_comp");
  w_msg(&entry, 2, &p0);
  w_msg(&entry, 2, &p1);
  w_msg(&entry, 2, &cnd);
  w_int(&entry, 5, 1);
  w_int(&entry, 6, 3);
  pbw mod = {.n = 0};
  w_msg(&mod, 3, &comps[0]);
  w_msg(&mod, 3, &comps[1]);
  w_msg(&mod, 3, &entry);
  w_int(&mod, 6, 1);
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_hlo_proto(mod.buf, mod.n, &d);
  if (!m) fail_msg("%s", d.msg);
  const av_block *b = entry_block(m);
  const av_op *iff = must_find(b, "stablehlo.if");
  assert_ptr_equal(iff->operands[0], &b->args[0]);
  assert_int_equal(iff->nregions, 2);
  const av_op *neg = must_find(&iff->regions[0].blocks[0], "stablehlo.negate");
  assert_ptr_equal(neg->operands[0], &b->args[1]);
  assert_non_null(find_op(&iff->regions[1].blocks[0], "stablehlo.abs"));
  av_module_free(m);
}

/* tuple(t, t) nested 40 deep would have 2^40 leaves: rejected, not expanded. */
static void test_shared_tuple_blowup_is_rejected(void **state) {
  (void)state;
  static pbw comp, mod, tmp; /* large: keep off the stack */
  pbw s32 = shape(PT_S32, 0, NULL);
  pbw tup = {.n = 0};
  w_int(&tup, 2, PT_TUPLE);
  comp.n = mod.n = 0;
  w_str(&comp, 1, "blowup");
  tmp = instr("p", "parameter", 1, &s32, 0, NULL);
  w_msg(&comp, 2, &tmp);
  for (int64_t id = 2; id <= 41; id++) {
    const int64_t ops[] = {id - 1, id - 1};
    tmp = instr("t", "tuple", id, &tup, 2, ops);
    w_msg(&comp, 2, &tmp);
  }
  w_int(&comp, 5, 1);
  w_int(&comp, 6, 41);
  w_msg(&mod, 3, &comp);
  av_diag d;
  av_diag_init(&d);
  assert_null(av_load_hlo_proto(mod.buf, mod.n, &d));
  assert_non_null(strstr(d.msg, "tuple nested too deeply"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add),
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_reduce),
      cmocka_unit_test(test_while),
      cmocka_unit_test(test_cond_becomes_case),
      cmocka_unit_test(test_switch_three_branches),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_conv),
      cmocka_unit_test(test_tuple_result_is_flattened),
      cmocka_unit_test(test_constants_of_several_types),
      cmocka_unit_test(test_scatter),
      cmocka_unit_test(test_sort_in_called_function),
      cmocka_unit_test(test_reduce_window),
      cmocka_unit_test(test_all_programs_map_to_known_ops),
      cmocka_unit_test(test_shape_ops),
      cmocka_unit_test(test_reduction_family),
      cmocka_unit_test(test_rng_ops),
      cmocka_unit_test(test_elementwise_and_custom_calls),
      cmocka_unit_test(test_collectives),
      cmocka_unit_test(test_donation_from_input_output_alias),
      cmocka_unit_test(test_donation_inside_tuples),
      cmocka_unit_test(test_literal_encodings),
      cmocka_unit_test(test_token_ops),
      cmocka_unit_test(test_metadata_location),
      cmocka_unit_test(test_truncated_and_corrupted_inputs),
      cmocka_unit_test(test_tuple_parameter_and_unknown_opcode),
      cmocka_unit_test(test_undefined_operand_names_the_instruction),
      cmocka_unit_test(test_wrong_arity_is_an_error),
      cmocka_unit_test(test_mismatched_tuple_arity_is_an_error),
      cmocka_unit_test(test_recursive_call_is_rejected),
      cmocka_unit_test(test_pred_conditional_becomes_if),
      cmocka_unit_test(test_shared_tuple_blowup_is_rejected),
      cmocka_unit_test(test_unique_ids_resolve_by_local_id),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
