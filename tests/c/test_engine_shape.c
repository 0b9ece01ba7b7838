/* Data movement, control flow, checks and diagnostics of the engine, on hand-built IR. */
#include <math.h>

#include "test_engine_util.h"

static const av_attr *ints(av_module *m, int n, ...) {
  int64_t v[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) v[i] = va_arg(ap, int);
  va_end(ap);
  return av_attr_ints(m, (size_t)n, v);
}

/* Runs main (already returning one value) and compares output 0 with `expect`. */
static void run_expect(av_module *m, const void *expect, size_t nbytes) {
  av_tensor out[4];
  av_diag d;
  av_code c = tb_run(m, out, 4, &d);
  if (c != AV_OK) fail_msg("run failed: %s", d.msg);
  assert_memory_equal(out[0].storage->data, expect, nbytes);
  av_storage_release(out[0].storage);
}

static void test_pad_negative_and_interior(void **state) {
  (void)state;
  {
    av_module *m = av_module_new();
    const av_type *rt = ty(m, AV_DT_S32, 1, 5);
    tb t = tb_new(m, 1, &rt);
    int32_t x[3] = {1, 2, 3}, zero = 0;
    av_value *ops[2] = {tb_const(&t, ty(m, AV_DT_S32, 1, 3), x, sizeof x),
                        tb_const(&t, ty(m, AV_DT_S32, 0), &zero, sizeof zero)};
    av_named_attr a[3] = {{"edge_padding_low", ints(m, 1, -1)},
                          {"edge_padding_high", ints(m, 1, 1)},
                          {"interior_padding", ints(m, 1, 1)}};
    av_op *op = tb_op(t.b, m, "stablehlo.pad", 2, ops, 1, &rt, 3, a, 0);
    av_value *r = &op->results[0];
    tb_return(t.b, m, "func.return", 1, &r);
    /* [1,0,2,0,3] without its first element, then one pad: [0,2,0,3,0] */
    int32_t expect[5] = {0, 2, 0, 3, 0};
    run_expect(m, expect, sizeof expect);
  }
  {
    av_module *m = av_module_new();
    const av_type *rt = ty(m, AV_DT_S32, 2, 4, 2);
    tb t = tb_new(m, 1, &rt);
    int32_t x[4] = {1, 2, 3, 4}, nine = 9;
    av_value *ops[2] = {tb_const(&t, ty(m, AV_DT_S32, 2, 2, 2), x, sizeof x),
                        tb_const(&t, ty(m, AV_DT_S32, 0), &nine, sizeof nine)};
    av_named_attr a[3] = {{"edge_padding_low", ints(m, 2, 1, -1)},
                          {"edge_padding_high", ints(m, 2, 0, 1)},
                          {"interior_padding", ints(m, 2, 1, 0)}};
    av_op *op = tb_op(t.b, m, "stablehlo.pad", 2, ops, 1, &rt, 3, a, 0);
    av_value *r = &op->results[0];
    tb_return(t.b, m, "func.return", 1, &r);
    int32_t expect[8] = {9, 9, 2, 9, 9, 9, 4, 9};
    run_expect(m, expect, sizeof expect);
  }
}

static void dyn_slice_case(int32_t start, const int32_t *expect) {
  av_module *m = av_module_new();
  const av_type *rt = ty(m, AV_DT_S32, 1, 4);
  tb t = tb_new(m, 1, &rt);
  int32_t x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  av_value *ops[2] = {tb_const(&t, ty(m, AV_DT_S32, 1, 10), x, sizeof x),
                      tb_const(&t, ty(m, AV_DT_S32, 0), &start, sizeof start)};
  av_named_attr a[1] = {{"slice_sizes", ints(m, 1, 4)}};
  av_op *op = tb_op(t.b, m, "stablehlo.dynamic_slice", 2, ops, 1, &rt, 1, a, 0);
  av_value *r = &op->results[0];
  tb_return(t.b, m, "func.return", 1, &r);
  run_expect(m, expect, 4 * sizeof(int32_t));
}

static void test_dynamic_slice_clamping(void **state) {
  (void)state;
  int32_t hi[4] = {6, 7, 8, 9}, lo[4] = {0, 1, 2, 3}, mid[4] = {2, 3, 4, 5};
  dyn_slice_case(8, hi);
  dyn_slice_case(-3, lo);
  dyn_slice_case(2, mid);
  /* dynamic_update_slice: start 10 is clamped to 3 */
  av_module *m = av_module_new();
  const av_type *rt = ty(m, AV_DT_S32, 1, 5);
  tb t = tb_new(m, 1, &rt);
  int32_t zeros[5] = {0}, upd[2] = {1, 2}, start = 10;
  av_value *ops[3] = {tb_const(&t, rt, zeros, sizeof zeros),
                      tb_const(&t, ty(m, AV_DT_S32, 1, 2), upd, sizeof upd),
                      tb_const(&t, ty(m, AV_DT_S32, 0), &start, sizeof start)};
  av_op *op = tb_op(t.b, m, "stablehlo.dynamic_update_slice", 3, ops, 1, &rt, 0, NULL, 0);
  av_value *r = &op->results[0];
  tb_return(t.b, m, "func.return", 1, &r);
  int32_t expect[5] = {0, 0, 0, 1, 2};
  run_expect(m, expect, sizeof expect);
}

static void test_transpose_broadcast_slice_reverse_concat(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *t23 = ty(m, AV_DT_S32, 2, 2, 3), *t32 = ty(m, AV_DT_S32, 2, 3, 2);
  const av_type *t3 = ty(m, AV_DT_S32, 1, 3), *t22 = ty(m, AV_DT_S32, 2, 2, 2);
  const av_type *t6 = ty(m, AV_DT_S32, 1, 6), *t12 = ty(m, AV_DT_S32, 1, 12);
  tb t = tb_new(m, 1, &t12);
  int32_t x[6] = {1, 2, 3, 4, 5, 6}, v[3] = {7, 8, 9};
  av_value *cx = tb_const(&t, t23, x, sizeof x), *cv = tb_const(&t, t3, v, sizeof v);
  av_named_attr perm = {"permutation", ints(m, 2, 1, 0)};
  av_value *tr = &tb_op(t.b, m, "stablehlo.transpose", 1, &cx, 1, &t32, 1, &perm, 0)->results[0];
  av_named_attr bd = {"broadcast_dimensions", ints(m, 1, 1)};
  av_value *bc = &tb_op(t.b, m, "stablehlo.broadcast_in_dim", 1, &cv, 1, &t23, 1, &bd, 0)->results[0];
  av_named_attr sl[3] = {{"start_indices", ints(m, 2, 0, 1)},
                         {"limit_indices", ints(m, 2, 2, 3)},
                         {"strides", ints(m, 2, 1, 1)}};
  av_value *sv = &tb_op(t.b, m, "stablehlo.slice", 1, &cx, 1, &t22, 3, sl, 0)->results[0];
  av_named_attr rv = {"dimensions", ints(m, 1, 1)};
  av_value *re = &tb_op(t.b, m, "stablehlo.reverse", 1, &sv, 1, &t22, 1, &rv, 0)->results[0];
  av_value *f1 = &tb_op(t.b, m, "stablehlo.reshape", 1, &tr, 1, &t6, 0, NULL, 0)->results[0];
  av_value *f2 = &tb_op(t.b, m, "stablehlo.reshape", 1, &bc, 1, &t6, 0, NULL, 0)->results[0];
  const av_type *t4 = ty(m, AV_DT_S32, 1, 4);
  av_value *f3 = &tb_op(t.b, m, "stablehlo.reshape", 1, &re, 1, &t4, 0, NULL, 0)->results[0];
  av_value *parts[2] = {f1, f2};
  av_named_attr cd = {"dimension", av_attr_int(m, 0, NULL)};
  (void)f3;
  av_value *cat = &tb_op(t.b, m, "stablehlo.concatenate", 2, parts, 1, &t12, 1, &cd, 0)->results[0];
  tb_return(t.b, m, "func.return", 1, &cat);
  int32_t expect[12] = {1, 4, 2, 5, 3, 6, 7, 8, 9, 7, 8, 9};
  run_expect(m, expect, sizeof expect);
}

static void test_slice_reverse(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *t23 = ty(m, AV_DT_S32, 2, 2, 3), *t22 = ty(m, AV_DT_S32, 2, 2, 2);
  tb t = tb_new(m, 1, &t22);
  int32_t x[6] = {1, 2, 3, 4, 5, 6};
  av_value *cx = tb_const(&t, t23, x, sizeof x);
  av_named_attr sl[3] = {{"start_indices", ints(m, 2, 0, 1)},
                         {"limit_indices", ints(m, 2, 2, 3)},
                         {"strides", ints(m, 2, 1, 1)}};
  av_value *sv = &tb_op(t.b, m, "stablehlo.slice", 1, &cx, 1, &t22, 3, sl, 0)->results[0];
  av_named_attr rv = {"dimensions", ints(m, 2, 0, 1)};
  av_value *re = &tb_op(t.b, m, "stablehlo.reverse", 1, &sv, 1, &t22, 1, &rv, 0)->results[0];
  tb_return(t.b, m, "func.return", 1, &re);
  int32_t expect[4] = {6, 5, 3, 2};
  run_expect(m, expect, sizeof expect);
}

/* while (i < 10) { i += 1; s += i } -> s = 55 */
static void test_while_loop(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *si = ty(m, AV_DT_S32, 0), *pr = ty(m, AV_DT_PRED, 0);
  const av_type *two[2] = {si, si};
  tb t = tb_new(m, 1, &si);
  int32_t zero = 0, one = 1, ten = 10;
  av_value *init[2] = {tb_const(&t, si, &zero, 4), tb_const(&t, si, &zero, 4)};
  av_value *c10 = tb_const(&t, si, &ten, 4);
  av_value *c1 = tb_const(&t, si, &one, 4);
  av_op *w = av_op_new(m, "stablehlo.while", 2, 2, two, 0, 2);
  w->operands[0] = init[0];
  w->operands[1] = init[1];
  av_block *cb = av_region_add_block(m, &w->regions[0], 2, two);
  av_named_attr dir = {"comparison_direction", av_attr_string(m, AV_ATTR_ENUM, "LT", 2)};
  av_value *cmp_in[2] = {&cb->args[0], c10}; /* c10 is captured from the outer block */
  av_value *lt = &tb_op(cb, m, "stablehlo.compare", 2, cmp_in, 1, &pr, 1, &dir, 0)->results[0];
  tb_return(cb, m, "stablehlo.return", 1, &lt);
  av_block *bb = av_region_add_block(m, &w->regions[1], 2, two);
  av_value *inc_in[2] = {&bb->args[0], c1};
  av_value *i1 = &tb_op(bb, m, "stablehlo.add", 2, inc_in, 1, &si, 0, NULL, 0)->results[0];
  av_value *acc_in[2] = {&bb->args[1], i1};
  av_value *s1 = &tb_op(bb, m, "stablehlo.add", 2, acc_in, 1, &si, 0, NULL, 0)->results[0];
  av_value *ret[2] = {i1, s1};
  tb_return(bb, m, "stablehlo.return", 2, ret);
  av_block_append(t.b, w);
  av_value *res = &w->results[1];
  tb_return(t.b, m, "func.return", 1, &res);
  int32_t expect = 55;
  run_expect(m, &expect, 4);
}

static void test_check_failure_message(void **state) {
  (void)state;
  av_module *m = av_module_new();
  tb t = tb_new(m, 0, NULL);
  const av_type *t3 = ty(m, AV_DT_F32, 1, 3);
  float a[3] = {1.0f, 2.0f, 3.0f}, b[3] = {1.0f, 2.5f, 3.0f};
  av_value *ops[2] = {tb_const(&t, t3, a, sizeof a), tb_const(&t, t3, b, sizeof b)};
  av_named_attr tgt = {"call_target_name", av_attr_string(m, AV_ATTR_STRING, "check.expect_close", 18)};
  tb_op(t.b, m, "stablehlo.custom_call", 2, ops, 0, NULL, 1, &tgt, 0);
  tb_return(t.b, m, "func.return", 0, NULL);
  av_diag d;
  av_code c = tb_run(m, NULL, 0, &d);
  assert_int_equal(c, AV_FAILED_PRECONDITION);
  assert_non_null(strstr(d.msg, "first at [1]"));
  assert_non_null(strstr(d.msg, "actual 2"));
  assert_non_null(strstr(d.msg, "expected 2.5"));
}

static void test_check_passes_with_nan_in_close(void **state) {
  (void)state;
  av_module *m = av_module_new();
  tb t = tb_new(m, 0, NULL);
  const av_type *t2 = ty(m, AV_DT_F32, 1, 2);
  float a[2] = {NAN, 1.0f}, b[2] = {NAN, 1.0000001f}; /* 1 ULP apart */
  av_value *ops[2] = {tb_const(&t, t2, a, sizeof a), tb_const(&t, t2, b, sizeof b)};
  av_named_attr tgt = {"call_target_name", av_attr_string(m, AV_ATTR_STRING, "check.expect_close", 18)};
  tb_op(t.b, m, "stablehlo.custom_call", 2, ops, 0, NULL, 1, &tgt, 0);
  tb_return(t.b, m, "func.return", 0, NULL);
  av_diag d;
  assert_int_equal(tb_run(m, NULL, 0, &d), AV_OK);
}

static void test_unsupported_ops_listed_together(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *t2 = ty(m, AV_DT_F32, 1, 2);
  tb t = tb_new(m, 1, &t2);
  float a[2] = {1, 2};
  av_value *x = tb_const(&t, t2, a, sizeof a);
  av_op *o1 = tb_op(t.b, m, "foo.bar", 1, &x, 1, &t2, 0, NULL, 0);
  o1->loc = "test.mlir:3:5";
  av_value *y = &o1->results[0];
  av_op *o2 = tb_op(t.b, m, "stablehlo.infeed", 1, &y, 1, &t2, 0, NULL, 0);
  o2->loc = "test.mlir:4:5";
  av_value *r = &o2->results[0];
  tb_return(t.b, m, "func.return", 1, &r);
  av_diag d;
  assert_int_equal(tb_run(m, NULL, 0, &d), AV_UNIMPLEMENTED);
  assert_non_null(strstr(d.msg, "foo.bar"));
  assert_non_null(strstr(d.msg, "test.mlir:3:5"));
  assert_non_null(strstr(d.msg, "stablehlo.infeed"));
  assert_non_null(strstr(d.msg, "test.mlir:4:5"));
}

static void test_clamp_select_iota(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *t4 = ty(m, AV_DT_S32, 1, 4), *s = ty(m, AV_DT_S32, 0);
  const av_type *p = ty(m, AV_DT_PRED, 0);
  tb t = tb_new(m, 1, &t4);
  int32_t lo = 1, hi = 2;
  uint8_t yes = 0;
  av_named_attr dim = {"iota_dimension", av_attr_int(m, 0, NULL)};
  av_value *io = &tb_op(t.b, m, "stablehlo.iota", 0, NULL, 1, &t4, 1, &dim, 0)->results[0];
  av_value *cl_in[3] = {tb_const(&t, s, &lo, 4), io, tb_const(&t, s, &hi, 4)};
  av_value *cl = &tb_op(t.b, m, "stablehlo.clamp", 3, cl_in, 1, &t4, 0, NULL, 0)->results[0];
  av_value *sel_in[3] = {tb_const(&t, p, &yes, 1), io, cl};
  av_value *sel = &tb_op(t.b, m, "stablehlo.select", 3, sel_in, 1, &t4, 0, NULL, 0)->results[0];
  tb_return(t.b, m, "func.return", 1, &sel);
  int32_t expect[4] = {1, 1, 2, 2};
  run_expect(m, expect, sizeof expect);
}

/* main calls @twice(x) = x + x through func.call, with an input */
static void test_call_with_input(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *t2 = ty(m, AV_DT_F32, 1, 2);
  const av_type *ft = av_type_function(m, 1, &t2, 1, &t2);
  av_func *tw = av_func_new(m, "twice", ft);
  av_block *tb_ = av_region_add_block(m, &tw->body, 1, &t2);
  av_value *aa[2] = {&tb_->args[0], &tb_->args[0]};
  av_value *sum = &tb_op(tb_, m, "stablehlo.add", 2, aa, 1, &t2, 0, NULL, 0)->results[0];
  tb_return(tb_, m, "func.return", 1, &sum);
  av_func *mainf = av_func_new(m, "main", ft);
  mainf->is_public = true;
  av_block *mb = av_region_add_block(m, &mainf->body, 1, &t2);
  av_value *arg = &mb->args[0];
  av_named_attr callee = {"callee", av_attr_string(m, AV_ATTR_SYMBOL, "twice", 5)};
  av_value *r = &tb_op(mb, m, "func.call", 1, &arg, 1, &t2, 1, &callee, 0)->results[0];
  tb_return(mb, m, "func.return", 1, &r);
  av_diag d;
  av_diag_init(&d);
  av_program *prog = av_program_from_module(m, NULL, &d);
  if (!prog) fail_msg("%s", d.msg);
  assert_int_equal(av_program_num_inputs(prog), 1);
  assert_int_equal(av_program_num_outputs(prog), 1);
  float in[2] = {1.5f, -2.0f};
  av_tensor x = {av_storage_alloc(sizeof in), AV_DT_F32, 1, {2}};
  memcpy(x.storage->data, in, sizeof in);
  av_tensor out;
  assert_int_equal(av_program_execute(prog, 0, &x, &out, &d), AV_OK);
  float expect[2] = {3.0f, -4.0f};
  assert_memory_equal(out.storage->data, expect, sizeof expect);
  /* the input is untouched */
  assert_memory_equal(x.storage->data, in, sizeof in);
  av_storage_release(out.storage);
  /* a wrong input shape is refused */
  av_tensor bad = {x.storage, AV_DT_F32, 1, {3}};
  assert_int_equal(av_program_execute(prog, 0, &bad, &out, &d), AV_INVALID_ARGUMENT);
  av_storage_release(x.storage);
  av_program_free(prog);
}

/* A = [[3, 1], [4, 2]]: by hand, geqrf gives [[-5, -2.2], [0.5, 0.4]] with taus [1.6, 0],
 * and Q = I - 1.6 v v^T with v = [1, 0.5] is [[-0.6, -0.8], [-0.8, 0.6]]. */
static void test_qr_custom_calls(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *t22 = ty(m, AV_DT_F64, 2, 2, 2), *t2 = ty(m, AV_DT_F64, 1, 2);
  const av_type *res[3] = {t22, t2, t22};
  tb t = tb_new(m, 3, res);
  double a[4] = {3, 1, 4, 2};
  av_value *x = tb_const(&t, t22, a, sizeof a);
  av_named_attr qr = {"call_target_name", av_attr_string(m, AV_ATTR_STRING, "Qr", 2)};
  const av_type *qr_res[2] = {t22, t2};
  av_op *q1 = tb_op(t.b, m, "stablehlo.custom_call", 1, &x, 2, qr_res, 1, &qr, 0);
  av_named_attr hp = {"call_target_name",
                      av_attr_string(m, AV_ATTR_STRING, "ProductOfElementaryHouseholderReflectors", 40)};
  av_value *hin[2] = {&q1->results[0], &q1->results[1]};
  av_op *q2 = tb_op(t.b, m, "stablehlo.custom_call", 2, hin, 1, &t22, 1, &hp, 0);
  av_value *outs[3] = {&q1->results[0], &q1->results[1], &q2->results[0]};
  tb_return(t.b, m, "func.return", 3, outs);
  av_tensor out[3];
  av_diag d;
  if (tb_run(m, out, 3, &d) != AV_OK) fail_msg("%s", d.msg);
  double want_a[4] = {-5, -2.2, 0.5, 0.4}, want_tau[2] = {1.6, 0}, want_q[4] = {-0.6, -0.8, -0.8, 0.6};
  const double *ga = out[0].storage->data, *gt = out[1].storage->data, *gq = out[2].storage->data;
  for (int i = 0; i < 4; i++) {
    assert_true(fabs(ga[i] - want_a[i]) < 1e-12);
    assert_true(fabs(gq[i] - want_q[i]) < 1e-12);
  }
  for (int i = 0; i < 2; i++) assert_true(fabs(gt[i] - want_tau[i]) < 1e-12);
  for (int i = 0; i < 3; i++) av_storage_release(out[i].storage);
}

/* x = [[1, 2], [3, 4]] with features along dimension 1 (hand-computed, epsilon 0):
 *   inference (scale [1, 2], offset [0, 1], mean [2, 3], var [1, 4]) -> [[-1, 0], [1, 2]]
 *   training (scale [1, 1], offset [0, 0]) -> [[-1, -1], [1, 1]], mean [2, 3], var [1, 1]
 *   grad (scale [1, 1], mean [2, 3], var [1, 1], dy [[1, 0], [0, 0]])
 *        -> dx 0, dscale [-1, 0], doffset [1, 0] */
static void test_batch_norm(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *t22 = ty(m, AV_DT_F32, 2, 2, 2), *t2 = ty(m, AV_DT_F32, 1, 2);
  const av_type *res[7] = {t22, t22, t2, t2, t22, t2, t2};
  tb t = tb_new(m, 7, res);
  float x[4] = {1, 2, 3, 4}, s12[2] = {1, 2}, o01[2] = {0, 1}, mu[2] = {2, 3}, v14[2] = {1, 4};
  float ones[2] = {1, 1}, zeros[2] = {0, 0}, dy[4] = {1, 0, 0, 0};
  av_value *cx = tb_const(&t, t22, x, sizeof x);
  av_named_attr a[2] = {{"epsilon", av_attr_float(m, 0.0, NULL)},
                        {"feature_index", av_attr_int(m, 1, NULL)}};
  av_value *inf_in[5] = {cx, tb_const(&t, t2, s12, 8), tb_const(&t, t2, o01, 8),
                         tb_const(&t, t2, mu, 8), tb_const(&t, t2, v14, 8)};
  av_op *inf = tb_op(t.b, m, "stablehlo.batch_norm_inference", 5, inf_in, 1, &t22, 2, a, 0);
  av_value *tr_in[3] = {cx, tb_const(&t, t2, ones, 8), tb_const(&t, t2, zeros, 8)};
  const av_type *tr_res[3] = {t22, t2, t2};
  av_op *tr = tb_op(t.b, m, "stablehlo.batch_norm_training", 3, tr_in, 3, tr_res, 2, a, 0);
  av_value *gr_in[5] = {cx, tb_const(&t, t2, ones, 8), tb_const(&t, t2, mu, 8),
                        tb_const(&t, t2, ones, 8), tb_const(&t, t22, dy, sizeof dy)};
  av_op *gr = tb_op(t.b, m, "stablehlo.batch_norm_grad", 5, gr_in, 3, tr_res, 2, a, 0);
  av_value *outs[7] = {&inf->results[0], &tr->results[0], &tr->results[1], &tr->results[2],
                       &gr->results[0], &gr->results[1], &gr->results[2]};
  tb_return(t.b, m, "func.return", 7, outs);
  av_tensor out[7];
  av_diag d;
  if (tb_run(m, out, 7, &d) != AV_OK) fail_msg("%s", d.msg);
  float w_inf[4] = {-1, 0, 1, 2}, w_tr[4] = {-1, -1, 1, 1}, w_mean[2] = {2, 3}, w_var[2] = {1, 1};
  float w_dx[4] = {0, 0, 0, 0}, w_ds[2] = {-1, 0}, w_do[2] = {1, 0};
  const float *want[7] = {w_inf, w_tr, w_mean, w_var, w_dx, w_ds, w_do};
  int n[7] = {4, 4, 2, 2, 4, 2, 2};
  for (int i = 0; i < 7; i++) {
    const float *g = out[i].storage->data;
    for (int k = 0; k < n[i]; k++)
      if (fabsf(g[k] - want[i][k]) > 1e-6f) fail_msg("output %d[%d]: %g, want %g", i, k, g[k], want[i][k]);
    av_storage_release(out[i].storage);
  }
}

/* Malformed IR: @helper uses a value defined in @main; refused at compile time. */
static void test_value_from_another_function_refused(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *t2 = ty(m, AV_DT_F32, 1, 2);
  tb t = tb_new(m, 1, &t2);
  float a[2] = {1, 2};
  av_value *x = tb_const(&t, t2, a, sizeof a);
  const av_type *ft = av_type_function(m, 0, NULL, 1, &t2);
  av_func *h = av_func_new(m, "helper", ft);
  av_block *hb = av_region_add_block(m, &h->body, 0, NULL);
  av_value *xx[2] = {x, x};
  av_value *bad = &tb_op(hb, m, "stablehlo.add", 2, xx, 1, &t2, 0, NULL, 0)->results[0];
  tb_return(hb, m, "func.return", 1, &bad);
  av_named_attr callee = {"callee", av_attr_string(m, AV_ATTR_SYMBOL, "helper", 6)};
  av_value *r = &tb_op(t.b, m, "func.call", 0, NULL, 1, &t2, 1, &callee, 0)->results[0];
  tb_return(t.b, m, "func.return", 1, &r);
  av_diag d;
  assert_int_equal(tb_run(m, NULL, 0, &d), AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "not defined where it is used"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pad_negative_and_interior),
      cmocka_unit_test(test_dynamic_slice_clamping),
      cmocka_unit_test(test_transpose_broadcast_slice_reverse_concat),
      cmocka_unit_test(test_slice_reverse),
      cmocka_unit_test(test_while_loop),
      cmocka_unit_test(test_check_failure_message),
      cmocka_unit_test(test_check_passes_with_nan_in_close),
      cmocka_unit_test(test_unsupported_ops_listed_together),
      cmocka_unit_test(test_clamp_select_iota),
      cmocka_unit_test(test_call_with_input),
      cmocka_unit_test(test_value_from_another_function_refused),
      cmocka_unit_test(test_qr_custom_calls),
      cmocka_unit_test(test_batch_norm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
