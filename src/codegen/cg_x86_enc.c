/* x86-64 encoding (see cg_x86_enc.h). */
#include "codegen/cg_x86_enc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(x86_buf *b, size_t more) {
  if (b->failed) return false;
  if (b->n + more <= b->cap) return true;
  size_t cap = b->cap ? 2 * b->cap : 4096;
  while (cap < b->n + more) cap *= 2;
  uint8_t *np = realloc(b->p, cap);
  if (!np) {
    b->failed = true;
    return false;
  }
  b->p = np;
  b->cap = cap;
  return true;
}

void x86_byte(x86_buf *b, uint8_t v) {
  if (reserve(b, 1)) b->p[b->n++] = v;
}

void x86_u32(x86_buf *b, uint32_t v) {
  for (int i = 0; i < 4; i++) x86_byte(b, (uint8_t)(v >> (8 * i)));
}

static void u64(x86_buf *b, uint64_t v) {
  for (int i = 0; i < 8; i++) x86_byte(b, (uint8_t)(v >> (8 * i)));
}

void x86_buf_free(x86_buf *b) {
  free(b->p);
  free(b->fix);
  free(b->text);
  memset(b, 0, sizeof *b);
}

/* ---- listing */

static void text_add(x86_buf *b, const char *s) {
  size_t len = strlen(s);
  if (b->ntext + len + 2 > b->captext) {
    size_t cap = b->captext ? 2 * b->captext : 8192;
    while (cap < b->ntext + len + 2) cap *= 2;
    char *nt = realloc(b->text, cap);
    if (!nt) {
      b->failed = true;
      return;
    }
    b->text = nt;
    b->captext = cap;
  }
  memcpy(b->text + b->ntext, s, len);
  b->ntext += len;
  b->text[b->ntext] = 0;
}

void x86_note(x86_buf *b, const char *fmt, ...) {
  if (!b->captext) return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  text_add(b, "                ; ");
  text_add(b, line);
  text_add(b, "\n");
}

static const char *const gpr_names[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                          "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};

const char *x86_vname(int width, int reg, char buf[12]) {
  snprintf(buf, 12, "%s%d", width >= 64 ? "zmm" : width >= 32 ? "ymm" : "xmm", reg & 31);
  return buf;
}

static void fmt_mem(char *out, size_t cap, x86_mem m) {
  if (m.pool >= 0) {
    snprintf(out, cap, "[rip+const%d]", m.pool);
    return;
  }
  char idx[24] = "";
  if (m.vindex1) snprintf(idx, sizeof idx, "+v%d*%d", m.vindex1 - 1, m.scale);
  else if (m.index != X86_NOREG) snprintf(idx, sizeof idx, "+%s*%d", gpr_names[m.index], m.scale);
  snprintf(out, cap, "[%s%s%+d]", m.base == X86_NOREG ? "" : gpr_names[m.base], idx, m.disp);
}

/* "name v1, v2, rm, imm" for a vector instruction of width bytes `w` (masks print as k). */
static void list_vec(x86_buf *b, const x86_insn *in, int w, int reg, int vvvv, x86_rm rm, int imm,
                     int aaa, bool z) {
  if (!b->captext) return;
  char line[160], rms[64], extra[32] = "", n1[12], n2[12], n3[12];
  if (rm.mem)
    fmt_mem(rms, sizeof rms, rm.m);
  else
    snprintf(rms, sizeof rms, "%s", in->k & 4 ? (snprintf(n1, sizeof n1, "k%d", rm.reg), n1) : x86_vname(w, rm.reg, n1));
  if (aaa) snprintf(extra, sizeof extra, "{k%d}%s", aaa, z ? "{z}" : "");
  char v[16] = "";
  if (vvvv >= 0) snprintf(v, sizeof v, "%s, ", in->k & 2 ? (snprintf(n2, sizeof n2, "k%d", vvvv), n2) : x86_vname(w, vvvv, n2));
  if (in->k & 1) snprintf(n3, sizeof n3, "k%d", reg);
  char im[16] = "";
  if (imm >= 0) snprintf(im, sizeof im, ", 0x%x", imm);
  const char *rn = in->k & 1 ? n3 : x86_vname(w, reg, n3);
  if (in->k & 8) { /* the reg field is an opcode extension (/digit): "vpshiftq/2 dst, src, imm" */
    char name[32];
    snprintf(name, sizeof name, "%s/%d", in->name, reg);
    snprintf(line, sizeof line, "  %-14s %s%s%s%s\n", name, v, rms, extra, im);
    text_add(b, line);
    return;
  }
  if (in->rm_dst)
    snprintf(line, sizeof line, "  %-14s %s%s, %s%s%s\n", in->name, rms, extra, v, rn, im);
  else
    snprintf(line, sizeof line, "  %-14s %s%s, %s%s%s\n", in->name, rn, extra, v, rms, im);
  text_add(b, line);
}

static void list_line(x86_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void list_line(x86_buf *b, const char *fmt, ...) {
  if (!b->captext) return;
  char line[160];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(line + 2, sizeof line - 3, fmt, ap);
  va_end(ap);
  line[0] = line[1] = ' ';
  size_t len = k < 0 ? 2 : (size_t)k + 2 < sizeof line - 1 ? (size_t)k + 2 : sizeof line - 2;
  line[len] = '\n';
  line[len + 1] = 0;
  text_add(b, line);
}

/* ---- ModRM / SIB / displacement */

/* Emits ModRM (+SIB, displacement) for `reg` (low 3 bits used) and rm; for RIP operands the
 * fixup is recorded, its end set by finish_insn. force32: displacements never use disp8
 * (EVEX compresses disp8 by the operand size; disp32 is exact). */
static void modrm(x86_buf *b, int reg, x86_rm rm, bool force32) {
  reg &= 7;
  if (!rm.mem) {
    x86_byte(b, (uint8_t)(0xC0 | reg << 3 | (rm.reg & 7)));
    return;
  }
  x86_mem m = rm.m;
  if (m.pool >= 0) {
    x86_byte(b, (uint8_t)(reg << 3 | 5));
    if (b->nfix == b->capfix) {
      uint32_t cap = b->capfix ? 2 * b->capfix : 64;
      struct x86_fixup *nf = realloc(b->fix, cap * sizeof *nf);
      if (!nf) {
        b->failed = true;
        return;
      }
      b->fix = nf;
      b->capfix = cap;
    }
    b->fix[b->nfix++] = (struct x86_fixup){(uint32_t)b->n, 0, (uint32_t)m.pool};
    x86_u32(b, 0);
    return;
  }
  int base = m.base & 7;
  bool need_sib = m.index != X86_NOREG || m.vindex1 || base == RSP;
  int mod;
  if (m.disp == 0 && base != RBP)
    mod = 0;
  else if (!force32 && m.disp >= -128 && m.disp <= 127)
    mod = 1;
  else
    mod = 2;
  x86_byte(b, (uint8_t)(mod << 6 | reg << 3 | (need_sib ? 4 : base)));
  if (need_sib) {
    int ss = m.scale == 8 ? 3 : m.scale == 4 ? 2 : m.scale == 2 ? 1 : 0;
    int idx = m.vindex1 ? ((m.vindex1 - 1) & 7) : m.index == X86_NOREG ? 4 : (m.index & 7);
    x86_byte(b, (uint8_t)(ss << 6 | idx << 3 | base));
  }
  if (mod == 1)
    x86_byte(b, (uint8_t)(int8_t)m.disp);
  else if (mod == 2)
    x86_u32(b, (uint32_t)m.disp);
}

/* Closes an instruction: a RIP fixup made by it gets the instruction's end. */
static void finish_insn(x86_buf *b, uint32_t fix_before) {
  for (uint32_t i = fix_before; i < b->nfix; i++) b->fix[i].end = (uint32_t)b->n;
}

static int hi(int r) { return r >= 0 ? (r >> 3) & 1 : 0; }

void x86_vex(x86_buf *b, const x86_insn *in, int L, int reg, int vvvv, x86_rm rm, int imm) {
  uint32_t f0 = b->nfix;
  int R = hi(reg), X = rm.mem ? hi(rm.m.vindex1 ? rm.m.vindex1 - 1 : rm.m.index) : 0,
      B = rm.mem ? (rm.m.pool >= 0 ? 0 : hi(rm.m.base)) : hi(rm.reg);
  int v = vvvv < 0 ? 0 : vvvv;
  int W = in->wv;
  if (in->map == 1 && W == 0 && X == 0 && B == 0) {
    x86_byte(b, 0xC5);
    x86_byte(b, (uint8_t)((!R) << 7 | (~v & 15) << 3 | L << 2 | in->pp));
  } else {
    x86_byte(b, 0xC4);
    x86_byte(b, (uint8_t)((!R) << 7 | (!X) << 6 | (!B) << 5 | in->map));
    x86_byte(b, (uint8_t)(W << 7 | (~v & 15) << 3 | L << 2 | in->pp));
  }
  x86_byte(b, in->opc);
  modrm(b, reg, rm, false);
  if (imm >= 0) x86_byte(b, (uint8_t)imm);
  finish_insn(b, f0);
  list_vec(b, in, L ? 32 : 16, reg, vvvv, rm, imm, 0, false);
}

void x86_evex(x86_buf *b, const x86_insn *in, int LL, int reg, int vvvv, x86_rm rm, int aaa,
              bool z, int imm) {
  uint32_t f0 = b->nfix;
  int R = hi(reg), R2 = reg >= 0 ? (reg >> 4) & 1 : 0;
  int X, B;
  if (rm.mem) {
    X = hi(rm.m.vindex1 ? rm.m.vindex1 - 1 : rm.m.index);
    B = rm.m.pool >= 0 ? 0 : hi(rm.m.base);
  } else {
    B = (rm.reg >> 3) & 1;
    X = (rm.reg >> 4) & 1;
  }
  int v = vvvv < 0 ? 0 : vvvv;
  if (rm.mem && rm.m.vindex1) v = (rm.m.vindex1 - 1) & 16; /* VSIB: EVEX.V' extends the index */
  x86_byte(b, 0x62);
  x86_byte(b, (uint8_t)((!R) << 7 | (!X) << 6 | (!B) << 5 | (!R2) << 4 | in->map));
  x86_byte(b, (uint8_t)(in->we << 7 | (~v & 15) << 3 | 1 << 2 | in->pp));
  x86_byte(b, (uint8_t)((z ? 1 : 0) << 7 | LL << 5 | (!((v >> 4) & 1)) << 3 | (aaa & 7)));
  x86_byte(b, in->opc);
  modrm(b, reg, rm, true);
  if (imm >= 0) x86_byte(b, (uint8_t)imm);
  finish_insn(b, f0);
  list_vec(b, in, 16 << LL, reg, vvvv, rm, imm, aaa, z);
}

/* ---- general purpose */

static void rex(x86_buf *b, bool w, int reg, int index, int base) {
  uint8_t r = (uint8_t)(0x40 | (w ? 8 : 0) | hi(reg) << 2 | hi(index) << 1 | hi(base));
  if (r != 0x40) x86_byte(b, r);
}

static void gp_mem(x86_buf *b, uint8_t opc, int reg, x86_mem m) {
  uint32_t f0 = b->nfix;
  rex(b, true, reg, m.index, m.pool >= 0 ? 0 : m.base);
  x86_byte(b, opc);
  modrm(b, reg, (x86_rm){true, 0, m}, false);
  finish_insn(b, f0);
}

void x86_mov_load(x86_buf *b, int dst, x86_mem m) {
  gp_mem(b, 0x8B, dst, m);
  char ms[64];
  if (b->captext) fmt_mem(ms, sizeof ms, m);
  list_line(b, "%-14s %s, %s", "mov", gpr_names[dst], ms);
}

void x86_mov_store(x86_buf *b, x86_mem m, int src) {
  gp_mem(b, 0x89, src, m);
  char ms[64];
  if (b->captext) fmt_mem(ms, sizeof ms, m);
  list_line(b, "%-14s %s, %s", "mov", ms, gpr_names[src]);
}

void x86_lea(x86_buf *b, int dst, x86_mem m) {
  gp_mem(b, 0x8D, dst, m);
  char ms[64];
  if (b->captext) fmt_mem(ms, sizeof ms, m);
  list_line(b, "%-14s %s, %s", "lea", gpr_names[dst], ms);
}

void x86_mov_rr(x86_buf *b, int dst, int src) {
  rex(b, true, src, 0, dst);
  x86_byte(b, 0x89);
  x86_byte(b, (uint8_t)(0xC0 | (src & 7) << 3 | (dst & 7)));
  list_line(b, "%-14s %s, %s", "mov", gpr_names[dst], gpr_names[src]);
}

void x86_mov_imm(x86_buf *b, int dst, uint64_t imm) {
  rex(b, true, 0, 0, dst);
  x86_byte(b, (uint8_t)(0xB8 + (dst & 7)));
  u64(b, imm);
  list_line(b, "%-14s %s, 0x%llx", "mov", gpr_names[dst], (unsigned long long)imm);
}

void x86_alu_imm(x86_buf *b, int op, int dst, int32_t imm) {
  static const char *const names[8] = {"add", "or", "adc", "sbb", "and", "sub", "xor", "cmp"};
  rex(b, true, 0, 0, dst);
  if (imm >= -128 && imm <= 127) {
    x86_byte(b, 0x83);
    x86_byte(b, (uint8_t)(0xC0 | (op & 7) << 3 | (dst & 7)));
    x86_byte(b, (uint8_t)(int8_t)imm);
  } else {
    x86_byte(b, 0x81);
    x86_byte(b, (uint8_t)(0xC0 | (op & 7) << 3 | (dst & 7)));
    x86_u32(b, (uint32_t)imm);
  }
  list_line(b, "%-14s %s, %d", names[op & 7], gpr_names[dst], imm);
}

void x86_cmp_rr(x86_buf *b, int a, int c) {
  rex(b, true, c, 0, a);
  x86_byte(b, 0x39);
  x86_byte(b, (uint8_t)(0xC0 | (c & 7) << 3 | (a & 7)));
  list_line(b, "%-14s %s, %s", "cmp", gpr_names[a], gpr_names[c]);
}

void x86_xor32(x86_buf *b, int dst, int src) {
  if (hi(dst) || hi(src)) x86_byte(b, (uint8_t)(0x40 | hi(src) << 2 | hi(dst)));
  x86_byte(b, 0x31);
  x86_byte(b, (uint8_t)(0xC0 | (src & 7) << 3 | (dst & 7)));
  list_line(b, "%-14s %s, %s", "xor", gpr_names[dst], gpr_names[src]);
}

void x86_push(x86_buf *b, int r) {
  if (hi(r)) x86_byte(b, 0x41);
  x86_byte(b, (uint8_t)(0x50 + (r & 7)));
  list_line(b, "%-14s %s", "push", gpr_names[r]);
}

void x86_pop(x86_buf *b, int r) {
  if (hi(r)) x86_byte(b, 0x41);
  x86_byte(b, (uint8_t)(0x58 + (r & 7)));
  list_line(b, "%-14s %s", "pop", gpr_names[r]);
}

void x86_call_r(x86_buf *b, int r) {
  if (hi(r)) x86_byte(b, 0x41);
  x86_byte(b, 0xFF);
  x86_byte(b, (uint8_t)(0xD0 | (r & 7)));
  list_line(b, "%-14s %s", "call", gpr_names[r]);
}

void x86_ret(x86_buf *b) {
  x86_byte(b, 0xC3);
  list_line(b, "ret");
}

void x86_vzeroupper(x86_buf *b) {
  x86_byte(b, 0xC5);
  x86_byte(b, 0xF8);
  x86_byte(b, 0x77);
  list_line(b, "vzeroupper");
}

uint32_t x86_jump(x86_buf *b, int cc) {
  static const char *const names[16] = {"jo", "jno", "jb", "jae", "je", "jne", "jbe", "ja",
                                        "js", "jns", "jp", "jnp", "jl", "jge", "jle", "jg"};
  if (cc < 0) {
    x86_byte(b, 0xE9);
  } else {
    x86_byte(b, 0x0F);
    x86_byte(b, (uint8_t)(0x80 | cc));
  }
  uint32_t at = (uint32_t)b->n;
  x86_u32(b, 0);
  list_line(b, "%-14s (at %u)", cc < 0 ? "jmp" : names[cc & 15], at);
  return at;
}

void x86_patch_jump(x86_buf *b, uint32_t at, uint32_t target) {
  if (b->failed || at + 4 > b->n) return;
  int32_t rel = (int32_t)target - (int32_t)(at + 4);
  for (int i = 0; i < 4; i++) b->p[at + i] = (uint8_t)((uint32_t)rel >> (8 * i));
  list_line(b, "; jump at %u -> %u", at, target);
}

void x86_align(x86_buf *b, int to) {
  while (!b->failed && b->n % (size_t)to) x86_byte(b, 0x90);
}
