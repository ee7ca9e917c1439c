// RUN: comet-opt %s --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// Constants and the shape facts that are constants once shapes are static
// (populateConstantLoweringPatterns): each is a private global copied into
// its buffer (here the function's results), so it is counted like every
// other tensor. Shape and Size see the batch (2); ConstantOfShape splats
// its value over the shape.
// CHECK-DAG: memref.global "private" constant @[[C:__comet_const_[0-9]+]] : memref<2xf32> = dense<[1.500000e+00, 2.500000e+00]>
// CHECK-DAG: memref.global "private" constant @[[N:__comet_const_[0-9]+]] : memref<i64> = dense<6>
// CHECK-DAG: memref.global "private" constant @[[S:__comet_const_[0-9]+]] : memref<1xi64> = dense<3>
// CHECK-DAG: memref.global "private" constant @[[F:__comet_const_[0-9]+]] : memref<2x3xi64> = dense<7>
// CHECK-LABEL: func.func @constants(
// CHECK-SAME: %[[OUTC:arg2]]: memref<2xf32> {comet.result = 0 : i64}
// CHECK: %[[G:.*]] = memref.get_global @[[C]] : memref<2xf32>
// CHECK-DAG: %[[GU:.*]] = memref.cast %[[G]] : memref<2xf32> to memref<*xf32>
// CHECK-DAG: %[[OU:.*]] = memref.cast %[[OUTC]] : memref<2xf32> to memref<*xf32>
// CHECK: call @comet_rt_identity(%arg0, %[[GU]], %[[OU]])
// CHECK: memref.get_global @[[N]] : memref<i64>
// CHECK: call @comet_rt_identity_i64(
// CHECK: memref.get_global @[[S]] : memref<1xi64>
// CHECK: call @comet_rt_identity_i64(
// CHECK: memref.get_global @[[F]] : memref<2x3xi64>
// CHECK: call @comet_rt_identity_i64(
func.func @constants(%x: tensor<?x3xf32>) -> (tensor<2xf32>, tensor<i64>, tensor<1xi64>, tensor<?x3xi64>) {
  %c = onnx.Constant {value = dense<[1.5, 2.5]> : tensor<2xf32>} : tensor<2xf32>
  %n = onnx.Size(%x) : (tensor<?x3xf32>) -> tensor<i64>
  %s = onnx.Shape(%x) {start = 1 : i64} : (tensor<?x3xf32>) -> tensor<1xi64>
  %full = onnx.Shape(%x) : (tensor<?x3xf32>) -> tensor<2xi64>
  %f = onnx.ConstantOfShape(%full) {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<?x3xi64>
  return %c, %n, %s, %f : tensor<2xf32>, tensor<i64>, tensor<1xi64>, tensor<?x3xi64>
}
