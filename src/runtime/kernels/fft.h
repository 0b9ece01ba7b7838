/* stablehlo.fft over the last fft_length.size() (1..3) dimensions, any length (mixed radix
 * for prime factors up to 61, four-step split for long lengths, Bluestein otherwise), computed
 * in double precision for both f32 and f64 data.
 *  FFT / IFFT: complex -> complex of the same shape; IFFT scales by 1/N.
 *  RFFT: real (f32/f64) -> complex; the last dim becomes fft_length[-1]/2 + 1.
 *  IRFFT: complex -> real; the last dim of the input is fft_length[-1]/2 + 1, of the result
 *         fft_length[-1]; imaginary parts of the self-conjugate bins are ignored. */
#ifndef ANVIL_RUNTIME_KERNELS_FFT_H
#define ANVIL_RUNTIME_KERNELS_FFT_H

#include <stdint.h>

#include "runtime/kernels/kernel_api.h"

typedef enum av_fft_type { AV_FFT_FFT, AV_FFT_IFFT, AV_FFT_RFFT, AV_FFT_IRFFT } av_fft_type;

typedef struct av_fft_params {
  av_fft_type type;
  int nlengths;           /* 1..3 */
  int64_t fft_length[3];
} av_fft_params;

av_code av_kernel_fft(const av_fft_params *p, const av_view *operand, av_view *out, av_diag *d);

#endif
