/* The kernels' narrow-float codec (reduce_elem.c) against ml_dtypes: for each format, the
 * bit patterns numpy/ml_dtypes produce for a few values (np.array(v, dtype=t).view(uint)),
 * the largest finite value (ml_dtypes.finfo(t).max and its bits) and the smallest subnormal. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "runtime/kernels/reduce_elem.h"

typedef struct fmt_case {
  av_dtype t;
  double max;
  uint32_t max_bits;
  double tiny;
  /* bits for 0.1, 1/3, 100, -2.5, 1e6, 1e-6, nan, inf, -0.0 */
  uint32_t bits[9];
} fmt_case;

static const fmt_case kCases[] = {
    {AV_DT_F8E3M4, 15.5, 0x6f, 0.015625, {0x6, 0x15, 0x70, 0xc4, 0x70, 0x0, 0x78, 0x70, 0x80}},
    {AV_DT_F8E4M3, 240.0, 0x77, 0.001953125, {0x1d, 0x2b, 0x6c, 0xc2, 0x78, 0x0, 0x7c, 0x78, 0x80}},
    {AV_DT_F8E4M3FN, 448.0, 0x7e, 0.001953125, {0x1d, 0x2b, 0x6c, 0xc2, 0x7f, 0x0, 0x7f, 0x7f, 0x80}},
    {AV_DT_F8E4M3FNUZ, 240.0, 0x7f, 0.0009765625, {0x25, 0x33, 0x74, 0xca, 0x80, 0x0, 0x80, 0x80, 0x0}},
    {AV_DT_F8E4M3B11FNUZ, 30.0, 0x7f, 0.0001220703125, {0x3d, 0x4b, 0x80, 0xe2, 0x80, 0x0, 0x80, 0x80, 0x0}},
    {AV_DT_F8E5M2, 57344.0, 0x7b, 1.52587890625e-05, {0x2e, 0x35, 0x56, 0xc1, 0x7c, 0x0, 0x7e, 0x7c, 0x80}},
    {AV_DT_F8E5M2FNUZ, 57344.0, 0x7f, 7.62939453125e-06, {0x32, 0x39, 0x5a, 0xc5, 0x80, 0x0, 0x80, 0x80, 0x0}},
    {AV_DT_F8E8M0FNU, 1.7014118346046923e+38, 0xfe, 5.877471754111438e-39, {0x7c, 0x7d, 0x86, 0xff, 0x93, 0x6b, 0xff, 0xff, 0xff}},
    {AV_DT_F4E2M1FN, 6.0, 0x7, 0.5, {0x0, 0x1, 0x7, 0xc, 0x7, 0x0, 0x8, 0x7, 0x8}},
    {AV_DT_F6E2M3FN, 7.5, 0x1f, 0.125, {0x1, 0x3, 0x1f, 0x32, 0x1f, 0x0, 0x20, 0x1f, 0x20}},
    {AV_DT_F6E3M2FN, 28.0, 0x1f, 0.0625, {0x2, 0x5, 0x1f, 0x31, 0x1f, 0x0, 0x20, 0x1f, 0x20}},
    {AV_DT_F16, 65504.0, 0x7bff, 5.960464477539063e-08, {0x2e66, 0x3555, 0x5640, 0xc100, 0x7c00, 0x11, 0x7e00, 0x7c00, 0x8000}},
    {AV_DT_BF16, 3.3895313892515355e+38, 0x7f7f, 9.183549615799121e-41,
     {0x3dcd, 0x3eab, 0x42c8, 0xc020, 0x4974, 0x3586, 0x7fc0, 0x7f80, 0x8000}},
};

static void test_narrow_float_codec_matches_ml_dtypes(void **state) {
  (void)state;
  const double in[9] = {0.1, 1.0 / 3.0, 100.0, -2.5, 1e6, 1e-6, NAN, INFINITY, -0.0};
  for (size_t c = 0; c < sizeof kCases / sizeof *kCases; c++) {
    const fmt_case *k = &kCases[c];
    for (int i = 0; i < 9; i++) {
      uint32_t b = av_kel_double_to_narrow(k->t, in[i]);
      if (b != k->bits[i]) print_error("%s value %d: got 0x%x want 0x%x\n", av_dtype_mlir_name(k->t), i, b, k->bits[i]);
      assert_true(b == k->bits[i]);
    }
    assert_true(av_kel_narrow_to_double(k->t, k->max_bits) == k->max);
    assert_true(av_kel_double_to_narrow(k->t, k->max) == k->max_bits);
    uint32_t tiny_bits = k->t == AV_DT_F8E8M0FNU ? 0 : 1;
    assert_true(av_kel_narrow_to_double(k->t, tiny_bits) == k->tiny);
  }
}

/* Every finite bit pattern decodes and re-encodes to itself (8-bit formats exhaustively). */
static void test_round_trip_all_bytes(void **state) {
  (void)state;
  for (size_t c = 0; c < sizeof kCases / sizeof *kCases; c++) {
    av_dtype t = kCases[c].t;
    int nbits = av_dtype_bits(t);
    for (uint32_t b = 0; b < (1u << nbits) && b < 65536; b++) {
      double v = av_kel_narrow_to_double(t, b);
      if (isnan(v)) continue;
      assert_true(av_kel_double_to_narrow(t, v) == b);
    }
  }
}

static void test_int_wrap_and_convert(void **state) {
  (void)state;
  unsigned char p[8];
  av_kel_store_bits(AV_DT_S4, p, 9); /* 0b1001 -> -7 sign-extended into the byte */
  assert_int_equal((int8_t)p[0], -7);
  assert_true((int64_t)av_kel_load_bits(AV_DT_S4, p) == -7);
  av_kel_store_bits(AV_DT_U4, p, 0x1f);
  assert_int_equal(p[0], 0xf);
  float f = 3.75f;
  av_kel_convert(AV_DT_S8, p, AV_DT_F32, &f);
  assert_int_equal((int8_t)p[0], 3);
  f = 1e10f; /* saturates */
  av_kel_convert(AV_DT_S16, p, AV_DT_F32, &f);
  int16_t s16;
  memcpy(&s16, p, 2);
  assert_int_equal(s16, 32767);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_narrow_float_codec_matches_ml_dtypes),
      cmocka_unit_test(test_round_trip_all_bytes),
      cmocka_unit_test(test_int_wrap_and_convert),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
