/* Fused regions as IR (cg_lower.c). */
#ifndef ANVIL_CODEGEN_CG_LOWER_H
#define ANVIL_CODEGEN_CG_LOWER_H

#include "codegen/cg_ir.h"
#include "codegen/codegen.h"

/* What the lowering asks of a target: whether it emits a node natively at `lanes` (else the
 * op it came from becomes a kernel call). */
typedef struct cg_target {
  bool (*native)(const cg_region *r, const cg_node *n, int lanes);
  int lanes;
} cg_target;

/* The IR storage type of a dtype (CG_VOID when the generator cannot hold it). */
cg_type cg_type_of_dtype(av_dtype t);
/* Builds region d into r (empty); false when the region has something the generator does
 * not take (r is then to be freed). */
bool cg_lower_region(const av_cg_region_desc *d, const cg_target *tg, cg_region *r);
/* One kernel's op on nodes in[] (nests): its IR, or a call of the kernel when the target
 * has no native form (allow_call), else CG_NO_NODE. */
uint32_t cg_lower_kernel(cg_region *r, const cg_target *tg, const av_ew_kernel *k, const uint32_t *in,
                         cg_type want, bool allow_call);
/* Builds nest d into r (empty), for `lanes` lanes; false when it has what nests cannot do. */
bool cg_lower_nest(const av_cg_nest_desc *d, const cg_target *tg, int lanes, cg_region *r);

#endif
