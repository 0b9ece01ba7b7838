/* Subnormal floats (runtime/fp_env.h): executions flush them by default, as XLA:CPU does
 * (x * 1.5 of 1e-40 is 0, and a subnormal input reads as 0), compute them exactly in IEEE mode
 * (1e-40 * 1.5 is what this thread computes in IEEE arithmetic), on the calling thread and on
 * the pool's threads, and the calling thread's MXCSR is the same after the execution. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <string.h>

#include "compiler/program.h"
#include "runtime/fp_env.h"
#include "runtime/thread_pool.h"
#include "util/storage.h"

#if defined(__x86_64__)
#include <xmmintrin.h>

enum { N = 1 << 18 }; /* large enough to be split over the pool */

static const char *text =
    "func.func public @main(%x: tensor<262144xf32>) -> (tensor<262144xf32>, tensor<262144xi1>) {\n"
    "  %c = stablehlo.constant dense<1.5> : tensor<262144xf32>\n"
    "  %z = stablehlo.constant dense<0.0> : tensor<262144xf32>\n"
    "  %0 = stablehlo.multiply %x, %c : tensor<262144xf32>\n"
    "  %1 = stablehlo.compare EQ, %x, %z : (tensor<262144xf32>, tensor<262144xf32>) -> "
    "tensor<262144xi1>\n"
    "  return %0, %1 : tensor<262144xf32>, tensor<262144xi1>\n"
    "}\n";

/* Runs x * 1.5 and x == 0 over N copies of 1e-40 in `mode`; checks every element is `want`
 * and that the caller's MXCSR (set to `caller_csr`) is unchanged. */
static void run(av_denormals mode, av_thread_pool *pool, uint32_t caller_csr, float want,
                bool want_zero) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  if (!p) fail_msg("compile: %s", d.msg);
  av_program_set_denormals(p, mode);
  if (pool) av_program_use_thread_pool(p, pool);
  av_tensor in = {0}, out[2] = {{0}};
  in.storage = av_storage_alloc(N * sizeof(float));
  in.dtype = AV_DT_F32;
  in.rank = 1;
  in.dims[0] = N;
  float *x = in.storage->data;
  for (int i = 0; i < N; i++) x[i] = 1e-40f;
  uint32_t saved = _mm_getcsr();
  _mm_setcsr(caller_csr);
  av_code c = av_program_execute(p, 0, &in, out, &d);
  uint32_t after = _mm_getcsr();
  _mm_setcsr(saved);
  assert_int_equal(c, AV_OK);
  assert_int_equal(after, caller_csr);
  const float *y = out[0].storage->data;
  const uint8_t *z = out[1].storage->data;
  for (int i = 0; i < N; i++) {
    if (memcmp(&y[i], &want, sizeof want) != 0) fail_msg("element %d: %g, want %g", i, y[i], want);
    if ((z[i] != 0) != want_zero) fail_msg("element %d: 1e-40 == 0 gave %d", i, z[i]);
  }
  av_storage_release(out[0].storage);
  av_storage_release(out[1].storage);
  av_storage_release(in.storage);
  av_program_free(p);
}

static void test_flush_by_default_and_ieee_on_request(void **state) {
  (void)state;
  uint32_t plain = _mm_getcsr() & ~(uint32_t)(AV_MXCSR_FTZ | AV_MXCSR_DAZ);
  volatile float tiny = 1e-40f, k = 1.5f;
  uint32_t saved = _mm_getcsr();
  _mm_setcsr(plain);
  float exact = tiny * k; /* this thread in IEEE mode */
  _mm_setcsr(saved);
  assert_true(exact != 0.0f && exact < FLT_MIN);
  for (int threads = 1; threads <= 4; threads *= 4) {
    av_thread_pool *pool = threads > 1 ? av_thread_pool_create(threads) : NULL;
    av_thread_pool_set_denormals(pool, AV_DENORMALS_FLUSH);
    run(AV_DENORMALS_FLUSH, pool, plain, 0.0f, true);
    av_thread_pool_release(pool);
    pool = threads > 1 ? av_thread_pool_create(threads) : NULL;
    av_thread_pool_set_denormals(pool, AV_DENORMALS_IEEE);
    /* a caller that flushes itself still gets exact results, and keeps its mode */
    run(AV_DENORMALS_IEEE, pool, plain | AV_MXCSR_FTZ | AV_MXCSR_DAZ, exact, false);
    run(AV_DENORMALS_IEEE, pool, plain, exact, false);
    av_thread_pool_release(pool);
  }
}

static void test_parse(void **state) {
  (void)state;
  av_denormals m;
  assert_true(av_parse_denormals("ieee", &m) && m == AV_DENORMALS_IEEE);
  assert_true(av_parse_denormals("flush", &m) && m == AV_DENORMALS_FLUSH);
  assert_true(av_parse_denormals("ftz", &m) && m == AV_DENORMALS_FLUSH);
  assert_false(av_parse_denormals("IEEE754", &m));
  assert_false(av_parse_denormals(NULL, &m));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flush_by_default_and_ieee_on_request),
      cmocka_unit_test(test_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) { return 0; } /* the environment is only switched on x86-64 */
#endif
