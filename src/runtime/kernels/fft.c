/* fft: the kernel. Runs one pass per transformed axis with the plan built at compile time
 * (fft_plan.c), in the precision of the data, on the SIMD transforms of fft_engine.inc:
 *   FFT/IFFT: the last axis from the operand into the result, the others in place;
 *   RFFT:     real-to-complex along the last axis into the result, complex along the others;
 *   IRFFT:    complex along the leading axes (into a work copy), then complex-to-real along
 *             the last axis into the result.
 * An even real axis of n points is a complex transform of n/2 points (the real line read as
 * complex pairs) plus an O(n) untangling step. */
#include "runtime/kernels/fft.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/fft_internal.h"
#include "runtime/kernels/simd_transpose.h"
#include "runtime/kernels/simd_clones.h"
#include "runtime/thread_pool.h"

typedef float fft_vf __attribute__((vector_size(32)));
typedef double fft_vd __attribute__((vector_size(32)));

AV_DEFINE_TRANSPOSE8(transpose8_f32, fft_vf)
AV_DEFINE_TRANSPOSE4(transpose4_f64, fft_vd)

/* the engine's entry points: AVX-512 (with VL: 32 vector registers), AVX2+FMA and baseline
 * copies; -ffp-contract=off and explicit fma() keep their results bit-identical */
#define FFT_ENTRY AV_CLONES_FMA

#define FT float
#define FMA_FT __builtin_fmaf
#define FV fft_vf
#define TRANSPOSE(m) transpose8_f32(m)
#define NL 8
#define F(x) x##_f32
#define DEINT_RE FFT_DEINT8_RE
#define DEINT_IM FFT_DEINT8_IM
#define INTERLEAVE_LO FFT_INTERLEAVE8_LO
#define INTERLEAVE_HI FFT_INTERLEAVE8_HI
#include "runtime/kernels/fft_engine.inc"
#undef FT
#undef FMA_FT
#undef FV
#undef NL
#undef F
#undef DEINT_RE
#undef DEINT_IM
#undef INTERLEAVE_LO
#undef INTERLEAVE_HI
#undef TRANSPOSE

#define FT double
#define FMA_FT __builtin_fma
#define FV fft_vd
#define TRANSPOSE(m) transpose4_f64(m)
#define NL 4
#define F(x) x##_f64
#define DEINT_RE FFT_DEINT4_RE
#define DEINT_IM FFT_DEINT4_IM
#define INTERLEAVE_LO FFT_INTERLEAVE4_LO
#define INTERLEAVE_HI FFT_INTERLEAVE4_HI
#include "runtime/kernels/fft_engine.inc"
#undef FT
#undef FV
#undef NL
#undef F

static bool run(const av_fft_plan *plan, const fft_pass_spec *s, av_thread_pool *pool) {
  if (!plan->f64) return run_pass_f32(s, pool);
  if (!s->ax->per_line && av_fft_wide_available()) return av_fft_pass_f64_wide(s, pool);
  return run_pass_f64(s, pool);
}

/* The complex pass along dimension `dim` of an array of `dims` (rank r). */
static fft_pass_spec c2c_pass(const fft_axis *ax, const void *src, void *dst,
                              const int64_t *dims, int r, int dim, bool inv, double scale) {
  int64_t inner = 1, total = 1;
  for (int i = 0; i < r; i++) total *= dims[i];
  for (int i = dim + 1; i < r; i++) inner *= dims[i];
  fft_pass_spec s = {ax, PASS_C2C, src, dst, inner, total / dims[dim], dims[dim], dims[dim],
                     inv, scale};
  return s;
}

av_code av_kernel_fft(const av_fft_params *p, const av_view *operand, av_view *out, av_diag *d) {
  const av_fft_plan *plan = p->plan;
  int L = p->nlengths, r = operand->rank;
  if (!plan || plan->naxes != L || L < 1 || L > 3 || r < L || out->rank != r)
    return av_diag_set(d, AV_INTERNAL, "fft: the step has no plan for its shapes");
  int64_t on = av_view_num_elements(out);
  if (on == 0) return AV_OK;
  int64_t total_len = 1;
  for (int i = 0; i < L; i++) total_len *= p->fft_length[i];
  size_t es = plan->f64 ? sizeof(double) : sizeof(float);
  if (total_len == 0) { /* only RFFT with n = 0 reaches here: a 1-bin empty spectrum */
    memset(out->data, 0, (size_t)on * es * 2);
    return AV_OK;
  }
  const fft_axis *last = &plan->axis[L - 1];
  double inv_scale = 1.0 / (double)total_len;
  void *work = NULL;
  bool ok = true;
  switch (p->type) {
    case AV_FFT_FFT:
    case AV_FFT_IFFT: {
      bool inv = p->type == AV_FFT_IFFT;
      for (int i = L - 1; i >= 0 && ok; i--) {
        double scale = inv && i == 0 ? inv_scale : 1.0;
        fft_pass_spec s = c2c_pass(&plan->axis[i], i == L - 1 ? operand->data : out->data,
                                   out->data, out->dims, r, r - L + i, inv, scale);
        ok = run(plan, &s, p->pool);
      }
      break;
    }
    case AV_FFT_RFFT: {
      int64_t n = last->n;
      fft_pass_spec s = {last, PASS_R2C, operand->data, out->data, 1,
                         av_view_num_elements(operand) / n, n, n / 2 + 1, false, 1.0};
      ok = run(plan, &s, p->pool);
      for (int i = L - 2; i >= 0 && ok; i--) {
        s = c2c_pass(&plan->axis[i], out->data, out->data, out->dims, r, r - L + i, false, 1.0);
        ok = run(plan, &s, p->pool);
      }
      break;
    }
    case AV_FFT_IRFFT: {
      int64_t n = last->n, nin = av_view_num_elements(operand);
      const void *src = operand->data;
      if (L > 1) {
        work = malloc((size_t)nin * es * 2);
        if (!work) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "fft: out of memory");
        for (int i = 0; i < L - 1 && ok; i++) {
          fft_pass_spec s = c2c_pass(&plan->axis[i], i == 0 ? operand->data : work, work,
                                     operand->dims, r, r - L + i, true, 1.0);
          ok = run(plan, &s, p->pool);
        }
        src = work;
      }
      fft_pass_spec s = {last, PASS_C2R, src, out->data, 1, on / n, n / 2 + 1, n, true, inv_scale};
      if (ok) ok = run(plan, &s, p->pool);
      break;
    }
    default: return av_diag_set(d, AV_INVALID_ARGUMENT, "fft: unknown fft_type");
  }
  free(work);
  if (!ok) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "fft: out of memory");
  return AV_OK;
}
