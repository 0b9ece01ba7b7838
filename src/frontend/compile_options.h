/* The compile options (xla.CompileOptionsProto) as anvil reads them (compile_options.c). */
#ifndef ANVIL_FRONTEND_COMPILE_OPTIONS_H
#define ANVIL_FRONTEND_COMPILE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"

/* Told the serialized xla.OpSharding of the value custom_call @InspectSharding `id` inspects
 * (backend_config "anvil:ID", from the anvil Python package). Returns 0, or writes a
 * NUL-terminated message of at most errcap bytes into err. */
typedef int32_t (*av_inspect_sharding_fn)(uint64_t id, const void *op_sharding, int64_t size,
                                          char *err, int64_t errcap);

typedef struct av_compile_options {
  int num_replicas;   /* >= 1 */
  int num_partitions; /* >= 1 */
  /* device_assignment[replica * num_partitions + partition] = device id; NULL = identity */
  int64_t *device_assignment;
  bool use_spmd_partitioning;
  bool use_shardy_partitioner;
  /* DebugOptions.xla_dump_to, or the xla_dump_to compile option: where to dump what is
   * compiled ("-": stdout); malloc'd, NULL when unset */
  char *dump_to;
  /* the xla_dump_hlo_as_proto compile option: xla_dump_to also gets the HLO view as a proto */
  bool dump_hlo_as_proto;
  /* Not from the options' bytes: the client's InspectSharding dispatcher (create option
   * inspect_sharding_dispatcher), told the propagated sharding of each custom_call
   * @InspectSharding's operand at compile time (jax.debug.inspect_array_sharding). */
  av_inspect_sharding_fn inspect_sharding;
} av_compile_options;

/* Decodes a serialized CompileOptionsProto (empty input gives the defaults: 1 replica,
 * 1 partition). The device_assignment array is malloc'd; free with av_compile_options_free. */
av_code av_compile_options_parse(const void *data, size_t size, av_compile_options *out,
                                 av_diag *d);
void av_compile_options_free(av_compile_options *o);

#endif
