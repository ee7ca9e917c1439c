// RUN: comet-opt %s --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// Softmax cross-entropy and its gradient (populateLossLoweringPatterns):
// the reduction as a code (none 0, sum 1, mean 2), then ignore_index and
// whether it is set. The labels argument is marked with its classes.
// CHECK-LABEL: func.func @loss(
// CHECK-SAME: %{{.*}}: memref<2xi64> {comet.labels = 5 : i64}
// CHECK-DAG: %[[SUM:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[IGNORE:.*]] = arith.constant -100 : i64
// CHECK: call @comet_rt_softmax_cross_entropy_loss(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LOGP:[a-z0-9_]+]], %[[SUM]], %[[IGNORE]], %[[SUM]]) : (!llvm.ptr, memref<*xf32>, memref<*xi64>, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64) -> i32
// CHECK: call @comet_rt_softmax_cross_entropy_loss_grad(%arg0, %{{.*}}, %[[LOGP]], %{{.*}}, %{{.*}}, %{{.*}}, %[[SUM]], %[[IGNORE]], %[[SUM]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xi64>, memref<*xf32>, memref<*xf32>, i64, i64, i64) -> i32
func.func @loss(%s: tensor<2x5xf32>, %l: tensor<2xi64>, %dy: tensor<f32>) -> (tensor<f32>, tensor<2x5xf32>) {
  %none = onnx.NoValue
  %out, %lp = onnx.SoftmaxCrossEntropyLoss(%s, %l, %none) {ignore_index = -100 : i64, reduction = "sum"} : (tensor<2x5xf32>, tensor<2xi64>, none) -> (tensor<f32>, tensor<2x5xf32>)
  %d = onnx.SoftmaxCrossEntropyLossGrad(%dy, %lp, %l, %none, %none) {reduction = "sum", ignore_index = -100 : i64} : (tensor<f32>, tensor<2x5xf32>, tensor<2xi64>, none, none) -> tensor<2x5xf32>
  return %out, %d : tensor<f32>, tensor<2x5xf32>
}
