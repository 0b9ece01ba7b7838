/* While loops and calls: the fast paths (conditions and whole loops run as register programs,
 * carried arrays updated in place, arguments moved into called functions) must keep every
 * value the program can still see intact. Expected values are worked out by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/program.h"

static av_program *compile(const char *text) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  if (!p) fail_msg("compile: %s", d.msg);
  return p;
}

static av_tensor input(av_dtype dt, int rank, int64_t n, const void *data, size_t nbytes) {
  av_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = rank;
  if (rank) t.dims[0] = n;
  t.storage = av_storage_alloc(nbytes);
  assert_non_null(t.storage);
  memcpy(t.storage->data, data, nbytes);
  return t;
}

static void run(av_program *p, const av_tensor *in, av_tensor *out) {
  av_diag d;
  av_diag_init(&d);
  if (av_program_execute(p, 0, in, out, &d) != AV_OK) fail_msg("execute: %s", d.msg);
}

/* Counter and accumulator are scalars: condition and body both become register programs.
 * The loop reads a captured scalar (the step). sum over i = 0..9 of 0.5 * i = 22.5. */
static void test_scalar_loop(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%i0: tensor<i32>, %acc0: tensor<f32>, %step: tensor<f32>) -> (tensor<i32>, tensor<f32>) {\n"
      "  %ten = \"stablehlo.constant\"() {value = dense<10> : tensor<i32>} : () -> tensor<i32>\n"
      "  %one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "  %r:2 = \"stablehlo.while\"(%i0, %acc0) ({\n"
      "  ^bb0(%i: tensor<i32>, %acc: tensor<f32>):\n"
      "    %lt = \"stablehlo.compare\"(%i, %ten) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    \"stablehlo.return\"(%lt) : (tensor<i1>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%i: tensor<i32>, %acc: tensor<f32>):\n"
      "    %fi = \"stablehlo.convert\"(%i) : (tensor<i32>) -> tensor<f32>\n"
      "    %t = \"stablehlo.multiply\"(%fi, %step) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "    %a = \"stablehlo.add\"(%acc, %t) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "    %n = \"stablehlo.add\"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    \"stablehlo.return\"(%n, %a) : (tensor<i32>, tensor<f32>) -> ()\n"
      "  }) : (tensor<i32>, tensor<f32>) -> (tensor<i32>, tensor<f32>)\n"
      "  \"func.return\"(%r#0, %r#1) : (tensor<i32>, tensor<f32>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  int32_t i0 = 0;
  float acc0 = 0.0f, step = 0.5f;
  av_tensor in[3] = {input(AV_DT_S32, 0, 1, &i0, 4), input(AV_DT_F32, 0, 1, &acc0, 4),
                     input(AV_DT_F32, 0, 1, &step, 4)};
  for (int rep = 0; rep < 2; rep++) { /* the inputs must survive the first run */
    av_tensor out[2];
    run(p, in, out);
    assert_int_equal(*(int32_t *)out[0].storage->data, 10);
    assert_true(*(float *)out[1].storage->data == 22.5f);
    av_storage_release(out[0].storage);
    av_storage_release(out[1].storage);
  }
  assert_int_equal(*(int32_t *)in[0].storage->data, 0);
  assert_true(*(float *)in[1].storage->data == 0.0f);
  /* a loop that never runs returns its inputs */
  int32_t big = 50;
  memcpy(in[0].storage->data, &big, 4);
  av_tensor out[2];
  run(p, in, out);
  assert_int_equal(*(int32_t *)out[0].storage->data, 50);
  assert_true(*(float *)out[1].storage->data == 0.0f);
  for (int i = 0; i < 2; i++) av_storage_release(out[i].storage);
  for (int i = 0; i < 3; i++) av_storage_release(in[i].storage);
  av_program_free(p);
}


/* The register program's inline ops (scalar_prog.c run_fast) keep their kernels' semantics:
 * 32-bit wrap-around, unsigned comparison of ui32, IEEE comparisons with NaN, f64 division.
 * Four iterations; every expected value is worked out by hand in the comments. */
static void test_scalar_loop_inline_ops(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%w0: tensor<i32>, %u0: tensor<ui32>, %x0: tensor<f32>, %d0: tensor<f64>) -> (tensor<i32>, tensor<i32>, tensor<ui32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<f64>) {\n"
      "  %z = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
      "  %one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "  %four = \"stablehlo.constant\"() {value = dense<4> : tensor<i32>} : () -> tensor<i32>\n"
      "  %three = \"stablehlo.constant\"() {value = dense<3> : tensor<ui32>} : () -> tensor<ui32>\n"
      "  %five = \"stablehlo.constant\"() {value = dense<5> : tensor<ui32>} : () -> tensor<ui32>\n"
      "  %two = \"stablehlo.constant\"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>\n"
      "  %thr = \"stablehlo.constant\"() {value = dense<3.0> : tensor<f64>} : () -> tensor<f64>\n"
      "  %r:8 = \"stablehlo.while\"(%z, %w0, %u0, %z, %x0, %z, %z, %d0) ({\n"
      "  ^bb0(%n: tensor<i32>, %w: tensor<i32>, %u: tensor<ui32>, %c1: tensor<i32>, %x: tensor<f32>, %c2: tensor<i32>, %c3: tensor<i32>, %d: tensor<f64>):\n"
      "    %lt = \"stablehlo.compare\"(%n, %four) {comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    \"stablehlo.return\"(%lt) : (tensor<i1>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%n: tensor<i32>, %w: tensor<i32>, %u: tensor<ui32>, %c1: tensor<i32>, %x: tensor<f32>, %c2: tensor<i32>, %c3: tensor<i32>, %d: tensor<f64>):\n"
      "    %n1 = \"stablehlo.add\"(%n, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    %w1 = \"stablehlo.add\"(%w, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    %u1 = \"stablehlo.multiply\"(%u, %three) : (tensor<ui32>, tensor<ui32>) -> tensor<ui32>\n"
      "    %gt = \"stablehlo.compare\"(%u, %five) {comparison_direction = #stablehlo<comparison_direction GT>} : (tensor<ui32>, tensor<ui32>) -> tensor<i1>\n"
      "    %gti = \"stablehlo.convert\"(%gt) : (tensor<i1>) -> tensor<i32>\n"
      "    %c1n = \"stablehlo.add\"(%c1, %gti) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    %ne = \"stablehlo.compare\"(%x, %x) {comparison_direction = #stablehlo<comparison_direction NE>} : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
      "    %nei = \"stablehlo.convert\"(%ne) : (tensor<i1>) -> tensor<i32>\n"
      "    %c2n = \"stablehlo.add\"(%c2, %nei) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    %xl = \"stablehlo.compare\"(%x, %two) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
      "    %xli = \"stablehlo.convert\"(%xl) : (tensor<i1>) -> tensor<i32>\n"
      "    %c3n = \"stablehlo.add\"(%c3, %xli) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    %xm = \"stablehlo.subtract\"(%x, %x) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "    %x1 = \"stablehlo.divide\"(%xm, %xm) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "    %d1 = \"stablehlo.divide\"(%d, %thr) : (tensor<f64>, tensor<f64>) -> tensor<f64>\n"
      "    \"stablehlo.return\"(%n1, %w1, %u1, %c1n, %x1, %c2n, %c3n, %d1) : (tensor<i32>, tensor<i32>, tensor<ui32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<i32>, tensor<f64>) -> ()\n"
      "  }) : (tensor<i32>, tensor<i32>, tensor<ui32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<i32>, tensor<f64>) -> (tensor<i32>, tensor<i32>, tensor<ui32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<i32>, tensor<f64>)\n"
      "  \"func.return\"(%r#0, %r#1, %r#2, %r#3, %r#5, %r#6, %r#7) : (tensor<i32>, tensor<i32>, tensor<ui32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<f64>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  int32_t w0 = 2147483646;
  uint32_t u0 = 0xFFFFFFFEu;
  float x0 = 1.0f;
  double d0 = 1.0;
  av_tensor in[4] = {input(AV_DT_S32, 0, 1, &w0, 4), input(AV_DT_U32, 0, 1, &u0, 4),
                     input(AV_DT_F32, 0, 1, &x0, 4), input(AV_DT_F64, 0, 1, &d0, 8)};
  av_tensor out[7];
  run(p, in, out);
  assert_int_equal(*(int32_t *)out[0].storage->data, 4);
  /* 2147483646 + 4 wraps to -2147483646 */
  assert_int_equal(*(int32_t *)out[1].storage->data, -2147483646);
  /* (-2) * 3^4 = -162 mod 2^32 */
  assert_int_equal(*(uint32_t *)out[2].storage->data, 0xFFFFFF5Eu);
  /* u = 0xFFFFFFFE, ...FA, ...EE, ...CA: all above 5 unsigned (all below as signed) */
  assert_int_equal(*(int32_t *)out[3].storage->data, 4);
  /* x = 1, then (x - x) / (x - x) = 0/0 = NaN for the other three: NaN != NaN three times, */
  assert_int_equal(*(int32_t *)out[4].storage->data, 3);
  /* and x < 2 holds only for x = 1 (every comparison with NaN is false) */
  assert_int_equal(*(int32_t *)out[5].storage->data, 1);
  volatile double want = 1.0;
  for (int k = 0; k < 4; k++) want = want / 3.0;
  assert_true(*(double *)out[6].storage->data == want);
  for (int k = 0; k < 7; k++) av_storage_release(out[k].storage);
  for (int k = 0; k < 4; k++) av_storage_release(in[k].storage);
  av_program_free(p);
}


/* A loop over small arrays runs as one register program (runtime/loop_prog.c): the carried
 * values must come out as the step-by-step semantics give them when the body swaps values
 * (b' = a reads the old a), returns one value twice (a' and h'), rewrites a value computed
 * by a call every iteration (g', swapped buffers), passes one through (k'), and reads captured
 * arrays and scalars, a scalar predicate, an array predicate, a convert and a reshape, and
 * calls one function twice. Three iterations, worked out by hand:
 *   i=0: a=[1,2,3,4] b=0 -> a'=0*0.5+K=[1,2,3,4] b'=[1,2,3,4] d'=c e'=[1,2,3,4] g'=K
 *   i=1: a'=0.5*[1,2,3,4]+K=[1.5,3,4.5,6] b'=[1,2,3,4] d'=a=[1,2,3,4] e'=b g'=K*c+K
 *   i=2: a'=[1.5,3,4.5,6] b'=[1.5,3,4.5,6] d'=a e'=a (a > b everywhere) g'=g*c+K */
static void test_array_loop_program(void **state) {
  (void)state;
  static const char text[] =
      "func.func private @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %K = \"stablehlo.constant\"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>\n"
      "  %p = \"stablehlo.multiply\"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "  %r = \"stablehlo.add\"(%p, %K) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "  \"func.return\"(%r) : (tensor<4xf32>) -> ()\n"
      "}\n"
      "func.func public @main(%i0: tensor<i32>, %a0: tensor<4xf32>, %c: tensor<4xf32>, %s: tensor<f32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xi32>) {\n"
      "  %z = \"stablehlo.constant\"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>\n"
      "  %zi = \"stablehlo.constant\"() {value = dense<0> : tensor<2x2xi32>} : () -> tensor<2x2xi32>\n"
      "  %three = \"stablehlo.constant\"() {value = dense<3> : tensor<i32>} : () -> tensor<i32>\n"
      "  %one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "  %r:9 = \"stablehlo.while\"(%i0, %a0, %z, %a0, %z, %z, %z, %z, %zi) ({\n"
      "  ^bb0(%i: tensor<i32>, %a: tensor<4xf32>, %b: tensor<4xf32>, %k: tensor<4xf32>, %d: tensor<4xf32>, %e: tensor<4xf32>, %g: tensor<4xf32>, %h: tensor<4xf32>, %m: tensor<2x2xi32>):\n"
      "    %lt = \"stablehlo.compare\"(%i, %three) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    \"stablehlo.return\"(%lt) : (tensor<i1>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%i: tensor<i32>, %a: tensor<4xf32>, %b: tensor<4xf32>, %k: tensor<4xf32>, %d: tensor<4xf32>, %e: tensor<4xf32>, %g: tensor<4xf32>, %h: tensor<4xf32>, %m: tensor<2x2xi32>):\n"
      "    %i1 = \"stablehlo.add\"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    %sb = \"stablehlo.broadcast_in_dim\"(%s) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4xf32>\n"
      "    %a1 = \"func.call\"(%b, %sb) {callee = @f} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "    %lt1 = \"stablehlo.compare\"(%i, %one) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    %d1 = \"stablehlo.select\"(%lt1, %c, %a) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "    %gt = \"stablehlo.compare\"(%a, %b) {comparison_direction = #stablehlo<comparison_direction GT>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>\n"
      "    %e1 = \"stablehlo.select\"(%gt, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "    %g1 = \"func.call\"(%g, %c) {callee = @f} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "    %cv = \"stablehlo.convert\"(%a1) : (tensor<4xf32>) -> tensor<4xi32>\n"
      "    %m1 = \"stablehlo.reshape\"(%cv) : (tensor<4xi32>) -> tensor<2x2xi32>\n"
      "    \"stablehlo.return\"(%i1, %a1, %a, %k, %d1, %e1, %g1, %a1, %m1) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xi32>) -> ()\n"
      "  }) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xi32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xi32>)\n"
      "  \"func.return\"(%r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %r#6, %r#7, %r#8) : (tensor<i32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xi32>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  int32_t i0 = 0;
  float a0[4] = {1, 2, 3, 4}, c[4] = {10, 20, 30, 40}, s = 0.5f;
  av_tensor in[4] = {input(AV_DT_S32, 0, 1, &i0, 4), input(AV_DT_F32, 1, 4, a0, 16),
                     input(AV_DT_F32, 1, 4, c, 16), input(AV_DT_F32, 0, 1, &s, 4)};
  static const float zero[4], last[4] = {1.5f, 3, 4.5f, 6}, g[4] = {111, 842, 2793, 6564};
  const float *want3[8] = {last, last, a0, last, last, g, last};
  const float *want0[8] = {a0, zero, a0, zero, zero, zero, zero};
  for (int start = 0; start <= 5; start += 5) { /* three iterations, then none */
    memcpy(in[0].storage->data, &start, 4);
    av_tensor out[9];
    run(p, in, out);
    assert_int_equal(*(int32_t *)out[0].storage->data, start ? 5 : 3);
    for (int k = 0; k < 7; k++)
      if (memcmp(out[1 + k].storage->data, (start ? want0 : want3)[k], 16) != 0)
        fail_msg("start %d: output %d is [%g %g %g %g]", start, 1 + k,
                 ((float *)out[1 + k].storage->data)[0], ((float *)out[1 + k].storage->data)[1],
                 ((float *)out[1 + k].storage->data)[2], ((float *)out[1 + k].storage->data)[3]);
    static const int32_t m3[4] = {1, 3, 4, 6}, m0[4] = {0, 0, 0, 0};
    assert_memory_equal(out[8].storage->data, start ? m0 : m3, 16);
    for (int k = 0; k < 9; k++) av_storage_release(out[k].storage);
  }
  assert_memory_equal(in[1].storage->data, a0, 16); /* inputs untouched */
  for (int k = 0; k < 4; k++) av_storage_release(in[k].storage);
  av_program_free(p);
}


/* Counted loops (runtime/loop_prog.h): `i < limit` or `i <= limit` with i advanced by a
 * captured step runs without evaluating the condition, and, when nothing else reads i,
 * without the increment; the iteration count and the final i must be those of the plain
 * loop, simulated here step by step. `uses` makes the body read i (the increment stays). */
static void counted_case(const char *ty, const char *dir, bool uses, int64_t start, int64_t limit,
                         int64_t step) {
  char text[4096];
  const char *use = uses ? "    %ci = \"stablehlo.convert\"(%i) : (tensor<T>) -> tensor<f32>\n"
                           "    %n1 = \"stablehlo.add\"(%n, %ci) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
                         : "    %n1 = \"stablehlo.add\"(%n, %onef) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n";
  char body[512];
  snprintf(body, sizeof body, "%s", use);
  snprintf(text, sizeof text,
           "func.func public @main(%%i0: tensor<T>, %%lim: tensor<T>, %%st: tensor<T>) -> (tensor<T>, tensor<f32>) {\n"
           "  %%z = \"stablehlo.constant\"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>\n"
           "  %%onef = \"stablehlo.constant\"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>\n"
           "  %%r:2 = \"stablehlo.while\"(%%i0, %%z) ({\n"
           "  ^bb0(%%i: tensor<T>, %%n: tensor<f32>):\n"
           "    %%c = \"stablehlo.compare\"(%%i, %%lim) {comparison_direction = #stablehlo<comparison_direction %s>} : (tensor<T>, tensor<T>) -> tensor<i1>\n"
           "    \"stablehlo.return\"(%%c) : (tensor<i1>) -> ()\n"
           "  }, {\n"
           "  ^bb0(%%i: tensor<T>, %%n: tensor<f32>):\n"
           "%s"
           "    %%i1 = \"stablehlo.add\"(%%st, %%i) : (tensor<T>, tensor<T>) -> tensor<T>\n"
           "    \"stablehlo.return\"(%%i1, %%n1) : (tensor<T>, tensor<f32>) -> ()\n"
           "  }) : (tensor<T>, tensor<f32>) -> (tensor<T>, tensor<f32>)\n"
           "  \"func.return\"(%%r#0, %%r#1) : (tensor<T>, tensor<f32>) -> ()\n"
           "}\n",
           dir, body);
  /* the element type everywhere */
  char typed[4096];
  size_t o = 0;
  for (const char *c = text; *c && o + 4 < sizeof typed; c++) {
    if (c[0] == '<' && c[1] == 'T' && c[2] == '>') {
      o += (size_t)snprintf(typed + o, sizeof typed - o, "<%s>", ty);
      c += 2;
    } else {
      typed[o++] = *c;
    }
  }
  typed[o] = 0;
  av_program *p = compile(typed);
  bool wide = strcmp(ty, "i64") == 0;
  av_dtype dt = wide ? AV_DT_S64 : AV_DT_S32;
  size_t es = wide ? 8 : 4;
  int32_t v32[3] = {(int32_t)start, (int32_t)limit, (int32_t)step};
  int64_t v64[3] = {start, limit, step};
  av_tensor in[3];
  for (int k = 0; k < 3; k++) in[k] = input(dt, 0, 1, wide ? (void *)&v64[k] : (void *)&v32[k], es);
  av_tensor out[2];
  run(p, in, out);
  /* the plain loop */
  bool le = strcmp(dir, "LE") == 0;
  int64_t i = start;
  float n = 0;
  while (le ? i <= limit : i < limit) {
    n += uses ? (float)i : 1.0f;
    i += step;
  }
  int64_t got = 0;
  memcpy(&got, out[0].storage->data, es);
  if (!wide) got = (int32_t)got;
  if (got != i || *(float *)out[1].storage->data != n)
    fail_msg("%s %s uses=%d start %lld limit %lld step %lld: i %lld (want %lld), n %g (want %g)",
             ty, dir, uses, (long long)start, (long long)limit, (long long)step, (long long)got,
             (long long)i, *(float *)out[1].storage->data, n);
  for (int k = 0; k < 2; k++) av_storage_release(out[k].storage);
  for (int k = 0; k < 3; k++) av_storage_release(in[k].storage);
  av_program_free(p);
}

static void test_counted_loops(void **state) {
  (void)state;
  static const int64_t cases[][3] = {
      {0, 10, 1}, {0, 10, 3}, {0, 9, 3}, {7, 7, 1}, {9, 2, 2}, {-5, 5, 4},
      {INT32_MAX - 2, INT32_MAX, 2}, /* ends exactly at the largest value */
      {INT32_MAX - 9, INT32_MAX - 1, 4},
      {10, 5, -1}, {4, 3, 0}, /* steps the counted form refuses: the ordinary loop runs */
  };
  for (int ty = 0; ty < 2; ty++)
    for (int le = 0; le < 2; le++)
      for (int uses = 0; uses < 2; uses++)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
          int64_t start = cases[k][0], limit = cases[k][1], step = cases[k][2];
          /* near the largest value, <= wraps before it fails: 2^30 iterations (the counted
           * form refuses them; they run the ordinary way) */
          if (le && limit >= INT32_MAX - 8) continue;
          if (ty) { /* the same shapes near the i64 limits */
            int64_t shift = limit >= INT32_MAX - 1 ? INT64_MAX - INT32_MAX : ((int64_t)1 << 40);
            start += shift;
            limit += shift;
          }
          counted_case(ty ? "i64" : "i32", le ? "LE" : "LT", uses, start, limit, step);
        }
}

/* Chained +, -, *, / in a loop body fuse into pairs (one loop, the intermediate in a
 * register); each op still rounds on its own, so the results are those of the ops one at a
 * time, computed here in the same order. An intermediate that is also a result, or read
 * twice, stays unfused; f64 pairs too. */
static void test_fused_pairs_in_loops(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%v0: tensor<5xf32>, %w0: tensor<5xf64>, %a: tensor<5xf32>, %b: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf64>) {\n"
      "  %zero = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
      "  %four = \"stablehlo.constant\"() {value = dense<4> : tensor<i32>} : () -> tensor<i32>\n"
      "  %one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "  %k = \"stablehlo.constant\"() {value = dense<0.999> : tensor<f32>} : () -> tensor<f32>\n"
      "  %kb = \"stablehlo.broadcast_in_dim\"(%k) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<5xf32>\n"
      "  %d = \"stablehlo.constant\"() {value = dense<3.0> : tensor<5xf64>} : () -> tensor<5xf64>\n"
      "  %r:4 = \"stablehlo.while\"(%zero, %v0, %v0, %w0) ({\n"
      "  ^bb0(%i: tensor<i32>, %v: tensor<5xf32>, %t: tensor<5xf32>, %w: tensor<5xf64>):\n"
      "    %c = \"stablehlo.compare\"(%i, %four) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    \"stablehlo.return\"(%c) : (tensor<i1>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%i: tensor<i32>, %v: tensor<5xf32>, %t: tensor<5xf32>, %w: tensor<5xf64>):\n"
      "    %m = \"stablehlo.multiply\"(%v, %kb) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>\n"
      "    %q = \"stablehlo.divide\"(%a, %v) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>\n"
      "    %s = \"stablehlo.subtract\"(%b, %q) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>\n"
      "    %v1 = \"stablehlo.add\"(%m, %s) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>\n"
      "    %x = \"stablehlo.subtract\"(%v1, %t) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>\n"
      "    %t1 = \"stablehlo.multiply\"(%x, %x) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>\n"
      "    %y = \"stablehlo.divide\"(%w, %d) : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>\n"
      "    %w1 = \"stablehlo.subtract\"(%y, %d) : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>\n"
      "    %i1 = \"stablehlo.add\"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    \"stablehlo.return\"(%i1, %v1, %t1, %w1) : (tensor<i32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf64>) -> ()\n"
      "  }) : (tensor<i32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf64>) -> (tensor<i32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf64>)\n"
      "  \"func.return\"(%r#1, %r#2, %r#3) : (tensor<5xf32>, tensor<5xf32>, tensor<5xf64>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  float v[5] = {1.1f, -2.5f, 3.25f, 1e-3f, 7.0f}, t[5], a[5] = {0.3f, 1.7f, -2.2f, 5.0f, 0.1f},
        b[5] = {2.0f, -1.25f, 0.5f, 9.5f, -3.0f};
  double w[5] = {1.0, -2.0, 0.1, 1e10, 3.0};
  memcpy(t, v, sizeof t);
  av_tensor in[4] = {input(AV_DT_F32, 1, 5, v, sizeof v), input(AV_DT_F64, 1, 5, w, sizeof w),
                     input(AV_DT_F32, 1, 5, a, sizeof a), input(AV_DT_F32, 1, 5, b, sizeof b)};
  av_tensor out[3];
  run(p, in, out);
  for (int it = 0; it < 4; it++)
    for (int e = 0; e < 5; e++) {
      float m = v[e] * 0.999f, q = a[e] / v[e], s = b[e] - q, v1 = m + s, x = v1 - t[e];
      v[e] = v1;
      t[e] = x * x;
      double y = w[e] / 3.0;
      w[e] = y - 3.0;
    }
  assert_memory_equal(out[0].storage->data, v, sizeof v);
  assert_memory_equal(out[1].storage->data, t, sizeof t);
  assert_memory_equal(out[2].storage->data, w, sizeof w);
  for (int k = 0; k < 3; k++) av_storage_release(out[k].storage);
  for (int k = 0; k < 4; k++) av_storage_release(in[k].storage);
  av_program_free(p);
}

/* A counted loop whose body is one pair over one carried array (v <- b + v * a) runs all its
 * iterations in one call that keeps the array in registers (kernels/elementwise_pair.c):
 * the results of the ops one at a time, for sizes below a block, of whole blocks and with a
 * partial last block (padded), f32 and f64. */
static void test_iterated_pair_loops(void **state) {
  (void)state;
  static const int64_t sizes[3] = {5, 64, 70};
  for (int si = 0; si < 3; si++)
    for (int f64 = 0; f64 < 2; f64++) {
      int64_t n = sizes[si];
      const char *ty = f64 ? "f64" : "f32";
      char text[4096];
      snprintf(text, sizeof text,
               "func.func public @main(%%v0: tensor<%lldx%s>, %%a: tensor<%lldx%s>, %%b: tensor<%lldx%s>) -> tensor<%lldx%s> {\n"
               "  %%zero = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
               "  %%lim = \"stablehlo.constant\"() {value = dense<37> : tensor<i32>} : () -> tensor<i32>\n"
               "  %%one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
               "  %%r:2 = \"stablehlo.while\"(%%zero, %%v0) ({\n"
               "  ^bb0(%%i: tensor<i32>, %%v: tensor<%lldx%s>):\n"
               "    %%c = \"stablehlo.compare\"(%%i, %%lim) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
               "    \"stablehlo.return\"(%%c) : (tensor<i1>) -> ()\n"
               "  }, {\n"
               "  ^bb0(%%i: tensor<i32>, %%v: tensor<%lldx%s>):\n"
               "    %%m = \"stablehlo.multiply\"(%%v, %%a) : (tensor<%lldx%s>, tensor<%lldx%s>) -> tensor<%lldx%s>\n"
               "    %%v1 = \"stablehlo.add\"(%%b, %%m) : (tensor<%lldx%s>, tensor<%lldx%s>) -> tensor<%lldx%s>\n"
               "    %%i1 = \"stablehlo.add\"(%%i, %%one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
               "    \"stablehlo.return\"(%%i1, %%v1) : (tensor<i32>, tensor<%lldx%s>) -> ()\n"
               "  }) : (tensor<i32>, tensor<%lldx%s>) -> (tensor<i32>, tensor<%lldx%s>)\n"
               "  \"func.return\"(%%r#1) : (tensor<%lldx%s>) -> ()\n"
               "}\n",
               (long long)n, ty, (long long)n, ty, (long long)n, ty, (long long)n, ty, (long long)n, ty,
               (long long)n, ty, (long long)n, ty, (long long)n, ty, (long long)n, ty, (long long)n, ty,
               (long long)n, ty, (long long)n, ty, (long long)n, ty, (long long)n, ty, (long long)n, ty,
               (long long)n, ty);
      av_program *p = compile(text);
      double v[70], a[70], b[70];
      float vf[70], af[70], bf[70];
      for (int64_t e = 0; e < n; e++) {
        v[e] = 0.5 + 0.01 * (double)e, a[e] = 1.01 - 0.003 * (double)e, b[e] = 0.25 - 0.007 * (double)e;
        vf[e] = (float)v[e], af[e] = (float)a[e], bf[e] = (float)b[e];
      }
      size_t es = f64 ? 8 : 4;
      av_dtype dt = f64 ? AV_DT_F64 : AV_DT_F32;
      av_tensor in[3] = {input(dt, 1, n, f64 ? (void *)v : (void *)vf, (size_t)n * es),
                         input(dt, 1, n, f64 ? (void *)a : (void *)af, (size_t)n * es),
                         input(dt, 1, n, f64 ? (void *)b : (void *)bf, (size_t)n * es)};
      av_tensor out[1];
      run(p, in, out);
      for (int it = 0; it < 37; it++)
        for (int64_t e = 0; e < n; e++) {
          v[e] = b[e] + v[e] * a[e];
          vf[e] = bf[e] + vf[e] * af[e];
        }
      assert_memory_equal(out[0].storage->data, f64 ? (void *)v : (void *)vf, (size_t)n * es);
      av_storage_release(out[0].storage);
      for (int k = 0; k < 3; k++) av_storage_release(in[k].storage);
      av_program_free(p);
    }
}

/* lax.scan's loop as a register program: xs passed through and read with dynamic_slice (one
 * index clamped), ys written with dynamic_update_slice in place, and zs written the same way
 * but read afterwards in the same iteration (its old row must be seen, so it is copied, not
 * updated in place). Worked out by hand: c is the running sum of the rows of xs, ys holds it
 * row by row, zs the same rows in reverse order, l the last row of xs (index i + 10 clamped). */
static void test_scan_loop_program(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%xs: tensor<4x3xf32>, %c0: tensor<3xf32>) -> (tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>) {\n"
      "  %z = \"stablehlo.constant\"() {value = dense<0.0> : tensor<4x3xf32>} : () -> tensor<4x3xf32>\n"
      "  %zr = \"stablehlo.constant\"() {value = dense<0.0> : tensor<3xf32>} : () -> tensor<3xf32>\n"
      "  %i0 = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
      "  %r:6 = \"stablehlo.while\"(%i0, %c0, %xs, %z, %z, %zr) ({\n"
      "  ^bb0(%i: tensor<i32>, %c: tensor<3xf32>, %x: tensor<4x3xf32>, %ys: tensor<4x3xf32>, %zs: tensor<4x3xf32>, %l: tensor<3xf32>):\n"
      "    %four = \"stablehlo.constant\"() {value = dense<4> : tensor<i32>} : () -> tensor<i32>\n"
      "    %lt = \"stablehlo.compare\"(%i, %four) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    \"stablehlo.return\"(%lt) : (tensor<i1>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%i: tensor<i32>, %c: tensor<3xf32>, %x: tensor<4x3xf32>, %ys: tensor<4x3xf32>, %zs: tensor<4x3xf32>, %l: tensor<3xf32>):\n"
      "    %zero = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
      "    %one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "    %three = \"stablehlo.constant\"() {value = dense<3> : tensor<i32>} : () -> tensor<i32>\n"
      "    %ten = \"stablehlo.constant\"() {value = dense<10> : tensor<i32>} : () -> tensor<i32>\n"
      "    %row = \"stablehlo.dynamic_slice\"(%x, %i, %zero) {slice_sizes = dense<[1, 3]> : tensor<2xi64>} : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>\n"
      "    %xr = \"stablehlo.reshape\"(%row) : (tensor<1x3xf32>) -> tensor<3xf32>\n"
      "    %c1 = \"stablehlo.add\"(%c, %xr) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>\n"
      "    %u = \"stablehlo.broadcast_in_dim\"(%c1) {broadcast_dimensions = dense<[1]> : tensor<1xi64>} : (tensor<3xf32>) -> tensor<1x3xf32>\n"
      "    %ys1 = \"stablehlo.dynamic_update_slice\"(%ys, %u, %i, %zero) : (tensor<4x3xf32>, tensor<1x3xf32>, tensor<i32>, tensor<i32>) -> tensor<4x3xf32>\n"
      "    %j = \"stablehlo.subtract\"(%three, %i) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    %zs1 = \"stablehlo.dynamic_update_slice\"(%zs, %u, %j, %zero) : (tensor<4x3xf32>, tensor<1x3xf32>, tensor<i32>, tensor<i32>) -> tensor<4x3xf32>\n"
      "    %old = \"stablehlo.dynamic_slice\"(%zs, %j, %zero) {slice_sizes = dense<[1, 3]> : tensor<2xi64>} : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>\n"
      "    %w = \"stablehlo.reshape\"(%old) : (tensor<1x3xf32>) -> tensor<3xf32>\n"
      "    %c2 = \"stablehlo.add\"(%c1, %w) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>\n"
      "    %k = \"stablehlo.add\"(%i, %ten) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    %lr = \"stablehlo.dynamic_slice\"(%x, %k, %zero) {slice_sizes = dense<[1, 3]> : tensor<2xi64>} : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>\n"
      "    %l1 = \"stablehlo.reshape\"(%lr) : (tensor<1x3xf32>) -> tensor<3xf32>\n"
      "    %i1 = \"stablehlo.add\"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    \"stablehlo.return\"(%i1, %c2, %x, %ys1, %zs1, %l1) : (tensor<i32>, tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>) -> ()\n"
      "  }) : (tensor<i32>, tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>)\n"
      "  \"func.return\"(%r#1, %r#3, %r#4, %r#5) : (tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  float xs[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, c0[3] = {0, 0, 0};
  av_tensor in[2] = {input(AV_DT_F32, 2, 4, xs, sizeof xs), input(AV_DT_F32, 1, 3, c0, sizeof c0)};
  in[0].dims[1] = 3;
  static const float c[3] = {22, 26, 30}, last[3] = {10, 11, 12};
  static const float ys[12] = {1, 2, 3, 5, 7, 9, 12, 15, 18, 22, 26, 30};
  static const float zs[12] = {22, 26, 30, 12, 15, 18, 5, 7, 9, 1, 2, 3};
  for (int rep = 0; rep < 2; rep++) { /* no state may leak from one run into the next */
    av_tensor out[4];
    run(p, in, out);
    assert_memory_equal(out[0].storage->data, c, sizeof c);
    assert_memory_equal(out[1].storage->data, ys, sizeof ys);
    assert_memory_equal(out[2].storage->data, zs, sizeof zs);
    assert_memory_equal(out[3].storage->data, last, sizeof last);
    for (int k = 0; k < 4; k++) av_storage_release(out[k].storage);
  }
  assert_memory_equal(in[0].storage->data, xs, sizeof xs); /* xs was read in place, not written */
  for (int k = 0; k < 2; k++) av_storage_release(in[k].storage);
  av_program_free(p);
}


/* A dot inside a loop program: v <- M v with M = [[1, 1], [1, 0]] from v = [1, 0] gives
 * [F(n+1), F(n)] after n steps (Fibonacci): [89, 55] after 10, in i32 and f32. */
static void test_loop_program_with_dot(void **state) {
  (void)state;
  for (int f = 0; f < 2; f++) {
    const char *t = f ? "f32" : "i32";
    char text[2048];
    snprintf(text, sizeof text,
             "func.func public @main(%%m: tensor<2x2x%s>, %%v0: tensor<2x%s>) -> tensor<2x%s> {\n"
             "  %%z = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
             "  %%r:2 = \"stablehlo.while\"(%%z, %%v0) ({\n"
             "  ^bb0(%%i: tensor<i32>, %%v: tensor<2x%s>):\n"
             "    %%n = \"stablehlo.constant\"() {value = dense<10> : tensor<i32>} : () -> tensor<i32>\n"
             "    %%lt = \"stablehlo.compare\"(%%i, %%n) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
             "    \"stablehlo.return\"(%%lt) : (tensor<i1>) -> ()\n"
             "  }, {\n"
             "  ^bb0(%%i: tensor<i32>, %%v: tensor<2x%s>):\n"
             "    %%one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
             "    %%mv = \"stablehlo.dot_general\"(%%m, %%v) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<2x2x%s>, tensor<2x%s>) -> tensor<2x%s>\n"
             "    %%i1 = \"stablehlo.add\"(%%i, %%one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
             "    \"stablehlo.return\"(%%i1, %%mv) : (tensor<i32>, tensor<2x%s>) -> ()\n"
             "  }) : (tensor<i32>, tensor<2x%s>) -> (tensor<i32>, tensor<2x%s>)\n"
             "  \"func.return\"(%%r#1) : (tensor<2x%s>) -> ()\n"
             "}\n",
             t, t, t, t, t, t, t, t, t, t, t, t);
    av_program *p = compile(text);
    av_tensor in[2];
    if (f) {
      float m[4] = {1, 1, 1, 0}, v[2] = {1, 0};
      in[0] = input(AV_DT_F32, 2, 2, m, sizeof m);
      in[1] = input(AV_DT_F32, 1, 2, v, sizeof v);
    } else {
      int32_t m[4] = {1, 1, 1, 0}, v[2] = {1, 0};
      in[0] = input(AV_DT_S32, 2, 2, m, sizeof m);
      in[1] = input(AV_DT_S32, 1, 2, v, sizeof v);
    }
    in[0].dims[1] = 2;
    av_tensor out[1];
    run(p, in, out);
    if (f) {
      const float *o = out[0].storage->data;
      assert_true(o[0] == 89 && o[1] == 55);
    } else {
      const int32_t *o = out[0].storage->data;
      assert_int_equal(o[0], 89);
      assert_int_equal(o[1], 55);
    }
    av_storage_release(out[0].storage);
    for (int k = 0; k < 2; k++) av_storage_release(in[k].storage);
    av_program_free(p);
  }
}

/* An f32 product large enough for GEMM inside a loop program runs on the same library path
 * as the same product as a step (oneDNN's sgemm in the same tiles), so a loop gives the bits
 * it would give unrolled: acc <- acc + x @ w once from zeros, against zeros + x @ w. Loop
 * programs ran their products on OpenBLAS (on one CPU model its SSE3 kernels: 4.4x slower
 * than XLA:CPU), whose sums round differently. */
static void test_loop_program_dot_matches_step(void **state) {
  (void)state;
  static const char loop[] =
      "func.func public @main(%x: tensor<16x128xf32>, %w: tensor<128x96xf32>) -> tensor<16x96xf32> {\n"
      "  %z = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
      "  %a0 = \"stablehlo.constant\"() {value = dense<0.0> : tensor<16x96xf32>} : () -> tensor<16x96xf32>\n"
      "  %r:2 = \"stablehlo.while\"(%z, %a0) ({\n"
      "  ^bb0(%i: tensor<i32>, %a: tensor<16x96xf32>):\n"
      "    %n = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "    %lt = \"stablehlo.compare\"(%i, %n) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    \"stablehlo.return\"(%lt) : (tensor<i1>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%i: tensor<i32>, %a: tensor<16x96xf32>):\n"
      "    %one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "    %p = \"stablehlo.dot_general\"(%x, %w) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<16x128xf32>, tensor<128x96xf32>) -> tensor<16x96xf32>\n"
      "    %s = \"stablehlo.add\"(%a, %p) : (tensor<16x96xf32>, tensor<16x96xf32>) -> tensor<16x96xf32>\n"
      "    %i1 = \"stablehlo.add\"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    \"stablehlo.return\"(%i1, %s) : (tensor<i32>, tensor<16x96xf32>) -> ()\n"
      "  }) : (tensor<i32>, tensor<16x96xf32>) -> (tensor<i32>, tensor<16x96xf32>)\n"
      "  \"func.return\"(%r#1) : (tensor<16x96xf32>) -> ()\n"
      "}\n";
  static const char step[] =
      "func.func public @main(%x: tensor<16x128xf32>, %w: tensor<128x96xf32>) -> tensor<16x96xf32> {\n"
      "  %a0 = \"stablehlo.constant\"() {value = dense<0.0> : tensor<16x96xf32>} : () -> tensor<16x96xf32>\n"
      "  %p = \"stablehlo.dot_general\"(%x, %w) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<16x128xf32>, tensor<128x96xf32>) -> tensor<16x96xf32>\n"
      "  %s = \"stablehlo.add\"(%a0, %p) : (tensor<16x96xf32>, tensor<16x96xf32>) -> tensor<16x96xf32>\n"
      "  \"func.return\"(%s) : (tensor<16x96xf32>) -> ()\n"
      "}\n";
  static float x[16 * 128], w[128 * 96];
  uint32_t s = 7;
  for (size_t i = 0; i < sizeof x / sizeof *x; i++) x[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / (1 << 24) - 0.5f;
  for (size_t i = 0; i < sizeof w / sizeof *w; i++) w[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / (1 << 24) - 0.5f;
  av_tensor in[2] = {input(AV_DT_F32, 2, 16, x, sizeof x), input(AV_DT_F32, 2, 128, w, sizeof w)};
  in[0].dims[1] = 128;
  in[1].dims[1] = 96;
  av_tensor a[1], b[1];
  av_program *pl = compile(loop), *ps = compile(step);
  run(pl, in, a);
  run(ps, in, b);
  const float *fa = a[0].storage->data, *fb = b[0].storage->data;
  for (int i = 0; i < 16 * 96; i++) {
    double want = 0; /* and both near the f64 product */
    for (int k = 0; k < 128; k++) want += (double)x[(i / 96) * 128 + k] * (double)w[k * 96 + i % 96];
    if (fabs(fa[i] - want) > 1e-4) fail_msg("element %d: %.9g, want %.9g", i, fa[i], want);
    if (memcmp(&fa[i], &fb[i], 4)) fail_msg("element %d: loop %.9g, step %.9g", i, fa[i], fb[i]);
  }
  av_storage_release(a[0].storage);
  av_storage_release(b[0].storage);
  for (int k = 0; k < 2; k++) av_storage_release(in[k].storage);
  av_program_free(pl);
  av_program_free(ps);
}

/* x.at[j].set(v) and ys.at[k].set(row) in a loop (scatters of one window that replace, run
 * by the loop program): a window not wholly inside is dropped, never clamped. i = 0..7:
 * x[2i - 5] = i * i lands at 1, 3, 5 (i = 3, 4, 5); -5, -3, -1, 7 and 9 are dropped (a clamp
 * would write x[0] and overwrite x[5] with 36 and 49). ys[i - 3] = row * i sets rows 0..3
 * (i = 3..6); i = 7 is dropped (a clamp would overwrite row 3 with row * 7). */
static void test_loop_scatters_drop_outside_windows(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%x0: tensor<6xi32>, %ys0: tensor<4x3xf32>, %row: tensor<3xf32>) -> (tensor<6xi32>, tensor<4x3xf32>) {\n"
      "  %z = stablehlo.constant dense<0> : tensor<i32>\n"
      "  %r:3 = stablehlo.while(%i = %z, %x = %x0, %ys = %ys0) : tensor<i32>, tensor<6xi32>, tensor<4x3xf32>\n"
      "  cond {\n"
      "    %n = stablehlo.constant dense<8> : tensor<i32>\n"
      "    %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    stablehlo.return %lt : tensor<i1>\n"
      "  } do {\n"
      "    %one = stablehlo.constant dense<1> : tensor<i32>\n"
      "    %two = stablehlo.constant dense<2> : tensor<i32>\n"
      "    %three = stablehlo.constant dense<3> : tensor<i32>\n"
      "    %five = stablehlo.constant dense<5> : tensor<i32>\n"
      "    %i2 = stablehlo.multiply %i, %two : tensor<i32>\n"
      "    %j = stablehlo.subtract %i2, %five : tensor<i32>\n"
      "    %jv = stablehlo.reshape %j : (tensor<i32>) -> tensor<1xi32>\n"
      "    %v = stablehlo.multiply %i, %i : tensor<i32>\n"
      "    %x1 = \"stablehlo.scatter\"(%x, %jv, %v) ({\n"
      "    ^bb0(%a: tensor<i32>, %b: tensor<i32>):\n"
      "      stablehlo.return %b : tensor<i32>\n"
      "    }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
      "scatter_dims_to_operand_dims = [0]>, indices_are_sorted = true, unique_indices = true} "
      ": (tensor<6xi32>, tensor<1xi32>, tensor<i32>) -> tensor<6xi32>\n"
      "    %k = stablehlo.subtract %i, %three : tensor<i32>\n"
      "    %kv = stablehlo.reshape %k : (tensor<i32>) -> tensor<1xi32>\n"
      "    %fi = stablehlo.convert %i : (tensor<i32>) -> tensor<f32>\n"
      "    %fib = stablehlo.broadcast_in_dim %fi, dims = [] : (tensor<f32>) -> tensor<3xf32>\n"
      "    %rv = stablehlo.multiply %row, %fib : tensor<3xf32>\n"
      "    %ys1 = \"stablehlo.scatter\"(%ys, %kv, %rv) ({\n"
      "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
      "      stablehlo.return %b : tensor<f32>\n"
      "    }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], "
      "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>} "
      ": (tensor<4x3xf32>, tensor<1xi32>, tensor<3xf32>) -> tensor<4x3xf32>\n"
      "    %i1 = stablehlo.add %i, %one : tensor<i32>\n"
      "    stablehlo.return %i1, %x1, %ys1 : tensor<i32>, tensor<6xi32>, tensor<4x3xf32>\n"
      "  }\n"
      "  return %r#1, %r#2 : tensor<6xi32>, tensor<4x3xf32>\n"
      "}\n";
  av_program *p = compile(text);
  int32_t x0[6] = {-1, -2, -3, -4, -5, -6};
  float ys0[12], row[3] = {1.5f, -2.0f, 0.25f};
  for (int k = 0; k < 12; k++) ys0[k] = 100.0f + (float)k;
  av_tensor in[3] = {input(AV_DT_S32, 1, 6, x0, sizeof x0), input(AV_DT_F32, 2, 4, ys0, sizeof ys0),
                     input(AV_DT_F32, 1, 3, row, sizeof row)};
  in[1].dims[1] = 3;
  av_tensor out[2];
  run(p, in, out);
  const int32_t want_x[6] = {-1, 9, -3, 16, -5, 25};
  assert_memory_equal(out[0].storage->data, want_x, sizeof want_x);
  const float *ys = out[1].storage->data;
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 3; c++)
      if (ys[r * 3 + c] != row[c] * (float)(r + 3)) fail_msg("ys[%d][%d] = %g", r, c, ys[r * 3 + c]);
  assert_memory_equal(in[0].storage->data, x0, sizeof x0); /* the inputs are not written */
  for (int k = 0; k < 2; k++) av_storage_release(out[k].storage);
  for (int k = 0; k < 3; k++) av_storage_release(in[k].storage);
  av_program_free(p);
}

/* A dot of two scalars (rank 0: the type has no dims array) inside a function the loop body
 * calls, as JAX's jnp.dot(x, x) of a scalar under remat in a scan gives: x <- x * x + 1 from
 * x = 1, five times: 1 -> 2 -> 5 -> 26 -> 677 -> 458330. The loop program copied rank + 1
 * dims from the type, a read through NULL here (a crash at compile time). */
static void test_loop_program_with_scalar_dot_in_call(void **state) {
  (void)state;
  static const char text[] =
      "func.func private @sq(%x: tensor<f32>) -> tensor<f32> {\n"
      "  %d = \"stablehlo.dot_general\"(%x, %x) {dot_dimension_numbers = #stablehlo.dot<>} : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "  \"func.return\"(%d) : (tensor<f32>) -> ()\n"
      "}\n"
      "func.func public @main(%x0: tensor<f32>) -> tensor<f32> {\n"
      "  %z = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
      "  %r:2 = \"stablehlo.while\"(%z, %x0) ({\n"
      "  ^bb0(%i: tensor<i32>, %x: tensor<f32>):\n"
      "    %n = \"stablehlo.constant\"() {value = dense<5> : tensor<i32>} : () -> tensor<i32>\n"
      "    %lt = \"stablehlo.compare\"(%i, %n) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    \"stablehlo.return\"(%lt) : (tensor<i1>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%i: tensor<i32>, %x: tensor<f32>):\n"
      "    %one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "    %fone = \"stablehlo.constant\"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>\n"
      "    %s = \"func.call\"(%x) {callee = @sq} : (tensor<f32>) -> tensor<f32>\n"
      "    %y = \"stablehlo.add\"(%s, %fone) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "    %i1 = \"stablehlo.add\"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    \"stablehlo.return\"(%i1, %y) : (tensor<i32>, tensor<f32>) -> ()\n"
      "  }) : (tensor<i32>, tensor<f32>) -> (tensor<i32>, tensor<f32>)\n"
      "  \"func.return\"(%r#1) : (tensor<f32>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  float x = 1;
  av_tensor in[1] = {input(AV_DT_F32, 0, 1, &x, sizeof x)}, out[1];
  run(p, in, out);
  assert_true(*(const float *)out[0].storage->data == 458330.0f);
  av_storage_release(out[0].storage);
  av_storage_release(in[0].storage);
  av_program_free(p);
}

/* The condition ignores the carried array (a register program); the body calls a function
 * on it. The loop's initial array is also returned unchanged after the loop, and the body
 * uses its argument again after the call (so it may not be moved into the call), and calls
 * with the same value twice. Per iteration v -> 2v + v*v ... worked per element below. */
static void test_array_loop_with_calls(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%v0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
      "  %zero = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
      "  %three = \"stablehlo.constant\"() {value = dense<3> : tensor<i32>} : () -> tensor<i32>\n"
      "  %one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "  %r:2 = \"stablehlo.while\"(%zero, %v0) ({\n"
      "  ^bb0(%i: tensor<i32>, %v: tensor<4xf32>):\n"
      "    %lt = \"stablehlo.compare\"(%i, %three) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "    \"stablehlo.return\"(%lt) : (tensor<i1>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%i: tensor<i32>, %v: tensor<4xf32>):\n"
      "    %d = \"func.call\"(%v) {callee = @double} : (tensor<4xf32>) -> tensor<4xf32>\n"
      "    %s = \"func.call\"(%v, %v) {callee = @mul} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "    %w = \"stablehlo.add\"(%d, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "    %n = \"stablehlo.add\"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    \"stablehlo.return\"(%n, %w) : (tensor<i32>, tensor<4xf32>) -> ()\n"
      "  }) : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>)\n"
      "  %keep = \"stablehlo.add\"(%v0, %v0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "  \"func.return\"(%r#1, %keep) : (tensor<4xf32>, tensor<4xf32>) -> ()\n"
      "}\n"
      "func.func private @double(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %y = \"stablehlo.add\"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "  \"func.return\"(%y) : (tensor<4xf32>) -> ()\n"
      "}\n"
      "func.func private @mul(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %y = \"stablehlo.multiply\"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "  \"func.return\"(%y) : (tensor<4xf32>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  /* v -> 2v + v^2: 1 -> 3 -> 15 -> 255; 0 -> 0; -1 -> -1 -> -1 -> -1; 0.5 -> 1.25 -> 4.0625 -> 24.62890625 */
  float v0[4] = {1.0f, 0.0f, -1.0f, 0.5f};
  float expect[4] = {255.0f, 0.0f, -1.0f, 24.62890625f};
  float twice[4] = {2.0f, 0.0f, -2.0f, 1.0f};
  av_tensor in = input(AV_DT_F32, 1, 4, v0, sizeof v0);
  for (int rep = 0; rep < 2; rep++) {
    av_tensor out[2];
    run(p, &in, out);
    assert_memory_equal(out[0].storage->data, expect, sizeof expect);
    assert_memory_equal(out[1].storage->data, twice, sizeof twice);
    av_storage_release(out[0].storage);
    av_storage_release(out[1].storage);
  }
  assert_memory_equal(in.storage->data, v0, sizeof v0);
  av_storage_release(in.storage);
  av_program_free(p);
}

/* A condition that is not scalar (it sums the carried array) runs as a block; the body's
 * result is the carried array itself in one slot and a new array in the other (the two
 * carried values swap roles each iteration). a, b = b, a + b from a = 1, b = 1 per element
 * until sum(b) >= 40 with four equal lanes: b = 1, 2, 3, 5, 8, 13 -> sum 52 stops. */
static void test_block_condition_and_swaps(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%a0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
      "  %lim = \"stablehlo.constant\"() {value = dense<4.0e+01> : tensor<f32>} : () -> tensor<f32>\n"
      "  %z = \"stablehlo.constant\"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>\n"
      "  %r:2 = \"stablehlo.while\"(%a0, %a0) ({\n"
      "  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):\n"
      "    %s = \"stablehlo.reduce\"(%b, %z) ({\n"
      "    ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
      "      %t = \"stablehlo.add\"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "      \"stablehlo.return\"(%t) : (tensor<f32>) -> ()\n"
      "    }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n"
      "    %lt = \"stablehlo.compare\"(%s, %lim) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
      "    \"stablehlo.return\"(%lt) : (tensor<i1>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):\n"
      "    %n = \"stablehlo.add\"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "    \"stablehlo.return\"(%b, %n) : (tensor<4xf32>, tensor<4xf32>) -> ()\n"
      "  }) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)\n"
      "  \"func.return\"(%r#0, %r#1) : (tensor<4xf32>, tensor<4xf32>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  float ones[4] = {1, 1, 1, 1}, a[4] = {8, 8, 8, 8}, b[4] = {13, 13, 13, 13};
  av_tensor in = input(AV_DT_F32, 1, 4, ones, sizeof ones);
  av_tensor out[2];
  run(p, &in, out);
  assert_memory_equal(out[0].storage->data, a, sizeof a);
  assert_memory_equal(out[1].storage->data, b, sizeof b);
  assert_memory_equal(in.storage->data, ones, sizeof ones);
  av_storage_release(out[0].storage);
  av_storage_release(out[1].storage);
  av_storage_release(in.storage);
  av_program_free(p);
}

/* A carried value whose last use is the while itself is moved into the loop's state, unless
 * a region also reads it from the enclosing frame (here the condition compares against the
 * captured %k as well as the carried copy): moving it left the capture dangling (a crash in
 * JAX's checkify tests). x = 2: k = 4, i counts 0..4. */
static void test_carried_value_also_captured(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {\n"
      "  %k = \"stablehlo.multiply\"(%x, %x) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "  %z = \"stablehlo.constant\"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>\n"
      "  %one = \"stablehlo.constant\"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>\n"
      "  %r:2 = \"stablehlo.while\"(%z, %k) ({\n"
      "  ^bb0(%i: tensor<f32>, %c: tensor<f32>):\n"
      "    %s = \"stablehlo.add\"(%i, %k) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "    %t = \"stablehlo.add\"(%c, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "    %lt = \"stablehlo.compare\"(%s, %t) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
      "    \"stablehlo.return\"(%lt) : (tensor<i1>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%i: tensor<f32>, %c: tensor<f32>):\n"
      "    %n = \"stablehlo.add\"(%i, %one) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "    \"stablehlo.return\"(%n, %c) : (tensor<f32>, tensor<f32>) -> ()\n"
      "  }) : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)\n"
      "  \"func.return\"(%r#0, %r#1) : (tensor<f32>, tensor<f32>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  float x = 2;
  av_tensor in = input(AV_DT_F32, 0, 0, &x, sizeof x);
  av_tensor out[2];
  run(p, &in, out);
  float i, k;
  memcpy(&i, out[0].storage->data, sizeof i);
  memcpy(&k, out[1].storage->data, sizeof k);
  assert_true(i == 4.0f && k == 4.0f);
  av_storage_release(in.storage);
  av_storage_release(out[0].storage);
  av_storage_release(out[1].storage);
  av_program_free(p);
}

/* Calls run inside the caller's frame when they can; recursion and chains deeper than the
 * inlining limit must still work as real calls. @count(n) = n > 0 ? count(n - 1) + 2 : 0,
 * so count(5) = 10; @c1..@c6 each add 1 and call the next, so c1(x) = x + 6. */
static void test_recursion_and_deep_call_chains(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%n: tensor<i32>, %x: tensor<f32>) -> (tensor<i32>, tensor<f32>) {\n"
      "  %r = \"func.call\"(%n) {callee = @count} : (tensor<i32>) -> tensor<i32>\n"
      "  %y = \"func.call\"(%x) {callee = @c1} : (tensor<f32>) -> tensor<f32>\n"
      "  \"func.return\"(%r, %y) : (tensor<i32>, tensor<f32>) -> ()\n"
      "}\n"
      "func.func private @count(%n: tensor<i32>) -> tensor<i32> {\n"
      "  %zero = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
      "  %one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "  %two = \"stablehlo.constant\"() {value = dense<2> : tensor<i32>} : () -> tensor<i32>\n"
      "  %gt = \"stablehlo.compare\"(%n, %zero) {comparison_direction = #stablehlo<comparison_direction GT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "  %r = \"stablehlo.if\"(%gt) ({\n"
      "    %m = \"stablehlo.subtract\"(%n, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    %c = \"func.call\"(%m) {callee = @count} : (tensor<i32>) -> tensor<i32>\n"
      "    %s = \"stablehlo.add\"(%c, %two) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n"
      "    \"stablehlo.return\"(%s) : (tensor<i32>) -> ()\n"
      "  }, {\n"
      "    \"stablehlo.return\"(%zero) : (tensor<i32>) -> ()\n"
      "  }) : (tensor<i1>) -> tensor<i32>\n"
      "  \"func.return\"(%r) : (tensor<i32>) -> ()\n"
      "}\n"
#define CHAIN(k, next)                                                                          \
  "func.func private @c" #k "(%a: tensor<f32>) -> tensor<f32> {\n"                              \
  "  %one = \"stablehlo.constant\"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>\n" \
  "  %b = \"stablehlo.add\"(%a, %one) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"            \
  "  %c = \"func.call\"(%b) {callee = @c" #next "} : (tensor<f32>) -> tensor<f32>\n"            \
  "  \"func.return\"(%c) : (tensor<f32>) -> ()\n"                                              \
  "}\n"
      CHAIN(1, 2) CHAIN(2, 3) CHAIN(3, 4) CHAIN(4, 5) CHAIN(5, 6)
#undef CHAIN
      "func.func private @c6(%a: tensor<f32>) -> tensor<f32> {\n"
      "  %one = \"stablehlo.constant\"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>\n"
      "  %b = \"stablehlo.add\"(%a, %one) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "  \"func.return\"(%b) : (tensor<f32>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  int32_t n = 5;
  float x = 0.5f;
  av_tensor in[2] = {input(AV_DT_S32, 0, 1, &n, 4), input(AV_DT_F32, 0, 1, &x, 4)};
  av_tensor out[2];
  run(p, in, out);
  assert_int_equal(*(int32_t *)out[0].storage->data, 10);
  assert_true(*(float *)out[1].storage->data == 6.5f);
  for (int i = 0; i < 2; i++) {
    av_storage_release(out[i].storage);
    av_storage_release(in[i].storage);
  }
  av_program_free(p);
}

/* A `case` whose selector is known at compile time (a constant passed through a case and a call,
 * as a multi-platform jax.export artifact selects its platform) runs its branch, and the other
 * branches, which may hold custom calls only another platform runs, are not compiled. With a
 * selector from an argument, the unsupported custom call is refused at compile time. */
static void test_case_on_a_known_selector(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%x: tensor<f32>) -> tensor<f32> {\n"
      "  %z = \"stablehlo.constant\"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>\n"
      "  %i = \"stablehlo.case\"(%z) ({\n"
      "    %one = \"stablehlo.constant\"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>\n"
      "    \"stablehlo.return\"(%one) : (tensor<i32>) -> ()\n"
      "  }) : (tensor<i32>) -> tensor<i32>\n"
      "  %r = \"func.call\"(%i, %x) {callee = @f} : (tensor<i32>, tensor<f32>) -> tensor<f32>\n"
      "  \"func.return\"(%r) : (tensor<f32>) -> ()\n"
      "}\n"
      "func.func private @f(%p: tensor<i32>, %x: tensor<f32>) -> tensor<f32> {\n"
      "  %r = \"stablehlo.case\"(%p) ({\n"
      "    %t = \"stablehlo.custom_call\"(%x) {call_target_name = \"OnlyOnTpu\"} : (tensor<f32>) -> tensor<f32>\n"
      "    \"stablehlo.return\"(%t) : (tensor<f32>) -> ()\n"
      "  }, {\n"
      "    %t = \"stablehlo.add\"(%x, %x) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
      "    \"stablehlo.return\"(%t) : (tensor<f32>) -> ()\n"
      "  }) : (tensor<i32>) -> tensor<f32>\n"
      "  \"func.return\"(%r) : (tensor<f32>) -> ()\n"
      "}\n";
  av_program *p = compile(text);
  float x = 1.5f;
  av_tensor in[1] = {input(AV_DT_F32, 0, 1, &x, 4)};
  av_tensor out[1];
  memset(out, 0, sizeof out);
  run(p, in, out);
  assert_true(*(const float *)out[0].storage->data == 3.0f);
  av_storage_release(out[0].storage);
  av_storage_release(in[0].storage);
  av_program_free(p);

  static const char unknown[] =
      "func.func public @main(%p: tensor<i32>, %x: tensor<f32>) -> tensor<f32> {\n"
      "  %r = \"stablehlo.case\"(%p) ({\n"
      "    %t = \"stablehlo.custom_call\"(%x) {call_target_name = \"OnlyOnTpu\"} : (tensor<f32>) -> tensor<f32>\n"
      "    \"stablehlo.return\"(%t) : (tensor<f32>) -> ()\n"
      "  }, {\n"
      "    \"stablehlo.return\"(%x) : (tensor<f32>) -> ()\n"
      "  }) : (tensor<i32>) -> tensor<f32>\n"
      "  \"func.return\"(%r) : (tensor<f32>) -> ()\n"
      "}\n";
  av_diag d;
  av_diag_init(&d);
  assert_null(av_program_compile("mlir", 4, unknown, strlen(unknown), NULL, &d));
  assert_int_equal(d.code, AV_UNIMPLEMENTED);
  assert_non_null(strstr(d.msg, "OnlyOnTpu"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scalar_loop),
      cmocka_unit_test(test_case_on_a_known_selector),
      cmocka_unit_test(test_scalar_loop_inline_ops),
      cmocka_unit_test(test_array_loop_program),
      cmocka_unit_test(test_scan_loop_program),
      cmocka_unit_test(test_counted_loops),
      cmocka_unit_test(test_fused_pairs_in_loops),
      cmocka_unit_test(test_iterated_pair_loops),
      cmocka_unit_test(test_loop_program_with_dot),
      cmocka_unit_test(test_loop_program_dot_matches_step),
      cmocka_unit_test(test_loop_scatters_drop_outside_windows),
      cmocka_unit_test(test_loop_program_with_scalar_dot_in_call),
      cmocka_unit_test(test_array_loop_with_calls),
      cmocka_unit_test(test_block_condition_and_swaps),
      cmocka_unit_test(test_carried_value_also_captured),
      cmocka_unit_test(test_recursion_and_deep_call_chains),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
