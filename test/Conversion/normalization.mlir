// RUN: comet-opt %s -split-input-file --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// Batch and layer normalization (populateNormalizationLoweringPatterns);
// their gradients are runtime calls declared in ODS.

// BatchNormInternal in training mode: the running statistics that nothing
// reads are written over the argument statistics they update, so
// evaluation normalises with them; the saved ones are results.
// CHECK-LABEL: func.func @batch_norm(
// CHECK-SAME: %[[MEAN:arg4]]: memref<3xf32>, %[[VAR:arg5]]: memref<3xf32>
// CHECK: %[[MODE:.*]] = arith.constant 1 : i64
// CHECK: %[[M:.*]] = memref.cast %[[MEAN]] : memref<3xf32> to memref<*xf32>
// CHECK: %[[V:.*]] = memref.cast %[[VAR]] : memref<3xf32> to memref<*xf32>
// CHECK: call @comet_rt_batch_norm_internal(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[V]], %{{.*}}, %[[M]], %[[V]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MODE]])
func.func @batch_norm(%x: tensor<2x3x4x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %mean: tensor<3xf32>, %var: tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %y, %rm, %rv, %sm, %si = onnx.BatchNormInternal(%x, %s, %b, %mean, %var) {training_mode = 1 : i64} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y, %sm, %si : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// LayerNormalization: axis and epsilon after the three outputs (an absent
// one is an empty memref).
// CHECK-LABEL: func.func @layer_norm(
// CHECK-DAG: %[[AXIS:.*]] = arith.constant -1 : i64
// CHECK-DAG: %[[EPS:.*]] = arith.constant 1.000000e-03 : f32
// CHECK: call @comet_rt_layer_norm(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[AXIS]], %[[EPS]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, f32) -> i32
func.func @layer_norm(%x: tensor<2x4xf32>, %s: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>) {
  %none = onnx.NoValue
  %y, %m, %i = onnx.LayerNormalization(%x, %s, %none) {epsilon = 1.0e-3 : f32} : (tensor<2x4xf32>, tensor<4xf32>, none) -> (tensor<2x4xf32>, tensor<2x1xf32>, none)
  return %y, %m : tensor<2x4xf32>, tensor<2x1xf32>
}
