/* Reading op attributes in whichever form a frontend produced them (array<i64: ...>,
 * dense<...> : tensor<Nxi64>, [1, 2] arrays of integers; enums as ENUM, STRING or the
 * opaque text `#stablehlo<comparison_direction LT>`). */
#ifndef ANVIL_COMPILER_ATTRS_H
#define ANVIL_COMPILER_ATTRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* Integer list attribute `name` into out[cap]; *n receives the count. false if absent or not
 * an integer list, or longer than cap. */
bool av_attr_get_ints(const av_op *op, const char *name, int64_t *out, size_t cap, size_t *n);
bool av_attr_ints_of(const av_attr *a, int64_t *out, size_t cap, size_t *n);
/* Single integer (INT, or a one-element integer list/dense). */
bool av_attr_get_int(const av_op *op, const char *name, int64_t *v);
/* Boolean list (BOOLS, dense i1, array of BOOL). */
bool av_attr_get_bools(const av_op *op, const char *name, bool *out, size_t cap, size_t *n);
bool av_attr_get_bool(const av_op *op, const char *name, bool *v);
/* Enum spelling ("LT", "TOTALORDER") copied into buf; false if absent. */
bool av_attr_get_enum(const av_op *op, const char *name, char *buf, size_t cap);
/* String or symbol attribute (without a leading '@'); NULL if absent. */
const char *av_attr_get_str(const av_op *op, const char *name);
/* The value of a constant-like op: attribute `value`, else its first DENSE attribute (the
 * generic form of check.expect_*_const). NULL if none. */
const av_attr *av_op_dense_attr(const av_op *op);
/* Copies the `n` elements of type `dt` a DENSE attribute stands for into dst: its data, or
 * its one element repeated (a splat). false when it is no DENSE of `dt` holding n elements or
 * one. */
bool av_attr_dense_copy(const av_attr *a, av_dtype dt, int64_t n, void *dst);

#endif
