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

#include <pthread.h>

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

/* ---- a hand-encoded replicated program, the form PyTorch/XLA uses without SPMD ---- */

typedef struct pbw {
  unsigned char buf[1024];
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
static void w_msg(pbw *w, uint32_t field, const pbw *sub) { w_bytes(w, field, sub->buf, sub->n); }
static pbw shape(int type, int64_t dim) { /* dim < 0: scalar */
  pbw s = {.n = 0};
  w_int(&s, 2, type);
  if (dim >= 0) w_int(&s, 3, dim);
  return s;
}
static pbw instr(const char *name, const char *opcode, int64_t id, const pbw *shp, size_t nops,
                 const int64_t *ops) {
  pbw in = {.n = 0};
  w_bytes(&in, 1, name, strlen(name));
  w_bytes(&in, 2, opcode, strlen(opcode));
  w_msg(&in, 3, shp);
  w_int(&in, 35, id);
  for (size_t i = 0; i < nops; i++) w_int(&in, 36, ops[i]);
  return in;
}

/* main(x: f32[3]) = (all-reduce(x) with to_apply=add and no replica groups, replica-id()) */
static pbw replicated_module(void) {
  enum { F32 = 11, U32 = 8, TUPLE = 13 };
  pbw f = shape(F32, -1), v3 = shape(F32, 3), u = shape(U32, -1);
  pbw add = {.n = 0}, main_c = {.n = 0}, mod = {.n = 0}, tup = {.n = 0};
  pbw a0 = instr("a", "parameter", 11, &f, 0, NULL), a1 = instr("b", "parameter", 12, &f, 0, NULL);
  w_int(&a1, 9, 1);
  const int64_t ab[] = {11, 12};
  pbw sum = instr("sum", "add", 13, &f, 2, ab);
  w_bytes(&add, 1, "add", 3);
  w_msg(&add, 2, &a0);
  w_msg(&add, 2, &a1);
  w_msg(&add, 2, &sum);
  w_int(&add, 5, 10);
  w_int(&add, 6, 13);
  pbw x = instr("x", "parameter", 1, &v3, 0, NULL);
  const int64_t one = 1;
  pbw ar = instr("ar", "all-reduce", 2, &v3, 1, &one);
  w_int(&ar, 38, 10);
  pbw rid = instr("rid", "replica-id", 3, &u, 0, NULL);
  w_int(&tup, 2, TUPLE);
  w_msg(&tup, 4, &v3);
  w_msg(&tup, 4, &u);
  const int64_t outs[] = {2, 3};
  pbw root = instr("root", "tuple", 4, &tup, 2, outs);
  w_bytes(&main_c, 1, "SyncTensorsGraph.5", 18);
  w_msg(&main_c, 2, &x);
  w_msg(&main_c, 2, &ar);
  w_msg(&main_c, 2, &rid);
  w_msg(&main_c, 2, &root);
  w_int(&main_c, 5, 1);
  w_int(&main_c, 6, 4);
  w_msg(&mod, 3, &add);
  w_msg(&mod, 3, &main_c);
  w_int(&mod, 6, 1);
  return mod;
}

typedef struct replica_run {
  av_program *p;
  int index;
  float x[3];
  av_tensor out[2];
  av_code code;
  av_diag d;
} replica_run;

static void *run_replica(void *arg) {
  replica_run *r = arg;
  const int64_t dims[] = {3};
  av_tensor in = {.dtype = AV_DT_F32, .rank = 1, .dims = {dims[0]}};
  in.storage = av_storage_alloc(sizeof r->x);
  if (!in.storage) return NULL;
  memcpy(in.storage->data, r->x, sizeof r->x);
  av_diag_init(&r->d);
  r->code = av_program_execute(r->p, r->index, &in, r->out, &r->d);
  av_storage_release(in.storage);
  return NULL;
}

static void test_replicated_all_reduce_runs(void **state) {
  (void)state;
  pbw mod = replicated_module();
  av_compile_options opts = {.num_replicas = 2, .num_partitions = 1};
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("hlo", 3, mod.buf, mod.n, &opts, &d);
  if (!p && strstr(d.msg, "not supported")) skip();
  if (!p) fail_msg("compile: %s", d.msg);
  replica_run runs[2] = {{.p = p, .index = 0, .x = {1, 2, 3}},
                         {.p = p, .index = 1, .x = {10, 20, 30}}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, run_replica, &runs[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  const float want[] = {11, 22, 33};
  for (int i = 0; i < 2; i++) {
    if (runs[i].code != AV_OK) fail_msg("replica %d: %s", i, runs[i].d.msg);
    expect_f32(&runs[i].out[0], 3, want);
    assert_int_equal(runs[i].out[1].dtype, AV_DT_U32);
    assert_int_equal(*(const uint32_t *)runs[i].out[1].storage->data, (uint32_t)i);
    for (int k = 0; k < 2; k++) av_storage_release(runs[i].out[k].storage);
  }
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
      cmocka_unit_test(test_replicated_all_reduce_runs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
