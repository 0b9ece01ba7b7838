/* Legalizing quantized types: rewrites every op on `!quant.uniform` tensors into integer and
 * float ops on the storage and expressed types, so the lowering never sees a quantized type.
 *
 * The arithmetic is StableHLO's reference lowering (the interpreter's quant-to-math pipeline),
 * which is what the reference results were computed with:
 *   uniform_quantize   f -> q : round_nearest_even(clamp(min, f / scale + zp, max)) in f32
 *   uniform_quantize   q -> q': q * (s/s') + (zp' - zp * s/s'), clamped and rounded in f32
 *   uniform_dequantize q -> f : f32(i32(q) - zp) * scale
 *   add                       : both operands requantized to the result's i32 form, added
 *   dot, dot_general          : exact i32 dot of zero-point-centred operands, rescaled in f32
 *                               when the result scale is not lhs_scale * rhs_scale
 *   dot/convolution with float lhs and quantized rhs ("weight-only"): rhs dequantized
 *   data movement (reshape, transpose, gather, slice, concatenate, pad, select, ...): run on
 *                               the stored integers unchanged
 *   everything else (abs, multiply, convolution, sine, ...): dequantize the operands, run the
 *                               op on the expressed type, quantize the results.
 * Scales and zero points are f32 constants (f32(double scale)), as in the reference. */
#ifndef ANVIL_COMPILER_QUANT_LEGALIZE_H
#define ANVIL_COMPILER_QUANT_LEGALIZE_H

#include "ir/ir.h"
#include "util/diag.h"

/* Rewrites m in place; a module without quantized types is left untouched. On failure (an op
 * on quantized types with no rewrite) reports every such op in d. */
av_code av_legalize_quant(av_module *m, av_diag *d);

#endif
