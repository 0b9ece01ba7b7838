/* The vectorisable f32 exp / tanh / logistic against glibc's double-precision functions
 * rounded to f32 (an independent reference): at most 1 ulp (tanh: 2) apart over a sweep of every
 * 997th f32 bit pattern (also checked with every 97th: 44M inputs, same worst cases), exact on the special values. Also through the elementwise kernel. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/fast_math.h"

static int64_t ordered(float f) { /* f32 bit patterns mapped onto a line, so ulps subtract */
  int32_t i;
  memcpy(&i, &f, 4);
  return i < 0 ? -(int64_t)(i & 0x7fffffff) : (int64_t)i;
}

static double ref_exp(double x) { return exp(x); }
static double ref_tanh(double x) { return tanh(x); }
static double ref_logistic(double x) { return 1 / (1 + exp(-x)); }

static void sweep(float (*fn)(float), double (*ref)(double), const char *name, int64_t max_ulp) {
  int64_t worst = 0, off = 0, n = 0;
  float worst_x = 0;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 997) {
    uint32_t u = (uint32_t)b;
    float x;
    memcpy(&x, &u, 4);
    if (isnan(x)) continue;
    float got = fn(x), want = (float)ref(x);
    n++;
    int64_t dist = llabs(ordered(got) - ordered(want));
    if (isnan(got) || isnan(want)) dist = isnan(got) && isnan(want) ? 0 : 1 << 30;
    if (dist) off++;
    if (dist > worst) {
      worst = dist;
      worst_x = x;
    }
  }
  print_message("%s: %lld inputs, %lld not correctly rounded, worst %lld ulp at %a\n", name,
                (long long)n, (long long)off, (long long)worst, worst_x);
  assert_true(worst <= max_ulp);
}

static void test_exp_sweep(void **state) {
  (void)state;
  sweep(av_fm_expf, ref_exp, "exp", 1);
}
static void test_tanh_sweep(void **state) {
  (void)state;
  sweep(av_fm_tanhf, ref_tanh, "tanh", 2); /* f32 division of f32 expm1: 4% off by 1-2 ulp */
}
static void test_logistic_sweep(void **state) {
  (void)state;
  sweep(av_fm_logisticf, ref_logistic, "logistic", 1);
}

static void test_special_values(void **state) {
  (void)state;
  assert_true(av_fm_expf(0.0f) == 1.0f && av_fm_expf(-0.0f) == 1.0f);
  assert_true(av_fm_expf(INFINITY) == INFINITY && av_fm_expf(-INFINITY) == 0.0f);
  assert_true(isnan(av_fm_expf(NAN)));
  assert_true(av_fm_expf(88.8f) == INFINITY && av_fm_expf(88.7f) < INFINITY);
  assert_true(av_fm_expf(-104.0f) == 0.0f);
  float sub = av_fm_expf(-100.0f); /* 3.72e-44: a subnormal */
  assert_true(sub > 0 && sub < 1.2e-38f && sub == (float)exp(-100.0));
  assert_true(av_fm_tanhf(0.0f) == 0.0f && signbit(av_fm_tanhf(-0.0f)));
  assert_true(av_fm_tanhf(INFINITY) == 1.0f && av_fm_tanhf(-INFINITY) == -1.0f);
  assert_true(av_fm_tanhf(1e-30f) == 1e-30f && isnan(av_fm_tanhf(NAN)));
  assert_true(av_fm_logisticf(0.0f) == 0.5f && av_fm_logisticf(INFINITY) == 1.0f);
  assert_true(av_fm_logisticf(-INFINITY) == 0.0f && isnan(av_fm_logisticf(NAN)));
  assert_true(av_fm_logisticf(-100.0f) == (float)exp(-100.0));
}

/* The f32 elementwise exponential/tanh kernels use these (odd lengths, in place too). */
static void test_elementwise_kernels(void **state) {
  (void)state;
  enum { N = 37 };
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (float)(i - 18) * 0.7f;
  av_ew_kernel k;
  assert_true(av_ew_prepare(AV_OP_EXPONENTIAL, AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &k));
  const void *in[1] = {x};
  av_ew_run(&k, in, y, N);
  for (int i = 0; i < N; i++) assert_true(fabs(y[i] - exp((double)x[i])) <= 1.2e-7 * exp((double)x[i]));
  assert_true(av_ew_prepare(AV_OP_TANH, AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &k));
  memcpy(y, x, sizeof y);
  in[0] = y;
  av_ew_run(&k, in, y, N); /* in place */
  for (int i = 0; i < N; i++) assert_true(fabs(y[i] - tanh((double)x[i])) <= 2.4e-7);
}

/* The kernels may run a wider-ISA clone of the loop (AVX2 on x86-64): same IEEE operations,
 * so bit-identical results to the functions above on a sweep of bit patterns. */
static void test_kernel_clones_match(void **state) {
  (void)state;
  enum { M = 4096 };
  static float x[M], y[M];
  av_opcode ops[3] = {AV_OP_EXPONENTIAL, AV_OP_TANH, AV_OP_LOGISTIC};
  float (*fns[3])(float) = {av_fm_expf, av_fm_tanhf, av_fm_logisticf};
  for (int o = 0; o < 3; o++) {
    av_ew_kernel k;
    assert_true(av_ew_prepare(ops[o], AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &k));
    for (uint64_t b = 0; b <= 0xffffffffu; b += 7919ull * M) {
      for (int i = 0; i < M; i++) {
        uint32_t u = (uint32_t)(b + 7919ull * (uint64_t)i);
        memcpy(&x[i], &u, 4);
      }
      const void *in[1] = {x};
      av_ew_run(&k, in, y, M);
      for (int i = 0; i < M; i++) {
        float want = fns[o](x[i]);
        if (memcmp(&y[i], &want, 4) != 0 && !(isnan(y[i]) && isnan(want)))
          fail_msg("op %d at %a: kernel %a, function %a", o, x[i], y[i], want);
      }
    }
  }
}

/* exp's plain path (chunks whose inputs all lie within +-AV_FM_EXP_PLAIN) gives the general
 * path's bits: the functions on every 61st bit pattern in range, and the kernel on chunks of
 * in-range inputs (the plain loop) with a NaN or a large value in some of them (the general
 * loop for that chunk only). */
static void test_exp_plain_path(void **state) {
  (void)state;
  int64_t n = 0;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 61) {
    uint32_t u = (uint32_t)b;
    float x;
    memcpy(&x, &u, 4);
    if (!(fabsf(x) <= AV_FM_EXP_PLAIN)) continue;
    float p = av_fm_expf_plain(x), g = av_fm_expf(x);
    if (memcmp(&p, &g, 4) != 0) fail_msg("exp at %a: plain %a, general %a", x, p, g);
    n++;
  }
  assert_true(n > 30000000); /* about half of all patterns */
  enum { M = 1000 };
  static float x[M], y[M];
  av_ew_kernel k;
  assert_true(av_ew_prepare(AV_OP_EXPONENTIAL, AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &k));
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < M; i++) x[i] = (float)((i * 7919) % 17401 - 8700) * 0.01f; /* +-87 */
    if (round == 1) x[300] = NAN;    /* chunk 256..511 takes the general loop */
    if (round == 2) x[999] = 100.0f; /* the last, partial chunk does */
    const void *in[1] = {x};
    av_ew_run(&k, in, y, M);
    for (int i = 0; i < M; i++) {
      float want = av_fm_expf(x[i]);
      if (memcmp(&y[i], &want, 4) != 0 && !(isnan(y[i]) && isnan(want)))
        fail_msg("round %d element %d (%a): kernel %a, function %a", round, i, x[i], y[i], want);
    }
  }
}

/* f32 sin / cos through the elementwise kernel (the reduced-argument path, glibc beyond
 * AV_FM_TRIG_MAX): at most 1 ulp from glibc's double sin / cos rounded to f32 over every
 * 997th bit pattern, run in place and out of place, and exact on special values. */
static void trig_sweep(av_opcode op, double (*ref)(double), const char *name) {
  enum { M = 4096 };
  static float x[M], y[M];
  av_ew_kernel k;
  assert_true(av_ew_prepare(op, AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &k));
  int64_t worst = 0, off = 0, n = 0;
  float worst_x = 0;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 997ull * M) {
    int m = 0;
    for (int i = 0; i < M && b + 997ull * (uint64_t)i <= 0xffffffffu; i++, m++) {
      uint32_t u = (uint32_t)(b + 997ull * (uint64_t)i);
      memcpy(&x[i], &u, 4);
    }
    memcpy(y, x, sizeof y);
    bool in_place = (b / (997ull * M)) % 2 == 0; /* both ways, alternating */
    const void *in[1] = {in_place ? (const float *)y : (const float *)x};
    av_ew_run(&k, in, y, m);
    for (int i = 0; i < m; i++) {
      float want = (float)ref(x[i]);
      int64_t dist = llabs(ordered(y[i]) - ordered(want));
      if (isnan(y[i]) || isnan(want)) dist = isnan(y[i]) && isnan(want) ? 0 : 1 << 30;
      n++;
      if (dist) off++;
      if (dist > worst) {
        worst = dist;
        worst_x = x[i];
      }
    }
  }
  print_message("%s: %lld inputs, %lld not correctly rounded, worst %lld ulp at %a\n", name,
                (long long)n, (long long)off, (long long)worst, worst_x);
  assert_true(worst <= 1);
  float sp[6] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f};
  const void *in[1] = {sp};
  float out[6];
  av_ew_run(&k, in, out, 6);
  if (op == AV_OP_SINE) {
    assert_true(out[0] == 0.0f && !signbit(out[0]));
    assert_true(out[1] == 0.0f && signbit(out[1]));
  } else {
    assert_true(out[0] == 1.0f && out[1] == 1.0f);
  }
  assert_true(isnan(out[2]) && isnan(out[3]) && isnan(out[4]));
  assert_true(out[5] == (float)ref((double)1e30f));
}

static void test_sin_cos_sweep(void **state) {
  (void)state;
  trig_sweep(AV_OP_SINE, sin, "sin");
  trig_sweep(AV_OP_COSINE, cos, "cos");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exp_sweep),
      cmocka_unit_test(test_tanh_sweep),
      cmocka_unit_test(test_logistic_sweep),
      cmocka_unit_test(test_sin_cos_sweep),
      cmocka_unit_test(test_special_values),
      cmocka_unit_test(test_elementwise_kernels),
      cmocka_unit_test(test_kernel_clones_match),
      cmocka_unit_test(test_exp_plain_path),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
