/* The x86-64 back end's shared part (cg_x86.c): frame, loop, register allocation, calls into
 * kernels, the constant pool. The per-ISA files (cg_x86_avx512.c, cg_x86_avx2.c) emit each
 * node's instructions through the helpers here.
 *
 * Generated function (System V): rdi = av_cg_args *. Registers while it runs:
 *   rbx  the args          r12  n             r13  element counter i
 *   r14  the pointer array r15  index0        rbp  frame pointer; rsp: 64-aligned frame
 *   r11  scratch for pointer loads; rax, rcx, rdx, rsi, rdi, r8-r10 hold pointers of regions
 *   without calls.
 * Values: every node's value has `parts` vector registers (1, or 2 when its type is wider
 * than a vector at the region's lane count), or one mask register (AVX-512 predicates).
 * Loop-invariant values (constants, scalars, nodes of them) are computed before the loop and
 * live in memory (the constant pool or a frame slot) as full splat vectors: instructions read
 * them as memory operands. */
#ifndef ANVIL_CODEGEN_CG_X86_H
#define ANVIL_CODEGEN_CG_X86_H

#include "codegen/cg_ir.h"
#include "codegen/cg_x86_enc.h"
#include "runtime/codegen_abi.h"

typedef enum cg_class { CLS_NONE, CLS_VEC, CLS_MASK } cg_class;

typedef struct cg_val {
  uint8_t cls;    /* cg_class of the value */
  uint8_t parts;  /* registers (VEC): 1 or 2 */
  uint8_t width;  /* bytes per part (VEC: 4..64; MASK: 2) */
  bool inv;       /* loop-invariant: lives in memory (pool or slot) once computed */
  bool splat;     /* the same value in every lane (constants, scalars): its parts too */
  int8_t reg[2];  /* per part: register, or -1 */
  int32_t slot;   /* frame offset of its memory copy, or -1 */
  int32_t pool;   /* CONST: constant pool entry, or -1 */
  bool in_mem;    /* its memory copy (slot or pool) holds the value */
  uint32_t last;  /* last reading node */
} cg_val;

typedef struct cg_isa cg_isa;
typedef struct cg_x86 cg_x86;

struct cg_isa {
  const char *name;
  int vl;            /* vector bytes */
  int nvec, nmask;   /* allocatable vector registers (0..nvec-1) and masks (1..nmask) */
  int vscratch0;     /* first of the scratch vector registers (to 4 of them) */
  bool pred_in_mask; /* predicates live in mask registers (AVX-512) */
  /* whether node n can be emitted natively at `lanes` */
  bool (*native)(const cg_region *r, const cg_node *n, int lanes);
  /* emits node i (operands in registers or memory, result registers assigned) */
  void (*emit)(cg_x86 *x, uint32_t i);
  /* guarded tails (cg_guard.h): emits a jump, returned for x86_patch_jump, taken unless
   * every lane of every PRED value conds[0..n) is set; NULL where the ISA has none */
  uint32_t (*jump_unless_all)(cg_x86 *x, const uint32_t *conds, int n);
  /* register moves and in-place f64 adds (nests' accumulators), `width` bytes */
  void (*vmov)(cg_x86 *x, int width, int dst, int src);
  void (*fadd64)(cg_x86 *x, int width, int dst, x86_rm src);
};

struct cg_x86 {
  x86_buf b;
  const cg_region *r;
  const cg_isa *isa;
  int lanes;
  cg_val *val;
  /* register file: node owning each register (-1: free) and which part */
  int32_t vown[32];
  uint8_t vpart[32];
  int32_t kown[8];
  uint32_t pos;       /* node being emitted */
  uint32_t *lock;     /* per node: pos while it must stay in its registers */
  /* next-use lists (CSR: uses of node i at use_pos[use_at[i] .. use_at[i+1])) and cursors */
  uint32_t *use_at, *use_pos, *use_cur;
  /* frame */
  int32_t frame;      /* bytes of slots so far */
  int32_t callbuf;    /* frame offset of the call buffers (regions with calls), else -1 */
  bool has_calls;
  int8_t ptr_gpr[256]; /* pointer register -> GPR caching it, or -1 */
  int budget, kbudget; /* registers free for pinned invariants (second pass) */
  /* nests: row pointers (input `rp_reg` advanced by `rp_stride` elements per iteration) */
  int nrp;
  uint32_t rp_reg[8];
  int64_t rp_stride[8];
  int8_t rp_gpr[8];
  /* constant pool: entries of vl bytes */
  uint8_t *pool;
  uint32_t npool, cappool;
  bool failed;
};

/* Part geometry of a type at the region's lanes. */
int cg_x86_parts(const cg_x86 *x, cg_type t);
int cg_x86_width(const cg_x86 *x, cg_type t); /* bytes per part */

/* Operand k of node i, part p: a register or (invariants) a memory operand. */
x86_rm cg_x86_opnd(cg_x86 *x, uint32_t i, int k, int p);
/* The same in a register: invariants are loaded into scratch vector `scratch` (0-3). */
int cg_x86_opnd_reg(cg_x86 *x, uint32_t i, int k, int p, int scratch);
/* Operand k's mask register (PRED operands under pred_in_mask); invariants are loaded into
 * scratch mask k6 + scratch (0 or 1). */
int cg_x86_opnd_mask(cg_x86 *x, uint32_t i, int k, int scratch);
/* Whether binary node i should take its operands swapped: it commutes, its first operand is
 * in memory and its second in a register (the memory one goes last, where instructions take
 * memory). Float operations commute except in which NaN they return when both are NaN: they
 * swap only when the first operand is a constant that is not NaN. */
bool cg_x86_commute(cg_x86 *x, uint32_t i);
/* An ISA's three-operand vector instruction: dst = op(src1, src2), src2 a register or memory. */
typedef void (*cg_x86_v3)(cg_x86 *x, const x86_insn *in, int w, int dst, int src1, x86_rm src2, int imm);
/* FMA node i (in[0] * in[1] + in[2], part by part) with the ISA's encoder and its forms
 * fma[d][f] (d: f64; f: 0 = 132, 1 = 213, 2 = 231), the form picked so that no move is
 * needed when the result's register is an operand's, and a pool constant stays in memory. */
void cg_x86_emit_fma(cg_x86 *x, uint32_t i, cg_x86_v3 v, const x86_insn *const fma[2][3]);
/* The mask register of PRED value v (loaded into scratch mask k6 + scratch when in memory). */
int cg_x86_mask_of(cg_x86 *x, uint32_t v, int scratch);
/* The result registers of node i. */
static inline int cg_x86_dst(const cg_x86 *x, uint32_t i, int p) { return x->val[i].reg[p]; }
/* Scratch vector register s (0-3). */
static inline int cg_x86_scratch(const cg_x86 *x, int s) { return x->isa->vscratch0 + s; }

/* A constant pool entry holding `bytes` (vl of them, splatted from an element of esize
 * bytes when n == esize). */
int cg_x86_pool(cg_x86 *x, const void *bytes, int esize, int n);
int cg_x86_pool_splat(cg_x86 *x, uint64_t bits, int esize);

/* The memory operand of the elements of pointer `reg` at the counter, part p (bytes/element
 * `esize`, part width `w`); loads the pointer into r11 when it is not cached. */
x86_mem cg_x86_elem(cg_x86 *x, uint32_t reg, int esize, int p, int w);
/* [base + disp] */
static inline x86_mem cg_x86_at(int base, int32_t disp) { return (x86_mem){(int8_t)base, X86_NOREG, 1, disp, -1, 0}; }
/* [rsp + off] */
static inline x86_mem cg_x86_frame(int32_t off) { return (x86_mem){RSP, X86_NOREG, 1, off, -1, 0}; }

/* Nests: the base register of XLOAD i (a row pointer, or the input's pointer loaded into
 * r11), and the staging output at a byte offset (its pointer loaded into r11). */
int cg_x86_xload_base(cg_x86 *x, uint32_t i);
x86_mem cg_x86_nest_out(cg_x86 *x, int32_t byte_off);

/* Calls into the interpreter (CALL, CALL_CONVERT, CALL_IF's slow path), through the ISA's
 * vector store/load of the operands and result. */
void cg_x86_call(cg_x86 *x, uint32_t i, int first_in, int nin);

/* Per-ISA helpers the shared part calls for moves (defined by each ISA file). */
void cg_avx512_move(cg_x86 *x, int cls, int width, bool store, int reg, x86_mem m);
void cg_avx2_move(cg_x86 *x, int cls, int width, bool store, int reg, x86_mem m);

extern const cg_isa cg_isa_avx512, cg_isa_avx2;

/* Runs the whole back end: code bytes (with the constant pool after the code) in *out, the
 * listing in out->text when `listing`. */
bool cg_x86_generate(const cg_region *r, const cg_isa *isa, bool listing, x86_buf *out);

#endif
