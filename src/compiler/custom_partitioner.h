/* Custom partitioners: the partitioning callbacks a framework registers for a custom-call
 * target through the PJRT Custom Partitioner extension (pjrt/partitioner_extension.c).
 * jax.experimental.custom_partitioning registers one for @CustomSPMDPartitioning: its
 * Python functions choose a call's shardings and build the per-device program that replaces
 * it (compiler/spmd_custom.c).
 *
 * The callbacks table and its argument structs have the layout XLA publishes
 * (xla/pjrt/c/pjrt_c_api_custom_partitioner_extension.h, JAX_CustomCallPartitioner_*),
 * declared here from that description. Strings are (data, size) pairs; shapes are serialized
 * xla.ShapeProto, shardings serialized xla.OpSharding. A callee reports failure through the
 * header (has_error, code, error_msg), and whatever it returns stays valid until its
 * cleanup_fn(data) is called, which the caller does once per call, error or not. */
#ifndef ANVIL_COMPILER_CUSTOM_PARTITIONER_H
#define ANVIL_COMPILER_CUSTOM_PARTITIONER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler/sharding.h"
#include "ir/ir.h"
#include "util/diag.h"

typedef struct av_cp_string {
  const char *data;
  size_t size;
} av_cp_string;

/* One operand or the result: its shape, and its sharding when it has one. */
typedef struct av_cp_aval {
  av_cp_string shape;
  bool has_sharding;
  av_cp_string sharding;
} av_cp_aval;

/* The header of every call: api_version in (0, the only version), the rest out. `code` is a
 * PJRT_Error_Code (an enum, int-sized). */
typedef struct av_cp_header {
  int64_t api_version;
  void *data;
  void (*cleanup_fn)(void *data);
  bool has_error;
  int32_t code;
  av_cp_string error_msg;
} av_cp_header;

typedef struct av_cp_partition_args {
  av_cp_header header;
  size_t num_args;
  av_cp_aval *op_args;
  av_cp_aval op_result;
  av_cp_string backend_config;
  /* out: the per-device program (StableHLO, MLIR bytecode or text), the shardings the
   * operands must have ([num_args]) and the result's */
  av_cp_string mlir_module;
  av_cp_string *args_sharding;
  av_cp_string result_sharding;
} av_cp_partition_args;

typedef struct av_cp_infer_args {
  av_cp_header header;
  size_t num_args;
  av_cp_aval *op_args;
  av_cp_string result_shape;
  av_cp_string backend_config;
  /* out */
  bool has_result_sharding;
  av_cp_string result_sharding;
} av_cp_infer_args;

typedef struct av_cp_propagate_args {
  av_cp_header header;
  av_cp_string backend_config;
  av_cp_string result_shape;
  av_cp_string result_sharding; /* in and out */
} av_cp_propagate_args;

typedef struct av_cp_callbacks av_cp_callbacks;
struct av_cp_callbacks {
  int64_t version;
  void *private_data;
  void (*dtor)(av_cp_callbacks *self);
  void (*partition)(av_cp_callbacks *self, av_cp_partition_args *args);
  void (*infer_sharding)(av_cp_callbacks *self, av_cp_infer_args *args);
  void (*propagate_user_sharding)(av_cp_callbacks *self, av_cp_propagate_args *args);
  bool can_side_effecting_have_replicated_sharding;
};

/* ---- the registry (process-wide; registrations are kept for the life of the process) */

/* Registers `cb` for custom calls whose target is name[0..len); a later registration of the
 * same name replaces the earlier one for compilations that start after it. */
av_code av_custom_partitioner_register(const char *name, size_t len, av_cp_callbacks *cb,
                                       av_diag *d);
/* The callbacks registered for a call target, or NULL. */
av_cp_callbacks *av_custom_partitioner_find(const char *target);
/* The callbacks for `op` when it is a custom call with a registered partitioner, or NULL. */
av_cp_callbacks *av_custom_partitioner_of(const av_op *op);

/* ---- calling them: operands and result described by their global types and shardings
 * (NULL: replicated) on `mesh`. Errors carry the op's location. */

typedef struct av_cp_partition_result {
  uint8_t *module;      /* the program's bytes (malloc'd copy) */
  size_t module_size;
  av_sharding *args;    /* [noperands] malloc'd, on `mesh` */
  av_sharding *results; /* [nresults] malloc'd, on `mesh` */
} av_cp_partition_result;

void av_cp_partition_result_free(av_cp_partition_result *r);

av_code av_cp_call_partition(av_cp_callbacks *cb, const av_op *op, const av_type *const *operand_types,
                             const av_sharding *const *operand_shardings,
                             const av_sharding *const *result_shardings, const av_mesh *mesh,
                             av_cp_partition_result *out, av_diag *d);

/* infer_sharding_from_operands, told the operands' shardings (NULL: none). *has is false when
 * the callback gives no sharding, or one that fits no operand's mesh (propagation then goes
 * on without it); else results[0..nresults) are set on the first operand mesh that holds
 * it. */
av_code av_cp_call_infer(av_cp_callbacks *cb, const av_op *op, const av_sharding *const *operand_shardings,
                         bool *has, av_sharding *results, av_diag *d);

#endif
