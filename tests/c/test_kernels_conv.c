/* convolution kernel. Expected values from jax.lax.conv_general_dilated on the stock CPU
 * backend (expressions in comments); window reversal checked by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "runtime/kernels/conv.h"
#include "runtime/kernels/reduce_elem.h"
#include "test_kernels_util.h"

/* x = (np.arange(2*5*6*4).reshape(2,5,6,4) % 7 - 3); w = (np.arange(3*2*2*6).reshape(3,2,2,6) % 5 - 2)
 * lax.conv_general_dilated(x, w, window_strides=(2,1), padding=((1,2),(-1,1)), lhs_dilation=(1,2),
 *     rhs_dilation=(2,1), dimension_numbers=('NHWC','HWIO','NCHW'), feature_group_count=2)  -> [2,6,2,10] */
static const int kConv1[240] = {
    0, -5, -2, 0, 10, -9, -6, 3, 6, -6, -5, 20, 2, -6, 2, 3, 2, -9, 2, 0, -5, 20, 2, -6, 2, 3, 2, 
    -9, 2, 0, -10, 0, 6, -2, -6, 10, 10, -6, -2, 6, -10, 0, 6, -2, -6, 10, 10, -6, -2, 6, -5, -5, 
    0, 2, -9, 2, 3, 2, -6, 2, -6, 2, 20, -5, -3, 2, -5, -5, 0, 2, 0, -2, -5, 0, -3, 2, 20, -10, -6, 
    6, 0, -2, -5, 0, -3, 2, 20, -10, -6, 6, 6, -6, -10, 20, 2, -3, 0, -5, -2, 0, 6, -6, -10, 20, 2, 
    -3, 0, -5, -2, 0, 2, 0, -5, -5, 2, -3, -5, 20, 2, -6, 10, -9, -6, 3, 6, -6, -10, 20, 2, -3, 2, 
    3, 2, -9, 2, 0, -5, -5, 2, -3, 2, 3, 2, -9, 2, 0, -5, -5, 2, -3, -6, 10, 10, -6, -2, 6, 0, -10, 
    2, 2, -6, 10, 10, -6, -2, 6, 0, -10, 2, 2, -9, 2, 3, 2, -6, 2, 20, -5, -3, 2, -3, 2, -5, -5, 0, 
    2, -9, 2, 3, 2, -3, 2, 20, -10, -6, 6, 3, -6, -9, 10, -3, 2, 20, -10, -6, 6, 3, -6, -9, 10, 2, 
    -3, 0, -5, -2, 0, 10, -9, -6, 3, 2, -3, 0, -5, -2, 0, 10, -9, -6, 3, 2, -3, -5, 20, 2, -6, 2, 
    3, 2, -9
};

static void run_conv1(av_dtype dt) {
  size_t es = av_dtype_size(dt);
  static char x[240 * 16], w[72 * 16], y[240 * 16];
  for (int i = 0; i < 240; i++) av_kel_store_real(dt, x + i * es, (double)(i % 7 - 3));
  for (int i = 0; i < 72; i++) av_kel_store_real(dt, w + i * es, (double)(i % 5 - 2));
  int64_t xd[4] = {2, 5, 6, 4}, wd[4] = {3, 2, 2, 6}, yd[4] = {2, 6, 2, 10};
  av_view X = tk_view(x, dt, 4, xd), W = tk_view(w, dt, 4, wd), Y = tk_view(y, dt, 4, yd);
  av_conv_params p;
  av_conv_params_init(&p);
  p.nspatial = 2;
  p.input_batch_dimension = 0, p.input_feature_dimension = 3;
  p.input_spatial_dimensions[0] = 1, p.input_spatial_dimensions[1] = 2;
  p.kernel_input_feature_dimension = 2, p.kernel_output_feature_dimension = 3;
  p.kernel_spatial_dimensions[0] = 0, p.kernel_spatial_dimensions[1] = 1;
  p.output_batch_dimension = 0, p.output_feature_dimension = 1;
  p.output_spatial_dimensions[0] = 2, p.output_spatial_dimensions[1] = 3;
  p.window_strides[0] = 2;
  p.padding_lo[0] = 1, p.padding_hi[0] = 2, p.padding_lo[1] = -1, p.padding_hi[1] = 1;
  p.lhs_dilation[1] = 2;
  p.rhs_dilation[0] = 2;
  p.feature_group_count = 2;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_convolution(&p, &X, &W, &Y, &d), AV_OK);
  for (int i = 0; i < 240; i++) assert_true(av_kel_load_real(dt, y + i * es) == kConv1[i]);
  yd[3] = 9; /* wrong result shape */
  assert_int_equal(av_kernel_convolution(&p, &X, &W, &Y, &d), AV_INVALID_ARGUMENT);
}

static void test_conv2d_layouts_dilation_padding_groups(void **state) {
  (void)state;
  av_dtype types[] = {AV_DT_F32, AV_DT_F64, AV_DT_S32, AV_DT_C64, AV_DT_BF16};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) run_conv1(types[i]);
}

/* x2 = (np.arange(60).reshape(4,3,5) % 6 - 2); w2 = (np.arange(24).reshape(4,3,2) % 4 - 1)
 * lax.conv_general_dilated(x2, w2, (1,), ((0,0),), dimension_numbers=('NCH','OIH','NCH'), batch_group_count=2) */
static void test_batch_group_count(void **state) {
  (void)state;
  static const int expect[32] = {-1, -6, 1, 2, 1, 0, -1, 4, -1, -6, 1, 2, 1, 0, -1, 4,
                                 2,  3,  4, -1, 4, 9, 2, 1, 2,  3,  4, -1, 4, 9, 2, 1};
  double x[60], w[24], y[32];
  for (int i = 0; i < 60; i++) x[i] = i % 6 - 2;
  for (int i = 0; i < 24; i++) w[i] = i % 4 - 1;
  int64_t xd[3] = {4, 3, 5}, wd[3] = {4, 3, 2}, yd[3] = {2, 4, 4};
  av_view X = tk_view(x, AV_DT_F64, 3, xd), W = tk_view(w, AV_DT_F64, 3, wd), Y = tk_view(y, AV_DT_F64, 3, yd);
  av_conv_params p;
  av_conv_params_init(&p);
  p.nspatial = 1;
  p.input_batch_dimension = 0, p.input_feature_dimension = 1, p.input_spatial_dimensions[0] = 2;
  p.kernel_output_feature_dimension = 0, p.kernel_input_feature_dimension = 1, p.kernel_spatial_dimensions[0] = 2;
  p.output_batch_dimension = 0, p.output_feature_dimension = 1, p.output_spatial_dimensions[0] = 2;
  p.batch_group_count = 2;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_convolution(&p, &X, &W, &Y, &d), AV_OK);
  for (int i = 0; i < 32; i++) assert_true(y[i] == expect[i]);
}

/* 1-D int32: x = [1,2,3,4,5], w = [1,0,-1], padding (1,1) -> [-2,-2,-2,-2,4] (jax, as above);
 * with window reversal the kernel acts as [-1,0,1]: [2,2,2,2,-4] (by hand). */
static void test_int_conv_and_window_reversal(void **state) {
  (void)state;
  int32_t x[5] = {1, 2, 3, 4, 5}, w[3] = {1, 0, -1}, y[5];
  int64_t xd[3] = {1, 1, 5}, wd[3] = {1, 1, 3}, yd[3] = {1, 1, 5};
  av_view X = tk_view(x, AV_DT_S32, 3, xd), W = tk_view(w, AV_DT_S32, 3, wd), Y = tk_view(y, AV_DT_S32, 3, yd);
  av_conv_params p;
  av_conv_params_init(&p);
  p.nspatial = 1;
  p.input_batch_dimension = 0, p.input_feature_dimension = 1, p.input_spatial_dimensions[0] = 2;
  p.kernel_output_feature_dimension = 0, p.kernel_input_feature_dimension = 1, p.kernel_spatial_dimensions[0] = 2;
  p.output_batch_dimension = 0, p.output_feature_dimension = 1, p.output_spatial_dimensions[0] = 2;
  p.padding_lo[0] = p.padding_hi[0] = 1;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_convolution(&p, &X, &W, &Y, &d), AV_OK);
  static const int32_t e1[5] = {-2, -2, -2, -2, 4}, e2[5] = {2, 2, 2, 2, -4};
  for (int i = 0; i < 5; i++) assert_int_equal(y[i], e1[i]);
  p.window_reversal[0] = true;
  assert_int_equal(av_kernel_convolution(&p, &X, &W, &Y, &d), AV_OK);
  for (int i = 0; i < 5; i++) assert_int_equal(y[i], e2[i]);
  p.feature_group_count = 2; /* does not divide 1 input feature */
  assert_int_equal(av_kernel_convolution(&p, &X, &W, &Y, &d), AV_INVALID_ARGUMENT);
  p.feature_group_count = 1;
  p.padding_hi[0] = INT64_MAX; /* hostile: rejected, no overflow */
  assert_int_equal(av_kernel_convolution(&p, &X, &W, &Y, &d), AV_INVALID_ARGUMENT);
  p.padding_hi[0] = 1;
  p.lhs_dilation[0] = INT64_MAX;
  assert_int_equal(av_kernel_convolution(&p, &X, &W, &Y, &d), AV_INVALID_ARGUMENT);
  p.lhs_dilation[0] = 1;
  p.input_feature_dimension = 7; /* out of range */
  assert_int_equal(av_kernel_convolution(&p, &X, &W, &Y, &d), AV_INVALID_ARGUMENT);
}

/* Above the small-size threshold the GEMM goes to BLAS: NCHW [2,16,24,24] x OIHW [16,8,3,3],
 * feature_group_count 2, stride 2, padding 1, against direct loops written here (integer data,
 * exact sums). */
static void test_conv_blas_path_against_loops(void **state) {
  (void)state;
  enum { NB = 2, C = 16, H = 24, W = 24, O = 16, CG = 8, KH = 3, KW = 3, OH = 12, OW = 12 };
  static float x[NB * C * H * W], w[O * CG * KH * KW], y[NB * O * OH * OW];
  for (int i = 0; i < NB * C * H * W; i++) x[i] = (float)(i % 5 - 2);
  for (int i = 0; i < O * CG * KH * KW; i++) w[i] = (float)(i % 3 - 1);
  int64_t xd[4] = {NB, C, H, W}, wd[4] = {O, CG, KH, KW}, yd[4] = {NB, O, OH, OW};
  av_view X = tk_view(x, AV_DT_F32, 4, xd), Wv = tk_view(w, AV_DT_F32, 4, wd), Y = tk_view(y, AV_DT_F32, 4, yd);
  av_conv_params p;
  av_conv_params_init(&p);
  p.nspatial = 2;
  p.input_batch_dimension = 0, p.input_feature_dimension = 1;
  p.input_spatial_dimensions[0] = 2, p.input_spatial_dimensions[1] = 3;
  p.kernel_output_feature_dimension = 0, p.kernel_input_feature_dimension = 1;
  p.kernel_spatial_dimensions[0] = 2, p.kernel_spatial_dimensions[1] = 3;
  p.output_batch_dimension = 0, p.output_feature_dimension = 1;
  p.output_spatial_dimensions[0] = 2, p.output_spatial_dimensions[1] = 3;
  p.window_strides[0] = p.window_strides[1] = 2;
  p.padding_lo[0] = p.padding_lo[1] = p.padding_hi[0] = p.padding_hi[1] = 1;
  p.feature_group_count = 2;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_convolution(&p, &X, &Wv, &Y, &d), AV_OK);
  for (int b = 0; b < NB; b++)
    for (int o = 0; o < O; o++)
      for (int oh = 0; oh < OH; oh++)
        for (int ow = 0; ow < OW; ow++) {
          double acc = 0;
          int g = o / (O / 2);
          for (int c = 0; c < CG; c++)
            for (int kh = 0; kh < KH; kh++)
              for (int kw = 0; kw < KW; kw++) {
                int ih = oh * 2 + kh - 1, iw = ow * 2 + kw - 1;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += (double)x[((b * C + g * CG + c) * H + ih) * W + iw] * w[((o * CG + c) * KH + kh) * KW + kw];
              }
          assert_true(y[((b * O + o) * OH + oh) * OW + ow] == (float)acc);
        }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv2d_layouts_dilation_padding_groups),
      cmocka_unit_test(test_batch_group_count),
      cmocka_unit_test(test_int_conv_and_window_reversal),
      cmocka_unit_test(test_conv_blas_path_against_loops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
