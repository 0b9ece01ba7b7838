/* Choosing an elementwise loop for (op, dtype), and running types without native loops
 * through a wider compute type. */
#include "runtime/kernels/elementwise.h"

#include <string.h>

int av_ew_arity(av_opcode op) {
  switch (op) {
    case AV_OP_ABS: case AV_OP_NEGATE: case AV_OP_SQRT: case AV_OP_RSQRT: case AV_OP_CBRT:
    case AV_OP_EXPONENTIAL: case AV_OP_EXPONENTIAL_MINUS_ONE: case AV_OP_LOG:
    case AV_OP_LOG_PLUS_ONE: case AV_OP_LOGISTIC: case AV_OP_SINE: case AV_OP_COSINE:
    case AV_OP_TAN: case AV_OP_TANH: case AV_OP_FLOOR: case AV_OP_CEIL:
    case AV_OP_ROUND_NEAREST_AFZ: case AV_OP_ROUND_NEAREST_EVEN: case AV_OP_SIGN:
    case AV_OP_IS_FINITE: case AV_OP_NOT: case AV_OP_POPCNT: case AV_OP_COUNT_LEADING_ZEROS:
    case AV_OP_REAL: case AV_OP_IMAG: case AV_OP_CHLO_ACOS: case AV_OP_CHLO_ACOSH:
    case AV_OP_CHLO_ASIN: case AV_OP_CHLO_ASINH: case AV_OP_CHLO_ATAN: case AV_OP_CHLO_ATANH:
    case AV_OP_CHLO_COSH: case AV_OP_CHLO_SINH: case AV_OP_CHLO_TAN: case AV_OP_CHLO_ERF:
    case AV_OP_CHLO_ERFC: case AV_OP_CHLO_ERF_INV: case AV_OP_CHLO_LGAMMA:
    case AV_OP_CHLO_DIGAMMA: case AV_OP_CHLO_BESSEL_I1E: case AV_OP_CHLO_SQUARE:
    case AV_OP_CHLO_IS_INF: case AV_OP_CHLO_IS_POS_INF: case AV_OP_CHLO_IS_NEG_INF:
    case AV_OP_CHLO_CONJ:
      return 1;
    case AV_OP_ADD: case AV_OP_SUBTRACT: case AV_OP_MULTIPLY: case AV_OP_DIVIDE:
    case AV_OP_REMAINDER: case AV_OP_POWER: case AV_OP_MAXIMUM: case AV_OP_MINIMUM:
    case AV_OP_ATAN2: case AV_OP_AND: case AV_OP_OR: case AV_OP_XOR: case AV_OP_SHIFT_LEFT:
    case AV_OP_SHIFT_RIGHT_LOGICAL: case AV_OP_SHIFT_RIGHT_ARITHMETIC: case AV_OP_COMPARE:
    case AV_OP_COMPLEX: case AV_OP_CHLO_NEXT_AFTER:
      return 2;
    default:
      return 0;
  }
}

av_dtype av_ew_result_dtype(av_opcode op, av_dtype in) {
  switch (op) {
    case AV_OP_COMPARE: case AV_OP_IS_FINITE: case AV_OP_CHLO_IS_INF:
    case AV_OP_CHLO_IS_POS_INF: case AV_OP_CHLO_IS_NEG_INF:
      return AV_DT_PRED;
    case AV_OP_ABS: case AV_OP_REAL: case AV_OP_IMAG:
      return in == AV_DT_C64 ? AV_DT_F32 : in == AV_DT_C128 ? AV_DT_F64 : in;
    case AV_OP_COMPLEX:
      return in == AV_DT_F32 ? AV_DT_C64 : in == AV_DT_F64 ? AV_DT_C128 : AV_DT_INVALID;
    default:
      return in;
  }
}

enum { VIA_CHUNK = 256 };

static void ew_via(const void *const *in, void *out, int64_t n, const void *aux) {
  const av_ew_kernel *k = aux;
  /* 16 bytes per element covers every compute type */
  uint64_t buf[AV_EW_MAX_IN][2 * VIA_CHUNK];
  uint64_t obuf[2 * VIA_CHUNK];
  const void *ptrs[AV_EW_MAX_IN];
  for (int j = 0; j < k->nin; j++) ptrs[j] = buf[j];
  for (int64_t i = 0; i < n; i += VIA_CHUNK) {
    int64_t m = n - i < VIA_CHUNK ? n - i : VIA_CHUNK;
    for (int j = 0; j < k->nin; j++)
      av_convert_run(&k->in_conv[j], (const char *)in[j] + (size_t)i * k->in_size[j], buf[j], m);
    if (k->in0_mask) {
      for (int64_t e = 0; e < m; e++) buf[0][e] &= k->in0_mask;
    } else if (k->in0_sext_bits) {
      int sh = 64 - k->in0_sext_bits;
      for (int64_t e = 0; e < m; e++) buf[0][e] = (uint64_t)((int64_t)(buf[0][e] << sh) >> sh);
    }
    k->inner(ptrs, obuf, m, NULL);
    if (k->out_add)
      for (int64_t e = 0; e < m; e++) obuf[e] += (uint64_t)k->out_add;
    av_convert_run(&k->out_conv, obuf, (char *)out + (size_t)i * k->out_size, m);
  }
}

static bool is_narrow_float(av_dtype t) {
  return av_dtype_is_float(t) && t != AV_DT_F32 && t != AV_DT_F64;
}
static bool is_narrow_int(av_dtype t) { return av_dtype_is_int(t) && av_dtype_bits(t) < 8; }

bool av_ew_prepare(av_opcode op, av_dtype in, av_dtype out, av_cmp_dir dir, av_cmp_type ctype,
                   av_ew_kernel *k) {
  memset(k, 0, sizeof *k);
  int nin = av_ew_arity(op);
  if (nin == 0) return false;
  if (out != av_ew_result_dtype(op, in)) return false;
  k->nin = nin;
  k->op = op;
  k->dtype = in;
  k->cmp_dir = dir;
  k->cmp_type = ctype;
  av_ew_fn direct = NULL;
  if (op == AV_OP_COMPARE) {
    if (ctype == AV_CMP_TOTALORDER && !av_dtype_is_float(in)) ctype = AV_CMP_DEFAULT;
    direct = av_ew_compare_fn(in, dir, ctype);
  } else if (op == AV_OP_COMPLEX) {
    direct = av_ew_complex_fn(op, in);
  } else if (in == AV_DT_PRED) {
    direct = av_ew_pred_fn(op);
    if (!direct) return false;
  } else if (in == AV_DT_F32 || in == AV_DT_F64) {
    direct = av_ew_float_fn(op, in);
  } else if (in == AV_DT_C64 || in == AV_DT_C128) {
    direct = av_ew_complex_fn(op, in);
  } else if (av_dtype_is_int(in) && !is_narrow_int(in)) {
    direct = av_ew_int_fn(op, in);
  }
  if (direct) {
    k->fn = direct;
    return true;
  }
  /* Through a compute type. */
  av_dtype compute;
  if (is_narrow_float(in)) {
    compute = AV_DT_F32;
    k->inner = op == AV_OP_COMPARE ? av_ew_compare_fn(compute, dir, ctype)
                                   : av_ew_float_fn(op, compute);
  } else if (is_narrow_int(in)) {
    int bits = av_dtype_bits(in);
    uint64_t mask = (1ull << bits) - 1;
    compute = av_dtype_is_signed_int(in) ? AV_DT_S64 : AV_DT_U64;
    switch (op) {
      case AV_OP_SHIFT_RIGHT_LOGICAL:
        compute = AV_DT_U64;
        k->in0_mask = mask;
        break;
      case AV_OP_SHIFT_RIGHT_ARITHMETIC:
        compute = AV_DT_S64;
        k->in0_sext_bits = bits;
        break;
      case AV_OP_COUNT_LEADING_ZEROS:
        compute = AV_DT_U64;
        k->in0_mask = mask;
        k->out_add = -(64 - bits);
        break;
      case AV_OP_POPCNT:
        compute = AV_DT_U64;
        k->in0_mask = mask;
        break;
      default: break;
    }
    k->inner = op == AV_OP_COMPARE ? av_ew_compare_fn(compute, dir, AV_CMP_DEFAULT)
                                   : av_ew_int_fn(op, compute);
  } else {
    return false;
  }
  if (!k->inner) return false;
  for (int j = 0; j < nin; j++) {
    if (!av_convert_prepare(in, compute, &k->in_conv[j])) return false;
    k->in_size[j] = av_dtype_size(in);
  }
  av_dtype cout = av_ew_result_dtype(op, compute);
  if (!av_convert_prepare(cout, out, &k->out_conv)) return false;
  k->cin_size = av_dtype_size(compute);
  k->cout_size = av_dtype_size(cout);
  k->out_size = av_dtype_size(out);
  k->fn = ew_via;
  return true;
}

static void ew_convert(const void *const *in, void *out, int64_t n, const void *aux) {
  const av_ew_kernel *k = aux;
  av_convert_run(&k->in_conv[0], in[0], out, n);
}

static void ew_bitcast(const void *const *in, void *out, int64_t n, const void *aux) {
  const av_ew_kernel *k = aux;
  if (n > 0) memcpy(out, in[0], (size_t)n * k->out_size);
}

void av_ew_bitcast_kernel(av_dtype from, size_t esize, av_ew_kernel *k) {
  memset(k, 0, sizeof *k);
  k->fn = ew_bitcast;
  k->nin = 1;
  k->op = AV_OP_BITCAST_CONVERT;
  k->dtype = from;
  k->in_size[0] = k->cin_size = k->cout_size = k->out_size = esize;
}

void av_ew_convert_kernel(const av_convert *cv, av_ew_kernel *k) {
  memset(k, 0, sizeof *k);
  k->fn = ew_convert;
  k->nin = 1;
  k->op = AV_OP_CONVERT;
  k->dtype = cv->from;
  k->in_conv[0] = *cv;
  k->in_size[0] = cv->from_size;
  k->cin_size = cv->from_size;
  k->cout_size = k->out_size = cv->to_size;
}
