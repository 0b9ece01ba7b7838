/* dot_general kernel: expected values from numpy einsum (expressions in comments) or by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/kernels/dot.h"
#include "runtime/kernels/reduce_elem.h"
#include "runtime/thread_pool.h"
#include "test_kernels_util.h"

static void test_plain_matmul_f32(void **state) {
  (void)state;
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, c[4] = {0};
  int64_t ad[2] = {2, 3}, bd[2] = {3, 2}, cd[2] = {2, 2};
  av_view A = tk_view(a, AV_DT_F32, 2, ad), B = tk_view(b, AV_DT_F32, 2, bd), C = tk_view(c, AV_DT_F32, 2, cd);
  av_dot_params p = {.nbatch = 0, .ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  /* by hand: [[58, 64], [139, 154]] */
  assert_true(c[0] == 58 && c[1] == 64 && c[2] == 139 && c[3] == 154);
}

/* lhs [2,3,4] (b,m,k), rhs [4,2,5] (k,b,n), batch lhs0/rhs1, contract lhs2/rhs0.
 * l = (np.arange(24).reshape(2,3,4) % 7 - 3); r = (np.arange(40).reshape(4,2,5) % 5 - 2)
 * np.einsum('bmk,kbn->bmn', l, r) */
static const int kBatched[30] = {12, 6, 0, -6, -12, -6, -3, 0, 3, 6, 4, 2, 0, -2, -4,
                                 0,  0, 0, 0,  0,   -4, -2, 0, 2, 4, 6, 3, 0, -3, -6};

static void run_batched(av_dtype dt) {
  size_t es = av_dtype_size(dt);
  char l[24 * 16], r[40 * 16], o[30 * 16];
  for (int i = 0; i < 24; i++) av_kel_store_real(dt, l + i * es, (double)(i % 7 - 3));
  for (int i = 0; i < 40; i++) av_kel_store_real(dt, r + i * es, (double)(i % 5 - 2));
  int64_t ld[3] = {2, 3, 4}, rd[3] = {4, 2, 5}, od[3] = {2, 3, 5};
  av_view L = tk_view(l, dt, 3, ld), R = tk_view(r, dt, 3, rd), O = tk_view(o, dt, 3, od);
  av_dot_params p = {.nbatch = 1, .ncontract = 1, .lhs_batch = {0}, .rhs_batch = {1},
                     .lhs_contract = {2}, .rhs_contract = {0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &L, &R, &O, &d), AV_OK);
  for (int i = 0; i < 30; i++) assert_true(av_kel_load_real(dt, o + i * es) == kBatched[i]);
}

static void test_batched_all_types(void **state) {
  (void)state;
  av_dtype types[] = {AV_DT_F32, AV_DT_F64, AV_DT_C64, AV_DT_C128, AV_DT_BF16,
                      AV_DT_F16, AV_DT_S8,  AV_DT_S32, AV_DT_S64,  AV_DT_F8E4M3FN};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) run_batched(types[i]);
}

/* Two contracting dims in swapped order: lhs [3,2,2] contract (2,1), rhs [2,2,4] contract (1,0).
 * np.einsum('mab,abk->mk', np.arange(12).reshape(3,2,2)-5, np.arange(16).reshape(2,2,4)%3) */
static void test_two_contracting_f64(void **state) {
  (void)state;
  static const double expect[12] = {-10, -15, -17, -10, 2, 1, 3, 2, 14, 17, 23, 14};
  double l[12], r[16], o[12];
  for (int i = 0; i < 12; i++) l[i] = i - 5;
  for (int i = 0; i < 16; i++) r[i] = i % 3;
  int64_t ld[3] = {3, 2, 2}, rd[3] = {2, 2, 4}, od[2] = {3, 4};
  av_view L = tk_view(l, AV_DT_F64, 3, ld), R = tk_view(r, AV_DT_F64, 3, rd), O = tk_view(o, AV_DT_F64, 2, od);
  av_dot_params p = {.nbatch = 0, .ncontract = 2, .lhs_contract = {2, 1}, .rhs_contract = {1, 0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &L, &R, &O, &d), AV_OK);
  for (int i = 0; i < 12; i++) assert_true(o[i] == expect[i]);
}

/* Transposed lhs (contract dim 0) takes the BLAS-transpose path: a^T b with a [3,2]. */
static void test_transposed_lhs_f32(void **state) {
  (void)state;
  float a[6] = {1, 4, 2, 5, 3, 6}, b[6] = {7, 8, 9, 10, 11, 12}, c[4];
  int64_t ad[2] = {3, 2}, bd[2] = {3, 2}, cd[2] = {2, 2};
  av_view A = tk_view(a, AV_DT_F32, 2, ad), B = tk_view(b, AV_DT_F32, 2, bd), C = tk_view(c, AV_DT_F32, 2, cd);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {0}, .rhs_contract = {0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  assert_true(c[0] == 58 && c[1] == 64 && c[2] == 139 && c[3] == 154);
  /* and rhs transposed too: b^T given as [2,3], contract rhs dim 1 */
  float bt[6] = {7, 9, 11, 8, 10, 12};
  int64_t btd[2] = {2, 3};
  av_view BT = tk_view(bt, AV_DT_F32, 2, btd);
  p.rhs_contract[0] = 1;
  assert_int_equal(av_kernel_dot_general(&p, &A, &BT, &C, &d), AV_OK);
  assert_true(c[0] == 58 && c[1] == 64 && c[2] == 139 && c[3] == 154);
}

/* int8 results wrap: [100, 100] . [2, 1] = 300 -> 300 - 256 = 44; u8 inputs into i32 result. */
static void test_int_wrap_and_widening(void **state) {
  (void)state;
  int8_t a[2] = {100, 100}, b[2] = {2, 1}, c[1];
  int64_t vd[1] = {2};
  av_view A = tk_view(a, AV_DT_S8, 1, vd), B = tk_view(b, AV_DT_S8, 1, vd), C = tk_view(c, AV_DT_S8, 0, NULL);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {0}, .rhs_contract = {0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  assert_int_equal(c[0], 44);
  uint8_t ua[2] = {200, 255}, ub[2] = {200, 255};
  int32_t r32;
  A = tk_view(ua, AV_DT_U8, 1, vd);
  B = tk_view(ub, AV_DT_U8, 1, vd);
  C = tk_view(&r32, AV_DT_S32, 0, NULL);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  assert_int_equal(r32, 200 * 200 + 255 * 255);
}

/* s4 (one byte per element, sign-extended): [7, 7] . [7, 1] = 56, which wraps in 4 bits to
 * 56 - 64 = -8 (by hand). */
static void test_sub_byte_int_wraps(void **state) {
  (void)state;
  int8_t a[2] = {7, 7}, b[2] = {7, 1}, c = 0;
  int64_t vd[1] = {2};
  av_view A = tk_view(a, AV_DT_S4, 1, vd), B = tk_view(b, AV_DT_S4, 1, vd), C = tk_view(&c, AV_DT_S4, 0, NULL);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {0}, .rhs_contract = {0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  assert_int_equal(c, -8);
}

static void test_pred_is_or_of_and(void **state) {
  (void)state;
  uint8_t a[3] = {1, 1, 0}, b[3] = {0, 1, 1}, c;
  int64_t vd[1] = {3};
  av_view A = tk_view(a, AV_DT_PRED, 1, vd), B = tk_view(b, AV_DT_PRED, 1, vd), C = tk_view(&c, AV_DT_PRED, 0, NULL);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {0}, .rhs_contract = {0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  assert_int_equal(c, 1);
}

/* Small real products outside BLAS (kernels/dot.c small_gemm_*): matrix-vector (16-lane sums,
 * a tail of K % 16), B transposed, and wide results across j, f32 and f64. Inputs are small
 * integers, so every product and partial sum is exact and any summation order gives the
 * integer a double loop computes. */
static void small_case(av_dtype dt, int64_t M, int64_t K, int64_t N, bool rhs_transposed) {
  size_t es = av_dtype_size(dt);
  char *a = malloc((size_t)(M * K) * es), *b = malloc((size_t)(K * N) * es), *o = malloc((size_t)(M * N) * es);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(o);
  for (int64_t i = 0; i < M * K; i++) av_kel_store_real(dt, a + i * (int64_t)es, (double)(i % 7 - 3));
  for (int64_t i = 0; i < K * N; i++) av_kel_store_real(dt, b + i * (int64_t)es, (double)(i % 5 - 2));
  int64_t ad[2] = {M, K}, bd[2] = {rhs_transposed ? N : K, rhs_transposed ? K : N}, od[2] = {M, N};
  av_view A = tk_view(a, dt, 2, ad), B = tk_view(b, dt, 2, bd), O = tk_view(o, dt, 2, od);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {rhs_transposed ? 1 : 0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &O, &d), AV_OK);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double want = 0;
      for (int64_t k = 0; k < K; k++) {
        int64_t bi = rhs_transposed ? j * K + k : k * N + j;
        want += (double)((i * K + k) % 7 - 3) * (double)(bi % 5 - 2);
      }
      double got = av_kel_load_real(dt, o + (i * N + j) * (int64_t)es);
      if (got != want) fail_msg("%s %lldx%lldx%lld%s at [%lld,%lld]: %g, want %g", av_dtype_mlir_name(dt),
                                (long long)M, (long long)K, (long long)N, rhs_transposed ? " (B^T)" : "",
                                (long long)i, (long long)j, got, want);
    }
  free(a);
  free(b);
  free(o);
}

static void test_small_real_products(void **state) {
  (void)state;
  av_dtype types[2] = {AV_DT_F32, AV_DT_F64};
  for (int t = 0; t < 2; t++) {
    small_case(types[t], 64, 64, 1, false);  /* matrix-vector: 16-lane sums */
    small_case(types[t], 7, 37, 1, false);   /* K % 16 != 0: tail */
    small_case(types[t], 5, 40, 3, true);    /* B transposed: row . row */
    small_case(types[t], 4, 7, 9, false);    /* wide: across j */
    small_case(types[t], 3, 5, 2, false);    /* neither: the sequential loop */
  }
}

/* Wide small products (across j) in blocks of 4 rows x four vectors of columns, then 4 rows x
 * one vector, with the rest in the row loop: each element is still the sequential sum over k of rounded products, so
 * with fractional operands (rounding everywhere) the bits equal that sum done here in the
 * element type, for shapes with leftover rows and columns and A transposed. */
static void blocked_case(av_dtype dt, int64_t M, int64_t K, int64_t N, bool lhs_transposed,
                         bool rhs_transposed) {
  size_t es = av_dtype_size(dt);
  char *a = malloc((size_t)(M * K) * es), *b = malloc((size_t)(K * N) * es), *o = malloc((size_t)(M * N) * es);
  assert_true(a && b && o);
  for (int64_t i = 0; i < M * K; i++) av_kel_store_real(dt, a + i * (int64_t)es, (double)(i * 37 % 101 - 50) * 0.0131);
  for (int64_t i = 0; i < K * N; i++) av_kel_store_real(dt, b + i * (int64_t)es, (double)(i * 53 % 97 - 48) * 0.0217);
  int64_t ad[2] = {lhs_transposed ? K : M, lhs_transposed ? M : K};
  int64_t bd[2] = {rhs_transposed ? N : K, rhs_transposed ? K : N}, od[2] = {M, N};
  av_view A = tk_view(a, dt, 2, ad), B = tk_view(b, dt, 2, bd), O = tk_view(o, dt, 2, od);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {lhs_transposed ? 0 : 1},
                     .rhs_contract = {rhs_transposed ? 1 : 0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &O, &d), AV_OK);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double got = av_kel_load_real(dt, o + (i * N + j) * (int64_t)es), want;
      if (dt == AV_DT_F32) {
        float acc = 0;
        for (int64_t k = 0; k < K; k++) {
          float x = ((const float *)a)[lhs_transposed ? k * M + i : i * K + k];
          float y = ((const float *)b)[rhs_transposed ? j * K + k : k * N + j];
          float prod = x * y;
          acc = acc + prod;
        }
        want = acc;
      } else {
        double acc = 0;
        for (int64_t k = 0; k < K; k++) {
          double x = ((const double *)a)[lhs_transposed ? k * M + i : i * K + k];
          double y = ((const double *)b)[rhs_transposed ? j * K + k : k * N + j];
          double prod = x * y;
          acc = acc + prod;
        }
        want = acc;
      }
      if (memcmp(&got, &want, sizeof got))
        fail_msg("%s %lldx%lldx%lld%s%s at [%lld,%lld]: %a, want %a", av_dtype_mlir_name(dt), (long long)M,
                 (long long)K, (long long)N, lhs_transposed ? " (A^T)" : "", rhs_transposed ? " (B^T)" : "",
                 (long long)i, (long long)j, got, want);
    }
  free(a);
  free(b);
  free(o);
}

static void test_small_blocked_products(void **state) {
  (void)state;
  av_dtype types[2] = {AV_DT_F32, AV_DT_F64};
  for (int t = 0; t < 2; t++)
    for (int tr = 0; tr < 2; tr++) {
      blocked_case(types[t], 8, 64, 64, tr, false); /* an RNN step's h @ w: blocks only */
      blocked_case(types[t], 9, 33, 37, tr, false); /* a row and columns left over */
      blocked_case(types[t], 10, 21, 90, tr, false); /* four vectors, one more, the panel */
      blocked_case(types[t], 3, 20, 16, tr, false); /* fewer rows than a block */
      /* fewer columns than a vector, or a part of one left: the padded panel */
      blocked_case(types[t], 16, 128, 8, tr, false); /* an LSTM's read-out h @ wo */
      blocked_case(types[t], 128, 16, 8, tr, false);  /* its weight gradient h^T @ dout */
      blocked_case(types[t], 7, 30, 21, tr, false);
    }
  for (int t = 0; t < 2; t++) { /* B transposed with fewer k than lanes: B flipped back */
    blocked_case(types[t], 16, 8, 128, false, true); /* the read-out's dout @ wo^T */
    blocked_case(types[t], 5, 15, 9, false, true);
    blocked_case(types[t], 4, 3, 40, false, true);
  }
}

static void test_complex_f32(void **state) {
  (void)state;
  /* (1+2i)(3+4i) + (0+1i)(0+1i) = (-5+10i) + (-1) = -6+10i */
  float a[4] = {1, 2, 0, 1}, b[4] = {3, 4, 0, 1}, c[2];
  int64_t vd[1] = {2};
  av_view A = tk_view(a, AV_DT_C64, 1, vd), B = tk_view(b, AV_DT_C64, 1, vd), C = tk_view(c, AV_DT_C64, 0, NULL);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {0}, .rhs_contract = {0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  assert_true(c[0] == -6 && c[1] == 10);
}

static void test_empty_contraction_gives_zeros(void **state) {
  (void)state;
  float a[1], b[1], c[4] = {9, 9, 9, 9};
  int64_t ad[2] = {2, 0}, bd[2] = {0, 2}, cd[2] = {2, 2};
  av_view A = tk_view(a, AV_DT_F32, 2, ad), B = tk_view(b, AV_DT_F32, 2, bd), C = tk_view(c, AV_DT_F32, 2, cd);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  for (int i = 0; i < 4; i++) assert_true(c[i] == 0);
}

static void test_bad_dimension_numbers(void **state) {
  (void)state;
  float a[6], b[6], c[4];
  int64_t ad[2] = {2, 3}, bd[2] = {2, 3}, cd[2] = {2, 2};
  av_view A = tk_view(a, AV_DT_F32, 2, ad), B = tk_view(b, AV_DT_F32, 2, bd), C = tk_view(c, AV_DT_F32, 2, cd);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}}; /* 3 vs 2 */
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_INVALID_ARGUMENT);
  p.rhs_contract[0] = 7;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_INVALID_ARGUMENT);
}

/* Products above the small-size threshold go through BLAS, with the transposed layouts
 * handed over as BLAS transposes (no packing): a^T b^T for a [48,64], b [40,48], batch 1, and a
 * batched c64 case; integer-valued data keeps every sum exact, checked against loops here. */
static void test_blas_paths_with_transposes(void **state) {
  (void)state;
  enum { M = 64, K = 48, N = 40 };
  static float a[K * M], b[N * K], c[M * N];
  for (int i = 0; i < K * M; i++) a[i] = (float)(i % 5 - 2);
  for (int i = 0; i < N * K; i++) b[i] = (float)(i % 7 - 3);
  int64_t ad[2] = {K, M}, bd[2] = {N, K}, cd[2] = {M, N};
  av_view A = tk_view(a, AV_DT_F32, 2, ad), B = tk_view(b, AV_DT_F32, 2, bd), C = tk_view(c, AV_DT_F32, 2, cd);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {0}, .rhs_contract = {1}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double acc = 0;
      for (int k = 0; k < K; k++) acc += (double)a[k * M + i] * b[j * K + k];
      assert_true(c[i * N + j] == (float)acc);
    }
  /* batched complex: [2, M, K] x [2, K, N] */
  static float ca[2 * M * K * 2], cb[2 * K * N * 2], cc[2 * M * N * 2];
  for (int i = 0; i < 2 * M * K * 2; i++) ca[i] = (float)(i % 3 - 1);
  for (int i = 0; i < 2 * K * N * 2; i++) cb[i] = (float)(i % 4 - 2);
  int64_t cad[3] = {2, M, K}, cbd[3] = {2, K, N}, ccd[3] = {2, M, N};
  av_view CA = tk_view(ca, AV_DT_C64, 3, cad), CB = tk_view(cb, AV_DT_C64, 3, cbd), CC = tk_view(cc, AV_DT_C64, 3, ccd);
  av_dot_params q = {.nbatch = 1, .lhs_batch = {0}, .rhs_batch = {0}, .ncontract = 1, .lhs_contract = {2}, .rhs_contract = {1}};
  assert_int_equal(av_kernel_dot_general(&q, &CA, &CB, &CC, &d), AV_OK);
  for (int bb = 0; bb < 2; bb++)
    for (int i = 0; i < M; i += 7)
      for (int j = 0; j < N; j += 3) {
        double re = 0, im = 0;
        for (int k = 0; k < K; k++) {
          const float *x = ca + 2 * ((bb * M + i) * K + k), *y = cb + 2 * ((bb * K + k) * N + j);
          re += (double)x[0] * y[0] - (double)x[1] * y[1];
          im += (double)x[0] * y[1] + (double)x[1] * y[0];
        }
        const float *z = cc + 2 * ((bb * M + i) * N + j);
        assert_true(z[0] == (float)re && z[1] == (float)im);
      }
}

/* f32 products on oneDNN's tiled sgemm (dnnl_gemm): every layout GEMM takes in place (lhs /
 * rhs transposed or not, without batch dimensions), a batched product, sizes that leave
 * partial tiles. Integer-valued operands make every sum exact, so the result must equal a
 * double-precision loop; random operands must give the same bits on a 1-thread and a 4-thread
 * pool (tiles depend on the shapes only). */
enum { DN_B = 3, DN_M = 300, DN_K = 77, DN_N = 270 };

static void run_dnnl_layout(int layout, av_thread_pool *pool, bool exact, float *out) {
  bool at = layout & 1, bt = layout & 2, batched = layout == 4;
  int Bn = batched ? DN_B : 1, M = DN_M, K = DN_K, N = DN_N;
  static float a[DN_B * DN_M * DN_K], b[DN_B * DN_K * DN_N];
  srand(7);
  for (int i = 0; i < Bn * M * K; i++)
    a[i] = exact ? (float)(i % 9 - 4) : (float)rand() / (float)RAND_MAX - 0.5f;
  for (int i = 0; i < Bn * K * N; i++)
    b[i] = exact ? (float)(i % 5 - 2) : (float)rand() / (float)RAND_MAX - 0.5f;
  /* lhs [M, K] or [K, M]; rhs [K, N] or [N, K]; batched: [B, M, K] x [B, K, N] */
  int64_t ad[3] = {Bn, at ? K : M, at ? M : K}, bd[3] = {Bn, bt ? N : K, bt ? K : N}, cd[3] = {Bn, M, N};
  int r = batched ? 3 : 2, o = batched ? 0 : 1;
  av_view A = tk_view(a, AV_DT_F32, r, ad + o), B = tk_view(b, AV_DT_F32, r, bd + o),
          C = tk_view(out, AV_DT_F32, r, cd + o);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {at ? 0 : 1}, .rhs_contract = {bt ? 1 : 0},
                     .dnnl_gemm = true, .pool = pool};
  if (batched) {
    p.nbatch = 1;
    p.lhs_contract[0] = 2;
    p.rhs_contract[0] = 1;
  }
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  if (!exact) return;
  for (int bb = 0; bb < Bn; bb++)
    for (int i = 0; i < M; i += 13)
      for (int j = 0; j < N; j += 11) {
        double acc = 0;
        for (int k = 0; k < K; k++) {
          double x = at ? a[(bb * K + k) * M + i] : a[(bb * M + i) * K + k];
          double y = bt ? b[(bb * N + j) * K + k] : b[(bb * K + k) * N + j];
          acc += x * y;
        }
        assert_true(out[(bb * M + i) * N + j] == (float)acc);
      }
}

static void test_dnnl_tiled_gemm(void **state) {
  (void)state;
  size_t n = DN_B * DN_M * DN_N;
  float *c1 = malloc(n * sizeof(float)), *c4 = malloc(n * sizeof(float));
  assert_non_null(c1);
  assert_non_null(c4);
  av_thread_pool *p1 = av_thread_pool_create(1), *p4 = av_thread_pool_create(4);
  for (int layout = 0; layout < 5; layout++) {
    memset(c1, 0, n * sizeof(float));
    run_dnnl_layout(layout, p4, true, c4);
    memset(c4, 0, n * sizeof(float));
    run_dnnl_layout(layout, p1, false, c1);
    run_dnnl_layout(layout, p4, false, c4);
    assert_memory_equal(c1, c4, n * sizeof(float));
  }
  av_thread_pool_release(p1);
  av_thread_pool_release(p4);
  free(c1);
  free(c4);
}

/* Rough speed of a 1024^3 f32 matmul (printed; the check only asserts known entries). */
static void test_matmul_1024_speed(void **state) {
  (void)state;
  enum { N = 1024 };
  float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N), *c = malloc(sizeof(float) * N * N);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  for (int i = 0; i < N * N; i++) {
    a[i] = (float)(i % 3);
    b[i] = 1.0f;
  }
  int64_t dd[2] = {N, N};
  av_view A = tk_view(a, AV_DT_F32, 2, dd), B = tk_view(b, AV_DT_F32, 2, dd), C = tk_view(c, AV_DT_F32, 2, dd);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
  av_diag d;
  av_diag_init(&d);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_int_equal(av_kernel_dot_general(&p, &A, &B, &C, &d), AV_OK);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  print_message("f32 matmul 1024^3: %.3f s, %.1f GFLOP/s\n", s, 2.0 * N * N * N / s / 1e9);
  /* row 0 of a: 0,1,2,0,1,2,... (1024 entries: 341 full cycles then a 0) sums to 1023;
   * row 1 starts at i = 1024 (1024 % 3 = 1): 1,2,0,... 341 cycles then 1 -> 1024 */
  assert_true(c[0] == 1023.0f && c[N] == 1024.0f);
  free(a);
  free(b);
  free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain_matmul_f32),     cmocka_unit_test(test_batched_all_types),
      cmocka_unit_test(test_two_contracting_f64),  cmocka_unit_test(test_transposed_lhs_f32),
      cmocka_unit_test(test_int_wrap_and_widening), cmocka_unit_test(test_pred_is_or_of_and),
      cmocka_unit_test(test_sub_byte_int_wraps),
      cmocka_unit_test(test_complex_f32),          cmocka_unit_test(test_empty_contraction_gives_zeros),
      cmocka_unit_test(test_bad_dimension_numbers), cmocka_unit_test(test_blas_paths_with_transposes),
      cmocka_unit_test(test_small_real_products), cmocka_unit_test(test_small_blocked_products), cmocka_unit_test(test_matmul_1024_speed),
      cmocka_unit_test(test_dnnl_tiled_gemm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
