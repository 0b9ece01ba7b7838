/* Whole fused regions generated against the interpreter: the same program compiled with
 * generation off and on (each ISA this CPU has) and run on the same inputs must give the same
 * bits. The regions are the shapes generation meets in programs: a threefry2x32 chain (u64
 * iota, converts, rotations, scalar keys), a transcendental chain, mixed types (f64 inside an
 * f32 region, integer extremes, compares, selects, iotas along an axis), more live values than
 * registers (spills), broadcasts of rows and columns, several outputs, and a region inside a
 * loop body. Lengths are odd. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "compiler/program.h"
#include "compiler/program_module.h"
#include "util/storage.h"

enum { MAXIO = 4 };

static uint64_t rng = 0x2545F4914F6CDD1Du;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static av_program *compile_mode(const char *text, const char *mode) {
  av_codegen_set_mode(mode);
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  av_codegen_set_mode(NULL);
  if (!p) fail_msg("compile (%s): %s", mode, d.msg);
  return p;
}

/* Fills an input of the program: floats mostly moderate with specials mixed in, integers
 * random bits. */
static av_tensor make_input(const av_program *p, int i) {
  av_tensor t = {0};
  const int64_t *dims;
  assert_true(av_program_input_type(p, i, &t.dtype, &t.rank, &dims));
  int64_t n = 1;
  for (int k = 0; k < t.rank; k++) n *= (t.dims[k] = dims[k]);
  size_t es = av_dtype_size(t.dtype);
  t.storage = av_storage_alloc_uninit((size_t)n * es + 1);
  assert_non_null(t.storage);
  for (int64_t e = 0; e < n; e++) {
    uint64_t v = rnd();
    char *o = (char *)t.storage->data + (size_t)e * es;
    if (t.dtype == AV_DT_F32) {
      static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, 88.5f, -104.0f, 3e5f};
      float f = e % 37 < 9 ? sp[e % 37] : (float)((double)(int64_t)(v % 2000001) / 100000.0 - 10.0);
      memcpy(o, &f, 4);
    } else if (t.dtype == AV_DT_F64) {
      double f = (double)(int64_t)(v % 2000001) / 100000.0 - 10.0;
      memcpy(o, &f, 8);
    } else if (t.dtype == AV_DT_PRED) {
      o[0] = (char)(v & 1);
    } else {
      memcpy(o, &v, es);
    }
  }
  return t;
}

static void release(av_tensor *t, int n) {
  for (int i = 0; i < n; i++) av_storage_release(t[i].storage);
}

/* Runs `text` with generation off and on; outputs must be bit-identical (ulp > 0: f32 outputs
 * may differ by that many ulps, for log / log1p / expm1, whose generated form is not the
 * interpreter's; nan_any: any NaN matches any NaN, for sums, where which of two NaNs an add
 * returns depends on the operand order the C compiler picked for the interpreter's loop). */
static void check_program_nan(const char *text, int ulp, bool nan_any) {
  av_program *ref = compile_mode(text, "0");
  int nin = av_program_num_inputs(ref), nout = av_program_num_outputs(ref);
  assert_true(nin <= MAXIO && nout <= MAXIO);
  av_tensor in[MAXIO], want[MAXIO];
  for (int i = 0; i < nin; i++) in[i] = make_input(ref, i);
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_program_execute(ref, 0, in, want, &d), AV_OK);
  /* avx512 also with four interleaved copies of a body, which by default only long bodies
   * over large arrays get */
  static const char *const modes[] = {"avx512", "avx512", "avx2"};
  static const char *const unroll[] = {NULL, "4", NULL};
  for (unsigned m = 0; m < 3; m++) {
    av_codegen_set_mode(modes[m]);
    bool on = av_codegen_enabled();
    av_codegen_set_mode(NULL);
    if (!on) continue;
    if (unroll[m]) setenv("ANVIL_CODEGEN_UNROLL", unroll[m], 1);
    av_program *gen = compile_mode(text, modes[m]);
    unsetenv("ANVIL_CODEGEN_UNROLL");
    av_tensor got[MAXIO];
    assert_int_equal(av_program_execute(gen, 0, in, got, &d), AV_OK);
    for (int o = 0; o < nout; o++) {
      size_t es = av_dtype_size(want[o].dtype);
      int64_t n = 1;
      for (int k = 0; k < want[o].rank; k++) n *= want[o].dims[k];
      const char *a = got[o].storage->data, *b = want[o].storage->data;
      for (int64_t e = 0; e < n; e++) {
        if (!memcmp(a + (size_t)e * es, b + (size_t)e * es, es)) continue;
        if (nan_any && want[o].dtype == AV_DT_F32) {
          float x, y;
          memcpy(&x, a + (size_t)e * 4, 4);
          memcpy(&y, b + (size_t)e * 4, 4);
          if (isnan(x) && isnan(y)) continue;
        }
        if (ulp && want[o].dtype == AV_DT_F32) {
          int32_t x, y;
          memcpy(&x, a + (size_t)e * 4, 4);
          memcpy(&y, b + (size_t)e * 4, 4);
          if ((x ^ y) >= 0 && llabs((long long)x - y) <= ulp) continue;
        }
        uint64_t x = 0, y = 0;
        memcpy(&x, a + (size_t)e * es, es);
        memcpy(&y, b + (size_t)e * es, es);
        fail_msg("%s%s: output %d element %lld: generated 0x%llx, interpreter 0x%llx", modes[m],
                 unroll[m] ? " (4 copies)" : "", o,
                 (long long)e, (unsigned long long)x, (unsigned long long)y);
      }
    }
    release(got, nout);
    av_program_free(gen);
  }
  release(want, nout);
  release(in, nin);
  av_program_free(ref);
}

static void check_program(const char *text, int ulp) { check_program_nan(text, ulp, false); }

/* ---- programs */

/* threefry2x32 as jax.random.bits writes it: a u64 iota split into two u32 halves, 20
 * rounds of add / rotate / xor with key injections every 4, the two streams xored. */
static char *threefry_text(int n) {
  size_t cap = 64 * 1024, len = 0;
  char *t = malloc(cap);
  assert_non_null(t);
#define EMIT(...) len += (size_t)snprintf(t + len, cap - len, __VA_ARGS__)
  EMIT("func.func public @main(%%k0: tensor<ui32>, %%k1: tensor<ui32>) -> tensor<%dxui32> {\n", n);
  EMIT("  %%io = stablehlo.iota dim = 0 : tensor<%dxui64>\n", n);
  EMIT("  %%c32 = stablehlo.constant dense<32> : tensor<ui64>\n");
  EMIT("  %%b32 = stablehlo.broadcast_in_dim %%c32, dims = [] : (tensor<ui64>) -> tensor<%dxui64>\n", n);
  EMIT("  %%hi64 = stablehlo.shift_right_logical %%io, %%b32 : tensor<%dxui64>\n", n);
  EMIT("  %%x0 = stablehlo.convert %%hi64 : (tensor<%dxui64>) -> tensor<%dxui32>\n", n, n);
  EMIT("  %%y0 = stablehlo.convert %%io : (tensor<%dxui64>) -> tensor<%dxui32>\n", n, n);
  EMIT("  %%kx = stablehlo.xor %%k0, %%k1 : tensor<ui32>\n");
  EMIT("  %%c = stablehlo.constant dense<466688986> : tensor<ui32>\n");
  EMIT("  %%k2 = stablehlo.xor %%kx, %%c : tensor<ui32>\n");
  const char *keys[3] = {"k0", "k1", "k2"};
  for (int k = 0; k < 3; k++)
    EMIT("  %%bk%d = stablehlo.broadcast_in_dim %%%s, dims = [] : (tensor<ui32>) -> tensor<%dxui32>\n", k, keys[k], n);
  static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  for (int r = 0; r < 32; r++) {
    EMIT("  %%cl%d = stablehlo.constant dense<%d> : tensor<ui32>\n", r, r);
    EMIT("  %%bl%d = stablehlo.broadcast_in_dim %%cl%d, dims = [] : (tensor<ui32>) -> tensor<%dxui32>\n", r, r, n);
  }
  EMIT("  %%x1 = stablehlo.add %%x0, %%bk0 : tensor<%dxui32>\n", n);
  EMIT("  %%y1 = stablehlo.add %%y0, %%bk1 : tensor<%dxui32>\n", n);
  int v = 1;
  for (int round = 0; round < 20; round++) {
    int c = rot[(round / 4) % 2][round % 4];
    EMIT("  %%x%d = stablehlo.add %%x%d, %%y%d : tensor<%dxui32>\n", v + 1, v, v, n);
    EMIT("  %%sl%d = stablehlo.shift_left %%y%d, %%bl%d : tensor<%dxui32>\n", v, v, c, n);
    EMIT("  %%sr%d = stablehlo.shift_right_logical %%y%d, %%bl%d : tensor<%dxui32>\n", v, v, 32 - c, n);
    EMIT("  %%ro%d = stablehlo.or %%sl%d, %%sr%d : tensor<%dxui32>\n", v, v, v, n);
    EMIT("  %%y%d = stablehlo.xor %%x%d, %%ro%d : tensor<%dxui32>\n", v + 1, v + 1, v, n);
    v++;
    if (round % 4 == 3) { /* key injection */
      int j = round / 4 + 1;
      EMIT("  %%xa%d = stablehlo.add %%x%d, %%bk%d : tensor<%dxui32>\n", v, v, j % 3, n);
      EMIT("  %%ya%d = stablehlo.add %%y%d, %%bk%d : tensor<%dxui32>\n", v, v, (j + 1) % 3, n);
      EMIT("  %%x%d = stablehlo.add %%xa%d, %%bl%d : tensor<%dxui32>\n", v + 1, v, j, n);
      EMIT("  %%y%d = stablehlo.add %%ya%d, %%bl0 : tensor<%dxui32>\n", v + 1, v, n);
      v++;
    }
  }
  EMIT("  %%out = stablehlo.xor %%x%d, %%y%d : tensor<%dxui32>\n", v, v, n);
  EMIT("  return %%out : tensor<%dxui32>\n}\n", n);
#undef EMIT
  assert_true(len < cap);
  return t;
}

static void test_threefry(void **state) {
  (void)state;
  char *t = threefry_text(1037);
  check_program(t, 0);
  free(t);
}

static const char *chain_text =
    "func.func public @main(%x: tensor<1037xf32>) -> (tensor<1037xf32>, tensor<1037xf32>) {\n"
    "  %s = stablehlo.sine %x : tensor<1037xf32>\n"
    "  %c = stablehlo.cosine %x : tensor<1037xf32>\n"
    "  %e = stablehlo.exponential %s : tensor<1037xf32>\n"
    "  %t = stablehlo.tanh %e : tensor<1037xf32>\n"
    "  %q = stablehlo.sqrt %t : tensor<1037xf32>\n"
    "  %g = stablehlo.logistic %q : tensor<1037xf32>\n"
    "  %m = stablehlo.maximum %g, %c : tensor<1037xf32>\n"
    "  %n = stablehlo.minimum %m, %x : tensor<1037xf32>\n"
    "  %f = stablehlo.floor %n : tensor<1037xf32>\n"
    "  %r = stablehlo.round_nearest_afz %x : tensor<1037xf32>\n"
    "  %k = stablehlo.compare GT, %f, %r : (tensor<1037xf32>, tensor<1037xf32>) -> tensor<1037xi1>\n"
    "  %o = stablehlo.select %k, %f, %r : tensor<1037xi1>, tensor<1037xf32>\n"
    "  %z = stablehlo.rsqrt %g : tensor<1037xf32>\n"
    "  %w = stablehlo.divide %z, %o : tensor<1037xf32>\n"
    "  return %o, %w : tensor<1037xf32>, tensor<1037xf32>\n"
    "}\n";

static void test_transcendental_chain(void **state) {
  (void)state;
  check_program(chain_text, 0);
}

static const char *log_text =
    "func.func public @main(%x: tensor<1037xf32>) -> (tensor<1037xf32>, tensor<1037xf32>, tensor<1037xf32>) {\n"
    "  %h = stablehlo.constant dense<0.125> : tensor<f32>\n"
    "  %hb = stablehlo.broadcast_in_dim %h, dims = [] : (tensor<f32>) -> tensor<1037xf32>\n"
    "  %s = stablehlo.multiply %x, %hb : tensor<1037xf32>\n"
    "  %a = stablehlo.log_plus_one %s : tensor<1037xf32>\n"
    "  %b = stablehlo.exponential_minus_one %s : tensor<1037xf32>\n"
    "  %ax = stablehlo.abs %x : tensor<1037xf32>\n"
    "  %ah = stablehlo.add %ax, %hb : tensor<1037xf32>\n"
    "  %c = stablehlo.log %ah : tensor<1037xf32>\n"
    "  return %a, %b, %c : tensor<1037xf32>, tensor<1037xf32>, tensor<1037xf32>\n"
    "}\n";

/* each generated result within 0.51 ulp of exact, glibc's within 0.7: at most 1 apart. (Not on
 * subnormal inputs: programs run with subnormals flushed, which generated code, like every
 * vector instruction, reads as zero, and glibc's scalar logf does not.) */
static void test_log_chain(void **state) {
  (void)state;
  check_program(log_text, 1);
}

static const char *mixed_text =
    "func.func public @main(%x: tensor<37x29xf32>, %i: tensor<37x29xi32>, %b: tensor<37x29xi8>)\n"
    "    -> (tensor<37x29xf32>, tensor<37x29xi32>, tensor<37x29xi1>, tensor<37x29xi8>) {\n"
    "  %xd = stablehlo.convert %x : (tensor<37x29xf32>) -> tensor<37x29xf64>\n"
    "  %h = stablehlo.constant dense<0.3> : tensor<f64>\n"
    "  %hb = stablehlo.broadcast_in_dim %h, dims = [] : (tensor<f64>) -> tensor<37x29xf64>\n"
    "  %p = stablehlo.multiply %xd, %hb : tensor<37x29xf64>\n"
    "  %pf = stablehlo.convert %p : (tensor<37x29xf64>) -> tensor<37x29xf32>\n"
    "  %ia = stablehlo.iota dim = 1 : tensor<37x29xi32>\n"
    "  %ib = stablehlo.iota dim = 0 : tensor<37x29xi32>\n"
    "  %s = stablehlo.add %i, %ia : tensor<37x29xi32>\n"
    "  %m = stablehlo.multiply %s, %ib : tensor<37x29xi32>\n"
    "  %sh = stablehlo.shift_right_arithmetic %m, %ia : tensor<37x29xi32>\n"
    "  %mx = stablehlo.maximum %sh, %i : tensor<37x29xi32>\n"
    "  %fi = stablehlo.convert %mx : (tensor<37x29xi32>) -> tensor<37x29xf32>\n"
    "  %sum = stablehlo.add %pf, %fi : tensor<37x29xf32>\n"
    "  %xi = stablehlo.convert %sum : (tensor<37x29xf32>) -> tensor<37x29xi32>\n"
    "  %k = stablehlo.compare LT, %xi, %i, SIGNED : (tensor<37x29xi32>, tensor<37x29xi32>) -> tensor<37x29xi1>\n"
    "  %ku = stablehlo.compare LT, %xi, %i, UNSIGNED : (tensor<37x29xi32>, tensor<37x29xi32>) -> tensor<37x29xi1>\n"
    "  %kk = stablehlo.xor %k, %ku : tensor<37x29xi1>\n"
    "  %bm = stablehlo.multiply %b, %b : tensor<37x29xi8>\n"
    "  %bn = stablehlo.select %kk, %bm, %b : tensor<37x29xi1>, tensor<37x29xi8>\n"
    "  return %sum, %xi, %kk, %bn : tensor<37x29xf32>, tensor<37x29xi32>, tensor<37x29xi1>, tensor<37x29xi8>\n"
    "}\n";

static void test_mixed_types(void **state) {
  (void)state;
  check_program(mixed_text, 0);
}

/* bf16 arithmetic (a bf16 model's elementwise code): each op widens to f32, computes, and
 * rounds back to nearest even, as the kernels do; random bf16 bits include NaNs, infinities
 * and denormals, and the converts from f32 round ties. */
static const char *bf16_text =
    "func.func public @main(%x: tensor<1001xbf16>, %y: tensor<1001xbf16>, %f: tensor<1001xf32>)\n"
    "    -> (tensor<1001xbf16>, tensor<1001xf32>, tensor<1001xi1>) {\n"
    "  %fb = stablehlo.convert %f : (tensor<1001xf32>) -> tensor<1001xbf16>\n"
    "  %0 = stablehlo.multiply %x, %y : tensor<1001xbf16>\n"
    "  %1 = stablehlo.add %0, %fb : tensor<1001xbf16>\n"
    "  %2 = stablehlo.maximum %1, %y : tensor<1001xbf16>\n"
    "  %3 = stablehlo.tanh %2 : tensor<1001xbf16>\n"
    "  %4 = stablehlo.divide %3, %x : tensor<1001xbf16>\n"
    "  %5 = stablehlo.exponential %4 : tensor<1001xbf16>\n"
    "  %c = stablehlo.compare GT, %5, %x : (tensor<1001xbf16>, tensor<1001xbf16>) -> tensor<1001xi1>\n"
    "  %s = stablehlo.select %c, %5, %0 : tensor<1001xi1>, tensor<1001xbf16>\n"
    "  %w = stablehlo.convert %s : (tensor<1001xbf16>) -> tensor<1001xf32>\n"
    "  return %s, %w, %c : tensor<1001xbf16>, tensor<1001xf32>, tensor<1001xi1>\n"
    "}\n";

static void test_bf16(void **state) {
  (void)state;
  check_program(bf16_text, 0);
}

/* 40 products of x live at once (more than any ISA has registers), then summed */
static void test_register_pressure(void **state) {
  (void)state;
  size_t cap = 16 * 1024, len = 0;
  char *t = malloc(cap);
  assert_non_null(t);
#define EMIT(...) len += (size_t)snprintf(t + len, cap - len, __VA_ARGS__)
  EMIT("func.func public @main(%%x: tensor<999xf32>, %%y: tensor<999xf32>) -> tensor<999xf32> {\n");
  for (int k = 0; k < 40; k++) {
    EMIT("  %%c%d = stablehlo.constant dense<%d.25> : tensor<f32>\n", k, k);
    EMIT("  %%b%d = stablehlo.broadcast_in_dim %%c%d, dims = [] : (tensor<f32>) -> tensor<999xf32>\n", k, k);
    EMIT("  %%m%d = stablehlo.multiply %%x, %%b%d : tensor<999xf32>\n", k, k);
  }
  EMIT("  %%s0 = stablehlo.add %%m0, %%y : tensor<999xf32>\n");
  for (int k = 1; k < 40; k++) EMIT("  %%s%d = stablehlo.add %%s%d, %%m%d : tensor<999xf32>\n", k, k - 1, 40 - k);
  EMIT("  return %%s39 : tensor<999xf32>\n}\n");
#undef EMIT
  check_program(t, 0);
  free(t);
}

/* JAX's erf_inv shape (cg_guard.h): a sqrt only the rare arm reads and coefficient selects,
 * all on one condition that is false in about 1 lane of 200 (an i32 input's random bits
 * compared with a threshold), so that some iterations take the guard's fast tail and others
 * the ordinary one */
static const char *guard_text =
    "func.func public @main(%x: tensor<1037xf32>, %k: tensor<1037xi32>) -> tensor<1037xf32> {\n"
    "  %t = stablehlo.constant dense<-2125958848> : tensor<i32>\n"
    "  %tb = stablehlo.broadcast_in_dim %t, dims = [] : (tensor<i32>) -> tensor<1037xi32>\n"
    "  %c = stablehlo.compare GT, %k, %tb, SIGNED : (tensor<1037xi32>, tensor<1037xi32>) -> tensor<1037xi1>\n"
    "  %h = stablehlo.constant dense<2.5> : tensor<f32>\n"
    "  %hb = stablehlo.broadcast_in_dim %h, dims = [] : (tensor<f32>) -> tensor<1037xf32>\n"
    "  %e = stablehlo.constant dense<3.0> : tensor<f32>\n"
    "  %eb = stablehlo.broadcast_in_dim %e, dims = [] : (tensor<f32>) -> tensor<1037xf32>\n"
    "  %w = stablehlo.multiply %x, %x : tensor<1037xf32>\n"
    "  %a = stablehlo.subtract %w, %hb : tensor<1037xf32>\n"
    "  %s = stablehlo.sqrt %w : tensor<1037xf32>\n"
    "  %b = stablehlo.subtract %s, %eb : tensor<1037xf32>\n"
    "  %v = stablehlo.select %c, %a, %b : tensor<1037xi1>, tensor<1037xf32>\n"
    "  %p0 = stablehlo.select %c, %hb, %eb : tensor<1037xi1>, tensor<1037xf32>\n"
    "  %m0 = stablehlo.multiply %p0, %v : tensor<1037xf32>\n"
    "  %p1 = stablehlo.select %c, %eb, %hb : tensor<1037xi1>, tensor<1037xf32>\n"
    "  %q1 = stablehlo.add %p1, %m0 : tensor<1037xf32>\n"
    "  %m1 = stablehlo.multiply %q1, %v : tensor<1037xf32>\n"
    "  %p2 = stablehlo.select %c, %w, %x : tensor<1037xi1>, tensor<1037xf32>\n"
    "  %q2 = stablehlo.add %p2, %m1 : tensor<1037xf32>\n"
    "  return %q2 : tensor<1037xf32>\n"
    "}\n";

static void test_guarded_tail(void **state) {
  (void)state;
  check_program(guard_text, 0);
}

static const char *box_text =
    "func.func public @main(%x: tensor<61x33xf32>, %r: tensor<33xf32>, %c: tensor<61xf32>) -> tensor<61x33xf32> {\n"
    "  %rb = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<33xf32>) -> tensor<61x33xf32>\n"
    "  %cb = stablehlo.broadcast_in_dim %c, dims = [0] : (tensor<61xf32>) -> tensor<61x33xf32>\n"
    "  %a = stablehlo.add %x, %rb : tensor<61x33xf32>\n"
    "  %m = stablehlo.multiply %a, %cb : tensor<61x33xf32>\n"
    "  %t = stablehlo.tanh %m : tensor<61x33xf32>\n"
    "  return %t : tensor<61x33xf32>\n"
    "}\n";

static void test_broadcasts(void **state) {
  (void)state;
  check_program(box_text, 0);
}

static const char *loop_text =
    "func.func public @main(%x: tensor<77xf32>, %y: tensor<77xf32>) -> tensor<77xf32> {\n"
    "  %z = stablehlo.constant dense<0> : tensor<i32>\n"
    "  %r:2 = stablehlo.while(%i = %z, %v = %x) : tensor<i32>, tensor<77xf32>\n"
    "    cond {\n"
    "      %n = stablehlo.constant dense<50> : tensor<i32>\n"
    "      %k = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
    "      stablehlo.return %k : tensor<i1>\n"
    "    } do {\n"
    "      %one = stablehlo.constant dense<1> : tensor<i32>\n"
    "      %i2 = stablehlo.add %i, %one : tensor<i32>\n"
    "      %s = stablehlo.sine %v : tensor<77xf32>\n"
    "      %p = stablehlo.multiply %s, %y : tensor<77xf32>\n"
    "      %e = stablehlo.exponential %p : tensor<77xf32>\n"
    "      %v2 = stablehlo.add %v, %e : tensor<77xf32>\n"
    "      stablehlo.return %i2, %v2 : tensor<i32>, tensor<77xf32>\n"
    "    }\n"
    "  return %r#1 : tensor<77xf32>\n"
    "}\n";

static void test_loop_body(void **state) {
  (void)state;
  check_program(loop_text, 0);
}

/* n-body's forces as JAX writes them (broadcasts through unit axes, an inner sum over the 3
 * coordinates, rsqrt^3 times the masses, the outer sum over the other bodies): a reduction
 * nest, generated as one kernel that never writes the N x N x 3 differences; 77 bodies (not
 * a multiple of the lanes), the result used by an update after it. */
static const char *nbody_text =
    "func.func public @main(%p: tensor<77x3xf32>, %m: tensor<77xf32>) -> tensor<77x3xf32> {\n"
    "  %a0 = stablehlo.broadcast_in_dim %p, dims = [1, 2] : (tensor<77x3xf32>) -> tensor<1x77x3xf32>\n"
    "  %b0 = stablehlo.broadcast_in_dim %p, dims = [0, 2] : (tensor<77x3xf32>) -> tensor<77x1x3xf32>\n"
    "  %a = stablehlo.broadcast_in_dim %a0, dims = [0, 1, 2] : (tensor<1x77x3xf32>) -> tensor<77x77x3xf32>\n"
    "  %b = stablehlo.broadcast_in_dim %b0, dims = [0, 1, 2] : (tensor<77x1x3xf32>) -> tensor<77x77x3xf32>\n"
    "  %d = stablehlo.subtract %a, %b : tensor<77x77x3xf32>\n"
    "  %dd = stablehlo.multiply %d, %d : tensor<77x77x3xf32>\n"
    "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "  %r = stablehlo.reduce(%dd init: %z) applies stablehlo.add across dimensions = [2] : (tensor<77x77x3xf32>, tensor<f32>) -> tensor<77x77xf32>\n"
    "  %e = stablehlo.constant dense<0.01> : tensor<f32>\n"
    "  %eb = stablehlo.broadcast_in_dim %e, dims = [] : (tensor<f32>) -> tensor<77x77xf32>\n"
    "  %r2 = stablehlo.add %r, %eb : tensor<77x77xf32>\n"
    "  %rs = stablehlo.rsqrt %r2 : tensor<77x77xf32>\n"
    "  %c = stablehlo.multiply %rs, %rs : tensor<77x77xf32>\n"
    "  %c2 = stablehlo.multiply %c, %rs : tensor<77x77xf32>\n"
    "  %m0 = stablehlo.broadcast_in_dim %m, dims = [1] : (tensor<77xf32>) -> tensor<1x77xf32>\n"
    "  %mb = stablehlo.broadcast_in_dim %m0, dims = [0, 1] : (tensor<1x77xf32>) -> tensor<77x77xf32>\n"
    "  %inv = stablehlo.multiply %mb, %c2 : tensor<77x77xf32>\n"
    "  %i0 = stablehlo.broadcast_in_dim %inv, dims = [0, 1] : (tensor<77x77xf32>) -> tensor<77x77x1xf32>\n"
    "  %ib = stablehlo.broadcast_in_dim %i0, dims = [0, 1, 2] : (tensor<77x77x1xf32>) -> tensor<77x77x3xf32>\n"
    "  %t = stablehlo.multiply %d, %ib : tensor<77x77x3xf32>\n"
    "  %acc = stablehlo.reduce(%t init: %z) applies stablehlo.add across dimensions = [1] : (tensor<77x77x3xf32>, tensor<f32>) -> tensor<77x3xf32>\n"
    "  %h = stablehlo.constant dense<0.5> : tensor<f32>\n"
    "  %hb = stablehlo.broadcast_in_dim %h, dims = [] : (tensor<f32>) -> tensor<77x3xf32>\n"
    "  %s = stablehlo.multiply %acc, %hb : tensor<77x3xf32>\n"
    "  %o = stablehlo.add %p, %s : tensor<77x3xf32>\n"
    "  return %o : tensor<77x3xf32>\n"
    "}\n";

static void test_nbody_nest(void **state) {
  (void)state;
  check_program_nan(nbody_text, 0, true);
}

/* Where the system refuses executable memory (here: the process denies itself W^X
 * exceptions with prctl(PR_SET_MDWE), Linux 6.3+), generation turns off with one warning and
 * the interpreter runs every region, with the same results. In a child process: the setting
 * cannot be undone. */
static void test_exec_memory_refused(void **state) {
  (void)state;
  av_codegen_set_mode("1");
  bool on = av_codegen_enabled();
  av_codegen_set_mode(NULL);
  if (!on) skip();
  int err[2];
  assert_int_equal(pipe(err), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(err[1], 2);
    close(err[0]);
    if (prctl(65 /* PR_SET_MDWE */, 1 /* PR_MDWE_REFUSE_EXEC_GAIN */, 0, 0, 0) != 0) _exit(77);
    av_program *ref = compile_mode(chain_text, "0");
    av_program *gen = compile_mode(chain_text, "1"); /* generation refused: interpreted */
    av_program *again = compile_mode(chain_text, "1"); /* no second warning */
    av_tensor in = make_input(ref, 0), a[2], b[2], c[2];
    av_diag d;
    av_diag_init(&d);
    if (av_program_execute(ref, 0, &in, a, &d) != AV_OK || av_program_execute(gen, 0, &in, b, &d) != AV_OK ||
        av_program_execute(again, 0, &in, c, &d) != AV_OK)
      _exit(2);
    for (int o = 0; o < 2; o++)
      if (memcmp(a[o].storage->data, b[o].storage->data, 1037 * 4) || memcmp(a[o].storage->data, c[o].storage->data, 1037 * 4))
        _exit(3);
    av_codegen_set_mode("1");
    _exit(av_codegen_enabled() ? 4 : 0);
  }
  close(err[1]);
  char buf[4096];
  size_t len = 0;
  ssize_t got;
  while ((got = read(err[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)got;
  buf[len] = 0;
  close(err[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) skip(); /* the kernel has no PR_SET_MDWE */
  assert_int_equal(WEXITSTATUS(status), 0);
  const char *w = strstr(buf, "executable memory refused");
  if (!w) fail_msg("no warning; stderr: %s", buf);
  assert_null(strstr(w + 1, "executable memory refused")); /* once */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threefry),          cmocka_unit_test(test_transcendental_chain),
      cmocka_unit_test(test_log_chain),         cmocka_unit_test(test_mixed_types),
      cmocka_unit_test(test_bf16),
      cmocka_unit_test(test_register_pressure), cmocka_unit_test(test_broadcasts),
      cmocka_unit_test(test_loop_body),         cmocka_unit_test(test_nbody_nest),
      cmocka_unit_test(test_guarded_tail),
      cmocka_unit_test(test_exec_memory_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
