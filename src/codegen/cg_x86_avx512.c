/* AVX-512 (F, BW, DQ, VL) instructions for each IR node: EVEX-encoded vector operations on
 * zmm/ymm/xmm parts, predicates in mask registers k1-k5 (k6, k7 scratch). Opcodes from the
 * Intel SDM volume 2. */
#include <string.h>

#include "codegen/cg_x86.h"

#define INSN(id, name, map, pp, opc, wv, we) static const x86_insn id = {name, map, pp, opc, wv, we, false, 0};
#define INSN_ST(id, name, map, pp, opc, wv, we) static const x86_insn id = {name, map, pp, opc, wv, we, true, 0};
/* k: which operands are mask registers (1 reg, 2 vvvv, 4 rm), for listings */
#define INSN_K(id, name, map, pp, opc, wv, we, k) static const x86_insn id = {name, map, pp, opc, wv, we, false, k};
/* moves */
INSN(VMOVUPS, "vmovups", 1, 0, 0x10, 0, 0)
INSN_ST(VMOVUPS_ST, "vmovups", 1, 0, 0x11, 0, 0)
INSN(VMOVDQU8, "vmovdqu8", 1, 3, 0x6F, 0, 0)
INSN(VMOVDQU16, "vmovdqu16", 1, 3, 0x6F, 0, 1)
INSN(VMOVDQU32, "vmovdqu32", 1, 2, 0x6F, 0, 0)
INSN(VMOVDQU64, "vmovdqu64", 1, 2, 0x6F, 0, 1)
INSN_ST(VMOVDQU8_ST, "vmovdqu8", 1, 3, 0x7F, 0, 0)
INSN(VMOVQ_LD, "vmovq", 1, 2, 0x7E, 0, 1)
INSN_ST(VMOVQ_ST, "vmovq", 1, 1, 0xD6, 0, 1)
INSN(VMOVD_LD, "vmovd", 1, 1, 0x6E, 0, 0)
INSN_ST(VMOVD_ST, "vmovd", 1, 1, 0x7E, 0, 0)
INSN(VPBROADCASTB, "vpbroadcastb", 2, 1, 0x78, 0, 0)
INSN(VPBROADCASTW, "vpbroadcastw", 2, 1, 0x79, 0, 0)
INSN(VPBROADCASTD, "vpbroadcastd", 2, 1, 0x58, 0, 0)
INSN(VPBROADCASTQ, "vpbroadcastq", 2, 1, 0x59, 0, 1)
INSN(VPBROADCASTQ_GPR, "vpbroadcastq", 2, 1, 0x7C, 0, 1)
INSN_ST(VEXTRACTI64X4, "vextracti64x4", 3, 1, 0x3B, 0, 1)
INSN_ST(VEXTRACTI32X4, "vextracti32x4", 3, 1, 0x39, 0, 0)
INSN(VINSERTI64X4, "vinserti64x4", 3, 1, 0x3A, 0, 1)
INSN(VINSERTI32X4, "vinserti32x4", 3, 1, 0x38, 0, 0)
INSN(VPUNPCKLQDQ, "vpunpcklqdq", 1, 1, 0x6C, 0, 1)
INSN(VPBROADCASTD_GPR, "vpbroadcastd", 2, 1, 0x7C, 0, 0)
INSN(VGATHERDPS, "vgatherdps", 2, 1, 0x92, 0, 0)
INSN(VPSRLDQ, "vpsrldq", 1, 1, 0x73, 0, 0) /* /3 */
/* masks (VEX) */
INSN_K(KMOVW_LD, "kmovw", 1, 0, 0x90, 0, 0, 7)
static const x86_insn KMOVW_ST = {"kmovw", 1, 0, 0x91, 0, 0, true, 1};
INSN_K(KANDW, "kandw", 1, 0, 0x41, 0, 0, 7)
INSN_K(KORW, "korw", 1, 0, 0x45, 0, 0, 7)
INSN_K(KXORW, "kxorw", 1, 0, 0x47, 0, 0, 7)
INSN_K(KNOTW, "knotw", 1, 0, 0x44, 0, 0, 7)
INSN_K(KORTESTW, "kortestw", 1, 0, 0x98, 0, 0, 7)
INSN_K(KXNORW, "kxnorw", 1, 0, 0x46, 0, 0, 7)
INSN_K(KSHIFTRW, "kshiftrw", 3, 1, 0x30, 1, 1, 7)
INSN_K(KUNPCKBW, "kunpckbw", 1, 1, 0x4B, 0, 0, 7)
INSN_K(VPTESTMB, "vptestmb", 2, 1, 0x26, 0, 0, 1)
/* integers */
INSN(VPADDB, "vpaddb", 1, 1, 0xFC, 0, 0)
INSN(VPADDW, "vpaddw", 1, 1, 0xFD, 0, 0)
INSN(VPADDD, "vpaddd", 1, 1, 0xFE, 0, 0)
INSN(VPADDQ, "vpaddq", 1, 1, 0xD4, 0, 1)
INSN(VPSUBB, "vpsubb", 1, 1, 0xF8, 0, 0)
INSN(VPSUBW, "vpsubw", 1, 1, 0xF9, 0, 0)
INSN(VPSUBD, "vpsubd", 1, 1, 0xFA, 0, 0)
INSN(VPSUBQ, "vpsubq", 1, 1, 0xFB, 0, 1)
INSN(VPMULLW, "vpmullw", 1, 1, 0xD5, 0, 0)
INSN(VPMULLD, "vpmulld", 2, 1, 0x40, 0, 0)
INSN(VPMULLQ, "vpmullq", 2, 1, 0x40, 0, 1)
INSN(VPANDD, "vpandd", 1, 1, 0xDB, 0, 0)
INSN(VPANDND, "vpandnd", 1, 1, 0xDF, 0, 0)
INSN(VPORD, "vpord", 1, 1, 0xEB, 0, 0)
INSN(VPXORD, "vpxord", 1, 1, 0xEF, 0, 0)
INSN(VPTERNLOGD, "vpternlogd", 3, 1, 0x25, 0, 0)
INSN(VPSLLVW, "vpsllvw", 2, 1, 0x12, 0, 1)
INSN(VPSRLVW, "vpsrlvw", 2, 1, 0x10, 0, 1)
INSN(VPSRAVW, "vpsravw", 2, 1, 0x11, 0, 1)
INSN(VPSLLVD, "vpsllvd", 2, 1, 0x47, 0, 0)
INSN(VPSRLVD, "vpsrlvd", 2, 1, 0x45, 0, 0)
INSN(VPSRAVD, "vpsravd", 2, 1, 0x46, 0, 0)
INSN(VPSLLVQ, "vpsllvq", 2, 1, 0x47, 0, 1)
INSN(VPSRLVQ, "vpsrlvq", 2, 1, 0x45, 0, 1)
INSN(VPSRAVQ, "vpsravq", 2, 1, 0x46, 0, 1)
INSN_K(VPSHIFTW, "vpshiftw", 1, 1, 0x71, 0, 0, 8) /* /6 shl, /2 shrl, /4 shra */
INSN_K(VPSHIFTD, "vpshiftd", 1, 1, 0x72, 0, 0, 8) /* also /1 vprold */
INSN_K(VPSHIFTQ, "vpshiftq", 1, 1, 0x73, 0, 1, 8) /* /6, /2 */
INSN_K(VPSRAQI, "vpsraq", 1, 1, 0x72, 0, 1, 8)    /* /4; /1 vprolq */
INSN(VPMAXSB, "vpmaxsb", 2, 1, 0x3C, 0, 0)
INSN(VPMAXSW, "vpmaxsw", 1, 1, 0xEE, 0, 0)
INSN(VPMAXSD, "vpmaxsd", 2, 1, 0x3D, 0, 0)
INSN(VPMAXSQ, "vpmaxsq", 2, 1, 0x3D, 0, 1)
INSN(VPMAXUB, "vpmaxub", 1, 1, 0xDE, 0, 0)
INSN(VPMAXUW, "vpmaxuw", 2, 1, 0x3E, 0, 0)
INSN(VPMAXUD, "vpmaxud", 2, 1, 0x3F, 0, 0)
INSN(VPMAXUQ, "vpmaxuq", 2, 1, 0x3F, 0, 1)
INSN(VPMINSB, "vpminsb", 2, 1, 0x38, 0, 0)
INSN(VPMINSW, "vpminsw", 1, 1, 0xEA, 0, 0)
INSN(VPMINSD, "vpminsd", 2, 1, 0x39, 0, 0)
INSN(VPMINSQ, "vpminsq", 2, 1, 0x39, 0, 1)
INSN(VPMINUB, "vpminub", 1, 1, 0xDA, 0, 0)
INSN(VPMINUW, "vpminuw", 2, 1, 0x3A, 0, 0)
INSN(VPMINUD, "vpminud", 2, 1, 0x3B, 0, 0)
INSN(VPMINUQ, "vpminuq", 2, 1, 0x3B, 0, 1)
INSN(VPABSB, "vpabsb", 2, 1, 0x1C, 0, 0)
INSN(VPABSW, "vpabsw", 2, 1, 0x1D, 0, 0)
INSN(VPABSD, "vpabsd", 2, 1, 0x1E, 0, 0)
INSN(VPABSQ, "vpabsq", 2, 1, 0x1F, 0, 1)
INSN_K(VPCMPB, "vpcmpb", 3, 1, 0x3F, 0, 0, 1)
INSN_K(VPCMPW, "vpcmpw", 3, 1, 0x3F, 0, 1, 1)
INSN_K(VPCMPD, "vpcmpd", 3, 1, 0x1F, 0, 0, 1)
INSN_K(VPCMPQ, "vpcmpq", 3, 1, 0x1F, 0, 1, 1)
INSN_K(VPCMPUB, "vpcmpub", 3, 1, 0x3E, 0, 0, 1)
INSN_K(VPCMPUW, "vpcmpuw", 3, 1, 0x3E, 0, 1, 1)
INSN_K(VPCMPUD, "vpcmpud", 3, 1, 0x1E, 0, 0, 1)
INSN_K(VPCMPUQ, "vpcmpuq", 3, 1, 0x1E, 0, 1, 1)
INSN(VBLENDMPS, "vblendmps", 2, 1, 0x65, 0, 0)
INSN(VBLENDMPD, "vblendmpd", 2, 1, 0x65, 0, 1)
INSN(VPBLENDMB, "vpblendmb", 2, 1, 0x66, 0, 0)
INSN(VPBLENDMW, "vpblendmw", 2, 1, 0x66, 0, 1)
/* floats */
INSN(VADDPS, "vaddps", 1, 0, 0x58, 0, 0)
INSN(VADDPD, "vaddpd", 1, 1, 0x58, 0, 1)
INSN(VSUBPS, "vsubps", 1, 0, 0x5C, 0, 0)
INSN(VSUBPD, "vsubpd", 1, 1, 0x5C, 0, 1)
INSN(VMULPS, "vmulps", 1, 0, 0x59, 0, 0)
INSN(VMULPD, "vmulpd", 1, 1, 0x59, 0, 1)
INSN(VDIVPS, "vdivps", 1, 0, 0x5E, 0, 0)
INSN(VDIVPD, "vdivpd", 1, 1, 0x5E, 0, 1)
INSN(VSQRTPS, "vsqrtps", 1, 0, 0x51, 0, 0)
INSN(VSQRTPD, "vsqrtpd", 1, 1, 0x51, 0, 1)
INSN(VFMADD213PS, "vfmadd213ps", 2, 1, 0xA8, 0, 0)
INSN(VFMADD213PD, "vfmadd213pd", 2, 1, 0xA8, 1, 1)
INSN(VFMADD231PS, "vfmadd231ps", 2, 1, 0xB8, 0, 0)
INSN(VFMADD231PD, "vfmadd231pd", 2, 1, 0xB8, 1, 1)
INSN(VFMADD132PS, "vfmadd132ps", 2, 1, 0x98, 0, 0)
INSN(VFMADD132PD, "vfmadd132pd", 2, 1, 0x98, 1, 1)
INSN(VRNDSCALEPS, "vrndscaleps", 3, 1, 0x08, 0, 0)
INSN(VRNDSCALEPD, "vrndscalepd", 3, 1, 0x09, 0, 1)
INSN_K(VCMPPS, "vcmpps", 1, 0, 0xC2, 0, 0, 1)
INSN_K(VCMPPD, "vcmppd", 1, 1, 0xC2, 0, 1, 1)
/* conversions */
INSN(VCVTPS2PD, "vcvtps2pd", 1, 0, 0x5A, 0, 0)
INSN(VCVTPD2PS, "vcvtpd2ps", 1, 1, 0x5A, 0, 1)
INSN(VCVTDQ2PS, "vcvtdq2ps", 1, 0, 0x5B, 0, 0)
INSN(VCVTQQ2PD, "vcvtqq2pd", 1, 2, 0xE6, 0, 1)
INSN(VCVTDQ2PD, "vcvtdq2pd", 1, 2, 0xE6, 0, 0)
INSN(VCVTQQ2PS, "vcvtqq2ps", 1, 0, 0x5B, 0, 1)
INSN(VCVTUDQ2PS, "vcvtudq2ps", 1, 3, 0x7A, 0, 0)
INSN(VCVTUQQ2PD, "vcvtuqq2pd", 1, 2, 0x7A, 0, 1)
INSN(VCVTUDQ2PD, "vcvtudq2pd", 1, 2, 0x7A, 0, 0)
INSN(VCVTUQQ2PS, "vcvtuqq2ps", 1, 3, 0x7A, 0, 1)
INSN(VCVTTPS2DQ, "vcvttps2dq", 1, 2, 0x5B, 0, 0)
INSN(VCVTTPD2QQ, "vcvttpd2qq", 1, 1, 0x7A, 0, 1)
INSN(VCVTTPD2DQ, "vcvttpd2dq", 1, 1, 0xE6, 0, 1)
INSN(VCVTTPS2QQ, "vcvttps2qq", 1, 1, 0x7A, 0, 0)
/* sign / zero extension by (from size log2, to size log2); truncations by the same */
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
INSN_ST(VPMOVWB, "vpmovwb", 2, 2, 0x30, 0, 0)
INSN_ST(VPMOVDB, "vpmovdb", 2, 2, 0x31, 0, 0)
INSN_ST(VPMOVQB, "vpmovqb", 2, 2, 0x32, 0, 0)
INSN_ST(VPMOVDW, "vpmovdw", 2, 2, 0x33, 0, 0)
INSN_ST(VPMOVQW, "vpmovqw", 2, 2, 0x34, 0, 0)
INSN_ST(VPMOVQD, "vpmovqd", 2, 2, 0x35, 0, 0)

static int ll(int width) { return width >= 64 ? 2 : width >= 32 ? 1 : 0; }

/* dst = op(src1, src2) (src2 may be memory) */
static void V(cg_x86 *x, const x86_insn *in, int w, int dst, int src1, x86_rm src2, int imm) {
  x86_evex(&x->b, in, ll(w), dst, src1, src2, 0, false, imm);
}
/* masked: dst{k}{z} */
static void VK(cg_x86 *x, const x86_insn *in, int w, int dst, int src1, x86_rm src2, int k, bool z,
               int imm) {
  x86_evex(&x->b, in, ll(w), dst, src1, src2, k, z, imm);
}
/* two-operand forms (no vvvv): dst = op(src) */
static void V1(cg_x86 *x, const x86_insn *in, int w, int dst, x86_rm src, int imm) {
  x86_evex(&x->b, in, ll(w), dst, -1, src, 0, false, imm);
}
/* mask instructions (VEX, L given) */
static void K(cg_x86 *x, const x86_insn *in, int L, int dst, int src1, x86_rm src2, int imm) {
  x86_vex(&x->b, in, L, dst, src1, src2, imm);
}

static void vmov_rr(cg_x86 *x, int w, int dst, int src) {
  if (dst != src) V1(x, &VMOVUPS, w < 16 ? 16 : w, dst, x86_r(src), -1);
}

void cg_avx512_move(cg_x86 *x, int cls, int width, bool store, int reg, x86_mem m) {
  x86_rm rm = {true, 0, m};
  if (cls == CLS_MASK) {
    K(x, store ? &KMOVW_ST : &KMOVW_LD, 0, reg, -1, rm, -1);
  } else if (width >= 16) {
    V1(x, store ? &VMOVUPS_ST : &VMOVUPS, width, reg, rm, -1);
  } else if (width == 8) {
    V1(x, store ? &VMOVQ_ST : &VMOVQ_LD, 16, reg, rm, -1);
  } else {
    V1(x, store ? &VMOVD_ST : &VMOVD_LD, 16, reg, rm, -1);
  }
}

/* mask k <-> `lanes` bytes 0 / 1 at [rsp + off] */
void cg_avx512_pred_bytes(cg_x86 *x, int k, bool to_bytes, int32_t off) {
  int s = cg_x86_scratch(x, 3);
  x86_mem m = cg_x86_frame(off);
  if (to_bytes) {
    VK(x, &VMOVDQU8, 16, s, -1, x86_pool(cg_x86_pool_splat(x, 1, 1)), k, true, -1);
    cg_avx512_move(x, CLS_VEC, x->lanes, true, s, m);
  } else {
    cg_avx512_move(x, CLS_VEC, x->lanes, false, s, m);
    V(x, &VPTESTMB, 16, k, s, x86_r(s), -1);
  }
}

/* ---- instruction choice per type */

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
    case CG_MUL: return by_size(t, NULL, &VPMULLW, &VPMULLD, &VPMULLQ);
    case CG_AND: return &VPANDD;
    case CG_OR: return &VPORD;
    case CG_XOR: return &VPXORD;
    case CG_ANDN: return &VPANDND;
    case CG_SHL: return by_size(t, NULL, &VPSLLVW, &VPSLLVD, &VPSLLVQ);
    case CG_SHRL: return by_size(t, NULL, &VPSRLVW, &VPSRLVD, &VPSRLVQ);
    case CG_SHRA: return by_size(t, NULL, &VPSRAVW, &VPSRAVD, &VPSRAVQ);
    case CG_MAXS: return by_size(t, &VPMAXSB, &VPMAXSW, &VPMAXSD, &VPMAXSQ);
    case CG_MAXU: return by_size(t, &VPMAXUB, &VPMAXUW, &VPMAXUD, &VPMAXUQ);
    case CG_MINS: return by_size(t, &VPMINSB, &VPMINSW, &VPMINSD, &VPMINSQ);
    case CG_MINU: return by_size(t, &VPMINUB, &VPMINUW, &VPMINUD, &VPMINUQ);
    default: return NULL;
  }
}

/* immediate shifts: instruction and /digit */
static bool shift_imm(cg_opc op, cg_type t, const x86_insn **in, int *digit) {
  int sz = cg_type_size(t);
  *in = NULL;
  switch (op) {
    case CG_SHLI: *digit = 6; *in = sz == 2 ? &VPSHIFTW : sz == 4 ? &VPSHIFTD : sz == 8 ? &VPSHIFTQ : NULL; break;
    case CG_SHRLI: *digit = 2; *in = sz == 2 ? &VPSHIFTW : sz == 4 ? &VPSHIFTD : sz == 8 ? &VPSHIFTQ : NULL; break;
    case CG_SHRAI: *digit = 4; *in = sz == 2 ? &VPSHIFTW : sz == 4 ? &VPSHIFTD : sz == 8 ? &VPSRAQI : NULL; break;
    case CG_ROTLI: *digit = 1; *in = sz == 4 ? &VPSHIFTD : sz == 8 ? &VPSRAQI : NULL; break;
    default: break;
  }
  return *in != NULL;
}

static const x86_insn *cvt_insn(cg_cvt_kind how, cg_type from, cg_type to) {
  int fs = cg_type_size(from), ts = cg_type_size(to);
  switch (how) {
    case CG_CVT_FLOAT:
      return from == CG_F32 && to == CG_F64 ? &VCVTPS2PD : from == CG_F64 && to == CG_F32 ? &VCVTPD2PS : NULL;
    case CG_CVT_S2F:
      if (to == CG_F32) return fs == 4 ? &VCVTDQ2PS : fs == 8 ? &VCVTQQ2PS : NULL;
      if (to == CG_F64) return fs == 4 ? &VCVTDQ2PD : fs == 8 ? &VCVTQQ2PD : NULL;
      return NULL;
    case CG_CVT_U2F:
      if (to == CG_F32) return fs == 4 ? &VCVTUDQ2PS : fs == 8 ? &VCVTUQQ2PS : NULL;
      if (to == CG_F64) return fs == 4 ? &VCVTUDQ2PD : fs == 8 ? &VCVTUQQ2PD : NULL;
      return NULL;
    case CG_CVT_F2S_TRUNC:
      if (from == CG_F32) return ts == 4 ? &VCVTTPS2DQ : ts == 8 ? &VCVTTPS2QQ : NULL;
      if (from == CG_F64) return ts == 4 ? &VCVTTPD2DQ : ts == 8 ? &VCVTTPD2QQ : NULL;
      return NULL;
    case CG_CVT_SEXT: case CG_CVT_ZEXT: {
      bool s = how == CG_CVT_SEXT;
      if (fs == 1) return ts == 2 ? (s ? &VPMOVSXBW : &VPMOVZXBW) : ts == 4 ? (s ? &VPMOVSXBD : &VPMOVZXBD) : ts == 8 ? (s ? &VPMOVSXBQ : &VPMOVZXBQ) : NULL;
      if (fs == 2) return ts == 4 ? (s ? &VPMOVSXWD : &VPMOVZXWD) : ts == 8 ? (s ? &VPMOVSXWQ : &VPMOVZXWQ) : NULL;
      if (fs == 4) return ts == 8 ? (s ? &VPMOVSXDQ : &VPMOVZXDQ) : NULL;
      return NULL;
    }
    case CG_CVT_TRUNC:
      if (fs == 2) return ts == 1 ? &VPMOVWB : NULL;
      if (fs == 4) return ts == 1 ? &VPMOVDB : ts == 2 ? &VPMOVDW : NULL;
      if (fs == 8) return ts == 1 ? &VPMOVQB : ts == 2 ? &VPMOVQW : ts == 4 ? &VPMOVQD : NULL;
      return NULL;
    default: return NULL;
  }
}

static bool avx512_native(const cg_region *r, const cg_node *n, int lanes) {
  /* a: the operand type of a CMP or CVT, from the node (cg_finish lets the operand be a
   * same-size value of another type, a bitcast's source) */
  cg_type t = (cg_type)n->type, a = (cg_type)n->atype;
  if (lanes > 16) return false;
  switch (n->op) {
    case CG_LOAD: case CG_SCALAR: case CG_CONST: case CG_STORE: case CG_BITCAST: case CG_SELECT:
    case CG_CALL: case CG_CALL_CONVERT:
      return true;
    case CG_CALL_IF: return true;
    case CG_INDEX: return t == CG_I64 || t == CG_I32;
    case CG_LANE: return t == CG_I32;
    case CG_XLOAD: return t == CG_F32 && (n->nin == 0 || r->v[n->in[0]].type == CG_I32);
    case CG_ACC: return t == CG_F64;
    case CG_ADD: case CG_SUB: case CG_MUL: case CG_SHL: case CG_SHRL: case CG_SHRA:
    case CG_MAXS: case CG_MAXU: case CG_MINS: case CG_MINU:
      return cg_is_int(t) && int_insn((cg_opc)n->op, t);
    case CG_AND: case CG_OR: case CG_XOR: case CG_ANDN: case CG_NOT:
      return t != CG_PRED;
    case CG_ABS: return cg_is_int(t);
    case CG_SHLI: case CG_SHRLI: case CG_SHRAI: case CG_ROTLI: {
      const x86_insn *in;
      int dg;
      return cg_is_int(t) && shift_imm((cg_opc)n->op, t, &in, &dg);
    }
    case CG_FADD: case CG_FSUB: case CG_FMUL: case CG_FDIV: case CG_FSQRT: case CG_FMA:
    case CG_FROUND:
      return cg_is_float(t);
    case CG_CMP: return n->atype != CG_PRED;
    case CG_PAND: case CG_POR: case CG_PXOR: case CG_PNOT: return t == CG_PRED;
    case CG_CVT:
      if (n->imm == CG_CVT_PRED2I) return a == CG_PRED && cg_is_int(t);
      return cvt_insn((cg_cvt_kind)n->imm, a, t) != NULL;
    default: return false;
  }
}

/* ---- emission */

static void emit_load(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type t = (cg_type)n->type;
  if (t == CG_PRED) {
    int s = cg_x86_scratch(x, 0);
    cg_avx512_move(x, CLS_VEC, x->lanes, false, s, cg_x86_elem(x, n->reg, 1, 0, x->lanes));
    V(x, &VPTESTMB, 16, cg_x86_dst(x, i, 0), s, x86_r(s), -1);
    return;
  }
  int w = cg_x86_width(x, t), parts = cg_x86_parts(x, t);
  for (int p = 0; p < parts; p++)
    cg_avx512_move(x, CLS_VEC, w, false, cg_x86_dst(x, i, p), cg_x86_elem(x, n->reg, cg_type_size(t), p, w));
}

static void emit_store(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type t = (cg_type)x->r->v[n->in[0]].type;
  if (n->reg == CG_NEST_OUT) { /* a nest's sums, to the staging buffer */
    int w = cg_x86_width(x, t), r = cg_x86_opnd_reg(x, i, 0, 0, 0);
    cg_avx512_move(x, CLS_VEC, w, true, r, cg_x86_nest_out(x, (int32_t)n->imm * cg_type_size(t)));
    return;
  }
  if (t == CG_PRED) {
    int k = cg_x86_opnd_mask(x, i, 0, 0), s = cg_x86_scratch(x, 0);
    VK(x, &VMOVDQU8, 16, s, -1, x86_pool(cg_x86_pool_splat(x, 1, 1)), k, true, -1);
    if (x->lanes == 16)
      V1(x, &VMOVDQU8_ST, 16, s, (x86_rm){true, 0, cg_x86_elem(x, n->reg, 1, 0, 16)}, -1);
    else
      cg_avx512_move(x, CLS_VEC, x->lanes, true, s, cg_x86_elem(x, n->reg, 1, 0, x->lanes));
    return;
  }
  int w = cg_x86_width(x, t), parts = cg_x86_parts(x, t);
  for (int p = 0; p < parts; p++) {
    int r = cg_x86_opnd_reg(x, i, 0, p, 0);
    cg_avx512_move(x, CLS_VEC, w, true, r, cg_x86_elem(x, n->reg, cg_type_size(t), p, w));
  }
}

static void emit_scalar(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type t = (cg_type)n->type;
  x86_mov_load(&x->b, R11, (x86_mem){R14, X86_NOREG, 1, (int32_t)(8 * n->reg), -1, 0});
  x86_rm src = x86_m(R11, X86_NOREG, 1, 0);
  if (t == CG_PRED) {
    int s = cg_x86_scratch(x, 0);
    V1(x, &VPBROADCASTB, 16, s, src, -1);
    V(x, &VPTESTMB, 16, cg_x86_dst(x, i, 0), s, x86_r(s), -1);
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
    int32_t lanes[16];
    for (int l = 0; l < 16; l++) lanes[l] = l;
    V1(x, &VPBROADCASTD_GPR, w, d, x86_r(R11), -1);
    V(x, &VPADDD, w, d, d, x86_pool(cg_x86_pool(x, lanes, 4, w)), -1);
    return;
  }
  int w = cg_x86_width(x, CG_I64), parts = cg_x86_parts(x, CG_I64), per = w / 8;
  for (int p = 0; p < parts; p++) {
    int64_t lanes[8];
    for (int l = 0; l < 8; l++) lanes[l] = p * per + (l < per ? l : 0);
    int e = cg_x86_pool(x, lanes, 8, 64 > x->isa->vl ? x->isa->vl : 64);
    int d = cg_x86_dst(x, i, p);
    V1(x, &VPBROADCASTQ_GPR, w, d, x86_r(R11), -1);
    V(x, &VPADDQ, w, d, d, x86_pool(e), -1);
  }
}

/* nests: the V lanes of the block, v0 + lane clamped to the last v */
static void emit_lane(cg_x86 *x, uint32_t i) {
  int w = cg_x86_width(x, CG_I32), d = cg_x86_dst(x, i, 0), s = cg_x86_scratch(x, 0);
  int32_t lanes[16];
  for (int l = 0; l < 16; l++) lanes[l] = l;
  x86_mov_load(&x->b, R11, cg_x86_at(RBX, (int32_t)offsetof(av_cg_nest_args, v0)));
  V1(x, &VPBROADCASTD_GPR, w, d, x86_r(R11), -1);
  V(x, &VPADDD, w, d, d, x86_pool(cg_x86_pool(x, lanes, 4, w)), -1);
  x86_mov_load(&x->b, R11, cg_x86_at(RBX, (int32_t)offsetof(av_cg_nest_args, vlast)));
  V1(x, &VPBROADCASTD_GPR, w, s, x86_r(R11), -1);
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
  int g = d == idx ? cg_x86_scratch(x, 1) : d; /* a gather's destination is not its index */
  K(x, &KXNORW, 1, 7, 7, x86_r(7), -1);      /* every lane: the gather clears its mask */
  x86_evex(&x->b, &VGATHERDPS, ll(w), g, -1, x86_vsib(base, idx, 4, disp), 7, false, -1);
  vmov_rr(x, w, d, g);
}

static void avx512_vmov(cg_x86 *x, int width, int dst, int src) { vmov_rr(x, width, dst, src); }
static void avx512_fadd64(cg_x86 *x, int width, int dst, x86_rm src) { V(x, &VADDPD, width, dst, dst, src, -1); }

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

static void emit_cmp(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type a = (cg_type)n->atype;
  int how = (int)(n->imm & 15);
  bool uns = (n->imm & CG_CMP_UNSIGNED) != 0;
  const x86_insn *in;
  int imm;
  if (cg_is_float(a)) {
    static const int fimm[8] = {0x00, 0x04, 0x11, 0x12, 0x1E, 0x1D, 0x03, 0x07};
    in = a == CG_F64 ? &VCMPPD : &VCMPPS;
    imm = fimm[how];
  } else {
    static const int iimm[6] = {0, 4, 1, 2, 6, 5};
    in = uns ? by_size(a, &VPCMPUB, &VPCMPUW, &VPCMPUD, &VPCMPUQ) : by_size(a, &VPCMPB, &VPCMPW, &VPCMPD, &VPCMPQ);
    imm = iimm[how < 6 ? how : 0];
  }
  int w = cg_x86_width(x, a), parts = cg_x86_parts(x, a), dst = cg_x86_dst(x, i, 0);
  if (parts == 1) {
    V(x, in, w, dst, cg_x86_opnd_reg(x, i, 0, 0, 0), cg_x86_opnd(x, i, 1, 0), imm);
    return;
  }
  V(x, in, w, 6, cg_x86_opnd_reg(x, i, 0, 0, 0), cg_x86_opnd(x, i, 1, 0), imm);
  V(x, in, w, 7, cg_x86_opnd_reg(x, i, 0, 1, 0), cg_x86_opnd(x, i, 1, 1), imm);
  K(x, &KUNPCKBW, 1, dst, 7, x86_r(6), -1);
}

/* the mask of part p of a predicate read by a `parts`-part operation */
static int part_mask(cg_x86 *x, int k, int p, int lanes_per_part) {
  if (p == 0) return k;
  int s = k == 7 ? 6 : 7;
  K(x, &KSHIFTRW, 0, s, -1, x86_r(k), p * lanes_per_part);
  return s;
}

static void emit_select(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type t = (cg_type)n->type;
  int w = cg_x86_width(x, t), parts = cg_x86_parts(x, t);
  const x86_insn *in = by_size(t, &VPBLENDMB, &VPBLENDMW, &VBLENDMPS, &VBLENDMPD);
  int k = cg_x86_opnd_mask(x, i, 0, 0);
  for (int p = 0; p < parts; p++) {
    int kp = part_mask(x, k, p, w / cg_type_size(t));
    /* dst = k ? a : b */
    VK(x, in, w, cg_x86_dst(x, i, p), cg_x86_opnd_reg(x, i, 2, p, 0), cg_x86_opnd(x, i, 1, p), kp, false, -1);
  }
}

static void emit_mask_op(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  int dst = cg_x86_dst(x, i, 0), a = cg_x86_opnd_mask(x, i, 0, 0);
  if (n->op == CG_PNOT) {
    K(x, &KNOTW, 0, dst, -1, x86_r(a), -1);
    return;
  }
  int b = cg_x86_opnd_mask(x, i, 1, 1);
  const x86_insn *in = n->op == CG_PAND ? &KANDW : n->op == CG_POR ? &KORW : &KXORW;
  K(x, in, 1, dst, a, x86_r(b), -1);
}

/* The source lanes [first, first + count) of a widening conversion, moved down to the bottom
 * of a register: `src` itself when they start there, else scratch register `scratch`. `w` is
 * the source part's width. */
static int chunk_of(cg_x86 *x, int src, int w, int fs, int first, int count, int scratch) {
  int off = first * fs, bytes = count * fs;
  if (off == 0) return src;
  int s = cg_x86_scratch(x, scratch);
  if (off == 32 && bytes == 32) {
    x86_evex(&x->b, &VEXTRACTI64X4, 2, src, -1, x86_r(s), 0, false, 1);
    return s;
  }
  int reg = src;
  if (off >= 16) {
    x86_evex(&x->b, &VEXTRACTI32X4, ll(w), reg, -1, x86_r(s), 0, false, off / 16);
    reg = s;
  }
  if (off % 16) x86_evex(&x->b, &VPSRLDQ, 0, 3, s, x86_r(reg), 0, false, off % 16);
  return s;
}

static void emit_cvt(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  cg_type from = (cg_type)n->atype, to = (cg_type)n->type;
  int wt = cg_x86_width(x, to), pt = cg_x86_parts(x, to);
  if (n->imm == CG_CVT_PRED2I) {
    int k = cg_x86_opnd_mask(x, i, 0, 0);
    int one = cg_x86_pool_splat(x, 1, cg_type_size(to));
    const x86_insn *mv = by_size(to, &VMOVDQU8, &VMOVDQU16, &VMOVDQU32, &VMOVDQU64);
    for (int p = 0; p < pt; p++)
      VK(x, mv, wt, cg_x86_dst(x, i, p), -1, x86_pool(one), part_mask(x, k, p, wt / cg_type_size(to)), true, -1);
    return;
  }
  const x86_insn *in = cvt_insn((cg_cvt_kind)n->imm, from, to);
  bool narrow_form = n->imm == CG_CVT_TRUNC; /* vpmov*: reg = source, rm = destination */
  int fs = cg_type_size(from), ts = cg_type_size(to);
  int wf = cg_x86_width(x, from), pf = cg_x86_parts(x, from);
  if (ts == fs) { /* part by part */
    for (int p = 0; p < pt; p++) V1(x, in, wt, cg_x86_dst(x, i, p), cg_x86_opnd(x, i, 0, p), -1);
    return;
  }
  if (ts > fs) { /* widening (the source has one part): destination part p from source lanes
                    [p * per, (p + 1) * per) */
    int per = wt / ts;
    bool splat = cg_x86_opnd(x, i, 0, 0).mem;
    int src = cg_x86_opnd_reg(x, i, 0, 0, 0);
    if (pt > 1 && src == cg_x86_dst(x, i, 1)) { /* part 1 is written first: keep the source */
      vmov_rr(x, wf, cg_x86_scratch(x, 2), src);
      src = cg_x86_scratch(x, 2);
    }
    for (int p = pt; p-- > 0;) { /* last part first: part 0 may take the source's register */
      int c = chunk_of(x, src, wf, fs, splat ? 0 : p * per, per, 1);
      V1(x, in, wt, cg_x86_dst(x, i, p), x86_r(c), -1);
    }
    return;
  }
  /* narrowing: source part q gives wf / fs lanes at byte offset q * chunk */
  int dst = cg_x86_dst(x, i, 0), chunk = (wf / fs) * ts;
  int s = cg_x86_scratch(x, 1);
  if (pf == 2) { /* part 1 first: dst may be part 1's register */
    int src1 = cg_x86_opnd_reg(x, i, 0, 1, 0);
    if (narrow_form)
      x86_evex(&x->b, in, ll(wf), src1, -1, x86_r(s), 0, false, -1);
    else
      V1(x, in, wf, s, x86_r(src1), -1);
  }
  int src0 = cg_x86_opnd_reg(x, i, 0, 0, 0);
  if (narrow_form)
    x86_evex(&x->b, in, ll(wf), src0, -1, x86_r(dst), 0, false, -1);
  else
    V1(x, in, wf, dst, x86_r(src0), -1);
  if (pf == 2) {
    if (chunk == 32)
      V(x, &VINSERTI64X4, 64, dst, dst, x86_r(s), 1);
    else if (chunk == 16)
      V(x, &VINSERTI32X4, 32, dst, dst, x86_r(s), 1);
    else
      V(x, &VPUNPCKLQDQ, 16, dst, dst, x86_r(s), -1);
  }
}

static void emit_call_if(cg_x86 *x, uint32_t i) {
  int k = cg_x86_opnd_mask(x, i, 0, 0);
  K(x, &KORTESTW, 0, k, -1, x86_r(k), -1);
  uint32_t to_fast = x86_jump(&x->b, 0x4); /* je: no lane set */
  cg_x86_call(x, i, 1, 1);
  uint32_t to_done = x86_jump(&x->b, -1);
  x86_patch_jump(&x->b, to_fast, (uint32_t)x->b.n);
  const cg_node *n = &x->r->v[i];
  int w = cg_x86_width(x, (cg_type)n->type), parts = cg_x86_parts(x, (cg_type)n->type);
  for (int p = 0; p < parts; p++) {
    x86_rm f = cg_x86_opnd(x, i, 2, p);
    if (f.mem)
      cg_avx512_move(x, CLS_VEC, w, false, cg_x86_dst(x, i, p), f.m);
    else
      vmov_rr(x, w, cg_x86_dst(x, i, p), f.reg);
  }
  x86_patch_jump(&x->b, to_done, (uint32_t)x->b.n);
}

static void avx512_emit(cg_x86 *x, uint32_t i) {
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
    case CG_CONST: /* only reached for constants needed in registers: never (pool operands) */
      for (int p = 0; p < parts; p++)
        cg_avx512_move(x, CLS_VEC, w, false, cg_x86_dst(x, i, p),
                       (x86_mem){X86_NOREG, X86_NOREG, 1, 0, cg_x86_pool_splat(x, n->imm, cg_type_size(t)), 0});
      return;
    case CG_BITCAST:
      if (t == CG_PRED || n->atype == CG_PRED) return; /* not produced */
      for (int p = 0; p < parts; p++) {
        x86_rm s = cg_x86_opnd(x, i, 0, p);
        if (s.mem)
          cg_avx512_move(x, CLS_VEC, w, false, cg_x86_dst(x, i, p), s.m);
        else
          vmov_rr(x, w, cg_x86_dst(x, i, p), s.reg);
      }
      return;
    case CG_FADD: case CG_FSUB: case CG_FMUL: case CG_FDIV:
      emit_binary(x, i, float_insn((cg_opc)n->op, t));
      return;
    case CG_FSQRT:
      for (int p = 0; p < parts; p++)
        V1(x, float_insn(CG_FSQRT, t), w, cg_x86_dst(x, i, p), cg_x86_opnd(x, i, 0, p), -1);
      return;
    case CG_FMA: emit_fma(x, i); return;
    case CG_FROUND:
      for (int p = 0; p < parts; p++)
        V1(x, t == CG_F64 ? &VRNDSCALEPD : &VRNDSCALEPS, w, cg_x86_dst(x, i, p), cg_x86_opnd(x, i, 0, p),
           (int)(n->imm & 3) | 8);
      return;
    case CG_ADD: case CG_SUB: case CG_MUL: case CG_AND: case CG_OR: case CG_XOR: case CG_ANDN:
    case CG_SHL: case CG_SHRL: case CG_SHRA: case CG_MAXS: case CG_MAXU: case CG_MINS: case CG_MINU:
      emit_binary(x, i, int_insn((cg_opc)n->op, t));
      return;
    case CG_NOT:
      for (int p = 0; p < parts; p++) {
        int a = cg_x86_opnd_reg(x, i, 0, p, 0);
        V(x, &VPTERNLOGD, w, cg_x86_dst(x, i, p), a, x86_r(a), 0x55);
      }
      return;
    case CG_ABS:
      for (int p = 0; p < parts; p++)
        V1(x, by_size(t, &VPABSB, &VPABSW, &VPABSD, &VPABSQ), w, cg_x86_dst(x, i, p), cg_x86_opnd(x, i, 0, p), -1);
      return;
    case CG_SHLI: case CG_SHRLI: case CG_SHRAI: case CG_ROTLI: {
      const x86_insn *in;
      int digit;
      shift_imm((cg_opc)n->op, t, &in, &digit);
      for (int p = 0; p < parts; p++)
        x86_evex(&x->b, in, ll(w), digit, cg_x86_dst(x, i, p), cg_x86_opnd(x, i, 0, p), 0, false, (int)n->imm);
      return;
    }
    case CG_CMP: emit_cmp(x, i); return;
    case CG_PAND: case CG_POR: case CG_PXOR: case CG_PNOT: emit_mask_op(x, i); return;
    case CG_SELECT: emit_select(x, i); return;
    case CG_CVT: emit_cvt(x, i); return;
    case CG_CALL: cg_x86_call(x, i, 0, n->nin); return;
    case CG_CALL_CONVERT: cg_x86_call(x, i, 0, 1); return;
    case CG_CALL_IF: emit_call_if(x, i); return;
    default: x->failed = true; return;
  }
}

/* k6 = the AND of the conditions; kortest sets CF when all 16 lanes are */
static uint32_t avx512_jump_unless_all(cg_x86 *x, const uint32_t *conds, int n) {
  for (int q = 0; q < n; q++) {
    int k = cg_x86_mask_of(x, conds[q], 1);
    if (q == 0)
      K(x, &KMOVW_LD, 0, 6, -1, x86_r(k), -1);
    else
      K(x, &KANDW, 1, 6, 6, x86_r(k), -1);
  }
  K(x, &KORTESTW, 0, 6, -1, x86_r(6), -1);
  return x86_jump(&x->b, 0x3); /* jae: CF clear */
}

const cg_isa cg_isa_avx512 = {
    .name = "avx512",
    .vl = 64,
    .nvec = 28,
    .nmask = 5,
    .vscratch0 = 28,
    .pred_in_mask = true,
    .native = avx512_native,
    .emit = avx512_emit,
    .vmov = avx512_vmov,
    .fadd64 = avx512_fadd64,
    .jump_unless_all = avx512_jump_unless_all,
};
