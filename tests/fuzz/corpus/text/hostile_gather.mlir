module @m {
  func.func public @main(%x: tensor<5x3xf32>, %i: tensor<2x1xi32>) -> tensor<2x3xf32> {
    %0 = "stablehlo.gather"(%x, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [7], start_index_map = [9], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>} : (tensor<5x3xf32>, tensor<2x1xi32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
