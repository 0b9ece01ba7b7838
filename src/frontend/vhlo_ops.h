/* Op schemas for the bytecode reader: how each known op's properties blob is laid out, and
 * which IR op name a VHLO op becomes (vhlo.add_v1 -> stablehlo.add). */
#ifndef ANVIL_FRONTEND_VHLO_OPS_H
#define ANVIL_FRONTEND_VHLO_OPS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct bc_prop {
  const char *name;
  bool optional; /* stored as varint (idx << 1 | present) instead of a plain index */
} bc_prop;

typedef struct bc_op_schema {
  const char *name;    /* full bytecode name: "vhlo.dot_general_v2", "stablehlo.add", "sdy.mesh" */
  const char *ir_name; /* IR op name */
  uint8_t nprops;
  const bc_prop *props; /* in blob order */
} bc_op_schema;

/* First schema row for `full_name`, or NULL. Some ops have several historical layouts (func.func
 * gained `no_inline`); bc_next_op_schema gives the next row for the same op, or NULL. */
const bc_op_schema *bc_find_op_schema(const char *full_name);
const bc_op_schema *bc_next_op_schema(const bc_op_schema *s);

#endif
