/* The all-reduce rewrites of partitioned programs (compiler/all_reduce_opt.h): which
 * all-reduces merge and which do not, transposes moved above them, and the rewritten program
 * giving the same bytes as the program as written on 2 devices (integer-valued floats: every
 * sum is exact). A data-parallel program partitioned by anvil gets one all-reduce. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/all_reduce_opt.h"
#include "compiler/program.h"
#include "compiler/program_module.h"
#include "frontend/load.h"
#include "test_tensor_util.h"

enum { NDEV = 2, NIN = 2, NOUT = 5 };

/* Per device (2 replicas): x 4x3, w 3x2.
 *   h = x w (4x2); g = h^T x (2x3), all-reduced (add) then transposed (3x2): raised;
 *   s = column sums of h (2), all-reduced (add): merges with g's; its reshape reads it at
 *   once (a dependent that moves after the merged op);
 *   mx = all-reduce (max) of s: another reduction, stays;
 *   own = all-reduce (add) of x over groups [[0],[1]]: other groups, stays;
 *   loss = all-reduce (add) of sum(h), placed after its readers would be: merges. */
static const char *kProgram =
    "module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {\n"
    "  func.func public @main(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> (tensor<3x2xf32>, "
    "tensor<1x2xf32>, tensor<2xf32>, tensor<4x3xf32>, tensor<f32>) {\n"
    "    %h = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>\n"
    "    %g = stablehlo.dot_general %h, %x, contracting_dims = [0] x [0] : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>\n"
    "    %ag = \"stablehlo.all_reduce\"(%g) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %r = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
    "    %t = stablehlo.transpose %ag, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
    "    %u = stablehlo.subtract %w, %t : tensor<3x2xf32>\n"
    "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "    %s = stablehlo.reduce(%h init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4x2xf32>, tensor<f32>) -> tensor<2xf32>\n"
    "    %as = \"stablehlo.all_reduce\"(%s) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %r = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "    %rs = stablehlo.reshape %as : (tensor<2xf32>) -> tensor<1x2xf32>\n"
    "    %mx = \"stablehlo.all_reduce\"(%s) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %r = stablehlo.maximum %a, %b : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "    %own = \"stablehlo.all_reduce\"(%x) <{replica_groups = dense<[[0], [1]]> : tensor<2x1xi64>}> ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %r = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<4x3xf32>) -> tensor<4x3xf32>\n"
    "    %sh = stablehlo.reduce(%h init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x2xf32>, tensor<f32>) -> tensor<f32>\n"
    "    %l = \"stablehlo.all_reduce\"(%sh) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %r = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<f32>) -> tensor<f32>\n"
    "    return %u, %rs, %mx, %own, %l : tensor<3x2xf32>, tensor<1x2xf32>, tensor<2xf32>, tensor<4x3xf32>, tensor<f32>\n"
    "  }\n"
    "}\n";

static av_module *load(const char *text) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_module("mlir", 4, text, strlen(text), &d);
  if (!m) fprintf(stderr, "load failed: %s\n", d.msg);
  assert_non_null(m);
  return m;
}

static int count_ops(const av_module *m, av_opcode code) {
  const av_func *f = av_module_entry(m);
  int n = 0;
  for (const av_op *op = f->body.blocks[0].first; op; op = op->next) n += op->code == code;
  return n;
}

static void run(av_program *p, av_tensor out[NDEV][NOUT]) {
  av_tensor in[NDEV][NIN];
  int64_t xd[2] = {4, 3}, wd[2] = {3, 2};
  for (int q = 0; q < NDEV; q++) {
    float x[12], w[6];
    for (int i = 0; i < 12; i++) x[i] = (float)((i * 7 + q * 5) % 11) - 5.0f;
    for (int i = 0; i < 6; i++) w[i] = (float)(i % 4) - 1.0f;
    in[q][0] = f32_tensor(2, xd, x);
    in[q][1] = f32_tensor(2, wd, w);
  }
  const av_tensor *ins[NDEV] = {in[0], in[1]};
  av_tensor *outs[NDEV] = {out[0], out[1]};
  av_diag d;
  av_diag_init(&d);
  av_code c = av_program_execute_devices(p, NDEV, ins, outs, &d);
  if (c != AV_OK) fprintf(stderr, "run failed: %s\n", d.msg);
  assert_int_equal(c, AV_OK);
  for (int q = 0; q < NDEV; q++)
    for (int i = 0; i < NIN; i++) av_storage_release(in[q][i].storage);
}

static void test_merges_and_keeps(void **state) {
  (void)state;
  av_module *m = load(kProgram);
  assert_int_equal(count_ops(m, AV_OP_ALL_REDUCE), 5);
  assert_int_equal(av_optimize_all_reduces(m), 2); /* g's, s's and the loss's: one */
  assert_int_equal(count_ops(m, AV_OP_ALL_REDUCE), 3);
  /* the transpose now reads the product, and the merged all-reduce reads the transpose */
  const av_func *f = av_module_entry(m);
  const av_op *merged = NULL;
  for (const av_op *op = f->body.blocks[0].first; op; op = op->next)
    if (op->code == AV_OP_ALL_REDUCE && op->noperands == 3) merged = op;
  assert_non_null(merged);
  const av_op *tr = merged->operands[0]->def;
  assert_non_null(tr);
  assert_int_equal(tr->code, AV_OP_TRANSPOSE);
  assert_int_equal(tr->operands[0]->def->code, AV_OP_DOT_GENERAL);
  assert_int_equal(merged->results[0].type->dims[0], 3);
  /* the same bytes as the program as written */
  av_compile_options o = {.num_replicas = NDEV, .num_partitions = 1};
  av_diag d;
  av_diag_init(&d);
  av_program *opt = av_program_from_module(m, &o, &d);
  assert_non_null(opt);
  av_program *ref = av_program_compile("mlir", 4, kProgram, strlen(kProgram), &o, &d);
  assert_non_null(ref);
  av_tensor a[NDEV][NOUT], b[NDEV][NOUT];
  run(opt, a);
  run(ref, b);
  for (int q = 0; q < NDEV; q++)
    for (int k = 0; k < NOUT; k++) {
      assert_int_equal(a[q][k].rank, b[q][k].rank);
      size_t n = 4;
      for (int r = 0; r < a[q][k].rank; r++) {
        assert_int_equal(a[q][k].dims[r], b[q][k].dims[r]);
        n *= (size_t)a[q][k].dims[r];
      }
      assert_memory_equal(a[q][k].storage->data, b[q][k].storage->data, n);
      av_storage_release(a[q][k].storage);
      av_storage_release(b[q][k].storage);
    }
  av_program_free(opt);
  av_program_free(ref);
}

/* An all-reduce whose operand reads another's result never joins it. */
static const char *kChain =
    "module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {\n"
    "  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %a = \"stablehlo.all_reduce\"(%x) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({\n"
    "    ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "      %r = stablehlo.add %p, %q : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<4xf32>) -> tensor<4xf32>\n"
    "    %n = stablehlo.negate %a : tensor<4xf32>\n"
    "    %b = \"stablehlo.all_reduce\"(%n) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({\n"
    "    ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "      %r = stablehlo.add %p, %q : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<4xf32>) -> tensor<4xf32>\n"
    "    return %b : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static void test_dependent_all_reduces_stay(void **state) {
  (void)state;
  av_module *m = load(kChain);
  assert_int_equal(av_optimize_all_reduces(m), 0);
  assert_int_equal(count_ops(m, AV_OP_ALL_REDUCE), 2);
  av_module_free(m);
}

/* A data-parallel step as JAX writes it (batch sharded, weights replicated): the partitioned
 * program all-reduces both gradients in one op. */
static const char *kDataParallel =
    "module @m attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  sdy.mesh @mesh = <[\"d\"=2]>\n"
    "  func.func public @main(%x: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"d\"}, {}]>}, "
    "%w: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> "
    "(tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {\n"
    "    %h = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>\n"
    "    %g = stablehlo.dot_general %h, %x, contracting_dims = [0] x [0] : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>\n"
    "    %t = stablehlo.transpose %g, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>\n"
    "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "    %s = stablehlo.reduce(%h init: %z) applies stablehlo.add across dimensions = [0] : (tensor<8x4xf32>, tensor<f32>) -> tensor<4xf32>\n"
    "    return %t, %s : tensor<4x4xf32>, tensor<4xf32>\n"
    "  }\n"
    "}\n";

static void test_data_parallel_step_one_all_reduce(void **state) {
  (void)state;
  av_compile_options o = {.num_replicas = 1, .num_partitions = 2};
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, kDataParallel, strlen(kDataParallel), &o, &d);
  if (!p) fprintf(stderr, "compile failed: %s\n", d.msg);
  assert_non_null(p);
  char *text = av_program_text(p);
  assert_non_null(text);
  int n = 0;
  for (const char *s = text; (s = strstr(s, "stablehlo.all_reduce")) != NULL; s++) n++;
  if (n != 1) fprintf(stderr, "%s\n", text);
  assert_int_equal(n, 1);
  free(text);
  /* device q holds rows 4q..4q+3 of x[r][c] = r - c; w[k][c] = k == c */
  av_tensor in[NDEV][2], out[NDEV][2];
  int64_t xd[2] = {4, 4}, wd[2] = {4, 4};
  float w[16] = {0};
  for (int k = 0; k < 4; k++) w[k * 4 + k] = 1;
  for (int q = 0; q < NDEV; q++) {
    float x[16];
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 4; c++) x[r * 4 + c] = (float)(4 * q + r - c);
    in[q][0] = f32_tensor(2, xd, x);
    in[q][1] = f32_tensor(2, wd, w);
  }
  const av_tensor *ins[NDEV] = {in[0], in[1]};
  av_tensor *outs[NDEV] = {out[0], out[1]};
  assert_int_equal(av_program_execute_devices(p, NDEV, ins, outs, &d), AV_OK);
  /* h = x: t = (x^T x)^T = x^T x, t[i][j] = sum_r (r - i)(r - j); s[c] = sum_r (r - c) */
  for (int q = 0; q < NDEV; q++) {
    const float *t = out[q][0].storage->data, *s = out[q][1].storage->data;
    for (int i = 0; i < 4; i++) {
      float want_s = 0;
      for (int r = 0; r < 8; r++) want_s += (float)(r - i);
      assert_true(s[i] == want_s);
      for (int j = 0; j < 4; j++) {
        float want = 0;
        for (int r = 0; r < 8; r++) want += (float)((r - i) * (r - j));
        assert_true(t[i * 4 + j] == want);
      }
    }
    for (int k = 0; k < 2; k++) {
      av_storage_release(in[q][k].storage);
      av_storage_release(out[q][k].storage);
    }
  }
  av_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_merges_and_keeps),
      cmocka_unit_test(test_dependent_all_reduces_stay),
      cmocka_unit_test(test_data_parallel_step_one_all_reduce),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
