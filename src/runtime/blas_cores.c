/* OpenBLAS's kernels for a CPU newer than the library.
 *
 * An OpenBLAS built with DYNAMIC_ARCH (Debian's, and most distributions') chooses its
 * kernels from the CPU model when it loads. A model it does not know gets the generic
 * "Prescott" kernels (SSE3): Debian 12's 0.3.21 knows no Emerald Rapids (family 6, model
 * 207), and there a 1024x1024 f64 matmul took 131 ms against 17 ms with the AVX-512 kernels
 * (a c64 matmul 4.2x and an f32 cholesky 2.1x slower too, Xeon model 207, 2 vCPUs).
 *
 * When OpenBLAS settled on kernels without AVX2 on a CPU that has AVX2 and FMA, anvil asks it
 * again, naming the kernels the CPU's instruction sets take (as OPENBLAS_CORETYPE would at
 * start-up): AVX-512 (F, BW, DQ, VL) with BF16 "Cooperlake", without "SkylakeX", else
 * "Haswell". Nothing changes where the user set OPENBLAS_CORETYPE, where OpenBLAS recognised
 * the CPU, or where the library is not a DYNAMIC_ARCH build. It runs once, when the library
 * loads, before anvil's first BLAS call: re-choosing swaps one table pointer in OpenBLAS
 * (gotoblas_dynamic_quit + gotoblas_dynamic_init), which no call may be using. */
#include "runtime/blas_cores.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

char *openblas_get_corename(void);
/* only in DYNAMIC_ARCH builds: weak, so that other builds still link */
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));

/* kernels of OpenBLAS that use AVX2 or wider (0.3.21's names; later versions add more) */
static bool uses_avx2(const char *core) {
  static const char *const wide[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids",
                                     "Excavator"};
  for (size_t i = 0; i < sizeof wide / sizeof *wide; i++)
    if (!strcasecmp(core, wide[i])) return true;
  return false;
}

static const char *cpu_kernels(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return NULL;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  return "Haswell";
#else
  return NULL;
#endif
}

static const char *chosen_before, *chosen_now;

static void choose(void) {
  const char *core = openblas_get_corename();
  chosen_before = chosen_now = core;
  if (getenv("OPENBLAS_CORETYPE") || !core || uses_avx2(core)) return;
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit) return;
  const char *want = cpu_kernels();
  if (!want) return;
  /* OpenBLAS's first buffer allocation runs its own kernel choice (under its lock) when it
   * finds none: its server threads, starting up, make that first allocation, and one that
   * did it in the moment between quit and init below crashed (1 in ~1000 loads). One
   * product made here first ends that start-up: the allocation is done, waiting on the
   * lock for any thread still in it, and no later one chooses again. */
  static float a[256 * 256], c[256 * 256];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 256, 256, 256, 1.0f, a, 256, a, 256, 0.0f, c, 256);
  setenv("OPENBLAS_CORETYPE", want, 0);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE"); /* libraries loaded later choose for themselves */
  chosen_now = openblas_get_corename();
}

void av_blas_choose_kernels(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, choose);
}

const char *av_blas_kernels(const char **before) {
  av_blas_choose_kernels();
  if (before) *before = chosen_before;
  return chosen_now;
}

__attribute__((constructor)) static void choose_at_load(void) { av_blas_choose_kernels(); }
