/* Shared between the lowering core (lower.c) and the per-op lowerings (lower_*.c). */
#ifndef ANVIL_COMPILER_LOWER_INTERNAL_H
#define ANVIL_COMPILER_LOWER_INTERNAL_H

#include "compiler/attrs.h"
#include "runtime/kernels/elementwise.h"
#include "compiler/lower.h"
#include "runtime/kernels/dot.h"
#include "runtime/steps.h"

typedef struct av_func_entry {
  const av_func *fn;
  const av_func_plan *plan; /* set once lowered; call steps point here */
  int state;                /* 0: not needed, 1: queued, 2: lowered */
} av_func_entry;

typedef struct av_step_vec {
  av_step *v;
  uint32_t n, cap;
} av_step_vec;

typedef struct av_lower {
  const av_module *m;
  av_plan *plan;
  av_arena *a;
  av_diag *d;
  int nerrors;
  bool out_of_memory; /* an allocation failed: stop lowering (av_lower_fail sets it) */
  size_t memory_bytes; /* the machine's memory: no single value may need more */
  av_func_entry *funcs;
  /* per value id */
  int32_t *slot_of;
  int32_t *last_use;
  uint8_t *used;
  uint32_t *owner; /* function number that assigned the slot (values are per function) */
  uint32_t nvalues;
  uint32_t func_no;
  /* current function: slot types live in fixed-size chunks that never move, so the
   * pointers av_vtype/av_tensor_of return stay valid while more slots are added
   * (lowering a region adds slots while the caller still holds its operand types) */
  av_slot_type **type_chunks;
  uint32_t nslots, nchunks;
  av_step_vec *cur;
  const av_op *op; /* being lowered, for messages */
  /* lowering a region that runs on one device's own thread (inside a multi-device manual
   * computation): a manual computation nested there runs on that device only */
  bool per_device;
  /* the function being lowered, calls being inlined into it (lower_control.c), innermost
   * last, and the ops inlined so far */
  const struct av_func *lowering_fn;
  const struct av_func *inline_stack[4];
  const av_op *inline_calls[4]; /* the call op of each inline_stack entry */
  int inline_depth;
  uint64_t inlined_ops;
  /* splicing an inlined call's body into the caller's own steps (lower_control.c): the body
   * block, whose arguments take the call's operand slots (splice_args, one per argument) and
   * which is left unfused (the caller fuses it with its own steps); `spliced` tells the
   * caller's block that the op just lowered was spliced (its steps are no fences) */
  const struct av_block *splice_block;
  const int32_t *splice_args;
  bool spliced;
  /* the generated code of this compile (codegen/codegen.h), made executable at its end */
  struct av_cg_code *code;
} av_lower;

/* Records a problem with the current op; returns false for `return av_lower_fail(...)`. */
bool av_lower_fail(av_lower *c, av_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define AV_UNSUPPORTED(c, ...) av_lower_fail((c), AV_UNIMPLEMENTED, __VA_ARGS__)
#define AV_INVALID(c, ...) av_lower_fail((c), AV_INVALID_ARGUMENT, __VA_ARGS__)

/* Slots */
int av_type_leaves(const av_type *t); /* -1 if a type we cannot hold */
int32_t av_lower_new_slot(av_lower *c, const av_slot_type *t);
#define AV_SLOT_CHUNK 256
/* The type of slot s (0 <= s < c->nslots). */
static inline av_slot_type *av_stype(const av_lower *c, int32_t s) {
  return &c->type_chunks[(uint32_t)s / AV_SLOT_CHUNK][(uint32_t)s % AV_SLOT_CHUNK];
}
bool av_slot_type_of(av_lower *c, const av_type *t, av_slot_type *out);
/* First slot of value v and its slot type (tensor or token); NULL type if none. */
static inline int32_t av_vslot(const av_lower *c, const av_value *v) {
  if (v->id >= c->nvalues || c->owner[v->id] != c->func_no) return -1;
  return c->slot_of[v->id];
}
const av_slot_type *av_vtype(const av_lower *c, const av_value *v);
/* The value's type must be a tensor: returns it, or reports and returns NULL. */
const av_slot_type *av_tensor_of(av_lower *c, const av_value *v, const char *what);

/* Steps */
av_step *av_emit(av_lower *c, av_step_fn fn, const void *params, uint32_t nin, uint32_t nout);
/* Step on all operand leaves -> all result leaves of the current op. */
av_step *av_emit_op(av_lower *c, av_step_fn fn, const void *params);
void *av_lower_alloc(av_lower *c, size_t size);
/* A group step's name listing its members' ops, "PREFIX[a,b,c]" ("..." once it runs out of
 * room), for the profiler and messages: start, add each op, then finish (the name in the
 * plan's arena; `fallback` when out of memory). */
typedef struct av_op_list_name {
  char buf[240];
  size_t n, start;
  bool full;
} av_op_list_name;
void av_op_list_name_start(av_op_list_name *l, const char *prefix);
void av_op_list_name_add(av_op_list_name *l, const char *op, size_t len);
const char *av_op_list_name_finish(av_lower *c, av_op_list_name *l, const char *fallback);
av_storage *av_lower_const_storage(av_lower *c, size_t nbytes);
/* Hands `obj` to the plan: free_fn(obj) runs when the plan is freed (also right away, with
 * an error set, when out of memory). */
bool av_lower_own(av_lower *c, void *obj, void (*free_fn)(void *));
/* The compile's generated-code store, made on first use (the plan owns it); NULL when out of
 * memory (then nothing is generated). */
struct av_cg_code *av_lower_code(av_lower *c);
/* Materialises a DENSE attribute of slot type t into storage (splats expanded). */
av_storage *av_lower_dense(av_lower *c, const av_attr *dense, const av_slot_type *t);

/* Lowers a nested region's single block into a block plan. */
const av_block_plan *av_lower_region(av_lower *c, const av_region *r);
/* Queues a function for lowering; returns where its plan will be. */
const av_func_plan *const *av_lower_need_func(av_lower *c, const char *name);

/* Per-op lowering (lower_ops.c, lower_shape.c, lower_control.c): false when unsupported or
 * malformed (already reported). */
bool av_lower_op(av_lower *c, const av_op *op);
bool av_lower_shape_op(av_lower *c, const av_op *op, bool *handled);
bool av_lower_control_op(av_lower *c, const av_op *op, bool *handled);
/* A call whose callee can run inside the caller's frame becomes a nested block of it (no
 * frame per call: loop bodies are often one call); *inlined says whether it was done. */
bool av_lower_inline_call(av_lower *c, const av_op *op, const struct av_func *fn, bool *inlined);
bool av_lower_kernel_op(av_lower *c, const av_op *op, bool *handled);
bool av_lower_collective_op(av_lower *c, const av_op *op, bool *handled);
bool av_lower_qr_custom_call(av_lower *c, const av_op *op, const char *target);
/* JAX's CPU LAPACK custom calls (lower_lapack.c). */
bool av_is_lapack_target(const char *target);
bool av_lower_lapack(av_lower *c, const av_op *op, const char *target);

/* custom_call of a registered XLA FFI handler or legacy target (lower_ffi.c). */
struct av_ffi_handler;
bool av_lower_ffi(av_lower *c, const av_op *op, const char *target,
                  const struct av_ffi_handler *h);

/* Integer list held by operand v when it is defined by a stablehlo.constant (the static
 * case of the dynamic_* ops); false otherwise. */
bool av_const_operand_ints(const av_value *v, int64_t *out, size_t cap, size_t *n);

/* A compare op's comparison_direction (or HLO's `direction`) and compare_type; defaults for
 * other ops. false when a compare's direction is missing (`bad` empty) or not one (`bad`
 * holds its spelling). Reports nothing. */
bool av_compare_attrs(const av_op *op, av_cmp_dir *dir, av_cmp_type *ct, char *bad, size_t cap);
/* The elementwise kernel of `op` from `in` to `out` elements (compare attributes into *dir,
 * *ct), allocated in the plan's arena; NULL when unsupported (nothing reported: the register
 * program builders use it and decline). */
const av_ew_kernel *av_ew_kernel_of(av_lower *c, const av_op *op, av_dtype in, av_dtype out,
                                    av_cmp_dir *dir, av_cmp_type *ct);
/* Comparison attribute spellings. */
bool av_parse_cmp_dir(const char *s, av_cmp_dir *dir);
av_cmp_type av_parse_cmp_type(const char *s);

/* A register program for a region of scalar elementwise ops; NULL when it does not qualify. */
struct av_scalar_prog;
const struct av_scalar_prog *av_build_scalar_prog(av_lower *c, const av_region *r);
/* Whether a scatter's update computation only returns its last n block arguments (the
 * updates: a replacing scatter). */
bool av_scatter_returns_updates(const av_region *r, uint32_t n);
/* dot / dot_general dimension numbers checked against the types; NULL, or what is wrong
 * (nothing reported: lower_kernels.c reports it, loop programs just decline). */
const char *av_dot_params_of(const av_op *op, const av_type *l, const av_type *r,
                             const av_type *res, av_dot_params *dp);
/* The inline form (an av_sfast) of a scalar binary op or comparison, or -1. */
int av_scalar_fast_form(av_opcode code, av_dtype t, av_cmp_type ct);
/* A whole-loop register program for a while op (loop_prog_build.c); NULL when it does not
 * qualify. */
struct av_loop_prog;
const struct av_loop_prog *av_build_loop_prog(av_lower *c, const av_op *op);

/* Reduction nests of a block (fuse_nest.c): found on its ops before they are lowered. Each
 * found nest replaces reduce ops[root]: the ops it absorbs get live[] = 0 (no steps), and its
 * step reads `inputs`. Returns how many (at most cap) were found. */
typedef struct av_nest {
  uint32_t root;
  struct av_nest_params *params;
  const av_value **inputs;
  uint32_t ninputs;
} av_nest;
uint32_t av_find_nests(av_lower *c, const av_block *b, const av_op *const *ops, uint32_t n, uint8_t *live,
                       av_nest *out, uint32_t cap);

/* Fuses elementwise steps of one block (fuse_elementwise.c); call before in_dies. fence[i]:
 * step i came from an op with nested regions (AV_FENCE_REGIONS: they may read values they do
 * not list) or side effects (AV_FENCE_EFFECTS); no step moves past it. */
enum { AV_FENCE_EFFECTS = 1, AV_FENCE_REGIONS = 2 };
void av_fuse_elementwise(av_lower *c, av_step_vec *steps, const uint8_t *fence);
/* Groups row reductions with the elementwise steps around them (fuse_rows.c); call after
 * av_fuse_elementwise, before in_dies. */
void av_fuse_rows(av_lower *c, av_step_vec *steps);
/* Turns box copies through a reshape (slice, squeeze, transpose) into one copy
 * (compose_boxes.c); after av_fuse_elementwise. */
void av_compose_boxes(av_lower *c, av_step_vec *steps);
/* A box then a reshape adding or dropping unit dimensions as one box (compose_boxes.c);
 * before av_fuse_elementwise, compacting `fence` (per step) with the steps. */
void av_reshape_boxes(av_lower *c, av_step_vec *steps, uint8_t *fence);
/* A broadcast of a scalar read by several elementwise steps: one copy right before each such
 * reader (compose_boxes.c), so each joins its reader's fused group; before
 * av_fuse_elementwise. May replace steps->v and *fence (malloc'd, *fence_cap entries). */
void av_split_broadcasts(av_lower *c, av_step_vec *steps, uint8_t **fence, uint32_t *fence_cap);

/* Whether an op must stay even when its results are unused. */
bool av_op_has_side_effects(const av_op *op);

#endif
