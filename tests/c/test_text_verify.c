/* IR verifier: hand-made invalid programs must be rejected with every problem listed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "frontend/mlir_text.h"
#include "ir/verify.h"

static av_module *load(const char *text) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_mlir_text(text, strlen(text), &d);
  if (!m) fprintf(stderr, "parse error: %s\n", d.msg);
  assert_non_null(m);
  return m;
}

static int count_lines(const char *s) {
  int n = *s ? 1 : 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static void test_valid(void **s) {
  (void)s;
  av_module *m = load(
      "func.func public @main(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
      "  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
      "  %1 = stablehlo.add %0, %0 : tensor<3x2xf32>\n"
      "  %2 = call @id(%1) : (tensor<3x2xf32>) -> tensor<3x2xf32>\n"
      "  return %2 : tensor<3x2xf32>\n"
      "}\n"
      "func.func private @id(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {\n"
      "  return %x : tensor<3x2xf32>\n"
      "}\n");
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_module_verify(m, &d), AV_OK);
  assert_int_equal(d.len, 0);
  av_module_free(m);
}

static void test_reports_all_problems(void **s) {
  (void)s;
  av_module *m = load(
      "func.func public @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {\n"
      "  %0 = \"stablehlo.add\"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc(\"t.py\":2:1)\n"
      "  %1 = \"stablehlo.transpose\"(%a) {permutation = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
      "  %2 = \"stablehlo.reshape\"(%a) : (tensor<2x3xf32>) -> tensor<7xf32>\n"
      "  %3 = \"stablehlo.compare\"(%a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>\n"
      "  %4 = \"func.call\"(%a) {callee = @nowhere} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
      "  %c = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %5 = \"stablehlo.reduce\"(%b, %c) ({\n"
      "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
      "    %z = stablehlo.add %x, %y : tensor<f32>\n"
      "    \"func.return\"(%z) : (tensor<f32>) -> ()\n"
      "  }) {dimensions = array<i64: 0>} : (tensor<3xf32>, tensor<f32>) -> tensor<f32>\n"
      "  return %b : tensor<3xf32>\n"
      "}\n");
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_module_verify(m, &d), AV_INVALID_ARGUMENT);
  printf("%s\n", d.msg);
  assert_non_null(strstr(d.msg, "stablehlo.add: operand and result shapes differ (at \"t.py\":2:1)"));
  assert_non_null(strstr(d.msg, "stablehlo.transpose: permutation is not a permutation"));
  assert_non_null(strstr(d.msg, "stablehlo.reshape: reshape of 6 elements into 7"));
  assert_non_null(strstr(d.msg, "stablehlo.compare: result must be i1"));
  assert_non_null(strstr(d.msg, "missing comparison_direction"));
  assert_non_null(strstr(d.msg, "calls unknown function @nowhere"));
  assert_non_null(strstr(d.msg, "region 0 must end with stablehlo.return"));
  assert_non_null(strstr(d.msg, "returned value 0 type differs"));
  assert_non_null(strstr(d.msg, "stablehlo.transpose: result dimension 0 should be 2"));
  assert_int_equal(count_lines(d.msg), 9);
  av_module_free(m);
}

static void test_more_op_rules(void **s) {
  (void)s;
  av_module *m = load(
      "func.func public @main(%a: tensor<2x3xf32>, %p: tensor<f32>, %t: tuple<tensor<f32>, tensor<i32>>) -> () {\n"
      "  %0 = stablehlo.pad %a, %p, low = [1, 0], high = [0, 0], interior = [1, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<5x3xf32>\n"
      "  %1 = stablehlo.get_tuple_element %t[1] : (tuple<tensor<f32>, tensor<i32>>) -> tensor<f32>\n"
      "  %2 = stablehlo.reverse %a, dims = [2] : tensor<2x3xf32>\n"
      "  return\n"
      "}\n");
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_module_verify(m, &d), AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "stablehlo.pad: result dimension 0 should be 4"));
  assert_non_null(strstr(d.msg, "stablehlo.get_tuple_element: result type differs from the tuple element"));
  assert_non_null(strstr(d.msg, "stablehlo.reverse: dimension 2 out of range"));
  assert_int_equal(count_lines(d.msg), 3);
  av_module_free(m);
}

/* Values can only be built out of scope through the API: use a result before its op. */
static void test_use_before_def(void **s) {
  (void)s;
  av_module *m = load(
      "func.func public @main(%a: tensor<f32>) -> tensor<f32> {\n"
      "  %0 = stablehlo.negate %a : tensor<f32>\n"
      "  %1 = stablehlo.abs %0 : tensor<f32>\n"
      "  return %1 : tensor<f32>\n"
      "}\n");
  av_block *b = &m->funcs[0]->body.blocks[0];
  av_op *neg = b->first, *abs_op = neg->next;
  neg->operands[0] = &abs_op->results[0]; /* cycle: negate uses abs's result */
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_module_verify(m, &d), AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "stablehlo.negate: operand 0 is used before its definition"));
  /* a missing terminator */
  neg->operands[0] = &b->args[0];
  av_block_remove(b, b->last);
  av_diag_init(&d);
  assert_int_equal(av_module_verify(m, &d), AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "must end with func.return"));
  av_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid),
      cmocka_unit_test(test_reports_all_problems),
      cmocka_unit_test(test_use_before_def),
      cmocka_unit_test(test_more_op_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
