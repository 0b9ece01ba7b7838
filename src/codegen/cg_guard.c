/* Guarded tails (see cg_guard.h): which conditions, where the tails start, and what the
 * fast tail computes. */
#include "codegen/cg_guard.h"

#include <stdlib.h>
#include <string.h>

/* A condition is worth a guard when assuming it true in every lane removes an expensive
 * operation (a sqrt or a divide, whose units serve one vector in several cycles) or many
 * cheap ones. A select that becomes a move counts half: the move costs no execution unit
 * but is still an instruction. */
enum { GUARD_MIN_WITH_EXPENSIVE = 3, GUARD_MIN = 12 };

/* live[i]: whether node i is needed when the nodes with cond[] set are true (false, for
 * ASSUME_FALSE) in every lane, for the nodes from `from` on (a select there on such a
 * condition reads only that arm); nodes before `from` keep every operand. */
enum { ASSUME_TRUE = 1, ASSUME_FALSE = 2 };
static void liveness(const cg_region *r, const uint8_t *cond, uint32_t from, bool *live) {
  memset(live, 0, r->n * sizeof *live);
  for (uint32_t i = r->n; i-- > 0;) {
    const cg_node *n = &r->v[i];
    if (n->op == CG_STORE) live[i] = true;
    if (!live[i]) continue;
    if (i >= from && n->op == CG_SELECT && n->type != CG_PRED && cond[n->in[0]]) {
      live[n->in[cond[n->in[0]] == ASSUME_FALSE ? 2 : 1]] = true;
      continue;
    }
    for (int k = 0; k < n->nin; k++) live[n->in[k]] = true;
  }
}

/* What assuming `cond` from `from` on saves: nodes no longer computed (twice) plus selects
 * that become moves, and whether a sqrt or divide is among the nodes saved. */
static int savings(const cg_region *r, const bool *inv, const uint8_t *cond, uint32_t from, bool *live,
                   bool *expensive) {
  liveness(r, cond, from, live);
  int saved = 0;
  *expensive = false;
  for (uint32_t i = from; i < r->n; i++) {
    const cg_node *n = &r->v[i];
    if (inv[i]) continue;
    if (!live[i]) {
      saved += 2;
      if (n->op == CG_FSQRT || n->op == CG_FDIV) *expensive = true;
    } else if (n->op == CG_SELECT && n->type != CG_PRED && cond[n->in[0]]) {
      saved += 1;
    }
  }
  return saved;
}

static bool worth(int saved, bool expensive) {
  return expensive ? saved >= 2 * GUARD_MIN_WITH_EXPENSIVE : saved >= 2 * GUARD_MIN;
}

void cg_guard_free(cg_guard *g) {
  free(g->fast_live);
  free(g->alias);
  free(g->fast_last);
  memset(g, 0, sizeof *g);
}

bool cg_guard_plan(const cg_region *r, const bool *inv, cg_guard *g) {
  memset(g, 0, sizeof *g);
  if (r->nest || r->n == 0) return false;
  for (uint32_t i = 0; i < r->n; i++) /* calls spill around themselves: not in a tail */
    if (r->v[i].op == CG_CALL || r->v[i].op == CG_CALL_CONVERT || r->v[i].op == CG_CALL_IF) return false;
  uint8_t *cond = calloc(r->n, sizeof *cond);
  bool *live = calloc(r->n, sizeof *live);
  bool *seen = calloc(r->n, sizeof *seen);
  bool ok = cond && live && seen;
  /* candidates: conditions of selects, each tried alone */
  for (uint32_t i = 0; ok && i < r->n && g->nconds < CG_GUARD_MAX_CONDS; i++) {
    const cg_node *n = &r->v[i];
    if (n->op != CG_SELECT || inv[n->in[0]] || seen[n->in[0]]) continue;
    uint32_t c = n->in[0];
    seen[c] = true;
    /* Assuming the condition true must save enough, and not much more than assuming it
     * false: a select that overrides a long computation with a cheap special value (log's
     * select(u == 0, -inf, log(u)), a NaN's x + x) is true in rare lanes, so a tail assuming
     * it never runs. A piecewise function's arms (erf_inv's w - 2.5 and sqrt(w) - 3) both
     * take a little work. */
    bool expensive, unused;
    cond[c] = ASSUME_FALSE;
    int if_false = savings(r, inv, cond, c + 1, live, &unused);
    cond[c] = ASSUME_TRUE;
    int if_true = savings(r, inv, cond, c + 1, live, &expensive);
    if (worth(if_true, expensive) && if_true <= 3 * if_false + 6) g->conds[g->nconds++] = c;
    cond[c] = 0;
  }
  /* all of them at once, from after the last */
  bool expensive = false;
  for (uint32_t k = 0; k < g->nconds; k++) {
    cond[g->conds[k]] = ASSUME_TRUE;
    if (g->conds[k] + 1 > g->at) g->at = g->conds[k] + 1;
  }
  if (ok && g->nconds > 0) {
    int saved = savings(r, inv, cond, g->at, live, &expensive);
    ok = worth(saved, expensive);
  } else {
    ok = false;
  }
  if (ok) {
    g->fast_live = calloc(r->n, sizeof *g->fast_live);
    g->alias = calloc(r->n, sizeof *g->alias);
    g->fast_last = malloc(r->n * sizeof *g->fast_last);
    ok = g->fast_live && g->alias && g->fast_last;
  }
  if (ok) {
    for (uint32_t i = 0; i < r->n; i++) g->fast_last[i] = i; /* no reader yet */
    for (uint32_t i = 0; i < r->n; i++) {
      const cg_node *n = &r->v[i];
      bool tail = i >= g->at;
      if (tail) {
        g->fast_live[i] = live[i] && !inv[i];
        g->alias[i] = g->fast_live[i] && n->op == CG_SELECT && n->type != CG_PRED && cond[n->in[0]];
        if (!g->fast_live[i]) continue;
      }
      for (int k = 0; k < n->nin; k++)
        if (!(tail && g->alias[i] && k != 1)) g->fast_last[n->in[k]] = i;
    }
  }
  free(cond);
  free(live);
  free(seen);
  if (!ok) cg_guard_free(g);
  return ok;
}
