/* Two copies of a region's body per loop iteration, node by node interleaved.
 *
 * A long chain of dependent operations (threefry's twenty rounds of add, rotate, xor) runs at
 * one operation per latency when each iteration is one chain: the out-of-order core cannot
 * look far enough ahead into the next iteration to overlap it. With the copies interleaved
 * (node i of copy A, then node i of copy B), every step has two independent operations, and
 * the chain's latency is paid once per two vectors. Each copy does exactly the operations of
 * the original on its own elements, so results do not change; the second copy's loads and
 * stores sit `lanes` elements further on (cg_node.eoff), its index is the first's plus
 * `lanes`, and loop invariants (constants, scalars and what is computed from them) are the
 * same nodes for both. */
#include "codegen/cg_unroll.h"

#include <stdlib.h>

/* The most vector registers one copy of the body holds at once: values computed in the loop
 * (not invariants), from their definition to their last use, each as many registers as its
 * lanes of its type take (8-byte values of a 4-byte region: two). Predicates live in mask
 * registers and are counted apart (*masks). */
static int peak_registers(const cg_region *r, int vl, int *masks) {
  uint32_t *last = calloc(r->n ? r->n : 1, sizeof *last);
  bool *inv = malloc(sizeof *inv * (r->n ? r->n : 1));
  int peak = 0, live = 0, kpeak = 0, klive = 0;
  if (!last || !inv) {
    free(last);
    free(inv);
    *masks = 1 << 20;
    return 1 << 20;
  }
  cg_invariants(r, inv);
  for (uint32_t i = 0; i < r->n; i++)
    for (int k = 0; k < r->v[i].nin; k++) last[r->v[i].in[k]] = i;
  int *drop = calloc(r->n + 1, sizeof *drop), *kdrop = calloc(r->n + 1, sizeof *kdrop);
  for (uint32_t i = 0; drop && kdrop && i < r->n; i++) {
    live -= drop[i];
    klive -= kdrop[i];
    const cg_node *n = &r->v[i];
    if (inv[i] || n->type == CG_VOID || !n->uses) continue;
    if (n->type == CG_PRED) {
      klive++;
      kdrop[last[i]]++;
    } else {
      int bytes = cg_type_size((cg_type)n->type) * r->lanes, regs = (bytes + vl - 1) / vl;
      live += regs;
      drop[last[i]] += regs;
    }
    if (live > peak) peak = live;
    if (klive > kpeak) kpeak = klive;
  }
  if (!drop || !kdrop) peak = kpeak = 1 << 20;
  free(drop);
  free(kdrop);
  free(last);
  free(inv);
  *masks = kpeak;
  return peak;
}

bool cg_unroll_worth(const cg_region *r, int nvec, int nmask, int vl) {
  /* twice the live values: only with AVX-512's registers (28 allocatable); nests have their
   * own loop; a call into an interpreter's kernel on every iteration spills every register
   * anyway (a CALL_IF, taken only for rare lanes such as a sine's huge arguments, does not) */
  if (nvec < 24 || r->nest || r->failed || r->n > 2048) return false;
  for (uint32_t i = 0; i < r->n; i++)
    if (r->v[i].op == CG_CALL || r->v[i].op == CG_CALL_CONVERT) return false;
  int masks, regs = peak_registers(r, vl, &masks);
  return 2 * regs <= nvec && 2 * masks <= nmask + 1;
}

static cg_node remapped(const cg_node *n, const uint32_t *map) {
  cg_node c = *n;
  for (int k = 0; k < c.nin; k++) c.in[k] = map[c.in[k]];
  c.uses = 0;
  return c;
}

bool cg_unroll2(const cg_region *r, cg_region *out) {
  uint32_t *a = malloc(sizeof *a * (r->n ? r->n : 1)), *b = malloc(sizeof *b * (r->n ? r->n : 1));
  bool *inv = malloc(sizeof *inv * (r->n ? r->n : 1));
  bool ok = a && b && inv;
  if (ok) cg_invariants(r, inv);
  for (uint32_t i = 0; ok && i < r->n; i++) {
    const cg_node *n = &r->v[i];
    a[i] = cg_add(out, remapped(n, a));
    if (inv[i]) {
      b[i] = a[i];
    } else if (n->op == CG_INDEX) {
      cg_type t = (cg_type)n->type;
      b[i] = cg_op2(out, CG_ADD, t, a[i], cg_const(out, t, (uint64_t)r->lanes));
    } else {
      cg_node c = remapped(n, b);
      if (n->op == CG_LOAD || n->op == CG_STORE) c.eoff = n->eoff + r->lanes;
      b[i] = cg_add(out, c);
    }
    ok = !out->failed;
  }
  free(a);
  free(b);
  free(inv);
  if (ok) cg_finish(out);
  if (!ok || out->failed) {
    cg_region_free(out);
    return false;
  }
  out->nest = r->nest;
  out->lanes = r->lanes;
  out->unroll = 2;
  return true;
}
