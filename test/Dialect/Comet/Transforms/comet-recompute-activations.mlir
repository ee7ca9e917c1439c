// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-recompute-activations="min-bytes=0 min-distance=3" | FileCheck %s
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-recompute-activations="min-bytes=0 min-distance=3 exact-masks=false" | FileCheck %s --check-prefix=NOMASK
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-recompute-activations="min-bytes=0 min-distance=3" --comet-compress-activations="min-bytes=0 min-distance=3" | FileCheck %s --check-prefix=SZ
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-recompute-activations="min-bytes=0 min-distance=3" --comet-compress-activations="min-bytes=0 min-distance=3 scale-prior=4" | FileCheck %s --check-prefix=GAIN
// RUN: comet-opt %s -split-input-file --comet-recompute-activations="min-bytes=0 min-distance=3" --comet-lower-to-runtime | FileCheck %s --check-prefix=LOWER
// RUN: comet-opt %s -split-input-file --comet-recompute-activations="min-bytes=0 min-distance=3 exact-masks=false" --comet-memory-report 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT
// RUN: comet-opt %s -split-input-file --comet-memory-report 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-recompute-activations="min-bytes=0 min-distance=3 max-conv-macs=8" | FileCheck %s --check-prefix=MACS
// RUN: not comet-opt %s --comet-recompute-activations="min-distance=0" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: comet-opt %s -mlir-print-debuginfo=false --comet-recompute-activations="min-bytes=0 min-distance=3 only=relu1" | FileCheck %s --check-prefix=ONLY
// RUN: not comet-opt %s --comet-recompute-activations="min-bytes=0 min-distance=3 only=nosuch" 2>&1 | FileCheck %s --check-prefix=ERR-ONLY

// conv -> BatchNorm -> ReLU -> conv: the ReLU output R is read in the
// backward by conv2's weight gradient and by ReluGrad; the conv output X by
// BatchNormalizationGrad, later. R is recomputed from X and the saved
// statistics just before conv2's ConvGrad, which reads the recomputed
// value; ReluGrad keeps reading R (a mask once compressed) unless
// exact-masks=false.
// CHECK-LABEL: func.func @conv_bn_relu
// CHECK: %[[X:.*]] = onnx.Conv(%arg0
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}}, %[[M:.*]], %[[I:.*]] = onnx.BatchNormInternal(%[[X]], %arg2, %arg3,
// CHECK: %[[R:.*]] = onnx.Relu(%[[Y]])
// CHECK: onnx.Expand
// CHECK-NEXT: %[[R2:.*]] = comet.batch_norm_apply %[[X]], %arg2, %arg3, %[[M]], %[[I]] {activation = "relu"} : (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2x4x4xf32>
// CHECK-NEXT: %[[DX:.*]], %{{.*}}, %{{.*}} = onnx.ConvGrad(%{{.*}}, %[[R2]], %arg6)
// CHECK-NEXT: onnx.ReluGrad(%[[DX]], %[[R]])
// CHECK-NEXT: onnx.BatchNormalizationGrad(%{{.*}}, %[[X]], %arg2, %[[M]], %[[I]])
// NOMASK-LABEL: func.func @conv_bn_relu
// NOMASK: %[[R2:.*]] = comet.batch_norm_apply
// NOMASK-NEXT: %[[DX:.*]], %{{.*}}, %{{.*}} = onnx.ConvGrad(%{{.*}}, %[[R2]], %arg6)
// NOMASK-NEXT: onnx.ReluGrad(%[[DX]], %[[R2]])

// Compressed: X gets the tighter of its BatchNorm bound (R = 1, inv_std
// prior 1: 3.0618622e-3) and what conv2's weight gradient tolerates in the
// recomputed value (the conv bound 4.330127e-3 with R = 0.5, divided by the
// gain |scale| / std, 1 at the priors), so the BatchNorm's; with
// scale-prior=4 the gain is 4 and the recompute decides: 1.0825318e-3.
// The recompute reads its own decompressed copy (written over in place);
// BatchNormalizationGrad another, later. R is a 1-bit mask for ReluGrad.
// (X's compress precedes the BatchNorm, which then writes over X.)
// SZ-LABEL: func.func @conv_bn_relu
// SZ: %[[HX:.*]] = comet.compress %{{.*}} bound <abs = 0.00306186217{{[0-9]*}}, slot = 0> {comet.tune = [#comet.consumer<kind = batchnorm, {{.*}}>]} : tensor<2x2x4x4xf32> -> !comet.compressed<tensor<2x2x4x4xf32>, sz>
// SZ-NEXT: onnx.BatchNormInternal
// SZ-NEXT: %[[R:.*]] = onnx.Relu(
// SZ: %[[H:.*]] = comet.compress %[[R]] : tensor<2x2x4x4xf32> -> !comet.compressed<tensor<2x2x4x4xf32>, mask>
// SZ-NOT: comet.compress
// SZ: %[[D1:.*]] = comet.decompress %[[HX]]
// SZ-NEXT: %[[R2:.*]] = comet.batch_norm_apply %[[D1]],
// SZ-NEXT: onnx.ConvGrad(%{{.*}}, %[[R2]], %arg6)
// SZ-NEXT: %[[M:.*]] = comet.decompress %[[H]]
// SZ-NEXT: onnx.ReluGrad(%{{.*}}, %[[M]])
// SZ-NEXT: %[[D2:.*]] = comet.decompress %[[HX]]
// SZ-NEXT: onnx.BatchNormalizationGrad(%{{.*}}, %[[D2]],
// only= (a memory budget's choice) names the values to recompute (all
// functions in one module): relu1 is, the ReLU6 output is not.
// ONLY-LABEL: func.func @conv_bn_relu(
// ONLY: comet.batch_norm_apply {{.*}}{activation = "relu"}
// ONLY-LABEL: func.func @conv_bn_relu6(
// ONLY-NOT: comet.batch_norm_apply
// ONLY: return
// GAIN-LABEL: func.func @conv_bn_relu
// GAIN: comet.compress %{{.*}} bound <abs = 0.00108253175{{[0-9]*}}, slot = 0>

// LOWER-LABEL: func.func @conv_bn_relu
// LOWER: call @comet_rt_batch_norm_apply({{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, f32, f32) -> i32

// Without masks kept, R (written over the BatchNorm's output bn1:0, in
// place) dies at conv2 in the forward instead of living to ReluGrad; the
// recomputed value lives from just before conv2's ConvGrad to ReluGrad.
// The peak (at that ConvGrad, where the recomputed value takes R's place)
// does not grow.
// REPORT-LABEL: comet memory report: @conv_bn_relu
// REPORT: predicted peak: 1585 B
// REPORT: bn1:0 activation 256 [2, 4]
// REPORT: relu1.recompute activation 256 [8, 10]
// BEFORE-LABEL: comet memory report: @conv_bn_relu
// BEFORE: predicted peak: 1585 B
// BEFORE: bn1:0 activation 256 [2, 9]
func.func @conv_bn_relu(%x: tensor<2x1x6x6xf32> {onnx.name = "input"},
    %w: tensor<2x1x3x3xf32> {onnx.name = "conv1.weight"},
    %scale: tensor<2xf32> {onnx.name = "bn1.weight"},
    %bias: tensor<2xf32> {onnx.name = "bn1.bias"},
    %mean: tensor<2xf32> {onnx.name = "bn1.running_mean"},
    %var: tensor<2xf32> {onnx.name = "bn1.running_var"},
    %w2: tensor<2x2x3x3xf32> {onnx.name = "conv2.weight"},
    %acc: tensor<2xf32> {onnx.name = "bn1.weight_grad.accumulation.buffer"},
    %acc2: tensor<2x2x3x3xf32> {onnx.name = "conv2.weight_grad.accumulation.buffer"},
    %reset: tensor<1xi1> {onnx.name = "lazy_reset_grad"})
    -> (tensor<1xi1> {onnx.name = "bn1.weight_grad.accumulation.out"}, tensor<1xi1> {onnx.name = "conv2.weight_grad.accumulation.out"}) {
  %none = "onnx.NoValue"() : () -> none
  %c = "onnx.Conv"(%x, %w, %none) {kernel_shape = array<i64: 3, 3>} : (tensor<2x1x6x6xf32>, tensor<2x1x3x3xf32>, none) -> tensor<2x2x4x4xf32> loc("conv1")
  %y, %rm, %rv, %sm, %sis = "onnx.BatchNormInternal"(%c, %scale, %bias, %mean, %var) {training_mode = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) loc("bn1")
  %r = "onnx.Relu"(%y) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> loc("relu1")
  %c2 = "onnx.Conv"(%r, %w2, %none) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x2x4x4xf32>, tensor<2x2x3x3xf32>, none) -> tensor<2x2x4x4xf32> loc("conv2")
  %s = "onnx.ReduceSum"(%c2, %none) {keepdims = 0 : i64} : (tensor<2x2x4x4xf32>, none) -> tensor<f32> loc("sum")
  %shape = "onnx.Constant"() {value = dense<[2, 2, 4, 4]> : tensor<4xi64>} : () -> tensor<4xi64> loc("shape")
  %dy = "onnx.Expand"(%s, %shape) : (tensor<f32>, tensor<4xi64>) -> tensor<2x2x4x4xf32> loc("sum_Grad/Expand")
  %dr, %dw2, %db2 = "onnx.ConvGrad"(%dy, %r, %w2) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x3x3xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x3x3xf32>, none) loc("conv2_Grad")
  %drr = "onnx.ReluGrad"(%dr, %r) : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> loc("relu1_Grad")
  %dc, %dscale, %dbias = "onnx.BatchNormalizationGrad"(%drr, %c, %scale, %sm, %sis) : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>) loc("bn1_Grad")
  %u, %o = "onnx.InPlaceAccumulatorV2"(%acc, %dscale, %reset) : (tensor<2xf32>, tensor<2xf32>, tensor<1xi1>) -> (tensor<1xi1>, none) loc("GradientAccumulator1")
  %u2, %o2 = "onnx.InPlaceAccumulatorV2"(%acc2, %dw2, %reset) : (tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>, tensor<1xi1>) -> (tensor<1xi1>, none) loc("GradientAccumulator2")
  return %u, %u2 : tensor<1xi1>, tensor<1xi1>
}

// -----

// ReLU6 (Clip with constant bounds, as MobileNetV2 exports it): the
// recompute clips with the same bounds. The Clip's gradient reads nothing
// of its output here (HoistMasks turns ORT's compares into masks).
// CHECK-LABEL: func.func @conv_bn_relu6
// CHECK: comet.batch_norm_apply %{{.*}} {activation = "clip", hi = 6.000000e+00 : f32}
// CHECK-NEXT: onnx.ConvGrad
func.func @conv_bn_relu6(%x: tensor<2x2x4x4xf32>, %scale: tensor<2xf32>, %bias: tensor<2xf32>, %mean: tensor<2xf32>, %var: tensor<2xf32>, %w2: tensor<2x2x1x1xf32>, %dy: tensor<2x2x4x4xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2x2x4x4xf32>) {
  %y, %rm, %rv, %sm, %sis = onnx.BatchNormInternal(%x, %scale, %bias, %mean, %var) {training_mode = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %lo = onnx.Constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %hi = onnx.Constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
  %r = onnx.Clip(%y, %lo, %hi) : (tensor<2x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %none = onnx.NoValue
  %c2 = onnx.Conv(%r, %w2, %none) {kernel_shape = array<i64: 1, 1>} : (tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<2x2x4x4xf32>
  %e = onnx.Relu(%c2) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %f = onnx.Relu(%e) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %dr, %dw2, %db2 = onnx.ConvGrad(%dy, %r, %w2) {kernel_shape = array<i64: 1, 1>} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>, none)
  %dx, %ds, %db = onnx.BatchNormalizationGrad(%dr, %x, %scale, %sm, %sis) : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>)
  return %f, %dw2, %dx : tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2x2x4x4xf32>
}

// -----

// Left alone: a Clip bound that is not a constant; a BatchNorm in inference
// mode (no saved statistics); a BatchNorm whose input its gradient does not
// read after the output's reader (keeping X for the recompute would keep
// as much as R).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: comet.batch_norm_apply
// CHECK: return
func.func @left_alone(%x: tensor<2x2x4x4xf32>, %scale: tensor<2xf32>, %bias: tensor<2xf32>, %mean: tensor<2xf32>, %var: tensor<2xf32>, %w2: tensor<2x2x1x1xf32>, %dy: tensor<2x2x4x4xf32>, %hi: tensor<f32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2x2x1x1xf32>, tensor<2x2x1x1xf32>, tensor<2x2x4x4xf32>) {
  %none = onnx.NoValue
  %y, %rm, %rv, %sm, %sis = onnx.BatchNormInternal(%x, %scale, %bias, %mean, %var) {training_mode = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %r = onnx.Clip(%y, %none, %hi) : (tensor<2x2x4x4xf32>, none, tensor<f32>) -> tensor<2x2x4x4xf32>
  %y2, %rm2, %rv2, %sm2, %sis2 = onnx.BatchNormInternal(%x, %scale, %bias, %mean, %var) : (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, none, none, none, none)
  %r2 = onnx.Relu(%y2) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %x3 = onnx.Relu(%x) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %y3, %rm3, %rv3, %sm3, %sis3 = onnx.BatchNormInternal(%x3, %scale, %bias, %mean, %var) {training_mode = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %r3 = onnx.Relu(%y3) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %e = onnx.Relu(%dy) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %f = onnx.Relu(%e) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %dx3, %ds3, %db3 = onnx.BatchNormalizationGrad(%dy, %x3, %scale, %sm3, %sis3) : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>)
  %da, %dwa, %dba = onnx.ConvGrad(%dx3, %r, %w2) {kernel_shape = array<i64: 1, 1>} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>, none)
  %db, %dwb, %dbb = onnx.ConvGrad(%da, %r2, %w2) {kernel_shape = array<i64: 1, 1>} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>, none)
  %dc, %dwc, %dbc = onnx.ConvGrad(%db, %r3, %w2) {kernel_shape = array<i64: 1, 1>} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>, none)
  return %f, %dwa, %dwb, %dwc, %dc : tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2x2x1x1xf32>, tensor<2x2x1x1xf32>, tensor<2x2x4x4xf32>
}

// ERR: comet-recompute-activations: min-bytes must be non-negative and min-distance at least 1
// ERR-ONLY: comet-recompute-activations: 'nosuch' is not a recomputable value

// -----

// A stem on one input channel (a 3x3 kernel: 9 multiply-adds per output
// element) whose input the weight gradient keeps: its output is cloned
// just before the first far reader instead of being kept. With
// max-conv-macs=8 it is kept.
// CHECK-LABEL: func.func @cheap_stem
// CHECK: %[[C:.*]] = onnx.Conv(%arg0, %arg1
// CHECK: %[[C2:.*]] = onnx.Conv(%arg0, %arg1, %{{.*}}) {kernel_shape = array<i64: 3, 3>}
// CHECK-NEXT: onnx.BatchNormalizationGrad(%{{.*}}, %[[C2]],
// CHECK-NEXT: onnx.ConvGrad(%{{.*}}, %arg0, %arg1)
// MACS-LABEL: func.func @cheap_stem
// MACS-COUNT-1: onnx.Conv(
// MACS-NOT: onnx.Conv(
func.func @cheap_stem(%x: tensor<2x1x6x6xf32>, %w: tensor<2x1x3x3xf32> {onnx.name = "conv1.weight"}, %scale: tensor<2xf32>, %bias: tensor<2xf32>, %mean: tensor<2xf32>, %var: tensor<2xf32>, %dy: tensor<2x2x4x4xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x1x3x3xf32>) {
  %none = onnx.NoValue
  %c = onnx.Conv(%x, %w, %none) {kernel_shape = array<i64: 3, 3>} : (tensor<2x1x6x6xf32>, tensor<2x1x3x3xf32>, none) -> tensor<2x2x4x4xf32>
  %y, %rm, %rv, %sm, %sis = onnx.BatchNormInternal(%c, %scale, %bias, %mean, %var) {training_mode = 1 : i64} : (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %e = onnx.Relu(%y) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %f = onnx.Relu(%e) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %g = onnx.Relu(%f) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %dc, %ds, %db = onnx.BatchNormalizationGrad(%dy, %c, %scale, %sm, %sis) : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>)
  %dx, %dw, %dbb = onnx.ConvGrad(%dc, %x, %w) {kernel_shape = array<i64: 3, 3>} : (tensor<2x2x4x4xf32>, tensor<2x1x6x6xf32>, tensor<2x1x3x3xf32>) -> (none, tensor<2x1x3x3xf32>, none)
  return %g, %dw : tensor<2x2x4x4xf32>, tensor<2x1x3x3xf32>
}
