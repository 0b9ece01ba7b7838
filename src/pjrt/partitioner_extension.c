/* The PJRT Custom Partitioner extension (type PJRT_Extension_Type_Custom_Partitioner,
 * version 1). JAX calls it for every plugin it discovers (xla_bridge.register_plugin_callbacks):
 *
 * - register_batch_partitionable(name): jax.ffi.register_ffi_target_as_batch_partitionable.
 *   The target goes into the FFI registry's list (runtime/ffi/ffi.h); anvil's partitioner
 *   then runs such a custom call per device on the shards of its leading batch dimensions
 *   (compiler/spmd_rules.c).
 * - register_custom_partitioner(name, callbacks): jax.experimental.custom_partitioning
 *   registers its partitioner (for @CustomSPMDPartitioning) at import. The callbacks go into
 *   the compiler's registry (compiler/custom_partitioner.h), which owns them from now on and
 *   keeps them for the life of the process; sharded programs call them when compiled
 *   (compiler/spmd_custom.c).
 *
 * The argument structs are declared here with the extension's published layout
 * (xla/pjrt/c/pjrt_c_api_custom_partitioner_extension.h). */
#include <stddef.h>

#include "compiler/custom_partitioner.h"
#include "pjrt/ffi_extension.h"
#include "pjrt/partitioner_extension.h"
#include "pjrt/pjrt_internal.h"
#include "runtime/ffi/ffi.h"

typedef struct av_register_partitioner_args {
  size_t struct_size;
  const char *name;
  size_t name_size;
  av_cp_callbacks *callbacks; /* JAX_CustomCallPartitioner_Callbacks* */
} av_register_partitioner_args;

typedef struct av_register_batch_args {
  size_t struct_size;
  const char *name;
  size_t name_size;
} av_register_batch_args;

enum {
  AV_REGISTER_PARTITIONER_SIZE = offsetof(av_register_partitioner_args, callbacks) + sizeof(av_cp_callbacks *),
  AV_REGISTER_BATCH_SIZE = offsetof(av_register_batch_args, name_size) + sizeof(size_t),
};

static PJRT_Error *register_custom_partitioner(av_register_partitioner_args *args) {
  const char *fn = "PJRT_Register_Custom_Partitioner";
  AV_REQUIRE(args && args->struct_size >= AV_REGISTER_PARTITIONER_SIZE, AV_INVALID_ARGUMENT,
             "%s: bad arguments", fn);
  AV_REQUIRE(args->name && args->name_size, AV_INVALID_ARGUMENT, "%s: no name", fn);
  av_diag d;
  av_diag_init(&d);
  if (av_custom_partitioner_register(args->name, args->name_size, args->callbacks, &d) != AV_OK)
    return av_error_from_diag(&d);
  return NULL;
}

static PJRT_Error *register_batch_partitionable(av_register_batch_args *args) {
  const char *fn = "PJRT_Register_Batch_Partitionable";
  AV_REQUIRE(args && args->struct_size >= AV_REGISTER_BATCH_SIZE, AV_INVALID_ARGUMENT,
             "%s: bad arguments", fn);
  av_diag d;
  av_diag_init(&d);
  if (av_ffi_set_batch_partitionable(args->name, args->name_size, &d) != AV_OK)
    return av_error_from_diag(&d);
  return NULL;
}

const av_partitioner_extension av_partitioner_ext = {
    .base = {.struct_size = sizeof(av_partitioner_extension),
             .type = PJRT_Extension_Type_Custom_Partitioner,
             .next = (PJRT_Extension_Base *)&av_ffi_ext.base},
    .register_custom_partitioner = register_custom_partitioner,
    .register_batch_partitionable = register_batch_partitionable,
};
