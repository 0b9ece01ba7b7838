/* Shuffle patterns by lane count, kept apart from the kernels that use them: in-register
 * transposes (the FFT engine's lanes, fft.c / fft_wide.c; batches of small matrices, shape.c)
 * and the FFT's (re, im) pair (de)interleaving. A pattern depends only on the number of
 * lanes, not on the element type or the vector's width. */
#ifndef ANVIL_RUNTIME_KERNELS_SIMD_TRANSPOSE_H
#define ANVIL_RUNTIME_KERNELS_SIMD_TRANSPOSE_H

#if defined(__GNUC__) && !defined(__clang__)
/* Files that include this keep their vectors inside always-inline functions of the SIMD
 * clones, so gcc's note that passing them would change the ABI never applies. */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/* Transposes of a square of vectors (NL x NL, one row per vector) in three (8 lanes) or two
 * (4 lanes) rounds of two-input shuffles: neighbour pairs, then pairs of pairs, then halves. */
#define AV_DEFINE_TRANSPOSE8(name, V)                                                     \
  static inline __attribute__((always_inline)) void name(V *m) {                           \
    V a[8], b[8];                                                                          \
    for (int i = 0; i < 8; i += 2) {                                                       \
      a[i] = __builtin_shufflevector(m[i], m[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);            \
      a[i + 1] = __builtin_shufflevector(m[i], m[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);      \
    }                                                                                      \
    for (int i = 0; i < 8; i += 4)                                                         \
      for (int j = 0; j < 2; j++) {                                                        \
        b[i + 2 * j] = __builtin_shufflevector(a[i + j], a[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13); \
        b[i + 2 * j + 1] =                                                                 \
            __builtin_shufflevector(a[i + j], a[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);   \
      }                                                                                    \
    for (int j = 0; j < 4; j++) {                                                          \
      m[j] = __builtin_shufflevector(b[j], b[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);            \
      m[j + 4] = __builtin_shufflevector(b[j], b[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);      \
    }                                                                                      \
  }

#define AV_DEFINE_TRANSPOSE4(name, V)                                 \
  static inline __attribute__((always_inline)) void name(V *m) {       \
    V a0 = __builtin_shufflevector(m[0], m[1], 0, 4, 2, 6);            \
    V a1 = __builtin_shufflevector(m[0], m[1], 1, 5, 3, 7);            \
    V a2 = __builtin_shufflevector(m[2], m[3], 0, 4, 2, 6);            \
    V a3 = __builtin_shufflevector(m[2], m[3], 1, 5, 3, 7);            \
    m[0] = __builtin_shufflevector(a0, a2, 0, 1, 4, 5);                \
    m[1] = __builtin_shufflevector(a1, a3, 0, 1, 4, 5);                \
    m[2] = __builtin_shufflevector(a0, a2, 2, 3, 6, 7);                \
    m[3] = __builtin_shufflevector(a1, a3, 2, 3, 6, 7);                \
  }

/* (re, im) pairs <-> a vector of real parts and one of imaginary parts */
#define FFT_DEINT8_RE(lo, hi) __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14)
#define FFT_DEINT8_IM(lo, hi) __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15)
#define FFT_INTERLEAVE8_LO(re, im) __builtin_shufflevector(re, im, 0, 8, 1, 9, 2, 10, 3, 11)
#define FFT_INTERLEAVE8_HI(re, im) __builtin_shufflevector(re, im, 4, 12, 5, 13, 6, 14, 7, 15)
#define FFT_DEINT4_RE(lo, hi) __builtin_shufflevector(lo, hi, 0, 2, 4, 6)
#define FFT_DEINT4_IM(lo, hi) __builtin_shufflevector(lo, hi, 1, 3, 5, 7)
#define FFT_INTERLEAVE4_LO(re, im) __builtin_shufflevector(re, im, 0, 4, 1, 5)
#define FFT_INTERLEAVE4_HI(re, im) __builtin_shufflevector(re, im, 2, 6, 3, 7)

#endif
