/* Binary float ops with one operand a single value: o[i] = a[i] OP s, or s OP b[i].
 *
 * Fused chains use these where an operand is a broadcast scalar, or a row broadcast that is
 * constant over the tile at hand (softmax's x - max and e / sum): the value stays in a
 * register instead of being copied over a tile and read back. The same IEEE operation per
 * element as the ordinary loop, so the same bits. */
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/simd_clones.h"

/* in[0] and in[1] as the ordinary loop takes them; in[SIDE] points at the single value s and
 * the other operand is the array v */
#define BCAST_FN(T, NAME, SIDE, EXPR)                                                          \
  AV_CLONES_FMA static void NAME(const void *const *in, void *out, int64_t n, const void *aux) { \
    (void)aux;                                                                                 \
    const T s = *(const T *)in[SIDE], *v = in[1 - (SIDE)];                                     \
    T *o = out;                                                                                \
    AV_IVDEP                                                                                   \
    for (int64_t i = 0; i < n; i++) o[i] = (EXPR);                                             \
  }
#define BCAST_LOOP(T, S, N, OP)                                                                \
  BCAST_FN(T, bcast_##S##_##N##_0, 0, s OP v[i])                                               \
  BCAST_FN(T, bcast_##S##_##N##_1, 1, v[i] OP s)

#define BCAST_TYPES(N, OP) BCAST_LOOP(float, f32, N, OP) BCAST_LOOP(double, f64, N, OP)
BCAST_TYPES(ADD, +)
BCAST_TYPES(SUB, -)
BCAST_TYPES(MUL, *)
BCAST_TYPES(DIV, /)

#define BCAST_ROW(S)                                                                           \
  {{bcast_##S##_ADD_0, bcast_##S##_ADD_1}, {bcast_##S##_SUB_0, bcast_##S##_SUB_1},             \
   {bcast_##S##_MUL_0, bcast_##S##_MUL_1}, {bcast_##S##_DIV_0, bcast_##S##_DIV_1}}
static const av_ew_fn bcast_fns[2][4][2] = {BCAST_ROW(f32), BCAST_ROW(f64)};

av_ew_fn av_ew_scalar_operand_fn(const av_ew_kernel *k, int side) {
  int op;
  switch (k->op) {
    case AV_OP_ADD: op = 0; break;
    case AV_OP_SUBTRACT: op = 1; break;
    case AV_OP_MULTIPLY: op = 2; break;
    case AV_OP_DIVIDE: op = 3; break;
    default: return NULL;
  }
  if (k->nin != 2 || k->inner || (side != 0 && side != 1) ||
      (k->dtype != AV_DT_F32 && k->dtype != AV_DT_F64))
    return NULL;
  return bcast_fns[k->dtype == AV_DT_F64][op][side];
}
