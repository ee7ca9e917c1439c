// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-compress-activations="min-bytes=0 min-distance=3" | FileCheck %s
// RUN: comet-opt %s -split-input-file --comet-compress-activations="min-bytes=0 min-distance=3" --comet-lower-to-runtime | FileCheck %s --check-prefix=LOWER

// A Dropout mask (bool) that only DropoutGrad reads far away is kept as a
// 1-bit mask stream, like a ReLU mask: compressed after its last near use,
// decompressed before DropoutGrad.
// CHECK-LABEL: func.func @dropout_mask
// CHECK: %[[Y:.*]], %[[MASK:.*]] = {{"?}}onnx.Dropout{{"?}}(
// CHECK: %[[H:.*]] = comet.compress %[[MASK]] : tensor<4x64xi1> -> !comet.compressed<tensor<4x64xi1>, mask>
// CHECK: %[[D:.*]] = comet.decompress %[[H]] : !comet.compressed<tensor<4x64xi1>, mask> -> tensor<4x64xi1>
// CHECK: {{"?}}onnx.DropoutGrad{{"?}}(%{{.*}}, %[[D]],
// The lowering fuses the decompress into DropoutGrad: the bool tensor is
// compressed by compress_i1 and DropoutGrad reads the bits from the handle.
// LOWER-LABEL: func.func @dropout_mask
// LOWER: %[[H:.*]] = call @comet_rt_compress_i1(%arg0, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xi1>, i64) -> i64
// LOWER-NOT: comet_rt_decompress
// LOWER: call @comet_rt_dropout_grad_mask(%arg0, %{{.*}}, %[[H]], %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, i64, memref<*xf32>, memref<*xi1>, memref<*xf32>) -> i32
// LOWER: call @comet_rt_handle_free(%arg0, %[[H]])
func.func @dropout_mask(%x: tensor<4x64xf32>, %w: tensor<10x64xf32>, %dl: tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x64xf32>) {
  %ratio = onnx.Constant {value = dense<2.500000e-01> : tensor<f32>} : tensor<f32>
  %train = onnx.Constant {value = dense<true> : tensor<i1>} : tensor<i1>
  %y, %mask = onnx.Dropout(%x, %ratio, %train) : (tensor<4x64xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x64xf32>, tensor<4x64xi1>)
  %none = onnx.NoValue
  %z = onnx.Gemm(%y, %w, %none) {transB = 1 : i64} : (tensor<4x64xf32>, tensor<10x64xf32>, none) -> tensor<4x10xf32>
  %r = onnx.Relu(%z) : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %a = onnx.Add(%r, %z) : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<4x10xf32>
  %dy = onnx.Gemm(%dl, %w, %none) {beta = 0.0 : f32} : (tensor<4x10xf32>, tensor<10x64xf32>, none) -> tensor<4x64xf32>
  %dx = onnx.DropoutGrad(%dy, %mask, %ratio, %train) : (tensor<4x64xf32>, tensor<4x64xi1>, tensor<f32>, tensor<i1>) -> tensor<4x64xf32>
  return %a, %dx : tensor<4x10xf32>, tensor<4x64xf32>
}
