/* fft kernel. Expected values from numpy.fft (expressions in comments); other lengths are
 * checked against a naive O(n^2) DFT written out below. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <complex.h>
#include <stdlib.h>

#include "runtime/kernels/fft.h"
#include "runtime/kernels/fft_internal.h"
#include "runtime/thread_pool.h"
#include "test_kernels_util.h"

/* What a compiled step does: the plan built for the shapes (at compile time), then the kernel. */
static av_code fft_call_pool(av_fft_params *p, const av_view *x, av_view *y, av_diag *d,
                             av_thread_pool *pool) {
  av_arena a;
  av_arena_init(&a);
  char err[160];
  av_code c = av_fft_plan_build(p, x, y, &a, err, sizeof err, &p->plan);
  if (c == AV_OK) {
    p->pool = pool;
    c = av_kernel_fft(p, x, y, d);
  }
  av_arena_free(&a);
  p->plan = NULL;
  return c;
}

static av_code fft_call(av_fft_params *p, const av_view *x, av_view *y, av_diag *d) {
  return fft_call_pool(p, x, y, d, NULL);
}

/* j = np.arange(n); x = np.cos(j*1.3) + 1j*np.sin(j*0.7+0.2); np.fft.fft(x), as (re, im) pairs */
static const double kFft5[10] = {0.15319444235587709, 2.8683950637006372, 3.2679655869472488, -0.65946748399370958, 0.051468904842525864, -0.01629478314692992, -0.22060421165461397, -0.0035114612261467337, 1.7479752775089623, -1.195774681358545};
static const double kFft12[24] = {1.0679603126925643, 2.0042691809378788, 2.4074819191487613, 5.8457062307157681, 0.34446511998918461, 1.4286491491013029, 0.45279785034729636, -4.6939033693974288, 0.74604517529977721, -1.8153845815021783, 0.86916741131880104, -1.0353049903774727, 0.95613141234152788, -0.57061607605325149, 1.0334136597612993, -0.15566891019166063, 1.1128528770568176, 0.43479277207454292, 1.1532400801112048, 2.7609989022774863, 2.0962776259960219, -5.9993069031250226, -0.23983344406325657, 4.1798005650807699};
static const double kFft17[34] = {0.92558853791380469, 0.44313604949482432, 0.21977332513269865, 1.0326994811730148, 9.3396369593273665, 0.66569222853357957, 1.6127400496476167, 5.2438669749165596, 1.775637519186863, -5.3830511712880664, 1.3939801513582202, -1.4748578372675545, 1.2463599508418761, -0.61070807721161757, 1.1495275148217503, -0.16276057556590334, 1.0729751226422075, 0.16164139089688434, 1.0048169485934877, 0.45465997971945171, 0.93820721968970155, 0.77643031618038494, 0.86802229827233712, 1.2181049477832042, 0.79353276578530219, 2.069292331427405, 0.81581546921638859, 5.9481695928213405, -0.20594508993714522, -4.7709070484414875, -7.5675606055691942, -2.183460044036253, 1.6168918630767197, -0.050569915619725347};

static void fill_input(double *x, int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    x[2 * j] = cos((double)j * 1.3);
    x[2 * j + 1] = sin((double)j * 0.7 + 0.2);
  }
}

static void run_fft(av_fft_type type, int64_t n, const double *in, double *out) {
  int64_t dims[1] = {n};
  av_view X = tk_view((void *)in, AV_DT_C128, 1, dims), Y = tk_view(out, AV_DT_C128, 1, dims);
  av_fft_params p = {.type = type, .nlengths = 1, .fft_length = {n}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(fft_call(&p, &X, &Y, &d), AV_OK);
}

static void test_lengths_against_numpy(void **state) {
  (void)state;
  double x[34], y[34];
  fill_input(x, 1);
  run_fft(AV_FFT_FFT, 1, x, y);
  assert_true(y[0] == 1.0 && fabs(y[1] - sin(0.2)) < 1e-15); /* length 1: identity */
  const double *expect[3] = {kFft5, kFft12, kFft17};
  int64_t lens[3] = {5, 12, 17};
  for (int c = 0; c < 3; c++) {
    fill_input(x, lens[c]);
    run_fft(AV_FFT_FFT, lens[c], x, y);
    for (int64_t i = 0; i < 2 * lens[c]; i++) assert_true(fabs(y[i] - expect[c][i]) < 1e-12);
  }
}

/* Naive DFT oracle for many lengths (powers of two, mixed radix, primes -> Bluestein), and
 * IFFT(FFT(x)) == x; f32 within single-precision tolerance. */
static void test_many_lengths_against_naive_dft(void **state) {
  (void)state;
  static const int64_t lens[] = {2, 3, 4, 6, 7, 8, 9, 10, 11, 13, 16, 30, 31, 64, 97, 100, 121, 210, 1000, 1024};
  for (size_t c = 0; c < sizeof lens / sizeof *lens; c++) {
    int64_t n = lens[c];
    double *x = malloc(sizeof(double) * 2 * (size_t)n), *y = malloc(sizeof(double) * 2 * (size_t)n),
           *z = malloc(sizeof(double) * 2 * (size_t)n);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(z);
    fill_input(x, n);
    run_fft(AV_FFT_FFT, n, x, y);
    double maxerr = 0;
    for (int64_t k = 0; k < n; k++) {
      double complex acc = 0;
      for (int64_t j = 0; j < n; j++) {
        double a = -2.0 * M_PI * (double)((j * k) % n) / (double)n;
        acc += (x[2 * j] + I * x[2 * j + 1]) * (cos(a) + I * sin(a));
      }
      double e = cabs(acc - (y[2 * k] + I * y[2 * k + 1]));
      if (e > maxerr) maxerr = e;
    }
    assert_true(maxerr < 1e-9 * (double)n);
    run_fft(AV_FFT_IFFT, n, y, z);
    for (int64_t i = 0; i < 2 * n; i++) assert_true(fabs(z[i] - x[i]) < 1e-12);
    free(x);
    free(y);
    free(z);
  }
  /* c64 path, length 12 */
  float xf[24], yf[24];
  double xd[24];
  fill_input(xd, 12);
  for (int i = 0; i < 24; i++) xf[i] = (float)xd[i];
  int64_t dims[1] = {12};
  av_view X = tk_view(xf, AV_DT_C64, 1, dims), Y = tk_view(yf, AV_DT_C64, 1, dims);
  av_fft_params p = {.type = AV_FFT_FFT, .nlengths = 1, .fft_length = {12}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(fft_call(&p, &X, &Y, &d), AV_OK);
  for (int i = 0; i < 24; i++) assert_true(fabs(yf[i] - kFft12[i]) < 1e-5);
}

/* x = (np.arange(12).reshape(3,4) % 5) - 1.5; np.fft.rfft2(x) -> [3,3] */
static void test_rfft2(void **state) {
  (void)state;
  static const double expect[18] = {3, 0, 4, 1, -1, 0, -1.5, 0.8660254037844386, -0.66987298107780724, 2.5, -2.5, -4.3301270189221928, -1.5, -0.8660254037844386, -9.3301270189221928, 2.5, -2.5, 4.3301270189221928};
  double x[12], y[18];
  for (int i = 0; i < 12; i++) x[i] = (i % 5) - 1.5;
  int64_t xd[2] = {3, 4}, yd[2] = {3, 3};
  av_view X = tk_view(x, AV_DT_F64, 2, xd), Y = tk_view(y, AV_DT_C128, 2, yd);
  av_fft_params p = {.type = AV_FFT_RFFT, .nlengths = 2, .fft_length = {3, 4}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(fft_call(&p, &X, &Y, &d), AV_OK);
  for (int i = 0; i < 18; i++) assert_true(fabs(y[i] - expect[i]) < 1e-12);
  /* IRFFT of it with the same lengths gives x back */
  double z[12];
  av_view Z = tk_view(z, AV_DT_F64, 2, xd);
  p.type = AV_FFT_IRFFT;
  assert_int_equal(fft_call(&p, &Y, &Z, &d), AV_OK);
  for (int i = 0; i < 12; i++) assert_true(fabs(z[i] - x[i]) < 1e-12);
}

/* S = [[1+2j, 0.5-1j, -0.25+0.75j], [3-1j, -2+0.5j, 1+1j]]; np.fft.irfft(S, n=5) and n=4
 * (n=4: the Nyquist bin's imaginary part is ignored) */
static void test_irfft_odd_and_even(void **state) {
  (void)state;
  static const double e5[10] = {0.30000000000000004, 0.54679212914280373, 0.52772595749305107, -0.51313615411801949, 0.13861806748216479, 0.20000000000000001, -0.39614579742595696, 1.6336859493095037, 1.1079548371903702, 0.45450501092608309};
  static const double e4[8] = {0.4375, 0.8125, -0.0625, -0.1875, 0, 0.25, 2, 0.75};
  float s[12] = {1, 2, 0.5f, -1, -0.25f, 0.75f, 3, -1, -2, 0.5f, 1, 1};
  float y5[10], y4[8];
  int64_t sd[2] = {2, 3}, d5[2] = {2, 5}, d4[2] = {2, 4};
  av_view S = tk_view(s, AV_DT_C64, 2, sd), Y5 = tk_view(y5, AV_DT_F32, 2, d5), Y4 = tk_view(y4, AV_DT_F32, 2, d4);
  av_fft_params p = {.type = AV_FFT_IRFFT, .nlengths = 1, .fft_length = {5}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(fft_call(&p, &S, &Y5, &d), AV_OK);
  for (int i = 0; i < 10; i++) assert_true(fabs(y5[i] - e5[i]) < 1e-6);
  p.fft_length[0] = 4;
  assert_int_equal(fft_call(&p, &S, &Y4, &d), AV_OK);
  for (int i = 0; i < 8; i++) assert_true(fabs(y4[i] - e4[i]) < 1e-6);
  p.fft_length[0] = 6; /* needs 4 input bins, not 3 */
  assert_int_equal(fft_call(&p, &S, &Y4, &d), AV_INVALID_ARGUMENT);
}

/* 3-D transform over the last 3 dims of a [2,3,4,5] array equals the separable naive DFT;
 * checked on a few bins by the oracle sum. */
static void test_fft3d_batch(void **state) {
  (void)state;
  enum { B = 2, A0 = 3, A1 = 4, A2 = 5, N = B * A0 * A1 * A2 };
  static double x[2 * N], y[2 * N];
  fill_input(x, N);
  int64_t dims[4] = {B, A0, A1, A2};
  av_view X = tk_view(x, AV_DT_C128, 4, dims), Y = tk_view(y, AV_DT_C128, 4, dims);
  av_fft_params p = {.type = AV_FFT_FFT, .nlengths = 3, .fft_length = {A0, A1, A2}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(fft_call(&p, &X, &Y, &d), AV_OK);
  for (int b = 0; b < B; b++)
    for (int k0 = 0; k0 < A0; k0++)
      for (int k1 = 0; k1 < A1; k1++)
        for (int k2 = 0; k2 < A2; k2 += 2) {
          double complex acc = 0;
          for (int j0 = 0; j0 < A0; j0++)
            for (int j1 = 0; j1 < A1; j1++)
              for (int j2 = 0; j2 < A2; j2++) {
                int64_t idx = ((b * A0 + j0) * A1 + j1) * A2 + j2;
                double a = -2.0 * M_PI * ((double)(j0 * k0) / A0 + (double)(j1 * k1) / A1 + (double)(j2 * k2) / A2);
                acc += (x[2 * idx] + I * x[2 * idx + 1]) * (cos(a) + I * sin(a));
              }
          int64_t o = ((b * A0 + k0) * A1 + k1) * A2 + k2;
          assert_true(cabs(acc - (y[2 * o] + I * y[2 * o + 1])) < 1e-10);
        }
}

/* Long lengths take the four-step path (n = n1 * n2 > 4096): sampled bins against the naive
 * DFT sum, and IFFT(FFT(x)) == x over the whole array. */
static void test_long_lengths_four_step(void **state) {
  (void)state;
  static const int64_t lens[] = {8192, 6000, 65536};
  for (size_t c = 0; c < sizeof lens / sizeof *lens; c++) {
    int64_t n = lens[c];
    double *x = malloc(sizeof(double) * 2 * (size_t)n), *y = malloc(sizeof(double) * 2 * (size_t)n),
           *z = malloc(sizeof(double) * 2 * (size_t)n);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(z);
    fill_input(x, n);
    run_fft(AV_FFT_FFT, n, x, y);
    for (int64_t k = 0; k < n; k += n / 37 + 1) {
      double complex acc = 0;
      for (int64_t j = 0; j < n; j++) {
        double a = -2.0 * M_PI * (double)((j * k) % n) / (double)n;
        acc += (x[2 * j] + I * x[2 * j + 1]) * (cos(a) + I * sin(a));
      }
      assert_true(cabs(acc - (y[2 * k] + I * y[2 * k + 1])) < 1e-8);
    }
    run_fft(AV_FFT_IFFT, n, y, z);
    for (int64_t i = 0; i < 2 * n; i++) assert_true(fabs(z[i] - x[i]) < 1e-11);
    free(x);
    free(y);
    free(z);
  }
}

/* Bin k of the DFT of n complex points (re, im pairs), in long double. */
static long double complex naive_bin(const double *x, int64_t n, int64_t k) {
  long double complex acc = 0;
  for (int64_t j = 0; j < n; j++) {
    long double a = -2.0L * 3.141592653589793238462643383279503L * (long double)((j * k) % n) / (long double)n;
    acc += ((long double)x[2 * j] + I * (long double)x[2 * j + 1]) * (cosl(a) + I * sinl(a));
  }
  return acc;
}

/* One line of a prime length (Bluestein over the four-step split) and of a long composite
 * length (the split itself), for every transform type: sampled bins of FFT and RFFT against
 * the naive DFT, IFFT and IRFFT back to the input. */
static void test_single_long_lines(void **state) {
  (void)state;
  static const int64_t lens[] = {4093, 30000, 4096 * 3};
  for (size_t c = 0; c < sizeof lens / sizeof *lens; c++) {
    int64_t n = lens[c], h = n / 2 + 1, dims[1] = {n}, hd[1] = {h};
    double *x = malloc(sizeof(double) * 2 * (size_t)n), *y = malloc(sizeof(double) * 2 * (size_t)n),
           *z = malloc(sizeof(double) * 2 * (size_t)n), *r = malloc(sizeof(double) * (size_t)n);
    assert_true(x && y && z && r);
    fill_input(x, n);
    av_diag d;
    av_diag_init(&d);
    av_view X = tk_view(x, AV_DT_C128, 1, dims), Y = tk_view(y, AV_DT_C128, 1, dims),
            Z = tk_view(z, AV_DT_C128, 1, dims);
    av_fft_params p = {.type = AV_FFT_FFT, .nlengths = 1, .fft_length = {n}};
    assert_int_equal(fft_call(&p, &X, &Y, &d), AV_OK);
    for (int64_t k = 0; k < n; k += n / 29 + 1)
      assert_true(cabsl(naive_bin(x, n, k) - (y[2 * k] + I * y[2 * k + 1])) < 1e-9);
    p.type = AV_FFT_IFFT;
    assert_int_equal(fft_call(&p, &Y, &Z, &d), AV_OK);
    for (int64_t i = 0; i < 2 * n; i++) assert_true(fabs(z[i] - x[i]) < 1e-12);
    /* real input: the real parts of x */
    for (int64_t j = 0; j < n; j++) r[j] = x[2 * j], z[2 * j] = x[2 * j], z[2 * j + 1] = 0;
    av_view R = tk_view(r, AV_DT_F64, 1, dims), H = tk_view(y, AV_DT_C128, 1, hd);
    p.type = AV_FFT_RFFT;
    assert_int_equal(fft_call(&p, &R, &H, &d), AV_OK);
    for (int64_t k = 0; k < h; k += h / 23 + 1)
      assert_true(cabsl(naive_bin(z, n, k) - (y[2 * k] + I * y[2 * k + 1])) < 1e-9);
    assert_true(cabsl(naive_bin(z, n, h - 1) - (y[2 * (h - 1)] + I * y[2 * (h - 1) + 1])) < 1e-9);
    p.type = AV_FFT_IRFFT;
    av_view R2 = tk_view(x, AV_DT_F64, 1, dims); /* x is free now */
    assert_int_equal(fft_call(&p, &H, &R2, &d), AV_OK);
    for (int64_t j = 0; j < n; j++) assert_true(fabs(x[j] - r[j]) < 1e-12);
    free(x);
    free(y);
    free(z);
    free(r);
  }
}

/* Many short lines of odd and even real lengths (SIMD lanes, partial blocks): RFFT against
 * the naive DFT, IRFFT back. */
static void test_real_lines_in_lanes(void **state) {
  (void)state;
  static const int64_t lens[] = {7, 8, 45, 64, 97};
  enum { ROWS = 21 };
  for (size_t c = 0; c < sizeof lens / sizeof *lens; c++) {
    int64_t n = lens[c], h = n / 2 + 1, xd[2] = {ROWS, n}, yd[2] = {ROWS, h};
    float *x = malloc(sizeof(float) * ROWS * (size_t)n), *y = malloc(sizeof(float) * 2 * ROWS * (size_t)h),
          *z = malloc(sizeof(float) * ROWS * (size_t)n);
    double *row = malloc(sizeof(double) * 2 * (size_t)n);
    assert_true(x && y && z && row);
    for (int64_t i = 0; i < ROWS * n; i++) x[i] = (float)cos((double)i * 0.37 + 0.1);
    av_diag d;
    av_diag_init(&d);
    av_view X = tk_view(x, AV_DT_F32, 2, xd), Y = tk_view(y, AV_DT_C64, 2, yd), Z = tk_view(z, AV_DT_F32, 2, xd);
    av_fft_params p = {.type = AV_FFT_RFFT, .nlengths = 1, .fft_length = {n}};
    assert_int_equal(fft_call(&p, &X, &Y, &d), AV_OK);
    for (int rr = 0; rr < ROWS; rr += 5) {
      for (int64_t j = 0; j < n; j++) row[2 * j] = x[rr * n + j], row[2 * j + 1] = 0;
      for (int64_t k = 0; k < h; k++) {
        const float *got = y + 2 * (rr * h + k);
        assert_true(cabsl(naive_bin(row, n, k) - (got[0] + I * got[1])) < 2e-5 * (double)n);
      }
    }
    p.type = AV_FFT_IRFFT;
    assert_int_equal(fft_call(&p, &Y, &Z, &d), AV_OK);
    for (int64_t i = 0; i < ROWS * n; i++) assert_true(fabs(z[i] - x[i]) < 1e-5);
    free(x);
    free(y);
    free(z);
    free(row);
  }
}

/* The same transforms on a 3-thread pool give the same bits as on the calling thread (blocks
 * are computed independently). */
static void test_threads_same_bits(void **state) {
  (void)state;
  av_thread_pool *pool = av_thread_pool_create(3);
  assert_non_null(pool);
  struct {
    int rank;
    int64_t dims[2];
  } shapes[] = {{2, {96, 80}}, {1, {1 << 16}}, {2, {3, 20000}}};
  for (size_t c = 0; c < sizeof shapes / sizeof *shapes; c++) {
    int64_t n = 1;
    for (int i = 0; i < shapes[c].rank; i++) n *= shapes[c].dims[i];
    float *x = malloc(sizeof(float) * 2 * (size_t)n), *y1 = malloc(sizeof(float) * 2 * (size_t)n),
          *y2 = malloc(sizeof(float) * 2 * (size_t)n);
    assert_true(x && y1 && y2);
    for (int64_t i = 0; i < 2 * n; i++) x[i] = (float)sin((double)i * 0.013);
    av_diag d;
    av_diag_init(&d);
    av_view X = tk_view(x, AV_DT_C64, shapes[c].rank, shapes[c].dims);
    av_view Y1 = tk_view(y1, AV_DT_C64, shapes[c].rank, shapes[c].dims);
    av_view Y2 = tk_view(y2, AV_DT_C64, shapes[c].rank, shapes[c].dims);
    av_fft_params p = {.type = AV_FFT_FFT, .nlengths = shapes[c].rank};
    for (int i = 0; i < shapes[c].rank; i++) p.fft_length[i] = shapes[c].dims[i];
    if (c == 2) p.nlengths = 1, p.fft_length[0] = shapes[c].dims[1];
    assert_int_equal(fft_call_pool(&p, &X, &Y1, &d, NULL), AV_OK);
    assert_int_equal(fft_call_pool(&p, &X, &Y2, &d, pool), AV_OK);
    assert_memory_equal(y1, y2, sizeof(float) * 2 * (size_t)n);
    free(x);
    free(y1);
    free(y2);
  }
  av_thread_pool_release(pool);
}

/* The 8-lane f64 engine (fft_wide.c, AVX-512) against the 4-lane one: bit-identical for every
 * pass kind, with partial blocks (lines not a multiple of the lanes), interleaved and
 * contiguous axes, odd and prime lengths (Bluestein), 2-D and 3-D, on one thread and three.
 * Skipped on CPUs without AVX-512, where only the 4-lane engine runs. */
static void test_wide_engine_same_bits(void **state) {
  (void)state;
  if (!av_fft_wide_available()) skip();
  av_thread_pool *pool = av_thread_pool_create(3);
  assert_non_null(pool);
  struct {
    av_fft_type type;
    int rank, nlengths;
    int64_t dims[3];
  } cases[] = {
      {AV_FFT_FFT, 2, 2, {96, 80}},      {AV_FFT_IFFT, 3, 3, {7, 12, 37}},
      {AV_FFT_FFT, 2, 1, {13, 512}},     {AV_FFT_FFT, 3, 2, {5, 40, 9}},
      {AV_FFT_RFFT, 2, 2, {36, 50}},     {AV_FFT_RFFT, 3, 3, {6, 10, 15}},
      {AV_FFT_IRFFT, 2, 2, {40, 64}},    {AV_FFT_IRFFT, 2, 1, {11, 33}},
      {AV_FFT_FFT, 2, 2, {67, 100}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    int r = cases[c].rank, L = cases[c].nlengths;
    int64_t in_dims[3], out_dims[3], n_in = 1, n_out = 1;
    av_fft_params p = {.type = cases[c].type, .nlengths = L};
    for (int i = 0; i < r; i++) in_dims[i] = out_dims[i] = cases[c].dims[i];
    for (int i = 0; i < L; i++) p.fft_length[i] = cases[c].dims[r - L + i];
    bool real_in = p.type == AV_FFT_RFFT, real_out = p.type == AV_FFT_IRFFT;
    if (real_in) out_dims[r - 1] = in_dims[r - 1] / 2 + 1;
    if (real_out) in_dims[r - 1] = out_dims[r - 1] / 2 + 1;
    for (int i = 0; i < r; i++) n_in *= in_dims[i], n_out *= out_dims[i];
    size_t in_bytes = sizeof(double) * (real_in ? 1 : 2) * (size_t)n_in;
    size_t out_bytes = sizeof(double) * (real_out ? 1 : 2) * (size_t)n_out;
    double *x = malloc(in_bytes), *y4 = malloc(out_bytes), *y8 = malloc(out_bytes);
    assert_true(x && y4 && y8);
    for (size_t i = 0; i < in_bytes / sizeof(double); i++) x[i] = sin((double)i * 0.37) * 3;
    av_view X = tk_view(x, real_in ? AV_DT_F64 : AV_DT_C128, r, in_dims);
    av_view Y4 = tk_view(y4, real_out ? AV_DT_F64 : AV_DT_C128, r, out_dims);
    av_view Y8 = tk_view(y8, real_out ? AV_DT_F64 : AV_DT_C128, r, out_dims);
    av_diag d;
    av_diag_init(&d);
    for (int threads = 0; threads < 2; threads++) {
      av_thread_pool *tp = threads ? pool : NULL;
      av_fft_wide_set_enabled(false);
      assert_int_equal(fft_call_pool(&p, &X, &Y4, &d, tp), AV_OK);
      av_fft_wide_set_enabled(true);
      assert_int_equal(fft_call_pool(&p, &X, &Y8, &d, tp), AV_OK);
      assert_memory_equal(y4, y8, out_bytes);
    }
    free(x);
    free(y4);
    free(y8);
  }
  av_thread_pool_release(pool);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lengths_against_numpy),
      cmocka_unit_test(test_many_lengths_against_naive_dft),
      cmocka_unit_test(test_rfft2),
      cmocka_unit_test(test_irfft_odd_and_even),
      cmocka_unit_test(test_fft3d_batch),
      cmocka_unit_test(test_long_lengths_four_step),
      cmocka_unit_test(test_single_long_lines),
      cmocka_unit_test(test_real_lines_in_lanes),
      cmocka_unit_test(test_threads_same_bits),
      cmocka_unit_test(test_wide_engine_same_bits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
