/* An HLO module view of a compiled program, for PJRT_Executable_OptimizedProgram.
 *
 * Frameworks read an executable's "optimized HLO" for three things: its text (JAX's
 * compiled.as_text()), the layouts of its parameters and results (jaxlib before PJRT C API
 * 0.93), and, in jaxlib before the Shardings extension (0.4.35 through 0.8.x), the shardings of
 * its parameters and results (HloModuleProto.spmd_parameters_shardings / spmd_output_sharding).
 * anvil compiles to its own plan, not to HLO, so the view is an honest one-instruction module:
 *
 *   HloModuleProtoWithConfig {
 *     hlo_module: entry computation "main":
 *       p.i = parameter(i) (per-device shape, row-major layout, its sharding)
 *       ROOT anvil_program = (results...) custom-call(p.0, ...),
 *           custom_call_target="anvil_program", backend_config=<the program's StableHLO text>
 *     with host_program_shape, spmd_parameters_shardings / spmd_output_sharding (a tuple);
 *     config: entry_computation_layout, replica_count, num_partitions }
 *
 * The shardings are whatever the caller passes (serialized xla.OpSharding): today those of
 * main's arguments and results; a partitioner that decides them plugs its own in here. */
#ifndef ANVIL_FRONTEND_HLO_VIEW_H
#define ANVIL_FRONTEND_HLO_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/dtype.h"
#include "util/diag.h"
#include "util/proto_writer.h"

typedef struct av_hlo_view_value {
  bool token;    /* a token (dtype and dims unused) */
  av_dtype dtype;
  int rank;
  const int64_t *dims; /* per-device dims */
  /* Serialized xla.OpSharding (size 0: REPLICATED); ignored unless the view has shardings. */
  const void *sharding;
  size_t sharding_size;
} av_hlo_view_value;

typedef struct av_hlo_view {
  const char *name; /* the module's name */
  int num_params;
  const av_hlo_view_value *params;
  int num_results;
  const av_hlo_view_value *results;
  int64_t replica_count, num_partitions;
  bool has_shardings; /* write the values' shardings (a partitioned multi-device program) */
  const char *program_text; /* backend_config of the anvil_program call; may be NULL */
} av_hlo_view;

/* The fields of an xla.ShapeProto for one value (dtype, dims, row-major layout; or a token),
 * written into `w` (also used for the shapes custom partitioners are told). */
av_code av_hlo_view_shape(av_pbw *w, const av_hlo_view_value *v, av_diag *d);

/* Serialized xla.HloModuleProtoWithConfig of the view: *out malloc'd (caller frees). */
av_code av_hlo_view_build(const av_hlo_view *v, uint8_t **out, size_t *out_size, av_diag *d);

#endif
