/* GSPMD-form programs (what jax 0.4.35 to 0.6.x send): mhlo.sharding strings and the
 * custom-call form of shard_map, rewritten into Shardy (compiler/gspmd.c), then run on 4
 * devices. Expected values are worked out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/gspmd.h"
#include "compiler/program.h"
#include "frontend/load.h"
#include "ir/printer.h"

enum { NDEV = 4 };

/* The module after the rewrite, printed (caller frees). */
static char *rewrite(const char *text, av_code want, const char *want_msg) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_module("mlir", 4, text, strlen(text), &d);
  if (!m) fprintf(stderr, "load failed: %s\n", d.msg);
  assert_non_null(m);
  av_code c = av_gspmd_import(m, NDEV, &d);
  if (c != want) fprintf(stderr, "import: %s\n", d.msg);
  assert_int_equal(c, want);
  if (want_msg) assert_non_null(strstr(d.msg, want_msg));
  char *out = c == AV_OK ? av_module_print(m) : NULL;
  av_module_free(m);
  return out;
}

static av_program *compile4(const char *text) {
  av_compile_options o = {.num_replicas = 1, .num_partitions = NDEV};
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), &o, &d);
  if (!p) fprintf(stderr, "compile failed: %s\n", d.msg);
  assert_non_null(p);
  return p;
}

static av_tensor f32(int rank, const int64_t *dims, const float *v) {
  av_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = AV_DT_F32;
  t.rank = rank;
  size_t n = 1;
  for (int k = 0; k < rank; k++) n *= (size_t)(t.dims[k] = dims[k]);
  t.storage = av_storage_alloc(n * sizeof(float) + 1);
  assert_non_null(t.storage);
  memcpy(t.storage->data, v, n * sizeof(float));
  return t;
}

/* Runs a one-input one-output program on 4 devices; in[q] is device q's shard. */
static void run4(av_program *p, const int64_t *in_dims, int in_rank, float in[NDEV][8],
                 const int64_t *out_dims, int out_rank, float want[NDEV][8]) {
  av_tensor ins[NDEV][1], outs[NDEV][1];
  const av_tensor *inp[NDEV];
  av_tensor *outp[NDEV];
  for (int q = 0; q < NDEV; q++) {
    ins[q][0] = f32(in_rank, in_dims, in[q]);
    memset(outs[q], 0, sizeof outs[q]);
    inp[q] = ins[q];
    outp[q] = outs[q];
  }
  av_diag d;
  av_diag_init(&d);
  av_code c = av_program_execute_devices(p, NDEV, inp, outp, &d);
  if (c != AV_OK) fprintf(stderr, "execute: %s\n", d.msg);
  assert_int_equal(c, AV_OK);
  int64_t n = 1;
  for (int k = 0; k < out_rank; k++) n *= out_dims[k];
  for (int q = 0; q < NDEV; q++) {
    assert_int_equal(outs[q][0].rank, out_rank);
    const float *v = outs[q][0].storage->data;
    for (int64_t i = 0; i < n; i++) {
      if (v[i] != want[q][i]) fprintf(stderr, "device %d [%lld]: %g, want %g\n", q, (long long)i, v[i], want[q][i]);
      assert_true(v[i] == want[q][i]);
    }
    av_storage_release(ins[q][0].storage);
    av_storage_release(outs[q][0].storage);
  }
}

/* jit with a row-split argument (jax 0.4.35's form): each device holds 2 of 8 rows. */
static const char k_sharded_jit[] =
    "module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  func.func public @main(%arg0: tensor<8xf32> {mhlo.sharding = \"{devices=[4]<=[4]}\"})\n"
    "      -> (tensor<8xf32> {mhlo.sharding = \"{devices=[4]<=[4]}\"}) {\n"
    "    %0 = stablehlo.reduce(%arg0 init: %c) applies stablehlo.add across dimensions = [0]\n"
    "        : (tensor<8xf32>, tensor<f32>) -> tensor<f32>\n"
    "    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<8xf32>\n"
    "    %2 = stablehlo.add %arg0, %1 : tensor<8xf32>\n"
    "    return %2 : tensor<8xf32>\n"
    "  }\n"
    "}\n";

static void test_sharded_jit(void **state) {
  (void)state;
  /* The text needs the init constant; splice it in (kept out of the string for reading). */
  char text[2048];
  const char *at = strstr(k_sharded_jit, "    %0 =");
  snprintf(text, sizeof text, "%.*s    %%c = stablehlo.constant dense<0.0> : tensor<f32>\n%s",
           (int)(at - k_sharded_jit), k_sharded_jit, at);
  char *printed = rewrite(text, AV_OK, NULL);
  assert_non_null(strstr(printed, "sdy.sharding = #sdy.sharding<mesh<[\"g0\"=4]>, [{\"g0\"}]>"));
  free(printed);
  av_program *p = compile4(text);
  /* x = 0..7, sum 28: device q holds rows 2q, 2q+1 of x + 28. */
  const int64_t dims[1] = {2};
  float in[NDEV][8], want[NDEV][8];
  for (int q = 0; q < NDEV; q++)
    for (int i = 0; i < 2; i++) {
      in[q][i] = (float)(2 * q + i);
      want[q][i] = in[q][i] + 28;
    }
  run4(p, dims, 1, in, dims, 1, want);
  av_program_free(p);
}

/* shard_map over a 2x2 mesh (a, b): in_specs P('a', 'b'), psum over 'a', out_specs P(None, 'b')
 * (jax 0.4.35's form; the result's devices are the transposed iota). */
static const char k_shard_map[] =
    "module @jit_g attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  func.func public @main(%arg0: tensor<4x4xf32>) -> (tensor<2x4xf32>) {\n"
    "    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = \"\", mhlo.sharding = "
    "\"{devices=[2,2]<=[4]}\"} : (tensor<4x4xf32>) -> tensor<4x4xf32>\n"
    "    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {backend_config = \"\", "
    "mhlo.sharding = \"{manual}\"} : (tensor<4x4xf32>) -> tensor<2x2xf32>\n"
    "    %2 = call @shmap_body(%1) : (tensor<2x2xf32>) -> tensor<2x2xf32>\n"
    "    %3 = stablehlo.custom_call @Sharding(%2) {backend_config = \"\", mhlo.sharding = "
    "\"{manual}\"} : (tensor<2x2xf32>) -> tensor<2x2xf32>\n"
    "    %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {backend_config = \"\", "
    "mhlo.sharding = \"{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}\"} : "
    "(tensor<2x2xf32>) -> tensor<2x4xf32>\n"
    "    return %4 : tensor<2x4xf32>\n"
    "  }\n"
    "  func.func private @shmap_body(%arg0: tensor<2x2xf32>) -> (tensor<2x2xf32>) {\n"
    "    %0 = \"stablehlo.all_reduce\"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle "
    "= 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, "
    "use_global_device_ids}> ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %s = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %s : tensor<f32>\n"
    "    }) : (tensor<2x2xf32>) -> tensor<2x2xf32>\n"
    "    return %0 : tensor<2x2xf32>\n"
    "  }\n"
    "}\n";

static void test_shard_map_2x2(void **state) {
  (void)state;
  char *printed = rewrite(k_shard_map, AV_OK, NULL);
  assert_non_null(strstr(printed, "sdy.manual_computation"));
  assert_non_null(strstr(printed, "#sdy.mesh<[\"m0\"=2, \"m1\"=2]>"));
  assert_non_null(strstr(printed, "[{\"m0\"}, {\"m1\"}]"));
  assert_non_null(strstr(printed, "[{}, {\"m1\"}]"));
  assert_null(strstr(printed, "SPMDFullToShardShape"));
  assert_null(strstr(printed, "SPMDShardToFullShape"));
  free(printed);
  av_program *p = compile4(k_shard_map);
  /* x[i][j] = 4i + j; device q = 2a + b is given its block of the manual computation's input
   * sharding: rows 2a..2a+1, cols 2b..2b+1. The result, rows summed over a: r[i][j] = x[i][j] +
   * x[i+2][j] = 8i + 2j + 8, split by columns over b, replicated over a. */
  const int64_t in_dims[2] = {2, 2}, out_dims[2] = {2, 2};
  av_tensor ins[NDEV][1], outs[NDEV][1];
  const av_tensor *inp[NDEV];
  av_tensor *outp[NDEV];
  for (int q = 0; q < NDEV; q++) {
    int a = q / 2, b = q % 2;
    float block[4];
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) block[i * 2 + j] = (float)(4 * (2 * a + i) + 2 * b + j);
    ins[q][0] = f32(2, in_dims, block);
    memset(outs[q], 0, sizeof outs[q]);
    inp[q] = ins[q];
    outp[q] = outs[q];
  }
  av_diag d;
  av_diag_init(&d);
  av_code c = av_program_execute_devices(p, NDEV, inp, outp, &d);
  if (c != AV_OK) fprintf(stderr, "execute: %s\n", d.msg);
  assert_int_equal(c, AV_OK);
  for (int q = 0; q < NDEV; q++) {
    int b = q % 2;
    assert_int_equal(outs[q][0].rank, 2);
    assert_int_equal(outs[q][0].dims[0], out_dims[0]);
    assert_int_equal(outs[q][0].dims[1], out_dims[1]);
    const float *v = outs[q][0].storage->data;
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) {
        float w = (float)(8 * i + 2 * (2 * b + j) + 8);
        if (v[i * 2 + j] != w) fprintf(stderr, "device %d [%d][%d]: %g, want %g\n", q, i, j, v[i * 2 + j], w);
        assert_true(v[i * 2 + j] == w);
      }
    av_storage_release(ins[q][0].storage);
    av_storage_release(outs[q][0].storage);
  }
  av_program_free(p);
}

static void test_device_list_and_errors(void **state) {
  (void)state;
  /* An explicit device list out of order becomes the inline mesh's device_ids. */
  char *printed = rewrite(
      "module @m attributes {mhlo.num_partitions = 4 : i32} {\n"
      "  func.func public @main(%arg0: tensor<4x2xf32> {mhlo.sharding = \"{devices=[2,1,2]0,2,1,3 "
      "last_tile_dim_replicate}\"}) -> tensor<4x2xf32> {\n"
      "    return %arg0 : tensor<4x2xf32>\n  }\n}\n",
      AV_OK, NULL);
  assert_non_null(strstr(printed, "mesh<[\"g0\"=2, \"g2\"=2], device_ids=[0, 2, 1, 3]>, "
                                  "[{\"g0\"}, {}]>"));
  free(printed);
  /* A single-device (maximal) sharding and a partially manual one are refused by name. */
  assert_null(rewrite("module @m attributes {mhlo.num_partitions = 4 : i32} {\n"
                      "  func.func public @main(%arg0: tensor<4xf32> {mhlo.sharding = "
                      "\"{maximal device=1}\"}) -> tensor<4xf32> {\n"
                      "    return %arg0 : tensor<4xf32>\n  }\n}\n",
                      AV_UNIMPLEMENTED, "maximal"));
  assert_null(rewrite("module @m attributes {mhlo.num_partitions = 4 : i32} {\n"
                      "  func.func public @main(%arg0: tensor<4xf32> {mhlo.sharding = "
                      "\"{devices=[2,2]<=[4] last_tile_dims={manual}}\"}) -> tensor<4xf32> {\n"
                      "    return %arg0 : tensor<4xf32>\n  }\n}\n",
                      AV_UNIMPLEMENTED, "partially manual"));
  /* Malformed: devices that are not a permutation, tiles that do not multiply out. */
  assert_null(rewrite("module @m attributes {mhlo.num_partitions = 4 : i32} {\n"
                      "  func.func public @main(%arg0: tensor<4xf32> {mhlo.sharding = "
                      "\"{devices=[4]0,0,1,2}\"}) -> tensor<4xf32> {\n"
                      "    return %arg0 : tensor<4xf32>\n  }\n}\n",
                      AV_UNIMPLEMENTED, "each once"));
  assert_null(rewrite("module @m attributes {mhlo.num_partitions = 4 : i32} {\n"
                      "  func.func public @main(%arg0: tensor<4xf32> {mhlo.sharding = "
                      "\"{devices=[4]<=[3]}\"}) -> tensor<4xf32> {\n"
                      "    return %arg0 : tensor<4xf32>\n  }\n}\n",
                      AV_INVALID_ARGUMENT, "iota size"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sharded_jit),
      cmocka_unit_test(test_shard_map_2x2),
      cmocka_unit_test(test_device_list_and_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
