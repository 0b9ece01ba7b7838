/* Unrolling an elementwise region's loop: two or four copies of the body per iteration, their
 * nodes interleaved, so that as many independent dependency chains are in flight (see
 * cg_unroll.c). */
#ifndef ANVIL_CODEGEN_CG_UNROLL_H
#define ANVIL_CODEGEN_CG_UNROLL_H

#include <stdbool.h>
#include <stdint.h>

#include "codegen/cg_ir.h"

/* How many copies of `r`'s body (over `elements` elements) per iteration are expected to pay
 * on a target with `nvec` vector and `nmask` mask registers of `vl` bytes: 1 (no unrolling),
 * 2, or 4 for long bodies over large arrays. Two copies' live values must fit the
 * registers. */
int cg_unroll_copies(const cg_region *r, int64_t elements, int nvec, int nmask, int vl);
/* `out` (empty) becomes `r` with `k` copies of its body: copy c reads, writes and indexes
 * c * `r->lanes` elements further on, and loop invariants are shared. False when out of
 * memory (out is then freed). */
bool cg_unroll(const cg_region *r, cg_region *out, int k);

#endif
