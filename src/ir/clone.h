/* Copying ops from one module into another: types, attributes and locations are copied into
 * the destination's arena (nothing is shared with the source, which may be freed after), and
 * every value the copies define gets a fresh id of the destination. Operands are looked up in
 * a map from source values (by id) to destination values: block arguments of the copied
 * regions and results of copied ops are added as they are made; values defined outside what
 * is copied must be mapped by the caller first (the arguments of a function whose body is
 * inlined, say). */
#ifndef ANVIL_IR_CLONE_H
#define ANVIL_IR_CLONE_H

#include <stdbool.h>

#include "ir/ir.h"
#include "util/diag.h"

typedef struct av_clone {
  av_module *dst;
  av_value **map; /* by source value id */
  uint32_t nmap;
  av_diag *d;
  bool failed; /* out of memory or an operand never mapped; d says which */
} av_clone;

void av_clone_init(av_clone *c, av_module *dst, av_diag *d);
void av_clone_free(av_clone *c);
/* Maps source value `from` to destination value `to`. */
bool av_clone_map(av_clone *c, const av_value *from, av_value *to);
/* The destination value mapped for `v`, or NULL. */
av_value *av_clone_lookup(const av_clone *c, const av_value *v);

const av_type *av_clone_type(av_clone *c, const av_type *t);
const av_attr *av_clone_attr(av_clone *c, const av_attr *a);

/* A copy of `op` (its regions included) inserted before `before` in block `b` (at the end
 * when before is NULL); NULL with c->failed set on failure. */
av_op *av_clone_op(av_clone *c, const av_op *op, av_block *b, av_op *before);

#endif
