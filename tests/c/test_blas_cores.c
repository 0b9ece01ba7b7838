/* OpenBLAS runs kernels that fit the CPU (runtime/blas_cores.c): on a CPU with AVX2 and FMA,
 * never the generic SSE kernels it falls back to for a model it does not know (Debian 12's
 * 0.3.21 on Emerald Rapids), and its products are still right after the kernels changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include <cblas.h>
#include <math.h>

#include "runtime/blas_cores.h"

void gotoblas_dynamic_init(void) __attribute__((weak));

static void test_kernels_fit_the_cpu(void **state) {
  (void)state;
  const char *before = NULL, *now = av_blas_kernels(&before);
  print_message("OpenBLAS kernels: %s (chosen by OpenBLAS: %s)\n", now, before);
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  bool avx2 = false;
#endif
  if (!avx2 || !gotoblas_dynamic_init || getenv("OPENBLAS_CORETYPE")) skip();
  static const char *const wide[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids",
                                     "Excavator"};
  bool ok = false;
  for (size_t i = 0; i < sizeof wide / sizeof *wide; i++) ok = ok || !strcasecmp(now, wide[i]);
  if (!ok) fail_msg("OpenBLAS runs its %s kernels on a CPU with AVX2 and FMA", now);
}

/* dgemm and sgemm against a plain loop in double (odd sizes: the kernels' edges) */
static void test_products_after_the_choice(void **state) {
  (void)state;
  av_blas_choose_kernels();
  enum { M = 67, N = 129, K = 301 };
  double *a = malloc(sizeof(double) * M * K), *b = malloc(sizeof(double) * K * N);
  double *c = malloc(sizeof(double) * M * N);
  float *af = malloc(sizeof(float) * M * K), *bf = malloc(sizeof(float) * K * N);
  float *cf = malloc(sizeof(float) * M * N);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  assert_non_null(af);
  assert_non_null(bf);
  assert_non_null(cf);
  uint32_t s = 12345;
  for (int i = 0; i < M * K; i++) {
    s = s * 1664525u + 1013904223u;
    af[i] = (float)(a[i] = (double)(s >> 8) / (1 << 24) - 0.5);
  }
  for (int i = 0; i < K * N; i++) {
    s = s * 1664525u + 1013904223u;
    bf[i] = (float)(b[i] = (double)(s >> 8) / (1 << 24) - 0.5);
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0, a, K, b, N, 0.0, c, N);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, af, K, bf, N, 0.0f, cf, N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double want = 0;
      for (int k = 0; k < K; k++) want += a[i * K + k] * b[k * N + j];
      if (fabs(c[i * N + j] - want) > 1e-12) fail_msg("dgemm (%d,%d): %.17g, want %.17g", i, j, c[i * N + j], want);
      if (fabs(cf[i * N + j] - want) > 1e-4) fail_msg("sgemm (%d,%d): %.9g, want %.9g", i, j, cf[i * N + j], want);
    }
  free(a);
  free(b);
  free(c);
  free(af);
  free(bf);
  free(cf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_fit_the_cpu),
      cmocka_unit_test(test_products_after_the_choice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
