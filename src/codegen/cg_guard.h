/* Guarded tails: skipping a select's rare arm when no lane of an iteration takes it.
 *
 * JAX's erf_inv (inside every jax.random.normal) picks, per lane, one of two polynomials:
 * nine selects of coefficient pairs on one condition (w < 5), and a sqrt feeding only the
 * rare arm (w >= 5 has probability 0.3% per lane). A vector body computes both arms on every
 * lane. A guard splits the loop body after the last of its conditions: when every lane of
 * every condition is true (kortest), a fast copy of the rest of the body runs in which each
 * select on those conditions is its true arm, so the false arms' exclusive work (the sqrt)
 * is gone and the selects are moves; otherwise the ordinary body runs. Where all lanes are
 * true the two give the same bits, so generated code still equals the interpreter.
 *
 * This file decides whether a region has a guard worth taking and what its fast tail needs;
 * the back end (cg_x86.c) emits the branch and both tails. */
#ifndef ANVIL_CODEGEN_CG_GUARD_H
#define ANVIL_CODEGEN_CG_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "codegen/cg_ir.h"

enum { CG_GUARD_MAX_CONDS = 8 };

typedef struct cg_guard {
  uint32_t at;        /* first node of the tails: every condition is computed before it */
  uint32_t nconds;
  uint32_t conds[CG_GUARD_MAX_CONDS]; /* PRED nodes the fast tail assumes true in every lane */
  bool *fast_live;    /* per node >= at: computed in the fast tail */
  bool *alias;        /* per node >= at: a select on a condition, there a copy of in[1] */
  uint32_t *fast_last; /* per node: its last reader on the fast path (prefix and fast tail);
                          before `at` when the fast tail does not read it */
} cg_guard;

/* Plans the guard of elementwise region `r` (inv: its loop invariants). False when there is
 * none worth taking (or out of memory); `g` then owns nothing. */
bool cg_guard_plan(const cg_region *r, const bool *inv, cg_guard *g);
void cg_guard_free(cg_guard *g);

#endif
