module @m {
  func.func public @main(%a: tensor<4x3xf32>, %b: tensor<5x2xf32>) -> tensor<4x2xf32> {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<5x2xf32>) -> tensor<4x2xf32>
    return %0 : tensor<4x2xf32>
  }
}
