/* Kernel fast paths that split work over a thread pool (sort rows, x[idx] row gathers, the
 * scatter operand copy) give the same results as naive reference loops written here, and
 * the bf16 dot rounds its f32 GEMM result once. Run under the sanitizer builds too. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/dot.h"
#include "ir/float_codec.h"
#include "runtime/kernels/gather.h"
#include "runtime/kernels/lapack.h"
#include "runtime/kernels/linalg.h"
#include "runtime/kernels/scatter.h"
#include "runtime/kernels/sort.h"
#include "runtime/thread_pool.h"
#include "test_kernels_util.h"

static uint32_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* 96 rows of 1500 int32 keys with many ties, argsort-style (keys, iota) sorted ascending by
 * a proven key comparator on a 4-thread pool; reference: stable insertion by hand. */
static void test_sort_rows_on_pool(void **state) {
  (void)state;
  enum { R = 96, L = 1500 };
  int32_t *k = malloc(sizeof(int32_t) * R * L), *v = malloc(sizeof(int32_t) * R * L);
  int32_t *ko = malloc(sizeof(int32_t) * R * L), *vo = malloc(sizeof(int32_t) * R * L);
  assert_non_null(k && v && ko && vo);
  uint64_t seed = 1;
  for (int i = 0; i < R * L; i++) {
    k[i] = (int32_t)(lcg(&seed) % 50) - 25;
    v[i] = i % L;
  }
  int64_t dims[2] = {R, L};
  av_view in[2] = {tk_view(k, AV_DT_S32, 2, dims), tk_view(v, AV_DT_S32, 2, dims)};
  av_view out[2] = {tk_view(ko, AV_DT_S32, 2, dims), tk_view(vo, AV_DT_S32, 2, dims)};
  av_sort_params p = {.ninputs = 2, .dimension = 1, .is_stable = true};
  p.key.valid = true;
  p.key.operand = 0;
  p.pool = av_thread_pool_create(4);
  assert_non_null(p.pool);
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_sort(&p, in, out, &d), AV_OK);
  /* reference: a counting sort (keys in [-25, 25)) gives each element its stable position */
  for (int r = 0; r < R; r++) {
    const int32_t *kr = k + r * L;
    int start[51] = {0};
    for (int i = 0; i < L; i++) start[kr[i] + 25 + 1]++;
    for (int b = 1; b <= 50; b++) start[b] += start[b - 1];
    for (int i = 0; i < L; i++) {
      int pos = start[kr[i] + 25]++;
      assert_int_equal(ko[r * L + pos], kr[i]);
      assert_int_equal(vo[r * L + pos], i);
    }
  }
  av_thread_pool_release(p.pool);
  free(k);
  free(v);
  free(ko);
  free(vo);
}

/* x[idx] on a (5000, 3) operand with 4096 indices (some out of range: clamped) on a pool. */
static void test_row_gather_on_pool(void **state) {
  (void)state;
  enum { N = 5000, W = 3, B = 4096 };
  float *x = malloc(sizeof(float) * N * W), *o = malloc(sizeof(float) * B * W);
  int32_t *idx = malloc(sizeof(int32_t) * B);
  assert_non_null(x && o && idx);
  for (int i = 0; i < N * W; i++) x[i] = (float)i;
  uint64_t seed = 7;
  for (int b = 0; b < B; b++) idx[b] = (int32_t)(lcg(&seed) % (N + 200)) - 100;
  int64_t xd[2] = {N, W}, id[2] = {B, 1}, od[2] = {B, W};
  av_view X = tk_view(x, AV_DT_F32, 2, xd), I = tk_view(idx, AV_DT_S32, 2, id), O = tk_view(o, AV_DT_F32, 2, od);
  av_gather_params p = {.n_offset_dims = 1, .offset_dims = {1}, .n_collapsed_slice_dims = 1,
                        .collapsed_slice_dims = {0}, .n_start_index_map = 1, .start_index_map = {0},
                        .index_vector_dim = 1, .slice_sizes = {1, W}};
  p.pool = av_thread_pool_create(4);
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_gather(&p, &X, &I, &O, &d), AV_OK);
  for (int b = 0; b < B; b++) {
    int r = idx[b] < 0 ? 0 : (idx[b] > N - 1 ? N - 1 : idx[b]);
    for (int w = 0; w < W; w++) assert_true(o[b * W + w] == x[r * W + w]);
  }
  av_thread_pool_release(p.pool);
  free(x);
  free(o);
  free(idx);
}

/* Batches of small matrices split over a pool (cholesky and triangular_solve across SIMD
 * lanes, LAPACK getrf / syevd in chunks of whole matrices): the same bytes as on no pool. */
static void spd_batch(float *a, int64_t batch, int64_t n, uint64_t seed) {
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j <= i; j++) {
        float v = i == j ? (float)n + (float)(lcg(&seed) % 100) / 100.0f : (float)(lcg(&seed) % 200) / 200.0f - 0.5f;
        a[(b * n + i) * n + j] = a[(b * n + j) * n + i] = v;
      }
}

static void test_batched_linalg_on_pool(void **state) {
  (void)state;
  enum { B = 300, N = 8 };
  float *a = malloc(sizeof(float) * B * N * N), *l0 = malloc(sizeof(float) * B * N * N),
        *l1 = malloc(sizeof(float) * B * N * N), *x0 = malloc(sizeof(float) * B * N * 3),
        *x1 = malloc(sizeof(float) * B * N * 3), *rhs = malloc(sizeof(float) * B * N * 3);
  assert_non_null(a && l0 && l1 && x0 && x1 && rhs);
  spd_batch(a, B, N, 3);
  uint64_t seed = 11;
  for (int i = 0; i < B * N * 3; i++) rhs[i] = (float)(lcg(&seed) % 1000) / 500.0f - 1.0f;
  av_thread_pool *pool = av_thread_pool_create(4);
  int64_t ad[3] = {B, N, N}, bd[3] = {B, N, 3};
  av_view A = tk_view(a, AV_DT_F32, 3, ad), R = tk_view(rhs, AV_DT_F32, 3, bd);
  av_diag d;
  av_diag_init(&d);
  for (int run = 0; run < 2; run++) {
    av_cholesky_params cp = {true, run ? pool : NULL};
    av_view L = tk_view(run ? l1 : l0, AV_DT_F32, 3, ad);
    assert_int_equal(av_kernel_cholesky(&cp, &A, &L, &d), AV_OK);
    av_triangular_solve_params tp = {true, true, false, AV_TRANSPOSE_NO_TRANSPOSE, run ? pool : NULL};
    av_view X = tk_view(run ? x1 : x0, AV_DT_F32, 3, bd);
    assert_int_equal(av_kernel_triangular_solve(&tp, &L, &R, &X, &d), AV_OK);
  }
  assert_memory_equal(l0, l1, sizeof(float) * B * N * N);
  assert_memory_equal(x0, x1, sizeof(float) * B * N * 3);
  /* LAPACK custom calls: getrf (lanes) and syevd (per matrix), column-major matrices */
  av_lapack_routine routines[2] = {AV_LAPACK_GETRF, AV_LAPACK_SYEVD};
  for (int r = 0; r < 2; r++) {
    av_lapack_call c;
    memset(&c, 0, sizeof c);
    c.routine = routines[r];
    c.dtype = AV_DT_F32;
    c.uplo = 'L';
    c.mode = 'V';
    c.batch = B;
    c.nin = 1;
    c.nout = 3;
    av_lapack_arg mat = {AV_DT_F32, 3, {B, N, N}, {1, 2, 0}};
    av_lapack_arg vec = {r ? AV_DT_F32 : AV_DT_S32, 2, {B, N}, {1, 0}};
    av_lapack_arg info = {AV_DT_S32, 1, {B}, {0}};
    c.in[0] = c.out[0] = mat;
    c.out[1] = vec;
    c.out[2] = info;
    float *m[2] = {malloc(sizeof(float) * B * N * N), malloc(sizeof(float) * B * N * N)};
    int32_t *v[2] = {malloc(sizeof(int32_t) * B * N), malloc(sizeof(int32_t) * B * N)};
    int32_t *inf[2] = {malloc(sizeof(int32_t) * B), malloc(sizeof(int32_t) * B)};
    for (int run = 0; run < 2; run++) {
      void *in[1] = {a}, *out[3] = {m[run], v[run], inf[run]};
      assert_int_equal(av_lapack_run(&c, NULL, run ? pool : NULL, in, out, &d), AV_OK);
    }
    assert_memory_equal(m[0], m[1], sizeof(float) * B * N * N);
    assert_memory_equal(v[0], v[1], sizeof(int32_t) * B * N);
    assert_memory_equal(inf[0], inf[1], sizeof(int32_t) * B);
    for (int k = 0; k < 2; k++) {
      free(m[k]);
      free(v[k]);
      free(inf[k]);
    }
  }
  av_thread_pool_release(pool);
  free(a);
  free(l0);
  free(l1);
  free(x0);
  free(x1);
  free(rhs);
}

/* x.at[idx].add(u) on (70000, 4) f32 (a pool-split copy), duplicate and out-of-range rows. */
static void test_scatter_add_rows_on_pool(void **state) {
  (void)state;
  enum { N = 70000, W = 4, B = 3000 };
  float *x = malloc(sizeof(float) * N * W), *o = malloc(sizeof(float) * N * W);
  float *u = malloc(sizeof(float) * B * W), *ref = malloc(sizeof(float) * N * W);
  int32_t *idx = malloc(sizeof(int32_t) * B);
  assert_non_null(x && o && u && ref && idx);
  uint64_t seed = 3;
  for (int i = 0; i < N * W; i++) ref[i] = x[i] = (float)(lcg(&seed) % 1000) * 0.25f;
  for (int i = 0; i < B * W; i++) u[i] = (float)(lcg(&seed) % 100) * 0.5f;
  for (int b = 0; b < B; b++) idx[b] = (int32_t)(lcg(&seed) % 200) * 350 - 5; /* dups, -5 */
  for (int b = 0; b < B; b++)
    if (idx[b] >= 0 && idx[b] < N)
      for (int w = 0; w < W; w++) ref[idx[b] * W + w] += u[b * W + w];
  int64_t xd[2] = {N, W}, id[2] = {B, 1}, ud[2] = {B, W};
  av_view X = tk_view(x, AV_DT_F32, 2, xd), I = tk_view(idx, AV_DT_S32, 2, id);
  av_view U = tk_view(u, AV_DT_F32, 2, ud), O = tk_view(o, AV_DT_F32, 2, xd);
  av_scatter_params p = {.ninputs = 1, .n_update_window_dims = 1, .update_window_dims = {1},
                         .n_inserted_window_dims = 1, .inserted_window_dims = {0},
                         .n_scatter_dims_to_operand_dims = 1, .scatter_dims_to_operand_dims = {0},
                         .index_vector_dim = 1, .update = tk_fn(tk_add_f32, AV_OP_ADD)};
  p.pool = av_thread_pool_create(4);
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_scatter(&p, &X, &I, &U, &O, &d), AV_OK);
  assert_memory_equal(o, ref, sizeof(float) * N * W); /* same order of additions: exact */
  av_thread_pool_release(p.pool);
  free(x);
  free(o);
  free(u);
  free(ref);
  free(idx);
}

/* Run combiners of other dtypes/ops: bf16 scatter-add rounds f32(a) + f32(b) once to bf16;
 * f32 scatter-max propagates NaN from either side (StableHLO maximum). */
static void test_scatter_run_combiners(void **state) {
  (void)state;
  enum { N = 6, W = 5 };
  int32_t idx[3] = {4, 1, 9}; /* 9: out of range, skipped */
  int64_t xd[2] = {N, W}, id[2] = {3, 1}, ud[2] = {3, W};
  uint16_t xb[N * W], ub[3 * W], ob[N * W];
  for (int i = 0; i < N * W; i++) xb[i] = av_f32_to_bf16(1.0f + (float)i / 7.0f);
  for (int i = 0; i < 3 * W; i++) ub[i] = av_f32_to_bf16((float)i * 0.013f - 0.05f);
  av_scatter_params p = {.ninputs = 1, .n_update_window_dims = 1, .update_window_dims = {1},
                         .n_inserted_window_dims = 1, .inserted_window_dims = {0},
                         .n_scatter_dims_to_operand_dims = 1, .scatter_dims_to_operand_dims = {0},
                         .index_vector_dim = 1, .update = tk_fn(NULL, AV_OP_ADD)};
  av_view X = tk_view(xb, AV_DT_BF16, 2, xd), I = tk_view(idx, AV_DT_S32, 2, id);
  av_view U = tk_view(ub, AV_DT_BF16, 2, ud), O = tk_view(ob, AV_DT_BF16, 2, xd);
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_scatter(&p, &X, &I, &U, &O, &d), AV_OK);
  for (int r = 0; r < N; r++)
    for (int w = 0; w < W; w++) {
      int b = r == 4 ? 0 : (r == 1 ? 1 : -1);
      uint16_t want = b < 0 ? xb[r * W + w]
                            : av_f32_to_bf16(av_bf16_to_f32(xb[r * W + w]) + av_bf16_to_f32(ub[b * W + w]));
      assert_int_equal(ob[r * W + w], want);
    }
  float xf[N * W], uf[3 * W], of[N * W];
  for (int i = 0; i < N * W; i++) xf[i] = (float)i;
  for (int i = 0; i < 3 * W; i++) uf[i] = 12.0f;
  xf[4 * W + 0] = NAN; /* current NaN */
  uf[1 * W + 2] = NAN; /* update NaN into row 1 */
  av_view XF = tk_view(xf, AV_DT_F32, 2, xd), UF = tk_view(uf, AV_DT_F32, 2, ud), OF = tk_view(of, AV_DT_F32, 2, xd);
  p.update = tk_fn(NULL, AV_OP_MAXIMUM);
  assert_int_equal(av_kernel_scatter(&p, &XF, &I, &UF, &OF, &d), AV_OK);
  for (int r = 0; r < N; r++)
    for (int w = 0; w < W; w++) {
      float got = of[r * W + w];
      if ((r == 4 && w == 0) || (r == 1 && w == 2)) assert_true(isnan(got));
      else if (r == 4 || r == 1) assert_true(got == fmaxf(xf[r * W + w], 12.0f));
      else assert_true(got == xf[r * W + w]);
    }
}

/* Scalar updates into an operand with an empty dimension: every window is out of bounds,
 * nothing is written (the sanitizer builds catch a stray write). */
static void test_scatter_into_empty_operand(void **state) {
  (void)state;
  float x[1] = {0}, o[1] = {0}, u[3] = {1, 2, 3};
  int32_t idx[3] = {0, 1, 3};
  int64_t xd[2] = {4, 0}, id[2] = {3, 1}, ud[1] = {3};
  av_view X = tk_view(x, AV_DT_F32, 2, xd), I = tk_view(idx, AV_DT_S32, 2, id);
  av_view U = tk_view(u, AV_DT_F32, 1, ud), O = tk_view(o, AV_DT_F32, 2, xd);
  av_scatter_params p = {.ninputs = 1, .n_inserted_window_dims = 2, .inserted_window_dims = {0, 1},
                         .n_scatter_dims_to_operand_dims = 1, .scatter_dims_to_operand_dims = {0},
                         .index_vector_dim = 1, .update = tk_fn(NULL, AV_OP_ADD)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_scatter(&p, &X, &I, &U, &O, &d), AV_OK);
  assert_true(o[0] == 0.0f);
}

/* bf16 x bf16 -> bf16 (100x70 @ 70x90, through sgemm): every element is the f64 sum of the
 * exact products rounded once to bf16, give or take one bf16 ulp of f32 accumulation. */
static void test_bf16_dot_rounds_once(void **state) {
  (void)state;
  enum { M = 100, K = 70, N = 90 };
  uint16_t *a = malloc(2 * M * K), *b = malloc(2 * K * N), *c = malloc(2 * M * N);
  assert_non_null(a && b && c);
  uint64_t seed = 11;
  for (int i = 0; i < M * K; i++) a[i] = av_f32_to_bf16(((float)(lcg(&seed) % 2001) - 1000.0f) / 257.0f);
  for (int i = 0; i < K * N; i++) b[i] = av_f32_to_bf16(((float)(lcg(&seed) % 2001) - 1000.0f) / 263.0f);
  int64_t ad[2] = {M, K}, bd[2] = {K, N}, cd[2] = {M, N};
  av_view A = tk_view(a, AV_DT_BF16, 2, ad), Bv = tk_view(b, AV_DT_BF16, 2, bd), C = tk_view(c, AV_DT_BF16, 2, cd);
  av_dot_params p = {.ncontract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_dot_general(&p, &A, &Bv, &C, &d), AV_OK);
  int exact = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += (double)av_bf16_to_f32(a[i * K + k]) * av_bf16_to_f32(b[k * N + j]);
      uint16_t want = av_f32_to_bf16((float)s), got = c[i * N + j];
      if (want == got) exact++;
      else assert_true(abs((int)want - (int)got) == 1); /* neighbouring bf16 (same sign) */
    }
  assert_true(exact > M * N * 9 / 10);
  free(a);
  free(b);
  free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sort_rows_on_pool),
      cmocka_unit_test(test_row_gather_on_pool),
      cmocka_unit_test(test_scatter_add_rows_on_pool),
      cmocka_unit_test(test_scatter_run_combiners),
      cmocka_unit_test(test_scatter_into_empty_operand),
      cmocka_unit_test(test_bf16_dot_rounds_once),
      cmocka_unit_test(test_batched_linalg_on_pool),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
