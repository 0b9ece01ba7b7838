/* Elementwise fusion (compiler/fuse_elementwise.c + runtime/steps_fused.c): chains of
 * elementwise ops and scalar broadcasts run tile by tile. Results are checked against values
 * computed here in double with libm; the shapes cross tile boundaries (3000 > 2 tiles), an
 * intermediate escapes the chain (second result), an input is used twice and dies inside
 * the chain (its storage may be reused), and a chain runs inside a while loop body. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/program.h"
#include "util/storage.h"

enum { N = 3000 };

static av_program *compile(const char *text) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  if (!p) fail_msg("compile: %s", d.msg);
  return p;
}

static av_tensor vector_input(const float *x, int64_t n) {
  av_tensor t = {0};
  t.storage = av_storage_alloc_uninit(sizeof(float) * (size_t)n);
  assert_non_null(t.storage);
  memcpy(t.storage->data, x, sizeof(float) * (size_t)n);
  t.dtype = AV_DT_F32;
  t.rank = 1;
  t.dims[0] = n;
  return t;
}

static const char *chain_text =
    "func.func public @main(%x: tensor<3000xf32>) -> (tensor<3000xf32>, tensor<3000xf32>) {\n"
    "  %c = stablehlo.constant dense<1.5> : tensor<f32>\n"
    "  %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<3000xf32>\n"
    "  %h = stablehlo.constant dense<0.5> : tensor<f32>\n"
    "  %hb = stablehlo.broadcast_in_dim %h, dims = [] : (tensor<f32>) -> tensor<3000xf32>\n"
    "  %0 = stablehlo.multiply %x, %b : tensor<3000xf32>\n"
    "  %1 = stablehlo.add %0, %hb : tensor<3000xf32>\n"
    "  %2 = stablehlo.tanh %1 : tensor<3000xf32>\n"
    "  %3 = stablehlo.negate %x : tensor<3000xf32>\n"
    "  %4 = stablehlo.multiply %3, %x : tensor<3000xf32>\n"
    "  %5 = stablehlo.exponential %4 : tensor<3000xf32>\n"
    "  %6 = stablehlo.multiply %2, %5 : tensor<3000xf32>\n"
    "  %7 = stablehlo.compare GT, %6, %1 : (tensor<3000xf32>, tensor<3000xf32>) -> tensor<3000xi1>\n"
    "  %8 = stablehlo.select %7, %6, %b : tensor<3000xi1>, tensor<3000xf32>\n"
    "  return %8, %1 : tensor<3000xf32>, tensor<3000xf32>\n"
    "}\n";

static void test_chain_with_escaping_intermediate(void **state) {
  (void)state;
  float x[N];
  for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) * 0.002f;
  av_program *p = compile(chain_text);
  av_tensor in = vector_input(x, N), out[2];
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_program_execute(p, 0, &in, out, &d), AV_OK);
  const float *r = out[0].storage->data, *mid = out[1].storage->data;
  for (int i = 0; i < N; i++) {
    /* each op rounds to f32, as in the program; tanh/exp from libm in double */
    float one = x[i] * 1.5f + 0.5f;
    float sq = -x[i] * x[i];
    float v = (float)tanh((double)one) * (float)exp((double)sq);
    double want = v > one ? v : 1.5;
    if (mid[i] != one) fail_msg("element %d: intermediate %.9g, expected %.9g", i, mid[i], one);
    if (!(fabs(r[i] - want) <= 3e-7 * fabs(want) + 1e-30))
      fail_msg("element %d: %.9g, expected %.9g", i, r[i], want);
  }
  av_storage_release(out[0].storage);
  av_storage_release(out[1].storage);
  av_storage_release(in.storage);
  av_program_free(p);
}

/* Arithmetic pairs inside a fused chain (kernels/elementwise_pair.c): the intermediate is
 * the left operand of one pair and the right operand of another, an intermediate read twice
 * stays unpaired; every op rounds on its own, so the bits are those of the ops computed one
 * at a time here in the same order. */
static const char *pairs_text =
    "func.func public @main(%x: tensor<3000xf32>, %y: tensor<3000xf32>) -> tensor<3000xf32> {\n"
    "  %0 = stablehlo.divide %x, %y : tensor<3000xf32>\n"
    "  %1 = stablehlo.subtract %0, %y : tensor<3000xf32>\n"
    "  %2 = stablehlo.multiply %1, %x : tensor<3000xf32>\n"
    "  %3 = stablehlo.subtract %y, %2 : tensor<3000xf32>\n"
    "  %4 = stablehlo.add %x, %y : tensor<3000xf32>\n"
    "  %5 = stablehlo.multiply %4, %4 : tensor<3000xf32>\n"
    "  %6 = stablehlo.divide %5, %3 : tensor<3000xf32>\n"
    "  return %6 : tensor<3000xf32>\n"
    "}\n";

static void test_arithmetic_pairs(void **state) {
  (void)state;
  float x[N], y[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)(i - N / 2) * 0.0137f;
    y[i] = 1.0f + (float)(i % 17) * 0.31f;
  }
  av_program *p = compile(pairs_text);
  av_tensor in[2] = {vector_input(x, N), vector_input(y, N)}, out;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_program_execute(p, 0, in, &out, &d), AV_OK);
  const float *r = out.storage->data;
  for (int i = 0; i < N; i++) {
    float a = x[i] / y[i], b = a - y[i], c = b * x[i], e = y[i] - c, f = x[i] + y[i], g = f * f;
    float want = g / e;
    if (memcmp(&r[i], &want, sizeof want) != 0)
      fail_msg("element %d: %.9g, expected %.9g", i, r[i], want);
  }
  av_storage_release(out.storage);
  for (int k = 0; k < 2; k++) av_storage_release(in[k].storage);
  av_program_free(p);
}

/* Broadcast operands taken as one value (kernels/elementwise_bcast.c): a row broadcast on
 * either side of - and /, a scalar on the left. Rows of 1024 (a tile within one row: the
 * value path) and of 1000 (tiles across rows: the gathered path) must both give the bits of
 * the ops one at a time. */
static void broadcast_case(int cols) {
  char text[2048];
  snprintf(text, sizeof text,
           "func.func public @main(%%x: tensor<4x%dxf32>, %%r: tensor<4xf32>) -> (tensor<4x%dxf32>, tensor<4x%dxf32>) {\n"
           "  %%c = stablehlo.constant dense<2.5> : tensor<f32>\n"
           "  %%cb = stablehlo.broadcast_in_dim %%c, dims = [] : (tensor<f32>) -> tensor<4x%dxf32>\n"
           "  %%rb = stablehlo.broadcast_in_dim %%r, dims = [0] : (tensor<4xf32>) -> tensor<4x%dxf32>\n"
           "  %%0 = stablehlo.subtract %%x, %%rb : tensor<4x%dxf32>\n"
           "  %%1 = stablehlo.abs %%0 : tensor<4x%dxf32>\n"
           "  %%2 = stablehlo.divide %%cb, %%1 : tensor<4x%dxf32>\n"
           "  %%3 = stablehlo.negate %%2 : tensor<4x%dxf32>\n"
           "  %%4 = stablehlo.divide %%3, %%rb : tensor<4x%dxf32>\n"
           "  %%5 = stablehlo.sqrt %%1 : tensor<4x%dxf32>\n"
           "  %%6 = stablehlo.subtract %%rb, %%5 : tensor<4x%dxf32>\n"
           "  %%6a = stablehlo.abs %%6 : tensor<4x%dxf32>\n"
           "  %%7 = stablehlo.sqrt %%6a : tensor<4x%dxf32>\n"
           "  %%8 = stablehlo.subtract %%cb, %%7 : tensor<4x%dxf32>\n"
           "  %%9 = stablehlo.exponential %%8 : tensor<4x%dxf32>\n"
           "  %%10 = stablehlo.subtract %%9, %%4 : tensor<4x%dxf32>\n"
           "  return %%10, %%0 : tensor<4x%dxf32>, tensor<4x%dxf32>\n"
           "}\n",
           cols, cols, cols, cols, cols, cols, cols, cols, cols, cols, cols, cols, cols, cols, cols, cols,
           cols, cols, cols);
  enum { R = 4, MAXC = 1024 };
  static float x[R * MAXC], want[R * MAXC];
  float r[R] = {0.75f, -1.5f, 3.0f, 10.0f};
  for (int i = 0; i < R * cols; i++) x[i] = (float)((i * 37) % 101) * 0.05f - 2.0f;
  av_program *p = compile(text);
  av_tensor in[2] = {vector_input(x, R * cols), vector_input(r, R)}, outs[2];
  in[0].rank = 2;
  in[0].dims[0] = R;
  in[0].dims[1] = cols;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_program_execute(p, 0, in, outs, &d), AV_OK);
  /* the same ops in the same order; sqrt is correctly rounded, exp within 1 ulp */
  const float *got = outs[0].storage->data, *diff = outs[1].storage->data;
  for (int i = 0; i < R * cols; i++) {
    float rb = r[i / cols], a = fabsf(x[i] - rb), q = -(2.5f / a) / rb;
    if (diff[i] != x[i] - rb) fail_msg("cols %d element %d: x - r is %.9g", cols, i, diff[i]);
    float ex = (float)exp((double)(2.5f - sqrtf(fabsf(rb - sqrtf(a)))));
    want[i] = ex - q; /* anvil's exp is within 1 ulp: a tolerance on that term */
    float w = want[i];
    if (isnan(w) ? !isnan(got[i]) : got[i] != w && !(fabsf(got[i] - w) <= 3e-7f * (fabsf(ex) + fabsf(q))))
      fail_msg("cols %d element %d: %.9g, expected %.9g", cols, i, got[i], w);
  }
  for (int k = 0; k < 2; k++) {
    av_storage_release(outs[k].storage);
    av_storage_release(in[k].storage);
  }
  av_program_free(p);
}

static void test_broadcast_operands(void **state) {
  (void)state;
  broadcast_case(1024);
  broadcast_case(1000);
}

/* while (i < 5) { v = v * 0.5 + 1 } on 3000 elements: the body's chain is fused, its input
 * (the loop-carried value) dies inside it. */
static const char *loop_text =
    "func.func public @main(%x: tensor<3000xf32>) -> tensor<3000xf32> {\n"
    "  %z = stablehlo.constant dense<0> : tensor<i32>\n"
    "  %r:2 = stablehlo.while(%i = %z, %v = %x) : tensor<i32>, tensor<3000xf32>\n"
    "   cond {\n"
    "    %five = stablehlo.constant dense<5> : tensor<i32>\n"
    "    %lt = stablehlo.compare LT, %i, %five : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
    "    stablehlo.return %lt : tensor<i1>\n"
    "  } do {\n"
    "    %one = stablehlo.constant dense<1> : tensor<i32>\n"
    "    %i1 = stablehlo.add %i, %one : tensor<i32>\n"
    "    %h = stablehlo.constant dense<0.5> : tensor<f32>\n"
    "    %hb = stablehlo.broadcast_in_dim %h, dims = [] : (tensor<f32>) -> tensor<3000xf32>\n"
    "    %o = stablehlo.constant dense<1.0> : tensor<f32>\n"
    "    %ob = stablehlo.broadcast_in_dim %o, dims = [] : (tensor<f32>) -> tensor<3000xf32>\n"
    "    %m = stablehlo.multiply %v, %hb : tensor<3000xf32>\n"
    "    %a = stablehlo.add %m, %ob : tensor<3000xf32>\n"
    "    stablehlo.return %i1, %a : tensor<i32>, tensor<3000xf32>\n"
    "  }\n"
    "  return %r#1 : tensor<3000xf32>\n"
    "}\n";

static void test_chain_in_loop_body(void **state) {
  (void)state;
  float x[N];
  for (int i = 0; i < N; i++) x[i] = (float)i;
  av_program *p = compile(loop_text);
  av_tensor in = vector_input(x, N), out;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_program_execute(p, 0, &in, &out, &d), AV_OK);
  const float *r = out.storage->data;
  for (int i = 0; i < N; i++) {
    double v = x[i];
    for (int k = 0; k < 5; k++) v = v * 0.5 + 1; /* exact in f32 for these values */
    if (r[i] != (float)v) fail_msg("element %d: %.9g, expected %.9g", i, r[i], v);
  }
  av_storage_release(out.storage);
  av_storage_release(in.storage);
  av_program_free(p);
}

/* Row and column broadcasts feeding the chain (softmax-like): out = exp(x - rowmax) / colsum
 * for a 37 x 101 input (tiles end mid-row), with broadcasts [37] -> [37,101] (dims [0]) and
 * [101] -> [37,101] (dims [1]) and a [37,1] -> [37,101] one. */
static const char *bcast_text =
    "func.func public @main(%x: tensor<37x101xf32>, %r: tensor<37xf32>, %c: tensor<101xf32>,"
    " %q: tensor<37x1xf32>) -> tensor<37x101xf32> {\n"
    "  %rb = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<37xf32>) -> tensor<37x101xf32>\n"
    "  %cb = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<101xf32>) -> tensor<37x101xf32>\n"
    "  %qb = stablehlo.broadcast_in_dim %q, dims = [0, 1] : (tensor<37x1xf32>) -> tensor<37x101xf32>\n"
    "  %0 = stablehlo.subtract %x, %rb : tensor<37x101xf32>\n"
    "  %1 = stablehlo.exponential %0 : tensor<37x101xf32>\n"
    "  %2 = stablehlo.divide %1, %cb : tensor<37x101xf32>\n"
    "  %3 = stablehlo.add %2, %qb : tensor<37x101xf32>\n"
    "  return %3 : tensor<37x101xf32>\n"
    "}\n";

static void test_row_and_column_broadcasts(void **state) {
  (void)state;
  enum { R = 37, C = 101 };
  static float x[R * C];
  float rv[R], cv[C], qv[R];
  for (int i = 0; i < R * C; i++) x[i] = (float)((i * 7) % 23) * 0.1f;
  for (int i = 0; i < R; i++) rv[i] = (float)i * 0.05f, qv[i] = (float)i;
  for (int j = 0; j < C; j++) cv[j] = 1.0f + (float)j;
  av_program *p = compile(bcast_text);
  av_tensor in[4] = {vector_input(x, R * C), vector_input(rv, R), vector_input(cv, C), vector_input(qv, R)};
  in[0].rank = 2, in[0].dims[0] = R, in[0].dims[1] = C;
  in[3].rank = 2, in[3].dims[0] = R, in[3].dims[1] = 1;
  av_tensor out;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_program_execute(p, 0, in, &out, &d), AV_OK);
  const float *o = out.storage->data;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      float e = (float)exp((double)(x[i * C + j] - rv[i]));
      float want = e / cv[j] + qv[i];
      float got = o[i * C + j];
      if (!(fabsf(got - want) <= 2.5e-7f * fabsf(want)))
        fail_msg("[%d,%d]: %.9g, expected %.9g", i, j, got, want);
    }
  av_storage_release(out.storage);
  for (int k = 0; k < 4; k++) av_storage_release(in[k].storage);
  av_program_free(p);
}

/* Pairwise differences as n-body writes them: p[None, :, :] - p[:, None, :] over (N, N, 3),
 * a broadcast whose source rows are contiguous (axes merged into one run) and one that
 * repeats a row (copied over the repeats by doubling), times q[:, :, None] (each element
 * repeated over a short last axis), across tile boundaries. */
static const char *pairwise_text =
    "func.func public @main(%p: tensor<45x3xf32>, %q: tensor<45x45xf32>) -> tensor<45x45x3xf32> {\n"
    "  %a = stablehlo.broadcast_in_dim %p, dims = [1, 2] : (tensor<45x3xf32>) -> tensor<45x45x3xf32>\n"
    "  %b = stablehlo.broadcast_in_dim %p, dims = [0, 2] : (tensor<45x3xf32>) -> tensor<45x45x3xf32>\n"
    "  %c = stablehlo.broadcast_in_dim %q, dims = [0, 1] : (tensor<45x45xf32>) -> tensor<45x45x3xf32>\n"
    "  %d = stablehlo.subtract %a, %b : tensor<45x45x3xf32>\n"
    "  %s = stablehlo.multiply %d, %c : tensor<45x45x3xf32>\n"
    "  return %s : tensor<45x45x3xf32>\n"
    "}\n";

static void test_pairwise_broadcasts(void **state) {
  (void)state;
  enum { P = 45 };
  float x[P * 3], q[P * P];
  for (int i = 0; i < P * 3; i++) x[i] = (float)((i * 13) % 29) * 0.25f - 3.0f;
  for (int i = 0; i < P * P; i++) q[i] = (float)((i * 7) % 31) * 0.5f;
  av_program *p = compile(pairwise_text);
  av_tensor in[2] = {vector_input(x, P * 3), vector_input(q, P * P)}, out;
  in[0].rank = 2, in[0].dims[0] = P, in[0].dims[1] = 3;
  in[1].rank = 2, in[1].dims[0] = P, in[1].dims[1] = P;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_program_execute(p, 0, in, &out, &d), AV_OK);
  const float *o = out.storage->data;
  for (int i = 0; i < P; i++)
    for (int j = 0; j < P; j++)
      for (int k = 0; k < 3; k++) {
        float want = (x[j * 3 + k] - x[i * 3 + k]) * q[i * P + j];
        if (o[(i * P + j) * 3 + k] != want)
          fail_msg("[%d,%d,%d]: %.9g, expected %.9g", i, j, k, o[(i * P + j) * 3 + k], want);
      }
  av_storage_release(out.storage);
  av_storage_release(in[0].storage);
  av_storage_release(in[1].storage);
  av_program_free(p);
}

/* Rows of a stacked state read through slice + squeeze (as an ODE's f(y) reads y[0], y[1],
 * y[2]): the slices become boxes of the fused group (read in place by generated code), not
 * copies; checked against the arithmetic in the test, across tiles. */
static const char *rows_text =
    "func.func public @main(%y: tensor<3x2500xf32>) -> tensor<2500xf32> {\n"
    "  %a = stablehlo.slice %y [0:1, 0:2500] : (tensor<3x2500xf32>) -> tensor<1x2500xf32>\n"
    "  %b = stablehlo.slice %y [1:2, 0:2500] : (tensor<3x2500xf32>) -> tensor<1x2500xf32>\n"
    "  %c = stablehlo.slice %y [2:3, 0:2500] : (tensor<3x2500xf32>) -> tensor<1x2500xf32>\n"
    "  %a1 = stablehlo.reshape %a : (tensor<1x2500xf32>) -> tensor<2500xf32>\n"
    "  %b1 = stablehlo.reshape %b : (tensor<1x2500xf32>) -> tensor<2500xf32>\n"
    "  %c1 = stablehlo.reshape %c : (tensor<1x2500xf32>) -> tensor<2500xf32>\n"
    "  %m = stablehlo.multiply %a1, %b1 : tensor<2500xf32>\n"
    "  %s = stablehlo.subtract %m, %c1 : tensor<2500xf32>\n"
    "  return %s : tensor<2500xf32>\n"
    "}\n";

static void test_slice_rows(void **state) {
  (void)state;
  enum { C = 2500 };
  static float y[3 * C];
  for (int i = 0; i < 3 * C; i++) y[i] = (float)((i * 17) % 41) * 0.125f - 2.0f;
  av_program *p = compile(rows_text);
  av_tensor in = vector_input(y, 3 * C), out;
  in.rank = 2, in.dims[0] = 3, in.dims[1] = C;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_program_execute(p, 0, &in, &out, &d), AV_OK);
  const float *o = out.storage->data;
  for (int j = 0; j < C; j++) {
    float want = y[j] * y[C + j] - y[2 * C + j];
    if (o[j] != want) fail_msg("[%d]: %.9g, expected %.9g", j, o[j], want);
  }
  av_storage_release(out.storage);
  av_storage_release(in.storage);
  av_program_free(p);
}

/* Splat constants and scalar broadcasts read on both sides of a loop (compiler/lower_ops.c:
 * a splat is a broadcast of its element; compose_boxes.c: each elementwise reader gets its
 * own copy, so groups on either side read the scalar): %b is also read inside the loop body
 * (a read the loop step does not list), so it must still be made before the loop; %c is
 * read by three groups. Results in f32 arithmetic here, exact for these values. */
static const char *splat_text =
    "func.func public @main(%x: tensor<3000xf32>) -> (tensor<3000xf32>, tensor<3000xf32>) {\n"
    "  %c = stablehlo.constant dense<2.0> : tensor<3000xf32>\n"
    "  %h = stablehlo.constant dense<0.5> : tensor<f32>\n"
    "  %b = stablehlo.broadcast_in_dim %h, dims = [] : (tensor<f32>) -> tensor<3000xf32>\n"
    "  %0 = stablehlo.multiply %x, %c : tensor<3000xf32>\n"
    "  %z = stablehlo.constant dense<0> : tensor<i32>\n"
    "  %r:2 = stablehlo.while(%i = %z, %v = %0) : tensor<i32>, tensor<3000xf32>\n"
    "   cond {\n"
    "    %three = stablehlo.constant dense<3> : tensor<i32>\n"
    "    %lt = stablehlo.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
    "    stablehlo.return %lt : tensor<i1>\n"
    "  } do {\n"
    "    %one = stablehlo.constant dense<1> : tensor<i32>\n"
    "    %i1 = stablehlo.add %i, %one : tensor<i32>\n"
    "    %a = stablehlo.add %v, %b : tensor<3000xf32>\n"
    "    stablehlo.return %i1, %a : tensor<i32>, tensor<3000xf32>\n"
    "  }\n"
    "  %1 = stablehlo.subtract %r#1, %b : tensor<3000xf32>\n"
    "  %2 = stablehlo.multiply %1, %c : tensor<3000xf32>\n"
    "  %3 = stablehlo.add %x, %c : tensor<3000xf32>\n"
    "  return %2, %3 : tensor<3000xf32>, tensor<3000xf32>\n"
    "}\n";

static void test_splats_across_a_loop(void **state) {
  (void)state;
  float x[N];
  for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) * 0.25f;
  av_program *p = compile(splat_text);
  av_tensor in = vector_input(x, N), out[2];
  av_diag d;
  av_diag_init(&d);
  for (int run = 0; run < 2; run++) { /* the second run reuses the plan's storage */
    assert_int_equal(av_program_execute(p, 0, &in, out, &d), AV_OK);
    const float *r = out[0].storage->data, *s = out[1].storage->data;
    for (int i = 0; i < N; i++) {
      float want = (x[i] * 2.0f + 0.5f + 0.5f + 0.5f - 0.5f) * 2.0f, want2 = x[i] + 2.0f;
      if (r[i] != want) fail_msg("element %d: %.9g, expected %.9g", i, r[i], want);
      if (s[i] != want2) fail_msg("element %d: %.9g, expected %.9g", i, s[i], want2);
    }
    av_storage_release(out[0].storage);
    av_storage_release(out[1].storage);
  }
  av_storage_release(in.storage);
  av_program_free(p);
}

/* A column of predicates broadcast over rows (jnp.where(accept[:, None], prop, x) of an MCMC
 * step): the one-byte elements expand row by row inside the fused select; 301 rows of 16 end
 * tiles mid-row. */
static const char *where_text =
    "func.func public @main(%v: tensor<301xf32>, %a: tensor<301x16xf32>, %b: tensor<301x16xf32>)"
    " -> tensor<301x16xf32> {\n"
    "  %z = stablehlo.constant dense<0.0> : tensor<301xf32>\n"
    "  %p = stablehlo.compare GT, %v, %z : (tensor<301xf32>, tensor<301xf32>) -> tensor<301xi1>\n"
    "  %pb = stablehlo.broadcast_in_dim %p, dims = [0] : (tensor<301xi1>) -> tensor<301x16xi1>\n"
    "  %s = stablehlo.select %pb, %a, %b : tensor<301x16xi1>, tensor<301x16xf32>\n"
    "  return %s : tensor<301x16xf32>\n"
    "}\n";

static void test_where_column_of_pred(void **state) {
  (void)state;
  enum { R = 301, C = 16 };
  static float v[R], a[R * C], b[R * C];
  for (int i = 0; i < R; i++) v[i] = (float)((i * 7) % 5) - 2.0f;
  for (int i = 0; i < R * C; i++) a[i] = (float)i, b[i] = -(float)i;
  av_program *p = compile(where_text);
  av_tensor in[3] = {vector_input(v, R), vector_input(a, R * C), vector_input(b, R * C)}, out;
  for (int q = 1; q < 3; q++) in[q].rank = 2, in[q].dims[0] = R, in[q].dims[1] = C;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_program_execute(p, 0, in, &out, &d), AV_OK);
  const float *o = out.storage->data;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      float want = v[i] > 0 ? a[i * C + j] : b[i * C + j];
      if (o[i * C + j] != want) fail_msg("[%d,%d]: %.9g, expected %.9g", i, j, o[i * C + j], want);
    }
  av_storage_release(out.storage);
  for (int q = 0; q < 3; q++) av_storage_release(in[q].storage);
  av_program_free(p);
}

/* compose_boxes.c merges slice -> reshape -> broadcast into one box read where the broadcast
 * was, after %t, the last op that reads %x, released it: %x must live until the merged box
 * (jax.experimental.ode's batched gradient read freed storage there, a SIGSEGV). */
static const char *late_box_text =
    "func.func public @main(%x: tensor<100xf32>) -> (tensor<96xf32>, tensor<3x2x2xf32>) {\n"
    "  %s = stablehlo.slice %x [0:4] : (tensor<100xf32>) -> tensor<4xf32>\n"
    "  %r = stablehlo.reshape %s : (tensor<4xf32>) -> tensor<2x2xf32>\n"
    "  %t = stablehlo.slice %x [4:100] : (tensor<100xf32>) -> tensor<96xf32>\n"
    "  %n = stablehlo.negate %t : tensor<96xf32>\n"
    "  %b = stablehlo.broadcast_in_dim %r, dims = [1, 2] : (tensor<2x2xf32>) -> tensor<3x2x2xf32>\n"
    "  return %n, %b : tensor<96xf32>, tensor<3x2x2xf32>\n"
    "}\n";

static void test_merged_box_after_last_read(void **state) {
  (void)state;
  float x[100];
  for (int i = 0; i < 100; i++) x[i] = (float)i + 0.5f;
  av_program *p = compile(late_box_text);
  av_tensor in = vector_input(x, 100), out[2];
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_program_execute(p, 0, &in, out, &d), AV_OK);
  const float *n = out[0].storage->data, *b = out[1].storage->data;
  for (int i = 0; i < 96; i++)
    if (n[i] != -x[4 + i]) fail_msg("negate [%d]: %.9g", i, n[i]);
  for (int i = 0; i < 12; i++)
    if (b[i] != x[i % 4]) fail_msg("broadcast [%d]: %.9g, expected %.9g", i, b[i], x[i % 4]);
  av_storage_release(out[0].storage);
  av_storage_release(out[1].storage);
  av_storage_release(in.storage);
  av_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slice_rows),
      cmocka_unit_test(test_merged_box_after_last_read),
      cmocka_unit_test(test_splats_across_a_loop),
      cmocka_unit_test(test_where_column_of_pred),
      cmocka_unit_test(test_pairwise_broadcasts),
      cmocka_unit_test(test_chain_with_escaping_intermediate),
      cmocka_unit_test(test_arithmetic_pairs),
      cmocka_unit_test(test_broadcast_operands),
      cmocka_unit_test(test_chain_in_loop_body),
      cmocka_unit_test(test_row_and_column_broadcasts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
