/* Reading attribute values in the forms different frontends produce. */
#ifndef ANVIL_IR_ATTR_UTIL_H
#define ANVIL_IR_ATTR_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* An integer list held as INTS, BOOLS, an ARRAY of INT/BOOL, a single INT, or a DENSE tensor of
 * integers/bools (splats expanded): writes up to `cap` values to `out` and the count to `*n`.
 * False if the attribute is NULL, of another kind, or has more than `cap` values. */
bool av_attr_as_i64s(const av_attr *a, int64_t *out, size_t cap, size_t *n);

/* Number of values av_attr_as_i64s would produce; -1 if it is not an integer list. */
int64_t av_attr_i64s_count(const av_attr *a);

#endif
