/* Property layouts of the ops the bytecode reader knows: for each op, its inherent attributes in
 * the order they are stored in the op's properties blob (sorted by name), and whether each one
 * is optional (stored as `varint (attrIdx << 1 | present)`) or required (`varint attrIdx`).
 * VHLO rows come from VhloOps.td of StableHLO 1.20.0 (every VHLO attribute is required);
 * stablehlo rows from StablehloOps.td (the native, non-portable encoding); plus the builtin,
 * func, chlo and sdy ops that occur in JAX artifacts. Facts tabulated from the research notes
 * (/work/shared/research/vhlo_ops_table.txt, stablehlo_native_ops_props.txt). */
#include <string.h>

#include "frontend/vhlo_ops.h"

#define R(n) {n, false}
#define O(n) {n, true}

static const bc_prop P_vhlo_all_gather_v1[] = {R("all_gather_dim"), R("channel_id"), R("replica_groups"), R("use_global_device_ids")};
static const bc_prop P_vhlo_all_gather_v2[] = {R("all_gather_dim"), R("channel_id"), R("replica_groups"), R("use_global_device_ids")};
static const bc_prop P_vhlo_all_reduce_v1[] = {R("channel_id"), R("replica_groups"), R("use_global_device_ids")};
static const bc_prop P_vhlo_all_reduce_v2[] = {R("channel_id"), R("replica_groups"), R("use_global_device_ids")};
static const bc_prop P_vhlo_all_to_all_v1[] = {R("channel_id"), R("concat_dimension"), R("replica_groups"), R("split_count"), R("split_dimension")};
static const bc_prop P_vhlo_all_to_all_v2[] = {R("channel_id"), R("concat_dimension"), R("replica_groups"), R("split_count"), R("split_dimension")};
static const bc_prop P_vhlo_batch_norm_grad_v1[] = {R("epsilon"), R("feature_index")};
static const bc_prop P_vhlo_batch_norm_inference_v1[] = {R("epsilon"), R("feature_index")};
static const bc_prop P_vhlo_batch_norm_training_v1[] = {R("epsilon"), R("feature_index")};
static const bc_prop P_vhlo_broadcast_in_dim_v1[] = {R("broadcast_dimensions")};
static const bc_prop P_vhlo_broadcast_v1[] = {R("broadcast_sizes")};
static const bc_prop P_vhlo_call_v1[] = {R("callee")};
static const bc_prop P_vhlo_cbrt_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_cholesky_v1[] = {R("lower")};
static const bc_prop P_vhlo_collective_broadcast_v1[] = {R("channel_id"), R("replica_groups")};
static const bc_prop P_vhlo_collective_broadcast_v2[] = {R("channel_id"), R("has_dynamic_root"), R("replica_groups")};
static const bc_prop P_vhlo_collective_reduce_v1[] = {R("channel_id"), R("has_dynamic_root"), R("replica_groups"), R("use_global_device_ids")};
static const bc_prop P_vhlo_collective_permute_v1[] = {R("channel_id"), R("source_target_pairs")};
static const bc_prop P_vhlo_compare_v1[] = {R("compare_type"), R("comparison_direction")};
static const bc_prop P_vhlo_composite_v1[] = {R("composite_attributes"), R("decomposition"), R("name"), R("version")};
static const bc_prop P_vhlo_composite_v2[] = {R("composite_attributes"), R("decomposition"), R("name"), R("version")};
static const bc_prop P_vhlo_concatenate_v1[] = {R("dimension")};
static const bc_prop P_vhlo_constant_v1[] = {R("value")};
static const bc_prop P_vhlo_convolution_v1[] = {R("batch_group_count"), R("feature_group_count"), R("input_batch_dimension"), R("input_feature_dimension"), R("input_spatial_dimensions"), R("kernel_input_feature_dimension"), R("kernel_output_feature_dimension"), R("kernel_spatial_dimensions"), R("lhs_dilation"), R("output_batch_dimension"), R("output_feature_dimension"), R("output_spatial_dimensions"), R("padding"), R("precision_config"), R("rhs_dilation"), R("window_reversal"), R("window_strides")};
static const bc_prop P_vhlo_cosine_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_cross_replica_sum_v1[] = {R("replica_groups")};
static const bc_prop P_vhlo_custom_call_v1[] = {R("api_version"), R("backend_config"), R("call_target_name"), R("called_computations"), R("has_side_effect"), R("operand_layouts"), R("output_operand_aliases"), R("result_layouts")};
static const bc_prop P_vhlo_custom_call_v2[] = {R("api_version"), R("backend_config"), R("call_target_name"), R("called_computations"), R("has_side_effect"), R("operand_layouts"), R("output_operand_aliases"), R("result_layouts"), R("result_tilings")};
static const bc_prop P_vhlo_dot_general_v1[] = {R("lhs_batching_dimensions"), R("lhs_contracting_dimensions"), R("precision_config"), R("rhs_batching_dimensions"), R("rhs_contracting_dimensions")};
static const bc_prop P_vhlo_dot_general_v2[] = {R("accumulation_type"), R("allow_imprecise_accumulation"), R("lhs_batching_dimensions"), R("lhs_component_count"), R("lhs_contracting_dimensions"), R("lhs_precision_type"), R("num_primitive_operations"), R("precision_config"), R("rhs_batching_dimensions"), R("rhs_component_count"), R("rhs_contracting_dimensions"), R("rhs_precision_type")};
static const bc_prop P_vhlo_dot_v1[] = {R("precision_config")};
static const bc_prop P_vhlo_dynamic_broadcast_in_dim_v1[] = {R("broadcast_dimensions"), R("known_expanding_dimensions"), R("known_nonexpanding_dimensions")};
static const bc_prop P_vhlo_dynamic_conv_v1[] = {R("batch_group_count"), R("feature_group_count"), R("input_batch_dimension"), R("input_feature_dimension"), R("input_spatial_dimensions"), R("kernel_input_feature_dimension"), R("kernel_output_feature_dimension"), R("kernel_spatial_dimensions"), R("lhs_dilation"), R("output_batch_dimension"), R("output_feature_dimension"), R("output_spatial_dimensions"), R("padding"), R("precision_config"), R("rhs_dilation"), R("window_reversal"), R("window_strides")};
static const bc_prop P_vhlo_dynamic_conv_v2[] = {R("batch_group_count"), R("feature_group_count"), R("input_batch_dimension"), R("input_feature_dimension"), R("input_spatial_dimensions"), R("kernel_input_feature_dimension"), R("kernel_output_feature_dimension"), R("kernel_spatial_dimensions"), R("lhs_dilation"), R("output_batch_dimension"), R("output_feature_dimension"), R("output_spatial_dimensions"), R("precision_config"), R("rhs_dilation"), R("window_reversal"), R("window_strides")};
static const bc_prop P_vhlo_dynamic_gather_v1[] = {R("collapsed_slice_dims"), R("index_vector_dim"), R("indices_are_sorted"), R("offset_dims"), R("start_index_map")};
static const bc_prop P_vhlo_dynamic_gather_v2[] = {R("collapsed_slice_dims"), R("index_vector_dim"), R("indices_are_sorted"), R("offset_dims"), R("operand_batching_dims"), R("start_index_map"), R("start_indices_batching_dims")};
static const bc_prop P_vhlo_dynamic_iota_v1[] = {R("iota_dimension")};
static const bc_prop P_vhlo_dynamic_slice_v1[] = {R("slice_sizes")};
static const bc_prop P_vhlo_einsum_v1[] = {R("einsum_config")};
static const bc_prop P_vhlo_exponential_minus_one_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_exponential_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_fft_v1[] = {R("fft_length"), R("fft_type")};
static const bc_prop P_vhlo_func_v1[] = {R("arg_attrs"), R("function_type"), R("res_attrs"), R("sym_name"), R("sym_visibility")};
static const bc_prop P_vhlo_gather_v1[] = {R("collapsed_slice_dims"), R("index_vector_dim"), R("indices_are_sorted"), R("offset_dims"), R("slice_sizes"), R("start_index_map")};
static const bc_prop P_vhlo_gather_v2[] = {R("collapsed_slice_dims"), R("index_vector_dim"), R("indices_are_sorted"), R("offset_dims"), R("operand_batching_dims"), R("slice_sizes"), R("start_index_map"), R("start_indices_batching_dims")};
static const bc_prop P_vhlo_get_dimension_size_v1[] = {R("dimension")};
static const bc_prop P_vhlo_get_tuple_element_v1[] = {R("index")};
static const bc_prop P_vhlo_infeed_v1[] = {R("infeed_config"), R("layout")};
static const bc_prop P_vhlo_iota_v1[] = {R("iota_dimension")};
static const bc_prop P_vhlo_log_plus_one_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_logistic_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_log_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_map_v1[] = {R("dimensions")};
static const bc_prop P_vhlo_outfeed_v1[] = {R("outfeed_config")};
static const bc_prop P_vhlo_pad_v1[] = {R("edge_padding_high"), R("edge_padding_low"), R("interior_padding")};
static const bc_prop P_vhlo_recv_v1[] = {R("channel_id"), R("channel_type"), R("is_host_transfer")};
static const bc_prop P_vhlo_recv_v2[] = {R("channel_id"), R("channel_type"), R("is_host_transfer"), R("source_target_pairs")};
static const bc_prop P_vhlo_reduce_v1[] = {R("dimensions")};
static const bc_prop P_vhlo_reduce_precision_v1[] = {R("exponent_bits"), R("mantissa_bits")};
static const bc_prop P_vhlo_reduce_scatter_v1[] = {R("channel_id"), R("replica_groups"), R("scatter_dimension"), R("use_global_device_ids")};
static const bc_prop P_vhlo_reduce_window_v1[] = {R("base_dilations"), R("padding"), R("window_dilations"), R("window_dimensions"), R("window_strides")};
static const bc_prop P_vhlo_reverse_v1[] = {R("dimensions")};
static const bc_prop P_vhlo_rng_bit_generator_v1[] = {R("rng_algorithm")};
static const bc_prop P_vhlo_rng_v1[] = {R("rng_distribution")};
static const bc_prop P_vhlo_rsqrt_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_scatter_v1[] = {R("index_vector_dim"), R("indices_are_sorted"), R("inserted_window_dims"), R("scatter_dims_to_operand_dims"), R("unique_indices"), R("update_window_dims")};
static const bc_prop P_vhlo_scatter_v2[] = {R("index_vector_dim"), R("indices_are_sorted"), R("input_batching_dims"), R("inserted_window_dims"), R("scatter_dims_to_operand_dims"), R("scatter_indices_batching_dims"), R("unique_indices"), R("update_window_dims")};
static const bc_prop P_vhlo_select_and_scatter_v1[] = {R("padding"), R("window_dimensions"), R("window_strides")};
static const bc_prop P_vhlo_send_v1[] = {R("channel_id"), R("channel_type"), R("is_host_transfer")};
static const bc_prop P_vhlo_send_v2[] = {R("channel_id"), R("channel_type"), R("is_host_transfer"), R("source_target_pairs")};
static const bc_prop P_vhlo_set_dimension_size_v1[] = {R("dimension")};
static const bc_prop P_vhlo_sine_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_slice_v1[] = {R("limit_indices"), R("start_indices"), R("strides")};
static const bc_prop P_vhlo_sort_v1[] = {R("dimension"), R("is_stable")};
static const bc_prop P_vhlo_sqrt_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_tan_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_tanh_v2[] = {R("result_accuracy")};
static const bc_prop P_vhlo_torch_index_select_v1[] = {R("batch_dims"), R("dim")};
static const bc_prop P_vhlo_transpose_v1[] = {R("permutation")};
static const bc_prop P_vhlo_triangular_solve_v1[] = {R("left_side"), R("lower"), R("transpose_a"), R("unit_diagonal")};
static const bc_prop P_vhlo_unary_einsum_v1[] = {R("einsum_config")};
static const bc_prop P_shlo_constant[] = {R("value")};
static const bc_prop P_shlo_iota[] = {R("iota_dimension")};
static const bc_prop P_shlo_dynamic_iota[] = {R("iota_dimension")};
static const bc_prop P_shlo_cbrt[] = {O("result_accuracy")};
static const bc_prop P_shlo_cosine[] = {O("result_accuracy")};
static const bc_prop P_shlo_exponential[] = {O("result_accuracy")};
static const bc_prop P_shlo_exponential_minus_one[] = {O("result_accuracy")};
static const bc_prop P_shlo_log[] = {O("result_accuracy")};
static const bc_prop P_shlo_log_plus_one[] = {O("result_accuracy")};
static const bc_prop P_shlo_logistic[] = {O("result_accuracy")};
static const bc_prop P_shlo_rsqrt[] = {O("result_accuracy")};
static const bc_prop P_shlo_sine[] = {O("result_accuracy")};
static const bc_prop P_shlo_sqrt[] = {O("result_accuracy")};
static const bc_prop P_shlo_tan[] = {O("result_accuracy")};
static const bc_prop P_shlo_tanh[] = {O("result_accuracy")};
static const bc_prop P_shlo_infeed[] = {O("infeed_config"), O("layout")};
static const bc_prop P_shlo_outfeed[] = {O("outfeed_config")};
static const bc_prop P_shlo_send[] = {R("channel_handle"), O("is_host_transfer"), O("source_target_pairs")};
static const bc_prop P_shlo_recv[] = {R("channel_handle"), O("is_host_transfer"), O("source_target_pairs")};
static const bc_prop P_shlo_all_gather[] = {R("all_gather_dim"), O("channel_handle"), R("replica_groups"), O("use_global_device_ids")};
static const bc_prop P_shlo_all_reduce[] = {O("channel_handle"), R("replica_groups"), O("use_global_device_ids")};
static const bc_prop P_shlo_reduce_scatter[] = {O("channel_handle"), R("replica_groups"), R("scatter_dimension"), O("use_global_device_ids")};
static const bc_prop P_shlo_all_to_all[] = {O("channel_handle"), R("concat_dimension"), R("replica_groups"), R("split_count"), R("split_dimension")};
static const bc_prop P_shlo_reduce[] = {R("dimensions")};
static const bc_prop P_shlo_get_tuple_element[] = {R("index")};
static const bc_prop P_shlo_compare[] = {O("compare_type"), R("comparison_direction")};
static const bc_prop P_shlo_slice[] = {R("limit_indices"), R("start_indices"), R("strides")};
static const bc_prop P_shlo_dynamic_slice[] = {R("slice_sizes")};
static const bc_prop P_shlo_batch_norm_grad[] = {R("epsilon"), R("feature_index")};
static const bc_prop P_shlo_batch_norm_inference[] = {R("epsilon"), R("feature_index")};
static const bc_prop P_shlo_batch_norm_training[] = {R("epsilon"), R("feature_index")};
static const bc_prop P_shlo_broadcast[] = {R("broadcast_sizes")};
static const bc_prop P_shlo_broadcast_in_dim[] = {R("broadcast_dimensions")};
static const bc_prop P_shlo_dynamic_broadcast_in_dim[] = {R("broadcast_dimensions"), O("known_expanding_dimensions"), O("known_nonexpanding_dimensions")};
static const bc_prop P_shlo_cholesky[] = {O("lower")};
static const bc_prop P_shlo_concatenate[] = {R("dimension")};
static const bc_prop P_shlo_collective_broadcast[] = {O("channel_handle"), O("has_dynamic_root"), R("replica_groups")};
static const bc_prop P_shlo_collective_reduce[] = {O("channel_handle"), O("has_dynamic_root"), R("replica_groups"), O("use_global_device_ids")};
static const bc_prop P_shlo_collective_permute[] = {O("channel_handle"), R("source_target_pairs")};
static const bc_prop P_shlo_composite[] = {O("composite_attributes"), R("decomposition"), R("name"), O("version")};
static const bc_prop P_shlo_convolution[] = {R("batch_group_count"), R("dimension_numbers"), R("feature_group_count"), O("lhs_dilation"), O("padding"), O("precision_config"), O("rhs_dilation"), O("window_reversal"), O("window_strides")};
static const bc_prop P_shlo_cross_replica_sum[] = {R("replica_groups")};
static const bc_prop P_shlo_custom_call[] = {O("api_version"), O("backend_config"), R("call_target_name"), O("called_computations"), O("has_side_effect"), O("operand_layouts"), O("output_operand_aliases"), O("result_layouts"), O("result_tilings")};
static const bc_prop P_shlo_dot[] = {O("precision_config")};
static const bc_prop P_shlo_dot_general[] = {O("algorithm"), R("dot_dimension_numbers"), O("precision_config")};
static const bc_prop P_shlo_einsum[] = {R("einsum_config")};
static const bc_prop P_shlo_unary_einsum[] = {R("einsum_config")};
static const bc_prop P_shlo_fft[] = {R("fft_length"), R("fft_type")};
static const bc_prop P_shlo_gather[] = {R("dimension_numbers"), O("indices_are_sorted"), R("slice_sizes")};
static const bc_prop P_shlo_get_dimension_size[] = {R("dimension")};
static const bc_prop P_shlo_map[] = {R("dimensions")};
static const bc_prop P_shlo_scatter[] = {O("indices_are_sorted"), R("scatter_dimension_numbers"), O("unique_indices")};
static const bc_prop P_shlo_select_and_scatter[] = {O("padding"), O("window_dimensions"), O("window_strides")};
static const bc_prop P_shlo_set_dimension_size[] = {R("dimension")};
static const bc_prop P_shlo_sort[] = {O("dimension"), O("is_stable")};
static const bc_prop P_shlo_reverse[] = {R("dimensions")};
static const bc_prop P_shlo_pad[] = {R("edge_padding_high"), R("edge_padding_low"), R("interior_padding")};
static const bc_prop P_shlo_transpose[] = {R("permutation")};
static const bc_prop P_shlo_triangular_solve[] = {R("left_side"), R("lower"), R("transpose_a"), R("unit_diagonal")};
static const bc_prop P_shlo_reduce_window[] = {O("base_dilations"), O("padding"), O("window_dilations"), R("window_dimensions"), O("window_strides")};
static const bc_prop P_shlo_torch_index_select[] = {R("batch_dims"), R("dim")};
static const bc_prop P_shlo_rng[] = {R("rng_distribution")};
static const bc_prop P_shlo_rng_bit_generator[] = {R("rng_algorithm")};
static const bc_prop P_shlo_reduce_precision[] = {R("exponent_bits"), R("mantissa_bits")};
static const bc_prop P_shlo_dynamic_gather[] = {R("dimension_numbers"), O("indices_are_sorted")};
static const bc_prop P_shlo_dynamic_conv[] = {R("batch_group_count"), R("dimension_numbers"), R("feature_group_count"), O("lhs_dilation"), O("precision_config"), O("rhs_dilation"), O("window_reversal"), O("window_strides")};
static const bc_prop P_module[] = {O("sym_name"), O("sym_visibility")};
static const bc_prop P_func_func[] = {O("arg_attrs"), R("function_type"), O("no_inline"),
                                      O("res_attrs"), R("sym_name"), O("sym_visibility")};
static const bc_prop P_func_func_old[] = {O("arg_attrs"), R("function_type"), O("res_attrs"),
                                          R("sym_name"), O("sym_visibility")};
static const bc_prop P_func_call[] = {O("arg_attrs"), R("callee"), O("no_inline"), O("res_attrs")};
static const bc_prop P_func_call_old[] = {R("callee")};
static const bc_prop P_sdy_mesh[] = {R("mesh"), R("sym_name")};
static const bc_prop P_sdy_sharding[] = {R("sharding")};
static const bc_prop P_sdy_group[] = {R("group_id")};
static const bc_prop P_chlo_top_k[] = {R("k")};
static const bc_prop P_chlo_value[] = {R("value")};
static const bc_prop P_chlo_bcast[] = {O("broadcast_dimensions")};
static const bc_prop P_chlo_bcast_compare[] = {O("broadcast_dimensions"), O("compare_type"),
                                               R("comparison_direction")};
static const bc_prop P_chlo_ragged_dot[] = {O("precision_config"), R("ragged_dot_dimension_numbers")};
static const bc_prop P_sdy_manual[] = {R("in_shardings"), R("manual_axes"), R("out_shardings")};

static const bc_op_schema kSchemas[] = {
  {"builtin.module", "builtin.module", 2, P_module},
  {"builtin.unrealized_conversion_cast", "builtin.unrealized_conversion_cast", 0, NULL},
  {"func.func", "func.func", 6, P_func_func},
  {"func.func", "func.func", 5, P_func_func_old},
  {"func.call", "func.call", 4, P_func_call},
  {"func.call", "func.call", 1, P_func_call_old},
  {"func.return", "func.return", 0, NULL},
  {"sdy.mesh", "sdy.mesh", 2, P_sdy_mesh},
  {"sdy.sharding_constraint", "sdy.sharding_constraint", 1, P_sdy_sharding},
  {"sdy.reshard", "sdy.reshard", 1, P_sdy_sharding},
  {"sdy.sharding_group", "sdy.sharding_group", 1, P_sdy_group},
  {"sdy.manual_computation", "sdy.manual_computation", 3, P_sdy_manual},
  {"sdy.return", "sdy.return", 0, NULL},
  {"chlo.top_k", "chlo.top_k", 1, P_chlo_top_k},
  {"chlo.constant", "chlo.constant", 1, P_chlo_value},
  {"chlo.constant_like", "chlo.constant_like", 1, P_chlo_value},
  {"chlo.broadcast_compare", "chlo.broadcast_compare", 3, P_chlo_bcast_compare},
  {"chlo.ragged_dot", "chlo.ragged_dot", 2, P_chlo_ragged_dot},
  {"chlo.broadcast_add", "chlo.broadcast_add", 1, P_chlo_bcast},
  {"chlo.broadcast_and", "chlo.broadcast_and", 1, P_chlo_bcast},
  {"chlo.broadcast_atan2", "chlo.broadcast_atan2", 1, P_chlo_bcast},
  {"chlo.broadcast_complex", "chlo.broadcast_complex", 1, P_chlo_bcast},
  {"chlo.broadcast_divide", "chlo.broadcast_divide", 1, P_chlo_bcast},
  {"chlo.broadcast_maximum", "chlo.broadcast_maximum", 1, P_chlo_bcast},
  {"chlo.broadcast_minimum", "chlo.broadcast_minimum", 1, P_chlo_bcast},
  {"chlo.broadcast_multiply", "chlo.broadcast_multiply", 1, P_chlo_bcast},
  {"chlo.broadcast_next_after", "chlo.broadcast_next_after", 1, P_chlo_bcast},
  {"chlo.broadcast_or", "chlo.broadcast_or", 1, P_chlo_bcast},
  {"chlo.broadcast_polygamma", "chlo.broadcast_polygamma", 1, P_chlo_bcast},
  {"chlo.broadcast_power", "chlo.broadcast_power", 1, P_chlo_bcast},
  {"chlo.broadcast_remainder", "chlo.broadcast_remainder", 1, P_chlo_bcast},
  {"chlo.broadcast_shift_left", "chlo.broadcast_shift_left", 1, P_chlo_bcast},
  {"chlo.broadcast_shift_right_arithmetic", "chlo.broadcast_shift_right_arithmetic", 1, P_chlo_bcast},
  {"chlo.broadcast_shift_right_logical", "chlo.broadcast_shift_right_logical", 1, P_chlo_bcast},
  {"chlo.broadcast_subtract", "chlo.broadcast_subtract", 1, P_chlo_bcast},
  {"chlo.broadcast_xor", "chlo.broadcast_xor", 1, P_chlo_bcast},
  {"chlo.broadcast_zeta", "chlo.broadcast_zeta", 1, P_chlo_bcast},

  {"vhlo.abs_v1", "stablehlo.abs", 0, NULL},
  {"vhlo.add_v1", "stablehlo.add", 0, NULL},
  {"vhlo.after_all_v1", "stablehlo.after_all", 0, NULL},
  {"vhlo.all_gather_v1", "stablehlo.all_gather", 4, P_vhlo_all_gather_v1},
  {"vhlo.all_gather_v2", "stablehlo.all_gather", 4, P_vhlo_all_gather_v2},
  {"vhlo.all_reduce_v1", "stablehlo.all_reduce", 3, P_vhlo_all_reduce_v1},
  {"vhlo.all_reduce_v2", "stablehlo.all_reduce", 3, P_vhlo_all_reduce_v2},
  {"vhlo.all_to_all_v1", "stablehlo.all_to_all", 5, P_vhlo_all_to_all_v1},
  {"vhlo.all_to_all_v2", "stablehlo.all_to_all", 5, P_vhlo_all_to_all_v2},
  {"vhlo.and_v1", "stablehlo.and", 0, NULL},
  {"vhlo.async_start_v1", "stablehlo.async_start", 0, NULL},
  {"vhlo.async_done_v1", "stablehlo.async_done", 0, NULL},
  {"vhlo.atan2_v1", "stablehlo.atan2", 0, NULL},
  {"vhlo.batch_norm_grad_v1", "stablehlo.batch_norm_grad", 2, P_vhlo_batch_norm_grad_v1},
  {"vhlo.batch_norm_inference_v1", "stablehlo.batch_norm_inference", 2, P_vhlo_batch_norm_inference_v1},
  {"vhlo.batch_norm_training_v1", "stablehlo.batch_norm_training", 2, P_vhlo_batch_norm_training_v1},
  {"vhlo.bitcast_convert_v1", "stablehlo.bitcast_convert", 0, NULL},
  {"vhlo.broadcast_in_dim_v1", "stablehlo.broadcast_in_dim", 1, P_vhlo_broadcast_in_dim_v1},
  {"vhlo.broadcast_v1", "stablehlo.broadcast", 1, P_vhlo_broadcast_v1},
  {"vhlo.call_v1", "func.call", 1, P_vhlo_call_v1},
  {"vhlo.case_v1", "stablehlo.case", 0, NULL},
  {"vhlo.cbrt_v1", "stablehlo.cbrt", 0, NULL},
  {"vhlo.cbrt_v2", "stablehlo.cbrt", 1, P_vhlo_cbrt_v2},
  {"vhlo.ceil_v1", "stablehlo.ceil", 0, NULL},
  {"vhlo.cholesky_v1", "stablehlo.cholesky", 1, P_vhlo_cholesky_v1},
  {"vhlo.clamp_v1", "stablehlo.clamp", 0, NULL},
  {"vhlo.count_leading_zeros_v1", "stablehlo.count_leading_zeros", 0, NULL},
  {"vhlo.collective_broadcast_v1", "stablehlo.collective_broadcast", 2, P_vhlo_collective_broadcast_v1},
  {"vhlo.collective_broadcast_v2", "stablehlo.collective_broadcast", 3, P_vhlo_collective_broadcast_v2},
  {"vhlo.collective_reduce_v1", "stablehlo.collective_reduce", 4, P_vhlo_collective_reduce_v1},
  {"vhlo.collective_permute_v1", "stablehlo.collective_permute", 2, P_vhlo_collective_permute_v1},
  {"vhlo.compare_v1", "stablehlo.compare", 2, P_vhlo_compare_v1},
  {"vhlo.complex_v1", "stablehlo.complex", 0, NULL},
  {"vhlo.composite_v1", "stablehlo.composite", 4, P_vhlo_composite_v1},
  {"vhlo.composite_v2", "stablehlo.composite", 4, P_vhlo_composite_v2},
  {"vhlo.concatenate_v1", "stablehlo.concatenate", 1, P_vhlo_concatenate_v1},
  {"vhlo.constant_v1", "stablehlo.constant", 1, P_vhlo_constant_v1},
  {"vhlo.convert_v1", "stablehlo.convert", 0, NULL},
  {"vhlo.convolution_v1", "stablehlo.convolution", 17, P_vhlo_convolution_v1},
  {"vhlo.cosine_v1", "stablehlo.cosine", 0, NULL},
  {"vhlo.cosine_v2", "stablehlo.cosine", 1, P_vhlo_cosine_v2},
  {"vhlo.create_token_v1", "stablehlo.create_token", 0, NULL},
  {"vhlo.cross-replica-sum_v1", "stablehlo.cross-replica-sum", 1, P_vhlo_cross_replica_sum_v1},
  {"vhlo.custom_call_v1", "stablehlo.custom_call", 8, P_vhlo_custom_call_v1},
  {"vhlo.custom_call_v2", "stablehlo.custom_call", 9, P_vhlo_custom_call_v2},
  {"vhlo.divide_v1", "stablehlo.divide", 0, NULL},
  {"vhlo.dot_general_v1", "stablehlo.dot_general", 5, P_vhlo_dot_general_v1},
  {"vhlo.dot_general_v2", "stablehlo.dot_general", 12, P_vhlo_dot_general_v2},
  {"vhlo.dot_v1", "stablehlo.dot", 1, P_vhlo_dot_v1},
  {"vhlo.dynamic_broadcast_in_dim_v1", "stablehlo.dynamic_broadcast_in_dim", 3, P_vhlo_dynamic_broadcast_in_dim_v1},
  {"vhlo.dynamic_conv_v1", "stablehlo.dynamic_conv", 17, P_vhlo_dynamic_conv_v1},
  {"vhlo.dynamic_conv_v2", "stablehlo.dynamic_conv", 16, P_vhlo_dynamic_conv_v2},
  {"vhlo.dynamic_gather_v1", "stablehlo.dynamic_gather", 5, P_vhlo_dynamic_gather_v1},
  {"vhlo.dynamic_gather_v2", "stablehlo.dynamic_gather", 7, P_vhlo_dynamic_gather_v2},
  {"vhlo.dynamic_iota_v1", "stablehlo.dynamic_iota", 1, P_vhlo_dynamic_iota_v1},
  {"vhlo.dynamic_pad_v1", "stablehlo.dynamic_pad", 0, NULL},
  {"vhlo.dynamic_reshape_v1", "stablehlo.dynamic_reshape", 0, NULL},
  {"vhlo.dynamic_slice_v1", "stablehlo.dynamic_slice", 1, P_vhlo_dynamic_slice_v1},
  {"vhlo.dynamic_update_slice_v1", "stablehlo.dynamic_update_slice", 0, NULL},
  {"vhlo.einsum_v1", "stablehlo.einsum", 1, P_vhlo_einsum_v1},
  {"vhlo.exponential_minus_one_v1", "stablehlo.exponential_minus_one", 0, NULL},
  {"vhlo.exponential_minus_one_v2", "stablehlo.exponential_minus_one", 1, P_vhlo_exponential_minus_one_v2},
  {"vhlo.exponential_v1", "stablehlo.exponential", 0, NULL},
  {"vhlo.exponential_v2", "stablehlo.exponential", 1, P_vhlo_exponential_v2},
  {"vhlo.fft_v1", "stablehlo.fft", 2, P_vhlo_fft_v1},
  {"vhlo.floor_v1", "stablehlo.floor", 0, NULL},
  {"vhlo.func_v1", "func.func", 5, P_vhlo_func_v1},
  {"vhlo.gather_v1", "stablehlo.gather", 6, P_vhlo_gather_v1},
  {"vhlo.gather_v2", "stablehlo.gather", 8, P_vhlo_gather_v2},
  {"vhlo.get_dimension_size_v1", "stablehlo.get_dimension_size", 1, P_vhlo_get_dimension_size_v1},
  {"vhlo.get_tuple_element_v1", "stablehlo.get_tuple_element", 1, P_vhlo_get_tuple_element_v1},
  {"vhlo.if_v1", "stablehlo.if", 0, NULL},
  {"vhlo.imag_v1", "stablehlo.imag", 0, NULL},
  {"vhlo.infeed_v1", "stablehlo.infeed", 2, P_vhlo_infeed_v1},
  {"vhlo.iota_v1", "stablehlo.iota", 1, P_vhlo_iota_v1},
  {"vhlo.is_finite_v1", "stablehlo.is_finite", 0, NULL},
  {"vhlo.log_plus_one_v1", "stablehlo.log_plus_one", 0, NULL},
  {"vhlo.log_plus_one_v2", "stablehlo.log_plus_one", 1, P_vhlo_log_plus_one_v2},
  {"vhlo.logistic_v1", "stablehlo.logistic", 0, NULL},
  {"vhlo.logistic_v2", "stablehlo.logistic", 1, P_vhlo_logistic_v2},
  {"vhlo.log_v1", "stablehlo.log", 0, NULL},
  {"vhlo.log_v2", "stablehlo.log", 1, P_vhlo_log_v2},
  {"vhlo.map_v1", "stablehlo.map", 1, P_vhlo_map_v1},
  {"vhlo.maximum_v1", "stablehlo.maximum", 0, NULL},
  {"vhlo.minimum_v1", "stablehlo.minimum", 0, NULL},
  {"vhlo.multiply_v1", "stablehlo.multiply", 0, NULL},
  {"vhlo.negate_v1", "stablehlo.negate", 0, NULL},
  {"vhlo.not_v1", "stablehlo.not", 0, NULL},
  {"vhlo.optimization_barrier_v1", "stablehlo.optimization_barrier", 0, NULL},
  {"vhlo.or_v1", "stablehlo.or", 0, NULL},
  {"vhlo.outfeed_v1", "stablehlo.outfeed", 1, P_vhlo_outfeed_v1},
  {"vhlo.pad_v1", "stablehlo.pad", 3, P_vhlo_pad_v1},
  {"vhlo.partition_id_v1", "stablehlo.partition_id", 0, NULL},
  {"vhlo.popcnt_v1", "stablehlo.popcnt", 0, NULL},
  {"vhlo.power_v1", "stablehlo.power", 0, NULL},
  {"vhlo.real_dynamic_slice_v1", "stablehlo.real_dynamic_slice", 0, NULL},
  {"vhlo.real_v1", "stablehlo.real", 0, NULL},
  {"vhlo.recv_v1", "stablehlo.recv", 3, P_vhlo_recv_v1},
  {"vhlo.recv_v2", "stablehlo.recv", 4, P_vhlo_recv_v2},
  {"vhlo.reduce_v1", "stablehlo.reduce", 1, P_vhlo_reduce_v1},
  {"vhlo.reduce_precision_v1", "stablehlo.reduce_precision", 2, P_vhlo_reduce_precision_v1},
  {"vhlo.reduce_scatter_v1", "stablehlo.reduce_scatter", 4, P_vhlo_reduce_scatter_v1},
  {"vhlo.reduce_window_v1", "stablehlo.reduce_window", 5, P_vhlo_reduce_window_v1},
  {"vhlo.remainder_v1", "stablehlo.remainder", 0, NULL},
  {"vhlo.replica_id_v1", "stablehlo.replica_id", 0, NULL},
  {"vhlo.reshape_v1", "stablehlo.reshape", 0, NULL},
  {"vhlo.return_v1", "stablehlo.return", 0, NULL},
  {"vhlo.reverse_v1", "stablehlo.reverse", 1, P_vhlo_reverse_v1},
  {"vhlo.rng_bit_generator_v1", "stablehlo.rng_bit_generator", 1, P_vhlo_rng_bit_generator_v1},
  {"vhlo.rng_v1", "stablehlo.rng", 1, P_vhlo_rng_v1},
  {"vhlo.round_nearest_even_v1", "stablehlo.round_nearest_even", 0, NULL},
  {"vhlo.round_nearest_afz_v1", "stablehlo.round_nearest_afz", 0, NULL},
  {"vhlo.rsqrt_v1", "stablehlo.rsqrt", 0, NULL},
  {"vhlo.rsqrt_v2", "stablehlo.rsqrt", 1, P_vhlo_rsqrt_v2},
  {"vhlo.scatter_v1", "stablehlo.scatter", 6, P_vhlo_scatter_v1},
  {"vhlo.scatter_v2", "stablehlo.scatter", 8, P_vhlo_scatter_v2},
  {"vhlo.select_and_scatter_v1", "stablehlo.select_and_scatter", 3, P_vhlo_select_and_scatter_v1},
  {"vhlo.select_v1", "stablehlo.select", 0, NULL},
  {"vhlo.send_v1", "stablehlo.send", 3, P_vhlo_send_v1},
  {"vhlo.send_v2", "stablehlo.send", 4, P_vhlo_send_v2},
  {"vhlo.set_dimension_size_v1", "stablehlo.set_dimension_size", 1, P_vhlo_set_dimension_size_v1},
  {"vhlo.shift_left_v1", "stablehlo.shift_left", 0, NULL},
  {"vhlo.shift_right_arithmetic_v1", "stablehlo.shift_right_arithmetic", 0, NULL},
  {"vhlo.shift_right_logical_v1", "stablehlo.shift_right_logical", 0, NULL},
  {"vhlo.sign_v1", "stablehlo.sign", 0, NULL},
  {"vhlo.sine_v1", "stablehlo.sine", 0, NULL},
  {"vhlo.sine_v2", "stablehlo.sine", 1, P_vhlo_sine_v2},
  {"vhlo.slice_v1", "stablehlo.slice", 3, P_vhlo_slice_v1},
  {"vhlo.sort_v1", "stablehlo.sort", 2, P_vhlo_sort_v1},
  {"vhlo.sqrt_v1", "stablehlo.sqrt", 0, NULL},
  {"vhlo.sqrt_v2", "stablehlo.sqrt", 1, P_vhlo_sqrt_v2},
  {"vhlo.subtract_v1", "stablehlo.subtract", 0, NULL},
  {"vhlo.tan_v1", "stablehlo.tan", 0, NULL},
  {"vhlo.tan_v2", "stablehlo.tan", 1, P_vhlo_tan_v2},
  {"vhlo.tanh_v1", "stablehlo.tanh", 0, NULL},
  {"vhlo.tanh_v2", "stablehlo.tanh", 1, P_vhlo_tanh_v2},
  {"vhlo.torch_index_select_v1", "stablehlo.torch_index_select", 2, P_vhlo_torch_index_select_v1},
  {"vhlo.transpose_v1", "stablehlo.transpose", 1, P_vhlo_transpose_v1},
  {"vhlo.triangular_solve_v1", "stablehlo.triangular_solve", 4, P_vhlo_triangular_solve_v1},
  {"vhlo.tuple_v1", "stablehlo.tuple", 0, NULL},
  {"vhlo.unary_einsum_v1", "stablehlo.unary_einsum", 1, P_vhlo_unary_einsum_v1},
  {"vhlo.uniform_dequantize_v1", "stablehlo.uniform_dequantize", 0, NULL},
  {"vhlo.uniform_quantize_v1", "stablehlo.uniform_quantize", 0, NULL},
  {"vhlo.while_v1", "stablehlo.while", 0, NULL},
  {"vhlo.xor_v1", "stablehlo.xor", 0, NULL},
  {"stablehlo.constant", "stablehlo.constant", 1, P_shlo_constant},
  {"stablehlo.iota", "stablehlo.iota", 1, P_shlo_iota},
  {"stablehlo.dynamic_iota", "stablehlo.dynamic_iota", 1, P_shlo_dynamic_iota},
  {"stablehlo.create_token", "stablehlo.create_token", 0, NULL},
  {"stablehlo.abs", "stablehlo.abs", 0, NULL},
  {"stablehlo.cbrt", "stablehlo.cbrt", 1, P_shlo_cbrt},
  {"stablehlo.ceil", "stablehlo.ceil", 0, NULL},
  {"stablehlo.convert", "stablehlo.convert", 0, NULL},
  {"stablehlo.count_leading_zeros", "stablehlo.count_leading_zeros", 0, NULL},
  {"stablehlo.cosine", "stablehlo.cosine", 1, P_shlo_cosine},
  {"stablehlo.exponential", "stablehlo.exponential", 1, P_shlo_exponential},
  {"stablehlo.exponential_minus_one", "stablehlo.exponential_minus_one", 1, P_shlo_exponential_minus_one},
  {"stablehlo.floor", "stablehlo.floor", 0, NULL},
  {"stablehlo.imag", "stablehlo.imag", 0, NULL},
  {"stablehlo.is_finite", "stablehlo.is_finite", 0, NULL},
  {"stablehlo.log", "stablehlo.log", 1, P_shlo_log},
  {"stablehlo.log_plus_one", "stablehlo.log_plus_one", 1, P_shlo_log_plus_one},
  {"stablehlo.logistic", "stablehlo.logistic", 1, P_shlo_logistic},
  {"stablehlo.not", "stablehlo.not", 0, NULL},
  {"stablehlo.negate", "stablehlo.negate", 0, NULL},
  {"stablehlo.popcnt", "stablehlo.popcnt", 0, NULL},
  {"stablehlo.real", "stablehlo.real", 0, NULL},
  {"stablehlo.round_nearest_afz", "stablehlo.round_nearest_afz", 0, NULL},
  {"stablehlo.round_nearest_even", "stablehlo.round_nearest_even", 0, NULL},
  {"stablehlo.rsqrt", "stablehlo.rsqrt", 1, P_shlo_rsqrt},
  {"stablehlo.sign", "stablehlo.sign", 0, NULL},
  {"stablehlo.sine", "stablehlo.sine", 1, P_shlo_sine},
  {"stablehlo.sqrt", "stablehlo.sqrt", 1, P_shlo_sqrt},
  {"stablehlo.tan", "stablehlo.tan", 1, P_shlo_tan},
  {"stablehlo.tanh", "stablehlo.tanh", 1, P_shlo_tanh},
  {"stablehlo.add", "stablehlo.add", 0, NULL},
  {"stablehlo.atan2", "stablehlo.atan2", 0, NULL},
  {"stablehlo.complex", "stablehlo.complex", 0, NULL},
  {"stablehlo.divide", "stablehlo.divide", 0, NULL},
  {"stablehlo.maximum", "stablehlo.maximum", 0, NULL},
  {"stablehlo.minimum", "stablehlo.minimum", 0, NULL},
  {"stablehlo.multiply", "stablehlo.multiply", 0, NULL},
  {"stablehlo.power", "stablehlo.power", 0, NULL},
  {"stablehlo.remainder", "stablehlo.remainder", 0, NULL},
  {"stablehlo.shift_left", "stablehlo.shift_left", 0, NULL},
  {"stablehlo.shift_right_arithmetic", "stablehlo.shift_right_arithmetic", 0, NULL},
  {"stablehlo.shift_right_logical", "stablehlo.shift_right_logical", 0, NULL},
  {"stablehlo.subtract", "stablehlo.subtract", 0, NULL},
  {"stablehlo.and", "stablehlo.and", 0, NULL},
  {"stablehlo.or", "stablehlo.or", 0, NULL},
  {"stablehlo.xor", "stablehlo.xor", 0, NULL},
  {"stablehlo.infeed", "stablehlo.infeed", 2, P_shlo_infeed},
  {"stablehlo.outfeed", "stablehlo.outfeed", 1, P_shlo_outfeed},
  {"stablehlo.send", "stablehlo.send", 3, P_shlo_send},
  {"stablehlo.recv", "stablehlo.recv", 3, P_shlo_recv},
  {"stablehlo.replica_id", "stablehlo.replica_id", 0, NULL},
  {"stablehlo.partition_id", "stablehlo.partition_id", 0, NULL},
  {"stablehlo.after_all", "stablehlo.after_all", 0, NULL},
  {"stablehlo.if", "stablehlo.if", 0, NULL},
  {"stablehlo.case", "stablehlo.case", 0, NULL},
  {"stablehlo.while", "stablehlo.while", 0, NULL},
  {"stablehlo.all_gather", "stablehlo.all_gather", 4, P_shlo_all_gather},
  {"stablehlo.all_reduce", "stablehlo.all_reduce", 3, P_shlo_all_reduce},
  {"stablehlo.reduce_scatter", "stablehlo.reduce_scatter", 4, P_shlo_reduce_scatter},
  {"stablehlo.all_to_all", "stablehlo.all_to_all", 5, P_shlo_all_to_all},
  {"stablehlo.reduce", "stablehlo.reduce", 1, P_shlo_reduce},
  {"stablehlo.async_start", "stablehlo.async_start", 0, NULL},
  {"stablehlo.async_done", "stablehlo.async_done", 0, NULL},
  {"stablehlo.get_tuple_element", "stablehlo.get_tuple_element", 1, P_shlo_get_tuple_element},
  {"stablehlo.tuple", "stablehlo.tuple", 0, NULL},
  {"stablehlo.compare", "stablehlo.compare", 2, P_shlo_compare},
  {"stablehlo.slice", "stablehlo.slice", 3, P_shlo_slice},
  {"stablehlo.dynamic_slice", "stablehlo.dynamic_slice", 1, P_shlo_dynamic_slice},
  {"stablehlo.dynamic_update_slice", "stablehlo.dynamic_update_slice", 0, NULL},
  {"stablehlo.batch_norm_grad", "stablehlo.batch_norm_grad", 2, P_shlo_batch_norm_grad},
  {"stablehlo.batch_norm_inference", "stablehlo.batch_norm_inference", 2, P_shlo_batch_norm_inference},
  {"stablehlo.batch_norm_training", "stablehlo.batch_norm_training", 2, P_shlo_batch_norm_training},
  {"stablehlo.bitcast_convert", "stablehlo.bitcast_convert", 0, NULL},
  {"stablehlo.broadcast", "stablehlo.broadcast", 1, P_shlo_broadcast},
  {"stablehlo.broadcast_in_dim", "stablehlo.broadcast_in_dim", 1, P_shlo_broadcast_in_dim},
  {"stablehlo.dynamic_broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim", 3, P_shlo_dynamic_broadcast_in_dim},
  {"stablehlo.cholesky", "stablehlo.cholesky", 1, P_shlo_cholesky},
  {"stablehlo.clamp", "stablehlo.clamp", 0, NULL},
  {"stablehlo.concatenate", "stablehlo.concatenate", 1, P_shlo_concatenate},
  {"stablehlo.collective_broadcast", "stablehlo.collective_broadcast", 3, P_shlo_collective_broadcast},
  {"stablehlo.collective_reduce", "stablehlo.collective_reduce", 4, P_shlo_collective_reduce},
  {"stablehlo.collective_permute", "stablehlo.collective_permute", 2, P_shlo_collective_permute},
  {"stablehlo.composite", "stablehlo.composite", 4, P_shlo_composite},
  {"stablehlo.convolution", "stablehlo.convolution", 9, P_shlo_convolution},
  {"stablehlo.cross-replica-sum", "stablehlo.cross-replica-sum", 1, P_shlo_cross_replica_sum},
  {"stablehlo.custom_call", "stablehlo.custom_call", 9, P_shlo_custom_call},
  {"stablehlo.dot", "stablehlo.dot", 1, P_shlo_dot},
  {"stablehlo.dot_general", "stablehlo.dot_general", 3, P_shlo_dot_general},
  {"stablehlo.einsum", "stablehlo.einsum", 1, P_shlo_einsum},
  {"stablehlo.unary_einsum", "stablehlo.unary_einsum", 1, P_shlo_unary_einsum},
  {"stablehlo.fft", "stablehlo.fft", 2, P_shlo_fft},
  {"stablehlo.gather", "stablehlo.gather", 3, P_shlo_gather},
  {"stablehlo.get_dimension_size", "stablehlo.get_dimension_size", 1, P_shlo_get_dimension_size},
  {"stablehlo.map", "stablehlo.map", 1, P_shlo_map},
  {"stablehlo.reshape", "stablehlo.reshape", 0, NULL},
  {"stablehlo.dynamic_reshape", "stablehlo.dynamic_reshape", 0, NULL},
  {"stablehlo.scatter", "stablehlo.scatter", 3, P_shlo_scatter},
  {"stablehlo.select", "stablehlo.select", 0, NULL},
  {"stablehlo.select_and_scatter", "stablehlo.select_and_scatter", 3, P_shlo_select_and_scatter},
  {"stablehlo.set_dimension_size", "stablehlo.set_dimension_size", 1, P_shlo_set_dimension_size},
  {"stablehlo.sort", "stablehlo.sort", 2, P_shlo_sort},
  {"stablehlo.reverse", "stablehlo.reverse", 1, P_shlo_reverse},
  {"stablehlo.pad", "stablehlo.pad", 3, P_shlo_pad},
  {"stablehlo.transpose", "stablehlo.transpose", 1, P_shlo_transpose},
  {"stablehlo.triangular_solve", "stablehlo.triangular_solve", 4, P_shlo_triangular_solve},
  {"stablehlo.reduce_window", "stablehlo.reduce_window", 5, P_shlo_reduce_window},
  {"stablehlo.return", "stablehlo.return", 0, NULL},
  {"stablehlo.torch_index_select", "stablehlo.torch_index_select", 2, P_shlo_torch_index_select},
  {"stablehlo.optimization_barrier", "stablehlo.optimization_barrier", 0, NULL},
  {"stablehlo.rng", "stablehlo.rng", 1, P_shlo_rng},
  {"stablehlo.rng_bit_generator", "stablehlo.rng_bit_generator", 1, P_shlo_rng_bit_generator},
  {"stablehlo.uniform_quantize", "stablehlo.uniform_quantize", 0, NULL},
  {"stablehlo.uniform_dequantize", "stablehlo.uniform_dequantize", 0, NULL},
  {"stablehlo.reduce_precision", "stablehlo.reduce_precision", 2, P_shlo_reduce_precision},
  {"stablehlo.real_dynamic_slice", "stablehlo.real_dynamic_slice", 0, NULL},
  {"stablehlo.dynamic_pad", "stablehlo.dynamic_pad", 0, NULL},
  {"stablehlo.dynamic_gather", "stablehlo.dynamic_gather", 2, P_shlo_dynamic_gather},
  {"stablehlo.dynamic_conv", "stablehlo.dynamic_conv", 8, P_shlo_dynamic_conv},};

enum { kNumSchemas = sizeof kSchemas / sizeof kSchemas[0] };

const bc_op_schema *bc_find_op_schema(const char *full_name) {
  for (int i = 0; i < kNumSchemas; i++)
    if (strcmp(kSchemas[i].name, full_name) == 0) return &kSchemas[i];
  return NULL;
}

const bc_op_schema *bc_next_op_schema(const bc_op_schema *s) {
  if (s < kSchemas || s + 1 >= kSchemas + kNumSchemas) return NULL;
  return strcmp(s[1].name, s->name) == 0 ? s + 1 : NULL;
}
