module @m {
  func.func public @main(%x: tensor<f32>) -> tensor<f32> {
    %i0 = stablehlo.constant dense<0> : tensor<i65>
    %r:2 = stablehlo.while(%it = %i0, %v = %x) : tensor<i64>, tensor<f32>
      cond {
        %t = stablehlo.constant dense<true> : tensor<i1>
        stablehlo.return %t : tensor<i1>
      } do {
        %b = stablehlo.broadcast_in_dim %v, dims = [] : (tensor<f32>) -> tensor<100000000000xf32>
        %z = stablehlo.constant dense<0.0> : tensor<f32>
        %s = stablehlo.reduce(%b init: %z) applies stablehlonadd across dimensions = [0] : (tensor<100000000000xf32>, tensor<f32>) -> tensor<f32>
        stablehlo.return %it, %s : tensor<i64>, tensor<f32>
      }
    return %r#1 : tensor<f32>
  }
}
