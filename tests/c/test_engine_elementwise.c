/* Elementwise and convert edge cases, with hand-checked expected values. */
#include <math.h>

#include "test_engine_util.h"

static void binop(const char *name, av_dtype dt, int n, const void *a, const void *b,
                  av_dtype out_dt, const void *expect) {
  av_module *m = av_module_new();
  av_dtype dts[2] = {dt, dt};
  const void *in[2] = {a, b};
  check_op(name, 2, dts, n, in, out_dt, expect, 0, NULL, m);
}

static void unop(const char *name, av_dtype dt, int n, const void *a, av_dtype out_dt,
                 const void *expect) {
  av_module *m = av_module_new();
  const void *in[1] = {a};
  check_op(name, 1, &dt, n, in, out_dt, expect, 0, NULL, m);
}

static void test_int_division(void **state) {
  (void)state;
  int32_t a[4] = {7, -7, INT32_MIN, 5}, b[4] = {0, 0, -1, 2};
  int32_t q[4] = {-1, -1, INT32_MIN, 2};
  binop("stablehlo.divide", AV_DT_S32, 4, a, b, AV_DT_S32, q);
  int32_t ra[4] = {7, -7, INT32_MIN, -5}, rb[4] = {0, 0, -1, 3}, r[4] = {7, -7, 0, -2};
  binop("stablehlo.remainder", AV_DT_S32, 4, ra, rb, AV_DT_S32, r);
  uint8_t ua[2] = {7, 200}, ub[2] = {0, 3}, uq[2] = {255, 66};
  binop("stablehlo.divide", AV_DT_U8, 2, ua, ub, AV_DT_U8, uq);
  int64_t la[1] = {INT64_MIN}, lb[1] = {-1}, lq[1] = {INT64_MIN};
  binop("stablehlo.divide", AV_DT_S64, 1, la, lb, AV_DT_S64, lq);
  /* s4 in one byte per element: -8 / -1 wraps to -8; 7 / 0 = -1 */
  int8_t sa[2] = {-8, 7}, sb[2] = {-1, 0}, sq[2] = {-8, -1};
  binop("stablehlo.divide", AV_DT_S4, 2, sa, sb, AV_DT_S4, sq);
}

static void test_int_overflow_and_pow(void **state) {
  (void)state;
  int32_t a[2] = {INT32_MAX, INT32_MIN}, b[2] = {1, -1}, s[2] = {INT32_MIN, INT32_MAX};
  binop("stablehlo.add", AV_DT_S32, 2, a, b, AV_DT_S32, s);
  int8_t x[2] = {7, -8}, y[2] = {1, -1}, z[2] = {-8, 7}; /* s4 wraps */
  binop("stablehlo.add", AV_DT_S4, 2, x, y, AV_DT_S4, z);
  uint8_t ux[1] = {15}, uy[1] = {1}, uz[1] = {0}; /* u4 wraps */
  binop("stablehlo.add", AV_DT_U4, 1, ux, uy, AV_DT_U4, uz);
  int32_t pa[5] = {2, -2, 2, 1, -1}, pb[5] = {10, 3, -1, -5, -3}, pr[5] = {1024, -8, 0, 1, -1};
  binop("stablehlo.power", AV_DT_S32, 5, pa, pb, AV_DT_S32, pr);
  int32_t na[1] = {INT32_MIN}, nr[1] = {INT32_MIN};
  unop("stablehlo.negate", AV_DT_S32, 1, na, AV_DT_S32, nr);
  unop("stablehlo.abs", AV_DT_S32, 1, na, AV_DT_S32, nr);
}

static void test_shifts(void **state) {
  (void)state;
  int32_t a[4] = {1, 1, 1, -1}, b[4] = {31, 32, -1, 33}, r[4] = {INT32_MIN, 0, 0, 0};
  binop("stablehlo.shift_left", AV_DT_S32, 4, a, b, AV_DT_S32, r);
  int32_t sa[3] = {-8, -8, 8}, sb[3] = {1, 40, 40}, sr[3] = {-4, -1, 0};
  binop("stablehlo.shift_right_arithmetic", AV_DT_S32, 3, sa, sb, AV_DT_S32, sr);
  int32_t la[2] = {-1, -1}, lb[2] = {28, 32}, lr[2] = {15, 0};
  binop("stablehlo.shift_right_logical", AV_DT_S32, 2, la, lb, AV_DT_S32, lr);
  uint8_t ua[1] = {0x80}, ub[1] = {8}, ur[1] = {0};
  binop("stablehlo.shift_right_logical", AV_DT_U8, 1, ua, ub, AV_DT_U8, ur);
  /* s4 -1 is 0b1111: logical shift by 1 gives 0b0111 = 7 */
  int8_t na[2] = {-1, -1}, nb[2] = {1, 4}, nr[2] = {7, 0};
  binop("stablehlo.shift_right_logical", AV_DT_S4, 2, na, nb, AV_DT_S4, nr);
  /* u4 8 is 0b1000: arithmetic shift by 1 gives 0b1100 = 12 */
  uint8_t qa[1] = {8}, qb[1] = {1}, qr[1] = {12};
  binop("stablehlo.shift_right_arithmetic", AV_DT_U4, 1, qa, qb, AV_DT_U4, qr);
}

static void test_bit_counts(void **state) {
  (void)state;
  int32_t a[3] = {0, 1, -1}, r[3] = {32, 31, 0};
  unop("stablehlo.count_leading_zeros", AV_DT_S32, 3, a, AV_DT_S32, r);
  int8_t s4[3] = {1, 0, -1}, s4r[3] = {3, 4, 0};
  unop("stablehlo.count_leading_zeros", AV_DT_S4, 3, s4, AV_DT_S4, s4r);
  uint8_t u[2] = {255, 0x11}, ur[2] = {8, 2};
  unop("stablehlo.popcnt", AV_DT_U8, 2, u, AV_DT_U8, ur);
  int8_t p4[1] = {-1}, p4r[1] = {4};
  unop("stablehlo.popcnt", AV_DT_S4, 1, p4, AV_DT_S4, p4r);
  uint8_t n1[2] = {0, 1}, n1r[2] = {1, 0};
  unop("stablehlo.not", AV_DT_PRED, 2, n1, AV_DT_PRED, n1r);
}

static void test_float_to_int_saturation(void **state) {
  (void)state;
  float a[6] = {NAN, 1e10f, -1e10f, -1.7f, 2.9f, INFINITY};
  int32_t r[6] = {0, INT32_MAX, INT32_MIN, -1, 2, INT32_MAX};
  unop("stablehlo.convert", AV_DT_F32, 6, a, AV_DT_S32, r);
  float b[4] = {-5.0f, 300.0f, 3.9f, -0.5f};
  uint8_t br[4] = {0, 255, 3, 0};
  unop("stablehlo.convert", AV_DT_F32, 4, b, AV_DT_U8, br);
  double c[2] = {1e300, -1e300};
  int64_t cr[2] = {INT64_MAX, INT64_MIN};
  unop("stablehlo.convert", AV_DT_F64, 2, c, AV_DT_S64, cr);
  int32_t w[2] = {300, -129};
  int8_t wr[2] = {44, 127}; /* int -> int wraps */
  unop("stablehlo.convert", AV_DT_S32, 2, w, AV_DT_S8, wr);
  float p[3] = {0.0f, -0.0f, NAN};
  uint8_t pr[3] = {0, 0, 1};
  unop("stablehlo.convert", AV_DT_F32, 3, p, AV_DT_PRED, pr);
}

static void test_narrow_float_rounding(void **state) {
  (void)state;
  /* bf16 keeps 7 mantissa bits; ties go to even */
  float a[3] = {1.00390625f, 1.01171875f, 65520.0f};
  uint16_t bf[3] = {0x3F80, 0x3F82, 0x4780};
  unop("stablehlo.convert", AV_DT_F32, 3, a, AV_DT_BF16, bf);
  /* f16: 65520 rounds to inf, 65519 to the max 65504 */
  float h[3] = {65520.0f, 65519.0f, 5.9604645e-08f};
  uint16_t hr[3] = {0x7C00, 0x7BFF, 0x0001};
  unop("stablehlo.convert", AV_DT_F32, 3, h, AV_DT_F16, hr);
  /* f8E4M3FN: 448 is the max, 464 ties to 448 (even), 500 is out of range: NaN */
  float e[4] = {448.0f, 464.0f, 500.0f, -0.0f};
  uint8_t er[4] = {0x7E, 0x7E, 0x7F, 0x80};
  unop("stablehlo.convert", AV_DT_F32, 4, e, AV_DT_F8E4M3FN, er);
  /* f8E5M2: 1.125 is halfway between 1.0 and 1.25: even is 1.0 (0x3C) */
  float g[2] = {1.125f, 1.375f};
  uint8_t gr[2] = {0x3C, 0x3E};
  unop("stablehlo.convert", AV_DT_F32, 2, g, AV_DT_F8E5M2, gr);
  /* bf16 arithmetic through f32: 1 + 2^-8 rounds back to 1 */
  uint16_t x[1] = {0x3F80}, y[1] = {0x3B80}, z[1] = {0x3F80};
  binop("stablehlo.add", AV_DT_BF16, 1, x, y, AV_DT_BF16, z);
}

static void test_compare_totalorder(void **state) {
  (void)state;
  float a[4] = {-0.0f, NAN, -NAN, 1.0f}, b[4] = {0.0f, INFINITY, -INFINITY, NAN};
  av_module *m = av_module_new();
  av_named_attr attrs[2] = {
      {"comparison_direction", av_attr_string(m, AV_ATTR_ENUM, "LT", 2)},
      {"compare_type", av_attr_string(m, AV_ATTR_ENUM, "TOTALORDER", 10)}};
  av_dtype dts[2] = {AV_DT_F32, AV_DT_F32};
  const void *in[2] = {a, b};
  uint8_t total[4] = {1, 0, 1, 1}; /* +NaN sorts above +Inf */
  check_op("stablehlo.compare", 2, dts, 4, in, AV_DT_PRED, total, 2, attrs, m);
  m = av_module_new();
  av_named_attr fattrs[2] = {
      {"comparison_direction", av_attr_string(m, AV_ATTR_ENUM, "LT", 2)},
      {"compare_type", av_attr_string(m, AV_ATTR_ENUM, "FLOAT", 5)}};
  uint8_t ieee[4] = {0, 0, 0, 0};
  check_op("stablehlo.compare", 2, dts, 4, in, AV_DT_PRED, ieee, 2, fattrs, m);
  m = av_module_new();
  av_named_attr ne[1] = {{"comparison_direction", av_attr_string(m, AV_ATTR_ENUM, "NE", 2)}};
  uint8_t ner[4] = {0, 1, 1, 1};
  check_op("stablehlo.compare", 2, dts, 4, in, AV_DT_PRED, ner, 1, ne, m);
}

static void test_float_rounding_ops(void **state) {
  (void)state;
  float a[4] = {0.5f, 1.5f, 2.5f, -0.5f}, even[4] = {0.0f, 2.0f, 2.0f, -0.0f};
  float afz[4] = {1.0f, 2.0f, 3.0f, -1.0f};
  unop("stablehlo.round_nearest_even", AV_DT_F32, 4, a, AV_DT_F32, even);
  unop("stablehlo.round_nearest_afz", AV_DT_F32, 4, a, AV_DT_F32, afz);
  float s[4] = {-3.0f, 0.0f, -0.0f, 2.0f}, sr[4] = {-1.0f, 0.0f, -0.0f, 1.0f};
  unop("stablehlo.sign", AV_DT_F32, 4, s, AV_DT_F32, sr);
  float fin[3] = {INFINITY, NAN, 1.0f};
  uint8_t finr[3] = {0, 0, 1};
  unop("stablehlo.is_finite", AV_DT_F32, 3, fin, AV_DT_PRED, finr);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_int_division),        cmocka_unit_test(test_int_overflow_and_pow),
      cmocka_unit_test(test_shifts),              cmocka_unit_test(test_bit_counts),
      cmocka_unit_test(test_float_to_int_saturation), cmocka_unit_test(test_narrow_float_rounding),
      cmocka_unit_test(test_compare_totalorder),  cmocka_unit_test(test_float_rounding_ops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
