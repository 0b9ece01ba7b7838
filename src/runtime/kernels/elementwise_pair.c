/* Two chained float ops in one pass: out = (a OP1 b) OP2 c, or c OP2 (a OP1 b).
 *
 * The compiler fuses a +, -, * or / whose only reader is another of them (the affine
 * updates v * c + d of loop bodies, x * s + t of normalisations). The intermediate stays in
 * a vector register instead of going through memory between two loops; each op rounds as
 * it would alone (-ffp-contract=off: never contracted to an FMA), so the bits are those of
 * the two loops. */
#include <string.h>

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

/* ---- iterated pairs: a loop body that is one pair updating one carried array ----
 * x <- PAIR(operands, with x as operand `pos`) `trips` times, in place. A block of ITER_VECS
 * vectors stays in registers across the iterations (vector types: the compilers keep them
 * there), so an iteration does not wait on the stores of the one before (with a call per
 * iteration, the load of the previous result was most of a small loop's time). Each lane does
 * the pair's IEEE ops in its order: the bits of calling the pair `trips` times. */
#define ITER_BYTES 64
#define ITER_VECS 4

#define ITER_FN(T, NAME, O1, EXPR)                                                             \
  typedef T NAME##_v __attribute__((vector_size(ITER_BYTES)));                                 \
  AV_CLONES static void NAME##_block(T *x, const T *a, const T *b, const T *c, int64_t trips,   \
                                     int pos) {                                                \
    enum { L = ITER_BYTES / sizeof(T) };                                                       \
    NAME##_v v[ITER_VECS], p[ITER_VECS], q[ITER_VECS];                                         \
    for (int k = 0; k < ITER_VECS; k++) { /* p, q: the operands other than x, in order */      \
      memcpy(&v[k], x + k * L, sizeof v[k]);                                                   \
      memcpy(&p[k], (pos == 0 ? b : a) + k * L, sizeof p[k]);                                  \
      memcpy(&q[k], (pos == 2 ? b : c) + k * L, sizeof q[k]);                                  \
    }                                                                                          \
    if (pos == 0) {                                                                            \
      for (int64_t t = 0; t < trips; t++)                                                      \
        for (int k = 0; k < ITER_VECS; k++) {                                                  \
          NAME##_v u = v[k] O1 p[k], w = q[k];                                                 \
          v[k] = (EXPR);                                                                       \
        }                                                                                      \
    } else if (pos == 1) {                                                                     \
      for (int64_t t = 0; t < trips; t++)                                                      \
        for (int k = 0; k < ITER_VECS; k++) {                                                  \
          NAME##_v u = p[k] O1 v[k], w = q[k];                                                 \
          v[k] = (EXPR);                                                                       \
        }                                                                                      \
    } else {                                                                                   \
      for (int k = 0; k < ITER_VECS; k++) p[k] = p[k] O1 q[k]; /* a OP1 b: invariant */       \
      for (int64_t t = 0; t < trips; t++)                                                      \
        for (int k = 0; k < ITER_VECS; k++) {                                                  \
          NAME##_v u = p[k], w = v[k];                                                         \
          v[k] = (EXPR);                                                                       \
        }                                                                                      \
    }                                                                                          \
    for (int k = 0; k < ITER_VECS; k++) memcpy(x + k * L, &v[k], sizeof v[k]);                \
  }                                                                                            \
  static void NAME(const void *const *in, void *xv, int64_t n, int64_t trips, int pos) {       \
    enum { B = ITER_VECS * ITER_BYTES / sizeof(T) };                                           \
    T *x = xv;                                                                                 \
    const T *op[3] = {in[0], in[1], in[2]};                                                    \
    for (int64_t j = 0; j < n; j += B) {                                                       \
      int64_t m = n - j < B ? n - j : B;                                                       \
      if (m == B) {                                                                            \
        NAME##_block(x + j, op[0] + j, op[1] + j, op[2] + j, trips, pos);                      \
        continue;                                                                              \
      }                                                                                        \
      /* the last, partial block: padded copies (the padding lanes' results are dropped) */  \
      T px[B], pa[B], pb[B], pc[B];                                                            \
      T *pad[3] = {pa, pb, pc};                                                                \
      for (int64_t i = 0; i < B; i++) {                                                        \
        int64_t s = j + (i < m ? i : 0);                                                       \
        px[i] = x[s];                                                                          \
        for (int o = 0; o < 3; o++) pad[o][i] = o == pos ? (T)0 : op[o][s];                    \
      }                                                                                        \
      NAME##_block(px, pa, pb, pc, trips, pos);                                                \
      for (int64_t i = 0; i < m; i++) x[j + i] = px[i];                                        \
    }                                                                                          \
  }
/* EXPR of u = (a OP1 b) and w = the third operand, as the pair loops compute it */
#define ITER_LOOP(T, S, N1, O1, N2, O2)                                                        \
  ITER_FN(T, iter_##S##_##N1##_##N2##_l, O1, u O2 w)                                           \
  ITER_FN(T, iter_##S##_##N1##_##N2##_r, O1, w O2 u)
#define ITER_SECOND(N1, O1)                                                                    \
  ITER_LOOP(float, f32, N1, O1, ADD, +) ITER_LOOP(float, f32, N1, O1, SUB, -)                  \
  ITER_LOOP(float, f32, N1, O1, MUL, *) ITER_LOOP(float, f32, N1, O1, DIV, /)                  \
  ITER_LOOP(double, f64, N1, O1, ADD, +) ITER_LOOP(double, f64, N1, O1, SUB, -)                \
  ITER_LOOP(double, f64, N1, O1, MUL, *) ITER_LOOP(double, f64, N1, O1, DIV, /)
PAIR_OPS(ITER_SECOND)

#define ITER_ROW(S, N1)                                                                        \
  {{iter_##S##_##N1##_ADD_l, iter_##S##_##N1##_ADD_r}, {iter_##S##_##N1##_SUB_l, iter_##S##_##N1##_SUB_r}, \
   {iter_##S##_##N1##_MUL_l, iter_##S##_##N1##_MUL_r}, {iter_##S##_##N1##_DIV_l, iter_##S##_##N1##_DIV_r}}
#define ITER_TABLE(S) {ITER_ROW(S, ADD), ITER_ROW(S, SUB), ITER_ROW(S, MUL), ITER_ROW(S, DIV)}

static const av_ew_iter_fn iter_fns[2][4][4][2] = {ITER_TABLE(f32), ITER_TABLE(f64)};

/* The pair table is read through a pointer the compiler cannot see through: an entry read
 * from memory is the address the kernels are called by (the ifunc resolved at load time),
 * while an entry folded at compile time (the search below, unrolled at -O3) would be the
 * symbol's canonical address in the executable (its PLT slot), which never compares equal. */
static const av_ew_fn (*const volatile pair_table)[4][4][2] = pair_fns;

av_ew_iter_fn av_ew_pair_iter_fn(av_ew_fn pair) {
  const av_ew_fn (*tab)[4][4][2] = pair_table;
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++)
        for (int s = 0; s < 2; s++)
          if (pair && tab[t][i][j][s] == pair) return iter_fns[t][i][j][s];
  return NULL;
}
