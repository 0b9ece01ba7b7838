/* One entry for every program format a framework can send: picks the frontend. */
#ifndef ANVIL_FRONTEND_LOAD_H
#define ANVIL_FRONTEND_LOAD_H

#include <stddef.h>

#include "ir/ir.h"
#include "util/diag.h"

/* format "mlir": MLIR bytecode (starts with "ML\xEFR") or MLIR text; format "hlo": a serialized
 * HloModuleProto. Returns NULL with `d` filled on any error. */
av_module *av_load_module(const char *format, size_t format_size, const void *code, size_t size,
                          av_diag *d);

#endif
