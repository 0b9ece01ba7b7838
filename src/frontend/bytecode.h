/* Loader for MLIR bytecode: StableHLO portable artifacts (VHLO dialect, what JAX sends through
 * PJRT) and plain MLIR bytecode of the builtin/func/stablehlo/chlo/sdy dialects.
 * Bytecode versions 0..6 and StableHLO (VHLO) versions 0.9.0 .. 1.20.0 are understood. */
#ifndef ANVIL_FRONTEND_BYTECODE_H
#define ANVIL_FRONTEND_BYTECODE_H

#include <stddef.h>

#include "ir/ir.h"
#include "util/diag.h"

/* Parses `size` bytes into a new module. Returns NULL and fills `d` (naming the section, byte
 * offset and op) on any error. The input is only read during the call: everything the module
 * needs, constants included, is copied once into the module's arena. */
av_module *av_load_mlir_bytecode(const void *data, size_t size, av_diag *d);

/* Like av_load_mlir_bytecode, but also decodes every attribute and type entry of the file, used
 * or not (for tests and fuzzing: checks the whole file against the format). */
av_module *av_load_mlir_bytecode_strict(const void *data, size_t size, av_diag *d);

/* True if `data` starts with the MLIR bytecode magic "ML\xEFR". */
int av_is_mlir_bytecode(const void *data, size_t size);

#endif
