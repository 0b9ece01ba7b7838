/* Two chained float ops in one pass: out = (a OP1 b) OP2 c, or c OP2 (a OP1 b).
 *
 * The compiler fuses a +, -, * or / whose only reader is another of them (the affine
 * updates v * c + d of loop bodies, x * s + t of normalisations). The intermediate stays in
 * a vector register instead of going through memory between two loops; each op rounds as
 * it would alone (-ffp-contract=off: never contracted to an FMA), so the bits are those of
 * the two loops. */
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/simd_clones.h"

/* X(name, operator) for the ops a pair is made of */
#define PAIR_OPS(X) X(ADD, +) X(SUB, -) X(MUL, *) X(DIV, /)

/* One loop: t = a OP1 b, then o = EXPR (of t and c). */
#define PAIR_FN(T, NAME, O1, EXPR)                                                             \
  AV_CLONES_FMA static void NAME(const void *const *in, void *out, int64_t n, const void *aux) { \
    (void)aux;                                                                                 \
    const T *a = in[0], *b = in[1], *c = in[2];                                                \
    T *o = out;                                                                                \
    AV_IVDEP                                                                                   \
    for (int64_t i = 0; i < n; i++) {                                                          \
      T t = a[i] O1 b[i];                                                                      \
      o[i] = (EXPR);                                                                           \
    }                                                                                          \
  }
/* _l: (a OP1 b) OP2 c; _r: c OP2 (a OP1 b) */
#define PAIR_LOOP(T, S, N1, O1, N2, O2)                                                        \
  PAIR_FN(T, pair_##S##_##N1##_##N2##_l, O1, t O2 c[i])                                        \
  PAIR_FN(T, pair_##S##_##N1##_##N2##_r, O1, c[i] O2 t)

#define PAIR_SECOND(N1, O1)                                                                    \
  PAIR_LOOP(float, f32, N1, O1, ADD, +) PAIR_LOOP(float, f32, N1, O1, SUB, -)                  \
  PAIR_LOOP(float, f32, N1, O1, MUL, *) PAIR_LOOP(float, f32, N1, O1, DIV, /)                  \
  PAIR_LOOP(double, f64, N1, O1, ADD, +) PAIR_LOOP(double, f64, N1, O1, SUB, -)                \
  PAIR_LOOP(double, f64, N1, O1, MUL, *) PAIR_LOOP(double, f64, N1, O1, DIV, /)
PAIR_OPS(PAIR_SECOND)

/* Position of an op among PAIR_OPS, or -1. */
static int pair_index(av_opcode op) {
  switch (op) {
    case AV_OP_ADD: return 0;
    case AV_OP_SUBTRACT: return 1;
    case AV_OP_MULTIPLY: return 2;
    case AV_OP_DIVIDE: return 3;
    default: return -1;
  }
}

#define PAIR_ROW(S, N1)                                                                        \
  {{pair_##S##_##N1##_ADD_l, pair_##S##_##N1##_ADD_r}, {pair_##S##_##N1##_SUB_l, pair_##S##_##N1##_SUB_r}, \
   {pair_##S##_##N1##_MUL_l, pair_##S##_##N1##_MUL_r}, {pair_##S##_##N1##_DIV_l, pair_##S##_##N1##_DIV_r}}
#define PAIR_TABLE(S) {PAIR_ROW(S, ADD), PAIR_ROW(S, SUB), PAIR_ROW(S, MUL), PAIR_ROW(S, DIV)}

static const av_ew_fn pair_fns[2][4][4][2] = {PAIR_TABLE(f32), PAIR_TABLE(f64)};

/* A kernel that can be half of a pair: its own typed loop (no compute type in between). */
static bool pairs(const av_ew_kernel *k) {
  return k->nin == 2 && !k->inner && pair_index(k->op) >= 0 &&
         (k->dtype == AV_DT_F32 || k->dtype == AV_DT_F64);
}

av_ew_fn av_ew_pair_fn(const av_ew_kernel *first, const av_ew_kernel *second, bool inner_left) {
  if (!pairs(first) || !pairs(second) || first->dtype != second->dtype) return NULL;
  return pair_fns[first->dtype == AV_DT_F64][pair_index(first->op)][pair_index(second->op)]
                 [inner_left ? 0 : 1];
}
