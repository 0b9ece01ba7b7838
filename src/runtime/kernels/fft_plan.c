/* FFT plans, built at compile time into the program's arena (see fft_internal.h).
 *
 * Twiddles are computed in long double (exact to well below a double's rounding: the angle
 * 2 pi t / n is reduced by integer arithmetic first) and rounded once to the precision the
 * plan runs in. Long tables use two levels, w^t = w^(a B) * w^b, multiplied in long double. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/fft_internal.h"

enum { kMaxPoints = 1 << 28 }; /* longer transforms are refused (UNIMPLEMENTED) */

typedef long double ld;

typedef struct builder {
  av_arena *a;
  bool f64;
  bool oom;
} builder;

/* w_n^t = exp(-2 pi i t / n) for t in [0, count), in long double. */
static void roots(int64_t n, int64_t count, ld *re, ld *im) {
  const ld two_pi = 6.283185307179586476925286766559005768L;
  if (count <= 64) {
    for (int64_t t = 0; t < count; t++) {
      ld a = two_pi * (ld)(t % n) / (ld)n;
      re[t] = cosl(a);
      im[t] = -sinl(a);
    }
    return;
  }
  int64_t b = 1;
  while (b * b < count) b++;
  ld *lo = malloc(sizeof(ld) * 2 * (size_t)b);
  if (!lo) { /* the slow way rather than a failure */
    for (int64_t t = 0; t < count; t++) {
      ld a = two_pi * (ld)(t % n) / (ld)n;
      re[t] = cosl(a);
      im[t] = -sinl(a);
    }
    return;
  }
  for (int64_t j = 0; j < b; j++) {
    ld a = two_pi * (ld)(j % n) / (ld)n;
    lo[2 * j] = cosl(a);
    lo[2 * j + 1] = -sinl(a);
  }
  for (int64_t h = 0; h * b < count; h++) {
    ld a = two_pi * (ld)((h * b) % n) / (ld)n, hr = cosl(a), hi = -sinl(a);
    for (int64_t j = 0; j < b && h * b + j < count; j++) {
      int64_t t = h * b + j;
      re[t] = hr * lo[2 * j] - hi * lo[2 * j + 1];
      im[t] = hr * lo[2 * j + 1] + hi * lo[2 * j];
    }
  }
  free(lo);
}

static void *table(builder *b, int64_t complex_entries) {
  size_t es = b->f64 ? sizeof(double) : sizeof(float);
  void *p = av_arena_calloc(b->a, (size_t)(complex_entries > 0 ? complex_entries : 1), 2 * es);
  if (!p) b->oom = true;
  return p;
}

static void put(const builder *b, void *tab, int64_t i, ld re, ld im) {
  if (b->f64) {
    ((double *)tab)[2 * i] = (double)re;
    ((double *)tab)[2 * i + 1] = (double)im;
  } else {
    ((float *)tab)[2 * i] = (float)re;
    ((float *)tab)[2 * i + 1] = (float)im;
  }
}

/* Radices of n for Stockham stages, largest first; false when a prime factor exceeds
 * FFT_MAX_RADIX. */
static bool factorize(int64_t n, int *radix, int *nstages) {
  int k = 0;
  while (n % 8 == 0 && k < FFT_MAX_STAGES) radix[k++] = 8, n /= 8;
  while (n % 4 == 0 && k < FFT_MAX_STAGES) radix[k++] = 4, n /= 4;
  while (n % 2 == 0 && k < FFT_MAX_STAGES) radix[k++] = 2, n /= 2;
  for (int p = 3; p <= FFT_MAX_RADIX && n > 1; p += 2)
    while (n % p == 0 && k < FFT_MAX_STAGES) radix[k++] = p, n /= p;
  *nstages = k;
  return n == 1;
}

static bool smooth(int64_t n) {
  int r[FFT_MAX_STAGES], k;
  return factorize(n, r, &k);
}

static fft_cplan *cplan_build(builder *b, int64_t n, bool direct, bool split);

/* Stockham stages and their twiddles. */
static void build_stages(builder *b, fft_cplan *p) {
  int64_t n = p->n;
  factorize(n, p->radix, &p->nstages);
  int64_t ntw = 0, nrc = 0, len = n;
  for (int s = 0; s < p->nstages; s++) {
    int r = p->radix[s];
    p->tw_off[s] = ntw;
    ntw += (len / r) * (r - 1);
    p->rc_off[s] = nrc;
    if (r > 5) nrc += r;
    len /= r;
  }
  ld *re = malloc(sizeof(ld) * 2 * (size_t)(n > 0 ? n : 1));
  void *tw = table(b, ntw), *rc = table(b, nrc);
  if (!re || !tw || !rc) {
    free(re);
    b->oom = true;
    return;
  }
  ld *im = re + n;
  roots(n, n, re, im);
  len = n;
  for (int s = 0; s < p->nstages; s++) {
    int r = p->radix[s];
    int64_t m = len / r, step = n / len;
    for (int64_t q = 0; q < m; q++)
      for (int k = 1; k < r; k++) {
        int64_t t = (q * k * step) % n;
        put(b, tw, p->tw_off[s] + q * (r - 1) + (k - 1), re[t], im[t]);
      }
    if (r > 5) /* (cos, sin)(2 pi t / r) = (re, -im) of w_r^t = w_n^(t n / r) */
      for (int t = 0; t < r; t++) put(b, rc, p->rc_off[s] + t, re[t * (n / r)], -im[t * (n / r)]);
    len = m;
  }
  free(re);
  p->tw = tw;
  p->rc = rc;
}

/* In-place forward transform of m (a power of two) points in long double, for the Bluestein
 * kernel: iterative radix 2 with bit reversal. */
static void ref_fft_pow2(int64_t m, ld *re, ld *im, const ld *wr, const ld *wi) {
  for (int64_t i = 1, j = 0; i < m; i++) {
    int64_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      ld t = re[i];
      re[i] = re[j], re[j] = t;
      t = im[i];
      im[i] = im[j], im[j] = t;
    }
  }
  for (int64_t len = 2; len <= m; len <<= 1) {
    int64_t half = len / 2, step = m / len;
    for (int64_t i = 0; i < m; i += len)
      for (int64_t k = 0; k < half; k++) {
        ld xr = wr[k * step], xi = wi[k * step];
        ld br = re[i + k + half] * xr - im[i + k + half] * xi;
        ld bi = re[i + k + half] * xi + im[i + k + half] * xr;
        re[i + k + half] = re[i + k] - br;
        im[i + k + half] = im[i + k] - bi;
        re[i + k] += br;
        im[i + k] += bi;
      }
  }
}

static void build_bluestein(builder *b, fft_cplan *p, bool split) {
  int64_t n = p->n, m = 1;
  while (m < 2 * n - 1) m *= 2;
  p->m = m;
  p->sub = cplan_build(b, m, !split, split);
  void *chirp = table(b, n), *kern = table(b, m);
  ld *w = malloc(sizeof(ld) * 2 * (size_t)(2 * n)), *k = malloc(sizeof(ld) * 2 * (size_t)m),
     *wm = malloc(sizeof(ld) * 2 * (size_t)m);
  if (!p->sub || !chirp || !kern || !w || !k || !wm) {
    b->oom = true;
    goto done;
  }
  /* b_k = w_{2n}^{k^2 mod 2n} */
  roots(2 * n, 2 * n, w, w + 2 * n);
  ld *kr = k, *ki = k + m;
  memset(k, 0, sizeof(ld) * 2 * (size_t)m);
  for (int64_t j = 0, sq = 0; j < n; j++) {
    put(b, chirp, j, w[sq], w[2 * n + sq]);
    kr[j] = w[sq];
    ki[j] = -w[2 * n + sq]; /* conj */
    if (j) kr[m - j] = kr[j], ki[m - j] = ki[j];
    sq = (sq + 2 * j + 1) % (2 * n);
  }
  roots(m, m, wm, wm + m);
  ref_fft_pow2(m, kr, ki, wm, wm + m);
  for (int64_t j = 0; j < m; j++) put(b, kern, j, kr[j] / (ld)m, ki[j] / (ld)m);
  p->chirp = chirp;
  p->kern = kern;
done:
  free(w);
  free(k);
  free(wm);
}

/* n1 * n2 = n with n1 <= n2 as close to sqrt(n) as the factors allow. */
static int64_t split_factor(int64_t n) {
  int64_t best = 1;
  for (int64_t f = 2; f * f <= n; f++)
    if (n % f == 0) best = f;
  return best;
}

static void build_split(builder *b, fft_cplan *p) {
  int64_t n = p->n, n1 = split_factor(n), n2 = n / n1;
  if (n1 < 2) return;
  p->p1 = cplan_build(b, n1, true, false);
  p->p2 = cplan_build(b, n2, true, false);
  /* in the order the column step reads them: group, row k1, block of the group, NL real
   * parts then NL imaginary parts (lanes past n2 hold zeros) */
  int64_t nl = b->f64 ? 4 : 8, gw = FOUR_GROUP * nl, groups = (n2 + gw - 1) / gw;
  size_t es = b->f64 ? sizeof(double) : sizeof(float);
  void *tw = av_arena_calloc(b->a, (size_t)(groups * n1 * gw * 2), es);
  ld *w = malloc(sizeof(ld) * 2 * (size_t)n);
  if (!p->p1 || !p->p2 || !tw || !w) {
    free(w);
    b->oom = true;
    return;
  }
  roots(n, n, w, w + n);
  for (int64_t k1 = 0; k1 < n1; k1++)
    for (int64_t j2 = 0, t = 0; j2 < n2; j2++, t += k1) {
      if (t >= n) t -= n;
      int64_t g = j2 / gw, q = j2 % gw / nl, j = j2 % nl;
      int64_t i = ((g * n1 + k1) * FOUR_GROUP + q) * 2 * nl + j;
      if (b->f64) {
        ((double *)tw)[i] = (double)w[t];
        ((double *)tw)[i + nl] = (double)w[n + t];
      } else {
        ((float *)tw)[i] = (float)w[t];
        ((float *)tw)[i + nl] = (float)w[n + t];
      }
    }
  free(w);
  p->n1 = n1;
  p->n2 = n2;
  p->tw4 = tw;
}

/* direct: usable across SIMD lanes (Stockham, or Bluestein over a Stockham transform);
 * split: usable on one long line (the four-step split, or Bluestein over one). */
static fft_cplan *cplan_build(builder *b, int64_t n, bool direct, bool split) {
  fft_cplan *p = av_arena_alloc(b->a, sizeof *p);
  if (!p) {
    b->oom = true;
    return NULL;
  }
  p->n = n;
  if (n <= 1) return p;
  if (!smooth(n)) {
    build_bluestein(b, p, split);
    return p;
  }
  if (direct) build_stages(b, p);
  if (split) build_split(b, p);
  return p;
}

static int64_t lines_of(const av_view *v, int64_t n_last) {
  int64_t e = av_view_num_elements(v);
  return n_last ? e / n_last : 0;
}

av_code av_fft_plan_build(const av_fft_params *p, const av_view *operand, const av_view *result,
                          av_arena *arena, char *err, size_t errlen, const av_fft_plan **out) {
  int L = p->nlengths, r = operand->rank;
  *out = NULL;
  if (L < 1 || L > 3 || r < L || result->rank != r) {
    snprintf(err, errlen, "fft_length must have 1..3 entries, at most the rank");
    return AV_INVALID_ARGUMENT;
  }
  av_dtype it = operand->dtype, ot = result->dtype;
  bool ok = false;
  switch (p->type) {
    case AV_FFT_FFT:
    case AV_FFT_IFFT: ok = (it == AV_DT_C64 || it == AV_DT_C128) && ot == it; break;
    case AV_FFT_RFFT:
      ok = (it == AV_DT_F32 && ot == AV_DT_C64) || (it == AV_DT_F64 && ot == AV_DT_C128);
      break;
    case AV_FFT_IRFFT:
      ok = (it == AV_DT_C64 && ot == AV_DT_F32) || (it == AV_DT_C128 && ot == AV_DT_F64);
      break;
    default: break;
  }
  if (!ok) {
    snprintf(err, errlen, "operand/result element types do not fit fft_type");
    return AV_INVALID_ARGUMENT;
  }
  for (int i = 0; i < r - L; i++)
    if (operand->dims[i] != result->dims[i]) {
      snprintf(err, errlen, "batch dimensions differ");
      return AV_INVALID_ARGUMENT;
    }
  bool real = p->type == AV_FFT_RFFT || p->type == AV_FFT_IRFFT;
  for (int i = 0; i < L; i++) {
    int a = r - L + i;
    int64_t n = p->fft_length[i], want_in = n, want_out = n;
    if (n < 0) {
      snprintf(err, errlen, "negative fft_length");
      return AV_INVALID_ARGUMENT;
    }
    if (i == L - 1 && p->type == AV_FFT_RFFT) want_out = n / 2 + 1;
    if (i == L - 1 && p->type == AV_FFT_IRFFT) want_in = n / 2 + 1;
    if (operand->dims[a] != want_in || result->dims[a] != want_out) {
      snprintf(err, errlen, "transformed dimensions do not match fft_length");
      return AV_INVALID_ARGUMENT;
    }
    if (n > kMaxPoints) {
      snprintf(err, errlen, "fft_length %lld is longer than the %d points anvil plans",
               (long long)n, kMaxPoints);
      return AV_UNIMPLEMENTED;
    }
  }
  builder b = {arena, it == AV_DT_F64 || it == AV_DT_C128, false};
  av_fft_plan *plan = av_arena_alloc(arena, sizeof *plan);
  if (!plan) goto oom;
  plan->f64 = b.f64;
  plan->naxes = L;
  /* lanes per SIMD block (fft_engine.inc): 32-byte vectors */
  int64_t lanes = b.f64 ? 4 : 8;
  for (int i = 0; i < L; i++) {
    fft_axis *ax = &plan->axis[i];
    int64_t n = p->fft_length[i];
    bool last = i == L - 1;
    ax->n = n;
    ax->half = last && real && n % 2 == 0 && n >= 2;
    ax->npts = ax->half ? n / 2 : n;
    if (last) {
      const av_view *full = p->type == AV_FFT_IRFFT ? result : operand;
      int64_t lines = lines_of(full, n);
      ax->per_line = ax->npts >= FFT_PER_LINE_LONG ||
                     (ax->npts >= FFT_PER_LINE_MIN && lines < 2 * lanes);
    }
    ax->c = cplan_build(&b, ax->npts, !ax->per_line, ax->per_line);
    if (ax->per_line && ax->c && ax->c->n1 == 0 && ax->c->m == 0) {
      /* no split (a smooth length with no factor pair): SIMD lanes after all */
      ax->per_line = false;
      ax->c = cplan_build(&b, ax->npts, true, false);
    }
    if (ax->half) {
      double *rtw = av_arena_calloc(b.a, (size_t)(n / 2 + 1), 2 * sizeof(double));
      ld *w = malloc(sizeof(ld) * 2 * (size_t)(n / 2 + 1));
      if (!rtw || !w) {
        free(w);
        goto oom;
      }
      roots(n, n / 2 + 1, w, w + n / 2 + 1);
      for (int64_t k = 0; k <= n / 2; k++) {
        rtw[2 * k] = (double)w[k];
        rtw[2 * k + 1] = (double)w[n / 2 + 1 + k];
      }
      free(w);
      ax->rtw = rtw;
    }
  }
  if (b.oom) goto oom;
  *out = plan;
  return AV_OK;
oom:
  snprintf(err, errlen, "out of memory planning the transform");
  return AV_RESOURCE_EXHAUSTED;
}
