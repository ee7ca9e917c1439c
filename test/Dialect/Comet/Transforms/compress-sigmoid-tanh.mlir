// RUN: comet-opt %comet_src/test/fixtures/models/actnet/training_model.onnx -mlir-print-debuginfo=false --comet-compress-activations | FileCheck %s
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-compress-activations="min-bytes=0 min-distance=3" | FileCheck %s --check-prefix=SMALL
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-compress-activations="min-bytes=0 min-distance=3 profile=%S/Inputs/profile-dense.json" | FileCheck %s --check-prefix=PROF

// ORT's actnet graph (batch 32 by default): SigmoidGrad and TanhGrad read
// the forward outputs, which get sz slots with the Gemm rule, N = batch x
// pixels x c^2 (c = 1 for sigmoid, 2 for tanh) and R = 1 (dense):
// sigmoid [32,8,28,28]: N = 32 * 784 = 25088; tanh [32,16,14,14]:
// N = 32 * 196 * 4 = 25088; both eb = 0.0173205 / sqrt(25088) = 1.0935e-4.
// Their consumers form no weight gradient; the tuner's parameter is the
// one their dX reaches first: the ConvGrad of the conv before each
// (features.0, features.3).
// The Pad output that AveragePool reads gets nothing (AveragePoolGrad reads
// only dY); the pool output that conv2's ConvGrad reads is an ordinary
// conv input (N = 32 * 14 * 14, R = 0.5: eb = 0.0173205 / 56 = 3.0929e-4).
// CHECK: %[[S:.*]] = onnx.Sigmoid(
// CHECK: %[[P:.*]] = onnx.Pad(%[[S]],
// CHECK-NOT: comet.compress %[[P]]
// CHECK: comet.compress %[[S]] bound <abs = 1.09352220659{{[0-9]*}}E-4, slot = 0> {comet.tune = [#comet.consumer<kind = gemm, param = "features.0.weight", terms = 2.508800e+04, reuse = 1.000000e+00, elements = 200704>]} : tensor<?x8x28x28xf32> -> !comet.compressed<tensor<?x8x28x28xf32>, sz>
// CHECK: %[[A:.*]] = onnx.AveragePool(%[[P]])
// CHECK: comet.compress %[[A]] bound <abs = 3.09294787065{{[0-9]*}}E-4, slot = 1> {comet.tune = [#comet.consumer<kind = conv, param = "features.3.weight"
// CHECK: %[[T:.*]] = onnx.Tanh(
// CHECK: comet.compress %[[T]] bound <abs = 1.09352220659{{[0-9]*}}E-4, slot = 2> {comet.tune = [#comet.consumer<kind = gemm, param = "features.3.weight", terms = 2.508800e+04, reuse = 1.000000e+00, elements = 100352>]} : tensor<?x16x14x14xf32> -> !comet.compressed<tensor<?x16x14x14xf32>, sz>
// CHECK: %[[DT:.*]] = comet.decompress %{{.*}} : !comet.compressed<tensor<?x16x14x14xf32>, sz>
// CHECK: onnx.TanhGrad(%{{.*}}, %[[DT]]) {comet.observe = [#comet.observe<slot = 2, consumer = 0, grad = 0>]}
// CHECK: %[[DS:.*]] = comet.decompress %{{.*}} : !comet.compressed<tensor<?x8x28x28xf32>, sz>
// CHECK: onnx.SigmoidGrad(%{{.*}}, %[[DS]]) {comet.observe = [#comet.observe<slot = 0, consumer = 0, grad = 0>]}

// -----

// A 2-d tanh output (after a Linear): N = rows x 4 = 4 * 4 = 16, R = 1,
// eb = 0.0173205 / sqrt(16) = 4.33e-3. A profile's measured R (0.25 here)
// wins over the density: eb = 0.0173205 / sqrt(16 * 0.25) = 8.66e-3.
// SMALL-LABEL: func.func @tanh_rows
// SMALL: %[[T:.*]] = onnx.Tanh(
// SMALL: comet.compress %[[T]] bound <abs = 0.00433012701892{{[0-9]*}}, slot = 0> {{.*}} : tensor<4x64xf32> -> !comet.compressed<tensor<4x64xf32>, sz>
// PROF-LABEL: func.func @tanh_rows
// PROF: comet.compress %{{.*}} bound <abs = 0.00866025403784{{[0-9]*}}, slot = 0>
func.func @tanh_rows(%x: tensor<4x64xf32>, %w: tensor<10x64xf32>, %dl: tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x64xf32>) {
  %none = onnx.NoValue
  %t = onnx.Tanh(%x) : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %z = onnx.Gemm(%t, %w, %none) {transB = 1 : i64} : (tensor<4x64xf32>, tensor<10x64xf32>, none) -> tensor<4x10xf32>
  %r = onnx.Relu(%z) : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %a = onnx.Add(%r, %z) : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<4x10xf32>
  %dy = onnx.Gemm(%dl, %w, %none) {beta = 0.0 : f32} : (tensor<4x10xf32>, tensor<10x64xf32>, none) -> tensor<4x64xf32>
  %dx = onnx.TanhGrad(%dy, %t) : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  return %a, %dx : tensor<4x10xf32>, tensor<4x64xf32>
}

// -----

// GeluGrad(dY, X) (ORT's fusion of a GELU with no bias to fuse) reads the
// forward input X, bounded as BiasGeluGrad_dX's: the Gemm rule with
// N = rows x (2 phi(0))^2 = 4 * 0.63662 = 2.546479 and the default
// R = 0.5: eb = 0.0173205 / sqrt(2.546479 * 0.5) = 1.53499e-2.
// SMALL-LABEL: func.func @gelu_rows
// SMALL: %[[X:.*]] = onnx.Gemm(
// SMALL: onnx.Gelu(%[[X]])
// SMALL: comet.compress %[[X]] bound <abs = 0.0153499006{{[0-9]*}}, slot = 0> {comet.tune = [#comet.consumer<kind = gemm, param = "", terms = 2.54647908{{[0-9]*}}, reuse = 1.000000e+00, elements = 256>]} : tensor<4x64xf32> -> !comet.compressed<tensor<4x64xf32>, sz>
// SMALL: %[[DX:.*]] = comet.decompress %{{.*}} : !comet.compressed<tensor<4x64xf32>, sz>
// SMALL: onnx.GeluGrad(%{{.*}}, %[[DX]]) {comet.observe = [#comet.observe<slot = 0, consumer = 0, grad = 0>]}
func.func @gelu_rows(%in: tensor<4x32xf32>, %w0: tensor<64x32xf32>, %w: tensor<10x64xf32>, %dl: tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x64xf32>) {
  %none = onnx.NoValue
  %x = onnx.Gemm(%in, %w0, %none) {transB = 1 : i64} : (tensor<4x32xf32>, tensor<64x32xf32>, none) -> tensor<4x64xf32>
  %g = onnx.Gelu(%x) : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %z = onnx.Gemm(%g, %w, %none) {transB = 1 : i64} : (tensor<4x64xf32>, tensor<10x64xf32>, none) -> tensor<4x10xf32>
  %r = onnx.Relu(%z) : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %a = onnx.Add(%r, %z) : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<4x10xf32>
  %dy = onnx.Gemm(%dl, %w, %none) {beta = 0.0 : f32} : (tensor<4x10xf32>, tensor<10x64xf32>, none) -> tensor<4x64xf32>
  %dx = onnx.GeluGrad(%dy, %x) : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  return %a, %dx : tensor<4x10xf32>, tensor<4x64xf32>
}

// -----

// QuickGeluGrad(dY, X) (ORT's fusion of SiLU, alpha 1, and of QuickGELU,
// alpha 1.702 by default) reads the forward input X, a conv output here:
// sigmoid's rule with c = |alpha| / 2 (the largest |QuickGelu''|), so
// N = batch x pixels x (alpha / 2)^2 = 128 * 0.25 = 32 for SiLU and
// 128 * 0.851^2 = 92.69773 for the default alpha, and R the prior 0.5 (X is
// not dense whatever the data). The tighter one decides:
// eb = 0.0173205 / sqrt(92.69773 * 0.5) = 2.54414e-3.
// SMALL-LABEL: func.func @quick_gelu_pixels
// SMALL: %[[X:.*]] = onnx.Conv(
// SMALL: comet.compress %[[X]] bound <abs = 0.00254414040{{[0-9]*}}, slot = 0> {comet.tune = [#comet.consumer<kind = gemm, param = "", terms = 3.200000e+01, reuse = 1.000000e+00, elements = 512>, #comet.consumer<kind = gemm, param = "", terms = 92.69773038{{[0-9]*}}, reuse = 1.000000e+00, elements = 512>]} : tensor<2x4x8x8xf32> -> !comet.compressed<tensor<2x4x8x8xf32>, sz>
// SMALL: %[[DX:.*]] = comet.decompress %{{.*}} : !comet.compressed<tensor<2x4x8x8xf32>, sz>
// SMALL: onnx.QuickGeluGrad(%{{.*}}, %[[DX]]) {alpha = 1.000000e+00 : f32, comet.observe = [#comet.observe<slot = 0, consumer = 0, grad = 0>]}
// SMALL: onnx.QuickGeluGrad(%{{.*}}, %[[DX]]) {comet.observe = [#comet.observe<slot = 0, consumer = 1, grad = 0>]}
func.func @quick_gelu_pixels(%in: tensor<2x3x8x8xf32>, %w0: tensor<4x3x3x3xf32>, %w: tensor<4x4x3x3xf32>, %dl: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %none = onnx.NoValue
  %x = onnx.Conv(%in, %w0, %none) {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<2x4x8x8xf32>
  %q = onnx.QuickGelu(%x) {alpha = 1.0 : f32} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %q2 = onnx.QuickGelu(%x) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %z = onnx.Conv(%q, %w, %none) {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<2x4x8x8xf32>
  %r = onnx.Relu(%z) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %a = onnx.Add(%r, %q2) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %dy = onnx.Conv(%dl, %w, %none) {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<2x4x8x8xf32>
  %dx = onnx.QuickGeluGrad(%dy, %x) {alpha = 1.0 : f32} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %dx2 = onnx.QuickGeluGrad(%dy, %x) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %a, %dx, %dx2 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}
