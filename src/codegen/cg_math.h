/* Transcendental functions as IR (cg_math.c). Each is the same sequence of IEEE operations as
 * the interpreter's kernel (runtime/kernels/fast_math.h), so generated code gives the same
 * bits: exp, tanh and logistic of f32, and sin / cos of f32 on the reduced range (the caller
 * adds the kernel call for large or non-finite arguments). */
#ifndef ANVIL_CODEGEN_CG_MATH_H
#define ANVIL_CODEGEN_CG_MATH_H

#include "codegen/cg_ir.h"

uint32_t cg_math_expf(cg_region *r, uint32_t x);
uint32_t cg_math_tanhf(cg_region *r, uint32_t x);
uint32_t cg_math_logisticf(cg_region *r, uint32_t x);
/* sin (cos_shift 0) or cos (1) for |x| <= AV_FM_TRIG_MAX; garbage beyond */
uint32_t cg_math_sincosf_reduced(cg_region *r, uint32_t x, int cos_shift);

/* log, log1p and expm1 of f32, computed in f64 and rounded once: within 0.51 ulp of the true
 * value on normal inputs (the interpreter's glibc logf / log1pf / expm1f are within 1 ulp);
 * the special values (0, -1, negatives, inf, NaN) as glibc gives them. Not bit-identical to
 * the interpreter: the differential test checks them against the bound. */
uint32_t cg_math_logf(cg_region *r, uint32_t x);
uint32_t cg_math_log1pf(cg_region *r, uint32_t x);
uint32_t cg_math_expm1f(cg_region *r, uint32_t x);
/* erf_inv of f32 (jax.random.normal): the interpreter's first guess and one Newton step on
 * erf computed in f64; within 1 ulp of the interpreter's three steps on glibc's erf */
uint32_t cg_math_erfinvf(cg_region *r, uint32_t x);

/* Small helpers shared with cg_lower.c. */
uint32_t cg_fneg(cg_region *r, uint32_t x);
uint32_t cg_fabs(cg_region *r, uint32_t x);
uint32_t cg_copysign(cg_region *r, uint32_t mag, uint32_t sgn); /* |mag| with sgn's sign */
uint32_t cg_fconst(cg_region *r, cg_type t, double v);

#endif
