/* The code generator's target-independent IR: one fused region as a DAG of vector operations,
 * in topological order, over `lanes` consecutive elements per iteration.
 *
 * A node's value holds `lanes` elements of its type. Leaves load from the region's pointers
 * (CG_LOAD), broadcast a loop-invariant value (CG_SCALAR, CG_CONST), or compute the element
 * index (CG_INDEX); CG_STORE nodes write results. Everything between is a small virtual vector
 * ISA that every back end implements (cg_x86_*.c): integer and bit operations with wrapping
 * semantics, IEEE float operations (one rounding each), compares into predicates, selects,
 * conversions, and calls into the interpreter's kernels for what has no native form. The
 * StableHLO ops of a fused region become these nodes in cg_lower.c; transcendental functions
 * are expanded into them in cg_math.c. */
#ifndef ANVIL_CODEGEN_CG_IR_H
#define ANVIL_CODEGEN_CG_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum cg_type {
  CG_VOID, /* stores */
  CG_PRED, /* a per-lane truth value (in memory: one byte, 0 or 1) */
  CG_I8, CG_I16, CG_I32, CG_I64, /* integers: signedness lives in the ops */
  CG_F32, CG_F64,
} cg_type;

static inline int cg_type_size(cg_type t) {
  switch (t) {
    case CG_PRED: case CG_I8: return 1;
    case CG_I16: return 2;
    case CG_I32: case CG_F32: return 4;
    case CG_I64: case CG_F64: return 8;
    default: return 0;
  }
}
static inline bool cg_is_float(cg_type t) { return t == CG_F32 || t == CG_F64; }
static inline bool cg_is_int(cg_type t) { return t >= CG_I8 && t <= CG_I64; }
/* The integer type of a float's size (bit manipulations). */
static inline cg_type cg_int_of(cg_type t) { return cg_type_size(t) == 8 ? CG_I64 : cg_type_size(t) == 2 ? CG_I16 : cg_type_size(t) == 1 ? CG_I8 : CG_I32; }

typedef enum cg_opc {
  /* leaves */
  CG_LOAD,   /* the elements at pointer `reg` (PRED: bytes, nonzero is true) */
  CG_SCALAR, /* the one value at pointer `reg`, in every lane (loop invariant) */
  CG_CONST,  /* `imm` (the element's bits) in every lane */
  CG_INDEX,  /* I64: the element's index in the whole array */
  CG_STORE,  /* in[0] to pointer `reg` (PRED: bytes 0 / 1); no value */
  /* integers, wrapping (also the bits of floats, for bit manipulations) */
  CG_ADD, CG_SUB, CG_MUL,
  CG_AND, CG_OR, CG_XOR, CG_ANDN, /* ANDN: ~in[0] & in[1] */
  CG_NOT,
  /* shifts by per-lane counts, read as unsigned: counts >= the width give 0 (SHRA: copies of
   * the sign bit) */
  CG_SHL, CG_SHRL, CG_SHRA,
  CG_SHLI, CG_SHRLI, CG_SHRAI, CG_ROTLI, /* by `imm`, 0 < imm < width */
  CG_MAXS, CG_MAXU, CG_MINS, CG_MINU, CG_ABS,
  /* IEEE floats */
  CG_FADD, CG_FSUB, CG_FMUL, CG_FDIV, CG_FSQRT,
  CG_FMA,    /* in[0] * in[1] + in[2], one rounding */
  CG_FROUND, /* `imm`: a cg_round */
  /* predicates */
  CG_CMP,    /* in[0] ? in[1] with cg_cmp `imm` on operands of type `atype` */
  CG_PAND, CG_POR, CG_PXOR, CG_PNOT,
  CG_SELECT, /* in[0] (PRED) ? in[1] : in[2] */
  /* conversions from `atype` */
  CG_CVT,     /* `imm`: a cg_cvt */
  CG_BITCAST, /* same size, other type */
  /* the interpreter's kernel `aux` (an av_ew_kernel, or an av_convert for CG_CALL_CONVERT) on
   * the lanes of in[0..nin) */
  CG_CALL, CG_CALL_CONVERT,
  /* in[0] ? ... : a cheap result: when any lane of PRED in[0] is set, the kernel `aux` (unary)
   * on in[1] for all lanes, else in[2] (the fast path's result, which equals the kernel's
   * where in[0] is clear) */
  CG_CALL_IF,
  /* reduction nests (cg_nest.c): the vector axis's lanes v0 + lane, clamped to the last index
   * (I32); an element of pointer `reg` at element offset imm + rstride * r (the reduced
   * axis's counter r) + in[0] lanes (an I32 index vector; none: the same element in every
   * lane); an F64 accumulator, in[0] before the reduced loop, + in[1] every iteration */
  CG_LANE, CG_XLOAD, CG_ACC,
  CG_NOPS
} cg_opc;

typedef enum cg_cmp_kind {
  CG_CMP_EQ, CG_CMP_NE, CG_CMP_LT, CG_CMP_LE, CG_CMP_GT, CG_CMP_GE,
  /* floats only: EQ is ordered (false on NaN), NE unordered (true on NaN), LT..GE ordered */
  CG_CMP_UNORD, /* either is NaN */
  CG_CMP_ORD,
  CG_CMP_UNSIGNED = 16, /* or'd in for integers compared as unsigned */
} cg_cmp_kind;

typedef enum cg_round { CG_ROUND_EVEN, CG_ROUND_FLOOR, CG_ROUND_CEIL, CG_ROUND_TRUNC } cg_round;

typedef enum cg_cvt_kind {
  CG_CVT_FLOAT,     /* float <-> float, to nearest even */
  CG_CVT_S2F,       /* signed integer -> float, to nearest even */
  CG_CVT_U2F,       /* unsigned integer -> float */
  CG_CVT_F2S_TRUNC, /* float -> signed integer toward zero; only for values in range */
  CG_CVT_SEXT,      /* integer -> wider integer, sign extended */
  CG_CVT_ZEXT,      /* zero extended */
  CG_CVT_TRUNC,     /* integer -> narrower integer, low bits */
  CG_CVT_PRED2I,    /* PRED -> integer 0 / 1 */
} cg_cvt_kind;

enum { CG_MAX_IN = 3, CG_NO_NODE = UINT32_MAX };

typedef struct cg_node {
  uint8_t op;    /* cg_opc */
  uint8_t type;  /* of the value (CG_VOID for stores) */
  uint8_t atype; /* CMP: of the operands; CVT / BITCAST: of in[0] */
  uint8_t nin;
  uint32_t in[CG_MAX_IN];
  uint32_t reg;  /* LOAD / SCALAR / STORE: pointer index */
  uint64_t imm;  /* CONST bits, shift counts, cg_cmp, cg_round, cg_cvt; XLOAD / nest STORE:
                    element offset */
  int64_t rstride; /* XLOAD: elements per step of the reduced axis */
  int32_t eoff;    /* LOAD / STORE of an elementwise region: elements past the loop's position
                      (the later copies of an unrolled body, cg_unroll.c) */
  const void *aux; /* CALL*: the kernel */
  uint32_t uses; /* how many node operands read it (filled by cg_finish) */
  /* Float values: every lane that is not a NaN lies in [lo, hi] (-inf, +inf: nothing known).
   * Set by cg_add from the operands' ranges, narrowed by cg_range_fact; compares that the
   * ranges decide fold to constants while the region is built (cg_cmp), so a transcendental's
   * special-case selects vanish where its argument cannot reach them (exp of a sine). */
  double lo, hi;
} cg_node;

enum { CG_NEST_OUT = 0xFFFFFFFEu }; /* STORE `reg` of a nest: the staging output */

typedef struct cg_region {
  cg_node *v;
  uint32_t n, cap;
  bool nest; /* a reduction nest (cg_nest.c), not an elementwise region */
  /* hash-consing: node index + 1 per slot (0 empty), hcap a power of 2; hused slots written
   * since the last rebuild (some may name nodes a rollback dropped) */
  uint32_t *hash, hcap, hused;
  bool failed; /* out of memory or an unsupported node: nothing is generated */
  int lanes;   /* elements of one vector value */
  int unroll;  /* copies of the body per loop iteration (cg_unroll.c; 0 or 1: one) */
} cg_region;

/* Appends a node (hash-consed: an identical pure node already in the region is returned
 * instead, so expansions may repeat themselves freely); returns its index, or CG_NO_NODE
 * (with r->failed set) when out of memory. */
uint32_t cg_add(cg_region *r, cg_node n);
void cg_region_free(cg_region *r);
/* Removes nodes no store needs, and counts uses. */
void cg_finish(cg_region *r);
/* Per node, whether it is loop-invariant (constants, scalars and pure nodes of them only): it
 * is then computed once, before the loop. `out` has r->n entries. */
void cg_invariants(const cg_region *r, bool *out);

/* Builders (each returns the new node's index). */
uint32_t cg_const(cg_region *r, cg_type t, uint64_t bits);
uint32_t cg_constf(cg_region *r, cg_type t, double v); /* v rounded to t */
uint32_t cg_op1(cg_region *r, cg_opc op, cg_type t, uint32_t a);
uint32_t cg_op2(cg_region *r, cg_opc op, cg_type t, uint32_t a, uint32_t b);
uint32_t cg_op3(cg_region *r, cg_opc op, cg_type t, uint32_t a, uint32_t b, uint32_t c);
uint32_t cg_opi(cg_region *r, cg_opc op, cg_type t, uint32_t a, uint64_t imm); /* SHLI... */
uint32_t cg_cmp(cg_region *r, cg_cmp_kind how, uint32_t a, uint32_t b);
uint32_t cg_cvt(cg_region *r, cg_cvt_kind how, cg_type to, uint32_t a);
uint32_t cg_bitcast(cg_region *r, cg_type to, uint32_t a);
uint32_t cg_select(cg_region *r, uint32_t pred, uint32_t a, uint32_t b);
/* Records that node i's non-NaN lanes lie in [lo, hi] (a fact its builder knows, such as a
 * sine's range); returns i. The node's range becomes the intersection. */
uint32_t cg_range_fact(cg_region *r, uint32_t i, double lo, double hi);
static inline cg_type cg_type_of(const cg_region *r, uint32_t i) { return (cg_type)r->v[i].type; }
/* Elements one iteration of the region's loop covers. */
static inline int cg_loop_lanes(const cg_region *r) {
  return r->lanes * (r->unroll > 1 ? r->unroll : 1);
}

const char *cg_op_name(cg_opc op);
const char *cg_type_name(cg_type t);

#endif
