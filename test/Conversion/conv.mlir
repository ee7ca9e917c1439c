// RUN: comet-opt %s -split-input-file --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// Convolution and pooling windows (populateConvLoweringPatterns).

// Conv attributes become explicit scalars (strides, pads top/left/bottom/
// right, dilations, group); Shape of a static tensor is a constant copied
// into an allocated buffer; gradient-flow values go to category grads (1).
// CHECK: memref.global "private" constant @__comet_const_{{[0-9]+}} : memref<4xi64> = dense<[2, 3, 8, 8]>
// CHECK-LABEL: func.func @conv(
// CHECK-DAG: %[[S2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[P1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[P0:.*]] = arith.constant 0 : i64
// CHECK: call @comet_rt_conv2d(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[S2]], %[[S2]], %[[P1]], %[[P0]], %[[P1]], %[[P0]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: memref.get_global
// CHECK: call @comet_rt_identity_i64(%arg0,
// CHECK: %[[C1:.*]] = arith.constant 1 : i32
// CHECK: call @comet_rt_buffer_alloc(%arg0, %{{.*}}, %[[C1]])
// CHECK: call @comet_rt_conv_grad2d(
func.func @conv(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %dy: tensor<2x4x4x4xf32>)
    -> (tensor<2x4x4x4xf32>, tensor<4xi64>, tensor<2x3x8x8xf32>) {
  %none = onnx.NoValue
  %y = onnx.Conv(%x, %w, %none) {pads = array<i64: 1, 0, 1, 0>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<2x4x4x4xf32>
  %s = onnx.Shape(%x) : (tensor<2x3x8x8xf32>) -> tensor<4xi64>
  %dx, %dw, %db = onnx.ConvGrad(%dy, %x, %w) {pads = array<i64: 1, 0, 1, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  return %y, %s, %dx : tensor<2x4x4x4xf32>, tensor<4xi64>, tensor<2x3x8x8xf32>
}

// -----

// Sigmoid, Tanh and their gradients; AveragePool (2x2, and 3x3 stride 2 pad
// 1 without the padding in the count) and AveragePoolGrad take kernel,
// strides, pads and count_include_pad; Pad takes its pads as a constant
// memref, and the gradient's Neg of constant pads folds to a constant.
// CHECK-LABEL: func.func @activations(
// CHECK: call @comet_rt_sigmoid(%arg0, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>) -> i32
// CHECK: %[[PADS:.*]] = memref.get_global @__comet_const_{{[0-9]+}} : memref<8xi64>
// CHECK: call @comet_rt_pad(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xi64>, memref<*xf32>, memref<*xf32>) -> i32
// CHECK: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: call @comet_rt_avgpool2d(%arg0, %{{.*}}, %{{.*}}, %[[TWO]], %[[TWO]], %[[TWO]], %[[TWO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ONE]])
// CHECK: call @comet_rt_tanh(%arg0,
// CHECK: %[[THREE:.*]] = arith.constant 3 : i64
// CHECK: call @comet_rt_avgpool2d(%arg0, %{{.*}}, %{{.*}}, %[[THREE]], %[[THREE]], %[[TWO]], %[[TWO]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ZERO]])
// CHECK: call @comet_rt_avgpool_grad2d(%arg0, %{{.*}}, %{{.*}}, %[[THREE]], %[[THREE]], %[[TWO]], %[[TWO]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ONE]], %[[ZERO]])
// CHECK: call @comet_rt_tanh_grad(%arg0,
// CHECK: call @comet_rt_avgpool_grad2d(%arg0, %{{.*}}, %{{.*}}, %[[TWO]], %[[TWO]], %[[TWO]], %[[TWO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ONE]])
// CHECK: call @comet_rt_identity_i64(%arg0,
// CHECK: call @comet_rt_pad(%arg0,
// CHECK: call @comet_rt_sigmoid_grad(%arg0,
func.func @activations(%x: tensor<?x2x8x8xf32>, %dy: tensor<?x2x2x2xf32>) -> (tensor<?x2x2x2xf32>, tensor<?x2x8x8xf32>) {
  %none = onnx.NoValue
  %pads = onnx.Constant {value = dense<0> : tensor<8xi64>} : tensor<8xi64>
  %s = onnx.Sigmoid(%x) : (tensor<?x2x8x8xf32>) -> tensor<?x2x8x8xf32>
  %p = onnx.Pad(%s, %pads, %none, %none) : (tensor<?x2x8x8xf32>, tensor<8xi64>, none, none) -> tensor<?x2x8x8xf32>
  %a = onnx.AveragePool(%p) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<?x2x8x8xf32>) -> tensor<?x2x4x4xf32>
  %t = onnx.Tanh(%a) : (tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32>
  %y = onnx.AveragePool(%t) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x2x4x4xf32>) -> tensor<?x2x2x2xf32>
  %dt = onnx.AveragePoolGrad(%dy) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x2x2x2xf32>) -> tensor<?x2x4x4xf32>
  %da = onnx.TanhGrad(%dt, %t) : (tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32>
  %dp = onnx.AveragePoolGrad(%da) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<?x2x4x4xf32>) -> tensor<?x2x8x8xf32>
  %np = onnx.Neg(%pads) : (tensor<8xi64>) -> tensor<8xi64>
  %ds = onnx.Pad(%dp, %np, %none, %none) : (tensor<?x2x8x8xf32>, tensor<8xi64>, none, none) -> tensor<?x2x8x8xf32>
  %dx = onnx.SigmoidGrad(%ds, %s) : (tensor<?x2x8x8xf32>, tensor<?x2x8x8xf32>) -> tensor<?x2x8x8xf32>
  return %y, %dx : tensor<?x2x2x2xf32>, tensor<?x2x8x8xf32>
}

// -----

// MaxPool: the kernel, then strides, pads (top, left, bottom, right) and
// dilations, then storage_order; the Indices result is i64.
// CHECK-LABEL: func.func @max_pool(
// CHECK-DAG: %[[K:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[S:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: call @comet_rt_maxpool2d(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[K]], %[[K]], %[[S]], %[[S]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ONE]], %[[ONE]], %[[ZERO]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xi64>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> i32
func.func @max_pool(%x: tensor<2x3x8x8xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>) {
  %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : (tensor<2x3x8x8xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>)
  return %y, %i : tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>
}

// -----

// MaxPool whose Indices are window positions (ui8): maxpool2d_window, with
// no storage_order (a position does not depend on it); MaxPoolGrad reading
// them: maxpool_grad_window, with the window and storage_order.
// CHECK-LABEL: func.func @max_pool_window(
// CHECK-DAG: %[[K:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[S:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: call @comet_rt_maxpool2d_window(%arg0, %{{.*}}, %{{.*}}, %[[P:[a-z0-9_]+]], %[[K]], %[[K]], %[[S]], %[[S]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ONE]], %[[ONE]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xui8>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> i32
// CHECK: call @comet_rt_maxpool_grad_window(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[K]], %[[K]], %[[S]], %[[S]], %[[ONE]], %[[ONE]], %[[ZERO]], %[[ZERO]], %[[ONE]], %[[ONE]], %[[ZERO]]) : (!llvm.ptr, memref<*xf32>, memref<*xui8>, memref<*xf32>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> i32
func.func @max_pool_window(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x3x4x4xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>) {
  %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : (tensor<2x3x8x8xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xui8>)
  %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xui8>) -> tensor<2x3x8x8xf32>
  return %y, %dx : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
}
