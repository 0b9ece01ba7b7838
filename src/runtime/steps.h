/* Step entry points and their compile-time parameters (built by src/compiler/lower*.c). */
#ifndef ANVIL_RUNTIME_STEPS_H
#define ANVIL_RUNTIME_STEPS_H

#include "runtime/kernels/convert.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/shape.h"
#include "runtime/plan.h"

/* ---- basic (runtime/steps_basic.c) */
typedef struct av_const_params {
  av_storage *st;
  /* iota_size > 0: the constant is an iota, element i holding (i / iota_inner) % iota_size
   * (generated code computes it instead of reading it) */
  int64_t iota_inner, iota_size;
} av_const_params;
av_code av_step_const(const av_step *s, av_frame *f, av_diag *d);
/* out[k] = in[k] (shared storage): reshape, bitcast_convert, tuple, get_tuple_element,
 * optimization_barrier. */
av_code av_step_alias(const av_step *s, av_frame *f, av_diag *d);
av_code av_step_zero(const av_step *s, av_frame *f, av_diag *d);
av_code av_step_token(const av_step *s, av_frame *f, av_diag *d);
av_code av_step_device_id(const av_step *s, av_frame *f, av_diag *d);
av_code av_step_ew(const av_step *s, av_frame *f, av_diag *d);      /* av_ew_kernel */
av_code av_step_convert(const av_step *s, av_frame *f, av_diag *d); /* av_convert */
av_code av_step_select(const av_step *s, av_frame *f, av_diag *d);  /* NULL params */
/* bitcast_convert with a sub-byte side (runtime/kernels/bitcast_bits.c): packs/unpacks bits;
 * NULL params (the types are the slots'). */
bool av_bitcast_bits_supported(av_dtype from, av_dtype to);
av_code av_step_bitcast_bits(const av_step *s, av_frame *f, av_diag *d);

/* ---- fused elementwise chains (runtime/steps_fused.c, built by compiler/fuse_elementwise.c)
 * A run of elementwise steps (and broadcasts of scalars) over arrays of one element count,
 * executed tile by tile so intermediates stay in cache and are never allocated. Registers
 * name the values: step inputs (read in place), broadcast scalars (a tile filled once),
 * broadcasts of smaller arrays (BOX: a tile gathered per tile through `box`), temporaries (a
 * tile buffer) and step outputs (written in place). */
enum { AV_FUSED_IN, AV_FUSED_SCALAR, AV_FUSED_TEMP, AV_FUSED_OUT, AV_FUSED_BOX };
#define AV_FUSED_NO_TILE UINT32_MAX
typedef struct av_fused_reg {
  uint8_t kind;
  /* IN/SCALAR/BOX: step input number; OUT: step output number; TEMP: its tile, shared by
   * temporaries of one element size whose lifetimes do not overlap, numbered in order of
   * first use */
  uint32_t index; /* AV_FUSED_NO_TILE: a temporary no op writes (folded into a pair) */
  size_t esize;
  const struct av_box_params *box; /* BOX: box over the output, row-major dstride */
} av_fused_reg;
typedef struct av_fused_op {
  const av_ew_kernel *k;
  int nin;
  uint32_t in[AV_EW_MAX_IN], out; /* registers */
  /* the loop taking operand `scalar_side` as one value, used when that operand (a scalar or
   * box register) is constant over the tile; NULL when the op has none */
  av_ew_fn with_scalar;
  int scalar_side;
} av_fused_op;
typedef struct av_fused_params {
  int64_t n; /* elements of every non-scalar register */
  uint32_t nregs, nops;
  const av_fused_reg *regs;
  const av_fused_op *ops;
  const int32_t *reuse; /* per step output: a step input whose storage it may take, or -1 */
  /* the region as generated native code (runtime/codegen_abi.h), or NULL: the interpreter
   * runs the ops above */
  const struct av_cg_kernel *gen;
  /* elements per tile (av_fused_tile), set once by the compiler; 0: worked out per run */
  int64_t tile;
} av_fused_params;
/* The tile length of a fused step's passes: a function of its registers and ops only, which
 * costs O(registers x ops) to work out (a loop body runs the step every iteration). */
int64_t av_fused_tile(const av_fused_params *p);
av_code av_step_fused(const av_step *s, av_frame *f, av_diag *d);
/* A fused step in pieces (row groups below): its outputs allocated (taking over a dying
 * input's storage where the compiler allowed it), then elements [begin, end) computed on the
 * calling thread (false: out of memory for scratch tiles). */
av_code av_fused_alloc_outputs(const av_step *s, av_frame *f, av_diag *d);
bool av_fused_run_range(const av_step *s, const av_frame *f, int64_t begin, int64_t end);
/* Runs a generated region (p->gen) over elements [0, m): `at` has a pointer per register (IN,
 * BOX and OUT: at the first element; SCALAR: the value; TEMP: unused), `index0` is the first
 * element's index in the whole array. The kernel takes whole vectors; the last m % lanes
 * elements run on padded copies, so it never touches memory past m elements. false: out of
 * memory for the copies (nothing was written). */
bool av_fused_gen_run(const av_fused_params *p, void *const *at, int64_t m, int64_t index0);

/* ---- reduction nests (runtime/steps_nest.c, built by compiler/fuse_nest.c)
 * A reduce over one axis R of an expression of broadcasts (n-body's forces: a sum over j of
 * p[j] - p[i] and functions of them), as one generated kernel that never writes the
 * expression: for each block of V indices, a loop over R accumulating out[v, k] for the K
 * indices (runtime/codegen_abi.h). Inputs: the expression's leaves. */
typedef struct av_nest_params {
  const struct av_cg_nest_kernel *gen;
  int64_t nv, nr, nk;
  int64_t out_vstride, out_kstride; /* elements of the result between v and between k */
} av_nest_params;
av_code av_step_nest(const av_step *s, av_frame *f, av_diag *d);

/* ---- row groups (runtime/steps_rows.c, built by compiler/fuse_rows.c)
 * Reductions over the innermost elements of rows, and the elementwise steps around them that
 * read and write whole rows (layer-norm, softmax: a row's sum or maximum, then its elements
 * shifted or scaled by it), run block of rows by block of rows: every member does its part
 * for a few rows while they are in cache, instead of each member passing over all of memory.
 * Members keep their own steps and kernels (results are bit-identical to running them one
 * after the other); all their outputs are allocated before the first block, and their
 * releases happen after the last (the group step's dead list). */
enum { AV_ROWS_FUSED, AV_ROWS_EW, AV_ROWS_REDUCE, AV_ROWS_ALIAS };
typedef struct av_rows_member {
  av_step step; /* the member's own step (no dead list; in_dies as it had alone) */
  uint8_t kind;
  int64_t unit; /* elements of its output per row: 1 or the row length */
  av_opcode reduce_op; /* REDUCE: add, maximum or minimum (f32); in[0] rows, in[1] init */
} av_rows_member;
typedef struct av_rows_params {
  int64_t rows, row_len;
  uint32_t nmembers;
  const av_rows_member *m;
} av_rows_params;
av_code av_step_rows(const av_step *s, av_frame *f, av_diag *d);

typedef struct av_reduce_precision_params {
  av_convert to_wide, from_wide; /* dtype <-> f32/f64 (COPY when native) */
  bool f64;
  int exponent_bits, mantissa_bits;
} av_reduce_precision_params;
av_code av_step_reduce_precision(const av_step *s, av_frame *f, av_diag *d);

/* ---- data movement (runtime/steps_shape.c) */
typedef struct av_box_params {
  av_box box;
  int64_t soff; /* element offset into the input */
  size_t esize;
} av_box_params;
av_code av_step_box(const av_step *s, av_frame *f, av_diag *d);

typedef struct av_pad_params {
  av_box box;       /* the part of the input that lands in the output */
  int64_t soff, doff;
  size_t esize;
} av_pad_params;
av_code av_step_pad(const av_step *s, av_frame *f, av_diag *d); /* in: operand, pad value */

typedef struct av_concat_params {
  uint32_t n;
  const av_box *boxes; /* per input: its shape and output strides */
  const int64_t *doff; /* per input: element offset in the output */
  size_t esize;
} av_concat_params;
av_code av_step_concat(const av_step *s, av_frame *f, av_diag *d);

/* dynamic_slice: in = operand, start indices (scalars). dynamic_update_slice: in = operand,
 * update, start indices. Starts are clamped into [0, operand_dim - size]. */
typedef struct av_dyn_slice_params {
  int rank;
  int64_t dims[AV_BOX_MAX_RANK];  /* operand */
  int64_t sizes[AV_BOX_MAX_RANK]; /* slice / update */
  int64_t strides[AV_BOX_MAX_RANK];
  av_dtype index_dtype[AV_BOX_MAX_RANK];
  size_t esize;
} av_dyn_slice_params;
/* Element offset of the slice: each start (a scalar of index_dtype[k]) clamped into
 * [0, dims[k] - sizes[k]]. */
int64_t av_dyn_slice_offset(const av_dyn_slice_params *p, const void *const *starts);
/* Copies the slice between the operand (at the slice's offset, strided) and a dense array of
 * the slice's shape: into the operand when `into`, else out of it. */
void av_dyn_slice_copy(const av_dyn_slice_params *p, char *operand, char *dense, bool into);
av_code av_step_dynamic_slice(const av_step *s, av_frame *f, av_diag *d);
av_code av_step_dynamic_update_slice(const av_step *s, av_frame *f, av_diag *d);

/* Reads an integer scalar of dtype t. */
int64_t av_read_index(const void *p, av_dtype t);

/* ---- control flow (runtime/control.c) */
struct av_scalar_prog;
typedef struct av_while_params {
  const av_block_plan *cond, *body;
  const size_t *nbytes; /* per carried value */
  /* register-program forms of the regions when they qualify (scalar ops only; the condition
   * may ignore non-scalar carried values); NULL otherwise */
  const struct av_scalar_prog *cond_prog, *body_prog;
  /* the whole loop as one register program (runtime/loop_prog.h) when it qualifies; NULL
   * otherwise */
  const struct av_loop_prog *loop_prog;
  /* bit i: operand i is also read inside the regions (a captured value), so the step must
   * share it, not move it into the carried state (first 32 operands) */
  uint32_t captured;
} av_while_params;
av_code av_step_while(const av_step *s, av_frame *f, av_diag *d);

typedef struct av_branch_params {
  uint32_t nbranches;
  const av_block_plan *const *branches; /* if: {true, false}; case: index order */
  av_dtype index_dtype;
  bool is_if;
} av_branch_params;
av_code av_step_branch(const av_step *s, av_frame *f, av_diag *d);

/* Runs one region with the step's inputs as its arguments (sdy.manual_computation on one
 * device). */
typedef struct av_region_step_params {
  const av_block_plan *block;
  /* the block reads only its arguments (an inlined call), so inputs whose slot dies at the
   * step may be moved into it; otherwise they are shared */
  bool isolated;
} av_region_step_params;
av_code av_step_region(const av_step *s, av_frame *f, av_diag *d);

typedef struct av_call_params {
  const av_func_plan *const *callee; /* filled once the callee is lowered */
} av_call_params;
av_code av_step_call(const av_step *s, av_frame *f, av_diag *d);
/* params: the callback id (uint64_t); see runtime/host_callback.h */
av_code av_step_host_callback(const av_step *s, av_frame *f, av_diag *d);

/* ---- checks (runtime/kernels/checks.c) */
typedef enum av_check_kind { AV_CHECK_EQ, AV_CHECK_CLOSE, AV_CHECK_ALMOST_EQ } av_check_kind;
typedef struct av_check_params {
  av_check_kind kind;
  av_storage *expected; /* constant form (check.expect_*_const); else input 1 */
  double tolerance;     /* almost_eq */
} av_check_params;
av_code av_step_check(const av_step *s, av_frame *f, av_diag *d);
/* The check an op or custom_call target name asks for: check.expect_{eq,close,almost_eq},
 * with the expected value as an attribute when the name ends in _const (*with_const). */
bool av_check_kind_of(const char *name, av_check_kind *k, bool *with_const);

#endif
