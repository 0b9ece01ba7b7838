/* stablehlo.async_start / async_done run synchronously, and scheduling hints between values
 * are dropped (async_inline.c). */
#ifndef ANVIL_COMPILER_ASYNC_INLINE_H
#define ANVIL_COMPILER_ASYNC_INLINE_H

#include "ir/ir.h"

/* Rewrites m in place: every async_start whose future only async_dones read has its region's
 * ops moved in front of it (the region's arguments reading the async_start's operands), and
 * the async_dones' results become the values the region returns; both ops are removed.
 * anvil runs a program's steps in order, so a collective started early and finished late is
 * the same computation as the plain collective (JAX's psum_start(...).done(),
 * all_gather_start, ppermute_start: tests/async_collectives_test.py). An async pair it cannot
 * read (a future passed elsewhere, mismatched types) is left for the lowering to report.
 * Before that, custom_call @control_dep (jax.experimental.control_deps.schedule: "run src
 * before dst", no results) is removed: steps run in program order on anvil. */
void av_inline_async(av_module *m);

#endif
