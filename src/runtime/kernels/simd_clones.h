/* Wider-ISA copies of hot kernel loops, chosen once when the library loads.
 *
 * AV_CLONES on a function makes gcc/clang emit it for AVX-512F, AVX2 and baseline x86-64
 * and pick the best the CPU runs (an ifunc). Every copy does the same IEEE operations in the
 * same order (-ffp-contract=off: no FMA contraction; lane structures are written out in the
 * source), so results are bit-identical on every machine; only the vector width differs.
 * Other targets, and sanitizer builds (ifunc resolvers run before the sanitizer runtimes
 * start), build the portable function only. */
#ifndef ANVIL_RUNTIME_KERNELS_SIMD_CLONES_H
#define ANVIL_RUNTIME_KERNELS_SIMD_CLONES_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define AV_NO_CLONES 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AV_NO_CLONES 1
#endif
#if defined(__x86_64__) && defined(__ELF__) && !defined(AV_NO_CLONES)
#define AV_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
/* For loops whose math calls fmaf/fma explicitly (fast_math.h): copies that have the FMA
 * instructions (gcc's avx512f/avx2 targets do not imply FMA; its x86-64-v4/v3 levels do,
 * and clang's avx512f does). The baseline copy calls libm's fmaf, which rounds the same
 * way, so the results stay bit-identical; it is only slower, on CPUs older than 2013. */
#if defined(__clang__)
#define AV_CLONES_FMA __attribute__((target_clones("avx512f", "fma", "default")))
#else
#define AV_CLONES_FMA __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#else
#define AV_CLONES
#define AV_CLONES_FMA
#endif

/* Outputs may alias inputs exactly (in-place steps); element i is read before it is written,
 * so such loops carry no dependence: say so, or the compilers fall back to scalar code when
 * the pointers are equal. */
#if defined(__clang__)
/* loops around libm calls stay scalar; clang would report the hint it could not honour */
#pragma clang diagnostic ignored "-Wpass-failed"
#define AV_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define AV_IVDEP _Pragma("GCC ivdep")
#else
#define AV_IVDEP
#endif

#endif
