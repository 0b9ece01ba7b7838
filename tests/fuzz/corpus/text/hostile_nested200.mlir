module @deep {
  func.func public @main(%x: tensor<f32>) -> tensor<f32> {
%w0 = stablehlo.while(%a0 = %x) : tensor<f32> cond {
%f0 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f0 : tensor<i1>
} do {
%w1 = stablehlo.while(%a1 = %a0) : tensor<f32> cond {
%f1 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f1 : tensor<i1>
} do {
%w2 = stablehlo.while(%a2 = %a1) : tensor<f32> cond {
%f2 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f2 : tensor<i1>
} do {
%w3 = stablehlo.while(%a3 = %a2) : tensor<f32> cond {
%f3 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f3 : tensor<i1>
} do {
%w4 = stablehlo.while(%a4 = %a3) : tensor<f32> cond {
%f4 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f4 : tensor<i1>
} do {
%w5 = stablehlo.while(%a5 = %a4) : tensor<f32> cond {
%f5 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f5 : tensor<i1>
} do {
%w6 = stablehlo.while(%a6 = %a5) : tensor<f32> cond {
%f6 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f6 : tensor<i1>
} do {
%w7 = stablehlo.while(%a7 = %a6) : tensor<f32> cond {
%f7 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f7 : tensor<i1>
} do {
%w8 = stablehlo.while(%a8 = %a7) : tensor<f32> cond {
%f8 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f8 : tensor<i1>
} do {
%w9 = stablehlo.while(%a9 = %a8) : tensor<f32> cond {
%f9 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f9 : tensor<i1>
} do {
%w10 = stablehlo.while(%a10 = %a9) : tensor<f32> cond {
%f10 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f10 : tensor<i1>
} do {
%w11 = stablehlo.while(%a11 = %a10) : tensor<f32> cond {
%f11 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f11 : tensor<i1>
} do {
%w12 = stablehlo.while(%a12 = %a11) : tensor<f32> cond {
%f12 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f12 : tensor<i1>
} do {
%w13 = stablehlo.while(%a13 = %a12) : tensor<f32> cond {
%f13 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f13 : tensor<i1>
} do {
%w14 = stablehlo.while(%a14 = %a13) : tensor<f32> cond {
%f14 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f14 : tensor<i1>
} do {
%w15 = stablehlo.while(%a15 = %a14) : tensor<f32> cond {
%f15 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f15 : tensor<i1>
} do {
%w16 = stablehlo.while(%a16 = %a15) : tensor<f32> cond {
%f16 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f16 : tensor<i1>
} do {
%w17 = stablehlo.while(%a17 = %a16) : tensor<f32> cond {
%f17 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f17 : tensor<i1>
} do {
%w18 = stablehlo.while(%a18 = %a17) : tensor<f32> cond {
%f18 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f18 : tensor<i1>
} do {
%w19 = stablehlo.while(%a19 = %a18) : tensor<f32> cond {
%f19 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f19 : tensor<i1>
} do {
%w20 = stablehlo.while(%a20 = %a19) : tensor<f32> cond {
%f20 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f20 : tensor<i1>
} do {
%w21 = stablehlo.while(%a21 = %a20) : tensor<f32> cond {
%f21 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f21 : tensor<i1>
} do {
%w22 = stablehlo.while(%a22 = %a21) : tensor<f32> cond {
%f22 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f22 : tensor<i1>
} do {
%w23 = stablehlo.while(%a23 = %a22) : tensor<f32> cond {
%f23 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f23 : tensor<i1>
} do {
%w24 = stablehlo.while(%a24 = %a23) : tensor<f32> cond {
%f24 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f24 : tensor<i1>
} do {
%w25 = stablehlo.while(%a25 = %a24) : tensor<f32> cond {
%f25 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f25 : tensor<i1>
} do {
%w26 = stablehlo.while(%a26 = %a25) : tensor<f32> cond {
%f26 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f26 : tensor<i1>
} do {
%w27 = stablehlo.while(%a27 = %a26) : tensor<f32> cond {
%f27 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f27 : tensor<i1>
} do {
%w28 = stablehlo.while(%a28 = %a27) : tensor<f32> cond {
%f28 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f28 : tensor<i1>
} do {
%w29 = stablehlo.while(%a29 = %a28) : tensor<f32> cond {
%f29 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f29 : tensor<i1>
} do {
%w30 = stablehlo.while(%a30 = %a29) : tensor<f32> cond {
%f30 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f30 : tensor<i1>
} do {
%w31 = stablehlo.while(%a31 = %a30) : tensor<f32> cond {
%f31 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f31 : tensor<i1>
} do {
%w32 = stablehlo.while(%a32 = %a31) : tensor<f32> cond {
%f32 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f32 : tensor<i1>
} do {
%w33 = stablehlo.while(%a33 = %a32) : tensor<f32> cond {
%f33 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f33 : tensor<i1>
} do {
%w34 = stablehlo.while(%a34 = %a33) : tensor<f32> cond {
%f34 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f34 : tensor<i1>
} do {
%w35 = stablehlo.while(%a35 = %a34) : tensor<f32> cond {
%f35 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f35 : tensor<i1>
} do {
%w36 = stablehlo.while(%a36 = %a35) : tensor<f32> cond {
%f36 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f36 : tensor<i1>
} do {
%w37 = stablehlo.while(%a37 = %a36) : tensor<f32> cond {
%f37 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f37 : tensor<i1>
} do {
%w38 = stablehlo.while(%a38 = %a37) : tensor<f32> cond {
%f38 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f38 : tensor<i1>
} do {
%w39 = stablehlo.while(%a39 = %a38) : tensor<f32> cond {
%f39 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f39 : tensor<i1>
} do {
%w40 = stablehlo.while(%a40 = %a39) : tensor<f32> cond {
%f40 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f40 : tensor<i1>
} do {
%w41 = stablehlo.while(%a41 = %a40) : tensor<f32> cond {
%f41 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f41 : tensor<i1>
} do {
%w42 = stablehlo.while(%a42 = %a41) : tensor<f32> cond {
%f42 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f42 : tensor<i1>
} do {
%w43 = stablehlo.while(%a43 = %a42) : tensor<f32> cond {
%f43 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f43 : tensor<i1>
} do {
%w44 = stablehlo.while(%a44 = %a43) : tensor<f32> cond {
%f44 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f44 : tensor<i1>
} do {
%w45 = stablehlo.while(%a45 = %a44) : tensor<f32> cond {
%f45 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f45 : tensor<i1>
} do {
%w46 = stablehlo.while(%a46 = %a45) : tensor<f32> cond {
%f46 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f46 : tensor<i1>
} do {
%w47 = stablehlo.while(%a47 = %a46) : tensor<f32> cond {
%f47 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f47 : tensor<i1>
} do {
%w48 = stablehlo.while(%a48 = %a47) : tensor<f32> cond {
%f48 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f48 : tensor<i1>
} do {
%w49 = stablehlo.while(%a49 = %a48) : tensor<f32> cond {
%f49 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f49 : tensor<i1>
} do {
%w50 = stablehlo.while(%a50 = %a49) : tensor<f32> cond {
%f50 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f50 : tensor<i1>
} do {
%w51 = stablehlo.while(%a51 = %a50) : tensor<f32> cond {
%f51 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f51 : tensor<i1>
} do {
%w52 = stablehlo.while(%a52 = %a51) : tensor<f32> cond {
%f52 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f52 : tensor<i1>
} do {
%w53 = stablehlo.while(%a53 = %a52) : tensor<f32> cond {
%f53 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f53 : tensor<i1>
} do {
%w54 = stablehlo.while(%a54 = %a53) : tensor<f32> cond {
%f54 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f54 : tensor<i1>
} do {
%w55 = stablehlo.while(%a55 = %a54) : tensor<f32> cond {
%f55 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f55 : tensor<i1>
} do {
%w56 = stablehlo.while(%a56 = %a55) : tensor<f32> cond {
%f56 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f56 : tensor<i1>
} do {
%w57 = stablehlo.while(%a57 = %a56) : tensor<f32> cond {
%f57 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f57 : tensor<i1>
} do {
%w58 = stablehlo.while(%a58 = %a57) : tensor<f32> cond {
%f58 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f58 : tensor<i1>
} do {
%w59 = stablehlo.while(%a59 = %a58) : tensor<f32> cond {
%f59 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f59 : tensor<i1>
} do {
%w60 = stablehlo.while(%a60 = %a59) : tensor<f32> cond {
%f60 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f60 : tensor<i1>
} do {
%w61 = stablehlo.while(%a61 = %a60) : tensor<f32> cond {
%f61 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f61 : tensor<i1>
} do {
%w62 = stablehlo.while(%a62 = %a61) : tensor<f32> cond {
%f62 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f62 : tensor<i1>
} do {
%w63 = stablehlo.while(%a63 = %a62) : tensor<f32> cond {
%f63 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f63 : tensor<i1>
} do {
%w64 = stablehlo.while(%a64 = %a63) : tensor<f32> cond {
%f64 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f64 : tensor<i1>
} do {
%w65 = stablehlo.while(%a65 = %a64) : tensor<f32> cond {
%f65 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f65 : tensor<i1>
} do {
%w66 = stablehlo.while(%a66 = %a65) : tensor<f32> cond {
%f66 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f66 : tensor<i1>
} do {
%w67 = stablehlo.while(%a67 = %a66) : tensor<f32> cond {
%f67 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f67 : tensor<i1>
} do {
%w68 = stablehlo.while(%a68 = %a67) : tensor<f32> cond {
%f68 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f68 : tensor<i1>
} do {
%w69 = stablehlo.while(%a69 = %a68) : tensor<f32> cond {
%f69 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f69 : tensor<i1>
} do {
%w70 = stablehlo.while(%a70 = %a69) : tensor<f32> cond {
%f70 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f70 : tensor<i1>
} do {
%w71 = stablehlo.while(%a71 = %a70) : tensor<f32> cond {
%f71 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f71 : tensor<i1>
} do {
%w72 = stablehlo.while(%a72 = %a71) : tensor<f32> cond {
%f72 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f72 : tensor<i1>
} do {
%w73 = stablehlo.while(%a73 = %a72) : tensor<f32> cond {
%f73 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f73 : tensor<i1>
} do {
%w74 = stablehlo.while(%a74 = %a73) : tensor<f32> cond {
%f74 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f74 : tensor<i1>
} do {
%w75 = stablehlo.while(%a75 = %a74) : tensor<f32> cond {
%f75 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f75 : tensor<i1>
} do {
%w76 = stablehlo.while(%a76 = %a75) : tensor<f32> cond {
%f76 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f76 : tensor<i1>
} do {
%w77 = stablehlo.while(%a77 = %a76) : tensor<f32> cond {
%f77 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f77 : tensor<i1>
} do {
%w78 = stablehlo.while(%a78 = %a77) : tensor<f32> cond {
%f78 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f78 : tensor<i1>
} do {
%w79 = stablehlo.while(%a79 = %a78) : tensor<f32> cond {
%f79 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f79 : tensor<i1>
} do {
%w80 = stablehlo.while(%a80 = %a79) : tensor<f32> cond {
%f80 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f80 : tensor<i1>
} do {
%w81 = stablehlo.while(%a81 = %a80) : tensor<f32> cond {
%f81 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f81 : tensor<i1>
} do {
%w82 = stablehlo.while(%a82 = %a81) : tensor<f32> cond {
%f82 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f82 : tensor<i1>
} do {
%w83 = stablehlo.while(%a83 = %a82) : tensor<f32> cond {
%f83 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f83 : tensor<i1>
} do {
%w84 = stablehlo.while(%a84 = %a83) : tensor<f32> cond {
%f84 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f84 : tensor<i1>
} do {
%w85 = stablehlo.while(%a85 = %a84) : tensor<f32> cond {
%f85 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f85 : tensor<i1>
} do {
%w86 = stablehlo.while(%a86 = %a85) : tensor<f32> cond {
%f86 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f86 : tensor<i1>
} do {
%w87 = stablehlo.while(%a87 = %a86) : tensor<f32> cond {
%f87 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f87 : tensor<i1>
} do {
%w88 = stablehlo.while(%a88 = %a87) : tensor<f32> cond {
%f88 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f88 : tensor<i1>
} do {
%w89 = stablehlo.while(%a89 = %a88) : tensor<f32> cond {
%f89 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f89 : tensor<i1>
} do {
%w90 = stablehlo.while(%a90 = %a89) : tensor<f32> cond {
%f90 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f90 : tensor<i1>
} do {
%w91 = stablehlo.while(%a91 = %a90) : tensor<f32> cond {
%f91 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f91 : tensor<i1>
} do {
%w92 = stablehlo.while(%a92 = %a91) : tensor<f32> cond {
%f92 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f92 : tensor<i1>
} do {
%w93 = stablehlo.while(%a93 = %a92) : tensor<f32> cond {
%f93 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f93 : tensor<i1>
} do {
%w94 = stablehlo.while(%a94 = %a93) : tensor<f32> cond {
%f94 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f94 : tensor<i1>
} do {
%w95 = stablehlo.while(%a95 = %a94) : tensor<f32> cond {
%f95 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f95 : tensor<i1>
} do {
%w96 = stablehlo.while(%a96 = %a95) : tensor<f32> cond {
%f96 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f96 : tensor<i1>
} do {
%w97 = stablehlo.while(%a97 = %a96) : tensor<f32> cond {
%f97 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f97 : tensor<i1>
} do {
%w98 = stablehlo.while(%a98 = %a97) : tensor<f32> cond {
%f98 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f98 : tensor<i1>
} do {
%w99 = stablehlo.while(%a99 = %a98) : tensor<f32> cond {
%f99 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f99 : tensor<i1>
} do {
%w100 = stablehlo.while(%a100 = %a99) : tensor<f32> cond {
%f100 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f100 : tensor<i1>
} do {
%w101 = stablehlo.while(%a101 = %a100) : tensor<f32> cond {
%f101 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f101 : tensor<i1>
} do {
%w102 = stablehlo.while(%a102 = %a101) : tensor<f32> cond {
%f102 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f102 : tensor<i1>
} do {
%w103 = stablehlo.while(%a103 = %a102) : tensor<f32> cond {
%f103 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f103 : tensor<i1>
} do {
%w104 = stablehlo.while(%a104 = %a103) : tensor<f32> cond {
%f104 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f104 : tensor<i1>
} do {
%w105 = stablehlo.while(%a105 = %a104) : tensor<f32> cond {
%f105 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f105 : tensor<i1>
} do {
%w106 = stablehlo.while(%a106 = %a105) : tensor<f32> cond {
%f106 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f106 : tensor<i1>
} do {
%w107 = stablehlo.while(%a107 = %a106) : tensor<f32> cond {
%f107 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f107 : tensor<i1>
} do {
%w108 = stablehlo.while(%a108 = %a107) : tensor<f32> cond {
%f108 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f108 : tensor<i1>
} do {
%w109 = stablehlo.while(%a109 = %a108) : tensor<f32> cond {
%f109 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f109 : tensor<i1>
} do {
%w110 = stablehlo.while(%a110 = %a109) : tensor<f32> cond {
%f110 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f110 : tensor<i1>
} do {
%w111 = stablehlo.while(%a111 = %a110) : tensor<f32> cond {
%f111 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f111 : tensor<i1>
} do {
%w112 = stablehlo.while(%a112 = %a111) : tensor<f32> cond {
%f112 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f112 : tensor<i1>
} do {
%w113 = stablehlo.while(%a113 = %a112) : tensor<f32> cond {
%f113 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f113 : tensor<i1>
} do {
%w114 = stablehlo.while(%a114 = %a113) : tensor<f32> cond {
%f114 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f114 : tensor<i1>
} do {
%w115 = stablehlo.while(%a115 = %a114) : tensor<f32> cond {
%f115 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f115 : tensor<i1>
} do {
%w116 = stablehlo.while(%a116 = %a115) : tensor<f32> cond {
%f116 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f116 : tensor<i1>
} do {
%w117 = stablehlo.while(%a117 = %a116) : tensor<f32> cond {
%f117 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f117 : tensor<i1>
} do {
%w118 = stablehlo.while(%a118 = %a117) : tensor<f32> cond {
%f118 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f118 : tensor<i1>
} do {
%w119 = stablehlo.while(%a119 = %a118) : tensor<f32> cond {
%f119 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f119 : tensor<i1>
} do {
%w120 = stablehlo.while(%a120 = %a119) : tensor<f32> cond {
%f120 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f120 : tensor<i1>
} do {
%w121 = stablehlo.while(%a121 = %a120) : tensor<f32> cond {
%f121 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f121 : tensor<i1>
} do {
%w122 = stablehlo.while(%a122 = %a121) : tensor<f32> cond {
%f122 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f122 : tensor<i1>
} do {
%w123 = stablehlo.while(%a123 = %a122) : tensor<f32> cond {
%f123 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f123 : tensor<i1>
} do {
%w124 = stablehlo.while(%a124 = %a123) : tensor<f32> cond {
%f124 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f124 : tensor<i1>
} do {
%w125 = stablehlo.while(%a125 = %a124) : tensor<f32> cond {
%f125 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f125 : tensor<i1>
} do {
%w126 = stablehlo.while(%a126 = %a125) : tensor<f32> cond {
%f126 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f126 : tensor<i1>
} do {
%w127 = stablehlo.while(%a127 = %a126) : tensor<f32> cond {
%f127 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f127 : tensor<i1>
} do {
%w128 = stablehlo.while(%a128 = %a127) : tensor<f32> cond {
%f128 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f128 : tensor<i1>
} do {
%w129 = stablehlo.while(%a129 = %a128) : tensor<f32> cond {
%f129 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f129 : tensor<i1>
} do {
%w130 = stablehlo.while(%a130 = %a129) : tensor<f32> cond {
%f130 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f130 : tensor<i1>
} do {
%w131 = stablehlo.while(%a131 = %a130) : tensor<f32> cond {
%f131 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f131 : tensor<i1>
} do {
%w132 = stablehlo.while(%a132 = %a131) : tensor<f32> cond {
%f132 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f132 : tensor<i1>
} do {
%w133 = stablehlo.while(%a133 = %a132) : tensor<f32> cond {
%f133 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f133 : tensor<i1>
} do {
%w134 = stablehlo.while(%a134 = %a133) : tensor<f32> cond {
%f134 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f134 : tensor<i1>
} do {
%w135 = stablehlo.while(%a135 = %a134) : tensor<f32> cond {
%f135 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f135 : tensor<i1>
} do {
%w136 = stablehlo.while(%a136 = %a135) : tensor<f32> cond {
%f136 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f136 : tensor<i1>
} do {
%w137 = stablehlo.while(%a137 = %a136) : tensor<f32> cond {
%f137 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f137 : tensor<i1>
} do {
%w138 = stablehlo.while(%a138 = %a137) : tensor<f32> cond {
%f138 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f138 : tensor<i1>
} do {
%w139 = stablehlo.while(%a139 = %a138) : tensor<f32> cond {
%f139 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f139 : tensor<i1>
} do {
%w140 = stablehlo.while(%a140 = %a139) : tensor<f32> cond {
%f140 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f140 : tensor<i1>
} do {
%w141 = stablehlo.while(%a141 = %a140) : tensor<f32> cond {
%f141 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f141 : tensor<i1>
} do {
%w142 = stablehlo.while(%a142 = %a141) : tensor<f32> cond {
%f142 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f142 : tensor<i1>
} do {
%w143 = stablehlo.while(%a143 = %a142) : tensor<f32> cond {
%f143 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f143 : tensor<i1>
} do {
%w144 = stablehlo.while(%a144 = %a143) : tensor<f32> cond {
%f144 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f144 : tensor<i1>
} do {
%w145 = stablehlo.while(%a145 = %a144) : tensor<f32> cond {
%f145 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f145 : tensor<i1>
} do {
%w146 = stablehlo.while(%a146 = %a145) : tensor<f32> cond {
%f146 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f146 : tensor<i1>
} do {
%w147 = stablehlo.while(%a147 = %a146) : tensor<f32> cond {
%f147 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f147 : tensor<i1>
} do {
%w148 = stablehlo.while(%a148 = %a147) : tensor<f32> cond {
%f148 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f148 : tensor<i1>
} do {
%w149 = stablehlo.while(%a149 = %a148) : tensor<f32> cond {
%f149 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f149 : tensor<i1>
} do {
%w150 = stablehlo.while(%a150 = %a149) : tensor<f32> cond {
%f150 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f150 : tensor<i1>
} do {
%w151 = stablehlo.while(%a151 = %a150) : tensor<f32> cond {
%f151 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f151 : tensor<i1>
} do {
%w152 = stablehlo.while(%a152 = %a151) : tensor<f32> cond {
%f152 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f152 : tensor<i1>
} do {
%w153 = stablehlo.while(%a153 = %a152) : tensor<f32> cond {
%f153 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f153 : tensor<i1>
} do {
%w154 = stablehlo.while(%a154 = %a153) : tensor<f32> cond {
%f154 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f154 : tensor<i1>
} do {
%w155 = stablehlo.while(%a155 = %a154) : tensor<f32> cond {
%f155 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f155 : tensor<i1>
} do {
%w156 = stablehlo.while(%a156 = %a155) : tensor<f32> cond {
%f156 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f156 : tensor<i1>
} do {
%w157 = stablehlo.while(%a157 = %a156) : tensor<f32> cond {
%f157 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f157 : tensor<i1>
} do {
%w158 = stablehlo.while(%a158 = %a157) : tensor<f32> cond {
%f158 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f158 : tensor<i1>
} do {
%w159 = stablehlo.while(%a159 = %a158) : tensor<f32> cond {
%f159 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f159 : tensor<i1>
} do {
%w160 = stablehlo.while(%a160 = %a159) : tensor<f32> cond {
%f160 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f160 : tensor<i1>
} do {
%w161 = stablehlo.while(%a161 = %a160) : tensor<f32> cond {
%f161 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f161 : tensor<i1>
} do {
%w162 = stablehlo.while(%a162 = %a161) : tensor<f32> cond {
%f162 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f162 : tensor<i1>
} do {
%w163 = stablehlo.while(%a163 = %a162) : tensor<f32> cond {
%f163 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f163 : tensor<i1>
} do {
%w164 = stablehlo.while(%a164 = %a163) : tensor<f32> cond {
%f164 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f164 : tensor<i1>
} do {
%w165 = stablehlo.while(%a165 = %a164) : tensor<f32> cond {
%f165 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f165 : tensor<i1>
} do {
%w166 = stablehlo.while(%a166 = %a165) : tensor<f32> cond {
%f166 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f166 : tensor<i1>
} do {
%w167 = stablehlo.while(%a167 = %a166) : tensor<f32> cond {
%f167 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f167 : tensor<i1>
} do {
%w168 = stablehlo.while(%a168 = %a167) : tensor<f32> cond {
%f168 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f168 : tensor<i1>
} do {
%w169 = stablehlo.while(%a169 = %a168) : tensor<f32> cond {
%f169 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f169 : tensor<i1>
} do {
%w170 = stablehlo.while(%a170 = %a169) : tensor<f32> cond {
%f170 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f170 : tensor<i1>
} do {
%w171 = stablehlo.while(%a171 = %a170) : tensor<f32> cond {
%f171 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f171 : tensor<i1>
} do {
%w172 = stablehlo.while(%a172 = %a171) : tensor<f32> cond {
%f172 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f172 : tensor<i1>
} do {
%w173 = stablehlo.while(%a173 = %a172) : tensor<f32> cond {
%f173 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f173 : tensor<i1>
} do {
%w174 = stablehlo.while(%a174 = %a173) : tensor<f32> cond {
%f174 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f174 : tensor<i1>
} do {
%w175 = stablehlo.while(%a175 = %a174) : tensor<f32> cond {
%f175 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f175 : tensor<i1>
} do {
%w176 = stablehlo.while(%a176 = %a175) : tensor<f32> cond {
%f176 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f176 : tensor<i1>
} do {
%w177 = stablehlo.while(%a177 = %a176) : tensor<f32> cond {
%f177 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f177 : tensor<i1>
} do {
%w178 = stablehlo.while(%a178 = %a177) : tensor<f32> cond {
%f178 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f178 : tensor<i1>
} do {
%w179 = stablehlo.while(%a179 = %a178) : tensor<f32> cond {
%f179 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f179 : tensor<i1>
} do {
%w180 = stablehlo.while(%a180 = %a179) : tensor<f32> cond {
%f180 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f180 : tensor<i1>
} do {
%w181 = stablehlo.while(%a181 = %a180) : tensor<f32> cond {
%f181 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f181 : tensor<i1>
} do {
%w182 = stablehlo.while(%a182 = %a181) : tensor<f32> cond {
%f182 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f182 : tensor<i1>
} do {
%w183 = stablehlo.while(%a183 = %a182) : tensor<f32> cond {
%f183 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f183 : tensor<i1>
} do {
%w184 = stablehlo.while(%a184 = %a183) : tensor<f32> cond {
%f184 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f184 : tensor<i1>
} do {
%w185 = stablehlo.while(%a185 = %a184) : tensor<f32> cond {
%f185 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f185 : tensor<i1>
} do {
%w186 = stablehlo.while(%a186 = %a185) : tensor<f32> cond {
%f186 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f186 : tensor<i1>
} do {
%w187 = stablehlo.while(%a187 = %a186) : tensor<f32> cond {
%f187 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f187 : tensor<i1>
} do {
%w188 = stablehlo.while(%a188 = %a187) : tensor<f32> cond {
%f188 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f188 : tensor<i1>
} do {
%w189 = stablehlo.while(%a189 = %a188) : tensor<f32> cond {
%f189 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f189 : tensor<i1>
} do {
%w190 = stablehlo.while(%a190 = %a189) : tensor<f32> cond {
%f190 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f190 : tensor<i1>
} do {
%w191 = stablehlo.while(%a191 = %a190) : tensor<f32> cond {
%f191 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f191 : tensor<i1>
} do {
%w192 = stablehlo.while(%a192 = %a191) : tensor<f32> cond {
%f192 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f192 : tensor<i1>
} do {
%w193 = stablehlo.while(%a193 = %a192) : tensor<f32> cond {
%f193 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f193 : tensor<i1>
} do {
%w194 = stablehlo.while(%a194 = %a193) : tensor<f32> cond {
%f194 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f194 : tensor<i1>
} do {
%w195 = stablehlo.while(%a195 = %a194) : tensor<f32> cond {
%f195 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f195 : tensor<i1>
} do {
%w196 = stablehlo.while(%a196 = %a195) : tensor<f32> cond {
%f196 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f196 : tensor<i1>
} do {
%w197 = stablehlo.while(%a197 = %a196) : tensor<f32> cond {
%f197 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f197 : tensor<i1>
} do {
%w198 = stablehlo.while(%a198 = %a197) : tensor<f32> cond {
%f198 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f198 : tensor<i1>
} do {
%w199 = stablehlo.while(%a199 = %a198) : tensor<f32> cond {
%f199 = stablehlo.constant dense<false> : tensor<i1>
stablehlo.return %f199 : tensor<i1>
} do {
%r = stablehlo.add %a199, %a199 : tensor<f32>
stablehlo.return %r : tensor<f32>
}
stablehlo.return %w199 : tensor<f32>
}
stablehlo.return %w198 : tensor<f32>
}
stablehlo.return %w197 : tensor<f32>
}
stablehlo.return %w196 : tensor<f32>
}
stablehlo.return %w195 : tensor<f32>
}
stablehlo.return %w194 : tensor<f32>
}
stablehlo.return %w193 : tensor<f32>
}
stablehlo.return %w192 : tensor<f32>
}
stablehlo.return %w191 : tensor<f32>
}
stablehlo.return %w190 : tensor<f32>
}
stablehlo.return %w189 : tensor<f32>
}
stablehlo.return %w188 : tensor<f32>
}
stablehlo.return %w187 : tensor<f32>
}
stablehlo.return %w186 : tensor<f32>
}
stablehlo.return %w185 : tensor<f32>
}
stablehlo.return %w184 : tensor<f32>
}
stablehlo.return %w183 : tensor<f32>
}
stablehlo.return %w182 : tensor<f32>
}
stablehlo.return %w181 : tensor<f32>
}
stablehlo.return %w180 : tensor<f32>
}
stablehlo.return %w179 : tensor<f32>
}
stablehlo.return %w178 : tensor<f32>
}
stablehlo.return %w177 : tensor<f32>
}
stablehlo.return %w176 : tensor<f32>
}
stablehlo.return %w175 : tensor<f32>
}
stablehlo.return %w174 : tensor<f32>
}
stablehlo.return %w173 : tensor<f32>
}
stablehlo.return %w172 : tensor<f32>
}
stablehlo.return %w171 : tensor<f32>
}
stablehlo.return %w170 : tensor<f32>
}
stablehlo.return %w169 : tensor<f32>
}
stablehlo.return %w168 : tensor<f32>
}
stablehlo.return %w167 : tensor<f32>
}
stablehlo.return %w166 : tensor<f32>
}
stablehlo.return %w165 : tensor<f32>
}
stablehlo.return %w164 : tensor<f32>
}
stablehlo.return %w163 : tensor<f32>
}
stablehlo.return %w162 : tensor<f32>
}
stablehlo.return %w161 : tensor<f32>
}
stablehlo.return %w160 : tensor<f32>
}
stablehlo.return %w159 : tensor<f32>
}
stablehlo.return %w158 : tensor<f32>
}
stablehlo.return %w157 : tensor<f32>
}
stablehlo.return %w156 : tensor<f32>
}
stablehlo.return %w155 : tensor<f32>
}
stablehlo.return %w154 : tensor<f32>
}
stablehlo.return %w153 : tensor<f32>
}
stablehlo.return %w152 : tensor<f32>
}
stablehlo.return %w151 : tensor<f32>
}
stablehlo.return %w150 : tensor<f32>
}
stablehlo.return %w149 : tensor<f32>
}
stablehlo.return %w148 : tensor<f32>
}
stablehlo.return %w147 : tensor<f32>
}
stablehlo.return %w146 : tensor<f32>
}
stablehlo.return %w145 : tensor<f32>
}
stablehlo.return %w144 : tensor<f32>
}
stablehlo.return %w143 : tensor<f32>
}
stablehlo.return %w142 : tensor<f32>
}
stablehlo.return %w141 : tensor<f32>
}
stablehlo.return %w140 : tensor<f32>
}
stablehlo.return %w139 : tensor<f32>
}
stablehlo.return %w138 : tensor<f32>
}
stablehlo.return %w137 : tensor<f32>
}
stablehlo.return %w136 : tensor<f32>
}
stablehlo.return %w135 : tensor<f32>
}
stablehlo.return %w134 : tensor<f32>
}
stablehlo.return %w133 : tensor<f32>
}
stablehlo.return %w132 : tensor<f32>
}
stablehlo.return %w131 : tensor<f32>
}
stablehlo.return %w130 : tensor<f32>
}
stablehlo.return %w129 : tensor<f32>
}
stablehlo.return %w128 : tensor<f32>
}
stablehlo.return %w127 : tensor<f32>
}
stablehlo.return %w126 : tensor<f32>
}
stablehlo.return %w125 : tensor<f32>
}
stablehlo.return %w124 : tensor<f32>
}
stablehlo.return %w123 : tensor<f32>
}
stablehlo.return %w122 : tensor<f32>
}
stablehlo.return %w121 : tensor<f32>
}
stablehlo.return %w120 : tensor<f32>
}
stablehlo.return %w119 : tensor<f32>
}
stablehlo.return %w118 : tensor<f32>
}
stablehlo.return %w117 : tensor<f32>
}
stablehlo.return %w116 : tensor<f32>
}
stablehlo.return %w115 : tensor<f32>
}
stablehlo.return %w114 : tensor<f32>
}
stablehlo.return %w113 : tensor<f32>
}
stablehlo.return %w112 : tensor<f32>
}
stablehlo.return %w111 : tensor<f32>
}
stablehlo.return %w110 : tensor<f32>
}
stablehlo.return %w109 : tensor<f32>
}
stablehlo.return %w108 : tensor<f32>
}
stablehlo.return %w107 : tensor<f32>
}
stablehlo.return %w106 : tensor<f32>
}
stablehlo.return %w105 : tensor<f32>
}
stablehlo.return %w104 : tensor<f32>
}
stablehlo.return %w103 : tensor<f32>
}
stablehlo.return %w102 : tensor<f32>
}
stablehlo.return %w101 : tensor<f32>
}
stablehlo.return %w100 : tensor<f32>
}
stablehlo.return %w99 : tensor<f32>
}
stablehlo.return %w98 : tensor<f32>
}
stablehlo.return %w97 : tensor<f32>
}
stablehlo.return %w96 : tensor<f32>
}
stablehlo.return %w95 : tensor<f32>
}
stablehlo.return %w94 : tensor<f32>
}
stablehlo.return %w93 : tensor<f32>
}
stablehlo.return %w92 : tensor<f32>
}
stablehlo.return %w91 : tensor<f32>
}
stablehlo.return %w90 : tensor<f32>
}
stablehlo.return %w89 : tensor<f32>
}
stablehlo.return %w88 : tensor<f32>
}
stablehlo.return %w87 : tensor<f32>
}
stablehlo.return %w86 : tensor<f32>
}
stablehlo.return %w85 : tensor<f32>
}
stablehlo.return %w84 : tensor<f32>
}
stablehlo.return %w83 : tensor<f32>
}
stablehlo.return %w82 : tensor<f32>
}
stablehlo.return %w81 : tensor<f32>
}
stablehlo.return %w80 : tensor<f32>
}
stablehlo.return %w79 : tensor<f32>
}
stablehlo.return %w78 : tensor<f32>
}
stablehlo.return %w77 : tensor<f32>
}
stablehlo.return %w76 : tensor<f32>
}
stablehlo.return %w75 : tensor<f32>
}
stablehlo.return %w74 : tensor<f32>
}
stablehlo.return %w73 : tensor<f32>
}
stablehlo.return %w72 : tensor<f32>
}
stablehlo.return %w71 : tensor<f32>
}
stablehlo.return %w70 : tensor<f32>
}
stablehlo.return %w69 : tensor<f32>
}
stablehlo.return %w68 : tensor<f32>
}
stablehlo.return %w67 : tensor<f32>
}
stablehlo.return %w66 : tensor<f32>
}
stablehlo.return %w65 : tensor<f32>
}
stablehlo.return %w64 : tensor<f32>
}
stablehlo.return %w63 : tensor<f32>
}
stablehlo.return %w62 : tensor<f32>
}
stablehlo.return %w61 : tensor<f32>
}
stablehlo.return %w60 : tensor<f32>
}
stablehlo.return %w59 : tensor<f32>
}
stablehlo.return %w58 : tensor<f32>
}
stablehlo.return %w57 : tensor<f32>
}
stablehlo.return %w56 : tensor<f32>
}
stablehlo.return %w55 : tensor<f32>
}
stablehlo.return %w54 : tensor<f32>
}
stablehlo.return %w53 : tensor<f32>
}
stablehlo.return %w52 : tensor<f32>
}
stablehlo.return %w51 : tensor<f32>
}
stablehlo.return %w50 : tensor<f32>
}
stablehlo.return %w49 : tensor<f32>
}
stablehlo.return %w48 : tensor<f32>
}
stablehlo.return %w47 : tensor<f32>
}
stablehlo.return %w46 : tensor<f32>
}
stablehlo.return %w45 : tensor<f32>
}
stablehlo.return %w44 : tensor<f32>
}
stablehlo.return %w43 : tensor<f32>
}
stablehlo.return %w42 : tensor<f32>
}
stablehlo.return %w41 : tensor<f32>
}
stablehlo.return %w40 : tensor<f32>
}
stablehlo.return %w39 : tensor<f32>
}
stablehlo.return %w38 : tensor<f32>
}
stablehlo.return %w37 : tensor<f32>
}
stablehlo.return %w36 : tensor<f32>
}
stablehlo.return %w35 : tensor<f32>
}
stablehlo.return %w34 : tensor<f32>
}
stablehlo.return %w33 : tensor<f32>
}
stablehlo.return %w32 : tensor<f32>
}
stablehlo.return %w31 : tensor<f32>
}
stablehlo.return %w30 : tensor<f32>
}
stablehlo.return %w29 : tensor<f32>
}
stablehlo.return %w28 : tensor<f32>
}
stablehlo.return %w27 : tensor<f32>
}
stablehlo.return %w26 : tensor<f32>
}
stablehlo.return %w25 : tensor<f32>
}
stablehlo.return %w24 : tensor<f32>
}
stablehlo.return %w23 : tensor<f32>
}
stablehlo.return %w22 : tensor<f32>
}
stablehlo.return %w21 : tensor<f32>
}
stablehlo.return %w20 : tensor<f32>
}
stablehlo.return %w19 : tensor<f32>
}
stablehlo.return %w18 : tensor<f32>
}
stablehlo.return %w17 : tensor<f32>
}
stablehlo.return %w16 : tensor<f32>
}
stablehlo.return %w15 : tensor<f32>
}
stablehlo.return %w14 : tensor<f32>
}
stablehlo.return %w13 : tensor<f32>
}
stablehlo.return %w12 : tensor<f32>
}
stablehlo.return %w11 : tensor<f32>
}
stablehlo.return %w10 : tensor<f32>
}
stablehlo.return %w9 : tensor<f32>
}
stablehlo.return %w8 : tensor<f32>
}
stablehlo.return %w7 : tensor<f32>
}
stablehlo.return %w6 : tensor<f32>
}
stablehlo.return %w5 : tensor<f32>
}
stablehlo.return %w4 : tensor<f32>
}
stablehlo.return %w3 : tensor<f32>
}
stablehlo.return %w2 : tensor<f32>
}
stablehlo.return %w1 : tensor<f32>
}
return %w0 : tensor<f32>
}
}
