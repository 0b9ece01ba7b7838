/* Quantized types end to end: text -> IR -> av_legalize_quant -> plan -> run, each result
 * checked against values worked out by hand from the formulas in compiler/quant_legalize.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "compiler/program.h"
#include "frontend/load.h"
#include "ir/printer.h"

/* Compiles and runs a zero-argument program; compares output 0 with `expect`. */
static void run_expect(const char *text, const void *expect, size_t nbytes) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  if (!p) fail_msg("compile failed: %s", d.msg);
  av_tensor out[2] = {0};
  if (av_program_execute(p, 0, NULL, out, &d) != AV_OK) fail_msg("run failed: %s", d.msg);
  assert_int_equal(out[0].storage->size >= nbytes, 1);
  assert_memory_equal(out[0].storage->data, expect, nbytes);
  av_storage_release(out[0].storage);
  av_program_free(p);
}

#define Q8(s) "tensor<" s "x!quant.uniform<i8:f32, 0.5:3>>"

static void test_quantize_rounds_half_even_and_clamps(void **state) {
  (void)state;
  /* x / 0.5 + 3 = [5.5, 6.5, -197, 203, 3.5, 2.5] -> clamp to i8 -> round half even */
  const char *text =
      "func.func @main() -> tensor<6xi8> {\n"
      "  %x = stablehlo.constant dense<[1.25, 1.75, -100.0, 100.0, 0.25, -0.25]> : tensor<6xf32>\n"
      "  %q = \"stablehlo.uniform_quantize\"(%x) : (tensor<6xf32>) -> " Q8("6") "\n"
      "  %b = \"stablehlo.bitcast_convert\"(%q) : (" Q8("6") ") -> tensor<6xi8>\n"
      "  return %b : tensor<6xi8>\n}\n";
  int8_t expect[6] = {6, 6, -128, 127, 4, 2};
  run_expect(text, expect, sizeof expect);
}

static void test_quantize_storage_ranges(void **state) {
  (void)state;
  /* a narrowed range clamps at -127; quantized results are returned as their storage */
  const char *narrow =
      "func.func @main() -> tensor<2x!quant.uniform<i8<-127:127>:f32, 1.0>> {\n"
      "  %x = stablehlo.constant dense<[-200.0, 3.0]> : tensor<2xf32>\n"
      "  %q = \"stablehlo.uniform_quantize\"(%x) : (tensor<2xf32>) -> "
      "tensor<2x!quant.uniform<i8<-127:127>:f32, 1.0>>\n"
      "  return %q : tensor<2x!quant.uniform<i8<-127:127>:f32, 1.0>>\n}\n";
  int8_t e1[2] = {-127, 3};
  run_expect(narrow, e1, sizeof e1);
  /* u8 with zero point 128: -1 -> 127, 0.5 -> 128.5 -> 128 (half to even), 300 -> 255 */
  const char *u8 =
      "func.func @main() -> tensor<3xui8> {\n"
      "  %x = stablehlo.constant dense<[-1.0, 0.5, 300.0]> : tensor<3xf32>\n"
      "  %q = \"stablehlo.uniform_quantize\"(%x) : (tensor<3xf32>) -> "
      "tensor<3x!quant.uniform<u8:f32, 1.0:128>>\n"
      "  %b = \"stablehlo.bitcast_convert\"(%q) : (tensor<3x!quant.uniform<u8:f32, 1.0:128>>) "
      "-> tensor<3xui8>\n"
      "  return %b : tensor<3xui8>\n}\n";
  uint8_t e2[3] = {127, 128, 255};
  run_expect(u8, e2, sizeof e2);
}

#define PA "tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>"
#define PB "tensor<2x!quant.uniform<i8:f32:0, {0.1:-20,0.2:-30}>>"

static void test_per_axis_quantize_and_requantize(void **state) {
  (void)state;
  /* [4/0.1 - 30, 15/0.5 - 20] = [10, 10]; then to the other parameters:
   * q * s/s' + (zp' - zp * s/s') = [10 * 1 + 10, 10 * 2.5 + 20] = [20, 45] */
  const char *text =
      "func.func @main() -> tensor<4xi8> {\n"
      "  %x = stablehlo.constant dense<[4.0, 15.0]> : tensor<2xf32>\n"
      "  %a = \"stablehlo.uniform_quantize\"(%x) : (tensor<2xf32>) -> " PA "\n"
      "  %b = \"stablehlo.uniform_quantize\"(%a) : (" PA ") -> " PB "\n"
      "  %ai = \"stablehlo.bitcast_convert\"(%a) : (" PA ") -> tensor<2xi8>\n"
      "  %bi = \"stablehlo.bitcast_convert\"(%b) : (" PB ") -> tensor<2xi8>\n"
      "  %r = \"stablehlo.concatenate\"(%ai, %bi) {dimension = 0 : i64} : "
      "(tensor<2xi8>, tensor<2xi8>) -> tensor<4xi8>\n"
      "  return %r : tensor<4xi8>\n}\n";
  int8_t expect[4] = {10, 10, 20, 45};
  run_expect(text, expect, sizeof expect);
}

static void test_dequantize(void **state) {
  (void)state;
  /* (q - zp) * scale: (10 + 30) * 0.25, (-30 + 30) * 0.25, (127 + 30) * 0.25 */
  const char *text =
      "func.func @main() -> tensor<3xf32> {\n"
      "  %i = stablehlo.constant dense<[10, -30, 127]> : tensor<3xi8>\n"
      "  %q = \"stablehlo.bitcast_convert\"(%i) : (tensor<3xi8>) -> "
      "tensor<3x!quant.uniform<i8:f32, 0.25:-30>>\n"
      "  %f = \"stablehlo.uniform_dequantize\"(%q) : (tensor<3x!quant.uniform<i8:f32, 0.25:-30>>) "
      "-> tensor<3xf32>\n"
      "  return %f : tensor<3xf32>\n}\n";
  float expect[3] = {10.0f, 0.0f, 39.25f};
  run_expect(text, expect, sizeof expect);
}

static void test_integer_add(void **state) {
  (void)state;
  /* lhs [2, 50] (scale 0.5), rhs [1.5, 50] (scale 0.25), result scale 0.5 zp 1:
   * lhs -> [5, 101], rhs -> [4, 101] in the result's form; 9 - 1 = 8, 202 - 1 = 201 -> 127 */
  const char *text =
      "func.func @main() -> tensor<2xi8> {\n"
      "  %l = stablehlo.constant dense<[4, 100]> : tensor<2xi8>\n"
      "  %r = stablehlo.constant dense<[6, 200]> : tensor<2xi16>\n"
      "  %lq = \"stablehlo.bitcast_convert\"(%l) : (tensor<2xi8>) -> "
      "tensor<2x!quant.uniform<i8:f32, 0.5>>\n"
      "  %rq = \"stablehlo.bitcast_convert\"(%r) : (tensor<2xi16>) -> "
      "tensor<2x!quant.uniform<i16:f32, 0.25>>\n"
      "  %s = \"stablehlo.add\"(%lq, %rq) : (tensor<2x!quant.uniform<i8:f32, 0.5>>, "
      "tensor<2x!quant.uniform<i16:f32, 0.25>>) -> tensor<2x!quant.uniform<i8:f32, 0.5:1>>\n"
      "  %b = \"stablehlo.bitcast_convert\"(%s) : (tensor<2x!quant.uniform<i8:f32, 0.5:1>>) -> "
      "tensor<2xi8>\n"
      "  return %b : tensor<2xi8>\n}\n";
  int8_t expect[2] = {8, 127};
  run_expect(text, expect, sizeof expect);
}

static const char *dot_program(char *buf, size_t cap, const char *result_scale) {
  /* lhs [3, 5] zp 1 (real [2, 4]); rhs [1, 2] zp -1 (real [2, 3]) */
  snprintf(buf, cap,
           "func.func @main() -> tensor<1x1xi32> {\n"
           "  %%l = stablehlo.constant dense<[[3, 5]]> : tensor<1x2xi8>\n"
           "  %%r = stablehlo.constant dense<[[1], [2]]> : tensor<2x1xi8>\n"
           "  %%lq = \"stablehlo.bitcast_convert\"(%%l) : (tensor<1x2xi8>) -> "
           "tensor<1x2x!quant.uniform<i8:f32, 1.0:1>>\n"
           "  %%rq = \"stablehlo.bitcast_convert\"(%%r) : (tensor<2x1xi8>) -> "
           "tensor<2x1x!quant.uniform<i8:f32, 1.0:-1>>\n"
           "  %%d = \"stablehlo.dot_general\"(%%lq, %%rq) {dot_dimension_numbers = "
           "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : "
           "(tensor<1x2x!quant.uniform<i8:f32, 1.0:1>>, tensor<2x1x!quant.uniform<i8:f32, 1.0:-1>>) "
           "-> tensor<1x1x!quant.uniform<i32:f32, %s>>\n"
           "  %%b = \"stablehlo.bitcast_convert\"(%%d) : (tensor<1x1x!quant.uniform<i32:f32, %s>>) "
           "-> tensor<1x1xi32>\n"
           "  return %%b : tensor<1x1xi32>\n}\n",
           result_scale, result_scale);
  return buf;
}

static void test_integer_dot(void **state) {
  (void)state;
  char buf[2048];
  /* result scale 1: exact sum((l - 1)(r + 1)) = 2*2 + 4*3 = 16 */
  int32_t e1 = 16;
  run_expect(dot_program(buf, sizeof buf, "1.0"), &e1, sizeof e1);
  /* result scale 0.5 (x2): the raw dot 3*1 + 5*2 = 13 and the zero-point terms 13 - 16 = -3
   * are rescaled apart: 26 - (-6) = 32 */
  int32_t e2 = 32;
  run_expect(dot_program(buf, sizeof buf, "0.5"), &e2, sizeof e2);
  /* scale 0.4 (x2.5): trunc(32.5) - trunc(-7.5) = 32 + 7 = 39, the reference lowering's
   * truncation (the real product would give 40) */
  int32_t e3 = 39;
  run_expect(dot_program(buf, sizeof buf, "0.4"), &e3, sizeof e3);
}

static void test_integer_conv(void **state) {
  (void)state;
  /* lhs [[1, 1], [3, 2]] zp 1 (centred [[0, 0], [2, 1]]), a 2x2 kernel of ones, padding 1
   * before each spatial dimension, result scale 0.4 (x2.5). Centred sums [0, 0, 2, 3]; the
   * padding stands for the zero point, so the uncentred sums are 4 more: [4, 4, 6, 7]. Each
   * rescaled and truncated apart: [10, 10, 15, 17] - 10 = [0, 0, 5, 7] (dequantize-conv-
   * quantize would round 7.5 to 8). */
#define CL "tensor<1x2x2x1x!quant.uniform<i8:f32, 1.0:1>>"
#define CK "tensor<2x2x1x1x!quant.uniform<i8:f32, 1.0>>"
#define CR "tensor<1x2x2x1x!quant.uniform<i32:f32, 0.4>>"
  const char *text =
      "func.func @main() -> tensor<1x2x2x1xi32> {\n"
      "  %l = stablehlo.constant dense<[[[[1], [1]], [[3], [2]]]]> : tensor<1x2x2x1xi8>\n"
      "  %k = stablehlo.constant dense<1> : tensor<2x2x1x1xi8>\n"
      "  %lq = \"stablehlo.bitcast_convert\"(%l) : (tensor<1x2x2x1xi8>) -> " CL "\n"
      "  %kq = \"stablehlo.bitcast_convert\"(%k) : (tensor<2x2x1x1xi8>) -> " CK "\n"
      "  %c = stablehlo.convolution(%lq, %kq) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], "
      "window = {stride = [1, 1], pad = [[1, 0], [1, 0]]} "
      "{batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (" CL ", " CK ") -> " CR "\n"
      "  %b = \"stablehlo.bitcast_convert\"(%c) : (" CR ") -> tensor<1x2x2x1xi32>\n"
      "  return %b : tensor<1x2x2x1xi32>\n}\n";
  int32_t expect[4] = {0, 0, 5, 7};
  run_expect(text, expect, sizeof expect);
}

static void test_weight_only_dot_and_qdq(void **state) {
  (void)state;
  /* float lhs [1, 2] . dequantized rhs ([4, 6] - 2) * 0.5 = [1, 2] -> 5 */
  const char *dot =
      "func.func @main() -> tensor<1xf32> {\n"
      "  %l = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>\n"
      "  %r = stablehlo.constant dense<[[4], [6]]> : tensor<2x1xi8>\n"
      "  %rq = \"stablehlo.bitcast_convert\"(%r) : (tensor<2x1xi8>) -> "
      "tensor<2x1x!quant.uniform<i8:f32, 0.5:2>>\n"
      "  %d = \"stablehlo.dot_general\"(%l, %rq) {dot_dimension_numbers = "
      "#stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>} : "
      "(tensor<2xf32>, tensor<2x1x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<1xf32>\n"
      "  return %d : tensor<1xf32>\n}\n";
  float e1 = 5.0f;
  run_expect(dot, &e1, sizeof e1);
  /* negate through the real values, (q - 3) * 0.5 = [0, -3.5] -> [0, 3.5] / 0.25 = [0, 14];
   * then a reshape moves the stored integers as they are */
  const char *neg =
      "func.func @main() -> tensor<1x2xi8> {\n"
      "  %i = stablehlo.constant dense<[3, -4]> : tensor<2xi8>\n"
      "  %q = \"stablehlo.bitcast_convert\"(%i) : (tensor<2xi8>) -> " Q8("2") "\n"
      "  %n = \"stablehlo.negate\"(%q) : (" Q8("2") ") -> tensor<2x!quant.uniform<i8:f32, 0.25>>\n"
      "  %s = \"stablehlo.reshape\"(%n) : (tensor<2x!quant.uniform<i8:f32, 0.25>>) -> "
      "tensor<1x2x!quant.uniform<i8:f32, 0.25>>\n"
      "  %b = \"stablehlo.bitcast_convert\"(%s) : (tensor<1x2x!quant.uniform<i8:f32, 0.25>>) -> "
      "tensor<1x2xi8>\n"
      "  return %b : tensor<1x2xi8>\n}\n";
  int8_t e2[2] = {0, 14};
  run_expect(neg, e2, sizeof e2);
}

static void expect_refused(const char *text, av_code code, const char *needle) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  if (p) {
    av_program_free(p);
    fail_msg("compiled, expected a refusal naming '%s'", needle);
  }
  assert_int_equal(d.code, code);
  if (!strstr(d.msg, needle)) fail_msg("message '%s' does not name '%s'", d.msg, needle);
}

static void test_refusals(void **state) {
  (void)state;
  /* an op with no quantized rewrite is named, not run on the stored integers */
  expect_refused(
      "func.func @main(%q: " Q8("4") ") -> " Q8("") " {\n"
      "  %z = stablehlo.constant dense<0> : tensor<i8>\n"
      "  %zq = \"stablehlo.bitcast_convert\"(%z) : (tensor<i8>) -> " Q8("") "\n"
      "  %r = \"stablehlo.reduce\"(%q, %zq) ({\n"
      "  ^bb0(%a: " Q8("") ", %b: " Q8("") "):\n"
      "    \"stablehlo.return\"(%a) : (" Q8("") ") -> ()\n"
      "  }) {dimensions = array<i64: 0>} : (" Q8("4") ", " Q8("") ") -> " Q8("") "\n"
      "  return %r : " Q8("") "\n}\n",
      AV_UNIMPLEMENTED, "stablehlo.reduce");
  /* per-axis parameters that do not fit the shape (3 scales for 2 indices) */
  expect_refused(
      "func.func @main(%x: tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32:0, {0.1,0.5,1.0}>> {\n"
      "  %q = \"stablehlo.uniform_quantize\"(%x) : (tensor<2xf32>) -> "
      "tensor<2x!quant.uniform<i8:f32:0, {0.1,0.5,1.0}>>\n"
      "  return %q : tensor<2x!quant.uniform<i8:f32:0, {0.1,0.5,1.0}>>\n}\n",
      AV_INVALID_ARGUMENT, "one scale per index");
  /* malformed types are refused by the reader, with what is wrong */
  expect_refused("func.func @main(%x: tensor<2x!quant.uniform<i8:f32, -1.0>>) -> tensor<2xf32> {\n}\n",
                 AV_INVALID_ARGUMENT, "scale");
  expect_refused("func.func @main(%x: tensor<2x!quant.uniform<i8<-5:300>:f32, 1.0>>) -> tensor<2xf32> {\n}\n",
                 AV_INVALID_ARGUMENT, "storage range");
  expect_refused("func.func @main(%x: tensor<2x!quant.uniform<i8:f32:0, 1.0>>) -> tensor<2xf32> {\n}\n",
                 AV_INVALID_ARGUMENT, "braces");
  expect_refused("func.func @main(%x: tensor<2x!quant.uniform<i8:f32, 1.0:2", AV_INVALID_ARGUMENT,
                 "quant");
}

/* The printer writes quantized types the readers take back, scales exact. */
static void test_print_round_trip(void **state) {
  (void)state;
  const char *text =
      "func.func @main(%x: tensor<2x!quant.uniform<u8<1:255>:f32:0, {0.0039172410964965817:3,"
      "1.5350925350904778E-5}>>) -> tensor<2x!quant.uniform<u8<1:255>:f32:0, "
      "{0.0039172410964965817:3,1.5350925350904778E-5}>> {\n"
      "  return %x : tensor<2x!quant.uniform<u8<1:255>:f32:0, "
      "{0.0039172410964965817:3,1.5350925350904778E-5}>>\n}\n";
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_module("mlir", 4, text, strlen(text), &d);
  if (!m) fail_msg("load: %s", d.msg);
  const av_quant *q = m->funcs[0]->type->elems[0]->quant;
  assert_non_null(q);
  assert_int_equal(q->axis, 0);
  assert_int_equal(q->n, 2);
  assert_true(q->scales[0] == 0.0039172410964965817 && q->scales[1] == 1.5350925350904778E-5);
  assert_int_equal(q->zero_points[0], 3);
  assert_int_equal(q->storage_min, 1);
  char *printed = av_module_print(m);
  assert_non_null(strstr(printed, "!quant.uniform<u8<1:255>:f32:0, {0.003917241096496582:3,1.5350925350904778e-05}>"));
  av_module *m2 = av_load_module("mlir", 4, printed, strlen(printed), &d);
  if (!m2) fail_msg("reload: %s", d.msg);
  assert_true(av_type_equal(m->funcs[0]->type, m2->funcs[0]->type));
  free(printed);
  av_module_free(m2);
  av_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quantize_rounds_half_even_and_clamps),
      cmocka_unit_test(test_quantize_storage_ranges),
      cmocka_unit_test(test_per_axis_quantize_and_requantize),
      cmocka_unit_test(test_dequantize),
      cmocka_unit_test(test_integer_add),
      cmocka_unit_test(test_integer_dot),
      cmocka_unit_test(test_integer_conv),
      cmocka_unit_test(test_weight_only_dot_and_qdq),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_print_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
