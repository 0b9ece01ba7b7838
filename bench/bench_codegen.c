/* bench-codegen [--reps N]: how long the code generator takes for a fused region of 100 ops
 * (issue #26's budget: under 1 ms), per ISA this CPU has, for three shapes: an f32 chain of
 * arithmetic, an f32 chain with transcendentals (each expanded into tens of IR nodes), and a
 * u32 chain of threefry-like adds, rotates and xors. Prints microseconds per region (median
 * of N generations) and the code size. A benchmark: nothing fails on speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/codegen.h"
#include "runtime/kernels/elementwise.h"

enum { NOPS = 100 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A chain: register 0 and 1 inputs, 2 a scalar, then one register per op, the last an
 * output; op k reads the two previous values (or the scalar). */
static void run_shape(const char *shape, const av_opcode *cycle, int ncycle, av_dtype t, int reps) {
  static av_ew_kernel k[NOPS];
  static av_fused_op ops[NOPS];
  static av_fused_reg regs[NOPS + 3];
  static av_dtype dt[NOPS + 3];
  size_t es = av_dtype_size(t);
  regs[0] = (av_fused_reg){AV_FUSED_IN, 0, es, NULL};
  regs[1] = (av_fused_reg){AV_FUSED_IN, 1, es, NULL};
  regs[2] = (av_fused_reg){AV_FUSED_SCALAR, 2, es, NULL};
  for (int r = 0; r < NOPS + 3; r++) dt[r] = t;
  for (int o = 0; o < NOPS; o++) {
    av_opcode op = cycle[o % ncycle];
    if (!av_ew_prepare(op, t, t, AV_CMP_EQ, AV_CMP_DEFAULT, &k[o])) {
      fprintf(stderr, "%s: op %s not supported\n", shape, av_opcode_name(op));
      return;
    }
    uint32_t out = (uint32_t)o + 3;
    regs[out] = (av_fused_reg){o == NOPS - 1 ? AV_FUSED_OUT : AV_FUSED_TEMP, 0, es, NULL};
    uint32_t a = out - 1, b = o % 3 == 2 ? 2 : out >= 4 ? out - 2 : 1;
    ops[o] = (av_fused_op){&k[o], k[o].nin, {a, b, 0}, out, NULL, 0};
  }
  av_fused_params p = {1 << 20, NOPS + 3, NOPS, regs, ops, NULL, NULL, 0};
  av_cg_region_desc d = {&p, ops, NOPS, dt, NULL, NULL, NULL, shape};
  static const char *const isas[] = {"avx512", "avx2"};
  for (int i = 0; i < 2; i++) {
    double *t_us = malloc(sizeof *t_us * (size_t)reps);
    av_cg_kernel *g = NULL;
    for (int r = 0; r < reps; r++) {
      double t0 = now();
      g = av_codegen_fused_isa(&d, isas[i]);
      t_us[r] = (now() - t0) * 1e6;
      if (!g) break;
      av_codegen_free(g);
    }
    if (g) {
      qsort(t_us, (size_t)reps, sizeof *t_us, cmp_double);
      printf("%-28s %-7s %8.1f us per region (median of %d, min %.1f)\n", shape, isas[i], t_us[reps / 2], reps, t_us[0]);
    } else {
      printf("%-28s %-7s not generated (not on this CPU?)\n", shape, isas[i]);
    }
    free(t_us);
  }
}

int main(int argc, char **argv) {
  int reps = 200;
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
  if (reps < 1) reps = 1;
  static const av_opcode arith[] = {AV_OP_MULTIPLY, AV_OP_ADD, AV_OP_SUBTRACT, AV_OP_MAXIMUM, AV_OP_DIVIDE};
  static const av_opcode trans[] = {AV_OP_MULTIPLY, AV_OP_ADD, AV_OP_TANH, AV_OP_MULTIPLY, AV_OP_EXPONENTIAL,
                                    AV_OP_SUBTRACT, AV_OP_MULTIPLY, AV_OP_ADD, AV_OP_LOGISTIC, AV_OP_MINIMUM};
  static const av_opcode bits[] = {AV_OP_ADD, AV_OP_SHIFT_LEFT, AV_OP_XOR, AV_OP_SHIFT_RIGHT_LOGICAL, AV_OP_OR};
  run_shape("100 f32 arithmetic ops", arith, 5, AV_DT_F32, reps);
  run_shape("100 f32 ops, 30 tanh/exp/sig", trans, 10, AV_DT_F32, reps);
  run_shape("100 u32 add/shift/xor/or", bits, 5, AV_DT_U32, reps);
  return 0;
}
