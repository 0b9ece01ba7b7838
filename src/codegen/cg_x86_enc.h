/* x86-64 machine code encoding for the code generator: VEX (AVX2) and EVEX (AVX-512) vector
 * instructions, the few general-purpose instructions a loop needs, and an optional text
 * listing of everything emitted (ANVIL_DUMP_DIR). Encodings follow the Intel SDM, volume 2,
 * chapter 2 (instruction format, VEX and EVEX prefixes). */
#ifndef ANVIL_CODEGEN_CG_X86_ENC_H
#define ANVIL_CODEGEN_CG_X86_ENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* general-purpose registers */
enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15, X86_NOREG = -1 };

typedef struct x86_buf {
  uint8_t *p;
  size_t n, cap;
  bool failed;
  /* RIP-relative references to the constant pool, patched once the code size is known */
  struct x86_fixup {
    uint32_t at;    /* the disp32's offset */
    uint32_t end;   /* the instruction's end (RIP) */
    uint32_t entry; /* constant pool entry */
  } *fix;
  uint32_t nfix, capfix;
  /* listing: one line per instruction when non-NULL */
  char *text;
  size_t ntext, captext;
} x86_buf;

/* A memory operand [base + index*scale + disp], or the constant pool's entry `pool` (RIP
 * relative) when pool >= 0. */
typedef struct x86_mem {
  int8_t base, index;
  uint8_t scale; /* 1, 2, 4, 8 */
  int32_t disp;
  int32_t pool;
  int8_t vindex1; /* gathers (VSIB): 1 + a vector register as the index; 0: none (`index`) */
} x86_mem;

/* A register or memory operand. Vector registers are 0-31, mask registers 0-7. */
typedef struct x86_rm {
  bool mem;
  uint8_t reg;
  x86_mem m;
} x86_rm;

static inline x86_rm x86_r(int reg) { return (x86_rm){false, (uint8_t)reg, {0, 0, 0, 0, -1, 0}}; }
static inline x86_rm x86_m(int base, int index, int scale, int32_t disp) {
  return (x86_rm){true, 0, {(int8_t)base, (int8_t)index, (uint8_t)scale, disp, -1, 0}};
}
static inline x86_rm x86_pool(int entry) {
  return (x86_rm){true, 0, {X86_NOREG, X86_NOREG, 1, 0, entry, 0}};
}
/* [base + vindex*scale + disp] with a vector index (gathers) */
static inline x86_rm x86_vsib(int base, int vindex, int scale, int32_t disp) {
  return (x86_rm){true, 0, {(int8_t)base, X86_NOREG, (uint8_t)scale, disp, -1, (int8_t)(vindex + 1)}};
}

/* A vector instruction: opcode map (1 = 0F, 2 = 0F38, 3 = 0F3A), mandatory prefix (0 none,
 * 1 = 66, 2 = F3, 3 = F2), opcode, and W for VEX and EVEX (VEX W is ignored where the SDM
 * says WIG). */
typedef struct x86_insn {
  const char *name;
  uint8_t map, pp, opc;
  uint8_t wv, we;
  bool rm_dst; /* the r/m operand is the destination (stores, vpmov*, extracts): listing order */
  uint8_t k;   /* listing: mask register operands (1 reg, 2 vvvv, 4 r/m); 8: reg is a /digit */
} x86_insn;

void x86_byte(x86_buf *b, uint8_t v);
void x86_u32(x86_buf *b, uint32_t v);
/* A vector register's name by width in bytes (64 zmm, 32 ymm, less xmm), written to buf. */
const char *x86_vname(int width, int reg, char buf[12]);

/* VEX: L 0 (128) or 1 (256); reg / vvvv / rm registers 0-15. `reg` may be an opcode
 * extension (/digit). imm < 0: none. */
void x86_vex(x86_buf *b, const x86_insn *in, int L, int reg, int vvvv, x86_rm rm, int imm);
/* EVEX: LL 0/1/2 (128/256/512); registers 0-31; aaa the mask register (0: none), z zeroing. */
void x86_evex(x86_buf *b, const x86_insn *in, int LL, int reg, int vvvv, x86_rm rm, int aaa,
              bool z, int imm);

/* General-purpose instructions (64-bit operands). */
void x86_mov_load(x86_buf *b, int dst, x86_mem m);  /* mov dst, [m] */
void x86_mov_store(x86_buf *b, x86_mem m, int src); /* mov [m], src */
void x86_mov_rr(x86_buf *b, int dst, int src);
void x86_mov_imm(x86_buf *b, int dst, uint64_t imm);
void x86_lea(x86_buf *b, int dst, x86_mem m);
/* op dst, imm: op is the /digit of group 1 (0 add, 4 and, 5 sub, 7 cmp) */
void x86_alu_imm(x86_buf *b, int op, int dst, int32_t imm);
void x86_cmp_rr(x86_buf *b, int a, int c); /* cmp a, c */
void x86_xor32(x86_buf *b, int dst, int src);
void x86_push(x86_buf *b, int r);
void x86_pop(x86_buf *b, int r);
void x86_call_r(x86_buf *b, int r);
void x86_ret(x86_buf *b);
void x86_vzeroupper(x86_buf *b);
/* Jumps with 32-bit displacements: emit returns the displacement's offset, patched by
 * x86_patch_jump once the target is known. cc: a condition code (0x2 below, 0x4 equal,
 * 0x5 not equal...), or -1 for jmp. */
uint32_t x86_jump(x86_buf *b, int cc);
void x86_patch_jump(x86_buf *b, uint32_t at, uint32_t target);
void x86_align(x86_buf *b, int to); /* nops up to a multiple of `to` */
/* Listing only: a comment line. */
void x86_note(x86_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void x86_buf_free(x86_buf *b);

#endif
