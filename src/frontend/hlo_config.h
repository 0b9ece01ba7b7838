/* xla.HloModuleProtoWithConfig for PJRT_Executable_OptimizedProgram.
 *
 * PyTorch/XLA calls GetHloModules() after every compile and accepts only the formats
 * "hlo_with_config" or "mlir"; for a program that arrived as an HloModuleProto the faithful
 * answer is that same module with a minimal config:
 *   HloModuleProtoWithConfig { hlo_module = 1: the module bytes;
 *                              config = 2: HloModuleConfigProto {
 *                                entry_computation_layout = 1: ProgramShapeProto,
 *                                replica_count = 4, num_partitions = 5 } }
 * XLA aborts (CHECK) when entry_computation_layout is missing, and needs the module's
 * host_program_shape, so both are always written: taken from the module's
 * host_program_shape (field 4), else from the entry computation's program_shape (which is
 * then also appended to the module bytes as field 4). */
#ifndef ANVIL_FRONTEND_HLO_CONFIG_H
#define ANVIL_FRONTEND_HLO_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"

/* On success *out is malloc'd (caller frees) and holds *out_size bytes. Fails with
 * INVALID_ARGUMENT on malformed input or when no program shape can be found. */
av_code av_hlo_module_with_config(const void *hlo, size_t size, int64_t replica_count,
                                  int64_t num_partitions, uint8_t **out, size_t *out_size,
                                  av_diag *d);

#endif
