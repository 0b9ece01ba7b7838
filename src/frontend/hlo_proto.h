/* xla.HloModuleProto decoded into plain C structs (no IR yet): the wire-format layer of the
 * HLO frontend. Field numbers: /work/shared/research/hlo_proto_fields.md (XLA 92f7b595).
 * Everything is allocated in the caller's scratch arena; strings and byte fields point into
 * the input buffer (`bytes`/`len` pairs, NOT NUL-terminated) or are arena copies (`name`s). */
#ifndef ANVIL_FRONTEND_HLO_PROTO_H
#define ANVIL_FRONTEND_HLO_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/diag.h"

typedef struct hlo_ints {
  int64_t *v;
  size_t n;
} hlo_ints;

typedef struct hlo_bytes {
  const uint8_t *p;
  size_t n;
} hlo_bytes;

typedef struct hlo_shape {
  int element_type;         /* xla.PrimitiveType */
  hlo_ints dims;
  hlo_ints dynamic;         /* is_dynamic_dimension as 0/1, may be shorter than dims */
  struct hlo_shape *tuple;  /* TUPLE: element shapes */
  size_t ntuple;
  bool has_layout;
  hlo_ints minor_to_major;
} hlo_shape;

typedef struct hlo_window_dim {
  int64_t size, stride, pad_lo, pad_hi, window_dilation, base_dilation;
  bool reversal;
} hlo_window_dim;

typedef struct hlo_slice_dim {
  int64_t start, limit, stride;
} hlo_slice_dim;

typedef struct hlo_pad_dim {
  int64_t lo, hi, interior;
} hlo_pad_dim;

typedef struct hlo_conv_dims {
  int64_t input_batch, input_feature, kernel_input_feature, kernel_output_feature,
      output_batch, output_feature;
  hlo_ints input_spatial, kernel_spatial, output_spatial;
} hlo_conv_dims;

typedef struct hlo_dot_dims {
  hlo_ints lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
} hlo_dot_dims;

typedef struct hlo_gather_dims {
  hlo_ints offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
      start_indices_batching_dims;
  int64_t index_vector_dim;
} hlo_gather_dims;

typedef struct hlo_scatter_dims {
  hlo_ints update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
      input_batching_dims, scatter_indices_batching_dims;
  int64_t index_vector_dim;
} hlo_scatter_dims;

typedef struct hlo_instr {
  const char *name;   /* arena copy, NUL-terminated */
  const char *opcode; /* arena copy */
  hlo_shape shape;
  int64_t id;
  int64_t parameter_number;
  int64_t tuple_index;
  hlo_ints operand_ids, called_ids, dimensions, dynamic_slice_sizes, gather_slice_sizes,
      fft_length, operand_precision;
  hlo_bytes literal; /* raw LiteralProto; decoded by hlo_literal.c */
  bool has_literal;
  hlo_window_dim *window;
  size_t nwindow;
  bool has_window;
  hlo_slice_dim *slices;
  size_t nslices;
  hlo_pad_dim *padding;
  size_t npadding;
  bool has_conv, has_dot, has_gather, has_scatter;
  hlo_conv_dims conv;
  hlo_dot_dims dot;
  hlo_gather_dims gather;
  hlo_scatter_dims scatter;
  hlo_ints *replica_groups; /* from replica_groups (49) or collective_device_list (87) */
  size_t ngroups;
  int64_t (*source_target)[2];
  size_t npairs;
  int64_t channel_id, feature_group_count, batch_group_count, exponent_bits, mantissa_bits,
      feature_index, distribution, rng_algorithm, fft_type, k, custom_call_api_version;
  float epsilon;
  bool is_stable, indices_are_sorted, unique_indices, custom_call_has_side_effect, largest,
      use_global_device_ids;
  /* Cholesky (62) / TriangularSolve (59) options. */
  bool lower, left_side, unit_diagonal;
  int64_t transpose_a; /* xla.TriangularSolveOptions.Transpose */
  const char *comparison_direction, *comparison_type, *custom_call_target; /* "" if unset */
  hlo_bytes backend_config;
  hlo_bytes infeed_config, outfeed_config; /* fields 27, 22 */
  /* OpMetadata (7): source_file = 3, source_line = 4 (for locations). */
  hlo_bytes source_file;
  int64_t source_line;
  /* custom-call layout constraints (operand_shapes_with_layout = 57). */
  hlo_shape *operand_shapes;
  size_t noperand_shapes;
} hlo_instr;

typedef struct hlo_computation {
  const char *name;
  int64_t id, root_id;
  hlo_instr *instrs;
  size_t ninstrs;
} hlo_computation;

/* HloInputOutputAliasProto / HloBufferDonorProto entries (donation). */
typedef struct hlo_alias {
  hlo_ints output_index; /* empty for buffer donors */
  int64_t parameter_number;
  hlo_ints parameter_index;
} hlo_alias;

typedef struct hlo_module_pb {
  const char *name;
  hlo_alias *aliases; /* input_output_alias (8) */
  size_t naliases;
  hlo_alias *donors;  /* buffer_donor (18) */
  size_t ndonors;
  const char *entry_name;
  int64_t entry_id;
  bool has_entry_id;
  hlo_computation *comps;
  size_t ncomps;
} hlo_module_pb;

/* Decodes the whole module. On malformed input returns false with an error in `d` naming
 * the computation/instruction being read. */
bool hlo_proto_decode(const void *data, size_t size, av_arena *scratch, hlo_module_pb *out,
                      av_diag *d);

/* Decodes one ShapeProto (used for literal shapes too). `depth` bounds tuple nesting. */
bool hlo_proto_decode_shape(const uint8_t *p, size_t n, av_arena *scratch, hlo_shape *out,
                            int depth, const char **err);

#endif
