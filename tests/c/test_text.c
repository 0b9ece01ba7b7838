/* MLIR text reader + printer: the whole conformance corpus parses and round-trips
 * (print -> parse -> print gives identical text), and hand-checked attribute values. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/mlir_text.h"
#include "ir/attr_util.h"
#include "ir/printer.h"
#include "ir/verify.h"
#include "util/file.h"

static av_module *load(const char *text) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_mlir_text(text, strlen(text), &d);
  if (!m) fprintf(stderr, "parse error: %s\n", d.msg);
  return m;
}

/* Parses one module, prints it, parses the print and prints again: both prints must match.
 * Returns 0 ok, 1 parse failure, 2 round-trip failure. */
static int check_one(const char *name, const char *text, size_t len) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_mlir_text(text, len, &d);
  if (!m) {
    fprintf(stderr, "FAIL parse %s: %s\n", name, d.msg);
    return 1;
  }
  av_diag_init(&d);
  if (av_module_verify(m, &d) != AV_OK) {
    fprintf(stderr, "FAIL verify %s: %s\n", name, d.msg);
    av_module_free(m);
    return 3;
  }
  char *t1 = av_module_print(m);
  av_module_free(m);
  av_diag_init(&d);
  av_module *m2 = t1 ? av_load_mlir_text(t1, strlen(t1), &d) : NULL;
  int rc = 0;
  if (!m2) {
    fprintf(stderr, "FAIL reparse %s: %s\n", name, d.msg);
    rc = 2;
  } else {
    char *t2 = av_module_print(m2);
    if (!t2 || strcmp(t1, t2) != 0) {
      fprintf(stderr, "FAIL round trip %s: printed text differs\n", name);
      rc = 2;
    }
    free(t2);
    av_module_free(m2);
  }
  free(t1);
  return rc;
}

typedef struct counts {
  int files, modules, parse_fail, rt_fail, verify_fail;
} counts;

/* Splits on lines starting with `// -----` (the caller's job, see mlir_text.h). */
static void check_file(const char *path, counts *c) {
  size_t n;
  char *text = av_read_file(path, &n);
  if (!text) {
    c->parse_fail++;
    return;
  }
  c->files++;
  const char *s = text, *end = text + n;
  while (s < end) {
    const char *sep = strstr(s, "\n// -----");
    size_t len = sep ? (size_t)(sep - s) + 1 : (size_t)(end - s);
    c->modules++;
    int rc = check_one(path, s, len);
    if (rc == 1) c->parse_fail++;
    if (rc == 2) c->rt_fail++;
    if (rc == 3) c->verify_fail++;
    if (!sep) break;
    const char *nl = strchr(sep + 1, '\n');
    s = nl ? nl + 1 : end;
  }
  free(text);
}

/* Files that are invalid on purpose (or use other dialects' custom forms). */
static const char *const kExpectedInvalid[] = {
    "invalid_vhlo_future.mlir",          /* VHLO ops from a future version */
    "legalize_stablehlo_to_vhlo_invalid.mlir", /* typed string attribute, rejected by MLIR too */
    "stablehlo_legalize_to_vhlo_mixed.mlir",   /* arith dialect custom forms */
    NULL};

static bool expected_invalid(const char *name) {
  for (int i = 0; kExpectedInvalid[i]; i++)
    if (strcmp(name, kExpectedInvalid[i]) == 0) return true;
  return false;
}

static int check_dir(const char *dir, counts *c) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".mlir") != 0 || expected_invalid(e->d_name)) continue;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    check_file(path, c);
  }
  closedir(d);
  return 0;
}

static void corpus(const char *sub, int min_files) {
  const char *shared = getenv("ANVIL_SHARED_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", shared ? shared : "/nonexistent", sub);
  counts c = {0};
  if (check_dir(dir, &c) < 0) {
    skip();
    return;
  }
  printf("%s: %d files, %d modules, %d parse failures, %d verify failures, %d round-trip failures\n",
         sub, c.files, c.modules, c.parse_fail, c.verify_fail, c.rt_fail);
  assert_true(c.files >= min_files);
  assert_int_equal(c.parse_fail, 0);
  assert_int_equal(c.rt_fail, 0);
  assert_int_equal(c.verify_fail, 0);
}

static void test_corpus_testdata(void **s) {
  (void)s;
  corpus("conformance/stablehlo/testdata", 2325);
}
static void test_corpus_interpret(void **s) {
  (void)s;
  corpus("conformance/stablehlo/tests/interpret", 100);
}
static void test_corpus_jax_export(void **s) {
  (void)s;
  corpus("conformance/jax-export", 142);
}
static void test_corpus_vhlo_sources(void **s) {
  (void)s;
  corpus("conformance/stablehlo/tests/vhlo", 40);
}
static void test_corpus_dynamic_quantized(void **s) {
  (void)s;
  corpus("conformance/stablehlo/testdata-dynamic", 388);
  corpus("conformance/stablehlo/testdata-quantized", 126);
}

/* ------------------------------------------------------------ spot checks */

static const av_op *nth_op(const av_func *f, int n) {
  const av_op *op = f->body.blocks[0].first;
  while (op && n-- > 0) op = op->next;
  return op;
}

static void expect_ints(const av_attr *a, const int64_t *want, size_t n) {
  assert_non_null(a);
  int64_t got[16];
  size_t cnt;
  assert_true(av_attr_as_i64s(a, got, 16, &cnt));
  assert_int_equal(cnt, n);
  for (size_t i = 0; i < n; i++) assert_int_equal(got[i], want[i]);
}

static void expect_enum(const av_attr *a, const char *v) {
  assert_non_null(a);
  assert_int_equal(a->kind, AV_ATTR_ENUM);
  assert_string_equal(a->u.str.s, v);
}

static void test_pretty_ops(void **s) {
  (void)s;
  const char *text =
      "module @m attributes {mhlo.num_partitions = 2 : i32} {\n"
      "  func.func public @main(%a: tensor<4x3xf32>, %b: tensor<3x6xf32>, %i: tensor<i64>) -> tensor<4x6xf32> {\n"
      "    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], precision = [DEFAULT, HIGHEST] : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>\n"
      "    %c = stablehlo.constant dense<1> : tensor<i64>\n"
      "    %1 = stablehlo.compare  LT, %i, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
      "    %2 = stablehlo.slice %a [1:3, 0:3:2] : (tensor<4x3xf32>) -> tensor<2x2xf32>\n"
      "    %cst = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "    %3 = stablehlo.reduce(%a init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x3xf32>, tensor<f32>) -> tensor<f32>\n"
      "    %4:2 = stablehlo.while(%it = %i, %acc = %cst) : tensor<i64>, tensor<f32>\n"
      "     cond {\n"
      "      %t = stablehlo.compare LT, %it, %c : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
      "      stablehlo.return %t : tensor<i1>\n"
      "    } do {\n"
      "      %n = stablehlo.add %it, %c : tensor<i64>\n"
      "      stablehlo.return %n, %acc : tensor<i64>, tensor<f32>\n"
      "    }\n"
      "    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x6xf32>\n"
      "    %6 = stablehlo.select %1, %cst, %3 : tensor<i1>, tensor<f32>\n"
      "    %7 = stablehlo.iota dim = 1 : tensor<4x6xi32>\n"
      "    stablehlo.custom_call @check.expect_eq(%0, %5) {has_side_effect = true} : (tensor<4x6xf32>, tensor<4x6xf32>) -> ()\n"
      "    return %0 : tensor<4x6xf32> loc(#loc1)\n"
      "  }\n"
      "}\n"
      "#loc1 = loc(\"x.py\":3:4)\n";
  av_module *m = load(text);
  assert_non_null(m);
  assert_string_equal(m->name, "m");
  const av_attr *np = av_dict_get(m->attrs, "mhlo.num_partitions");
  assert_non_null(np);
  assert_int_equal(np->kind, AV_ATTR_INT);
  assert_int_equal(np->u.i, 2);
  av_func *f = av_module_entry(m);
  assert_non_null(f);
  assert_int_equal(f->type->ninputs, 3);

  const av_op *dot = nth_op(f, 0);
  assert_int_equal(dot->code, AV_OP_DOT_GENERAL);
  expect_ints(av_op_attr(dot, "lhs_contracting_dimensions"), (int64_t[]){1}, 1);
  expect_ints(av_op_attr(dot, "rhs_contracting_dimensions"), (int64_t[]){0}, 1);
  expect_ints(av_op_attr(dot, "lhs_batching_dimensions"), NULL, 0);
  const av_attr *prec = av_op_attr(dot, "precision_config");
  assert_non_null(prec);
  assert_int_equal(prec->kind, AV_ATTR_ARRAY);
  assert_int_equal(prec->u.array.n, 2);
  expect_enum(prec->u.array.items[1], "HIGHEST");

  const av_op *cmp = nth_op(f, 2);
  assert_int_equal(cmp->code, AV_OP_COMPARE);
  expect_enum(av_op_attr(cmp, "comparison_direction"), "LT");
  expect_enum(av_op_attr(cmp, "compare_type"), "SIGNED");
  assert_int_equal(cmp->results[0].type->dtype, AV_DT_PRED);

  const av_op *sl = nth_op(f, 3);
  expect_ints(av_op_attr(sl, "start_indices"), (int64_t[]){1, 0}, 2);
  expect_ints(av_op_attr(sl, "limit_indices"), (int64_t[]){3, 3}, 2);
  expect_ints(av_op_attr(sl, "strides"), (int64_t[]){1, 2}, 2);

  const av_op *red = nth_op(f, 5);
  assert_int_equal(red->code, AV_OP_REDUCE);
  assert_int_equal(red->noperands, 2);
  assert_int_equal(red->nregions, 1);
  assert_int_equal(red->regions[0].blocks[0].nargs, 2);
  assert_int_equal(red->regions[0].blocks[0].first->code, AV_OP_ADD);
  assert_int_equal(red->regions[0].blocks[0].last->code, AV_OP_RETURN);
  expect_ints(av_op_attr(red, "dimensions"), (int64_t[]){0, 1}, 2);

  const av_op *wh = nth_op(f, 6);
  assert_int_equal(wh->code, AV_OP_WHILE);
  assert_int_equal(wh->nresults, 2);
  assert_int_equal(wh->nregions, 2);
  assert_int_equal(wh->regions[1].blocks[0].nargs, 2);
  assert_int_equal(wh->regions[1].blocks[0].nops, 2);

  const av_op *sel = nth_op(f, 8);
  assert_int_equal(sel->code, AV_OP_SELECT);
  assert_int_equal(sel->results[0].type->dtype, AV_DT_F32);
  const av_op *iota = nth_op(f, 9);
  const av_attr *dim = av_op_attr(iota, "iota_dimension");
  assert_non_null(dim);
  assert_int_equal(dim->u.i, 1);
  const av_op *cc = nth_op(f, 10);
  const av_attr *tgt = av_op_attr(cc, "call_target_name");
  assert_non_null(tgt);
  assert_int_equal(tgt->kind, AV_ATTR_STRING);
  assert_string_equal(tgt->u.str.s, "check.expect_eq");
  const av_op *ret = nth_op(f, 11);
  assert_int_equal(ret->code, AV_OP_FUNC_RETURN);
  assert_string_equal(ret->loc, "\"x.py\":3:4");
  av_module_free(m);
}

static const void *const_data(av_module *m, int index) {
  const av_op *op = nth_op(m->funcs[0], index);
  assert_int_equal(op->code, AV_OP_CONSTANT);
  const av_attr *v = av_op_attr(op, "value");
  assert_non_null(v);
  assert_int_equal(v->kind, AV_ATTR_DENSE);
  return v->u.dense.data;
}

static void test_dense_values(void **s) {
  (void)s;
  const char *text =
      "func.func @f() {\n"
      "  %0 = stablehlo.constant dense<[4.031250e+00, -2.609380e+00]> : tensor<2xbf16>\n"
      "  %1 = stablehlo.constant dense<0.1> : tensor<f32>\n"
      "  %2 = stablehlo.constant dense<[1.0, 65504.0, -0.0]> : tensor<3xf16>\n"
      "  %3 = stablehlo.constant dense<[448.0, 1.5]> : tensor<2xf8E4M3FN>\n"
      "  %4 = stablehlo.constant dense<[1.5, -57344.0]> : tensor<2xf8E5M2>\n"
      "  %5 = stablehlo.constant dense<[-3, 7, -8]> : tensor<3xi4>\n"
      "  %6 = stablehlo.constant dense<[(1.0, 2.0), (-0.5, 0x7FC00000)]> : tensor<2xcomplex<f32>>\n"
      "  %7 = stablehlo.constant dense<\"0x0000803F\"> : tensor<4xf32>\n"
      "  %8 = stablehlo.constant dense<[[true, false], [false, true]]> : tensor<2x2xi1>\n"
      "  %9 = stablehlo.constant dense<18446744073709551615> : tensor<ui64>\n"
      "  %10 = stablehlo.constant dense<0x7FF0000000000000> : tensor<f64>\n"
      "  %11 = stablehlo.constant dense<\"0x0F01\"> : tensor<2xi4>\n"
      /* ties of bf16 that the decimal misses by less than half a double ulp */
      "  %12 = stablehlo.constant dense<[1.01171875, 1.01171874999999999, 1.00390625000000001, -1.01171874999999999]> : tensor<4xbf16>\n"
      "  func.return\n"
      "}\n";
  av_module *m = load(text);
  assert_non_null(m);
  const uint16_t *bf = const_data(m, 0);
  assert_int_equal(bf[0], 0x4081); /* 4.03125 exactly */
  assert_int_equal(bf[1], 0xC027); /* -2.609375 nearest */
  const uint32_t *f32 = const_data(m, 1);
  assert_int_equal(f32[0], 0x3DCCCCCDu);
  const uint16_t *h = const_data(m, 2);
  assert_int_equal(h[0], 0x3C00);
  assert_int_equal(h[1], 0x7BFF);
  assert_int_equal(h[2], 0x8000);
  const uint8_t *e4 = const_data(m, 3);
  assert_int_equal(e4[0], 0x7E);
  assert_int_equal(e4[1], 0x3C);
  const uint8_t *e5 = const_data(m, 4);
  assert_int_equal(e5[0], 0x3E);
  assert_int_equal(e5[1], 0xFB);
  const int8_t *i4 = const_data(m, 5);
  assert_int_equal(i4[0], -3);
  assert_int_equal(i4[1], 7);
  assert_int_equal(i4[2], -8);
  const float *c = const_data(m, 6);
  assert_true(c[0] == 1.0f && c[1] == 2.0f && c[2] == -0.5f && isnan(c[3]));
  const av_attr *splat = av_op_attr(nth_op(m->funcs[0], 7), "value");
  assert_true(splat->u.dense.splat);
  assert_int_equal(splat->u.dense.size, 4);
  assert_true(*(const float *)splat->u.dense.data == 1.0f);
  const uint8_t *pr = const_data(m, 8);
  assert_true(pr[0] == 1 && pr[1] == 0 && pr[2] == 0 && pr[3] == 1);
  const uint64_t *u = const_data(m, 9);
  assert_true(u[0] == UINT64_MAX);
  const double *inf = const_data(m, 10);
  assert_true(isinf(inf[0]) && inf[0] > 0);
  const int8_t *hx = const_data(m, 11);
  assert_int_equal(hx[0], -1); /* 0xF sign-extended */
  assert_int_equal(hx[1], 1);
  const uint16_t *ties = const_data(m, 12);
  assert_int_equal(ties[0], 0x3F82); /* exact tie: to even */
  assert_int_equal(ties[1], 0x3F81); /* just below the tie */
  assert_int_equal(ties[2], 0x3F81); /* just above the tie 1.00390625 */
  assert_int_equal(ties[3], 0xBF81);
  av_module_free(m);
}

static void test_structured_attrs(void **s) {
  (void)s;
  const char *text =
      "func.func @f(%x: tensor<10x10x10xf32>, %i: tensor<1xi64>, %l: tensor<1x16x16x2xf32>, %k: tensor<2x3x2x2xf32>) {\n"
      "  %0 = \"stablehlo.gather\"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [0, 1], collapsed_slice_dims = [2], start_index_map = [2]>, slice_sizes = array<i64: 10, 10, 1>}> : (tensor<10x10x10xf32>, tensor<1xi64>) -> tensor<10x10xf32>\n"
      "  %1 = stablehlo.convolution(%l, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 2], pad = [[1, 1], [2, 3]], lhs_dilate = [2, 2], reverse = [false, true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x16x16x2xf32>, tensor<2x3x2x2xf32>) -> tensor<1x32x16x2xf32>\n"
      "  %2 = \"stablehlo.all_reduce\"(%i) <{channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({\n"
      "  ^bb0(%a: tensor<i64>, %b: tensor<i64>):\n"
      "    %s = stablehlo.add %a, %b : tensor<i64>\n"
      "    stablehlo.return %s : tensor<i64>\n"
      "  }) : (tensor<1xi64>) -> tensor<1xi64>\n"
      "  func.return\n"
      "}\n";
  av_module *m = load(text);
  assert_non_null(m);
  const av_op *g = nth_op(m->funcs[0], 0);
  expect_ints(av_op_attr(g, "offset_dims"), (int64_t[]){0, 1}, 2);
  expect_ints(av_op_attr(g, "collapsed_slice_dims"), (int64_t[]){2}, 1);
  expect_ints(av_op_attr(g, "start_index_map"), (int64_t[]){2}, 1);
  expect_ints(av_op_attr(g, "operand_batching_dims"), NULL, 0);
  expect_ints(av_op_attr(g, "slice_sizes"), (int64_t[]){10, 10, 1}, 3);
  const av_attr *ivd = av_op_attr(g, "index_vector_dim");
  assert_non_null(ivd);
  assert_int_equal(ivd->u.i, 0);
  assert_null(av_op_attr(g, "dimension_numbers"));

  const av_op *cv = nth_op(m->funcs[0], 1);
  assert_int_equal(av_op_attr(cv, "input_feature_dimension")->u.i, 3);
  expect_ints(av_op_attr(cv, "input_spatial_dimensions"), (int64_t[]){1, 2}, 2);
  assert_int_equal(av_op_attr(cv, "kernel_input_feature_dimension")->u.i, 2);
  assert_int_equal(av_op_attr(cv, "kernel_output_feature_dimension")->u.i, 3);
  expect_ints(av_op_attr(cv, "kernel_spatial_dimensions"), (int64_t[]){0, 1}, 2);
  expect_ints(av_op_attr(cv, "window_strides"), (int64_t[]){1, 2}, 2);
  expect_ints(av_op_attr(cv, "padding"), (int64_t[]){1, 1, 2, 3}, 4);
  expect_ints(av_op_attr(cv, "lhs_dilation"), (int64_t[]){2, 2}, 2);
  expect_ints(av_op_attr(cv, "window_reversal"), (int64_t[]){0, 1}, 2);
  assert_int_equal(av_op_attr(cv, "padding")->type->dims[0], 2);

  const av_op *ar = nth_op(m->funcs[0], 2);
  assert_int_equal(av_op_attr(ar, "channel_id")->u.i, 5);
  assert_int_equal(av_op_attr(ar, "channel_type")->u.i, 1);
  expect_ints(av_op_attr(ar, "replica_groups"), (int64_t[]){0, 1}, 2);
  av_module_free(m);
}

/* Forms aligned with what the bytecode reader produces for the same program. */
static void test_bytecode_alignment(void **s) {
  (void)s;
  const char *text =
      "func.func @f(%a: tensor<?xf32, #stablehlo.type_extensions<bounds = [16]>>, %s: tensor<1xindex>) {\n"
      "  %0 = \"stablehlo.all_reduce\"(%a) <{replica_groups = dense<0> : tensor<1x1xi64>, use_global_device_ids}> ({\n"
      "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
      "    \"stablehlo.return\"(%x) : (tensor<f32>) -> ()\n"
      "  }) : (tensor<?xf32, #stablehlo.type_extensions<bounds = [16]>>) -> tensor<?xf32>\n"
      "  %1 = \"stablehlo.exponential\"(%a) {result_accuracy = #stablehlo.result_accuracy<atol = 1.0e-5, rtol = 0.0, ulps = 1, mode = #stablehlo.result_accuracy_mode<TOLERANCE>>} : (tensor<?xf32, #stablehlo.type_extensions<bounds = [16]>>) -> tensor<?xf32>\n"
      "  %2 = stablehlo.custom_call @x(%s) {backend_config = {r = 0.95 : f32}} : (tensor<1xindex>) -> tensor<1xf32>\n"
      "  func.return\n"
      "}\n";
  av_module *m = load(text);
  assert_non_null(m);
  const av_func *f = m->funcs[0];
  const av_type *a = f->type->elems[0];
  assert_non_null(a->encoding);
  expect_ints(a->encoding, (int64_t[]){16}, 1);
  assert_int_equal(f->type->elems[1]->dtype, AV_DT_S64); /* index */
  const av_attr *ug = av_op_attr(nth_op(f, 0), "use_global_device_ids");
  assert_non_null(ug);
  assert_int_equal(ug->kind, AV_ATTR_BOOL);
  assert_true(ug->u.b);
  const av_attr *ra = av_op_attr(nth_op(f, 1), "result_accuracy");
  assert_non_null(ra);
  assert_int_equal(ra->kind, AV_ATTR_DICT);
  assert_true(av_dict_get(ra, "atol")->u.f == 1.0e-5);
  assert_int_equal(av_dict_get(ra, "ulps")->u.i, 1);
  expect_enum(av_dict_get(ra, "mode"), "TOLERANCE");
  const av_attr *bc = av_op_attr(nth_op(f, 2), "backend_config");
  assert_true(av_dict_get(bc, "r")->u.f == (double)0.95f); /* an f32 attribute holds an f32 value */
  av_module_free(m);
}

static void expect_error(const char *text, const char *where, const char *what) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_mlir_text(text, strlen(text), &d);
  if (m) fprintf(stderr, "unexpectedly parsed: %s\n", text);
  assert_null(m);
  assert_int_equal(d.code, AV_INVALID_ARGUMENT);
  if (!strstr(d.msg, where) || !strstr(d.msg, what)) fprintf(stderr, "got: %s\n", d.msg);
  assert_non_null(strstr(d.msg, where));
  assert_non_null(strstr(d.msg, what));
}

/* Text that is not a module or function is refused with the line:column of the problem,
 * instead of loading as a module without functions. */
static void test_not_a_program(void **s) {
  (void)s;
  expect_error("hello world", "1:1:", "not a program");
  expect_error("\n\n   hello world\n", "3:4:", "not a program");
  expect_error("// a comment\nhello world", "2:1:", "not a program");
  expect_error("#alias = 1 : i32\n", "1:1:", "not a program");
  expect_error("#alias = 1 : i32\nthe end\n", "2:1:", "not a program");
  expect_error("sdy.mesh @mesh = <[\"a\"=2]>\n", "1:1:", "not a program");
  /* inside a function, an undotted word is not an op either */
  expect_error("func.func @f() {\n  hello world\n}\n", "2:3:", "expected an operation");
  expect_error("func.func @f() {\n  \"hello\"() : () -> ()\n}\n", "2:3:", "dialect.name");
  expect_error("module {\n  func.func @f() {\n    %0 = abs.\n  }\n}\n", "3:10:", "expected an operation");
  expect_error("module {\n  hello\n}\n", "2:3:", "not a program");
  expect_error("{}", "1:1:", "not a program");
  expect_error("42\n", "1:1:", "not a program");
  expect_error("module @a {\n}\nmodule @b {\n}\n", "3:1:", "a second module");
  expect_error("module {\n} trailing words\n", "2:3:", "not a program");
  /* the func shorthands and dotted ops still read */
  av_module *m = load("func.func @g() {\n  return\n}\n"
                      "func.func @f() {\n  call @g() : () -> ()\n  \"my.op\"() : () -> ()\n  return\n}\n");
  assert_non_null(m);
  assert_int_equal(m->nfuncs, 2);
  av_module_free(m);
}

static void test_errors(void **s) {
  (void)s;
  /* `applies` names an op like the generic form does (found by fuzz_text: the printer wrote
   * "stablehlonadd" back in generic form, which the reader refused) */
  expect_error("func.func @f(%a: tensor<2xf32>, %z: tensor<f32>) -> tensor<f32> {\n"
               "  %r = stablehlo.reduce(%a init: %z) applies stablehlonadd across dimensions = [0]"
               " : (tensor<2xf32>, tensor<f32>) -> tensor<f32>\n  return %r : tensor<f32>\n}\n",
               "2:", "after 'applies'");
  expect_error("func.func @f() {\n  %0 = stablehlo.abs %x : tensor<f32>\n}\n", "2:22", "undefined value %x");
  expect_error("func.func @f() {\n  %0 = stablehlo.constant dense<[1, 2]> : tensor<3xi32>\n", "2:", "2 elements");
  expect_error("func.func @f() {\n  %0 = stablehlo.constant dense<300> : tensor<i8>\n}", "2:", "out of range");
  expect_error("func.func @f() {\n", "2:1", "missing '}'");
  expect_error("module {\n  func.func @f() {\n    \"x.y\"() : () -> ()\n  }\n", "5:1", "module");
  expect_error("func.func @f() { %0 = stablehlo.constant dense<1> : tensor<i32>\n %0 = stablehlo.constant dense<1> : tensor<i32>\n}",
               "2:", "redefinition of %0");
  expect_error("\"unterminated", "1:1", "invalid token");
  expect_error("func.func @f() {\n  %0:2 = stablehlo.abs %0 : tensor<f32>\n}", "2:", "undefined");
  expect_error("func.func @f(%a: tensor<f32>) {\n  %0:2 = stablehlo.abs %a : (tensor<f32>) -> tensor<f32>\n}", "2:3",
               "1 results but 2 names");
  expect_error("func.func @f(%a: tensor<4x?xf32>) {\n  %0 = stablehlo.constant dense<1.0> : tensor<?xf32>\n}", "2:", "static shape");
  expect_error("func.func @f(%a: tensor<f32>) {\n  %0 = stablehlo.abs %a#3 : tensor<f32>\n}", "2:", "out of range");
  expect_error("#a = 1.5 : i32\n", "1:", "float literal with a non-float type");
  expect_error("func.func @f(%a: tensor<f32>) {\n  %0:3 = stablehlo.abs %a : tensor<f32>\n}", "2:10",
               "3 results but 1 types");
  expect_error("func.func @f() {\n  %0 = stablehlo.iota dim = 0\n}", "2:8", "cannot tell the result types");
  /* a NUL inside text kept verbatim (here a dialect type) is rejected */
  const char nul_type[] = "func.func @f(%a: !my.t<a\0b>) {\n}\n";
  av_diag d;
  av_diag_init(&d);
  assert_null(av_load_mlir_text(nul_type, sizeof nul_type - 1, &d));
  assert_non_null(strstr(d.msg, "1:"));
  /* ... also inside a string of such text (a fuzz finding) */
  const char nul_str[] = "func.func @f(%a: tensor<f32> {x = #sdy.sharding<@m, [{\"a\0b\"}]>}) {\n}\n";
  av_diag_init(&d);
  assert_null(av_load_mlir_text(nul_str, sizeof nul_str - 1, &d));
  const char nul_loc[] = "func.func @f() {\n  func.return loc(\"a\0b\":1:2)\n}\n";
  av_diag_init(&d);
  assert_null(av_load_mlir_text(nul_loc, sizeof nul_loc - 1, &d));
  assert_non_null(strstr(d.msg, "NUL character"));
}

static void test_empty_and_odd_inputs(void **s) {
  (void)s;
  av_diag d;
  av_diag_init(&d);
  /* as in MLIR, no tokens at all is an empty module (the interpret suite has such cases) */
  av_module *m = av_load_mlir_text("", 0, &d);
  assert_non_null(m);
  assert_int_equal(m->nfuncs, 0);
  av_module_free(m);
  av_diag_init(&d);
  m = av_load_mlir_text(NULL, 0, &d);
  assert_non_null(m);
  av_module_free(m);
  m = load("// just a comment\n\n");
  assert_non_null(m);
  assert_int_equal(m->nfuncs, 0);
  av_module_free(m);
  m = load("module {}");
  assert_non_null(m);
  assert_int_equal(m->nfuncs, 0);
  av_module_free(m);
  /* an alias typed by an unknown iN as the very last token: scans of token text stay inside
   * the input, which has no NUL after it (a fuzz finding; ASan checks the exact-size copy) */
  {
    static const char tail[] = "\t#a_=0:i6";
    char *buf = malloc(sizeof tail - 1);
    assert_non_null(buf);
    memcpy(buf, tail, sizeof tail - 1);
    av_diag_init(&d);
    m = av_load_mlir_text(buf, sizeof tail - 1, &d);
    assert_null(m); /* an alias alone is not a program */
    free(buf);
  }
  /* deep nesting is an error, not a crash */
  size_t n = 100000;
  char *deep = malloc(n + 64);
  strcpy(deep, "#a = ");
  size_t k = strlen(deep);
  while (k < n) deep[k++] = '[';
  deep[k] = '\0';
  av_diag_init(&d);
  m = av_load_mlir_text(deep, k, &d);
  assert_null(m);
  assert_non_null(strstr(d.msg, "too deep"));
  free(deep);
  /* a NUL inside the text is an invalid token */
  const char bad[] = "func.func @f() {\0}";
  av_diag_init(&d);
  m = av_load_mlir_text(bad, sizeof bad - 1, &d);
  assert_null(m);
  /* nor may a quoted op name hold one, escaped: the IR keeps names as C strings, so the name
   * printed back would be cut at the NUL (a fuzz finding: "stab\03\00...lehlo.x" read, printed
   * as "stab\03", which does not read back) */
  static const char *const names[] = {"\"stab\\03\\00lehlo.add\"", "\"a.\\0Ab\"", "\"x.y z\"",
                                      "\"x.y\\22\""};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char text[256];
    snprintf(text, sizeof text, "func.func @f() {\n  %s() : () -> ()\n  func.return\n}\n", names[i]);
    av_diag_init(&d);
    m = av_load_mlir_text(text, strlen(text), &d);
    if (m) fail_msg("op name %s was accepted", names[i]);
    assert_non_null(strstr(d.msg, "operation name"));
  }
}

/* Location alias chains longer than the resolved-location limit stay as references and
 * still round-trip (a fuzz finding). */
static void test_long_location_chain(void **s) {
  (void)s;
  char text[4096];
  char a[701], b[701];
  memset(a, 'a', 700);
  a[700] = '\0';
  memset(b, 'b', 700);
  b[700] = '\0';
  snprintf(text, sizeof text,
           "#l0 = loc(\"%s\"(\"f.py\":1:2))\n#l1 = loc(\"%s\"(#l0))\n"
           "func.func @f() {\n  func.return loc(#l1)\n}\n",
           a, b);
  av_module *m = load(text);
  assert_non_null(m);
  assert_string_equal(m->funcs[0]->body.blocks[0].first->loc, "#l1");
  av_module_free(m);
  assert_int_equal(check_one("long loc", text, strlen(text)), 0);
}

/* Several blocks (not StableHLO, but MLIR allows them) round-trip; hostile counts are bounded. */
static void test_blocks_and_many_functions(void **s) {
  (void)s;
  const char *multi =
      "func.func @f(%a: tensor<f32>) {\n"
      "^bb1:\n"
      "  \"x.op\"() ({\n"
      "  ^bb0:\n"
      "  ^bb1(%q: tensor<f32>):\n"
      "    \"x.end\"(%q) : (tensor<f32>) -> ()\n"
      "  }) : () -> ()\n"
      "  func.return\n"
      "}\n";
  av_module *m = load(multi);
  assert_non_null(m);
  assert_int_equal(m->funcs[0]->body.nblocks, 2); /* implicit entry block + ^bb1 */
  assert_int_equal(m->funcs[0]->body.blocks[0].nargs, 1);
  const av_op *x = m->funcs[0]->body.blocks[1].first;
  assert_int_equal(x->regions[0].nblocks, 2);
  /* print -> parse -> print (no verify: the entry block has no terminator) */
  char *t1 = av_module_print(m);
  av_module_free(m);
  m = load(t1);
  assert_non_null(m);
  assert_int_equal(m->funcs[0]->body.nblocks, 2);
  char *t2 = av_module_print(m);
  assert_string_equal(t1, t2);
  free(t1);
  free(t2);
  av_module_free(m);

  size_t cap = 300 * 16 + 128, n = 0;
  char *many = malloc(cap);
  n += (size_t)snprintf(many + n, cap - n, "func.func @f() {\n");
  for (int i = 0; i < 300; i++) n += (size_t)snprintf(many + n, cap - n, "^b%d:\n", i);
  n += (size_t)snprintf(many + n, cap - n, "}\n");
  av_diag d;
  av_diag_init(&d);
  assert_null(av_load_mlir_text(many, n, &d));
  assert_non_null(strstr(d.msg, "too many blocks"));
  free(many);

  /* 20,000 functions load in linear time (was quadratic) */
  cap = 20000 * 48;
  n = 0;
  many = malloc(cap);
  for (int i = 0; i < 20000; i++)
    n += (size_t)snprintf(many + n, cap - n, "func.func private @f%d() {\n  func.return\n}\n", i);
  av_diag_init(&d);
  m = av_load_mlir_text(many, n, &d);
  assert_non_null(m);
  assert_int_equal(m->nfuncs, 20000);
  assert_string_equal(av_module_find_func(m, "f19999")->name, "f19999");
  av_module_free(m);
  free(many);
  expect_error("func.func @g() {\n}\nfunc.func @g() {\n}\n", "3:", "redefinition of function @g");
  expect_error("#a = 1\n#a = 2\n", "2:", "redefinition of alias #a");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pretty_ops),
      cmocka_unit_test(test_dense_values),
      cmocka_unit_test(test_structured_attrs),
      cmocka_unit_test(test_bytecode_alignment),
      cmocka_unit_test(test_long_location_chain),
      cmocka_unit_test(test_blocks_and_many_functions),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_not_a_program),
      cmocka_unit_test(test_empty_and_odd_inputs),
      cmocka_unit_test(test_corpus_testdata),
      cmocka_unit_test(test_corpus_interpret),
      cmocka_unit_test(test_corpus_jax_export),
      cmocka_unit_test(test_corpus_dynamic_quantized),
      cmocka_unit_test(test_corpus_vhlo_sources),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
