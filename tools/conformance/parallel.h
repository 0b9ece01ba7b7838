/* The StableHLO interpreter's multi-process test cases (interpreter.run_parallel), run on
 * several anvil devices; shared by anvil-conformance and test_conformance. */
#ifndef ANVIL_TOOLS_CONFORMANCE_PARALLEL_H
#define ANVIL_TOOLS_CONFORMANCE_PARALLEL_H

#include <stddef.h>

#include "runtime/fp_env.h"

enum { AV_CONF_PASS, AV_CONF_FAIL, AV_CONF_SKIP, AV_CONF_NOT_PARALLEL };

/* Runs one test case (MLIR text) whose @main calls interpreter.run_parallel, treating
 * subnormals as `mode` says: AV_CONF_PASS, or AV_CONF_FAIL / AV_CONF_SKIP with the reason
 * written to `reason`; AV_CONF_NOT_PARALLEL when the case is not of that form. */
int av_conf_run_parallel(const char *text, size_t len, av_denormals mode, char *reason,
                         size_t cap);

#endif
