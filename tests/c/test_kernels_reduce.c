/* reduce, reduce_window and select_and_scatter kernels. Expected values are hand-checked or
 * from jax.lax on the stock CPU backend (expressions in comments). */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>

#include "runtime/kernels/reduce.h"
#include "runtime/kernels/reduce_window.h"
#include "runtime/kernels/select_and_scatter.h"
#include "test_kernels_util.h"

static void test_sum_rows_fast_and_generic(void **state) {
  (void)state;
  float x[6] = {1, 2, 3, 4, 5, 6}, init = 10, out[2];
  int64_t xd[2] = {2, 3}, od[1] = {2};
  av_view X = tk_view(x, AV_DT_F32, 2, xd), I = tk_view(&init, AV_DT_F32, 0, NULL), O = tk_view(out, AV_DT_F32, 1, od);
  av_reduce_params p = {.ninputs = 1, .ndims = 1, .dims = {1}, .body = tk_fn(tk_add_f32, AV_OP_ADD)};
  av_diag d;
  av_diag_init(&d);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) p.body.simple = AV_OP_UNKNOWN; /* force the body path */
    assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_OK);
    assert_true(out[0] == 16 && out[1] == 25); /* 10+1+2+3, 10+4+5+6 */
  }
  p.dims[0] = 0; /* columns: kept inner axis */
  int64_t od3[1] = {3};
  float out3[3];
  O = tk_view(out3, AV_DT_F32, 1, od3);
  assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_OK);
  assert_true(out3[0] == 15 && out3[1] == 17 && out3[2] == 19);
}

/* bf16 sums accumulate in f32 (jnp: lax.reduce(np.ones(4096, bf16), bf16(0), lax.add, (0,))
 * is 4096 on XLA:CPU; a running bf16 sum would stop at 256) and max/min of bf16/f16 equal the
 * body's f32 comparison, NaN first. The body is never called. */
static av_code never_called(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx, (void)in, (void)out;
  return av_diag_set(d, AV_INTERNAL, "the body was called");
}

static void test_narrow_float_reductions(void **state) {
  (void)state;
  enum { N = 4096 };
  static uint16_t x[2 * N];
  for (int i = 0; i < 2 * N; i++) x[i] = 0x3f80; /* bf16 1.0 */
  uint16_t init = 0, out[2];
  int64_t xd[2] = {2, N}, od[1] = {2};
  av_view X = tk_view(x, AV_DT_BF16, 2, xd), I = tk_view(&init, AV_DT_BF16, 0, NULL),
          O = tk_view(out, AV_DT_BF16, 1, od);
  av_reduce_params p = {.ninputs = 1, .ndims = 1, .dims = {1}, .body = tk_fn(never_called, AV_OP_ADD)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_OK);
  assert_int_equal(out[0], 0x4580); /* bf16 4096.0 */
  assert_int_equal(out[1], 0x4580);
  /* f16 max over columns (kept inner axis) with a NaN in column 1: 1.0, NaN, 2.0 */
  uint16_t h[6] = {0x3c00, 0x7e00, 0xbc00, /* 1, NaN, -1 */ 0x3800, 0x3c00, 0x4000 /* .5, 1, 2 */};
  uint16_t hinit = 0xfc00, hout[3]; /* -inf */
  int64_t hd[2] = {2, 3}, hod[1] = {3};
  X = tk_view(h, AV_DT_F16, 2, hd);
  I = tk_view(&hinit, AV_DT_F16, 0, NULL);
  O = tk_view(hout, AV_DT_F16, 1, hod);
  av_reduce_params q = {.ninputs = 1, .ndims = 1, .dims = {0}, .body = tk_fn(never_called, AV_OP_MAXIMUM)};
  assert_int_equal(av_kernel_reduce(&q, &X, &I, &O, &d), AV_OK);
  assert_int_equal(hout[0], 0x3c00);
  assert_true((hout[1] & 0x7c00) == 0x7c00 && (hout[1] & 0x03ff) != 0); /* NaN */
  assert_int_equal(hout[2], 0x4000);
}

/* np.arange(24).reshape(2,3,4).sum((0,2)) = [60, 92, 124] */
static void test_two_axes_int(void **state) {
  (void)state;
  int32_t x[24], init = 0, out[3];
  for (int i = 0; i < 24; i++) x[i] = i;
  int64_t xd[3] = {2, 3, 4}, od[1] = {3};
  av_view X = tk_view(x, AV_DT_S32, 3, xd), I = tk_view(&init, AV_DT_S32, 0, NULL), O = tk_view(out, AV_DT_S32, 1, od);
  av_reduce_params p = {.ninputs = 1, .ndims = 2, .dims = {2, 0}, .body = tk_fn(tk_add_i32, AV_OP_ADD)};
  av_diag d;
  av_diag_init(&d);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) p.body.simple = AV_OP_UNKNOWN;
    assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_OK);
    assert_true(out[0] == 60 && out[1] == 92 && out[2] == 124);
  }
}

static void test_zero_size_axis_gives_init(void **state) {
  (void)state;
  float x[1], init = -7, out[3] = {0, 0, 0};
  int64_t xd[2] = {3, 0}, od[1] = {3};
  av_view X = tk_view(x, AV_DT_F32, 2, xd), I = tk_view(&init, AV_DT_F32, 0, NULL), O = tk_view(out, AV_DT_F32, 1, od);
  av_reduce_params p = {.ninputs = 1, .ndims = 1, .dims = {1}, .body = tk_fn(tk_add_f32, AV_OP_ADD)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_OK);
  assert_true(out[0] == -7 && out[1] == -7 && out[2] == -7);
}

static void test_max_propagates_nan_and_int8_add_wraps(void **state) {
  (void)state;
  float x[4] = {1, NAN, 3, 2}, init = -INFINITY, out;
  int64_t xd[1] = {4};
  av_view X = tk_view(x, AV_DT_F32, 1, xd), I = tk_view(&init, AV_DT_F32, 0, NULL), O = tk_view(&out, AV_DT_F32, 0, NULL);
  av_reduce_params p = {.ninputs = 1, .ndims = 1, .dims = {0}, .body = tk_fn(tk_max_f32, AV_OP_MAXIMUM)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_OK);
  assert_true(isnan(out));
  int8_t b[3] = {100, 100, 100}, bi = 0, bo;
  X = tk_view(b, AV_DT_S8, 1, (int64_t[]){3});
  I = tk_view(&bi, AV_DT_S8, 0, NULL);
  O = tk_view(&bo, AV_DT_S8, 0, NULL);
  p.body = tk_fn(NULL, AV_OP_ADD); /* fast path only: no body needed */
  assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_OK);
  assert_int_equal(bo, 44); /* 300 mod 256 */
}

/* Variadic argmax body: (acc_v, acc_i, x_v, x_i) -> larger value, first index on ties. */
static av_code argmax_body(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx; (void)d;
  float av = *(const float *)in[0], xv = *(const float *)in[2];
  int32_t ai = *(const int32_t *)in[1], xi = *(const int32_t *)in[3];
  bool take = xv > av || (xv == av && xi < ai);
  *(float *)out[0] = take ? xv : av;
  *(int32_t *)out[1] = take ? xi : ai;
  return AV_OK;
}

static void test_variadic_argmax(void **state) {
  (void)state;
  float v[6] = {3, 9, 9, 1, 0, -1};
  int32_t ix[6] = {0, 1, 2, 0, 1, 2};
  float iv = -INFINITY, ov[2];
  int32_t ii = -1, oi[2];
  int64_t xd[2] = {2, 3}, od[1] = {2};
  av_view in[2] = {tk_view(v, AV_DT_F32, 2, xd), tk_view(ix, AV_DT_S32, 2, xd)};
  av_view init[2] = {tk_view(&iv, AV_DT_F32, 0, NULL), tk_view(&ii, AV_DT_S32, 0, NULL)};
  av_view out[2] = {tk_view(ov, AV_DT_F32, 1, od), tk_view(oi, AV_DT_S32, 1, od)};
  av_reduce_params p = {.ninputs = 2, .ndims = 1, .dims = {1}, .body = tk_fn(argmax_body, AV_OP_UNKNOWN)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_reduce(&p, in, init, out, &d), AV_OK);
  assert_true(ov[0] == 9 && oi[0] == 1 && ov[1] == 1 && oi[1] == 0);
}

static void test_reduce_rejects_bad_dims(void **state) {
  (void)state;
  float x[6], init = 0, out[2];
  int64_t xd[2] = {2, 3}, od[1] = {2};
  av_view X = tk_view(x, AV_DT_F32, 2, xd), I = tk_view(&init, AV_DT_F32, 0, NULL), O = tk_view(out, AV_DT_F32, 1, od);
  av_reduce_params p = {.ninputs = 1, .ndims = 1, .dims = {5}, .body = tk_fn(tk_add_f32, AV_OP_ADD)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_INVALID_ARGUMENT);
  p.dims[0] = 0; /* result would be [3], not [2] */
  assert_int_equal(av_kernel_reduce(&p, &X, &I, &O, &d), AV_INVALID_ARGUMENT);
}

/* x = np.arange(20, dtype=np.float32).reshape(4,5) - 7
 * lax.reduce_window(x, 0., lax.add, (2,3), (2,1), ((1,0),(2,1)), base_dilation=(1,2), window_dilation=(2,1)) */
static void test_reduce_window_dilations_padding(void **state) {
  (void)state;
  static const float expect[20] = {-2, -2, -3, -1, -1, 0, 1, 1, 3, 2, 6, 6, 14, 8, 18, 10, 22, 12, 26, 14};
  float x[20], init = 0, out[20];
  for (int i = 0; i < 20; i++) x[i] = (float)i - 7;
  int64_t xd[2] = {4, 5}, od[2] = {2, 10};
  av_view X = tk_view(x, AV_DT_F32, 2, xd), I = tk_view(&init, AV_DT_F32, 0, NULL), O = tk_view(out, AV_DT_F32, 2, od);
  av_reduce_window_params p;
  av_reduce_window_params_init(&p, 2);
  p.window_dimensions[0] = 2, p.window_dimensions[1] = 3;
  p.window_strides[0] = 2;
  p.base_dilations[1] = 2;
  p.window_dilations[0] = 2;
  p.padding_lo[0] = 1, p.padding_lo[1] = 2, p.padding_hi[1] = 1;
  p.body = tk_fn(tk_add_f32, AV_OP_ADD);
  av_diag d;
  av_diag_init(&d);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) p.body.simple = AV_OP_UNKNOWN;
    assert_int_equal(av_kernel_reduce_window(&p, &X, &I, &O, &d), AV_OK);
    for (int i = 0; i < 20; i++) assert_true(out[i] == expect[i]);
  }
  od[1] = 9; /* wrong result shape */
  assert_int_equal(av_kernel_reduce_window(&p, &X, &I, &O, &d), AV_INVALID_ARGUMENT);
}

/* lax.reduce_window(x, -np.inf, lax.max, (2,2), (1,2), ((1,1),(0,1))) */
static void test_reduce_window_max(void **state) {
  (void)state;
  static const float expect[15] = {-6, -4, -3, -1, 1, 2, 4, 6, 7, 9, 11, 12, 9, 11, 12};
  float x[20], init = -INFINITY, out[15];
  for (int i = 0; i < 20; i++) x[i] = (float)i - 7;
  int64_t xd[2] = {4, 5}, od[2] = {5, 3};
  av_view X = tk_view(x, AV_DT_F32, 2, xd), I = tk_view(&init, AV_DT_F32, 0, NULL), O = tk_view(out, AV_DT_F32, 2, od);
  av_reduce_window_params p;
  av_reduce_window_params_init(&p, 2);
  p.window_dimensions[0] = 2, p.window_dimensions[1] = 2;
  p.window_strides[1] = 2;
  p.padding_lo[0] = 1, p.padding_hi[0] = 1, p.padding_hi[1] = 1;
  p.body = tk_fn(tk_max_f32, AV_OP_MAXIMUM);
  av_diag d;
  av_diag_init(&d);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) p.body.simple = AV_OP_UNKNOWN;
    assert_int_equal(av_kernel_reduce_window(&p, &X, &I, &O, &d), AV_OK);
    for (int i = 0; i < 15; i++) assert_true(out[i] == expect[i]);
  }
}

/* Region bodies for the generic (one call per window element) reduce_window path. */
#define TK_BODY(name, T, expr)                                                              \
  static av_code name(void *ctx, const void *const *in, void *const *out, av_diag *d) {    \
    (void)ctx, (void)d;                                                                     \
    T a = *(const T *)in[0], b = *(const T *)in[1];                                         \
    *(T *)out[0] = (expr);                                                                  \
    return AV_OK;                                                                           \
  }
TK_BODY(rw_add_f32, float, a + b)
TK_BODY(rw_mul_f32, float, a * b)
TK_BODY(rw_max_f32, float, (a != a || b != b) ? NAN : (a > b ? a : b))
TK_BODY(rw_min_f32, float, (a != a || b != b) ? NAN : (a < b ? a : b))
TK_BODY(rw_add_f64, double, a + b)
TK_BODY(rw_mul_f64, double, a * b)
TK_BODY(rw_max_f64, double, (a != a || b != b) ? NAN : (a > b ? a : b))
TK_BODY(rw_min_f64, double, (a != a || b != b) ? NAN : (a < b ? a : b))

/* Pooling over NHWC's H and W (the window spans one channel): the row path, vectorised across
 * channels, gives the same bits as the generic path (the body called per window element, in
 * the same order), with padding (negative too), base and window dilation, strides, rows
 * longer than one block, NaNs, f32 and f64, add/mul/max/min. */
static void test_reduce_window_rows_match_element_path(void **state) {
  (void)state;
  static const int64_t channels[3] = {8, 37, 700};
  av_code (*bodies[2][4])(void *, const void *const *, void *const *, av_diag *) = {
      {rw_add_f32, rw_mul_f32, rw_max_f32, rw_min_f32}, {rw_add_f64, rw_mul_f64, rw_max_f64, rw_min_f64}};
  static const av_opcode ops[4] = {AV_OP_ADD, AV_OP_MULTIPLY, AV_OP_MAXIMUM, AV_OP_MINIMUM};
  uint32_t seed = 7;
  /* variant 1: a window over the outermost axis too (positions of two outer axes combine),
   * and an init value that is not the op's identity (padding positions fold it in) */
  for (int variant = 0; variant < 2; variant++)
  for (int ci = 0; ci < 3; ci++)
    for (int t = 0; t < 2; t++)
      for (int k = 0; k < 4; k++) {
        av_dtype dt = t ? AV_DT_F64 : AV_DT_F32;
        size_t es = t ? 8 : 4;
        int64_t C = channels[ci], xd[4] = {2, 5, 6, C}, od[4];
        av_reduce_window_params p;
        av_reduce_window_params_init(&p, 4);
        p.window_dimensions[1] = 2, p.window_dimensions[2] = 3;
        p.window_strides[1] = 2;
        p.base_dilations[1] = 2;
        p.window_dilations[2] = 2;
        p.padding_lo[1] = 1, p.padding_hi[1] = 2, p.padding_lo[2] = -1, p.padding_hi[2] = 3;
        if (variant) p.window_dimensions[0] = 2, p.padding_lo[0] = 1; /* still 2 results */
        od[0] = 2, od[3] = C;
        od[1] = ((xd[1] - 1) * 2 + 1 + 3 - 2) / 2 + 1;
        od[2] = xd[2] - 1 + 3 - 5 + 1;
        int64_t nx = 2 * 5 * 6 * C, no = 2 * od[1] * od[2] * C;
        char *x = malloc((size_t)nx * es), *y0 = malloc((size_t)no * es), *y1 = malloc((size_t)no * es);
        assert_true(x && y0 && y1);
        for (int64_t i = 0; i < nx; i++) {
          seed = seed * 1664525u + 1013904223u;
          double v = (double)((seed >> 9) % 2001) / 1000.0 - 1.0;
          if (k >= 2 && (seed >> 3) % 97 == 0) v = NAN;
          if (k == 1) v = 1.0 + v / 8; /* products of about 1 */
          if (t) memcpy(x + i * 8, &v, 8);
          else {
            float f = (float)v;
            memcpy(x + i * 4, &f, 4);
          }
        }
        double initd = k == 1 ? 1.0 : k == 2 ? -INFINITY : k == 3 ? INFINITY : 0.0;
        if (variant) initd = k == 1 ? 1.5 : k == 2 ? -0.5 : k == 3 ? 0.5 : 0.25;
        float initf = (float)initd;
        av_view X = tk_view(x, dt, 4, xd), I = tk_view(t ? (void *)&initd : (void *)&initf, dt, 0, NULL);
        av_view O0 = tk_view(y0, dt, 4, od), O1 = tk_view(y1, dt, 4, od);
        p.body = tk_fn(bodies[t][k], ops[k]);
        av_diag d;
        av_diag_init(&d);
        assert_int_equal(av_kernel_reduce_window(&p, &X, &I, &O0, &d), AV_OK);
        p.body.simple = AV_OP_UNKNOWN;
        assert_int_equal(av_kernel_reduce_window(&p, &X, &I, &O1, &d), AV_OK);
        for (int64_t i = 0; i < no; i++) {
          double a = t ? ((double *)(void *)y0)[i] : ((float *)(void *)y0)[i];
          double b = t ? ((double *)(void *)y1)[i] : ((float *)(void *)y1)[i];
          if (a != a || b != b) assert_true(a != a && b != b);
          else assert_memory_equal(y0 + i * es, y1 + i * es, es);
        }
        free(x);
        free(y0);
        free(y1);
      }
}

/* The StableHLO spec's select_and_scatter example (select GE, scatter add), checked by hand:
 * operand [[1,5],[2,5],[3,6],[4,4]], source [[5,6],[7,8]], window [3,1], strides [2,1],
 * padding [[0,1],[0,0]] -> [[0,0],[0,0],[5,14],[7,0]]. */
static void test_select_and_scatter_spec_example(void **state) {
  (void)state;
  float x[8] = {1, 5, 2, 5, 3, 6, 4, 4}, s[4] = {5, 6, 7, 8}, init = 0, out[8];
  int64_t xd[2] = {4, 2}, sd[2] = {2, 2};
  av_view X = tk_view(x, AV_DT_F32, 2, xd), S = tk_view(s, AV_DT_F32, 2, sd), I = tk_view(&init, AV_DT_F32, 0, NULL),
          O = tk_view(out, AV_DT_F32, 2, xd);
  av_select_and_scatter_params p;
  av_select_and_scatter_params_init(&p, 2);
  p.window_dimensions[0] = 3;
  p.window_strides[0] = 2;
  p.padding_hi[0] = 1;
  p.select = tk_fn(tk_ge_f32, AV_OP_UNKNOWN);
  p.scatter = tk_fn(tk_add_f32, AV_OP_ADD);
  av_diag d;
  av_diag_init(&d);
  static const float expect[8] = {0, 0, 0, 0, 5, 14, 7, 0};
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) { /* the inline GE compare must agree with the body */
      p.select.simple = AV_OP_COMPARE;
      p.select.direction = "GE";
      p.select.compare_type = "FLOAT";
    }
    assert_int_equal(av_kernel_select_and_scatter(&p, &X, &S, &I, &O, &d), AV_OK);
    for (int i = 0; i < 8; i++) assert_true(out[i] == expect[i]);
  }
  sd[0] = 3; /* source shape inconsistent with the windows */
  assert_int_equal(av_kernel_select_and_scatter(&p, &X, &S, &I, &O, &d), AV_INVALID_ARGUMENT);
}

/* The compare bodies of the four directions, for the general walk (the body is called). */
static av_code sas_cmp(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)d;
  float a, b;
  memcpy(&a, in[0], 4);
  memcpy(&b, in[1], 4);
  int dir = *(const int *)ctx;
  bool r = dir == 1 ? a >= b : dir == 2 ? a > b : dir == 3 ? a <= b : a < b;
  *(unsigned char *)out[0] = r;
  return AV_OK;
}

/* f32 windows wholly inside the operand take a tight loop (max pooling's backward): the same
 * result as the general walk calling the select body, for every direction, with ties (the
 * first kept or replaced by the rule), NaNs (compare false: replaced) and overlapping windows
 * (a position selected twice accumulates both sources), rank 4 like NCHW pooling. */
static void test_select_and_scatter_inside_fast_path(void **state) {
  (void)state;
  enum { N0 = 2, N1 = 3, N2 = 9, N3 = 10, NX = N0 * N1 * N2 * N3 };
  static const int64_t xd[4] = {N0, N1, N2, N3};
  static float x[NX], out_fast[NX], out_body[NX], src[NX];
  for (int i = 0; i < NX; i++) x[i] = (float)((i * 7) % 5); /* many ties */
  x[17] = NAN;
  x[123] = NAN;
  struct {
    int64_t w[4], s[4];
  } windows[] = {{{1, 1, 2, 2}, {1, 1, 2, 2}}, {{1, 1, 3, 3}, {1, 1, 2, 2}}, {{1, 2, 2, 1}, {1, 1, 1, 3}}};
  for (size_t k = 0; k < sizeof windows / sizeof *windows; k++)
    for (int dir = 1; dir <= 4; dir++) {
      av_select_and_scatter_params p;
      av_select_and_scatter_params_init(&p, 4);
      int64_t sd[4];
      int64_t sn = 1;
      for (int i = 0; i < 4; i++) {
        p.window_dimensions[i] = windows[k].w[i];
        p.window_strides[i] = windows[k].s[i];
        sd[i] = (xd[i] - windows[k].w[i]) / windows[k].s[i] + 1;
        sn *= sd[i];
      }
      for (int64_t i = 0; i < sn; i++) src[i] = (float)(i % 11) + 0.25f;
      float init = 0.5f;
      av_view X = tk_view(x, AV_DT_F32, 4, xd), S = tk_view(src, AV_DT_F32, 4, sd),
              I = tk_view(&init, AV_DT_F32, 0, NULL), OF = tk_view(out_fast, AV_DT_F32, 4, xd),
              OB = tk_view(out_body, AV_DT_F32, 4, xd);
      p.scatter = tk_fn(tk_add_f32, AV_OP_ADD);
      p.select = tk_fn(sas_cmp, AV_OP_UNKNOWN);
      p.select.ctx = &dir;
      av_diag d;
      av_diag_init(&d);
      assert_int_equal(av_kernel_select_and_scatter(&p, &X, &S, &I, &OB, &d), AV_OK);
      static const char *const dirs[5] = {"", "GE", "GT", "LE", "LT"};
      p.select.simple = AV_OP_COMPARE;
      p.select.direction = dirs[dir];
      p.select.compare_type = "FLOAT";
      assert_int_equal(av_kernel_select_and_scatter(&p, &X, &S, &I, &OF, &d), AV_OK);
      assert_memory_equal(out_fast, out_body, sizeof out_fast);
    }
}

/* Hostile attribute values are rejected before any size arithmetic can overflow. */
static void test_hostile_window_parameters(void **state) {
  (void)state;
  float x[20], init = 0, out[20];
  int64_t xd[2] = {4, 5}, od[2] = {4, 5};
  av_view X = tk_view(x, AV_DT_F32, 2, xd), I = tk_view(&init, AV_DT_F32, 0, NULL), O = tk_view(out, AV_DT_F32, 2, od);
  av_reduce_window_params p;
  av_reduce_window_params_init(&p, 2);
  p.body = tk_fn(tk_add_f32, AV_OP_ADD);
  av_diag d;
  av_diag_init(&d);
  p.padding_hi[0] = INT64_MAX;
  assert_int_equal(av_kernel_reduce_window(&p, &X, &I, &O, &d), AV_INVALID_ARGUMENT);
  p.padding_hi[0] = 0;
  p.base_dilations[1] = INT64_MAX / 2;
  assert_int_equal(av_kernel_reduce_window(&p, &X, &I, &O, &d), AV_INVALID_ARGUMENT);
  p.base_dilations[1] = 1;
  p.window_strides[0] = 0;
  assert_int_equal(av_kernel_reduce_window(&p, &X, &I, &O, &d), AV_INVALID_ARGUMENT);
  av_select_and_scatter_params q;
  av_select_and_scatter_params_init(&q, 2);
  q.select = tk_fn(tk_ge_f32, AV_OP_UNKNOWN);
  q.scatter = tk_fn(tk_add_f32, AV_OP_ADD);
  q.padding_lo[1] = INT64_MAX;
  assert_int_equal(av_kernel_select_and_scatter(&q, &X, &X, &I, &O, &d), AV_INVALID_ARGUMENT);
  q.padding_lo[1] = -1;
  assert_int_equal(av_kernel_select_and_scatter(&q, &X, &X, &I, &O, &d), AV_INVALID_ARGUMENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sum_rows_fast_and_generic),
      cmocka_unit_test(test_two_axes_int),
      cmocka_unit_test(test_narrow_float_reductions),
      cmocka_unit_test(test_zero_size_axis_gives_init),
      cmocka_unit_test(test_max_propagates_nan_and_int8_add_wraps),
      cmocka_unit_test(test_variadic_argmax),
      cmocka_unit_test(test_reduce_rejects_bad_dims),
      cmocka_unit_test(test_reduce_window_dilations_padding),
      cmocka_unit_test(test_reduce_window_max),
      cmocka_unit_test(test_reduce_window_rows_match_element_path),
      cmocka_unit_test(test_select_and_scatter_spec_example),
      cmocka_unit_test(test_select_and_scatter_inside_fast_path),
      cmocka_unit_test(test_hostile_window_parameters),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
