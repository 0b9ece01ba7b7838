/* Unrolling an elementwise region's loop: two copies of the body per iteration, their nodes
 * interleaved, so that two independent dependency chains are in flight (see cg_unroll.c). */
#ifndef ANVIL_CODEGEN_CG_UNROLL_H
#define ANVIL_CODEGEN_CG_UNROLL_H

#include <stdbool.h>

#include "codegen/cg_ir.h"

/* Whether unrolling `r` is expected to pay on a target with `nvec` vector and `nmask` mask
 * registers of `vl` bytes: two copies' live values must fit them. */
bool cg_unroll_worth(const cg_region *r, int nvec, int nmask, int vl);
/* `out` (empty) becomes `r` with two copies of its body: the second reads, writes and
 * indexes `r->lanes` elements further on, and loop invariants are shared. False when out of
 * memory (out is then freed). */
bool cg_unroll2(const cg_region *r, cg_region *out);

#endif
