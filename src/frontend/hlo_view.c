/* The HLO module view of a compiled program (see hlo_view.h). Field numbers are those of
 * xla/service/hlo.proto, xla/xla.proto and xla/xla_data.proto. */
#include "frontend/hlo_view.h"

#include <stdio.h>
#include <stdlib.h>

#include "frontend/hlo_types.h"
#include "util/proto_writer.h"

enum {
  /* ShapeProto */
  SHAPE_ELEMENT_TYPE = 2, SHAPE_DIMENSIONS = 3, SHAPE_TUPLE_SHAPES = 4, SHAPE_LAYOUT = 5,
  LAYOUT_MINOR_TO_MAJOR = 1,
  /* ProgramShapeProto */
  PROGRAM_PARAMETERS = 1, PROGRAM_RESULT = 2, PROGRAM_PARAMETER_NAMES = 3,
  /* HloInstructionProto */
  INSTR_NAME = 1, INSTR_OPCODE = 2, INSTR_SHAPE = 3, INSTR_PARAMETER_NUMBER = 9,
  INSTR_CUSTOM_CALL_TARGET = 28, INSTR_ID = 35, INSTR_OPERAND_IDS = 36, INSTR_SHARDING = 40,
  INSTR_BACKEND_CONFIG = 43,
  /* HloComputationProto */
  COMP_NAME = 1, COMP_INSTRUCTIONS = 2, COMP_PROGRAM_SHAPE = 4, COMP_ID = 5, COMP_ROOT_ID = 6,
  /* HloModuleProto */
  MODULE_NAME = 1, MODULE_ENTRY_NAME = 2, MODULE_COMPUTATIONS = 3, MODULE_HOST_PROGRAM_SHAPE = 4,
  MODULE_ID = 5, MODULE_ENTRY_ID = 6, MODULE_SPMD_OUTPUT_SHARDING = 12,
  MODULE_SPMD_PARAMETERS_SHARDINGS = 14,
  /* HloModuleProtoWithConfig, HloModuleConfigProto */
  WITH_CONFIG_MODULE = 1, WITH_CONFIG_CONFIG = 2,
  CONFIG_ENTRY_LAYOUT = 1, CONFIG_REPLICA_COUNT = 4, CONFIG_NUM_PARTITIONS = 5,
  CONFIG_USE_SPMD_PARTITIONING = 7,
  /* OpSharding */
  SHARDING_TYPE = 1, SHARDING_TUPLE_SHARDINGS = 5, SHARDING_TYPE_TUPLE = 2,
};

enum { PT_TUPLE = 13, PT_TOKEN = 17, VIEW_MAX_RANK = 64 };

/* A nested message built in its own writer, appended as field `num`. */
static void write_message(av_pbw *w, uint32_t num, const av_pbw *sub) {
  if (sub->failed)
    w->failed = true;
  else
    av_pbw_bytes(w, num, sub->buf, sub->len);
}

/* A repeated int64 field, packed (proto3's encoding); nothing for n == 0. */
static void write_packed(av_pbw *w, uint32_t num, const int64_t *v, size_t n) {
  if (!n) return;
  size_t len = 0;
  for (size_t i = 0; i < n; i++) len += av_pb_varint_size((uint64_t)v[i]);
  uint8_t *buf = malloc(len);
  if (!buf) {
    w->failed = true;
    return;
  }
  uint8_t *p = buf;
  for (size_t i = 0; i < n; i++) p = av_pb_put_varint(p, (uint64_t)v[i]);
  av_pbw_bytes(w, num, buf, len);
  free(buf);
}

av_code av_hlo_view_shape(av_pbw *w, const av_hlo_view_value *v, av_diag *d) {
  if (v->token) {
    av_pbw_varint(w, SHAPE_ELEMENT_TYPE, PT_TOKEN);
    return AV_OK;
  }
  int pt = hlo_primitive_type(v->dtype);
  if (!pt)
    return av_diag_set(d, AV_UNIMPLEMENTED, "HLO view: element type %s has no HLO equivalent",
                       av_dtype_mlir_name(v->dtype));
  if (v->rank < 0 || v->rank > VIEW_MAX_RANK)
    return av_diag_set(d, AV_INTERNAL, "HLO view: rank %d", v->rank);
  av_pbw_varint(w, SHAPE_ELEMENT_TYPE, (uint64_t)pt);
  write_packed(w, SHAPE_DIMENSIONS, v->dims, (size_t)v->rank);
  int64_t minor_to_major[VIEW_MAX_RANK];
  for (int k = 0; k < v->rank; k++) minor_to_major[k] = v->rank - 1 - k;
  av_pbw layout;
  av_pbw_init(&layout);
  write_packed(&layout, LAYOUT_MINOR_TO_MAJOR, minor_to_major, (size_t)v->rank);
  write_message(w, SHAPE_LAYOUT, &layout); /* an empty layout for scalars, as XLA has */
  av_pbw_free(&layout);
  return AV_OK;
}

static av_code shape_field(av_pbw *w, uint32_t num, const av_hlo_view_value *v,
                           av_diag *d) {
  av_pbw s;
  av_pbw_init(&s);
  av_code rc = av_hlo_view_shape(&s, v, d);
  if (rc == AV_OK) write_message(w, num, &s);
  av_pbw_free(&s);
  return rc;
}

static av_code result_shape(av_pbw *w, uint32_t num, const av_hlo_view *v, av_diag *d) {
  av_pbw s;
  av_pbw_init(&s);
  av_pbw_varint(&s, SHAPE_ELEMENT_TYPE, PT_TUPLE);
  av_code rc = AV_OK;
  for (int i = 0; rc == AV_OK && i < v->num_results; i++)
    rc = shape_field(&s, SHAPE_TUPLE_SHAPES, &v->results[i], d);
  if (rc == AV_OK) write_message(w, num, &s);
  av_pbw_free(&s);
  return rc;
}

static av_code program_shape(av_pbw *w, uint32_t num, const av_hlo_view *v, av_diag *d) {
  av_pbw s;
  av_pbw_init(&s);
  av_code rc = AV_OK;
  for (int i = 0; rc == AV_OK && i < v->num_params; i++)
    rc = shape_field(&s, PROGRAM_PARAMETERS, &v->params[i], d);
  if (rc == AV_OK) rc = result_shape(&s, PROGRAM_RESULT, v, d);
  for (int i = 0; rc == AV_OK && i < v->num_params; i++) {
    char name[24];
    snprintf(name, sizeof name, "p.%d", i);
    av_pbw_string(&s, PROGRAM_PARAMETER_NAMES, name);
  }
  if (rc == AV_OK) write_message(w, num, &s);
  av_pbw_free(&s);
  return rc;
}

/* The results' shardings as one TUPLE OpSharding (what XLA keeps for a tuple root). */
static void output_sharding(av_pbw *w, uint32_t num, const av_hlo_view *v) {
  av_pbw s;
  av_pbw_init(&s);
  av_pbw_varint(&s, SHARDING_TYPE, SHARDING_TYPE_TUPLE);
  for (int i = 0; i < v->num_results; i++)
    av_pbw_bytes(&s, SHARDING_TUPLE_SHARDINGS, v->results[i].sharding,
                      v->results[i].sharding_size);
  write_message(w, num, &s);
  av_pbw_free(&s);
}

/* Instruction ids 1..num_params are the parameters, num_params + 1 the call; the computation
 * takes the next id (ids are unique across a module). */
static av_code entry_computation(av_pbw *w, uint32_t num, const av_hlo_view *v,
                                 int64_t comp_id, av_diag *d) {
  av_pbw c, in;
  av_pbw_init(&c);
  av_code rc = AV_OK;
  av_pbw_string(&c, COMP_NAME, "main");
  for (int i = 0; rc == AV_OK && i < v->num_params; i++) {
    char name[24];
    snprintf(name, sizeof name, "p.%d", i);
    av_pbw_init(&in);
    av_pbw_string(&in, INSTR_NAME, name);
    av_pbw_string(&in, INSTR_OPCODE, "parameter");
    rc = shape_field(&in, INSTR_SHAPE, &v->params[i], d);
    av_pbw_varint(&in, INSTR_PARAMETER_NUMBER, (uint64_t)i);
    av_pbw_varint(&in, INSTR_ID, (uint64_t)i + 1);
    if (v->has_shardings)
      av_pbw_bytes(&in, INSTR_SHARDING, v->params[i].sharding, v->params[i].sharding_size);
    write_message(&c, COMP_INSTRUCTIONS, &in);
    av_pbw_free(&in);
  }
  int64_t call_id = (int64_t)v->num_params + 1;
  if (rc == AV_OK) {
    av_pbw_init(&in);
    av_pbw_string(&in, INSTR_NAME, "anvil_program");
    av_pbw_string(&in, INSTR_OPCODE, "custom-call");
    rc = result_shape(&in, INSTR_SHAPE, v, d);
    av_pbw_varint(&in, INSTR_ID, (uint64_t)call_id);
    int64_t *operands = malloc(sizeof *operands * (size_t)(v->num_params ? v->num_params : 1));
    if (!operands) in.failed = true;
    for (int i = 0; operands && i < v->num_params; i++) operands[i] = i + 1;
    if (operands) write_packed(&in, INSTR_OPERAND_IDS, operands, (size_t)v->num_params);
    free(operands);
    av_pbw_string(&in, INSTR_CUSTOM_CALL_TARGET, "anvil_program");
    if (v->has_shardings) output_sharding(&in, INSTR_SHARDING, v);
    if (v->program_text) av_pbw_string(&in, INSTR_BACKEND_CONFIG, v->program_text);
    write_message(&c, COMP_INSTRUCTIONS, &in);
    av_pbw_free(&in);
  }
  if (rc == AV_OK) rc = program_shape(&c, COMP_PROGRAM_SHAPE, v, d);
  av_pbw_varint(&c, COMP_ID, (uint64_t)comp_id);
  av_pbw_varint(&c, COMP_ROOT_ID, (uint64_t)call_id);
  if (rc == AV_OK) write_message(w, num, &c);
  av_pbw_free(&c);
  return rc;
}

av_code av_hlo_view_build(const av_hlo_view *v, uint8_t **out, size_t *out_size, av_diag *d) {
  *out = NULL;
  *out_size = 0;
  if (v->num_params < 0 || v->num_results < 0)
    return av_diag_set(d, AV_INTERNAL, "HLO view: negative parameter or result count");
  int64_t comp_id = (int64_t)v->num_params + 2;
  av_pbw module, config, top;
  av_pbw_init(&module);
  av_pbw_init(&config);
  av_pbw_init(&top);
  av_pbw_string(&module, MODULE_NAME, v->name ? v->name : "anvil");
  av_pbw_string(&module, MODULE_ENTRY_NAME, "main");
  av_code rc = entry_computation(&module, MODULE_COMPUTATIONS, v, comp_id, d);
  if (rc == AV_OK) rc = program_shape(&module, MODULE_HOST_PROGRAM_SHAPE, v, d);
  av_pbw_varint(&module, MODULE_ID, 1);
  av_pbw_varint(&module, MODULE_ENTRY_ID, (uint64_t)comp_id);
  if (v->has_shardings) {
    /* With no results XLA keeps the one (REPLICATED) sharding of the empty tuple, and jaxlib
     * expects exactly one output sharding then. */
    if (v->num_results == 0)
      av_pbw_bytes(&module, MODULE_SPMD_OUTPUT_SHARDING, NULL, 0);
    else
      output_sharding(&module, MODULE_SPMD_OUTPUT_SHARDING, v);
    for (int i = 0; i < v->num_params; i++)
      av_pbw_bytes(&module, MODULE_SPMD_PARAMETERS_SHARDINGS, v->params[i].sharding,
                        v->params[i].sharding_size);
  }
  if (rc == AV_OK) rc = program_shape(&config, CONFIG_ENTRY_LAYOUT, v, d);
  av_pbw_varint(&config, CONFIG_REPLICA_COUNT,
                     (uint64_t)(v->replica_count > 0 ? v->replica_count : 1));
  av_pbw_varint(&config, CONFIG_NUM_PARTITIONS,
                     (uint64_t)(v->num_partitions > 0 ? v->num_partitions : 1));
  if (v->has_shardings) av_pbw_varint(&config, CONFIG_USE_SPMD_PARTITIONING, 1);
  write_message(&top, WITH_CONFIG_MODULE, &module);
  write_message(&top, WITH_CONFIG_CONFIG, &config);
  if (rc == AV_OK) {
    *out = av_pbw_take(&top, out_size);
    if (!*out) rc = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "HLO view: out of memory");
  }
  av_pbw_free(&module);
  av_pbw_free(&config);
  av_pbw_free(&top);
  return rc;
}
