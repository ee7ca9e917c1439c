// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-recompute-activations="min-bytes=0 min-distance=3" | FileCheck %s
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-recompute-activations="min-bytes=0 min-distance=3" --comet-compress-activations="min-bytes=0 min-distance=3" | FileCheck %s --check-prefix=SZ
// RUN: comet-opt %s -split-input-file -mlir-print-debuginfo=false --comet-compress-activations="min-bytes=0 min-distance=3" | FileCheck %s --check-prefix=KEPT
// RUN: comet-opt %s -split-input-file --comet-recompute-activations="min-bytes=0 min-distance=3" --comet-lower-to-runtime | FileCheck %s --check-prefix=LOWER
// RUN: comet-opt %s -split-input-file --comet-recompute-activations="min-bytes=0 min-distance=3" --comet-memory-report="top=30" 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// Attention's dropout: the Dropout's output P' is read in the backward by
// dV's MatMul; its input P (the softmax) by SoftmaxGrad and its mask by
// DropoutGrad, both later. P' is computed again just before dV's MatMul by
// DropoutGrad with P in dY's place (mask ? P / (1 - ratio) : 0, the
// forward's expression) and is not kept.
// CHECK-LABEL: func.func @attention_dropout
// CHECK: %[[P:.*]] = onnx.Softmax(
// CHECK: %{{.*}}, %[[M:.*]] = onnx.Dropout(%[[P]],
// CHECK: onnx.ReluGrad
// CHECK-NEXT: %[[P2:.*]] = onnx.DropoutGrad(%[[P]], %[[M]], %{{.*}}, %{{.*}})
// CHECK-NEXT: onnx.FusedMatMul(%[[P2]], %{{.*}}) {transA = 1 : i64}
// CHECK-NEXT: %[[DPD:.*]] = onnx.FusedMatMul(
// CHECK-NEXT: %[[DP:.*]] = onnx.DropoutGrad(%[[DPD]], %[[M]],
// CHECK-NEXT: onnx.SoftmaxGrad_13(%[[DP]], %[[P]])
// Compressed: P takes the tighter of SoftmaxGrad's bound (8.16e-3) and
// what dV tolerates in P' (unrecomputed, 1.2247449e-2 at the nonzero prior
// 0.5),
// divided by the gain 1 / (1 - ratio) = 2: 6.1237244e-3. P' is gone from
// the compressed values; the mask stays 1 bit a value, read by both
// DropoutGrads. The recompute decompresses its own copy of P.
// KEPT-LABEL: func.func @attention_dropout
// KEPT: comet.compress %{{.*}} bound <abs = 0.00816496580{{[0-9]*}}, slot = 0>
// KEPT: comet.compress %output bound <abs = 0.0122474487{{[0-9]*}}, slot = 1>
// SZ-LABEL: func.func @attention_dropout
// SZ: %[[HP:.*]] = comet.compress %{{.*}} bound <abs = 0.00612372435{{[0-9]*}}, slot = 0>
// SZ-NEXT: %[[HM:.*]] = comet.compress %mask : tensor<2x4x4xi1> -> !comet.compressed<tensor<2x4x4xi1>, mask>
// SZ-NOT: comet.compress %output
// SZ: %[[D1:.*]] = comet.decompress %[[HP]]
// SZ-NEXT: %[[M:.*]] = comet.decompress %[[HM]]
// SZ-NEXT: %[[P2:.*]] = onnx.DropoutGrad(%[[D1]], %[[M]],
// SZ-NEXT: onnx.FusedMatMul(%[[P2]],
// SZ: onnx.DropoutGrad(%{{.*}}, %[[M]],
// SZ-NEXT: %[[D2:.*]] = comet.decompress %[[HP]]
// SZ-NEXT: onnx.SoftmaxGrad_13(%{{.*}}, %[[D2]])
// LOWER-LABEL: func.func @attention_dropout
// LOWER-COUNT-2: call @comet_rt_dropout_grad(
// LOWER-NOT: call @comet_rt_dropout_grad(
// LOWER: return
// Uncompressed, P' (dropout:0) dies at its forward reader; the recomputed
// value lives from just before dV's MatMul to it.
// REPORT-LABEL: comet memory report: @attention_dropout
// REPORT-DAG: dropout:0 activation 128 [3, 4]
// REPORT-DAG: dropout:0.recompute activation 128 [9, 10]
func.func @attention_dropout(%s: tensor<2x4x4xf32> {onnx.name = "scores"},
    %v: tensor<2x4x8xf32> {onnx.name = "v"},
    %dl: tensor<2x4x8xf32> {onnx.name = "dl"})
    -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>) {
  %ratio = onnx.Constant {value = dense<0.5> : tensor<f32>} : tensor<f32> loc("ratio")
  %train = onnx.Constant {value = dense<true> : tensor<i1>} : tensor<i1> loc("train")
  %p = onnx.Softmax(%s) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("softmax")
  %pd, %m = onnx.Dropout(%p, %ratio, %train) : (tensor<2x4x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x4x4xf32>, tensor<2x4x4xi1>) loc("dropout")
  %o = onnx.MatMul(%pd, %v) : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("attn")
  %r = onnx.Relu(%o) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("relu")
  %r2 = onnx.Relu(%r) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("relu2")
  %r3 = onnx.Relu(%r2) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("relu3")
  %do = onnx.ReluGrad(%dl, %r) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("relu_Grad")
  %dv = onnx.FusedMatMul(%pd, %do) {transA = 1 : i64} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("attn_Grad/dV")
  %dpd = onnx.FusedMatMul(%do, %v) {transB = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("attn_Grad/dP")
  %dp = onnx.DropoutGrad(%dpd, %m, %ratio, %train) : (tensor<2x4x4xf32>, tensor<2x4x4xi1>, tensor<f32>, tensor<i1>) -> tensor<2x4x4xf32> loc("dropout_Grad")
  %ds = onnx.SoftmaxGrad_13(%dp, %p) {axis = -1 : i64} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("softmax_Grad")
  return %dv, %ds, %r3 : tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x8xf32>
}

// -----

// An MLP's GELU: its output G is read by the next layer's weight gradient,
// its input H by BiasGeluGrad_dX, later. G is computed again by a clone of
// the BiasGelu just before that weight gradient.
// CHECK-LABEL: func.func @mlp_gelu
// CHECK: %[[H:.*]] = onnx.MatMul(%arg0, %arg1)
// CHECK: onnx.ReluGrad
// CHECK-NEXT: %[[G2:.*]] = onnx.BiasGelu(%[[H]], %arg2)
// CHECK-NEXT: onnx.FusedMatMul(%[[G2]], %{{.*}}) {transA = 1 : i64}
// CHECK-NEXT: %[[DG:.*]] = onnx.FusedMatMul(
// CHECK-NEXT: onnx.BiasGeluGrad_dX(%[[DG]], %[[H]], %arg2)
// Compressed: H's bound is what the weight gradient tolerates in G
// (unrecomputed, 1.2247449e-2 at the nonzero prior 0.5; G is dense:
// 8.6602540e-3) over
// GELU's largest slope 1.1289: 7.6714094e-3, tighter than its own reader's
// (1.5349901e-2). G is not compressed.
// KEPT-LABEL: func.func @mlp_gelu
// KEPT: comet.compress %{{.*}} bound <abs = 0.0153499006{{[0-9]*}}, slot = 0>
// KEPT: comet.compress %{{.*}} bound <abs = 0.0122474487{{[0-9]*}}, slot = 1>
// SZ-LABEL: func.func @mlp_gelu
// SZ: %[[HH:.*]] = comet.compress %{{.*}} bound <abs = 0.00767140937{{[0-9]*}}, slot = 0>
// SZ-NOT: comet.compress {{.*}} sz>
// SZ: %[[D1:.*]] = comet.decompress %[[HH]]
// SZ-NEXT: onnx.BiasGelu(%[[D1]], %arg2)
// LOWER-LABEL: func.func @mlp_gelu
// LOWER-COUNT-2: call @comet_rt_bias_gelu(
// LOWER-NOT: call @comet_rt_bias_gelu(
// LOWER: return
func.func @mlp_gelu(%x: tensor<4x8xf32> {onnx.name = "input"},
    %w1: tensor<8x16xf32> {onnx.name = "fc.weight"},
    %b1: tensor<16xf32> {onnx.name = "fc.bias"},
    %w2: tensor<16x8xf32> {onnx.name = "proj.weight"},
    %dl: tensor<4x8xf32> {onnx.name = "dl"})
    -> (tensor<16x8xf32>, tensor<8x16xf32>, tensor<4x8xf32>) {
  %h = onnx.MatMul(%x, %w1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc")
  %g = onnx.BiasGelu(%h, %b1) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("gelu")
  %z = onnx.MatMul(%g, %w2) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("proj")
  %r = onnx.Relu(%z) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu")
  %r2 = onnx.Relu(%r) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu2")
  %r3 = onnx.Relu(%r2) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu3")
  %dz = onnx.ReluGrad(%dl, %r) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu_Grad")
  %dw2 = onnx.FusedMatMul(%g, %dz) {transA = 1 : i64} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32> loc("proj_Grad/dW")
  %dg = onnx.FusedMatMul(%dz, %w2) {transB = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("proj_Grad/dX")
  %dh = onnx.BiasGeluGrad_dX(%dg, %h, %b1) : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("gelu_Grad")
  %dw1 = onnx.FusedMatMul(%x, %dh) {transA = 1 : i64} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32> loc("fc_Grad/dW")
  return %dw2, %dw1, %r3 : tensor<16x8xf32>, tensor<8x16xf32>, tensor<4x8xf32>
}

// -----

// Left alone: a Dropout whose input nothing reads after its output's
// backward reader (the transformer's FFN: GELU -> Dropout -> Linear, where
// BiasGeluGrad reads the GELU's input, not its output). Keeping the input
// for a recompute would keep as much as the output.
// CHECK-LABEL: func.func @dropout_input_not_kept
// CHECK-COUNT-1: onnx.DropoutGrad
// CHECK-NOT: onnx.DropoutGrad
// CHECK: return
func.func @dropout_input_not_kept(%h: tensor<4x16xf32> {onnx.name = "h"},
    %b1: tensor<16xf32> {onnx.name = "fc.bias"},
    %w2: tensor<16x8xf32> {onnx.name = "proj.weight"},
    %dl: tensor<4x8xf32> {onnx.name = "dl"})
    -> (tensor<16x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>) {
  %ratio = onnx.Constant {value = dense<0.1> : tensor<f32>} : tensor<f32> loc("ratio")
  %train = onnx.Constant {value = dense<true> : tensor<i1>} : tensor<i1> loc("train")
  %g = onnx.BiasGelu(%h, %b1) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("gelu")
  %gd, %m = onnx.Dropout(%g, %ratio, %train) : (tensor<4x16xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x16xf32>, tensor<4x16xi1>) loc("dropout")
  %z = onnx.MatMul(%gd, %w2) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("proj")
  %r = onnx.Relu(%z) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu")
  %r2 = onnx.Relu(%r) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu2")
  %r3 = onnx.Relu(%r2) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu3")
  %dz = onnx.ReluGrad(%dl, %r) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu_Grad")
  %dw2 = onnx.FusedMatMul(%gd, %dz) {transA = 1 : i64} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32> loc("proj_Grad/dW")
  %dgd = onnx.FusedMatMul(%dz, %w2) {transB = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("proj_Grad/dX")
  %dg = onnx.DropoutGrad(%dgd, %m, %ratio, %train) : (tensor<4x16xf32>, tensor<4x16xi1>, tensor<f32>, tensor<i1>) -> tensor<4x16xf32> loc("dropout_Grad")
  %dh = onnx.BiasGeluGrad_dX(%dg, %h, %b1) : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("gelu_Grad")
  return %dw2, %dh, %r3 : tensor<16x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>
}
