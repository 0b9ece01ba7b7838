/* A fused region's ops as IR (see codegen.h). Every op becomes the IR operations that compute
 * exactly what its interpreter kernel computes (runtime/kernels/elementwise*.c, convert.c);
 * an op the target cannot do natively becomes a call of that kernel on the lanes. */
#include "codegen/cg_lower.h"

#include <math.h>
#include <string.h>

#include "codegen/cg_math.h"
#include "runtime/kernels/fast_math.h"

cg_type cg_type_of_dtype(av_dtype t) {
  switch (t) {
    case AV_DT_PRED: return CG_PRED;
    case AV_DT_F32: return CG_F32;
    case AV_DT_F64: return CG_F64;
    case AV_DT_C64: case AV_DT_C128: return CG_VOID;
    default: break;
  }
  switch (av_dtype_size(t)) { /* storage of the others (computed through kernel calls) */
    case 1: return CG_I8;
    case 2: return CG_I16;
    case 4: return CG_I32;
    case 8: return CG_I64;
    default: return CG_VOID;
  }
}

/* Types whose values the IR computes on natively (not through a kernel). */
static bool native_dtype(av_dtype t) {
  return t == AV_DT_PRED || t == AV_DT_F32 || t == AV_DT_F64 ||
         (av_dtype_is_int(t) && av_dtype_size(t) * 8 == (size_t)av_dtype_bits(t));
}

typedef struct lower {
  cg_region *r;
  const cg_target *tg;
  uint32_t *val; /* per fused register: its node */
} lower;

static uint32_t K(lower *L, cg_type t, uint64_t bits) { return cg_const(L->r, t, bits); }

/* ---- floats */

/* anvil's maximum / minimum (elementwise_float.c FLOAT_HELPERS): NaN if either is (a's,
 * quieted, when a is one, else b's), and for equal values the bits of a AND b (max) or a OR b
 * (min). */
static uint32_t fminmax(cg_region *r, uint32_t a, uint32_t b, bool max) {
  cg_type t = cg_type_of(r, a);
  /* the kernels' fmax_ / fmin_ (elementwise_float.c): a > b ? a : b, equal operands the AND
   * (max) or OR (min) of their bits, so max(-0, +0) = +0; a NaN operand quieted, a's first.
   * Without NaNs that is pick(a, b) & pick(b, a) (| for min): the larger operand twice, or
   * both when equal. The quieted NaN is a + b (a's if a is one: x86 returns the first
   * operand's; FADD commutes only a non-NaN constant). Compares and selects, not maxps, whose
   * result under DAZ is a flushed zero where the kernel keeps a denormal's bits. */
  cg_cmp_kind gt = max ? CG_CMP_GT : CG_CMP_LT;
  uint32_t ab = cg_select(r, cg_cmp(r, gt, a, b), a, b), ba = cg_select(r, cg_cmp(r, gt, b, a), b, a);
  uint32_t res = cg_op2(r, max ? CG_AND : CG_OR, t, ab, ba);
  res = cg_select(r, cg_cmp(r, CG_CMP_UNORD, a, b), cg_op2(r, CG_FADD, t, a, b), res);
  if (r->failed) return res;
  const cg_node *x = &r->v[a], *y = &r->v[b];
  return max ? cg_range_fact(r, res, fmax(x->lo, y->lo), fmax(x->hi, y->hi))
             : cg_range_fact(r, res, fmin(x->lo, y->lo), fmin(x->hi, y->hi));
}

/* roundf / round: half away from zero */
static uint32_t round_afz(cg_region *r, uint32_t x) {
  cg_type t = cg_type_of(r, x);
  uint32_t tr = cg_opi(r, CG_FROUND, t, x, CG_ROUND_TRUNC);
  uint32_t frac = cg_fabs(r, cg_op2(r, CG_FSUB, t, x, tr));
  uint32_t step = cg_select(r, cg_cmp(r, CG_CMP_GE, frac, cg_fconst(r, t, 0.5)),
                            cg_copysign(r, cg_fconst(r, t, 1.0), x), cg_copysign(r, cg_fconst(r, t, 0.0), x));
  return cg_op2(r, CG_FADD, t, tr, step);
}

/* fsign: NaN and zeros unchanged, else +-1 */
static uint32_t fsign(cg_region *r, uint32_t x) {
  cg_type t = cg_type_of(r, x);
  uint32_t keep = cg_op2(r, CG_POR, CG_PRED, cg_cmp(r, CG_CMP_EQ, x, cg_fconst(r, t, 0.0)),
                         cg_cmp(r, CG_CMP_UNORD, x, x));
  return cg_select(r, keep, x, cg_copysign(r, cg_fconst(r, t, 1.0), x));
}

static uint64_t inf_bits(cg_type t) { return t == CG_F64 ? UINT64_C(0x7ff0000000000000) : 0x7f800000u; }

/* The total order key of float bits (elementwise_compare.c key_f32 / key_f64). */
static uint32_t total_key(cg_region *r, uint32_t x) {
  cg_type it = cg_int_of(cg_type_of(r, x));
  int bits = 8 * cg_type_size(it);
  uint32_t b = cg_bitcast(r, it, x);
  uint32_t m = cg_opi(r, CG_SHRLI, it, cg_opi(r, CG_SHRAI, it, b, (uint64_t)bits - 1), 1);
  return cg_op2(r, CG_XOR, it, b, m);
}

static const cg_cmp_kind dir_of[6] = {CG_CMP_EQ, CG_CMP_NE, CG_CMP_LT, CG_CMP_LE, CG_CMP_GT, CG_CMP_GE};

static uint32_t compare(lower *L, const av_ew_kernel *k, uint32_t a, uint32_t b) {
  cg_region *r = L->r;
  int dir = k->cmp_dir <= AV_CMP_GE ? (int)k->cmp_dir : 0;
  bool total = k->cmp_type == AV_CMP_TOTALORDER;
  av_dtype dt = k->dtype;
  if (dt == AV_DT_PRED) { /* 0 / 1 bytes compared as unsigned */
    uint32_t na = cg_op1(r, CG_PNOT, CG_PRED, a), nb = cg_op1(r, CG_PNOT, CG_PRED, b);
    switch (dir) {
      case 0: return cg_op1(r, CG_PNOT, CG_PRED, cg_op2(r, CG_PXOR, CG_PRED, a, b));
      case 1: return cg_op2(r, CG_PXOR, CG_PRED, a, b);
      case 2: return cg_op2(r, CG_PAND, CG_PRED, na, b);
      case 3: return cg_op2(r, CG_POR, CG_PRED, na, b);
      case 4: return cg_op2(r, CG_PAND, CG_PRED, a, nb);
      default: return cg_op2(r, CG_POR, CG_PRED, a, nb);
    }
  }
  if ((dt == AV_DT_F32 || dt == AV_DT_F64) && total) {
    a = total_key(r, a);
    b = total_key(r, b);
    return cg_cmp(r, dir_of[dir], a, b);
  }
  cg_cmp_kind how = dir_of[dir];
  if (av_dtype_is_unsigned_int(dt)) how |= CG_CMP_UNSIGNED;
  return cg_cmp(r, how, a, b);
}

static uint32_t float_op(lower *L, const av_ew_kernel *k, const uint32_t *in) {
  cg_region *r = L->r;
  cg_type t = k->dtype == AV_DT_F64 ? CG_F64 : CG_F32;
  bool f32 = t == CG_F32;
  uint32_t x = in[0], y = k->nin > 1 ? in[1] : CG_NO_NODE;
  switch (k->op) {
    case AV_OP_ADD: return cg_op2(r, CG_FADD, t, x, y);
    case AV_OP_SUBTRACT: return cg_op2(r, CG_FSUB, t, x, y);
    case AV_OP_MULTIPLY: return cg_op2(r, CG_FMUL, t, x, y);
    case AV_OP_DIVIDE: return cg_op2(r, CG_FDIV, t, x, y);
    case AV_OP_SQRT: return cg_op1(r, CG_FSQRT, t, x);
    case AV_OP_RSQRT: return cg_op2(r, CG_FDIV, t, cg_fconst(r, t, 1.0), cg_op1(r, CG_FSQRT, t, x));
    case AV_OP_CHLO_SQUARE: return cg_op2(r, CG_FMUL, t, x, x);
    case AV_OP_NEGATE: return cg_fneg(r, x);
    case AV_OP_ABS: return cg_fabs(r, x);
    case AV_OP_MAXIMUM: return fminmax(r, x, y, true);
    case AV_OP_MINIMUM: return fminmax(r, x, y, false);
    case AV_OP_FLOOR: return cg_opi(r, CG_FROUND, t, x, CG_ROUND_FLOOR);
    case AV_OP_CEIL: return cg_opi(r, CG_FROUND, t, x, CG_ROUND_CEIL);
    case AV_OP_ROUND_NEAREST_EVEN: return cg_opi(r, CG_FROUND, t, x, CG_ROUND_EVEN);
    case AV_OP_ROUND_NEAREST_AFZ: return round_afz(r, x);
    case AV_OP_SIGN: return fsign(r, x);
    case AV_OP_IS_FINITE: {
      uint32_t d = cg_op2(r, CG_FSUB, t, x, x);
      return cg_cmp(r, CG_CMP_ORD, d, d);
    }
    case AV_OP_CHLO_IS_INF: return cg_cmp(r, CG_CMP_EQ, cg_fabs(r, x), K(L, t, inf_bits(t)));
    case AV_OP_CHLO_IS_POS_INF: return cg_cmp(r, CG_CMP_EQ, x, K(L, t, inf_bits(t)));
    case AV_OP_CHLO_IS_NEG_INF: return cg_cmp(r, CG_CMP_EQ, x, cg_fneg(r, K(L, t, inf_bits(t))));
    case AV_OP_COMPARE: return compare(L, k, x, y);
    case AV_OP_EXPONENTIAL: return f32 ? cg_math_expf(r, x) : CG_NO_NODE;
    case AV_OP_TANH: return f32 ? cg_math_tanhf(r, x) : CG_NO_NODE;
    case AV_OP_LOGISTIC: return f32 ? cg_math_logisticf(r, x) : CG_NO_NODE;
    case AV_OP_LOG: return f32 ? cg_math_logf(r, x) : CG_NO_NODE;
    case AV_OP_LOG_PLUS_ONE: return f32 ? cg_math_log1pf(r, x) : CG_NO_NODE;
    case AV_OP_EXPONENTIAL_MINUS_ONE: return f32 ? cg_math_expm1f(r, x) : CG_NO_NODE;
    case AV_OP_CHLO_ERF_INV: return f32 ? cg_math_erfinvf(r, x) : CG_NO_NODE;
    case AV_OP_SINE: case AV_OP_COSINE: {
      if (!f32) return CG_NO_NODE;
      uint32_t fast = cg_math_sincosf_reduced(r, x, k->op == AV_OP_COSINE);
      /* |x| > AV_FM_TRIG_MAX, inf and NaN: the kernel's libm path, for the whole vector */
      uint32_t big = cg_op1(r, CG_PNOT, CG_PRED, cg_cmp(r, CG_CMP_LE, cg_fabs(r, x), cg_fconst(r, t, AV_FM_TRIG_MAX)));
      uint32_t res = cg_add(r, (cg_node){.op = CG_CALL_IF, .type = CG_F32, .nin = 3, .in = {big, x, fast}, .aux = k});
      return cg_range_fact(r, res, -1 - 0x1p-20, 1 + 0x1p-20);
    }
    default: return CG_NO_NODE;
  }
}

static uint32_t int_op(lower *L, const av_ew_kernel *k, const uint32_t *in) {
  cg_region *r = L->r;
  cg_type t = cg_type_of_dtype(k->dtype);
  bool sgn = av_dtype_is_signed_int(k->dtype);
  int bits = 8 * cg_type_size(t);
  uint32_t x = in[0], y = k->nin > 1 ? in[1] : CG_NO_NODE;
  switch (k->op) {
    case AV_OP_ADD: return cg_op2(r, CG_ADD, t, x, y);
    case AV_OP_SUBTRACT: return cg_op2(r, CG_SUB, t, x, y);
    case AV_OP_MULTIPLY: return cg_op2(r, CG_MUL, t, x, y);
    case AV_OP_CHLO_SQUARE: return cg_op2(r, CG_MUL, t, x, x);
    case AV_OP_AND: return cg_op2(r, CG_AND, t, x, y);
    case AV_OP_OR: return cg_op2(r, CG_OR, t, x, y);
    case AV_OP_XOR: return cg_op2(r, CG_XOR, t, x, y);
    case AV_OP_NOT: return cg_op1(r, CG_NOT, t, x);
    case AV_OP_NEGATE: return cg_op2(r, CG_SUB, t, K(L, t, 0), x);
    case AV_OP_ABS: return sgn ? cg_op1(r, CG_ABS, t, x) : x;
    case AV_OP_MAXIMUM: return cg_op2(r, sgn ? CG_MAXS : CG_MAXU, t, x, y);
    case AV_OP_MINIMUM: return cg_op2(r, sgn ? CG_MINS : CG_MINU, t, x, y);
    case AV_OP_COMPARE: return compare(L, k, x, y);
    case AV_OP_SIGN: {
      if (!sgn) return cg_select(r, cg_cmp(r, CG_CMP_NE, x, K(L, t, 0)), K(L, t, 1), K(L, t, 0));
      uint32_t neg = cg_select(r, cg_cmp(r, CG_CMP_LT, x, K(L, t, 0)), K(L, t, UINT64_MAX), K(L, t, 0));
      return cg_select(r, cg_cmp(r, CG_CMP_GT, x, K(L, t, 0)), K(L, t, 1), neg);
    }
    case AV_OP_SHIFT_LEFT: case AV_OP_SHIFT_RIGHT_LOGICAL: case AV_OP_SHIFT_RIGHT_ARITHMETIC: {
      cg_opc vop = k->op == AV_OP_SHIFT_LEFT ? CG_SHL : k->op == AV_OP_SHIFT_RIGHT_LOGICAL ? CG_SHRL : CG_SHRA;
      if (r->v[y].op == CG_CONST) { /* counts read as unsigned */
        uint64_t c = r->v[y].imm;
        if (c == 0) return x;
        if (c >= (uint64_t)bits)
          return vop == CG_SHRA ? cg_opi(r, CG_SHRAI, t, x, (uint64_t)bits - 1) : K(L, t, 0);
        return cg_opi(r, vop == CG_SHL ? CG_SHLI : vop == CG_SHRL ? CG_SHRLI : CG_SHRAI, t, x, c);
      }
      return cg_op2(r, vop, t, x, y);
    }
    default: return CG_NO_NODE;
  }
}

static uint32_t pred_op(lower *L, const av_ew_kernel *k, const uint32_t *in) {
  cg_region *r = L->r;
  switch (k->op) {
    case AV_OP_NOT: return cg_op1(r, CG_PNOT, CG_PRED, in[0]);
    case AV_OP_AND: case AV_OP_MINIMUM: case AV_OP_MULTIPLY: return cg_op2(r, CG_PAND, CG_PRED, in[0], in[1]);
    case AV_OP_OR: case AV_OP_MAXIMUM: case AV_OP_ADD: return cg_op2(r, CG_POR, CG_PRED, in[0], in[1]);
    case AV_OP_XOR: case AV_OP_SUBTRACT: return cg_op2(r, CG_PXOR, CG_PRED, in[0], in[1]);
    case AV_OP_COMPARE: return compare(L, k, in[0], in[1]);
    default: return CG_NO_NODE;
  }
}

static uint32_t select_op(lower *L, const uint32_t *in) {
  cg_region *r = L->r;
  if (cg_type_of(r, in[1]) != CG_PRED) return cg_select(r, in[0], in[1], in[2]);
  uint32_t a = cg_op2(r, CG_PAND, CG_PRED, in[0], in[1]);
  uint32_t b = cg_op2(r, CG_PAND, CG_PRED, cg_op1(r, CG_PNOT, CG_PRED, in[0]), in[2]);
  return cg_op2(r, CG_POR, CG_PRED, a, b);
}

/* stablehlo.convert (kernels/convert.c): integers wrap, floats to integers truncate and
 * saturate (NaN gives 0), anything to pred is != 0. */
/* bf16 (stored as I16) to f32 and back, as float_codec.h: widening is exact; narrowing rounds
 * to nearest even, and a NaN keeps its sign and top payload bits, quieted. */
static uint32_t bf16_to_f32(lower *L, uint32_t x) {
  cg_region *r = L->r;
  return cg_bitcast(r, CG_F32, cg_opi(r, CG_SHLI, CG_I32, cg_cvt(r, CG_CVT_ZEXT, CG_I32, x), 16));
}

static uint32_t f32_to_bf16(lower *L, uint32_t x) {
  cg_region *r = L->r;
  uint32_t u = cg_bitcast(r, CG_I32, x), hi = cg_opi(r, CG_SHRLI, CG_I32, u, 16);
  uint32_t rounding = cg_op2(r, CG_ADD, CG_I32, cg_op2(r, CG_AND, CG_I32, hi, K(L, CG_I32, 1)), K(L, CG_I32, 0x7fff));
  uint32_t rounded = cg_opi(r, CG_SHRLI, CG_I32, cg_op2(r, CG_ADD, CG_I32, u, rounding), 16);
  uint32_t nan = cg_op2(r, CG_OR, CG_I32, hi, K(L, CG_I32, 0x40));
  return cg_cvt(r, CG_CVT_TRUNC, CG_I16, cg_select(r, cg_cmp(r, CG_CMP_UNORD, x, x), nan, rounded));
}

/* An op on bf16 as its kernel computes it (elementwise.c ew_via): the operands widened to f32,
 * the f32 op, the result rounded back (a predicate stays one). */
static uint32_t bf16_op(lower *L, const av_ew_kernel *k, const uint32_t *in) {
  if (k->op == AV_OP_SINE || k->op == AV_OP_COSINE) return CG_NO_NODE; /* their slow path calls the kernel */
  av_ew_kernel fk = *k; /* lowering only reads it: no node keeps a pointer to it */
  fk.dtype = AV_DT_F32;
  fk.inner = NULL;
  uint32_t w[AV_EW_MAX_IN];
  for (int q = 0; q < k->nin; q++) w[q] = bf16_to_f32(L, in[q]);
  uint32_t v = float_op(L, &fk, w);
  if (v == CG_NO_NODE || cg_type_of(L->r, v) == CG_PRED) return v;
  return cg_type_of(L->r, v) == CG_F32 ? f32_to_bf16(L, v) : CG_NO_NODE;
}

static uint32_t convert_op(lower *L, const av_convert *cv, uint32_t x) {
  cg_region *r = L->r;
  av_dtype from = cv->from, to = cv->to;
  if (from == AV_DT_BF16 && (to == AV_DT_F32 || to == AV_DT_F64)) { /* exact */
    uint32_t f = bf16_to_f32(L, x);
    return to == AV_DT_F32 ? f : cg_cvt(r, CG_CVT_FLOAT, CG_F64, f);
  }
  if (from == AV_DT_F32 && to == AV_DT_BF16) return f32_to_bf16(L, x);
  if (!native_dtype(from) || !native_dtype(to)) return CG_NO_NODE;
  cg_type tf = cg_type_of_dtype(from), tt = cg_type_of_dtype(to);
  int fs = cg_type_size(tf), ts = cg_type_size(tt);
  bool fint = tf != CG_PRED && cg_is_int(tf), tint = tt != CG_PRED && cg_is_int(tt);
  if (from == to) return x;
  if (tt == CG_PRED)
    return tf == CG_PRED ? x : cg_cmp(r, CG_CMP_NE, x, cg_is_float(tf) ? cg_fconst(r, tf, 0.0) : K(L, tf, 0));
  if (tf == CG_PRED) {
    if (tint) return cg_cvt(r, CG_CVT_PRED2I, tt, x);
    return cg_cvt(r, CG_CVT_S2F, tt, cg_cvt(r, CG_CVT_PRED2I, CG_I32, x));
  }
  if (fint && tint) {
    if (ts == fs) return cg_bitcast(r, tt, x);
    if (ts < fs) return cg_cvt(r, CG_CVT_TRUNC, tt, x);
    return cg_cvt(r, av_dtype_is_signed_int(from) ? CG_CVT_SEXT : CG_CVT_ZEXT, tt, x);
  }
  if (fint) { /* integer -> float: through an integer of 4 or 8 bytes */
    bool s = av_dtype_is_signed_int(from);
    if (fs < 4) {
      x = cg_cvt(r, s ? CG_CVT_SEXT : CG_CVT_ZEXT, CG_I32, x);
      s = true;
    }
    return cg_cvt(r, s ? CG_CVT_S2F : CG_CVT_U2F, tt, x);
  }
  if (!tint) return cg_cvt(r, CG_CVT_FLOAT, tt, x);
  /* float -> integer, saturating */
  bool s = av_dtype_is_signed_int(to);
  if (!s && ts == 8) return CG_NO_NODE; /* values up to 2^64: through the kernel */
  double hi = s ? ldexp(1.0, 8 * ts - 1) : ldexp(1.0, 8 * ts), lo = s ? -hi : 0.0;
  /* in range values truncate exactly into the wider of 4 bytes and (unsigned 4-byte) 8 */
  cg_type wide = ts == 8 || (!s && ts == 4) ? CG_I64 : CG_I32;
  uint32_t c = cg_cvt(r, CG_CVT_F2S_TRUNC, wide, x);
  uint64_t tmax = s ? (UINT64_C(1) << (8 * ts - 1)) - 1 : (ts == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * ts)) - 1);
  uint64_t tmin = s ? ~tmax : 0;
  c = cg_select(r, cg_cmp(r, CG_CMP_GE, x, cg_fconst(r, tf, hi)), K(L, wide, tmax), c);
  c = cg_select(r, cg_cmp(r, CG_CMP_LE, x, cg_fconst(r, tf, lo)), K(L, wide, tmin), c);
  c = cg_select(r, cg_cmp(r, CG_CMP_UNORD, x, x), K(L, wide, 0), c);
  return cg_type_size(wide) == ts ? c : cg_cvt(r, CG_CVT_TRUNC, tt, c);
}

/* The value of an iota register: (i / inner) % size, in its dtype. Through doubles (exact for
 * the sizes allowed here, see cg_lower_region). */
static uint32_t iota_value(lower *L, int64_t inner, int64_t size, int64_t n, av_dtype dt) {
  cg_region *r = L->r;
  uint32_t idx = cg_add(r, (cg_node){.op = CG_INDEX, .type = CG_I64});
  uint32_t v = idx;
  if (inner > 1 || size < n) {
    uint32_t d = cg_cvt(r, CG_CVT_S2F, CG_F64, idx);
    if (inner > 1)
      d = cg_opi(r, CG_FROUND, CG_F64, cg_op2(r, CG_FDIV, CG_F64, d, cg_fconst(r, CG_F64, (double)inner)), CG_ROUND_FLOOR);
    if (size < (n + inner - 1) / inner) {
      uint32_t q = cg_opi(r, CG_FROUND, CG_F64, cg_op2(r, CG_FDIV, CG_F64, d, cg_fconst(r, CG_F64, (double)size)), CG_ROUND_FLOOR);
      d = cg_op3(r, CG_FMA, CG_F64, q, cg_fconst(r, CG_F64, -(double)size), d); /* exact */
    }
    v = cg_cvt(r, CG_CVT_F2S_TRUNC, CG_I64, d);
  }
  av_convert cv;
  if (dt == AV_DT_S64 || dt == AV_DT_U64) return v;
  if (!av_convert_prepare(AV_DT_S64, dt, &cv)) return CG_NO_NODE;
  return convert_op(L, &cv, v);
}

/* Whether nodes [from, r->n) are all native to the target. */
static bool all_native(const lower *L, uint32_t from) {
  for (uint32_t i = from; i < L->r->n; i++)
    if (!L->tg->native(L->r, &L->r->v[i], L->tg->lanes)) return false;
  return true;
}

uint32_t cg_lower_kernel(cg_region *r, const cg_target *tg, const av_ew_kernel *k, const uint32_t *in,
                         cg_type want, bool allow_call) {
  lower L = {r, tg, NULL};
  uint32_t mark = r->n, v = CG_NO_NODE;
  if (k->op == AV_OP_CONVERT) {
    v = convert_op(&L, &k->in_conv[0], in[0]);
  } else if (k->op == AV_OP_BITCAST_CONVERT) {
    v = in[0]; /* the caller reinterprets it as the result type (same width) */
  } else if (k->op == AV_OP_SELECT) {
    v = select_op(&L, in);
  } else if (k->inner && k->dtype == AV_DT_BF16 && k->cin_size == 4 && !k->in0_mask && !k->out_add) {
    v = bf16_op(&L, k, in);
  } else if (!k->inner && native_dtype(k->dtype)) {
    if (k->dtype == AV_DT_PRED)
      v = pred_op(&L, k, in);
    else if (k->dtype == AV_DT_F32 || k->dtype == AV_DT_F64)
      v = float_op(&L, k, in);
    else
      v = int_op(&L, k, in);
  }
  if (v != CG_NO_NODE && !r->failed && all_native(&L, mark)) return v;
  /* the interpreter's kernel, called on the lanes */
  if (r->failed || !allow_call) return CG_NO_NODE;
  r->n = mark;
  cg_node call = {.op = k->op == AV_OP_CONVERT ? CG_CALL_CONVERT : CG_CALL, .type = (uint8_t)want,
                  .nin = (uint8_t)k->nin,
                  .aux = k->op == AV_OP_CONVERT ? (const void *)&k->in_conv[0] : (const void *)k};
  for (int q = 0; q < k->nin; q++) call.in[q] = in[q];
  return cg_add(r, call);
}

/* In a region of fewer than 2^31 elements the element index fits 32 bits: its low half is
 * an i32 index (one vector instead of two per 16 lanes), its high half (index >> 32 and
 * more) is zero. JAX's PRNG counts in u64 and splits the count into two u32 words this way.
 * Nodes are rewritten in place (their users keep their operands); the i64 index is left to
 * cg_finish when nothing else reads it. */
static void narrow_index(cg_region *r) {
  bool narrowed = false;
  for (uint32_t i = 0; i < r->n; i++) {
    cg_node *n = &r->v[i];
    if (n->nin != 1) continue;
    const cg_node *a = &r->v[n->in[0]];
    if (a->op == CG_INDEX && a->type == CG_I64 && n->op == CG_SHRLI && n->type == CG_I64 && n->imm >= 31 && n->imm < 64) {
      *n = (cg_node){.op = CG_CONST, .type = CG_I64, .imm = 0};
    } else if (a->op == CG_INDEX && a->type == CG_I64 && n->op == CG_CVT && n->imm == CG_CVT_TRUNC &&
               n->type == CG_I32) {
      if (!narrowed) *n = (cg_node){.op = CG_INDEX, .type = CG_I32}; /* (hash-consed: one) */
      narrowed = true;
    } else if (a->op == CG_CONST && n->op == CG_CVT && n->imm == CG_CVT_TRUNC && cg_is_int((cg_type)n->type)) {
      int bits = 8 * cg_type_size((cg_type)n->type);
      uint64_t v = bits >= 64 ? a->imm : a->imm & ((UINT64_C(1) << bits) - 1);
      *n = (cg_node){.op = CG_CONST, .type = n->type, .imm = v};
    }
  }
}

bool cg_lower_region(const av_cg_region_desc *d, const cg_target *tg, cg_region *r) {
  const av_fused_params *p = d->p;
  uint32_t val[512];
  if (p->nregs > sizeof val / sizeof *val) return false;
  lower L = {r, tg, val};
  for (uint32_t q = 0; q < p->nregs; q++) {
    const av_fused_reg *g = &p->regs[q];
    cg_type t = cg_type_of_dtype(d->dtype[q]);
    val[q] = CG_NO_NODE;
    if (t == CG_VOID || (size_t)cg_type_size(t) != g->esize) return false;
    switch (g->kind) {
      case AV_FUSED_IN: case AV_FUSED_BOX: {
        int64_t inner = d->iota_inner ? d->iota_inner[q] : 0, size = d->iota_size ? d->iota_size[q] : 0;
        /* iota through doubles: exact while every index and quotient is below 2^31 and the
         * divisors below 2^20 (an f64 quotient then never rounds across an integer) */
        if (g->kind == AV_FUSED_IN && inner > 0 && size > 0 && p->n < ((int64_t)1 << 31) &&
            (inner == 1 || inner < (1 << 20)) && (size >= p->n || size < (1 << 20))) {
          uint32_t mark = r->n;
          val[q] = iota_value(&L, inner, size, p->n, d->dtype[q]);
          if (val[q] != CG_NO_NODE && all_native(&L, mark)) break;
          r->n = mark;
        }
        val[q] = cg_add(r, (cg_node){.op = CG_LOAD, .type = (uint8_t)t, .reg = q});
        break;
      }
      case AV_FUSED_SCALAR: {
        const void *v = d->value ? d->value[q] : NULL;
        if (v) {
          uint64_t bits = 0;
          memcpy(&bits, v, g->esize);
          val[q] = t == CG_PRED ? cg_const(r, CG_PRED, bits != 0) : cg_const(r, t, bits);
        } else {
          val[q] = cg_add(r, (cg_node){.op = CG_SCALAR, .type = (uint8_t)t, .reg = q});
        }
        break;
      }
      default: break; /* TEMP / OUT: written by ops */
    }
  }
  for (uint32_t o = 0; o < d->nops && !r->failed; o++) {
    const av_fused_op *op = &d->ops[o];
    const av_ew_kernel *k = op->k;
    if (!k || op->nin > AV_EW_MAX_IN || op->out >= p->nregs) return false;
    for (int q = 0; q < op->nin; q++)
      if (op->in[q] >= p->nregs || val[op->in[q]] == CG_NO_NODE) return false;
    cg_type want = cg_type_of_dtype(d->dtype[op->out]);
    uint32_t in[AV_EW_MAX_IN];
    for (int q = 0; q < op->nin; q++) in[q] = L.val[op->in[q]];
    uint32_t v = cg_lower_kernel(r, tg, k, in, want, true);
    if (v == CG_NO_NODE) return false;
    if (cg_type_of(r, v) != want) {
      if (cg_type_size(cg_type_of(r, v)) != cg_type_size(want) || want == CG_PRED || cg_type_of(r, v) == CG_PRED)
        return false;
      v = cg_bitcast(r, want, v);
    }
    val[op->out] = v;
    if (p->regs[op->out].kind == AV_FUSED_OUT)
      cg_add(r, (cg_node){.op = CG_STORE, .type = CG_VOID, .nin = 1, .in = {v}, .reg = op->out});
  }
  if (r->failed) return false;
  if (p->n < ((int64_t)1 << 31)) narrow_index(r);
  cg_finish(r);
  return !r->failed;
}
