// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-compact-pool-indices | FileCheck %s
// RUN: comet-opt %s -split-input-file --comet-compact-pool-indices --comet-lower-to-runtime | FileCheck %s --check-prefix=LOWER
// RUN: comet-opt %s -split-input-file --comet-compact-pool-indices --comet-memory-report 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT
// RUN: comet-opt %s -split-input-file --comet-memory-report 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE

// ResNet's stem pooling (3x3, stride 2, pad 1) whose Indices only its
// MaxPoolGrad reads: they become window positions, a byte each instead of
// eight; the gradient reads the same value.
// CHECK-LABEL: func.func @stem
// CHECK: %[[Y:.*]], %[[I:.*]] = onnx.MaxPool(%arg0) {{.*}} : (tensor<2x4x8x8xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xui8>)
// CHECK: onnx.MaxPoolGrad(%{{.*}}, %[[I]]) {{.*}} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xui8>) -> tensor<2x4x8x8xf32>
// LOWER-LABEL: func.func @stem
// LOWER-NOT: call @comet_rt_maxpool2d(
// LOWER: call @comet_rt_maxpool2d_window({{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xui8>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> i32
// LOWER-NOT: call @comet_rt_maxpool_grad(
// LOWER: call @comet_rt_maxpool_grad_window({{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xui8>, memref<*xf32>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> i32
// LOWER-LABEL: func.func @two_grads_ceil_dilated
// The 128 indices take 128 B instead of 1024 B over the same interval;
// the report sizes them from their type, and the peak (the MaxPoolGrad,
// where they are still live) drops by the 896 B.
// REPORT-LABEL: comet memory report: @stem
// REPORT: predicted peak: 5824 B ({{.*}}) at step 6 (onnx.MaxPoolGrad "maxpool1_Grad")
// REPORT: maxpool1:1 activation 128 [1, 6]
// BEFORE-LABEL: comet memory report: @stem
// BEFORE: predicted peak: 6720 B ({{.*}}) at step 6 (onnx.MaxPoolGrad "maxpool1_Grad")
// BEFORE: maxpool1:1 activation 1024 [1, 6]
func.func @stem(%x: tensor<2x4x8x8xf32> {onnx.name = "input"}, %w: tensor<4x4x3x3xf32> {onnx.name = "w"}) -> (tensor<2x4x4x4xf32> {onnx.name = "out"}, tensor<2x4x8x8xf32> {onnx.name = "input_grad"}) {
  %none = onnx.NoValue
  %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>) loc("maxpool1")
  %z = onnx.Conv(%y, %w, %none) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x4x4xf32>, tensor<4x4x3x3xf32>, none) -> tensor<2x4x4x4xf32> loc("conv1")
  %r = onnx.Relu(%z) : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32> loc("relu1")
  %dz = onnx.ReluGrad(%r, %z) : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32> loc("relu1_Grad")
  %dy, %dw, %db = onnx.ConvGrad(%dz, %y, %w) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x4x3x3xf32>) -> (tensor<2x4x4x4xf32>, none, none) loc("conv1_Grad")
  %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>) -> tensor<2x4x8x8xf32> loc("maxpool1_Grad")
  return %r, %dx : tensor<2x4x4x4xf32>, tensor<2x4x8x8xf32>
}

// -----

// Two MaxPoolGrads with the pool's window (defaults written out or not):
// still only gradients read the Indices. Ceil mode and dilations keep
// positions too.
// CHECK-LABEL: func.func @two_grads_ceil_dilated
// CHECK: onnx.MaxPool(%arg0) {{.*}} -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xui8>)
// CHECK-COUNT-2: onnx.MaxPoolGrad({{.*}}tensor<1x2x4x4xui8>)
func.func @two_grads_ceil_dilated(%x: tensor<1x2x9x9xf32>, %dy: tensor<1x2x4x4xf32>) -> (tensor<1x2x9x9xf32>, tensor<1x2x9x9xf32>) {
  %y, %i = onnx.MaxPool(%x) {ceil_mode = 1 : i64, dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x9x9xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>)
  %a = onnx.MaxPoolGrad(%dy, %i) {ceil_mode = 1 : i64, dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>) -> tensor<1x2x9x9xf32>
  %b = onnx.MaxPoolGrad(%dy, %i) {ceil_mode = 1 : i64, dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, storage_order = 0 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>) -> tensor<1x2x9x9xf32>
  return %a, %b : tensor<1x2x9x9xf32>, tensor<1x2x9x9xf32>
}

// -----

// The Indices are a graph output: they stay ONNX's flat int64 indices.
// CHECK-LABEL: func.func @returned
// CHECK: onnx.MaxPool(%arg0) {{.*}} -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>)
// CHECK: onnx.MaxPoolGrad({{.*}}tensor<2x4x4x4xi64>)
// LOWER-LABEL: func.func @returned
// LOWER: call @comet_rt_maxpool2d({{.*}}memref<*xi64>
// LOWER: call @comet_rt_maxpool_grad({{.*}}memref<*xi64>
func.func @returned(%x: tensor<2x4x8x8xf32>, %dy: tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xi64>, tensor<2x4x8x8xf32>) {
  %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>)
  %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>) -> tensor<2x4x8x8xf32>
  return %i, %dx : tensor<2x4x4x4xi64>, tensor<2x4x8x8xf32>
}

// -----

// Another op reads the Indices (as numbers): they stay flat.
// CHECK-LABEL: func.func @other_reader
// CHECK: onnx.MaxPool(%arg0) {{.*}} -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>)
// CHECK: onnx.Identity({{.*}}) : (tensor<2x4x4x4xi64>) -> tensor<2x4x4x4xi64>
func.func @other_reader(%x: tensor<2x4x8x8xf32>, %dy: tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xi64>, tensor<2x4x8x8xf32>) {
  %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>)
  %c = onnx.Identity(%i) : (tensor<2x4x4x4xi64>) -> tensor<2x4x4x4xi64>
  %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>) -> tensor<2x4x8x8xf32>
  return %c, %dx : tensor<2x4x4x4xi64>, tensor<2x4x8x8xf32>
}

// -----

// A MaxPoolGrad with another window (here the strides) would turn a
// position into another index: the Indices stay flat.
// CHECK-LABEL: func.func @other_window
// CHECK: onnx.MaxPool(%arg0) {{.*}} -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>)
func.func @other_window(%x: tensor<2x4x8x8xf32>, %dy: tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32> {
  %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>)
  %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 2>} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xi64>) -> tensor<2x4x8x8xf32>
  return %dx : tensor<2x4x8x8xf32>
}

// -----

// A window of 17x16 = 272 positions does not fit a byte; nor do unread
// Indices change.
// CHECK-LABEL: func.func @wide_or_unread
// CHECK: onnx.MaxPool(%arg0) {{.*}} -> (tensor<1x2x1x1xf32>, tensor<1x2x1x1xi64>)
// CHECK: onnx.MaxPool(%arg0) {{.*}} -> (tensor<1x2x9x8xf32>, tensor<1x2x9x8xi64>)
func.func @wide_or_unread(%x: tensor<1x2x17x16xf32>, %dy: tensor<1x2x1x1xf32>) -> (tensor<1x2x17x16xf32>, tensor<1x2x9x8xf32>) {
  %y, %i = onnx.MaxPool(%x) {kernel_shape = array<i64: 17, 16>} : (tensor<1x2x17x16xf32>) -> (tensor<1x2x1x1xf32>, tensor<1x2x1x1xi64>)
  %dx = onnx.MaxPoolGrad(%dy, %i) {kernel_shape = array<i64: 17, 16>} : (tensor<1x2x1x1xf32>, tensor<1x2x1x1xi64>) -> tensor<1x2x17x16xf32>
  %y2, %i2 = onnx.MaxPool(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 0>} : (tensor<1x2x17x16xf32>) -> (tensor<1x2x9x8xf32>, tensor<1x2x9x8xi64>)
  return %dx, %y2 : tensor<1x2x17x16xf32>, tensor<1x2x9x8xf32>
}
