/* HLO protos (tests/data/hlo, made by JAX) compiled and run end to end through
 * av_program_compile("hlo"): the frontend, compiler and runtime together. Expected outputs
 * are worked out by hand from each program's definition in tests/data/hlo/gen_hlo.py. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/program.h"

static av_program *compile_file(const char *name, bool *unsupported) {
  const char *src = getenv("ANVIL_SOURCE_DIR");
  if (!src) return NULL;
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/hlo/%s.pb", src, name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static unsigned char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  av_compile_options opts = {.num_replicas = 1, .num_partitions = 1};
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("hlo", 3, buf, n, &opts, &d);
  if (!p && strstr(d.msg, "op not supported")) {
    /* The frontend is tested on its own (test_hlo); here an op the compiler does not lower
     * yet only postpones the end-to-end check. */
    print_message("compile %s: %s (skipped)\n", name, d.msg);
    *unsupported = true;
    return NULL;
  }
  if (!p) fail_msg("compile %s: %s", name, d.msg);
  return p;
}

#define COMPILE_OR_SKIP(p, name)                    \
  if (!getenv("ANVIL_SOURCE_DIR")) skip();          \
  bool unsupported_ = false;                        \
  av_program *p = compile_file(name, &unsupported_); \
  if (unsupported_) skip();                         \
  assert_non_null(p)

static av_tensor tensor(av_dtype dt, const void *data, size_t bytes, int rank,
                        const int64_t *dims) {
  av_tensor t = {.dtype = dt, .rank = rank};
  t.storage = av_storage_alloc(bytes);
  assert_non_null(t.storage);
  if (bytes) memcpy(t.storage->data, data, bytes);
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  return t;
}

static void run(av_program *p, av_tensor *in, int nin, av_tensor *out, int nout) {
  assert_int_equal(av_program_num_inputs(p), nin);
  assert_int_equal(av_program_num_outputs(p), nout);
  av_diag d;
  av_diag_init(&d);
  if (av_program_execute(p, 0, in, out, &d) != AV_OK) fail_msg("execute: %s", d.msg);
  for (int i = 0; i < nin; i++) av_storage_release(in[i].storage);
}

static void expect_f32(const av_tensor *t, size_t n, const float *want) {
  assert_int_equal(t->dtype, AV_DT_F32);
  const float *got = t->storage->data;
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i]) fail_msg("element %zu: got %g, want %g", i, got[i], want[i]);
}

static void test_add_runs(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "add");
  const float x[] = {1, 2, 3, 4, 5, 6}, y[] = {10, 20, 30, 40, 50, 60};
  const int64_t dims[] = {2, 3};
  av_tensor in[2] = {tensor(AV_DT_F32, x, sizeof x, 2, dims), tensor(AV_DT_F32, y, sizeof y, 2, dims)};
  av_tensor out[1];
  run(p, in, 2, out, 1);
  const float want[] = {11, 22, 33, 44, 55, 66};
  expect_f32(&out[0], 6, want);
  av_storage_release(out[0].storage);
  av_program_free(p);
}

static void test_matmul_runs(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "matmul");
  const float a[] = {1, 2, 3, 4, 5, 6};                              /* 2x3 */
  const float b[] = {1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1};            /* 3x4 */
  const int64_t da[] = {2, 3}, db[] = {3, 4};
  av_tensor in[2] = {tensor(AV_DT_F32, a, sizeof a, 2, da), tensor(AV_DT_F32, b, sizeof b, 2, db)};
  av_tensor out[1];
  run(p, in, 2, out, 1);
  /* b's columns pick a row element each, and the last sums the row. */
  const float want[] = {1, 2, 3, 6, 4, 5, 6, 15};
  expect_f32(&out[0], 8, want);
  av_storage_release(out[0].storage);
  av_program_free(p);
}

static void test_while_runs(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "while");
  /* v <- 2v + i for i = 0..4, from v = 1: 2, 5, 12, 27, 58 (and from 0: 0, 1, 4, 11, 26). */
  const float x[] = {1, 0, -1, 0.5f};
  const int64_t dims[] = {4};
  av_tensor in[1] = {tensor(AV_DT_F32, x, sizeof x, 1, dims)};
  av_tensor out[1];
  run(p, in, 1, out, 1);
  const float want[] = {58, 26, -6, 42};
  expect_f32(&out[0], 4, want);
  av_storage_release(out[0].storage);
  av_program_free(p);
}

static void test_switch_runs(void **state) {
  (void)state;
  const float x[] = {1, -2, 3};
  const int64_t dims[] = {3};
  /* branches: v + 1, v * 2, -v; the index is clamped to [0, 2]. */
  const int32_t index[] = {0, 1, 2, 7};
  const float want[4][3] = {{2, -1, 4}, {2, -4, 6}, {-1, 2, -3}, {-1, 2, -3}};
  for (int k = 0; k < 4; k++) {
    COMPILE_OR_SKIP(p, "switch");
    av_tensor in[2] = {tensor(AV_DT_S32, &index[k], 4, 0, NULL),
                       tensor(AV_DT_F32, x, sizeof x, 1, dims)};
    av_tensor out[1];
    run(p, in, 2, out, 1);
    expect_f32(&out[0], 3, want[k]);
    av_storage_release(out[0].storage);
    av_program_free(p);
  }
}

static void test_tuple_out_runs(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "tuple_out");
  const float x[] = {1, 7, -3, 2}, y[] = {2, 2, 2, 2};
  const int64_t dims[] = {2, 2};
  av_tensor in[2] = {tensor(AV_DT_F32, x, sizeof x, 2, dims), tensor(AV_DT_F32, y, sizeof y, 2, dims)};
  av_tensor out[3];
  run(p, in, 2, out, 3);
  const float sum[] = {3, 9, -1, 4}, prod[] = {2, 14, -6, 4}, mx[] = {7};
  expect_f32(&out[0], 4, sum);
  expect_f32(&out[1], 4, prod);
  expect_f32(&out[2], 1, mx);
  assert_int_equal(out[2].rank, 0);
  for (int i = 0; i < 3; i++) av_storage_release(out[i].storage);
  av_program_free(p);
}

static void test_gather_runs(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "gather");
  float x[15];
  for (int i = 0; i < 15; i++) x[i] = (float)i;
  const int32_t idx[] = {4, -5}; /* -5 wraps to row 0 */
  const int64_t dx[] = {5, 3}, di[] = {2};
  av_tensor in[2] = {tensor(AV_DT_F32, x, sizeof x, 2, dx), tensor(AV_DT_S32, idx, sizeof idx, 1, di)};
  av_tensor out[1];
  run(p, in, 2, out, 1);
  const float want[] = {12, 13, 14, 0, 1, 2};
  expect_f32(&out[0], 6, want);
  av_storage_release(out[0].storage);
  av_program_free(p);
}

static float iota_f[24];

static av_tensor iota_4x6(void) {
  for (int i = 0; i < 24; i++) iota_f[i] = (float)i; /* element (i, j) = 6i + j */
  const int64_t dims[] = {4, 6};
  return tensor(AV_DT_F32, iota_f, sizeof iota_f, 2, dims);
}

static void test_cond_runs(void **state) {
  (void)state;
  const float x[] = {1, -2, 3};
  const int64_t dims[] = {3};
  for (int p = 0; p < 2; p++) {
    COMPILE_OR_SKIP(prog, "cond");
    const uint8_t pred = (uint8_t)p;
    av_tensor in[2] = {tensor(AV_DT_PRED, &pred, 1, 0, NULL), tensor(AV_DT_F32, x, sizeof x, 1, dims)};
    av_tensor out[1];
    run(prog, in, 2, out, 1);
    const float plus[] = {2, -1, 4}, minus[] = {0, -3, 2};
    expect_f32(&out[0], 3, p ? plus : minus);
    av_storage_release(out[0].storage);
    av_program_free(prog);
  }
}

static void test_scatter_runs(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "scatter");
  const float x[] = {0, 1, 2, 3, 4}, upd[] = {10, 20};
  const int32_t idx[] = {1, -2}; /* -2 wraps to 3 */
  const int64_t d5[] = {5}, d2[] = {2};
  av_tensor in[3] = {tensor(AV_DT_F32, x, sizeof x, 1, d5), tensor(AV_DT_S32, idx, sizeof idx, 1, d2),
                     tensor(AV_DT_F32, upd, sizeof upd, 1, d2)};
  av_tensor out[1];
  run(p, in, 3, out, 1);
  const float want[] = {0, 11, 2, 23, 4};
  expect_f32(&out[0], 5, want);
  av_storage_release(out[0].storage);
  av_program_free(p);
}

static void test_sort_runs(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "sort");
  const float x[] = {3, 1, 2, 0, -1, 5, -2, 4};
  const int64_t dims[] = {2, 4};
  av_tensor in[1] = {tensor(AV_DT_F32, x, sizeof x, 2, dims)};
  av_tensor out[1];
  run(p, in, 1, out, 1);
  const float want[] = {0, 1, 2, 3, -2, -1, 4, 5};
  expect_f32(&out[0], 8, want);
  av_storage_release(out[0].storage);
  av_program_free(p);
}

static void test_reduce_window_runs(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "reduce_window");
  av_tensor in[1] = {iota_4x6()};
  av_tensor out[1];
  run(p, in, 1, out, 1);
  /* 2x2 max windows, strides (1, 2), padding ((0, 1), (1, 0)) with -inf: the window at
   * (r, c) covers rows r..r+1 and columns 2c-1..2c, so its max is at row min(r+1, 3),
   * column 2c. */
  const float want[] = {6, 8, 10, 12, 14, 16, 18, 20, 22, 18, 20, 22};
  expect_f32(&out[0], 12, want);
  av_storage_release(out[0].storage);
  av_program_free(p);
}

static void test_conv_runs(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "conv");
  float x[60], w[36];
  for (int i = 0; i < 60; i++) x[i] = 1;
  for (int i = 0; i < 36; i++) w[i] = 1;
  const int64_t dx[] = {1, 2, 6, 5}, dw[] = {3, 2, 3, 2};
  av_tensor in[2] = {tensor(AV_DT_F32, x, sizeof x, 4, dx), tensor(AV_DT_F32, w, sizeof w, 4, dw)};
  av_tensor out[1];
  run(p, in, 2, out, 1);
  /* All ones: each output counts the kernel taps that land on real input, times the 2
   * input features. Rows (pad 1/1, stride 2, size 3): 2, 3, 3 valid taps. Columns (pad
   * 0/2, size 2 with dilation 2): 2, 2, 2, 1, 1 valid taps. */
  const float rows[] = {2, 3, 3}, cols[] = {2, 2, 2, 1, 1};
  float want[45];
  for (int o = 0; o < 3; o++)
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 5; c++) want[o * 15 + r * 5 + c] = 2 * rows[r] * cols[c];
  expect_f32(&out[0], 45, want);
  av_storage_release(out[0].storage);
  av_program_free(p);
}

static void test_constants_run(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "constants");
  const float x[] = {1, 2, 3};
  const int64_t dims[] = {3};
  av_tensor in[1] = {tensor(AV_DT_F32, x, sizeof x, 1, dims)};
  av_tensor out[5];
  run(p, in, 1, out, 5);
  const float a[] = {2.5f, 0, 6.25f};
  expect_f32(&out[0], 3, a);
  const int32_t b[] = {-3, 14, 300000};
  assert_memory_equal(out[1].storage->data, b, sizeof b);
  const uint16_t c[] = {0x3fc0, 0x4040, 0x3f80}; /* bf16 1.5, 3, 1 */
  assert_memory_equal(out[2].storage->data, c, sizeof c);
  const int8_t d[] = {0, 4, -125};
  assert_memory_equal(out[3].storage->data, d, sizeof d);
  const uint8_t e[] = {0, 0, 1};
  assert_memory_equal(out[4].storage->data, e, sizeof e);
  for (int i = 0; i < 5; i++) av_storage_release(out[i].storage);
  av_program_free(p);
}

static void test_shapes_run(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "shapes");
  const int32_t one = 1;
  av_tensor in[2] = {iota_4x6(), tensor(AV_DT_S32, &one, 4, 0, NULL)};
  av_tensor out[7];
  run(p, in, 2, out, 7);
  const float ds[] = {6, 7, 8, 12, 13, 14}; /* rows 1-2, columns 0-2 */
  expect_f32(&out[0], 6, ds);
  const float sl[] = {1, 3, 13, 15}; /* rows 0, 2 x columns 1, 3 */
  expect_f32(&out[4], 4, sl);
  const float rev_row0[] = {18, 19, 20, 21, 22, 23};
  expect_f32(&out[5], 6, rev_row0);
  /* pad ((1, 2, 1), (0, -1, 0)): row 0 is padding, row 1 is x row 0 without its last
   * column, row 2 interior padding, row 3 is x row 1. */
  const float pad_rows[] = {0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 6, 7, 8, 9, 10};
  expect_f32(&out[2], 20, pad_rows);
  for (int i = 0; i < 7; i++) av_storage_release(out[i].storage);
  av_program_free(p);
}

static void test_donate_runs(void **state) {
  (void)state;
  COMPILE_OR_SKIP(p, "donate");
  const float x[] = {1, 2, 3}, y[] = {10, 20, 30};
  const int64_t dims[] = {3};
  assert_int_equal(av_program_output_alias(p, 0), 0); /* output 0 may reuse donated x */
  av_tensor in[2] = {tensor(AV_DT_F32, x, sizeof x, 1, dims), tensor(AV_DT_F32, y, sizeof y, 1, dims)};
  av_tensor out[2];
  run(p, in, 2, out, 2);
  const float twice[] = {20, 40, 60}, sum[] = {11, 22, 33};
  expect_f32(&out[0], 3, twice);
  expect_f32(&out[1], 3, sum);
  for (int i = 0; i < 2; i++) av_storage_release(out[i].storage);
  av_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_runs),     cmocka_unit_test(test_matmul_runs),
      cmocka_unit_test(test_while_runs),   cmocka_unit_test(test_switch_runs),
      cmocka_unit_test(test_tuple_out_runs), cmocka_unit_test(test_gather_runs),
      cmocka_unit_test(test_cond_runs),    cmocka_unit_test(test_scatter_runs),
      cmocka_unit_test(test_sort_runs),    cmocka_unit_test(test_reduce_window_runs),
      cmocka_unit_test(test_conv_runs),    cmocka_unit_test(test_constants_run),
      cmocka_unit_test(test_shapes_run),   cmocka_unit_test(test_donate_runs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
