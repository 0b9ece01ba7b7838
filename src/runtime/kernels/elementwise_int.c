/* Elementwise loops on 8/16/32/64-bit integers and pred, with StableHLO's exact integer
 * semantics: arithmetic wraps around; x / 0 = -1 (all ones) and x % 0 = x; INT_MIN / -1 =
 * INT_MIN and INT_MIN % -1 = 0; shifts by >= the bit width (or negative amounts) give 0, or
 * the sign fill for arithmetic right shifts; remainder takes the dividend's sign. */
#include "runtime/kernels/elementwise.h"

#define LOOP1(name, T, EXPR)                                                                \
  static void name(const void *const *in, void *out, int64_t n, const void *aux) {         \
    (void)aux;                                                                             \
    const T *a = in[0];                                                                    \
    T *o = out;                                                                            \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T x = a[i];                                                                          \
      o[i] = (T)(EXPR);                                                                    \
    }                                                                                      \
  }
#define LOOP2(name, T, EXPR)                                                                \
  static void name(const void *const *in, void *out, int64_t n, const void *aux) {         \
    (void)aux;                                                                             \
    const T *a = in[0], *b = in[1];                                                        \
    T *o = out;                                                                            \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T x = a[i], y = b[i];                                                                \
      o[i] = (T)(EXPR);                                                                    \
    }                                                                                      \
  }

static inline int is_neg(int64_t v) { return v < 0; }

/* Integer power by squaring, wrapping; negative exponents give 1/x^n truncated. */
#define DEF_POW(S, T, SIGNED)                                                               \
  static inline T ipow_##S(T x, T y) {                                                     \
    if (SIGNED && is_neg((int64_t)y)) {                                                               \
      if (x == 1) return 1;                                                                \
      if (x == (T)-1) return (T)(((uint64_t)y & 1) ? -1 : 1);                              \
      return 0;                                                                            \
    }                                                                                      \
    uint64_t base = (uint64_t)x, e = (uint64_t)y, r = 1;                                   \
    while (e) {                                                                            \
      if (e & 1) r *= base;                                                                \
      base *= base;                                                                        \
      e >>= 1;                                                                             \
    }                                                                                      \
    return (T)r;                                                                           \
  }

#define U64(v) ((uint64_t)(v))

/* S: suffix, T: type, UT: unsigned type, ST: signed type, BITS, SIGNED, MIN of T */
#define INT_OPS(S, T, UT, ST, BITS, SIGNED, TMIN)                                           \
  DEF_POW(S, T, SIGNED)                                                                    \
  LOOP2(add_##S, T, U64(x) + U64(y))                                                       \
  LOOP2(sub_##S, T, U64(x) - U64(y))                                                       \
  LOOP2(mul_##S, T, U64(x) * U64(y))                                                       \
  LOOP2(div_##S, T,                                                                        \
        y == 0 ? (T)-1 : (SIGNED && x == (T)(TMIN) && y == (T)-1) ? x : (T)(x / y))        \
  LOOP2(rem_##S, T, y == 0 ? x : (SIGNED && x == (T)(TMIN) && y == (T)-1) ? 0 : (T)(x % y)) \
  LOOP2(max_##S, T, x > y ? x : y)                                                         \
  LOOP2(min_##S, T, x < y ? x : y)                                                         \
  LOOP2(and_##S, T, x & y)                                                                 \
  LOOP2(or_##S, T, x | y)                                                                  \
  LOOP2(xor_##S, T, x ^ y)                                                                 \
  LOOP2(shl_##S, T, (UT)y >= BITS ? 0 : (UT)((UT)x << (UT)y))                              \
  LOOP2(shrl_##S, T, (UT)y >= BITS ? 0 : (UT)x >> (UT)y)                                   \
  LOOP2(shra_##S, T, (UT)y >= BITS ? ((ST)x < 0 ? -1 : 0) : ((ST)x >> (UT)y))              \
  LOOP2(pow_##S, T, ipow_##S(x, y))                                                        \
  LOOP1(abs_##S, T, (SIGNED && (ST)x < 0) ? (T)(0 - U64(x)) : x)                           \
  LOOP1(neg_##S, T, 0 - U64(x))                                                            \
  LOOP1(square_##S, T, U64(x) * U64(x))                                                    \
  LOOP1(not_##S, T, ~x)                                                                    \
  LOOP1(popcnt_##S, T, __builtin_popcountll(U64((UT)x)))                                   \
  LOOP1(clz_##S, T, (UT)x == 0 ? BITS : __builtin_clzll(U64((UT)x)) - (64 - BITS))         \
  LOOP1(sign_##S, T, SIGNED ? (T)(((ST)x > 0) - ((ST)x < 0)) : (T)(x != 0))

INT_OPS(s8, int8_t, uint8_t, int8_t, 8, 1, INT8_MIN)
INT_OPS(s16, int16_t, uint16_t, int16_t, 16, 1, INT16_MIN)
INT_OPS(s32, int32_t, uint32_t, int32_t, 32, 1, INT32_MIN)
INT_OPS(s64, int64_t, uint64_t, int64_t, 64, 1, INT64_MIN)
INT_OPS(u8, uint8_t, uint8_t, int8_t, 8, 0, 0)
INT_OPS(u16, uint16_t, uint16_t, int16_t, 16, 0, 0)
INT_OPS(u32, uint32_t, uint32_t, int32_t, 32, 0, 0)
INT_OPS(u64, uint64_t, uint64_t, int64_t, 64, 0, 0)

#define INT_TABLE(S)                                                                       \
  switch (op) {                                                                            \
    case AV_OP_ADD: return add_##S;                                                        \
    case AV_OP_SUBTRACT: return sub_##S;                                                   \
    case AV_OP_MULTIPLY: return mul_##S;                                                   \
    case AV_OP_DIVIDE: return div_##S;                                                     \
    case AV_OP_REMAINDER: return rem_##S;                                                  \
    case AV_OP_MAXIMUM: return max_##S;                                                    \
    case AV_OP_MINIMUM: return min_##S;                                                    \
    case AV_OP_AND: return and_##S;                                                        \
    case AV_OP_OR: return or_##S;                                                          \
    case AV_OP_XOR: return xor_##S;                                                        \
    case AV_OP_SHIFT_LEFT: return shl_##S;                                                 \
    case AV_OP_SHIFT_RIGHT_LOGICAL: return shrl_##S;                                       \
    case AV_OP_SHIFT_RIGHT_ARITHMETIC: return shra_##S;                                    \
    case AV_OP_POWER: return pow_##S;                                                      \
    case AV_OP_ABS: return abs_##S;                                                        \
    case AV_OP_NEGATE: return neg_##S;                                                     \
    case AV_OP_NOT: return not_##S;                                                        \
    case AV_OP_POPCNT: return popcnt_##S;                                                  \
    case AV_OP_COUNT_LEADING_ZEROS: return clz_##S;                                        \
    case AV_OP_SIGN: return sign_##S;                                                      \
    case AV_OP_CHLO_SQUARE: return square_##S; /* unary: mul_ would read a second operand */ \
    default: return NULL;                                                                  \
  }

av_ew_fn av_ew_int_fn(av_opcode op, av_dtype t) {
  switch (t) {
    case AV_DT_S8: INT_TABLE(s8)
    case AV_DT_S16: INT_TABLE(s16)
    case AV_DT_S32: INT_TABLE(s32)
    case AV_DT_S64: INT_TABLE(s64)
    case AV_DT_U8: INT_TABLE(u8)
    case AV_DT_U16: INT_TABLE(u16)
    case AV_DT_U32: INT_TABLE(u32)
    case AV_DT_U64: INT_TABLE(u64)
    default: return NULL;
  }
}

/* pred is 0 or 1: logic ops, and the arithmetic XLA defines on it (add = or, mul = and). */
LOOP1(pred_not, uint8_t, !x)
LOOP2(pred_and, uint8_t, x & y)
LOOP2(pred_or, uint8_t, x | y)
LOOP2(pred_xor, uint8_t, x ^ y)

av_ew_fn av_ew_pred_fn(av_opcode op) {
  switch (op) {
    case AV_OP_NOT: return pred_not;
    case AV_OP_AND: case AV_OP_MINIMUM: case AV_OP_MULTIPLY: return pred_and;
    case AV_OP_OR: case AV_OP_MAXIMUM: case AV_OP_ADD: return pred_or;
    case AV_OP_XOR: case AV_OP_SUBTRACT: return pred_xor;
    default: return NULL;
  }
}
