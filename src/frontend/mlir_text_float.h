/* Conversions between double and the bit patterns of anvil's floating-point element types,
 * including the narrow ones (f16, bf16, the f8/f6/f4 families). Encoding rounds to nearest,
 * ties to even, as IEEE 754 and ml_dtypes do. Out-of-range values become inf where the type
 * has one, NaN where it has only NaN, and saturate where it has neither (f6, f4). */
#ifndef ANVIL_FRONTEND_MLIR_TEXT_FLOAT_H
#define ANVIL_FRONTEND_MLIR_TEXT_FLOAT_H

#include <stdint.h>

#include "ir/dtype.h"

/* Bit pattern of `v` in real float type `dt` (low av_dtype_bits(dt) bits used). */
uint64_t av_float_encode(double v, av_dtype dt);
/* Value of bit pattern `bits` of real float type `dt`. */
double av_float_decode(uint64_t bits, av_dtype dt);

#endif
