/* Whole while loops over small arrays and scalars, run as one register program.
 *
 * A loop whose condition and body (with the functions they call, inlined) are made only of
 * elementwise ops, converts, selects, constants, scalar broadcasts, reshapes and dynamic
 * slices / updates (lax.scan reading xs[i] and writing ys[i]) runs here instead of as steps:
 * every value has a register (a buffer in one scratch block, or a pointer to a constant, a
 * captured value or a carried value the loop never changes), ops whose inputs never change are
 * computed once before the first iteration, and an iteration is the condition's and the
 * body's ops on those registers plus swapping the new carried values in. A carried array the
 * body only updates with dynamic_update_slice (and reads no more after that) is updated in
 * place.
 * No allocation, reference counting or step dispatch per iteration; the ops are the same
 * kernels the steps call, so the results are the same bits (compiler/loop_prog_build.c). */
#ifndef ANVIL_RUNTIME_LOOP_PROG_H
#define ANVIL_RUNTIME_LOOP_PROG_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels/convert.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/plan.h"
#include "runtime/steps.h"

enum {
  AV_LOOP_MAX_REGS = 256,
  AV_LOOP_MAX_SCRATCH = 256 * 1024,  /* bytes of computed registers: beyond that, steps (which
                                        split large arrays over the pool) do better */
  AV_LOOP_MAX_STATE = 64 << 20,      /* bytes of carried arrays updated in place */
  AV_LOOP_MAX_INDICES = 8,           /* start indices of a dynamic slice / update */
};

typedef enum av_lreg_kind {
  AV_LR_SCRATCH, /* a buffer at `offset` in the scratch block */
  AV_LR_CONST,   /* `data`: a constant of the plan */
  AV_LR_SLOT,    /* a captured value: frame slot `slot` */
  AV_LR_CARRIED, /* carried value `carried`: two buffers at `offset` (current / next) */
  AV_LR_CARRIED_IN,  /* carried value the body passes through: read where it came in */
  AV_LR_CARRIED_OWN, /* carried value updated in place, in storage of its own (the entry
                        value's when nobody else holds it) that becomes the result */
} av_lreg_kind;

typedef struct av_lreg {
  av_lreg_kind kind;
  uint32_t bytes;
  size_t offset;
  const void *data;
  int32_t slot;
  uint32_t carried;
} av_lreg;

typedef enum av_linstr_kind {
  AV_LI_EW,      /* elementwise kernel over n elements */
  AV_LI_SELECT,  /* select; pred_scalar: one predicate for all n elements */
  AV_LI_CONVERT, /* convert over n elements */
  AV_LI_FILL,    /* broadcast of a scalar to n elements */
  AV_LI_BOX,     /* broadcast of an array to n elements: `box` from in[0] */
  AV_LI_SLICE,   /* dynamic_slice: in[0] the operand, idx the start scalars */
  AV_LI_UPDATE,  /* dynamic_update_slice: in[0] operand, in[1] update, idx the starts; out is
                    in[0] itself when updated in place, else a copy is made first */
  AV_LI_DOT,     /* dot_general of in[0] and in[1] (the kernel, through `dot`) */
  AV_LI_SCATTER, /* a scatter of one window that replaces (x.at[i].set(v)): in[0] operand,
                    in[1] the window's values, in[2] the index vector (`scatter`); the window
                    is dropped when not wholly inside, as the scatter kernel does; out as for
                    UPDATE */
  AV_LI_FAST_BASE, /* AV_LI_FAST_BASE + f: the inline scalar op f (an av_sfast), decoded by
                      the interpreter's one dispatch */
  /* AV_LI_PAIR_BASE + c: two inline arithmetic ops of class c (AV_LPAIR_*), the second
   * reading the first's result: out = (in[0] op1 in[1]) op2 in[2] (pair_left) or
   * in[2] op2 (in[0] op1 in[1]). The intermediate stays in a machine register: a scalar
   * loop's chain s * c + x no longer waits on a store and a load between the two. */
  AV_LI_PAIR_BASE = AV_LI_FAST_BASE + 32,
} av_linstr_kind;

/* Classes of inline pairs; op1 / op2 index add, sub, mul (and div for floats), in the order
 * of av_sfast's ops of that type. */
enum { AV_LPAIR_F32, AV_LPAIR_F64, AV_LPAIR_I32, AV_LPAIR_I64 };

/* A one-window replacing scatter: the window (ds: the operand's dims and strides, the
 * window's sizes) starts, along operand dim k, at component comp[k] of the index vector
 * (of index_dtype), or at 0 where comp[k] < 0. */
typedef struct av_lscatter {
  struct av_dyn_slice_params ds;
  int8_t comp[AV_LOOP_MAX_INDICES];
  av_dtype index_dtype;
} av_lscatter;

/* A dot's parameters and the shapes of its operands and result. */
typedef struct av_ldot {
  const struct av_dot_params *p;
  av_dtype dtype[3]; /* lhs, rhs, result */
  int rank[3];
  const int64_t *dims[3];
} av_ldot;

typedef struct av_linstr {
  uint8_t kind;
  uint8_t cmp_dir;       /* comparisons among the inline ops */
  uint8_t op1, op2;      /* AV_LI_PAIR_BASE: the two ops (see AV_LPAIR_*) */
  bool pair_left;        /* AV_LI_PAIR_BASE: the intermediate is op2's left operand */
  bool pred_scalar;      /* AV_LI_SELECT */
  uint16_t in[3], out;
  uint32_t esize; /* SELECT / FILL: bytes per element */
  int64_t n;      /* elements */
  const av_ew_kernel *ew;
  const av_convert *cv;
  const struct av_dyn_slice_params *ds; /* SLICE / UPDATE (runtime/steps.h) */
  const av_ldot *dot;                   /* DOT */
  const av_lscatter *scatter;           /* SCATTER */
  const struct av_box *box;             /* BOX */
  uint16_t idx[AV_LOOP_MAX_INDICES];     /* SLICE / UPDATE: registers of the start indices */
} av_linstr;

/* A counted loop: the condition is `i < limit` (or `i <= limit`) on a signed integer scalar
 * i that the body only advances by `i + step`, limit and step invariant. When the step is
 * positive and i reaches the end without wrapping, the number of iterations is known at the
 * first condition, so the condition is never run; when nothing else reads i, the increment
 * (moved to the end of the body) is not run either and i is set once, at the end. Other
 * cases (a non-positive step, a wrap) run the ordinary way, so results never change. */
typedef struct av_lcount {
  uint16_t carried;     /* the carried value i */
  uint16_t limit, step; /* registers */
  av_dtype dtype;       /* AV_DT_S32 or AV_DT_S64 */
  bool inclusive;       /* <= */
  bool drop_increment;  /* the body's last instruction is the increment, and only it reads i */
} av_lcount;

typedef struct av_loop_prog {
  uint32_t nregs;
  const av_lreg *regs;
  const av_linstr *pre; /* loop-invariant ops: run once, before the first condition */
  uint32_t npre;
  const av_linstr *cond;
  uint32_t ncond;
  const av_linstr *body;
  uint32_t nbody;
  uint32_t ncarried;
  const uint16_t *carried_reg; /* register of carried value i (cond and body arguments) */
  const uint16_t *result_reg;  /* register the body returns as carried value i */
  /* bit per carried value: the result register is a body op's output used by nothing after
   * the iteration, so the two buffers swap instead of being copied */
  const bool *swap;
  uint16_t cond_reg; /* the condition's i1 */
  const av_lcount *count; /* NULL: not a counted loop */
  size_t scratch_bytes;
} av_loop_prog;

/* Runs the loop: `vals` holds the carried values on entry (read) and receives new owned
 * references to the final ones (the entry references are released). */
av_code av_loop_prog_run(const av_loop_prog *p, const av_frame *f, av_slot *vals, av_diag *d);

#endif
