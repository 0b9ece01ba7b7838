/* fft: 1-D complex transforms in double precision, applied along each transformed axis.
 *
 * A length is planned as recursive mixed-radix Cooley-Tukey when all its prime factors are
 * at most kMaxRadix (61; radix-p butterflies are plain p-point DFTs), otherwise with Bluestein's
 * chirp-z algorithm over a power-of-two transform. RFFT = real-to-complex along the last
 * axis, then complex along the others; IRFFT = inverse complex along the leading axes, then
 * Hermitian extension + inverse along the last (imaginary parts of the DC / Nyquist bins
 * drop out when taking the real part). */
#include "runtime/kernels/fft.h"

#include <complex.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef double complex cplx;

/* C11's CMPLX is missing from glibc's header under clang; build the value bit-wise (a
 * complex double has the representation of double[2]). */
static inline cplx mkc(double re, double im) {
  double v[2] = {re, im};
  cplx c;
  memcpy(&c, v, sizeof c);
  return c;
}

/* Plain complex multiply (C's operator calls __muldc3 for Annex G inf/NaN recovery, which is
 * slow and not needed here). */
static inline cplx cmul(cplx a, cplx b) {
  double ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b);
  return mkc(ar * br - ai * bi, ar * bi + ai * br);
}

enum { kMaxRadix = 61, kMaxFactors = 64 }; /* primes above kMaxRadix go to Bluestein */

typedef struct fft_plan {
  int64_t n;
  int sign;          /* -1 forward, +1 inverse (unscaled) */
  int nf;
  int factors[kMaxFactors];
  cplx *tw;          /* tw[t] = exp(sign * 2 pi i t / n) */
  /* Bluestein */
  struct fft_plan *sub; /* power-of-two forward plan of length m */
  struct fft_plan *isub;
  int64_t m;
  cplx *chirp;       /* c_k = exp(sign * pi i k^2 / n), k < n */
  cplx *kernel_f;    /* FFT_m of conj(c) laid out circularly */
  cplx *scratch;     /* m (Bluestein) or max radix (mixed) */
  cplx *scratch2;    /* n: recursion output, or the four-step matrix */
  /* four-step (large mixed-radix lengths): n = n1 * n2, sub-transforms fit in cache */
  struct fft_plan *p1, *p2;
  int64_t n1, n2;
  cplx *col;         /* n1 */
} fft_plan;

static void plan_free(fft_plan *p) {
  if (!p) return;
  plan_free(p->sub);
  plan_free(p->isub);
  plan_free(p->p1);
  plan_free(p->p2);
  free(p->col);
  free(p->tw);
  free(p->chirp);
  free(p->kernel_f);
  free(p->scratch);
  free(p->scratch2);
  free(p);
}

static void fft_exec(fft_plan *p, cplx *data);

static fft_plan *plan_new(int64_t n, int sign) {
  fft_plan *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->n = n;
  p->sign = sign;
  int64_t r = n;
  bool small = true;
  while (r % 4 == 0 && p->nf < kMaxFactors) { /* radix-4 passes first (fewest multiplies) */
    p->factors[p->nf++] = 4;
    r /= 4;
  }
  for (int64_t f = 2; r > 1 && p->nf < kMaxFactors;) {
    if (r % f == 0) {
      if (f > kMaxRadix) small = false;
      p->factors[p->nf++] = (int)(f > kMaxRadix ? 0 : f);
      r /= f;
    } else {
      f++;
      if (f * f > r && r > 1) f = r;
    }
  }
  if (r > 1) small = false;
  if (small) {
    p->tw = malloc((size_t)(n ? n : 1) * sizeof *p->tw);
    p->scratch = malloc((size_t)kMaxRadix * sizeof *p->scratch);
    p->scratch2 = malloc((size_t)(n ? n : 1) * sizeof *p->scratch2);
    if (!p->tw || !p->scratch || !p->scratch2) goto fail;
    for (int64_t t = 0; t < n; t++) {
      double a = sign * 2.0 * M_PI * (double)t / (double)n;
      p->tw[t] = mkc(cos(a), sin(a));
    }
    if (n > 4096) { /* four-step with n1 the largest divisor <= sqrt(n) */
      int64_t n1 = 1;
      for (int64_t f = 2; f * f <= n; f++)
        if (n % f == 0) n1 = f;
      if (n1 >= 16) {
        p->n1 = n1;
        p->n2 = n / n1;
        p->p1 = plan_new(p->n1, sign);
        p->p2 = plan_new(p->n2, sign);
        p->col = malloc((size_t)n1 * sizeof *p->col);
        if (!p->p1 || !p->p2 || !p->col) goto fail;
      }
    }
    return p;
  }
  /* Bluestein */
  p->nf = 0;
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  p->m = m;
  p->sub = plan_new(m, -1);
  p->isub = plan_new(m, +1);
  p->chirp = malloc((size_t)n * sizeof *p->chirp);
  p->kernel_f = calloc((size_t)m, sizeof *p->kernel_f);
  p->scratch = malloc((size_t)m * sizeof *p->scratch);
  if (!p->sub || !p->isub || !p->chirp || !p->kernel_f || !p->scratch) goto fail;
  /* k^2 mod 2n (updated incrementally) keeps the angle argument small and exact */
  for (int64_t k = 0, k2 = 0; k < n; k++) {
    double a = sign * M_PI * (double)k2 / (double)n;
    p->chirp[k] = mkc(cos(a), sin(a));
    k2 = (k2 + 2 * k + 1) % (2 * n);
  }
  p->kernel_f[0] = conj(p->chirp[0]);
  for (int64_t k = 1; k < n; k++) p->kernel_f[k] = p->kernel_f[m - k] = conj(p->chirp[k]);
  fft_exec(p->sub, p->kernel_f);
  return p;
fail:
  plan_free(p);
  return NULL;
}

/* out[k*ostride... contiguous] = DFT of in[0], in[s], ... (n points), twiddle step tws. */
static void mixed_rec(const fft_plan *p, const cplx *in, int64_t s, cplx *out, int64_t n, int fi,
                      int64_t tws) {
  if (n == 1) {
    out[0] = in[0];
    return;
  }
  int r = p->factors[fi];
  int64_t m = n / r;
  for (int q = 0; q < r; q++) mixed_rec(p, in + q * s, s * r, out + q * m, m, fi + 1, tws * r);
  const cplx *tw = p->tw;
  if (r == 2) {
    /* w^(k+m) = -w^k */
    for (int64_t k = 0; k < m; k++) {
      cplx a = out[k], b = cmul(out[m + k], tw[k * tws]);
      out[k] = a + b;
      out[m + k] = a - b;
    }
    return;
  }
  if (r == 4) {
    /* w^(q(k + j m)) = w^(qk) * (w^m)^(qj), w^m = -i*sign... i.e. j-th power of a 4th root */
    cplx rot = tw[m * tws]; /* exp(sign * 2 pi i / 4) = sign * i */
    for (int64_t k = 0; k < m; k++) {
      cplx a0 = out[k], a1 = cmul(out[m + k], tw[k * tws]), a2 = cmul(out[2 * m + k], tw[2 * k * tws]),
           a3 = cmul(out[3 * m + k], tw[3 * k * tws]);
      cplx s02 = a0 + a2, d02 = a0 - a2, s13 = a1 + a3, d13 = cmul(a1 - a3, rot);
      out[k] = s02 + s13;
      out[m + k] = d02 + d13;
      out[2 * m + k] = s02 - s13;
      out[3 * m + k] = d02 - d13;
    }
    return;
  }
  cplx *t = p->scratch;
  /* out[k + j*m] = sum_q out[q*m + k] * w_n^{q(k + j m)} */
  for (int64_t k = 0; k < m; k++) {
    for (int q = 0; q < r; q++) t[q] = out[q * m + k];
    for (int j = 0; j < r; j++) {
      int64_t e = k + j * m, idx = 0;
      cplx acc = t[0];
      for (int q = 1; q < r; q++) {
        idx += e;
        if (idx >= n) idx -= n;
        acc += cmul(t[q], tw[idx * tws]);
      }
      out[e] = acc;
    }
  }
}

static void fft_exec(fft_plan *p, cplx *data) {
  int64_t n = p->n;
  if (n <= 1) return;
  if (p->p1) {
    /* x[j1*n2 + j2]: length-n1 transforms down the columns, twiddle w_n^(j2*k1), length-n2
     * transforms along the rows, then X[k1 + n1*k2] = row k1, entry k2 (a transpose). */
    int64_t n1 = p->n1, n2 = p->n2;
    cplx *buf = p->scratch2, *col = p->col;
    for (int64_t j2 = 0; j2 < n2; j2++) {
      for (int64_t j1 = 0; j1 < n1; j1++) col[j1] = data[j1 * n2 + j2];
      fft_exec(p->p1, col);
      for (int64_t k1 = 0, idx = 0; k1 < n1; k1++) {
        buf[k1 * n2 + j2] = cmul(col[k1], p->tw[idx]);
        idx += j2;
        if (idx >= n) idx -= n;
      }
    }
    for (int64_t k1 = 0; k1 < n1; k1++) fft_exec(p->p2, buf + k1 * n2);
    for (int64_t k1 = 0; k1 < n1; k1++)
      for (int64_t k2 = 0; k2 < n2; k2++) data[k1 + n1 * k2] = buf[k1 * n2 + k2];
    return;
  }
  if (!p->m) {
    mixed_rec(p, data, 1, p->scratch2, n, 0, 1);
    memcpy(data, p->scratch2, (size_t)n * sizeof *data);
    return;
  }
  cplx *a = p->scratch;
  int64_t m = p->m;
  for (int64_t k = 0; k < n; k++) a[k] = cmul(data[k], p->chirp[k]);
  for (int64_t k = n; k < m; k++) a[k] = 0;
  fft_exec(p->sub, a);
  for (int64_t k = 0; k < m; k++) a[k] = cmul(a[k], p->kernel_f[k]);
  fft_exec(p->isub, a);
  double inv = 1.0 / (double)m;
  for (int64_t k = 0; k < n; k++) data[k] = cmul(a[k] * inv, p->chirp[k]);
}

/* Transforms every line of `w` (dims, rank) along `axis`. */
static void along_axis(cplx *w, int rank, const int64_t *dims, int axis, fft_plan *p, cplx *line) {
  int64_t n = dims[axis], inner = 1, outer = 1;
  for (int i = axis + 1; i < rank; i++) inner *= dims[i];
  for (int i = 0; i < axis; i++) outer *= dims[i];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      cplx *b = w + o * n * inner + in;
      for (int64_t k = 0; k < n; k++) line[k] = b[k * inner];
      fft_exec(p, line);
      for (int64_t k = 0; k < n; k++) b[k * inner] = line[k];
    }
}

static av_code bad(av_diag *d, const char *what) {
  return av_diag_set(d, AV_INVALID_ARGUMENT, "fft: %s", what);
}

static cplx load_c(av_dtype t, const void *base, int64_t i) {
  if (t == AV_DT_C64) {
    const float *f = (const float *)base + 2 * i;
    return mkc(f[0], f[1]);
  }
  if (t == AV_DT_C128) {
    const double *f = (const double *)base + 2 * i;
    return mkc(f[0], f[1]);
  }
  if (t == AV_DT_F32) return ((const float *)base)[i];
  return ((const double *)base)[i];
}

static void store_c(av_dtype t, void *base, int64_t i, cplx v) {
  if (t == AV_DT_C64) {
    float *f = (float *)base + 2 * i;
    f[0] = (float)creal(v);
    f[1] = (float)cimag(v);
  } else if (t == AV_DT_C128) {
    double *f = (double *)base + 2 * i;
    f[0] = creal(v);
    f[1] = cimag(v);
  } else if (t == AV_DT_F32) {
    ((float *)base)[i] = (float)creal(v);
  } else {
    ((double *)base)[i] = creal(v);
  }
}

av_code av_kernel_fft(const av_fft_params *p, const av_view *operand, av_view *out, av_diag *d) {
  int L = p->nlengths, r = operand->rank;
  if (L < 1 || L > 3 || r < L || out->rank != r) return bad(d, "fft_length must have 1..3 entries, at most the rank");
  av_dtype it = operand->dtype, ot = out->dtype;
  bool ok_types = false;
  switch (p->type) {
    case AV_FFT_FFT: case AV_FFT_IFFT:
      ok_types = (it == AV_DT_C64 || it == AV_DT_C128) && ot == it;
      break;
    case AV_FFT_RFFT:
      ok_types = (it == AV_DT_F32 && ot == AV_DT_C64) || (it == AV_DT_F64 && ot == AV_DT_C128);
      break;
    case AV_FFT_IRFFT:
      ok_types = (it == AV_DT_C64 && ot == AV_DT_F32) || (it == AV_DT_C128 && ot == AV_DT_F64);
      break;
    default: return bad(d, "unknown fft_type");
  }
  if (!ok_types) return bad(d, "operand/result element types do not fit fft_type");
  for (int i = 0; i < r - L; i++)
    if (operand->dims[i] != out->dims[i]) return bad(d, "batch dimensions differ");
  int64_t nl = p->fft_length[L - 1];
  for (int i = 0; i < L; i++) {
    int a = r - L + i;
    int64_t n = p->fft_length[i];
    if (n < 0) return bad(d, "negative fft_length");
    bool last = i == L - 1;
    int64_t want_in = n, want_out = n;
    if (last && p->type == AV_FFT_RFFT) want_out = n / 2 + 1;
    if (last && p->type == AV_FFT_IRFFT) want_in = n / 2 + 1;
    if (operand->dims[a] != want_in || out->dims[a] != want_out)
      return bad(d, "transformed dimensions do not match fft_length");
  }
  int64_t on = av_view_num_elements(out);
  if (on == 0) return AV_OK;
  int64_t total_len = 1;
  for (int i = 0; i < L; i++) total_len *= p->fft_length[i];
  if (total_len == 0) { /* only RFFT with n = 0 reaches here: a 1-bin empty spectrum */
    for (int64_t i = 0; i < on; i++) store_c(ot, out->data, i, 0);
    return AV_OK;
  }
  /* complex work array shaped like the spectrum */
  const av_view *spec = p->type == AV_FFT_RFFT ? out : operand;
  int64_t wn = av_view_num_elements(spec), maxn = 1;
  for (int i = 0; i < L; i++) maxn = p->fft_length[i] > maxn ? p->fft_length[i] : maxn;
  cplx *w = malloc((size_t)wn * sizeof *w), *line = malloc((size_t)maxn * sizeof *line);
  fft_plan *plans[3] = {NULL, NULL, NULL};
  av_code rc = AV_OK;
  if (!w || !line) {
    rc = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "fft: out of memory");
    goto done;
  }
  int sign = (p->type == AV_FFT_FFT || p->type == AV_FFT_RFFT) ? -1 : +1;
  for (int i = 0; i < L; i++) {
    plans[i] = plan_new(p->fft_length[i], sign);
    if (!plans[i]) {
      rc = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "fft: out of memory planning length %lld", (long long)p->fft_length[i]);
      goto done;
    }
  }
  if (p->type == AV_FFT_RFFT) {
    int64_t rows = av_view_num_elements(operand) / nl, half = nl / 2 + 1;
    for (int64_t row = 0; row < rows; row++) {
      for (int64_t k = 0; k < nl; k++) line[k] = load_c(it, operand->data, row * nl + k);
      fft_exec(plans[L - 1], line);
      for (int64_t k = 0; k < half; k++) w[row * half + k] = line[k];
    }
    for (int i = 0; i < L - 1; i++) along_axis(w, r, out->dims, r - L + i, plans[i], line);
  } else {
    for (int64_t i = 0; i < wn; i++) w[i] = load_c(it, operand->data, i);
    int naxes = p->type == AV_FFT_IRFFT ? L - 1 : L;
    for (int i = 0; i < naxes; i++) along_axis(w, r, operand->dims, r - L + i, plans[i], line);
  }
  double scale = sign > 0 ? 1.0 / (double)total_len : 1.0;
  if (p->type == AV_FFT_IRFFT) {
    int64_t half = nl / 2 + 1, rows = wn / half;
    for (int64_t row = 0; row < rows; row++) {
      const cplx *x = w + row * half;
      for (int64_t k = 0; k < half && k < nl; k++) line[k] = x[k];
      for (int64_t k = 1; k < (nl + 1) / 2; k++) line[nl - k] = conj(x[k]);
      fft_exec(plans[L - 1], line);
      for (int64_t k = 0; k < nl; k++) store_c(ot, out->data, row * nl + k, line[k] * scale);
    }
  } else {
    for (int64_t i = 0; i < on; i++) store_c(ot, out->data, i, w[i] * scale);
  }
done:
  for (int i = 0; i < 3; i++) plan_free(plans[i]);
  free(w);
  free(line);
  return rc;
}
