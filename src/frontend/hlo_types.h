/* HLO shapes and literals -> IR types and constant attributes. */
#ifndef ANVIL_FRONTEND_HLO_TYPES_H
#define ANVIL_FRONTEND_HLO_TYPES_H

#include "frontend/hlo_proto.h"
#include "ir/ir.h"

enum { HLO_PT_TUPLE = 13, HLO_PT_OPAQUE = 14, HLO_PT_TOKEN = 17 };

/* xla.PrimitiveType -> av_dtype; AV_DT_INVALID for TUPLE/TOKEN/OPAQUE/unknown numbers. */
av_dtype hlo_dtype(int primitive_type);

/* av_dtype -> xla.PrimitiveType; 0 (PRIMITIVE_TYPE_INVALID) for AV_DT_INVALID. */
int hlo_primitive_type(av_dtype dtype);

/* Type of a non-tuple shape (tensor or token). NULL with *err on a bad shape. */
const av_type *hlo_leaf_type(av_module *m, const hlo_shape *s, const char **err);

/* Number of leaves of a (possibly nested) tuple shape; a non-tuple shape has one. */
size_t hlo_shape_leaf_count(const hlo_shape *s);
/* Fills types[0..hlo_shape_leaf_count) in depth-first order. */
bool hlo_shape_leaf_types(av_module *m, const hlo_shape *s, const av_type **types,
                          const char **err);
bool hlo_shape_is_tuple(const hlo_shape *s);

/* Decodes a LiteralProto for a constant of shape `shape` into one DENSE attribute per leaf
 * (depth-first), in anvil storage (row-major, one av_dtype_size slot per element). */
bool hlo_literal_leaves(av_module *m, av_arena *scratch, const hlo_shape *shape, hlo_bytes lit,
                        const av_attr **out, const char **err);

#endif
