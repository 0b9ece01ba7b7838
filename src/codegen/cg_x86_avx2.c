/* AVX2 (+ FMA) instructions for each IR node: VEX-encoded, ymm0-11 allocatable (ymm12-15
 * scratch). Predicates are vectors of 32-bit lanes (all ones / zeros), converted to and from
 * the lane width of the values they compare or select. What AVX2 lacks (64-bit multiplies,
 * arithmetic shifts by vector and maxima, conversions between 64-bit integers and floats,
 * 8- and 16-bit shifts) is left to kernel calls. Opcodes from the Intel SDM volume 2. */
#include "codegen/cg_x86.h"

#define INSN(id, name, map, pp, opc, wv, we) static const x86_insn id = {name, map, pp, opc, wv, we, false, 0};
#define INSN_K(id, name, map, pp, opc, wv, we, k) static const x86_insn id = {name, map, pp, opc, wv, we, false, k};
#define INSN_ST(id, name, map, pp, opc, wv, we) static const x86_insn id = {name, map, pp, opc, wv, we, true, 0};
INSN(VMOVUPS, "vmovups", 1, 0, 0x10, 0, 0)
INSN_ST(VMOVUPS_ST, "vmovups", 1, 0, 0x11, 0, 0)
INSN(VMOVQ_LD, "vmovq", 1, 2, 0x7E, 0, 0)
INSN_ST(VMOVQ_ST, "vmovq", 1, 1, 0xD6, 0, 0)
INSN(VMOVD_LD, "vmovd", 1, 1, 0x6E, 0, 0)
INSN_ST(VMOVD_ST, "vmovd", 1, 1, 0x7E, 0, 0)
INSN(VMOVQ_GPR, "vmovq", 1, 1, 0x6E, 1, 1)
INSN(VMOVD_GPR, "vmovd", 1, 1, 0x6E, 0, 0)
INSN(VGATHERDPS, "vgatherdps", 2, 1, 0x92, 0, 0)
INSN(VPBROADCASTB, "vpbroadcastb", 2, 1, 0x78, 0, 0)
INSN(VPBROADCASTW, "vpbroadcastw", 2, 1, 0x79, 0, 0)
INSN(VPBROADCASTD, "vpbroadcastd", 2, 1, 0x58, 0, 0)
INSN(VPBROADCASTQ, "vpbroadcastq", 2, 1, 0x59, 0, 0)
INSN_ST(VEXTRACTI128, "vextracti128", 3, 1, 0x39, 0, 0)
INSN(VINSERTI128, "vinserti128", 3, 1, 0x38, 0, 0)
INSN(VPERMQ, "vpermq", 3, 1, 0x00, 1, 1)
INSN(VSHUFPS, "vshufps", 1, 0, 0xC6, 0, 0)
INSN(VPACKSSDW, "vpackssdw", 1, 1, 0x6B, 0, 0)
INSN(VPACKSSWB, "vpacksswb", 1, 1, 0x63, 0, 0)
INSN(VPACKUSDW, "vpackusdw", 2, 1, 0x2B, 0, 0)
INSN(VPACKUSWB, "vpackuswb", 1, 1, 0x67, 0, 0)
INSN(VBLENDVPS, "vblendvps", 3, 1, 0x4A, 0, 0)
INSN(VBLENDVPD, "vblendvpd", 3, 1, 0x4B, 0, 0)
INSN(VPBLENDVB, "vpblendvb", 3, 1, 0x4C, 0, 0)
INSN(VPTEST, "vptest", 2, 1, 0x17, 0, 0)
/* integers */
INSN(VPADDB, "vpaddb", 1, 1, 0xFC, 0, 0)
INSN(VPADDW, "vpaddw", 1, 1, 0xFD, 0, 0)
INSN(VPADDD, "vpaddd", 1, 1, 0xFE, 0, 0)
INSN(VPADDQ, "vpaddq", 1, 1, 0xD4, 0, 0)
INSN(VPSUBB, "vpsubb", 1, 1, 0xF8, 0, 0)
INSN(VPSUBW, "vpsubw", 1, 1, 0xF9, 0, 0)
INSN(VPSUBD, "vpsubd", 1, 1, 0xFA, 0, 0)
INSN(VPSUBQ, "vpsubq", 1, 1, 0xFB, 0, 0)
INSN(VPMULLW, "vpmullw", 1, 1, 0xD5, 0, 0)
INSN(VPMULLD, "vpmulld", 2, 1, 0x40, 0, 0)
INSN(VPAND, "vpand", 1, 1, 0xDB, 0, 0)
INSN(VPANDN, "vpandn", 1, 1, 0xDF, 0, 0)
INSN(VPOR, "vpor", 1, 1, 0xEB, 0, 0)
INSN(VPXOR, "vpxor", 1, 1, 0xEF, 0, 0)
INSN(VPSLLVD, "vpsllvd", 2, 1, 0x47, 0, 0)
INSN(VPSLLVQ, "vpsllvq", 2, 1, 0x47, 1, 1)
INSN(VPSRLVD, "vpsrlvd", 2, 1, 0x45, 0, 0)
INSN(VPSRLVQ, "vpsrlvq", 2, 1, 0x45, 1, 1)
INSN(VPSRAVD, "vpsravd", 2, 1, 0x46, 0, 0)
INSN_K(VPSHIFTW, "vpshiftw", 1, 1, 0x71, 0, 0, 8) /* /6 shl, /2 shrl, /4 shra */
INSN_K(VPSHIFTD, "vpshiftd", 1, 1, 0x72, 0, 0, 8)
INSN_K(VPSHIFTQ, "vpshiftq", 1, 1, 0x73, 0, 0, 8) /* /6, /2 */
INSN(VPMAXSB, "vpmaxsb", 2, 1, 0x3C, 0, 0)
INSN(VPMAXSW, "vpmaxsw", 1, 1, 0xEE, 0, 0)
INSN(VPMAXSD, "vpmaxsd", 2, 1, 0x3D, 0, 0)
INSN(VPMAXUB, "vpmaxub", 1, 1, 0xDE, 0, 0)
INSN(VPMAXUW, "vpmaxuw", 2, 1, 0x3E, 0, 0)
INSN(VPMAXUD, "vpmaxud", 2, 1, 0x3F, 0, 0)
INSN(VPMINSB, "vpminsb", 2, 1, 0x38, 0, 0)
INSN(VPMINSW, "vpminsw", 1, 1, 0xEA, 0, 0)
INSN(VPMINSD, "vpminsd", 2, 1, 0x39, 0, 0)
INSN(VPMINUB, "vpminub", 1, 1, 0xDA, 0, 0)
INSN(VPMINUW, "vpminuw", 2, 1, 0x3A, 0, 0)
INSN(VPMINUD, "vpminud", 2, 1, 0x3B, 0, 0)
INSN(VPABSB, "vpabsb", 2, 1, 0x1C, 0, 0)
INSN(VPABSW, "vpabsw", 2, 1, 0x1D, 0, 0)
INSN(VPABSD, "vpabsd", 2, 1, 0x1E, 0, 0)
INSN(VPCMPEQB, "vpcmpeqb", 1, 1, 0x74, 0, 0)
INSN(VPCMPEQW, "vpcmpeqw", 1, 1, 0x75, 0, 0)
INSN(VPCMPEQD, "vpcmpeqd", 1, 1, 0x76, 0, 0)
INSN(VPCMPEQQ, "vpcmpeqq", 2, 1, 0x29, 0, 0)
INSN(VPCMPGTB, "vpcmpgtb", 1, 1, 0x64, 0, 0)
INSN(VPCMPGTW, "vpcmpgtw", 1, 1, 0x65, 0, 0)
INSN(VPCMPGTD, "vpcmpgtd", 1, 1, 0x66, 0, 0)
INSN(VPCMPGTQ, "vpcmpgtq", 2, 1, 0x37, 0, 0)
/* floats */
INSN(VADDPS, "vaddps", 1, 0, 0x58, 0, 0)
INSN(VADDPD, "vaddpd", 1, 1, 0x58, 0, 0)
INSN(VSUBPS, "vsubps", 1, 0, 0x5C, 0, 0)
INSN(VSUBPD, "vsubpd", 1, 1, 0x5C, 0, 0)
INSN(VMULPS, "vmulps", 1, 0, 0x59, 0, 0)
INSN(VMULPD, "vmulpd", 1, 1, 0x59, 0, 0)
INSN(VDIVPS, "vdivps", 1, 0, 0x5E, 0, 0)
INSN(VDIVPD, "vdivpd", 1, 1, 0x5E, 0, 0)
INSN(VSQRTPS, "vsqrtps", 1, 0, 0x51, 0, 0)
INSN(VSQRTPD, "vsqrtpd", 1, 1, 0x51, 0, 0)
INSN(VFMADD213PS, "vfmadd213ps", 2, 1, 0xA8, 0, 0)
INSN(VFMADD213PD, "vfmadd213pd", 2, 1, 0xA8, 1, 1)
INSN(VFMADD231PS, "vfmadd231ps", 2, 1, 0xB8, 0, 0)
INSN(VFMADD231PD, "vfmadd231pd", 2, 1, 0xB8, 1, 1)
INSN(VFMADD132PS, "vfmadd132ps", 2, 1, 0x98, 0, 0)
INSN(VFMADD132PD, "vfmadd132pd", 2, 1, 0x98, 1, 1)
INSN(VROUNDPS, "vroundps", 3, 1, 0x08, 0, 0)
INSN(VROUNDPD, "vroundpd", 3, 1, 0x09, 0, 0)
INSN(VCMPPS, "vcmpps", 1, 0, 0xC2, 0, 0)
INSN(VCMPPD, "vcmppd", 1, 1, 0xC2, 0, 0)
/* conversions */
INSN(VCVTPS2PD, "vcvtps2pd", 1, 0, 0x5A, 0, 0)
INSN(VCVTPD2PS, "vcvtpd2ps", 1, 1, 0x5A, 0, 0)
INSN(VCVTDQ2PS, "vcvtdq2ps", 1, 0, 0x5B, 0, 0)
INSN(VCVTDQ2PD, "vcvtdq2pd", 1, 2, 0xE6, 0, 0)
INSN(VCVTTPS2DQ, "vcvttps2dq", 1, 2, 0x5B, 0, 0)
INSN(VCVTTPD2DQ, "vcvttpd2dq", 1, 1, 0xE6, 0, 0)
INSN(VPMOVSXBW, "vpmovsxbw", 2, 1, 0x20, 0, 0)
INSN(VPMOVSXBD, "vpmovsxbd", 2, 1, 0x21, 0, 0)
INSN(VPMOVSXBQ, "vpmovsxbq", 2, 1, 0x22, 0, 0)
INSN(VPMOVSXWD, "vpmovsxwd", 2, 1, 0x23, 0, 0)
INSN(VPMOVSXWQ, "vpmovsxwq", 2, 1, 0x24, 0, 0)
INSN(VPMOVSXDQ, "vpmovsxdq", 2, 1, 0x25, 0, 0)
INSN(VPMOVZXBW, "vpmovzxbw", 2, 1, 0x30, 0, 0)
INSN(VPMOVZXBD, "vpmovzxbd", 2, 1, 0x31, 0, 0)
INSN(VPMOVZXBQ, "vpmovzxbq", 2, 1, 0x32, 0, 0)
INSN(VPMOVZXWD, "vpmovzxwd", 2, 1, 0x33, 0, 0)
INSN(VPMOVZXWQ, "vpmovzxwq", 2, 1, 0x34, 0, 0)
INSN(VPMOVZXDQ, "vpmovzxdq", 2, 1, 0x35, 0, 0)

static int Lof(int width) { return width >= 32 ? 1 : 0; }

static void V(cg_x86 *x, const x86_insn *in, int w, int dst, int src1, x86_rm src2, int imm) {
  x86_vex(&x->b, in, Lof(w), dst, src1, src2, imm);
}
static void V1(cg_x86 *x, const x86_insn *in, int w, int dst, x86_rm src, int imm) {
  x86_vex(&x->b, in, Lof(w), dst, -1, src, imm);
}
static int S(cg_x86 *x, int s) { return cg_x86_scratch(x, s); }
static x86_rm P(cg_x86 *x, uint64_t bits, int esize) { return x86_pool(cg_x86_pool_splat(x, bits, esize)); }

static void vmov_rr(cg_x86 *x, int w, int dst, int src) {
  if (dst != src) V1(x, &VMOVUPS, w < 16 ? 16 : w, dst, x86_r(src), -1);
}

void cg_avx2_move(cg_x86 *x, int cls, int width, bool store, int reg, x86_mem m) {
  x86_rm rm = {true, 0, m};
  (void)cls;
  if (width >= 16)
    V1(x, store ? &VMOVUPS_ST : &VMOVUPS, width, reg, rm, -1);
  else if (width == 8)
    V1(x, store ? &VMOVQ_ST : &VMOVQ_LD, 16, reg, rm, -1);
  else
    V1(x, store ? &VMOVD_ST : &VMOVD_LD, 16, reg, rm, -1);
}

/* ---- predicates: dword masks of `lanes` lanes <-> bytes and other lane widths */

static int mask_width(const cg_x86 *x) { return x->lanes * 4; }

/* bytes 0 / nonzero in xmm `src` (lanes of them) -> dword mask `dst` */
static void bytes_to_mask(cg_x86 *x, int dst, int src) {
  int w = mask_width(x);
  V1(x, &VPMOVZXBD, w, dst, x86_r(src), -1);
  V(x, &VPCMPGTD, w, dst, dst, P(x, 0, 4), -1);
}

/* dword mask `m` -> bytes 0 / 1 in the low `lanes` bytes of `dst` (m is read first) */
static void mask_to_bytes(cg_x86 *x, int dst, int m) {
  int w = mask_width(x), s = S(x, 3);
  V(x, &VPSHIFTD, w, 2, dst, x86_r(m), 31); /* vpsrld dst, m, 31: /2 in reg, dst in vvvv */
  if (w == 32) {
    x86_vex(&x->b, &VEXTRACTI128, 1, dst, -1, x86_r(s), 1);
    V(x, &VPACKUSDW, 16, dst, dst, x86_r(s), -1);
  } else {
    V(x, &VPACKUSDW, 16, dst, dst, x86_r(dst), -1);
  }
  V(x, &VPACKUSWB, 16, dst, dst, x86_r(dst), -1);
}

void cg_avx2_pred_bytes(cg_x86 *x, int reg, bool to_bytes, int32_t off) {
  int s = S(x, 2);
  x86_mem m = cg_x86_frame(off);
  if (to_bytes) {
    mask_to_bytes(x, s, reg);
    cg_avx2_move(x, CLS_VEC, x->lanes, true, s, m);
  } else {
    cg_avx2_move(x, CLS_VEC, x->lanes, false, s, m);
    bytes_to_mask(x, reg, s);
  }
}

/* Element masks of size es (in registers src[0..parts)) -> a dword mask in dst. */
static void to_dword_mask(cg_x86 *x, int es, const int *src, int parts, int dst) {
  int w = mask_width(x);
  switch (es) {
    case 4: vmov_rr(x, w, dst, src[0]); return;
    case 2: V1(x, &VPMOVSXWD, w, dst, x86_r(src[0]), -1); return;
    case 1: V1(x, &VPMOVSXBD, w, dst, x86_r(src[0]), -1); return;
    default: break;
  }
  if (parts == 2) { /* two ymm of 4 qwords: low dwords, interleaved per lane, then ordered */
    V(x, &VSHUFPS, 32, dst, src[0], x86_r(src[1]), 0x88);
    V1(x, &VPERMQ, 32, dst, x86_r(dst), 0xD8);
  } else { /* one ymm of 4 qwords -> xmm of 4 dwords */
    int s = S(x, 3);
    x86_vex(&x->b, &VEXTRACTI128, 1, src[0], -1, x86_r(s), 1);
    V(x, &VSHUFPS, 16, dst, src[0], x86_r(s), 0x88);
  }
}

/* The dword mask m as element masks of size es for part p of a value (into scratch s, or m
 * itself for 4-byte elements). */
static int from_dword_mask(cg_x86 *x, int es, int m, int p, int s) {
  int w = mask_width(x);
  switch (es) {
    case 4: return m;
    case 8: {
      int src = m;
      if (p == 1) {
        x86_vex(&x->b, &VEXTRACTI128, 1, m, -1, x86_r(S(x, s)), 1);
        src = S(x, s);
      }
      V1(x, &VPMOVSXDQ, 32, S(x, s), x86_r(src), -1);
      return S(x, s);
    }
    default: {
      int d = S(x, s);
      if (w == 32) {
        x86_vex(&x->b, &VEXTRACTI128, 1, m, -1, x86_r(d), 1);
        V(x, &VPACKSSDW, 16, d, m, x86_r(d), -1);
      } else {
        V(x, &VPACKSSDW, 16, d, m, x86_r(m), -1);
      }
      if (es == 1) V(x, &VPACKSSWB, 16, d, d, x86_r(d), -1);
      return d;
    }
  }
}

/* ---- instruction choice */

static const x86_insn *by_size(cg_type t, const x86_insn *b, const x86_insn *w, const x86_insn *d,
                               const x86_insn *q) {
  switch (cg_type_size(t)) {
    case 1: return b;
    case 2: return w;
    case 4: return d;
    case 8: return q;
    default: return NULL;
  }
}

static const x86_insn *float_insn(cg_opc op, cg_type t) {
  bool d = t == CG_F64;
  switch (op) {
    case CG_FADD: return d ? &VADDPD : &VADDPS;
    case CG_FSUB: return d ? &VSUBPD : &VSUBPS;
    case CG_FMUL: return d ? &VMULPD : &VMULPS;
    case CG_FDIV: return d ? &VDIVPD : &VDIVPS;
    case CG_FSQRT: return d ? &VSQRTPD : &VSQRTPS;
    default: return NULL;
  }
}

static const x86_insn *int_insn(cg_opc op, cg_type t) {
  switch (op) {
    case CG_ADD: return by_size(t, &VPADDB, &VPADDW, &VPADDD, &VPADDQ);
    case CG_SUB: return by_size(t, &VPSUBB, &VPSUBW, &VPSUBD, &VPSUBQ);
    case CG_MUL: return by_size(t, NULL, &VPMULLW, &VPMULLD, NULL);
    case CG_AND: return &VPAND;
    case CG_OR: return &VPOR;
    case CG_XOR: return &VPXOR;
    case CG_ANDN: return &VPANDN;
    case CG_SHL: return by_size(t, NULL, NULL, &VPSLLVD, &VPSLLVQ);
    case CG_SHRL: return by_size(t, NULL, NULL, &VPSRLVD, &VPSRLVQ);
    case CG_SHRA: return by_size(t, NULL, NULL, &VPSRAVD, NULL);
    case CG_MAXS: return by_size(t, &VPMAXSB, &VPMAXSW, &VPMAXSD, NULL);
    case CG_MAXU: return by_size(t, &VPMAXUB, &VPMAXUW, &VPMAXUD, NULL);
    case CG_MINS: return by_size(t, &VPMINSB, &VPMINSW, &VPMINSD, NULL);
    case CG_MINU: return by_size(t, &VPMINUB, &VPMINUW, &VPMINUD, NULL);
    case CG_ABS: return by_size(t, &VPABSB, &VPABSW, &VPABSD, NULL);
    default: return NULL;
  }
}

static const x86_insn *shift_group(cg_type t) { return by_size(t, NULL, &VPSHIFTW, &VPSHIFTD, &VPSHIFTQ); }

static const x86_insn *cvt_insn(cg_cvt_kind how, cg_type from, cg_type to) {
  int fs = cg_type_size(from), ts = cg_type_size(to);
  switch (how) {
    case CG_CVT_FLOAT:
      return from == CG_F32 && to == CG_F64 ? &VCVTPS2PD : from == CG_F64 && to == CG_F32 ? &VCVTPD2PS : NULL;
    case CG_CVT_S2F: return fs == 4 ? (to == CG_F32 ? &VCVTDQ2PS : &VCVTDQ2PD) : NULL;
    case CG_CVT_F2S_TRUNC: return ts == 4 ? (from == CG_F32 ? &VCVTTPS2DQ : &VCVTTPD2DQ) : NULL;
    case CG_CVT_SEXT: case CG_CVT_ZEXT: {
      bool s = how == CG_CVT_SEXT;
      if (fs == 1) return ts == 2 ? (s ? &VPMOVSXBW : &VPMOVZXBW) : ts == 4 ? (s ? &VPMOVSXBD : &VPMOVZXBD) : ts == 8 ? (s ? &VPMOVSXBQ : &VPMOVZXBQ) : NULL;
      if (fs == 2) return ts == 4 ? (s ? &VPMOVSXWD : &VPMOVZXWD) : ts == 8 ? (s ? &VPMOVSXWQ : &VPMOVZXWQ) : NULL;
      if (fs == 4) return ts == 8 ? (s ? &VPMOVSXDQ : &VPMOVZXDQ) : NULL;
      return NULL;
    }
    default: return NULL;
  }
}

static bool trunc_native(int fs, int ts) {
  return (fs == 8 && ts == 4) || (fs == 4 && (ts == 2 || ts == 1)) || (fs == 2 && ts == 1);
}

static bool avx2_native(const cg_region *r, const cg_node *n, int lanes) {
  /* a: the operand type of a CMP or CVT, from the node (cg_finish lets the operand be a
   * same-size value of another type, a bitcast's source) */
  cg_type t = (cg_type)n->type, a = (cg_type)n->atype;
  if (lanes > 8) return false;
  switch (n->op) {
    case CG_LOAD: case CG_SCALAR: case CG_CONST: case CG_STORE: case CG_BITCAST: case CG_CALL:
    case CG_CALL_CONVERT: case CG_CALL_IF:
      return true;
    case CG_SELECT: return t != CG_PRED;
    case CG_INDEX: return t == CG_I64 || t == CG_I32;
    case CG_LANE: return t == CG_I32;
    case CG_XLOAD: return t == CG_F32 && (n->nin == 0 || r->v[n->in[0]].type == CG_I32);
    case CG_ACC: return t == CG_F64;
    case CG_ADD: case CG_SUB: case CG_MUL: case CG_SHL: case CG_SHRL: case CG_SHRA: case CG_MAXS:
    case CG_MAXU: case CG_MINS: case CG_MINU: case CG_ABS:
      return cg_is_int(t) && int_insn((cg_opc)n->op, t);
    case CG_AND: case CG_OR: case CG_XOR: case CG_ANDN: case CG_NOT: return t != CG_PRED;
    case CG_SHLI: case CG_SHRLI: case CG_ROTLI: return cg_type_size(t) >= 2 && (n->op != CG_ROTLI || cg_type_size(t) >= 4);
    case CG_SHRAI: return cg_type_size(t) >= 2;
    case CG_FADD: case CG_FSUB: case CG_FMUL: case CG_FDIV: case CG_FSQRT: case CG_FMA: case CG_FROUND:
      return cg_is_float(t);
    case CG_CMP: return a != CG_PRED;
    case CG_PAND: case CG_POR: case CG_PXOR: case CG_PNOT: return t == CG_PRED;
    case CG_CVT:
      if (n->imm == CG_CVT_PRED2I) return cg_is_int(t);
      if (n->imm == CG_CVT_TRUNC) return trunc_native(cg_type_size(a), cg_type_size(t));
      return cvt_insn((cg_cvt_kind)n->imm, a, t) != NULL;
    default: return false;
  }
}

/* ---- emission */

static void emit_load(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type t = (cg_type)n->type;
  if (t == CG_PRED) {
    int s = S(x, 0);
    cg_avx2_move(x, CLS_VEC, x->lanes, false, s, cg_x86_elem(x, n->reg, 1, 0, x->lanes));
    bytes_to_mask(x, cg_x86_dst(x, i, 0), s);
    return;
  }
  int w = cg_x86_width(x, t), parts = cg_x86_parts(x, t);
  for (int p = 0; p < parts; p++)
    cg_avx2_move(x, CLS_VEC, w, false, cg_x86_dst(x, i, p), cg_x86_elem(x, n->reg, cg_type_size(t), p, w));
}

static void emit_store(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type t = (cg_type)x->r->v[n->in[0]].type;
  if (n->reg == CG_NEST_OUT) { /* a nest's sums, to the staging buffer */
    int w = cg_x86_width(x, t), r = cg_x86_opnd_reg(x, i, 0, 0, 0);
    cg_avx2_move(x, CLS_VEC, w, true, r, cg_x86_nest_out(x, (int32_t)n->imm * cg_type_size(t)));
    return;
  }
  if (t == CG_PRED) {
    int m = cg_x86_opnd_reg(x, i, 0, 0, 0), s = S(x, 1);
    mask_to_bytes(x, s, m);
    cg_avx2_move(x, CLS_VEC, x->lanes, true, s, cg_x86_elem(x, n->reg, 1, 0, x->lanes));
    return;
  }
  int w = cg_x86_width(x, t), parts = cg_x86_parts(x, t);
  for (int p = 0; p < parts; p++)
    cg_avx2_move(x, CLS_VEC, w, true, cg_x86_opnd_reg(x, i, 0, p, 0), cg_x86_elem(x, n->reg, cg_type_size(t), p, w));
}

static void emit_scalar(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type t = (cg_type)n->type;
  x86_mov_load(&x->b, R11, (x86_mem){R14, X86_NOREG, 1, (int32_t)(8 * n->reg), -1, 0});
  x86_rm src = x86_m(R11, X86_NOREG, 1, 0);
  if (t == CG_PRED) {
    int s = S(x, 0);
    V1(x, &VPBROADCASTB, 16, s, src, -1);
    bytes_to_mask(x, cg_x86_dst(x, i, 0), s);
    return;
  }
  const x86_insn *in = by_size(t, &VPBROADCASTB, &VPBROADCASTW, &VPBROADCASTD, &VPBROADCASTQ);
  int w = cg_x86_width(x, t), parts = cg_x86_parts(x, t);
  for (int p = 0; p < parts; p++) V1(x, in, w, cg_x86_dst(x, i, p), src, -1);
}

static void emit_index(cg_x86 *x, uint32_t i) {
  x86_lea(&x->b, R11, (x86_mem){R15, R13, 1, 0, -1, 0});
  if (x->r->v[i].type == CG_I32) { /* a region of fewer than 2^31 elements (cg_lower.c) */
    int w = cg_x86_width(x, CG_I32), d = cg_x86_dst(x, i, 0);
    int32_t lanes[8];
    for (int l = 0; l < 8; l++) lanes[l] = l;
    V1(x, &VMOVD_GPR, 16, d, x86_r(R11), -1);
    V1(x, &VPBROADCASTD, w, d, x86_r(d), -1);
    V(x, &VPADDD, w, d, d, x86_pool(cg_x86_pool(x, lanes, 4, w)), -1);
    return;
  }
  int w = cg_x86_width(x, CG_I64), parts = cg_x86_parts(x, CG_I64), per = w / 8;
  for (int p = 0; p < parts; p++) {
    int64_t lanes[4];
    for (int l = 0; l < 4; l++) lanes[l] = p * per + (l < per ? l : 0);
    int d = cg_x86_dst(x, i, p);
    V1(x, &VMOVQ_GPR, 16, d, x86_r(R11), -1);
    V1(x, &VPBROADCASTQ, w, d, x86_r(d), -1);
    V(x, &VPADDQ, w, d, d, x86_pool(cg_x86_pool(x, lanes, 8, 32)), -1);
  }
}

/* nests: the V lanes of the block, v0 + lane clamped to the last v */
static void emit_lane(cg_x86 *x, uint32_t i) {
  int w = cg_x86_width(x, CG_I32), d = cg_x86_dst(x, i, 0), s = S(x, 0);
  int32_t lanes[8];
  for (int l = 0; l < 8; l++) lanes[l] = l;
  x86_mov_load(&x->b, R11, cg_x86_at(RBX, (int32_t)offsetof(av_cg_nest_args, v0)));
  V1(x, &VMOVD_GPR, 16, d, x86_r(R11), -1);
  V1(x, &VPBROADCASTD, w, d, x86_r(d), -1);
  V(x, &VPADDD, w, d, d, x86_pool(cg_x86_pool(x, lanes, 4, w)), -1);
  x86_mov_load(&x->b, R11, cg_x86_at(RBX, (int32_t)offsetof(av_cg_nest_args, vlast)));
  V1(x, &VMOVD_GPR, 16, s, x86_r(R11), -1);
  V1(x, &VPBROADCASTD, w, s, x86_r(s), -1);
  V(x, &VPMINSD, w, d, d, x86_r(s), -1);
}

/* nests: an input element per lane (a gather) or one for all lanes (a broadcast) */
static void emit_xload(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  int w = cg_x86_width(x, CG_F32), d = cg_x86_dst(x, i, 0);
  int32_t disp = (int32_t)n->imm * 4;
  if (n->nin == 0) {
    int base = cg_x86_xload_base(x, i);
    V1(x, &VPBROADCASTD, w, d, x86_m(base, X86_NOREG, 1, disp), -1);
    return;
  }
  int idx = cg_x86_opnd_reg(x, i, 0, 0, 0);
  int base = cg_x86_xload_base(x, i);
  int g = d == idx ? S(x, 1) : d, m = S(x, 2); /* destination, index and mask all differ */
  V(x, &VPCMPEQD, w, m, m, x86_r(m), -1);      /* every lane: the gather clears its mask */
  x86_vex(&x->b, &VGATHERDPS, Lof(w), g, m, x86_vsib(base, idx, 4, disp), -1);
  vmov_rr(x, w, d, g);
}

static void avx2_vmov(cg_x86 *x, int width, int dst, int src) { vmov_rr(x, width, dst, src); }
static void avx2_fadd64(cg_x86 *x, int width, int dst, x86_rm src) { V(x, &VADDPD, width, dst, dst, src, -1); }

static void emit_binary(cg_x86 *x, uint32_t i, const x86_insn *in) {
  const cg_node *n = &x->r->v[i];
  int w = cg_x86_width(x, (cg_type)n->type), parts = cg_x86_parts(x, (cg_type)n->type);
  int a = cg_x86_commute(x, i) ? 1 : 0;
  for (int p = 0; p < parts; p++)
    V(x, in, w, cg_x86_dst(x, i, p), cg_x86_opnd_reg(x, i, a, p, 0), cg_x86_opnd(x, i, 1 - a, p), -1);
}

static void emit_fma(cg_x86 *x, uint32_t i) {
  static const x86_insn *const forms[2][3] = {{&VFMADD132PS, &VFMADD213PS, &VFMADD231PS},
                                              {&VFMADD132PD, &VFMADD213PD, &VFMADD231PD}};
  cg_x86_emit_fma(x, i, V, forms);
}

/* integer compare of one part into element mask register d (scratch 0-1 used) */
static void int_compare(cg_x86 *x, uint32_t i, int p, cg_type a, int how, bool uns, int d) {
  int w = cg_x86_width(x, a), bits = 8 * cg_type_size(a);
  int ra = cg_x86_opnd_reg(x, i, 0, p, 0), rb = cg_x86_opnd_reg(x, i, 1, p, 1);
  if (uns) { /* unsigned order is signed order with the sign bits flipped */
    x86_rm bias = P(x, (uint64_t)1 << (bits - 1), cg_type_size(a));
    V(x, &VPXOR, w, S(x, 0), ra, bias, -1);
    V(x, &VPXOR, w, S(x, 1), rb, bias, -1);
    ra = S(x, 0);
    rb = S(x, 1);
  }
  const x86_insn *eq = by_size(a, &VPCMPEQB, &VPCMPEQW, &VPCMPEQD, &VPCMPEQQ);
  const x86_insn *gt = by_size(a, &VPCMPGTB, &VPCMPGTW, &VPCMPGTD, &VPCMPGTQ);
  bool negate = how == CG_CMP_NE || how == CG_CMP_LE || how == CG_CMP_GE;
  switch (how) {
    case CG_CMP_EQ: case CG_CMP_NE: V(x, eq, w, d, ra, x86_r(rb), -1); break;
    case CG_CMP_GT: case CG_CMP_LE: V(x, gt, w, d, ra, x86_r(rb), -1); break;
    default: V(x, gt, w, d, rb, x86_r(ra), -1); break; /* LT, GE: b > a */
  }
  if (negate) V(x, &VPXOR, w, d, d, P(x, UINT64_MAX, 8), -1);
}

static void emit_cmp(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type a = (cg_type)n->atype;
  int how = (int)(n->imm & 15);
  int w = cg_x86_width(x, a), parts = cg_x86_parts(x, a);
  int el[2] = {S(x, 2), S(x, 3)};
  for (int p = 0; p < parts; p++) {
    if (cg_is_float(a)) {
      static const int fimm[8] = {0x00, 0x04, 0x11, 0x12, 0x1E, 0x1D, 0x03, 0x07};
      V(x, a == CG_F64 ? &VCMPPD : &VCMPPS, w, el[p], cg_x86_opnd_reg(x, i, 0, p, 0), cg_x86_opnd(x, i, 1, p), fimm[how]);
    } else {
      int_compare(x, i, p, a, how, (n->imm & CG_CMP_UNSIGNED) != 0, el[p]);
    }
  }
  to_dword_mask(x, cg_type_size(a), el, parts, cg_x86_dst(x, i, 0));
}

static void emit_select(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type t = (cg_type)n->type;
  int es = cg_type_size(t), w = cg_x86_width(x, t), parts = cg_x86_parts(x, t);
  const x86_insn *in = es == 4 ? &VBLENDVPS : es == 8 ? &VBLENDVPD : &VPBLENDVB;
  int m = cg_x86_opnd_reg(x, i, 0, 0, 2);
  for (int p = 0; p < parts; p++) {
    int mp = from_dword_mask(x, es, m, p, 3);
    /* dst = mask ? a : b */
    V(x, in, w, cg_x86_dst(x, i, p), cg_x86_opnd_reg(x, i, 2, p, 0), cg_x86_opnd(x, i, 1, p), mp << 4);
  }
}

static void emit_pred_op(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  int w = mask_width(x), dst = cg_x86_dst(x, i, 0), a = cg_x86_opnd_reg(x, i, 0, 0, 0);
  if (n->op == CG_PNOT) {
    V(x, &VPXOR, w, dst, a, P(x, UINT64_MAX, 8), -1);
    return;
  }
  const x86_insn *in = n->op == CG_PAND ? &VPAND : n->op == CG_POR ? &VPOR : &VPXOR;
  V(x, in, w, dst, a, cg_x86_opnd(x, i, 1, 0), -1);
}

/* the lanes [first, first + count) of register src (width w), moved to the bottom (scratch s) */
static int chunk_of(cg_x86 *x, int src, int fs, int first, int s) {
  int off = first * fs;
  if (off == 0) return src;
  int d = S(x, s);
  x86_vex(&x->b, &VEXTRACTI128, 1, src, -1, x86_r(d), off / 16);
  if (off % 16) V(x, &VPSHIFTQ, 16, 3, d, x86_r(d), off % 16); /* vpsrldq d, d, off % 16 */
  return d;
}

/* narrowing TRUNC of one source part (width wf, lanes of size fs) into dst's low bytes */
static void trunc_part(cg_x86 *x, int fs, int ts, int wf, int src, int dst) {
  int s = S(x, 3);
  if (fs == 8) { /* 4 qwords -> 4 dwords */
    if (wf == 32) {
      x86_vex(&x->b, &VEXTRACTI128, 1, src, -1, x86_r(s), 1);
      V(x, &VSHUFPS, 16, dst, src, x86_r(s), 0x88);
    } else {
      V(x, &VSHUFPS, 16, dst, src, x86_r(src), 0x88);
    }
    return;
  }
  /* keep the low bits of each element, then pack with unsigned saturation (exact) */
  uint64_t keep = ts == 1 ? 0xff : 0xffff;
  V(x, &VPAND, wf, dst, src, P(x, keep, fs), -1);
  if (fs == 4) {
    if (wf == 32) {
      x86_vex(&x->b, &VEXTRACTI128, 1, dst, -1, x86_r(s), 1);
      V(x, &VPACKUSDW, 16, dst, dst, x86_r(s), -1);
    } else {
      V(x, &VPACKUSDW, 16, dst, dst, x86_r(dst), -1);
    }
    if (ts == 1) V(x, &VPACKUSWB, 16, dst, dst, x86_r(dst), -1);
  } else { /* 2 -> 1 */
    V(x, &VPACKUSWB, 16, dst, dst, x86_r(dst), -1);
  }
}

static void emit_cvt(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type from = (cg_type)n->atype, to = (cg_type)n->type;
  int fs = cg_type_size(from), ts = cg_type_size(to);
  int wt = cg_x86_width(x, to), pt = cg_x86_parts(x, to), wf = cg_x86_width(x, from), pf = cg_x86_parts(x, from);
  if (n->imm == CG_CVT_PRED2I) {
    int m = cg_x86_opnd_reg(x, i, 0, 0, 2);
    for (int p = pt; p-- > 0;)
      V(x, &VPAND, wt, cg_x86_dst(x, i, p), from_dword_mask(x, ts, m, p, 3), P(x, 1, ts), -1);
    return;
  }
  if (n->imm == CG_CVT_TRUNC) {
    int dst = cg_x86_dst(x, i, 0), s = S(x, 1);
    if (pf == 2) trunc_part(x, fs, ts, wf, cg_x86_opnd_reg(x, i, 0, 1, 0), s);
    trunc_part(x, fs, ts, wf, cg_x86_opnd_reg(x, i, 0, 0, 0), dst);
    if (pf == 2) V(x, &VINSERTI128, 32, dst, dst, x86_r(s), 1);
    return;
  }
  const x86_insn *in = cvt_insn((cg_cvt_kind)n->imm, from, to);
  if (ts == fs) {
    for (int p = 0; p < pt; p++) V1(x, in, wt, cg_x86_dst(x, i, p), cg_x86_opnd(x, i, 0, p), -1);
    return;
  }
  if (ts > fs) { /* widening: the source has one part */
    int per = wt / ts;
    bool splat = cg_x86_opnd(x, i, 0, 0).mem;
    int src = cg_x86_opnd_reg(x, i, 0, 0, 0);
    if (pt > 1 && src == cg_x86_dst(x, i, 1)) {
      vmov_rr(x, wf, S(x, 2), src);
      src = S(x, 2);
    }
    for (int p = pt; p-- > 0;)
      V1(x, in, wt, cg_x86_dst(x, i, p), x86_r(chunk_of(x, src, fs, splat ? 0 : p * per, 1)), -1);
    return;
  }
  /* narrowing float conversions (f64 -> f32 / i32): per source part into xmm, joined */
  int dst = cg_x86_dst(x, i, 0), s = S(x, 1);
  if (pf == 2) V1(x, in, wf, s, x86_r(cg_x86_opnd_reg(x, i, 0, 1, 0)), -1);
  V1(x, in, wf, dst, x86_r(cg_x86_opnd_reg(x, i, 0, 0, 0)), -1);
  if (pf == 2) V(x, &VINSERTI128, 32, dst, dst, x86_r(s), 1);
}

static void emit_shift_imm(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type t = (cg_type)n->type;
  int w = cg_x86_width(x, t), parts = cg_x86_parts(x, t), bits = 8 * cg_type_size(t), c = (int)n->imm;
  const x86_insn *g = shift_group(t);
  for (int p = 0; p < parts; p++) {
    int d = cg_x86_dst(x, i, p);
    x86_rm a = x86_r(cg_x86_opnd_reg(x, i, 0, p, 0)); /* VEX shifts by immediate take registers */
    switch (n->op) {
      case CG_SHLI: x86_vex(&x->b, g, Lof(w), 6, d, a, c); break;
      case CG_SHRLI: x86_vex(&x->b, g, Lof(w), 2, d, a, c); break;
      case CG_ROTLI: { /* (a << c) | (a >> (bits - c)) */
        int s = S(x, 0);
        x86_vex(&x->b, g, Lof(w), 6, s, a, c);
        x86_vex(&x->b, g, Lof(w), 2, d, a, bits - c);
        V(x, &VPOR, w, d, d, x86_r(s), -1);
        break;
      }
      default: /* SHRAI */
        if (bits < 64) {
          x86_vex(&x->b, bits == 16 ? &VPSHIFTW : &VPSHIFTD, Lof(w), 4, d, a, c);
        } else { /* (a >>> c) | (sign fill << (64 - c)) */
          int s = S(x, 1), r = a.reg;
          V(x, &VPXOR, w, s, s, x86_r(s), -1);
          V(x, &VPCMPGTQ, w, s, s, x86_r(r), -1); /* 0 > a */
          x86_vex(&x->b, g, Lof(w), 6, s, x86_r(s), 64 - c);
          x86_vex(&x->b, g, Lof(w), 2, d, x86_r(r), c);
          V(x, &VPOR, w, d, d, x86_r(s), -1);
        }
        break;
    }
  }
}

static void emit_call_if(cg_x86 *x, uint32_t i) {
  int m = cg_x86_opnd_reg(x, i, 0, 0, 2);
  V1(x, &VPTEST, mask_width(x), m, x86_r(m), -1);
  uint32_t to_fast = x86_jump(&x->b, 0x4); /* je: no lane set */
  cg_x86_call(x, i, 1, 1);
  uint32_t to_done = x86_jump(&x->b, -1);
  x86_patch_jump(&x->b, to_fast, (uint32_t)x->b.n);
  const cg_node *n = &x->r->v[i];
  int w = cg_x86_width(x, (cg_type)n->type), parts = cg_x86_parts(x, (cg_type)n->type);
  for (int p = 0; p < parts; p++) {
    x86_rm f = cg_x86_opnd(x, i, 2, p);
    if (f.mem)
      cg_avx2_move(x, CLS_VEC, w, false, cg_x86_dst(x, i, p), f.m);
    else
      vmov_rr(x, w, cg_x86_dst(x, i, p), f.reg);
  }
  x86_patch_jump(&x->b, to_done, (uint32_t)x->b.n);
}

static void avx2_emit(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type t = (cg_type)n->type;
  int w = cg_x86_width(x, t), parts = cg_x86_parts(x, t);
  switch (n->op) {
    case CG_LOAD: emit_load(x, i); return;
    case CG_STORE: emit_store(x, i); return;
    case CG_SCALAR: emit_scalar(x, i); return;
    case CG_INDEX: emit_index(x, i); return;
    case CG_LANE: emit_lane(x, i); return;
    case CG_XLOAD: emit_xload(x, i); return;
    case CG_BITCAST:
      for (int p = 0; p < parts; p++) {
        x86_rm s = cg_x86_opnd(x, i, 0, p);
        if (s.mem)
          cg_avx2_move(x, CLS_VEC, w, false, cg_x86_dst(x, i, p), s.m);
        else
          vmov_rr(x, w, cg_x86_dst(x, i, p), s.reg);
      }
      return;
    case CG_FADD: case CG_FSUB: case CG_FMUL: case CG_FDIV:
      emit_binary(x, i, float_insn((cg_opc)n->op, t));
      return;
    case CG_FSQRT:
      for (int p = 0; p < parts; p++) V1(x, float_insn(CG_FSQRT, t), w, cg_x86_dst(x, i, p), cg_x86_opnd(x, i, 0, p), -1);
      return;
    case CG_FMA: emit_fma(x, i); return;
    case CG_FROUND:
      for (int p = 0; p < parts; p++)
        V1(x, t == CG_F64 ? &VROUNDPD : &VROUNDPS, w, cg_x86_dst(x, i, p), cg_x86_opnd(x, i, 0, p), (int)(n->imm & 3) | 8);
      return;
    case CG_ADD: case CG_SUB: case CG_MUL: case CG_AND: case CG_OR: case CG_XOR: case CG_ANDN:
    case CG_SHL: case CG_SHRL: case CG_SHRA: case CG_MAXS: case CG_MAXU: case CG_MINS: case CG_MINU:
      emit_binary(x, i, int_insn((cg_opc)n->op, t));
      return;
    case CG_NOT:
      for (int p = 0; p < parts; p++)
        V(x, &VPXOR, w, cg_x86_dst(x, i, p), cg_x86_opnd_reg(x, i, 0, p, 0), P(x, UINT64_MAX, 8), -1);
      return;
    case CG_ABS:
      for (int p = 0; p < parts; p++) V1(x, int_insn(CG_ABS, t), w, cg_x86_dst(x, i, p), cg_x86_opnd(x, i, 0, p), -1);
      return;
    case CG_SHLI: case CG_SHRLI: case CG_SHRAI: case CG_ROTLI: emit_shift_imm(x, i); return;
    case CG_CMP: emit_cmp(x, i); return;
    case CG_PAND: case CG_POR: case CG_PXOR: case CG_PNOT: emit_pred_op(x, i); return;
    case CG_SELECT: emit_select(x, i); return;
    case CG_CVT: emit_cvt(x, i); return;
    case CG_CALL: cg_x86_call(x, i, 0, n->nin); return;
    case CG_CALL_CONVERT: cg_x86_call(x, i, 0, 1); return;
    case CG_CALL_IF: emit_call_if(x, i); return;
    default: x->failed = true; return;
  }
}

const cg_isa cg_isa_avx2 = {
    .name = "avx2",
    .vl = 32,
    .nvec = 12,
    .nmask = 0,
    .vscratch0 = 12,
    .pred_in_mask = false,
    .native = avx2_native,
    .emit = avx2_emit,
    .vmov = avx2_vmov,
    .fadd64 = avx2_fadd64,
};
