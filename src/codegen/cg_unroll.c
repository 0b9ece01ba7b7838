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

bool cg_unroll_worth(const cg_region *r, int nvec) {
  /* twice the live values: only with AVX-512's registers (28 allocatable); calls into the
   * interpreter's kernels are not chains worth overlapping; nests have their own loop */
  if (nvec < 24 || r->nest || r->failed || r->n > 2048) return false;
  uint32_t wide = 0; /* 8-byte values, two registers each already (an iota's index math) */
  for (uint32_t i = 0; i < r->n; i++) {
    uint8_t op = r->v[i].op;
    if (op == CG_CALL || op == CG_CALL_CONVERT || op == CG_CALL_IF) return false;
    wide += cg_type_size((cg_type)r->v[i].type) == 8;
  }
  return 8 * wide <= r->n;
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
      b[i] = cg_op2(out, CG_ADD, CG_I64, a[i], cg_const(out, CG_I64, (uint64_t)r->lanes));
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
