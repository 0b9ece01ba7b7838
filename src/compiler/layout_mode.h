/* The memory layouts JAX asks for on main's arguments and results (mhlo.layout_mode:
 * "default", "auto" or an XLA minor-to-major list "{0,1}"). anvil computes on dense row-major
 * arrays; the PJRT layer stores a buffer in the layout its executable promises and converts
 * at the boundary, so a layout is only a permutation of the dimensions (no tiling). */
#ifndef ANVIL_COMPILER_LAYOUT_MODE_H
#define ANVIL_COMPILER_LAYOUT_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

typedef enum {
  AV_LAYOUT_ERROR = -1,   /* a mode anvil cannot honour; the reason is in `why` */
  AV_LAYOUT_DEFAULT = 0,  /* dense row-major: minor_to_major = {rank-1, ..., 0} */
  AV_LAYOUT_CUSTOM = 1,   /* minor_to_major[0..rank) holds another permutation */
} av_layout_kind;

/* The layout of `ef`'s argument (output == false) or result i of rank `rank`. "auto" is the
 * default for an argument; for a result that is a transpose of an argument, the layout that
 * makes the transpose of a row-major array free (what XLA:CPU's layout assignment picks),
 * else the default. */
av_layout_kind av_layout_of(const av_func *ef, bool output, int i, int rank,
                            int64_t *minor_to_major, char *why, size_t why_size);

/* Parses an XLA layout text "{2,0,1}" of rank `rank` into minor_to_major. */
av_layout_kind av_layout_parse(const char *text, int rank, int64_t *minor_to_major, char *why,
                               size_t why_size);

#endif
