/* Hostile programs: each is refused when it is compiled, with an error naming the op and its
 * source location, so nothing dangerous runs: element counts that overflow 64 bits, regions
 * nested 100,000 deep (read on a thread with a 256 KiB stack: no recursion may overflow it),
 * a value no machine could hold inside a while loop, dot_general contracting dimensions of
 * different sizes, gather/scatter dimension numbers out of range. A function of 200,000 ops
 * (ANVIL_HOSTILE_OPS=1000000 by hand) compiles, and so do calls fanning out 200 ways four
 * levels deep. Mismatched tuple arities in HLO are in
 * test_hlo.c (test_mismatched_tuple_arity_is_an_error). The small ones are also fuzz seeds
 * (tests/fuzz/corpus/text). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/program.h"
#include "frontend/mlir_text.h"
#include "ir/printer.h"
#include "ir/verify.h"

/* Compiles `text`; expects a refusal with `code` whose message holds every one of `want`. */
static void expect_refused(const char *text, av_code code, const char *const *want, int nwant) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  if (p) {
    av_program_free(p);
    fail_msg("compiled, expected a refusal:\n%s", text);
  }
  if (d.code != code) fail_msg("code %s, expected %s: %s", av_code_name(d.code), av_code_name(code), d.msg);
  for (int i = 0; i < nwant; i++)
    if (!strstr(d.msg, want[i])) fail_msg("message lacks '%s': %s", want[i], d.msg);
}

static void test_element_count_overflow(void **state) {
  (void)state;
  static const char text[] =
      "module @m {\n"
      "  func.func public @main(%arg0: tensor<f32>) -> tensor<4294967296x4294967296x16xf32> {\n"
      "    %0 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> "
      "tensor<4294967296x4294967296x16xf32> loc(\"hostile.py\":3:5)\n"
      "    return %0 : tensor<4294967296x4294967296x16xf32>\n"
      "  }\n"
      "}\n";
  const char *want[] = {"stablehlo.broadcast_in_dim", "overflows 64 bits", "hostile.py\":3:5"};
  expect_refused(text, AV_INVALID_ARGUMENT, want, 3);
  /* A single dimension past 2^63 is refused by the reader. */
  static const char big_dim[] =
      "module @m {\n"
      "  func.func public @main(%arg0: tensor<99999999999999999999xf32>) -> tensor<f32> {\n"
      "    %c = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "    return %c : tensor<f32>\n"
      "  }\n"
      "}\n";
  const char *want2[] = {"2:"};
  expect_refused(big_dim, AV_INVALID_ARGUMENT, want2, 1);
}

/* Nested while loops, `levels` deep (written without recursion). */
static char *nested_whiles(int levels) {
  size_t cap = (size_t)levels * 220 + 512, n = 0;
  char *t = malloc(cap);
  assert_non_null(t);
  n += (size_t)snprintf(t + n, cap - n,
                        "module @deep {\n  func.func public @main(%%x: tensor<f32>) -> tensor<f32> {\n");
  const char *v = "%x";
  char name[32];
  for (int k = 0; k < levels; k++) {
    n += (size_t)snprintf(t + n, cap - n,
                          "%%w%d = stablehlo.while(%%a%d = %s) : tensor<f32> cond {\n"
                          "%%f%d = stablehlo.constant dense<false> : tensor<i1>\n"
                          "stablehlo.return %%f%d : tensor<i1>\n} do {\n",
                          k, k, v, k, k);
    snprintf(name, sizeof name, "%%a%d", k);
    v = name;
  }
  n += (size_t)snprintf(t + n, cap - n, "%%r = stablehlo.add %s, %s : tensor<f32>\n", v, v);
  for (int k = levels - 1; k >= 0; k--) {
    n += (size_t)snprintf(t + n, cap - n, "stablehlo.return %s : tensor<f32>\n}\n",
                          k == levels - 1 ? "%r" : name);
    snprintf(name, sizeof name, "%%w%d", k);
  }
  snprintf(t + n, cap - n, "return %s : tensor<f32>\n}\n}\n", levels ? name : "%r");
  return t;
}

typedef struct deep_run {
  const char *text;
  av_code code;
  char msg[AV_DIAG_MAX];
  bool printed, verified;
} deep_run;

/* Reads, verifies, prints and compiles on this (small-stack) thread. */
static void *deep_main(void *arg) {
  deep_run *r = arg;
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_mlir_text(r->text, strlen(r->text), &d);
  if (m) {
    av_diag dv;
    av_diag_init(&dv);
    r->verified = av_module_verify(m, &dv) == AV_OK;
    char *printed = av_module_print(m);
    r->printed = printed != NULL;
    free(printed);
    av_module_free(m);
  }
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, r->text, strlen(r->text), NULL, &d);
  r->code = p ? AV_OK : d.code;
  snprintf(r->msg, sizeof r->msg, "%s", d.msg);
  av_program_free(p);
  return NULL;
}

static void run_small_stack(deep_run *r) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  /* sanitizers need more per frame; 256 KiB is a quarter of a musl default thread stack */
  size_t stack = 256 * 1024;
#if defined(__SANITIZE_ADDRESS__)
  stack *= 8;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  stack *= 8;
#endif
#endif
  pthread_attr_setstacksize(&attr, stack);
  pthread_t t;
  assert_int_equal(pthread_create(&t, &attr, deep_main, r), 0);
  pthread_join(t, NULL);
  pthread_attr_destroy(&attr);
}

static void test_deep_nesting(void **state) {
  (void)state;
  /* 100,000 levels: refused by the reader at its nesting limit, with the line and column. */
  char *text = nested_whiles(100000);
  deep_run r = {.text = text};
  run_small_stack(&r);
  assert_int_equal(r.code, AV_INVALID_ARGUMENT);
  if (!strstr(r.msg, "nesting too deep") || !strstr(r.msg, "mlir text: "))
    fail_msg("unexpected message: %s", r.msg);
  free(text);
  /* As deep as the reader allows: every pass (verifier, printer, lowering) runs on the small
   * stack, and the program compiles. */
  text = nested_whiles(60);
  deep_run ok = {.text = text};
  run_small_stack(&ok);
  if (ok.code != AV_OK) fail_msg("60 levels: %s", ok.msg);
  assert_true(ok.verified);
  assert_true(ok.printed);
  free(text);
}

static void test_value_larger_than_memory_in_a_loop(void **state) {
  (void)state;
  /* A loop that would allocate 400 GB on every trip, forever: refused before anything runs. */
  static const char text[] =
      "module @m {\n"
      "  func.func public @main(%x: tensor<f32>) -> tensor<f32> {\n"
      "    %i0 = stablehlo.constant dense<0> : tensor<i64>\n"
      "    %r:2 = stablehlo.while(%it = %i0, %v = %x) : tensor<i64>, tensor<f32>\n"
      "      cond {\n"
      "        %t = stablehlo.constant dense<true> : tensor<i1>\n"
      "        stablehlo.return %t : tensor<i1>\n"
      "      } do {\n"
      "        %b = stablehlo.broadcast_in_dim %v, dims = [] : (tensor<f32>) -> "
      "tensor<100000000000xf32> loc(\"hostile.py\":9:11)\n"
      "        %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "        %s = stablehlo.reduce(%b init: %z) applies stablehlo.add across dimensions = [0] : "
      "(tensor<100000000000xf32>, tensor<f32>) -> tensor<f32>\n"
      "        stablehlo.return %it, %s : tensor<i64>, tensor<f32>\n"
      "      }\n"
      "    return %r#1 : tensor<f32>\n"
      "  }\n"
      "}\n";
  const char *want[] = {"stablehlo.broadcast_in_dim", "400000000000 bytes", "hostile.py\":9:11"};
  expect_refused(text, AV_RESOURCE_EXHAUSTED, want, 3);
}

static void test_dot_general_contracting_sizes_differ(void **state) {
  (void)state;
  static const char text[] =
      "module @m {\n"
      "  func.func public @main(%a: tensor<4x3xf32>, %b: tensor<5x2xf32>) -> tensor<4x2xf32> {\n"
      "    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
      "(tensor<4x3xf32>, tensor<5x2xf32>) -> tensor<4x2xf32> loc(\"hostile.py\":3:7)\n"
      "    return %0 : tensor<4x2xf32>\n"
      "  }\n"
      "}\n";
  const char *want[] = {"stablehlo.dot_general", "contracting", "hostile.py\":3:7"};
  expect_refused(text, AV_INVALID_ARGUMENT, want, 3);
}

static void test_gather_scatter_dimension_numbers_out_of_range(void **state) {
  (void)state;
  static const char gather[] =
      "module @m {\n"
      "  func.func public @main(%x: tensor<5x3xf32>, %i: tensor<2x1xi32>) -> tensor<2x3xf32> {\n"
      "    %0 = \"stablehlo.gather\"(%x, %i) {dimension_numbers = #stablehlo.gather<offset_dims = "
      "[1], collapsed_slice_dims = [7], start_index_map = [9], index_vector_dim = 1>, "
      "slice_sizes = array<i64: 1, 3>} : (tensor<5x3xf32>, tensor<2x1xi32>) -> tensor<2x3xf32> "
      "loc(\"hostile.py\":3:9)\n"
      "    return %0 : tensor<2x3xf32>\n"
      "  }\n"
      "}\n";
  const char *want_g[] = {"stablehlo.gather", "collapsed_slice_dims", "hostile.py\":3:9"};
  expect_refused(gather, AV_INVALID_ARGUMENT, want_g, 3);
  static const char scatter[] =
      "module @m {\n"
      "  func.func public @main(%x: tensor<5xf32>, %i: tensor<2x1xi32>, %u: tensor<2xf32>) -> "
      "tensor<5xf32> {\n"
      "    %0 = \"stablehlo.scatter\"(%x, %i, %u) ({\n"
      "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
      "      %s = stablehlo.add %a, %b : tensor<f32>\n"
      "      stablehlo.return %s : tensor<f32>\n"
      "    }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], "
      "inserted_window_dims = [4], scatter_dims_to_operand_dims = [-3], index_vector_dim = 1>} "
      ": (tensor<5xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<5xf32> loc(\"hostile.py\":4:1)\n"
      "    return %0 : tensor<5xf32>\n"
      "  }\n"
      "}\n";
  const char *want_s[] = {"stablehlo.scatter", "inserted_window_dims", "hostile.py\":4:1"};
  expect_refused(scatter, AV_INVALID_ARGUMENT, want_s, 3);
  /* index_vector_dim past the indices' rank */
  static const char ivd[] =
      "module @m {\n"
      "  func.func public @main(%x: tensor<5x3xf32>, %i: tensor<2x1xi32>) -> tensor<2x3xf32> {\n"
      "    %0 = \"stablehlo.gather\"(%x, %i) {dimension_numbers = #stablehlo.gather<offset_dims = "
      "[1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 5>, "
      "slice_sizes = array<i64: 1, 3>} : (tensor<5x3xf32>, tensor<2x1xi32>) -> tensor<2x3xf32>\n"
      "    return %0 : tensor<2x3xf32>\n"
      "  }\n"
      "}\n";
  const char *want_i[] = {"stablehlo.gather", "index_vector_dim"};
  expect_refused(ivd, AV_INVALID_ARGUMENT, want_i, 2);
}

static void test_many_ops_in_one_function(void **state) {
  (void)state;
  const char *env = getenv("ANVIL_HOSTILE_OPS");
  long n = env && *env ? atol(env) : 200000;
  size_t cap = (size_t)n * 64 + 256, len = 0;
  char *t = malloc(cap);
  assert_non_null(t);
  len += (size_t)snprintf(t + len, cap - len,
                          "module @long {\n  func.func public @main(%%x: tensor<4xf32>) -> "
                          "tensor<4xf32> {\n");
  for (long i = 0; i < n; i++) {
    if (i == 0)
      len += (size_t)snprintf(t + len, cap - len, "%%v0 = stablehlo.multiply %%x, %%x : tensor<4xf32>\n");
    else
      len += (size_t)snprintf(t + len, cap - len, "%%v%ld = stablehlo.%s %%v%ld, %%x : tensor<4xf32>\n",
                              i, i % 2 ? "add" : "multiply", i - 1);
  }
  snprintf(t + len, cap - len, "return %%v%ld : tensor<4xf32>\n}\n}\n", n - 1);
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, t, strlen(t), NULL, &d);
  if (!p) fail_msg("%ld ops: %s", n, d.msg);
  printf("hostile: a function of %ld ops compiled\n", n);
  av_program_free(p);
  free(t);
}

/* Calls fanning out 200 ways at every level, four levels deep: whether a call can be spliced
 * looks into the functions it calls, and what it looks at counts against the program's
 * inlining budget (compiler/lower_control.c), so the looking stays bounded: the program
 * compiles in 0.03 s here, 12.9 s with the looking left uncharged (200^3 ops at the top
 * call alone). The time is printed, not asserted. */
static void test_calls_fanning_out(void **state) {
  (void)state;
  enum { FAN = 200, LEVELS = 4 };
  size_t cap = (size_t)LEVELS * FAN * 160 + 4096, len = 0;
  char *t = malloc(cap);
  assert_non_null(t);
  len += (size_t)snprintf(t + len, cap - len,
                          "module @fan {\n  func.func public @main(%%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                          "    %%r = func.call @f0(%%x) : (tensor<4xf32>) -> tensor<4xf32>\n"
                          "    return %%r : tensor<4xf32>\n  }\n");
  for (int l = 0; l < LEVELS; l++) {
    len += (size_t)snprintf(t + len, cap - len,
                            "  func.func private @f%d(%%x: tensor<4xf32>) -> tensor<4xf32> {\n", l);
    if (l == LEVELS - 1) {
      len += (size_t)snprintf(t + len, cap - len, "    %%s0 = stablehlo.multiply %%x, %%x : tensor<4xf32>\n");
    } else {
      for (int k = 0; k < FAN; k++) {
        len += (size_t)snprintf(t + len, cap - len, "    %%c%d = func.call @f%d(%%x) : (tensor<4xf32>) -> tensor<4xf32>\n",
                                k, l + 1);
        if (k == 0)
          len += (size_t)snprintf(t + len, cap - len, "    %%s0 = stablehlo.add %%c0, %%x : tensor<4xf32>\n");
        else
          len += (size_t)snprintf(t + len, cap - len, "    %%s%d = stablehlo.add %%s%d, %%c%d : tensor<4xf32>\n", k,
                                  k - 1, k);
      }
    }
    len += (size_t)snprintf(t + len, cap - len, "    return %%s%d : tensor<4xf32>\n  }\n",
                            l == LEVELS - 1 ? 0 : FAN - 1);
  }
  snprintf(t + len, cap - len, "}\n");
  av_diag d;
  av_diag_init(&d);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  av_program *p = av_program_compile("mlir", 4, t, strlen(t), NULL, &d);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!p) fail_msg("fan-out module: %s", d.msg);
  printf("hostile: calls fanning out %d ways %d levels deep compiled in %.2f s\n", FAN, LEVELS,
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  av_program_free(p);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_element_count_overflow),
      cmocka_unit_test(test_deep_nesting),
      cmocka_unit_test(test_value_larger_than_memory_in_a_loop),
      cmocka_unit_test(test_dot_general_contracting_sizes_differ),
      cmocka_unit_test(test_gather_scatter_dimension_numbers_out_of_range),
      cmocka_unit_test(test_many_ops_in_one_function),
      cmocka_unit_test(test_calls_fanning_out),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
