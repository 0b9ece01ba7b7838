/* The FFT plan: what av_fft_plan_build (fft_plan.c) makes at compile time and the kernel
 * (fft.c, fft_engine.inc) reads. Tables hold the precision the plan computes in (float for
 * f32/c64 programs, double for f64/c128), complex entries as (re, im) pairs. All transforms
 * are forward (exp(-2 pi i jk / n)); inverses conjugate on the way in and out. */
#ifndef ANVIL_RUNTIME_KERNELS_FFT_INTERNAL_H
#define ANVIL_RUNTIME_KERNELS_FFT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels/fft.h"
#include "runtime/thread_pool.h"

enum {
  FFT_MAX_STAGES = 64,
  FFT_MAX_RADIX = 31, /* larger prime factors go to Bluestein */
  /* a contiguous axis is transformed line by line (the four-step split, whose sub-transforms
   * run across SIMD lanes) when it is this long, or when it has fewer lines than this many
   * SIMD blocks and is at least FFT_PER_LINE_MIN points */
  FFT_PER_LINE_LONG = 16384,
  FFT_PER_LINE_MIN = 256,
  FOUR_GROUP = 4, /* neighbouring SIMD blocks a four-step step moves together */
};

typedef struct fft_cplan fft_cplan;

/* A forward complex transform of n points. */
struct fft_cplan {
  int64_t n;
  /* Stockham stages (nstages > 0, or n == 1): stage s has radix radix[s]; its twiddles
   * w_{len}^{p k} sit at tw + 2 * tw_off[s] as [p][k - 1]; odd radices above 5 read
   * (cos, sin)(2 pi t / r) at rc + 2 * rc_off[s]. */
  int nstages;
  int radix[FFT_MAX_STAGES];
  int64_t tw_off[FFT_MAX_STAGES], rc_off[FFT_MAX_STAGES];
  const void *tw, *rc;
  /* Bluestein (a prime factor above FFT_MAX_RADIX): chirp b_k = w_{2n}^{k^2} (n entries),
   * kern = FFT_m(conj b, circular) / m, sub = the transform of m points (a power of two) */
  int64_t m;
  const fft_cplan *sub;
  const void *chirp, *kern;
  /* The four-step split of one long line, n = n1 * n2 (n1 == 0: none): n2 transforms of n1
   * points down the columns, twiddles w_n^{j2 k1} (tw4, in the order fft_engine.inc's column
   * step reads them), n1 of n2 points. */
  int64_t n1, n2;
  const fft_cplan *p1, *p2;
  const void *tw4;
};

/* One transformed axis. */
typedef struct fft_axis {
  int64_t n;    /* fft_length */
  int64_t npts; /* points of the complex transform: n, or n / 2 when `half` */
  bool half;    /* RFFT/IRFFT axis of even length: a complex transform of n / 2 points */
  bool per_line;
  const fft_cplan *c;
  /* half: w_n^k for k = 0..n/2, in double for either precision: the untangling of one long
   * line runs in double (fft_engine.inc), SIMD blocks round the twiddles to FT */
  const double *rtw;
} fft_axis;

typedef enum fft_pass_kind { PASS_C2C, PASS_R2C, PASS_C2R } fft_pass_kind;

struct av_fft_plan {
  bool f64;  /* double precision tables and arithmetic */
  int naxes; /* = nlengths; axis i is dimension rank - naxes + i */
  fft_axis axis[3];
};

/* One pass over an axis, in either precision: src and dst count complex elements, except
 * the real side of R2C/C2R (real elements). */
typedef struct fft_pass_spec {
  const fft_axis *ax;
  fft_pass_kind kind;
  const void *src;
  void *dst;
  int64_t inner;           /* elements between neighbouring points of a line */
  int64_t lines;           /* lines = outer * inner */
  int64_t in_len, out_len; /* elements of a line along the axis, in and out */
  bool inv;
  double scale;
} fft_pass_spec;

/* fft_wide.c: the f64 engine in 64-byte vectors (8 lanes), on CPUs with AVX-512F/VL/DQ.
 * It runs the passes over many lines (not `per_line` axes, whose four-step twiddle tables
 * are laid out for the 4-lane engine) with the same operations per lane as the 4-lane
 * engine, so its results are bit-identical. */
bool av_fft_wide_available(void);
bool av_fft_pass_f64_wide(const fft_pass_spec *s, av_thread_pool *pool);
/* Tests: off runs every f64 pass on the 4-lane engine (returns the previous setting). */
bool av_fft_wide_set_enabled(bool on);

#endif
