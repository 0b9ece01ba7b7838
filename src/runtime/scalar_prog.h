/* Region bodies made only of scalar elementwise ops (reduce bodies such as argmax's, sort
 * comparators, scatter combiners) compiled into a tiny register program: calling it costs a
 * few typed-loop calls with n = 1 and no allocation, instead of running the block's steps. */
#ifndef ANVIL_RUNTIME_SCALAR_PROG_H
#define ANVIL_RUNTIME_SCALAR_PROG_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/kernels/convert.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/plan.h"

enum { AV_SPROG_MAX_REGS = 64, AV_SPROG_NO_REG = 255 /* an argument the program ignores */ };

typedef enum av_sinstr_kind { AV_SI_EW, AV_SI_SELECT, AV_SI_CONVERT, AV_SI_FAST } av_sinstr_kind;

/* AV_SI_FAST: the commonest loop-counter and accumulator ops done inline (the same IEEE or
 * wrapping operation as their kernel, so the same bits) instead of a kernel call with n = 1. */
typedef enum av_sfast {
  AV_SF_ADD_F32, AV_SF_SUB_F32, AV_SF_MUL_F32, AV_SF_DIV_F32,
  AV_SF_ADD_F64, AV_SF_SUB_F64, AV_SF_MUL_F64, AV_SF_DIV_F64,
  AV_SF_ADD_I32, AV_SF_SUB_I32, AV_SF_MUL_I32, /* wrapping, any signedness */
  AV_SF_ADD_I64, AV_SF_SUB_I64, AV_SF_MUL_I64,
  /* comparisons: signed ints, unsigned ints, IEEE floats (FLOAT compare type) */
  AV_SF_CMP_S32, AV_SF_CMP_U32, AV_SF_CMP_S64, AV_SF_CMP_U64, AV_SF_CMP_F32, AV_SF_CMP_F64,
} av_sfast;

/* out = a OP b for an av_sfast (comparisons: direction `dir`, an av_cmp_dir); inline, so the
 * loops that run these every iteration pay no call. */
#define AV_SF_LOAD2(T)                                                                         \
  T x, y;                                                                                      \
  memcpy(&x, a, sizeof x);                                                                     \
  memcpy(&y, b, sizeof y)
#define AV_SF_BIN(T, OP)                                                                       \
  do {                                                                                         \
    AV_SF_LOAD2(T);                                                                            \
    T r_ = (T)(x OP y);                                                                        \
    memcpy(out, &r_, sizeof r_);                                                               \
  } while (0)
#define AV_SF_CMP(T)                                                                           \
  do {                                                                                         \
    AV_SF_LOAD2(T);                                                                            \
    uint8_t r_ = av_sfast_compare(dir, x < y, x == y, y < x);                                  \
    memcpy(out, &r_, 1);                                                                       \
  } while (0)

/* IEEE semantics from the three relations: NaN makes all three false, so only NE holds.
 * (A branch-free truth-table form measured slower: in a loop the direction is predicted.) */
static inline uint8_t av_sfast_compare(uint8_t dir, bool lt, bool eq, bool gt) {
  switch (dir) {
    case AV_CMP_EQ: return eq;
    case AV_CMP_NE: return !eq;
    case AV_CMP_LT: return lt;
    case AV_CMP_LE: return lt || eq;
    case AV_CMP_GT: return gt;
    default: return gt || eq;
  }
}

/* Every av_sfast with how it runs: X(base, op, BIN or CMP, type, operator). Interpreters
 * put these cases into their own dispatch (`base` offsets the values), so an inline op costs
 * one jump, not one per level. The cases read `a`, `b`, `dir` and write `out`. */
#define AV_SFAST_OPS(X, base)                                                                  \
  X(base, AV_SF_ADD_F32, BIN, float, +) X(base, AV_SF_SUB_F32, BIN, float, -)                  \
  X(base, AV_SF_MUL_F32, BIN, float, *) X(base, AV_SF_DIV_F32, BIN, float, /)                  \
  X(base, AV_SF_ADD_F64, BIN, double, +) X(base, AV_SF_SUB_F64, BIN, double, -)                \
  X(base, AV_SF_MUL_F64, BIN, double, *) X(base, AV_SF_DIV_F64, BIN, double, /)                \
  X(base, AV_SF_ADD_I32, BIN, uint32_t, +) X(base, AV_SF_SUB_I32, BIN, uint32_t, -)            \
  X(base, AV_SF_MUL_I32, BIN, uint32_t, *) X(base, AV_SF_ADD_I64, BIN, uint64_t, +)            \
  X(base, AV_SF_SUB_I64, BIN, uint64_t, -) X(base, AV_SF_MUL_I64, BIN, uint64_t, *)            \
  X(base, AV_SF_CMP_S32, CMP, int32_t, _) X(base, AV_SF_CMP_U32, CMP, uint32_t, _)             \
  X(base, AV_SF_CMP_S64, CMP, int64_t, _) X(base, AV_SF_CMP_U64, CMP, uint64_t, _)             \
  X(base, AV_SF_CMP_F32, CMP, float, _) X(base, AV_SF_CMP_F64, CMP, double, _)
#define AV_SF_DO_BIN(T, OP) AV_SF_BIN(T, OP)
#define AV_SF_DO_CMP(T, OP) AV_SF_CMP(T)
#define AV_SFAST_CASE(base, op, KIND, T, OP) \
  case (base) + (op): AV_SF_DO_##KIND(T, OP); break;

static inline __attribute__((always_inline)) void av_sfast_run(uint8_t fast, uint8_t dir,
                                                               const void *a, const void *b,
                                                               void *out) {
  switch (fast) { AV_SFAST_OPS(AV_SFAST_CASE, 0) }
}

typedef struct av_sinstr {
  av_sinstr_kind kind;
  uint8_t fast;     /* AV_SI_FAST: an av_sfast */
  uint8_t cmp_dir;  /* AV_SF_CMP_*: an av_cmp_dir */
  const av_ew_kernel *ew;
  const av_convert *cv;
  uint8_t in[3];
  uint8_t out;
  uint8_t esize; /* select: bytes to copy */
} av_sinstr;

typedef struct av_sinit {
  uint8_t reg;
  uint8_t size;
  const void *data; /* a constant */
  int32_t slot;     /* or a captured frame slot (when data is NULL) */
} av_sinit;

typedef struct av_scalar_prog {
  const av_sinstr *ins;
  uint32_t nins;
  const av_sinit *inits;
  uint32_t ninits;
  const uint8_t *args; /* register of each block argument */
  const uint8_t *arg_size;
  uint32_t nargs;
  const uint8_t *results;
  const uint8_t *res_size;
  uint32_t nresults;
} av_scalar_prog;

/* The register file of one program run. */
typedef uint64_t av_sregs[AV_SPROG_MAX_REGS][2];

/* Loads the registers that do not change between runs in one frame: constants and captured
 * values (a loop loads them once, then executes its programs every iteration). */
void av_scalar_prog_init(const av_scalar_prog *p, const av_frame *f, av_sregs regs);
/* Runs the program on registers prepared by av_scalar_prog_init: arguments from `in`,
 * results to `out` (every argument is read before any result is written). */
void av_scalar_prog_exec(const av_scalar_prog *p, av_sregs regs, const void *const *in,
                         void *const *out);
/* init + exec. */
av_code av_scalar_prog_run(const av_scalar_prog *p, const av_frame *f, const void *const *in,
                           void *const *out, av_diag *d);

#endif
