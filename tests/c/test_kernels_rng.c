/* rng_bit_generator / rng kernels. Expected values: the Random123 known-answer vectors
 * (threefry2x32_20 and philox4x32_10 with zero key and counter), and
 * jax.lax.rng_bit_generator(np.array(state, np.uint64), shape, dtype, algorithm) on the stock
 * XLA CPU backend (state and values printed in hex, pasted below). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "runtime/kernels/rng.h"
#include "test_kernels_util.h"

typedef struct rng_case {
  av_rng_algorithm alg;
  uint64_t state[2];
  int rank;
  int64_t dims[2];
  av_dtype dt;
  uint64_t new_counter;
  int n;
  uint64_t vals[6];
} rng_case;

static const rng_case kCases[] = {
    /* Random123 KAT: threefry2x32_20(key 0, ctr 0) word 0 = 0x6b200159 */
    {AV_RNG_ALGORITHM_THREE_FRY, {0, 0}, 0, {0}, AV_DT_U32, 1, 1, {0x6b200159}},
    {AV_RNG_ALGORITHM_THREE_FRY, {1, 2}, 1, {5}, AV_DT_U32, 5, 5,
     {0x296e954, 0x802fd53b, 0xed3492d3, 0xdf435003, 0x63b40bd3}},
    {AV_RNG_ALGORITHM_THREE_FRY, {1, 2}, 2, {2, 3}, AV_DT_U32, 5, 6,
     {0x296e954, 0xed3492d3, 0x63b40bd3, 0x802fd53b, 0xdf435003, 0xfcc0f261}},
    {AV_RNG_ALGORITHM_THREE_FRY, {1, 2}, 1, {3}, AV_DT_U64, 5, 3,
     {0x802fd53b0296e954ull, 0xdf435003ed3492d3ull, 0xfcc0f26163b40bd3ull}},
    {AV_RNG_ALGORITHM_THREE_FRY, {1, 2}, 1, {3}, AV_DT_U8, 4, 3, {0x54, 0x3b, 0xd3}},
    {AV_RNG_ALGORITHM_THREE_FRY, {5, UINT64_MAX}, 1, {2}, AV_DT_U16, 0, 2, {0x2319, 0xf28f}},
    /* Random123 KAT: philox4x32_10(key 0, ctr 0) */
    {AV_RNG_ALGORITHM_PHILOX, {0, 0}, 1, {4}, AV_DT_U32, 1, 4, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {AV_RNG_ALGORITHM_PHILOX, {7, 8}, 1, {5}, AV_DT_U32, 10, 5,
     {0xf280f47, 0x4eda6be6, 0x94b4ac8e, 0x4a96175d, 0x9c6e911a}},
    {AV_RNG_ALGORITHM_PHILOX, {7, 8}, 1, {3}, AV_DT_U64, 10, 3,
     {0x4eda6be60f280f47ull, 0x4a96175d94b4ac8eull, 0xe66bd3a49c6e911aull}},
    {AV_RNG_ALGORITHM_DEFAULT, {7, 8}, 2, {2, 2}, AV_DT_U32, 9, 4, {0xf280f47, 0x4eda6be6, 0x94b4ac8e, 0x4a96175d}},
    /* 128-bit counter carry: low word 2^64-1 + 1 wraps */
    {AV_RNG_ALGORITHM_PHILOX, {5, UINT64_MAX}, 1, {2}, AV_DT_U16, 0, 2, {0xa1ba, 0x4400}},
};

static void test_against_xla(void **state) {
  (void)state;
  for (size_t c = 0; c < sizeof kCases / sizeof *kCases; c++) {
    const rng_case *k = &kCases[c];
    uint64_t st[2] = {k->state[0], k->state[1]}, ns[2] = {0, 0};
    unsigned char out[6 * 8];
    int64_t sd[1] = {2};
    av_view S = tk_view(st, AV_DT_U64, 1, sd), NS = tk_view(ns, AV_DT_U64, 1, sd), O = tk_view(out, k->dt, k->rank, k->dims);
    av_rng_bit_generator_params p = {k->alg};
    av_diag d;
    av_diag_init(&d);
    assert_int_equal(av_kernel_rng_bit_generator(&p, &S, &NS, &O, &d), AV_OK);
    assert_true(ns[0] == k->state[0]);
    assert_true(ns[1] == k->new_counter);
    size_t es = av_dtype_size(k->dt);
    for (int i = 0; i < k->n; i++) {
      uint64_t v = 0;
      memcpy(&v, out + (size_t)i * es, es);
      if (v != k->vals[i]) print_error("case %zu element %d: %llx\n", c, i, (unsigned long long)v);
      assert_true(v == k->vals[i]);
    }
  }
}

/* A u64[3] PHILOX state carries the 128-bit counter explicitly: [7, 8, 7] must give what the
 * two-word state [7, 8] gives (whose counter high word is the key), and carry into word 2. */
static void test_philox_three_word_state(void **state) {
  (void)state;
  uint64_t st[3] = {7, 8, 7}, ns[3];
  uint32_t out[5];
  int64_t sd[1] = {3}, od[1] = {5};
  av_view S = tk_view(st, AV_DT_U64, 1, sd), NS = tk_view(ns, AV_DT_U64, 1, sd), O = tk_view(out, AV_DT_U32, 1, od);
  av_rng_bit_generator_params p = {AV_RNG_ALGORITHM_PHILOX};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_rng_bit_generator(&p, &S, &NS, &O, &d), AV_OK);
  static const uint32_t e[5] = {0xf280f47, 0x4eda6be6, 0x94b4ac8e, 0x4a96175d, 0x9c6e911a};
  for (int i = 0; i < 5; i++) assert_true(out[i] == e[i]);
  assert_true(ns[0] == 7 && ns[1] == 10 && ns[2] == 7);
  st[1] = UINT64_MAX;
  assert_int_equal(av_kernel_rng_bit_generator(&p, &S, &NS, &O, &d), AV_OK);
  assert_true(ns[1] == 1 && ns[2] == 8);
  sd[0] = 4; /* bad state size */
  assert_int_equal(av_kernel_rng_bit_generator(&p, &S, &NS, &O, &d), AV_INVALID_ARGUMENT);
}

static void test_rng_uniform_range_and_state(void **state) {
  (void)state;
  float a = -2.0f, b = 3.0f, out[1000];
  int64_t od[1] = {1000};
  uint64_t counter = 0;
  av_view A = tk_view(&a, AV_DT_F32, 0, NULL), B = tk_view(&b, AV_DT_F32, 0, NULL), O = tk_view(out, AV_DT_F32, 1, od);
  av_rng_params p = {AV_RNG_UNIFORM, &counter};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_rng(&p, &A, &B, &O, &d), AV_OK);
  double sum = 0;
  for (int i = 0; i < 1000; i++) {
    assert_true(out[i] >= -2.0f && out[i] < 3.0f);
    sum += out[i];
  }
  assert_true(sum / 1000 > 0.0 && sum / 1000 < 1.0); /* mean 0.5, sd of mean ~0.05 */
  assert_true(counter == 1000);
  int32_t ia = 5, ib = 8, io[100];
  od[0] = 100;
  A = tk_view(&ia, AV_DT_S32, 0, NULL);
  B = tk_view(&ib, AV_DT_S32, 0, NULL);
  O = tk_view(io, AV_DT_S32, 1, od);
  assert_int_equal(av_kernel_rng(&p, &A, &B, &O, &d), AV_OK);
  for (int i = 0; i < 100; i++) assert_true(io[i] >= 5 && io[i] < 8);
}

/* NORMAL(mu = 3, sigma = 2) over 20000 draws: sample mean within 0.1 (4.5 standard errors)
 * and standard deviation within 0.1 of the parameters. */
static void test_rng_normal_moments(void **state) {
  (void)state;
  enum { N = 20000 };
  static double out[N];
  double a = 3.0, b = 2.0;
  int64_t od[1] = {N};
  uint64_t counter = 7;
  av_view A = tk_view(&a, AV_DT_F64, 0, NULL), B = tk_view(&b, AV_DT_F64, 0, NULL), O = tk_view(out, AV_DT_F64, 1, od);
  av_rng_params p = {AV_RNG_NORMAL, &counter};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_rng(&p, &A, &B, &O, &d), AV_OK);
  double sum = 0, sq = 0;
  for (int i = 0; i < N; i++) {
    assert_true(isfinite(out[i]));
    sum += out[i];
  }
  double mean = sum / N;
  for (int i = 0; i < N; i++) sq += (out[i] - mean) * (out[i] - mean);
  double sd = sqrt(sq / (N - 1));
  assert_true(fabs(mean - 3.0) < 0.1);
  assert_true(fabs(sd - 2.0) < 0.1);
  assert_true(counter == 7 + N);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_against_xla),
      cmocka_unit_test(test_philox_three_word_state),
      cmocka_unit_test(test_rng_uniform_range_and_state),
      cmocka_unit_test(test_rng_normal_moments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
