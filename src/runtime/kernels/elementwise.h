/* Elementwise kernels: unary and binary math, logic, comparisons for every element type.
 *
 * av_ew_prepare picks, once per step, a typed loop for (op, dtype). Types without native
 * loops are computed through a wider type, chunk by chunk: bf16/f16/f8/f6/f4 through f32
 * (rounded back to nearest even), sub-byte integers through 64-bit integers (wrapped back to
 * their width). Loops read each element before writing it, so the output may alias an
 * input of the same size. */
#ifndef ANVIL_RUNTIME_KERNELS_ELEMENTWISE_H
#define ANVIL_RUNTIME_KERNELS_ELEMENTWISE_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"
#include "runtime/kernels/convert.h"

typedef void (*av_ew_fn)(const void *const *in, void *out, int64_t n, const void *aux);

typedef enum av_cmp_dir { AV_CMP_EQ, AV_CMP_NE, AV_CMP_LT, AV_CMP_LE, AV_CMP_GT, AV_CMP_GE } av_cmp_dir;
typedef enum av_cmp_type {
  AV_CMP_DEFAULT, /* from the element type */
  AV_CMP_FLOAT,
  AV_CMP_TOTALORDER,
  AV_CMP_SIGNED,
  AV_CMP_UNSIGNED,
} av_cmp_type;

enum { AV_EW_MAX_IN = 3 };

typedef struct av_ew_kernel {
  av_ew_fn fn;    /* what the step calls, with the kernel itself as aux */
  int nin;
  av_opcode op;   /* what it computes, on operands of `dtype` (AV_OP_UNKNOWN: a fused pair;
                   * AV_OP_CONVERT: in_conv[0], see av_ew_convert_kernel) */
  av_dtype dtype;
  av_cmp_dir cmp_dir;   /* compares */
  av_cmp_type cmp_type;
  av_ew_fn inner; /* loop on the compute type (when going through one) */
  av_convert in_conv[AV_EW_MAX_IN];
  av_convert out_conv;
  size_t in_size[AV_EW_MAX_IN], cin_size, cout_size, out_size;
  uint64_t in0_mask;  /* zero-extend input 0 from its width (logical shifts, clz, popcnt) */
  int in0_sext_bits;  /* sign-extend input 0 from this width (arithmetic shift of uN) */
  int64_t out_add;    /* added to 64-bit integer results (clz of narrow types) */
} av_ew_kernel;

/* Elementwise op `op` with operands of `in` dtype (all the same, except stablehlo.complex /
 * select handled elsewhere) and result `out` dtype. Comparisons pass `dir`/`ctype`.
 * Returns false when the combination is not supported. */
bool av_ew_prepare(av_opcode op, av_dtype in, av_dtype out, av_cmp_dir dir, av_cmp_type ctype,
                   av_ew_kernel *k);
static inline void av_ew_run(const av_ew_kernel *k, const void *const *in, void *out, int64_t n) {
  k->fn(in, out, n, k);
}

/* Fused pairs (elementwise_pair.c): the loop computing (in[0] op1 in[1]) op2 in[2]
 * (inner_left) or in[2] op2 (in[0] op1 in[1]), where `first` computes op1 and `second` op2,
 * with the bits of the two separate loops; NULL when the kernels do not pair (only f32 and
 * f64 +, -, *, / do). */
av_ew_fn av_ew_pair_fn(const av_ew_kernel *first, const av_ew_kernel *second, bool inner_left);
/* The pair loop `pair` (one av_ew_pair_fn gave) applied `trips` times to x in place, x being
 * its operand `pos` (0-2; in[pos] is not read) and the other operands in[] unchanged: a loop
 * body that is one pair over a carried array, with the iterations in registers. The bits of
 * `trips` calls of `pair`. NULL for any other function. */
typedef void (*av_ew_iter_fn)(const void *const *in, void *x, int64_t n, int64_t trips, int pos);
av_ew_iter_fn av_ew_pair_iter_fn(av_ew_fn pair);

/* The loop of binary kernel `k` with operand `side` (0 or 1) a single value, read from
 * in[side][0] (elementwise_bcast.c); NULL unless k is an f32/f64 +, -, * or /. */
av_ew_fn av_ew_scalar_operand_fn(const av_ew_kernel *k, int side);

/* Number of operands of an elementwise opcode (1, 2 or 3); 0 if not elementwise. */
int av_ew_arity(av_opcode op);
/* Ops whose result is pred (compare, is_finite, chlo.is_inf...) or real (abs/real/imag of
 * complex) follow from the operand type; this gives the result dtype for operand `in`. */
av_dtype av_ew_result_dtype(av_opcode op, av_dtype in);

/* Typed loops per family (elementwise_{float,int,complex,compare}.c); NULL if unsupported. */
av_ew_fn av_ew_float_fn(av_opcode op, av_dtype t);
av_ew_fn av_ew_int_fn(av_opcode op, av_dtype t);
av_ew_fn av_ew_pred_fn(av_opcode op);
av_ew_fn av_ew_complex_fn(av_opcode op, av_dtype t);
av_ew_fn av_ew_compare_fn(av_dtype t, av_cmp_dir dir, av_cmp_type ctype);

/* stablehlo.convert by `cv` as an elementwise kernel (nin 1, op AV_OP_CONVERT, in_conv[0] =
 * cv), so a convert fuses with the elementwise steps around it. */
void av_ew_convert_kernel(const av_convert *cv, av_ew_kernel *k);

/* A same-width stablehlo.bitcast_convert, or a reshape, of elements of `from` (esize bytes)
 * as an elementwise kernel (nin 1, op AV_OP_BITCAST_CONVERT: the bits copied), so that
 * elementwise chains on either side fuse through it (jax.random's bits -> float). */
void av_ew_bitcast_kernel(av_dtype from, size_t esize, av_ew_kernel *k);

/* select(pred, a, b) with pred of the same shape; elements of `elem_size` bytes. */
void av_select_run(const uint8_t *pred, const void *a, const void *b, void *out, int64_t n,
                   size_t elem_size);
/* select(pred, a, b) as an elementwise kernel (nin 3, op AV_OP_SELECT, out_size the element
 * size): av_select_run over its operands, so a select over whole arrays fuses with the
 * elementwise steps around it (a causal mask before softmax). */
void av_ew_select(const void *const *in, void *out, int64_t n, const void *aux);

#endif
