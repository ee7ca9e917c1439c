// RUN: comet-opt %s --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// FusedMatMul and ReduceMean (populateContractionLoweringPatterns): alpha,
// transA and transB after the output; ReduceMean's axes attribute as a
// constant i64 memref before the output, keepdims after it.
// CHECK: memref.global "private" constant @[[AXES:__comet_const_[0-9]+]] : memref<1xi64> = dense<1>
// CHECK-LABEL: func.func @contraction(
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: call @comet_rt_fused_matmul(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[TWO]], %[[ZERO]], %[[ONE]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, f32, i64, i64) -> i32
// CHECK: %[[A:.*]] = memref.get_global @[[AXES]] : memref<1xi64>
// CHECK: %[[AU:.*]] = memref.cast %[[A]] : memref<1xi64> to memref<*xi64>
// CHECK: call @comet_rt_reduce_mean(%arg0, %{{.*}}, %[[AU]], %{{.*}}, %[[ONE]]) : (!llvm.ptr, memref<*xf32>, memref<*xi64>, memref<*xf32>, i64) -> i32
func.func @contraction(%a: tensor<2x3x4xf32>, %b: tensor<2x5x4xf32>) -> (tensor<2x3x5xf32>, tensor<2x1x4xf32>) {
  %y = onnx.FusedMatMul(%a, %b) {alpha = 2.0 : f32, transB = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
  %m = onnx.ReduceMean(%a) {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %y, %m : tensor<2x3x5xf32>, tensor<2x1x4xf32>
}
