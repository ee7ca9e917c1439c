// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-accumulate-early --comet-fuse-optimizer --verify-diagnostics | FileCheck %s
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-accumulate-early "--comet-fuse-optimizer=kind=sgd_v2" --verify-diagnostics | FileCheck %s --check-prefix=SGD
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-accumulate-early "--comet-fuse-optimizer=kind=sgd_momentum momentum=0.5 weight-decay=0.25" --verify-diagnostics | FileCheck %s --check-prefix=MOM
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-accumulate-early --comet-fuse-optimizer --comet-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=LOWER
// RUN: not comet-opt %s -split-input-file "--comet-fuse-optimizer=kind=lamb" 2>&1 | FileCheck %s --check-prefix=KIND

// Two layers: each accumulator becomes the update of its parameter. The
// gradient buffers and the accumulators' flags go; the moments, the
// learning rate and the step count come in as arguments.
// CHECK-LABEL: func.func @two_layers
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<64x64xf32> {onnx.name = "input"}
// CHECK-SAME: %[[W0:[a-z0-9]+]]: tensor<64x64xf32> {comet.optimizer = "weight", onnx.name = "fc0.weight"}
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<64x64xf32> {comet.optimizer = "weight", onnx.name = "fc1.weight"}
// CHECK-SAME: {onnx.name = "lazy_reset_grad"}
// CHECK-SAME: %[[B1:[a-z0-9]+]]: tensor<64xf32> {comet.optimizer = "weight", onnx.name = "fc1.bias"}
// CHECK-SAME: %[[M1:[a-z0-9]+]]: tensor<64x64xf32> {comet.optimizer = "state0", comet.optimizer_param = "fc1.weight", onnx.name = "fc1.weight.momentum1"}
// CHECK-SAME: %[[V1:[a-z0-9]+]]: tensor<64x64xf32> {comet.optimizer = "state1", comet.optimizer_param = "fc1.weight", onnx.name = "fc1.weight.momentum2"}
// CHECK-SAME: %[[M0:[a-z0-9]+]]: tensor<64x64xf32> {comet.optimizer = "state0", comet.optimizer_param = "fc0.weight", onnx.name = "fc0.weight.momentum1"}
// CHECK-SAME: %[[V0:[a-z0-9]+]]: tensor<64x64xf32> {comet.optimizer = "state1", comet.optimizer_param = "fc0.weight", onnx.name = "fc0.weight.momentum2"}
// CHECK-SAME: %[[MB:[a-z0-9]+]]: tensor<64xf32> {comet.optimizer = "state0", comet.optimizer_param = "fc1.bias", onnx.name = "fc1.bias.momentum1"}
// CHECK-SAME: %[[VB:[a-z0-9]+]]: tensor<64xf32> {comet.optimizer = "state1", comet.optimizer_param = "fc1.bias", onnx.name = "fc1.bias.momentum2"}
// CHECK-SAME: %[[LR:[a-z0-9]+]]: tensor<1xf32> {comet.optimizer = "lr", onnx.name = "comet.learning_rate"}
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<1xi64> {comet.optimizer = "step", onnx.name = "comet.optimizer_step"})
// CHECK-SAME: -> tensor<64x64xf32> attributes {comet.fused_optimizer = "adamw"}
// CHECK-NOT: accumulation.buffer
// CHECK: %[[DW1:.*]] = onnx.Gemm(%{{.*}}, %{{.*}}, %{{.*}}) {beta = 0.000000e+00 : f32, transA = 1 : i64}
// fc1.weight is read after its gradient is final (dh's Gemm): its update
// waits for that reader.
// CHECK-NEXT: %[[DH:.*]] = onnx.Gemm(%{{.*}}, %[[W1]], %{{.*}}) {beta = 0.000000e+00 : f32}
// CHECK-NEXT: comet.optimizer_update "adamw" %[[W1]], %[[DW1]] states(%[[M1]], %[[V1]] : tensor<64x64xf32>, tensor<64x64xf32>) lr %[[LR]] : tensor<1xf32> step %[[STEP]] : tensor<1xi64> : tensor<64x64xf32>, tensor<64x64xf32>
// CHECK-NEXT: %[[DW0:.*]] = onnx.Gemm(%[[DH]], %[[X]], %{{.*}}) {beta = 0.000000e+00 : f32, transA = 1 : i64}
// CHECK-NEXT: comet.optimizer_update "adamw" %[[W0]], %[[DW0]] states(%[[M0]], %[[V0]] :
// CHECK: %[[DB:.*]] = onnx.ReduceSum
// CHECK-NEXT: comet.optimizer_update "adamw" %[[B1]], %[[DB]] states(%[[MB]], %[[VB]] :
// CHECK-NOT: InPlaceAccumulatorV2
// CHECK: return %{{.*}} : tensor<64x64xf32>
// SGD-LABEL: func.func @two_layers
// SGD-SAME: %{{.*}}: tensor<64xf32> {comet.optimizer = "weight", onnx.name = "fc1.bias"}, %[[LR:[a-z0-9]+]]: tensor<1xf32> {comet.optimizer = "lr", onnx.name = "comet.learning_rate"}, %[[STEP:[a-z0-9]+]]: tensor<1xi64> {comet.optimizer = "step", onnx.name = "comet.optimizer_step"})
// SGD-SAME: attributes {comet.fused_optimizer = "sgd_v2"}
// SGD: comet.optimizer_update "sgd_v2" %{{.*}}, %{{.*}} lr %[[LR]] : tensor<1xf32> step %[[STEP]] : tensor<1xi64> : tensor<64x64xf32>, tensor<64x64xf32>
// MOM-LABEL: func.func @two_layers
// MOM-SAME: {comet.optimizer = "state0", comet.optimizer_param = "fc1.weight", onnx.name = "fc1.weight.momentum1"}
// MOM-NOT: momentum2
// MOM: comet.optimizer_update "sgd_momentum" %{{.*}}, %{{.*}} states(%{{.*}} : tensor<64x64xf32>) lr {{.*}} {momentum = 5.000000e-01 : f32, weight_decay = 2.500000e-01 : f32}
// KIND: comet-fuse-optimizer: kind 'lamb' is not adamw, sgd_v2 or sgd_momentum
func.func @two_layers(%x: tensor<64x64xf32> {onnx.name = "input"}, %w0: tensor<64x64xf32> {onnx.name = "fc0.weight"}, %w1: tensor<64x64xf32> {onnx.name = "fc1.weight"},
                      %g0: tensor<64x64xf32> {onnx.name = "fc0.weight_grad.accumulation.buffer"}, %g1: tensor<64x64xf32> {onnx.name = "fc1.weight_grad.accumulation.buffer"}, %gb: tensor<64xf32> {onnx.name = "fc1.bias_grad.accumulation.buffer"},
                      %reset: tensor<1xi1> {onnx.name = "lazy_reset_grad"}, %dl: tensor<64x64xf32> {onnx.name = "dl"}, %b1: tensor<64xf32> {onnx.name = "fc1.bias"})
    -> (tensor<64x64xf32>, tensor<1xi1>, tensor<1xi1>, tensor<1xi1>) {
  %none = onnx.NoValue
  %h = onnx.Gemm(%x, %w0, %none) {transB = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>, none) -> tensor<64x64xf32>
  %y = onnx.Gemm(%h, %w1, %b1) {transB = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<64x64xf32>
  %dw1 = onnx.Gemm(%dl, %h, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<64x64xf32>, tensor<64x64xf32>, none) -> tensor<64x64xf32>
  %dh = onnx.Gemm(%dl, %w1, %none) {beta = 0.0 : f32} : (tensor<64x64xf32>, tensor<64x64xf32>, none) -> tensor<64x64xf32>
  %dw0 = onnx.Gemm(%dh, %x, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<64x64xf32>, tensor<64x64xf32>, none) -> tensor<64x64xf32>
  %axes = onnx.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %db = onnx.ReduceSum(%dl, %axes) {keepdims = 0 : i64} : (tensor<64x64xf32>, tensor<1xi64>) -> tensor<64xf32>
  %r = onnx.Relu(%y) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %f0, %n0 = onnx.InPlaceAccumulatorV2(%g0, %dw0, %reset) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  %f1, %n1 = onnx.InPlaceAccumulatorV2(%g1, %dw1, %reset) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  %f2, %n2 = onnx.InPlaceAccumulatorV2(%gb, %db, %reset) : (tensor<64xf32>, tensor<64xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  return %r, %f0, %f1, %f2 : tensor<64x64xf32>, tensor<1xi1>, tensor<1xi1>, tensor<1xi1>
}

// -----

// A tied weight: two layers share w, whose gradient is the sum of both
// contributions; the input gradient reads w once more after that sum. The
// update goes after the last reader, not after the gradient.
// CHECK-LABEL: func.func @tied
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<8x8xf32> {comet.optimizer = "weight", onnx.name = "w"}
// CHECK: %[[DW:.*]] = onnx.Add
// CHECK-NEXT: %[[DX:.*]] = onnx.Gemm(%{{.*}}, %[[W]], %{{.*}})
// CHECK-NEXT: comet.optimizer_update "adamw" %[[W]], %[[DW]]
// CHECK-NEXT: return %{{.*}}, %[[DX]] : tensor<8x8xf32>, tensor<8x8xf32>
// The update is the runtime's AdamW kernel on the argument buffers.
// LOWER-LABEL: func.func @tied(%arg0: !llvm.ptr {comet.context}
// LOWER-SAME: attributes {comet.fused_optimizer = "adamw", llvm.emit_c_interface}
// LOWER: call @comet_rt_adamw(%arg0,
// LOWER-NOT: func.func
// LOWER: return
func.func @tied(%x: tensor<8x8xf32> {onnx.name = "x"}, %w: tensor<8x8xf32> {onnx.name = "w"},
                %g: tensor<8x8xf32> {onnx.name = "w_grad.accumulation.buffer"},
                %reset: tensor<1xi1> {onnx.name = "lazy_reset_grad"}, %dl: tensor<8x8xf32> {onnx.name = "dl"})
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<1xi1>) {
  %none = onnx.NoValue
  %h = onnx.Gemm(%x, %w, %none) {transB = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>, none) -> tensor<8x8xf32>
  %y = onnx.Gemm(%h, %w, %none) {transB = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>, none) -> tensor<8x8xf32>
  %dw2 = onnx.Gemm(%dl, %h, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<8x8xf32>, tensor<8x8xf32>, none) -> tensor<8x8xf32>
  %dh = onnx.Gemm(%dl, %w, %none) {beta = 0.0 : f32} : (tensor<8x8xf32>, tensor<8x8xf32>, none) -> tensor<8x8xf32>
  %dw1 = onnx.Gemm(%dh, %x, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<8x8xf32>, tensor<8x8xf32>, none) -> tensor<8x8xf32>
  %dw = onnx.Add(%dw1, %dw2) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %dx = onnx.Gemm(%dh, %w, %none) {beta = 0.0 : f32} : (tensor<8x8xf32>, tensor<8x8xf32>, none) -> tensor<8x8xf32>
  %f, %n = onnx.InPlaceAccumulatorV2(%g, %dw, %reset) : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  return %y, %dx, %f : tensor<8x8xf32>, tensor<8x8xf32>, tensor<1xi1>
}

// -----

// The graph returns a gradient buffer, so its contents are wanted after
// the step: nothing fuses (all or nothing) and the function is unchanged.
// CHECK-LABEL: func.func @returned_buffer
// CHECK-SAME: {onnx.name = "fc1.bias_grad.accumulation.buffer"}
// CHECK-NOT: comet.fused_optimizer
// CHECK-NOT: comet.optimizer_update
// CHECK: onnx.InPlaceAccumulatorV2
// CHECK: onnx.InPlaceAccumulatorV2
// CHECK: return
func.func @returned_buffer(%x: tensor<8x8xf32> {onnx.name = "x"}, %w: tensor<8x8xf32> {onnx.name = "fc1.weight"}, %b: tensor<8xf32> {onnx.name = "fc1.bias"},
                           %gw: tensor<8x8xf32> {onnx.name = "fc1.weight_grad.accumulation.buffer"}, %gb: tensor<8xf32> {onnx.name = "fc1.bias_grad.accumulation.buffer"},
                           %reset: tensor<1xi1> {onnx.name = "lazy_reset_grad"}, %dl: tensor<8x8xf32> {onnx.name = "dl"})
    -> (tensor<8x8xf32>, tensor<1xi1>, tensor<1xi1>, tensor<8xf32>) {
  %none = onnx.NoValue
  %y = onnx.Gemm(%x, %w, %b) {transB = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %dw = onnx.Gemm(%dl, %x, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<8x8xf32>, tensor<8x8xf32>, none) -> tensor<8x8xf32>
  %axes = onnx.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %db = onnx.ReduceSum(%dl, %axes) {keepdims = 0 : i64} : (tensor<8x8xf32>, tensor<1xi64>) -> tensor<8xf32>
  %f0, %n0 = onnx.InPlaceAccumulatorV2(%gw, %dw, %reset) : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  // expected-remark @+1 {{comet-fuse-optimizer: @returned_buffer keeps its optimizer after the step: its buffer 'fc1.bias_grad.accumulation.buffer' is read elsewhere: the gradient is wanted after the step}}
  %f1, %n1 = onnx.InPlaceAccumulatorV2(%gb, %db, %reset) : (tensor<8xf32>, tensor<8xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  return %y, %f0, %f1, %gb : tensor<8x8xf32>, tensor<1xi1>, tensor<1xi1>, tensor<8xf32>
}

// -----

// An accumulator that keeps adding across steps (its flag is not
// lazy_reset_grad) stays: the gradient is the sum of several batches.
// CHECK-LABEL: func.func @no_reset
// CHECK-NOT: comet.optimizer_update
// CHECK: onnx.InPlaceAccumulatorV2
func.func @no_reset(%x: tensor<8x8xf32> {onnx.name = "x"}, %w: tensor<8x8xf32> {onnx.name = "w"},
                    %gw: tensor<8x8xf32> {onnx.name = "w_grad.accumulation.buffer"}, %dl: tensor<8x8xf32> {onnx.name = "dl"})
    -> (tensor<8x8xf32>, tensor<1xi1>) {
  %none = onnx.NoValue
  %y = onnx.Gemm(%x, %w, %none) {transB = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>, none) -> tensor<8x8xf32>
  %dw = onnx.Gemm(%dl, %x, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<8x8xf32>, tensor<8x8xf32>, none) -> tensor<8x8xf32>
  %false = onnx.Constant {value = dense<false> : tensor<1xi1>} : tensor<1xi1>
  // expected-remark @+1 {{comet-fuse-optimizer: @no_reset keeps its optimizer after the step: its overwrite flag is not the lazy_reset_grad argument}}
  %f, %n = onnx.InPlaceAccumulatorV2(%gw, %dw, %false) : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
  return %y, %f : tensor<8x8xf32>, tensor<1xi1>
}
