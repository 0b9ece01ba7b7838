/* Two or four copies of a region's body per loop iteration, node by node interleaved.
 *
 * A long chain of dependent operations (threefry's twenty rounds of add, rotate, xor) runs at
 * one operation per latency when each iteration is one chain: the out-of-order core cannot
 * look far enough ahead into the next iteration to overlap it. With the copies interleaved
 * (node i of copy A, then node i of copy B), every step has two independent operations, and
 * the chain's latency is paid once per two vectors (four copies: see cg_unroll_copies). Each
 * copy does exactly the operations of the original on its own elements, so results do not
 * change; copy c's loads and stores sit c * `lanes` elements further on (cg_node.eoff), its
 * index is the first's plus c * `lanes`, and loop invariants (constants, scalars and what is
 * computed from them) are the same nodes for all. */
#include "codegen/cg_unroll.h"

#include <stdlib.h>

/* non-invariant nodes from which a body takes four copies */
#define CG_LONG_BODY 64
/* and elements from which it does */
#define CG_LONG_ELEMENTS 65536

/* The most vector registers one copy of the body holds at once: values computed in the loop
 * (not invariants), from their definition to their last use, each as many registers as its
 * lanes of its type take (8-byte values of a 4-byte region: two). Predicates live in mask
 * registers and are counted apart (*masks); *body is the number of non-invariant nodes. */
static int peak_registers(const cg_region *r, int vl, int *masks, uint32_t *body) {
  uint32_t *last = calloc(r->n ? r->n : 1, sizeof *last);
  bool *inv = malloc(sizeof *inv * (r->n ? r->n : 1));
  int peak = 0, live = 0, kpeak = 0, klive = 0;
  *body = 0;
  if (!last || !inv) {
    free(last);
    free(inv);
    *masks = 1 << 20;
    return 1 << 20;
  }
  cg_invariants(r, inv);
  for (uint32_t i = 0; i < r->n; i++) *body += !inv[i];
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

int cg_unroll_copies(const cg_region *r, int64_t elements, int nvec, int nmask, int vl) {
  /* more live values: only with AVX-512's registers (28 allocatable); nests have their own
   * loop; a call into an interpreter's kernel on every iteration spills every register anyway
   * (a CALL_IF, taken only for rare lanes such as a sine's huge arguments, does not) */
  if (nvec < 24 || r->nest || r->failed || r->n > 2048) return 1;
  for (uint32_t i = 0; i < r->n; i++)
    if (r->v[i].op == CG_CALL || r->v[i].op == CG_CALL_CONVERT) return 1;
  int masks;
  uint32_t body;
  int regs = peak_registers(r, vl, &masks, &body);
  if (2 * regs > nvec || 2 * masks > nmask + 1) return 1;
  /* A body of many dependent steps (threefry's rounds, a chain of transcendentals) is longer
   * than the core's reorder window, so even two copies leave it waiting on latencies; four
   * copies pay for the spills they cause (measured: jax.random.normal 0.89x, the sine-to-
   * sigmoid chain 0.85x of two copies' time). Short bodies gain nothing from four; small
   * arrays (a sampler's per-step draws of a few thousand) lose 3% to the doubled code and
   * the longer tail. */
  return elements >= CG_LONG_ELEMENTS && body >= CG_LONG_BODY ? 4 : 2;
}

static cg_node remapped(const cg_node *n, const uint32_t *map) {
  cg_node c = *n;
  for (int k = 0; k < c.nin; k++) c.in[k] = map[c.in[k]];
  c.uses = 0;
  return c;
}

bool cg_unroll(const cg_region *r, cg_region *out, int k) {
  size_t n1 = r->n ? r->n : 1;
  uint32_t *m = malloc(sizeof *m * n1 * (size_t)k);
  bool *inv = malloc(sizeof *inv * n1);
  bool ok = m && inv;
  if (ok) cg_invariants(r, inv);
  for (uint32_t i = 0; ok && i < r->n; i++) {
    const cg_node *n = &r->v[i];
    uint32_t *a = m;
    a[i] = cg_add(out, remapped(n, a));
    for (int c = 1; c < k; c++) {
      uint32_t *b = m + (size_t)c * n1;
      if (inv[i]) {
        b[i] = a[i];
      } else if (n->op == CG_INDEX) {
        cg_type t = (cg_type)n->type;
        b[i] = cg_op2(out, CG_ADD, t, a[i], cg_const(out, t, (uint64_t)r->lanes * (uint64_t)c));
      } else {
        cg_node cn = remapped(n, b);
        if (n->op == CG_LOAD || n->op == CG_STORE) cn.eoff = n->eoff + r->lanes * c;
        b[i] = cg_add(out, cn);
      }
    }
    ok = !out->failed;
  }
  free(m);
  free(inv);
  if (ok) cg_finish(out);
  if (!ok || out->failed) {
    cg_region_free(out);
    return false;
  }
  out->nest = r->nest;
  out->lanes = r->lanes;
  out->unroll = k;
  return true;
}
