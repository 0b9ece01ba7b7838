module @m {
  func.func public @main(%arg0: tensor<f32>) -> tensor<4294967296x4294967296x16xf32> {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<4294967296x4294967296x16xf32>
    return %0 : tensor<4294967296x4294967296x16xf32>
  }
}
