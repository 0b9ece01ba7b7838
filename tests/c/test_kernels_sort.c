/* sort kernel: stability, NaN / -0 ordering under TOTALORDER, multi-operand, custom
 * comparators, non-last dimension. Expected values by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "runtime/kernels/sort.h"
#include "test_kernels_util.h"

static av_scalar_fn simple_cmp(const char *dir, const char *type, av_code (*call)(void *, const void *const *, void *const *, av_diag *)) {
  av_scalar_fn f = tk_fn(call, AV_OP_COMPARE);
  f.direction = dir;
  f.compare_type = type;
  return f;
}

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* TOTALORDER LT: -NaN < -inf < -1 < -0 < +0 < 1 < inf < +NaN. */
static void test_totalorder_nan_and_signed_zero(void **state) {
  (void)state;
  float x[8] = {NAN, 1.0f, -0.0f, INFINITY, -NAN, 0.0f, -1.0f, -INFINITY}, out[8];
  int64_t xd[1] = {8};
  av_view X = tk_view(x, AV_DT_F32, 1, xd), O = tk_view(out, AV_DT_F32, 1, xd);
  av_sort_params p = {.ninputs = 1, .dimension = 0, .is_stable = true,
                      .comparator = simple_cmp("LT", "TOTALORDER", tk_lt_f32)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_sort(&p, &X, &O, &d), AV_OK);
  assert_true(isnan(out[0]) && signbit(out[0]));
  assert_true(out[1] == -INFINITY && out[2] == -1.0f);
  assert_true(bits_of(out[3]) == 0x80000000u && bits_of(out[4]) == 0u);
  assert_true(out[5] == 1.0f && out[6] == INFINITY && isnan(out[7]) && !signbit(out[7]));
}

/* Multi-operand, key = operand 0, GT, equal keys keep their original order (stable). */
static void test_stable_multi_operand_descending(void **state) {
  (void)state;
  int32_t k[6] = {2, 5, 2, 7, 5, 2}, v[6] = {0, 1, 2, 3, 4, 5}, ko[6], vo[6];
  int64_t xd[1] = {6};
  av_view in[2] = {tk_view(k, AV_DT_S32, 1, xd), tk_view(v, AV_DT_S32, 1, xd)};
  av_view out[2] = {tk_view(ko, AV_DT_S32, 1, xd), tk_view(vo, AV_DT_S32, 1, xd)};
  av_sort_params p = {.ninputs = 2, .dimension = 0, .is_stable = true,
                      .comparator = simple_cmp("GT", "SIGNED", tk_gt_i32)};
  av_diag d;
  av_diag_init(&d);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) p.comparator.simple = AV_OP_UNKNOWN; /* the body path must agree */
    assert_int_equal(av_kernel_sort(&p, in, out, &d), AV_OK);
    static const int32_t ek[6] = {7, 5, 5, 2, 2, 2}, ev[6] = {3, 1, 4, 0, 2, 5};
    for (int i = 0; i < 6; i++) {
      assert_int_equal(ko[i], ek[i]);
      assert_int_equal(vo[i], ev[i]);
    }
  }
}

/* Custom comparator on operand 1 (args 2, 3): sort by value, carrying operand 0 along. */
static av_code by_second_operand(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx; (void)d;
  *(uint8_t *)out[0] = *(const float *)in[2] < *(const float *)in[3];
  return AV_OK;
}

static void test_custom_comparator_along_dim0(void **state) {
  (void)state;
  /* [3,2] arrays sorted along dimension 0 (columns independently) by operand 1 */
  int32_t a[6] = {10, 20, 11, 21, 12, 22}, ao[6];
  float b[6] = {3, 1, 1, 2, 2, 3}, bo[6];
  int64_t xd[2] = {3, 2};
  av_view in[2] = {tk_view(a, AV_DT_S32, 2, xd), tk_view(b, AV_DT_F32, 2, xd)};
  av_view out[2] = {tk_view(ao, AV_DT_S32, 2, xd), tk_view(bo, AV_DT_F32, 2, xd)};
  av_sort_params p = {.ninputs = 2, .dimension = -2, .comparator = tk_fn(by_second_operand, AV_OP_UNKNOWN)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_sort(&p, in, out, &d), AV_OK);
  /* column 0: b = 3,1,2 -> order rows 1,2,0; column 1: b = 1,2,3 -> unchanged */
  static const int32_t ea[6] = {11, 20, 12, 21, 10, 22};
  static const float eb[6] = {1, 1, 2, 2, 3, 3};
  for (int i = 0; i < 6; i++) {
    assert_int_equal(ao[i], ea[i]);
    assert_true(bo[i] == eb[i]);
  }
}

/* A long row exercises the merge passes; in place (output aliases input). */
static void test_long_row_in_place(void **state) {
  (void)state;
  enum { N = 1000 };
  static float x[N];
  for (int i = 0; i < N; i++) x[i] = (float)((i * 7919) % N);
  int64_t xd[1] = {N};
  av_view X = tk_view(x, AV_DT_F32, 1, xd);
  av_sort_params p = {.ninputs = 1, .dimension = 0, .comparator = simple_cmp("LT", "FLOAT", tk_lt_f32)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_sort(&p, &X, &X, &d), AV_OK);
  for (int i = 0; i < N; i++) assert_true(x[i] == (float)i); /* 7919 is coprime with 1000 */
}

/* bf16 keys (bit patterns: 1.0 = 0x3f80, -2.0 = 0xc000, 0.5 = 0x3f00, -0.0 = 0x8000, +0 = 0),
 * TOTALORDER GT: 1.0, 0.5, +0, -0, -2.0. */
static void test_bf16_totalorder_descending(void **state) {
  (void)state;
  uint16_t x[5] = {0x3f00, 0x8000, 0xc000, 0x3f80, 0x0000}, out[5];
  int64_t xd[1] = {5};
  av_view X = tk_view(x, AV_DT_BF16, 1, xd), O = tk_view(out, AV_DT_BF16, 1, xd);
  av_sort_params p = {.ninputs = 1, .dimension = 0, .comparator = simple_cmp("GT", "TOTALORDER", NULL)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_sort(&p, &X, &O, &d), AV_OK);
  static const uint16_t e[5] = {0x3f80, 0x3f00, 0x0000, 0x8000, 0xc000};
  for (int i = 0; i < 5; i++) assert_int_equal(out[i], e[i]);
}

static void test_sort_rejects_bad_dimension(void **state) {
  (void)state;
  float x[2] = {0, 1};
  int64_t xd[1] = {2};
  av_view X = tk_view(x, AV_DT_F32, 1, xd);
  av_sort_params p = {.ninputs = 1, .dimension = 1, .comparator = simple_cmp("LT", "FLOAT", tk_lt_f32)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_sort(&p, &X, &X, &d), AV_INVALID_ARGUMENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_totalorder_nan_and_signed_zero),
      cmocka_unit_test(test_stable_multi_operand_descending),
      cmocka_unit_test(test_custom_comparator_along_dim0),
      cmocka_unit_test(test_long_row_in_place),
      cmocka_unit_test(test_bf16_totalorder_descending),
      cmocka_unit_test(test_sort_rejects_bad_dimension),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
