// RUN: comet-opt %s -mlir-print-debuginfo=false --comet-compress-activations="min-bytes=0 min-distance=3" | FileCheck %s
// RUN: comet-opt %s --comet-compress-activations="min-bytes=0 min-distance=3" --comet-lower-to-runtime -cse | FileCheck %s --check-prefix=LOWER

// LeakyReluGrad reads the forward output Y only as Y > 0 (ONNX_MaskGradient),
// so Y is kept as a 1-bit mask stream, as a ReLU mask. LeakyReluGrad does
// not read mask handles (no ONNX_ReadsMaskHandle): the decompress is not
// fused, and LeakyReluGrad reads the decoded 1.0/0.0, which gives the same
// dX (abi.def).
// CHECK-LABEL: func.func @leaky_relu_mask
// CHECK: %[[Y:.*]] = onnx.LeakyRelu(
// CHECK: %[[H:.*]] = comet.compress %[[Y]] : tensor<4x64xf32> -> !comet.compressed<tensor<4x64xf32>, mask>
// CHECK: %[[D:.*]] = comet.decompress %[[H]] : !comet.compressed<tensor<4x64xf32>, mask> -> tensor<4x64xf32>
// CHECK: onnx.LeakyReluGrad(%{{.*}}, %[[D]]) {alpha = 1.000000e-01 : f32}
// The mask codec is 2; the decompressed buffer is what leaky_relu_grad reads.
// LOWER-LABEL: func.func @leaky_relu_mask
// LOWER: %[[MASK:.*]] = arith.constant 2 : i32
// LOWER: %[[H:.*]] = call @comet_rt_compress(%arg0, %{{.*}}, %[[MASK]],
// LOWER: call @comet_rt_decompress(%arg0, %[[H]], %[[D:[a-z0-9_]+]])
// LOWER: call @comet_rt_handle_free(%arg0, %[[H]])
// LOWER: call @comet_rt_leaky_relu_grad(%arg0, %{{.*}}, %[[D]], %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, f32) -> i32
func.func @leaky_relu_mask(%x: tensor<4x64xf32>, %w: tensor<10x64xf32>, %dl: tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x64xf32>) {
  %y = onnx.LeakyRelu(%x) {alpha = 0.1 : f32} : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %none = onnx.NoValue
  %z = onnx.Gemm(%y, %w, %none) {transB = 1 : i64} : (tensor<4x64xf32>, tensor<10x64xf32>, none) -> tensor<4x10xf32>
  %r = onnx.Relu(%z) : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %a = onnx.Add(%r, %z) : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<4x10xf32>
  %dy = onnx.Gemm(%dl, %w, %none) {beta = 0.0 : f32} : (tensor<4x10xf32>, tensor<10x64xf32>, none) -> tensor<4x64xf32>
  %dx = onnx.LeakyReluGrad(%dy, %y) {alpha = 0.1 : f32} : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  return %a, %dx : tensor<4x10xf32>, tensor<4x64xf32>
}
