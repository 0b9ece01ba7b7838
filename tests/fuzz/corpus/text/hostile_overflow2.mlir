module @m {
  func.func public @main(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<9223372036854775807x2xf32>
    %c = stablehlo.constant dense<0.0> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %c) applies stablehlo.add across dimensions = [0, 1] : (tensor<9223372036854775807x2xf32>, tensor<f32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
