/* Shuffle patterns by lane count, kept apart from the kernels that use them: in-register
 * transposes (the FFT engine's lanes, fft.c / fft_wide.c; batches of small matrices, shape.c),
 * the FFT's (re, im) pair (de)interleaving, and pairwise lane sums (dot.c). A pattern depends
 * only on the number of lanes, not on the element type or the vector's width. */
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

/* out[i] = the 16 lanes of v[i] added pairwise (lane q + lane q + w, for w = 8, 4, 2, 1, as a
 * scalar loop adds them), for 16 vectors at once: each round adds the two halves of every
 * source's partial sums, two sources' halves gathered into one vector by a shuffle, so 15
 * vector adds do the work of 240 scalar ones, in the same order. `out`: 16 elements. */
#define AV_DEFINE_PAIRWISE_SUMS16(name, V)                                                     \
  static inline __attribute__((always_inline)) void name(const V *v, void *out) {              \
    V t[8], u[4], x[2];                                                                        \
    for (int i = 0; i < 8; i++) /* w = 8: sources 2i, 2i+1, 8 partials each */                \
      t[i] = __builtin_shufflevector(v[2 * i], v[2 * i + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17,   \
                                     18, 19, 20, 21, 22, 23) +                                 \
             __builtin_shufflevector(v[2 * i], v[2 * i + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, \
                                     25, 26, 27, 28, 29, 30, 31);                              \
    for (int i = 0; i < 4; i++) /* w = 4: four sources, 4 partials each */                     \
      u[i] = __builtin_shufflevector(t[2 * i], t[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, \
                                     18, 19, 24, 25, 26, 27) +                                 \
             __builtin_shufflevector(t[2 * i], t[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20,   \
                                     21, 22, 23, 28, 29, 30, 31);                              \
    for (int i = 0; i < 2; i++) /* w = 2: eight sources, 2 partials each */                    \
      x[i] = __builtin_shufflevector(u[2 * i], u[2 * i + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, \
                                     20, 21, 24, 25, 28, 29) +                                 \
             __builtin_shufflevector(u[2 * i], u[2 * i + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18,   \
                                     19, 22, 23, 26, 27, 30, 31);                              \
    V y = /* w = 1: the sixteen sums, in source order */                                       \
        __builtin_shufflevector(x[0], x[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, \
                                28, 30) +                                                      \
        __builtin_shufflevector(x[0], x[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, \
                                29, 31);                                                       \
    memcpy(out, &y, sizeof y);                                                                 \
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
