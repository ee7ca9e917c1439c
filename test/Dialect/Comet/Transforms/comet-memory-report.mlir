// RUN: comet-opt %s -split-input-file --comet-memory-report="min-bytes=0 min-distance=3 batch-size=10" -o /dev/null 2>&1 | FileCheck %s
// RUN: comet-opt %s --comet-memory-report="json=%t.json min-bytes=0 min-distance=3 batch-size=10" -o /dev/null 2>/dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: not comet-opt %s --comet-memory-report="batch-size=0" 2>&1 | FileCheck %s --check-prefix=ERR-BATCH
// RUN: not comet-opt %s --comet-memory-report="json=%t.missing-dir/r.json" 2>&1 | FileCheck %s --check-prefix=ERR-JSON

// ERR-BATCH: error: comet-memory-report: batch-size and sz-ratio must be positive
// ERR-JSON: error: comet-memory-report: cannot write '{{.*}}r.json'

// Timeline and peak of a straight line: x (other), a = [0, 2], b = [1, 2],
// c = [2, 3], 128 B each: live = 256, 256, 384, 128; the peak is 384 B at
// step 2, all of it activations but c, the function's output.

// CHECK-LABEL: comet memory report: @chain  steps=4  values=4  dynamic-dim=10
// CHECK-NEXT: predicted peak: 384 B (384 B) at step 2 (onnx.Add "add_c")
// CHECK-NEXT: activation bytes at the peak: 256 B (256 B); activation peak: 256 B
// CHECK-NEXT: long-lived candidates (min-bytes=0, min-distance=3): 0, 0 B
// CHECK-NEXT: top 4 values by bytes x lifetime:
// CHECK-NEXT: #    name
// CHECK-NEXT: 1    a                            activation               128          [0, 2]        3  -
// CHECK-NEXT: 2    b                            activation               128          [1, 2]        2  -
// CHECK-NEXT: 3    y                            other                    128          [2, 3]        2  -
// CHECK-NEXT: 4    x                            other                    128          [0, 0]        1  -

// JSON: "name": "chain",
// JSON-NEXT: "num_steps": 4,
// JSON-NEXT: "dynamic_dim_size": 10,
// JSON-NEXT: "sz_ratio_assumed": 8,
// JSON-NEXT: "compressed": false,
// JSON-NEXT: "peak_bytes": 384,
// JSON-NEXT: "peak_step": 2,
// JSON-NEXT: "activation_bytes_at_peak": 256,
// JSON: "timeline": [
// JSON-NEXT: 256,
// JSON-NEXT: 256,
// JSON-NEXT: 384,
// JSON-NEXT: 128
// JSON-NEXT: ],
func.func @chain(%x: tensor<4x8xf32> {onnx.name = "x"}) -> (tensor<4x8xf32> {onnx.name = "y"}) {
  %a = "onnx.Relu"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("a")
  %b = "onnx.Relu"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("b")
  %c = "onnx.Add"(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("add_c")
  return %c : tensor<4x8xf32>
}

// -----

// Categories from ONNX names: parameters (a "<p>_grad.accumulation.buffer"
// exists), gradient buffers, lazy_reset_grad and labels (other); parameters
// and buffers live throughout. The dynamic batch takes batch-size=10:
// h = 10 x 16 f32 = 640 B. h is read far away by a backward Gemm (dW), so it
// is a candidate whose far consumer is a weight-gradient input.

// CHECK-LABEL: comet memory report: @mlp  steps=10
// CHECK: long-lived candidates (min-bytes=0, min-distance=3): 1, 640 B

// JSON: "name": "mlp",
// JSON: "candidates": [
// JSON-NEXT: {
// JSON-NEXT: "value": "h",
// JSON-NEXT: "bytes": 640,
// JSON-NEXT: "def": 1,
// JSON-NEXT: "last_near_use": 2,
// JSON-NEXT: "first_far_use": 6,
// JSON-NEXT: "far_consumers": [
// JSON-NEXT: "weight_grad_input"
// JSON-NEXT: ]
// JSON-NEXT: }
// JSON-NEXT: ],
// JSON: "name": "input",
// JSON: "category": "other",
// JSON: "name": "labels",
// JSON: "category": "other",
// JSON: "name": "fc1.weight",
// JSON-NEXT: "producer": "",
// JSON-NEXT: "producer_op": "func.arg",
// JSON-NEXT: "category": "parameter",
// JSON-NEXT: "persistent": true,
// JSON: "interval": [
// JSON-NEXT: 0,
// JSON-NEXT: 9
// JSON-NEXT: ],
// JSON: "name": "fc1.weight_grad.accumulation.buffer",
// JSON: "category": "gradient",
// JSON-NEXT: "persistent": true,
// JSON: "name": "lazy_reset_grad",
// JSON: "category": "other",
// JSON: "name": "h",
// JSON-NEXT: "producer": "h",
// JSON-NEXT: "producer_op": "onnx.Relu",
// JSON-NEXT: "category": "activation",
// JSON-NEXT: "persistent": false,
// JSON-NEXT: "type": "tensor<?x16xf32>",
// JSON-NEXT: "dynamic": true,
// JSON-NEXT: "elements": 160,
// JSON-NEXT: "tensor_bytes": 640,
// JSON-NEXT: "bytes": 640,
// JSON-NEXT: "def": 1,
// JSON-NEXT: "last_use": 6,
// JSON: "consumers": [
// JSON: "op": "onnx.Gemm",
// JSON-NEXT: "node": "fc2",
// JSON-NEXT: "step": 2,
// JSON-NEXT: "operand": 0,
// JSON-NEXT: "kind": "other"
// JSON: "op": "onnx.Gemm",
// JSON-NEXT: "node": "fc2_Grad/Gemm_1",
// JSON-NEXT: "step": 6,
// JSON-NEXT: "operand": 1,
// JSON-NEXT: "kind": "weight_grad_input"
// JSON: "compressed": null
func.func @mlp(%x: tensor<?x16xf32> {onnx.name = "input"}, %labels: tensor<?xi64> {onnx.name = "labels"},
    %w1: tensor<16x8xf32> {onnx.name = "fc1.weight"}, %w2: tensor<4x16xf32> {onnx.name = "fc2.weight"},
    %acc1: tensor<16x8xf32> {onnx.name = "fc1.weight_grad.accumulation.buffer"},
    %acc2: tensor<4x16xf32> {onnx.name = "fc2.weight_grad.accumulation.buffer"},
    %reset: tensor<1xi1> {onnx.name = "lazy_reset_grad"})
    -> (tensor<f32> {onnx.name = "onnx::loss::2"}, tensor<1xi1> {onnx.name = "fc2.weight_grad.accumulation.out"}) {
  %none = "onnx.NoValue"() : () -> none
  %h = "onnx.Relu"(%x) : (tensor<?x16xf32>) -> tensor<?x16xf32> loc("h")
  %l = "onnx.Gemm"(%h, %w2, %none) {transB = 1 : i64} : (tensor<?x16xf32>, tensor<4x16xf32>, none) -> tensor<?x4xf32> loc("fc2")
  %loss, %lp = "onnx.SoftmaxCrossEntropyLoss"(%l, %labels, %none) : (tensor<?x4xf32>, tensor<?xi64>, none) -> (tensor<f32>, tensor<?x4xf32>) loc("loss")
  %seed = "onnx.Constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32> loc("onnx::loss::2_grad")
  %dl = "onnx.SoftmaxCrossEntropyLossGrad"(%seed, %lp, %labels, %none, %none) : (tensor<f32>, tensor<?x4xf32>, tensor<?xi64>, none, none) -> tensor<?x4xf32> loc("loss_Grad")
  %dw2 = "onnx.Gemm"(%dl, %h, %none) {transA = 1 : i64, beta = 0.0 : f32} : (tensor<?x4xf32>, tensor<?x16xf32>, none) -> tensor<4x16xf32> loc("fc2_Grad/Gemm_1")
  %u, %o = "onnx.InPlaceAccumulatorV2"(%acc2, %dw2, %reset) : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<1xi1>) -> (tensor<1xi1>, none) loc("GradientAccumulator2")
  %g1 = "onnx.Relu"(%w1) : (tensor<16x8xf32>) -> tensor<16x8xf32> loc("dummy")
  return %loss, %u : tensor<f32>, tensor<1xi1>
}

// -----

// A compressed graph: mask handles count exactly 1 bit per element (4096
// f32 -> 512 B), and the report folds compress/decompress away to give the
// peak before. 16 KiB tensors; a1 = [0, 8] and a2 = [2, 6] uncompressed.
// Both decompresses are read only as ReluGrad's X, so they are fused: they
// cost 0 B and each handle lives to its ReluGrad (h1 = [1, 8], h2 = [3, 6]).
// Before: peak 65536 B at step 4 (x, a1, a2, t), activations 49152 B.
// After: peak 33792 B at step 3 (x, h1, a2, h2), activations 17408 B (x is
// other), also the activation peak. Ratios 49152/17408 = 2.82, 2.82,
// 65536/33792 = 1.94.

// CHECK-LABEL: comet memory report: @compressed
// CHECK-NEXT: predicted peak: 33792 B (33.00 KiB) at step 3 (comet.compress "a2.compress")
// CHECK-NEXT: activation bytes at the peak: 17408 B (17.00 KiB); activation peak: 17408 B
// CHECK-NEXT: compressed values: 2 (mask 2, sz 0, raw 0; sz counted at 1/8, mask at 1 bit per element); mask decompresses fused into ReluGrad (0 B): 2
// CHECK-NEXT: without compression: peak 65536 B (64.00 KiB) at step 4; activation bytes at the peak 49152 B; activation peak 49152 B
// CHECK-NEXT: reduction: activation bytes at the peak 2.82x, activation peak 2.82x, peak 1.94x
// CHECK: a1                           activation             16384          [0, 1]        2  mask 512 B

// JSON: "name": "compressed",
// JSON: "compressed": true,
// JSON-NEXT: "peak_bytes": 33792,
// JSON: "peak_bytes_before": 65536,
// JSON: "activation_ratio_at_peak": 2.82
// JSON: "name": "a1",
// JSON: "compressed": {
// JSON-NEXT: "codec": "mask",
// JSON-NEXT: "stored_bytes": 512,
// JSON-NEXT: "handle_interval": [
// JSON-NEXT: 1,
// JSON-NEXT: 8
// JSON-NEXT: ]
// JSON: "producer_op": "comet.compress",
// JSON: "stored_as": {
// JSON-NEXT: "codec": "mask"
// JSON-NEXT: },
// JSON-NEXT: "compresses": "a1",
func.func @compressed(%x: tensor<4096xf32> {onnx.name = "x"}) -> (tensor<4096xf32> {onnx.name = "dx"}) {
  %a1 = "onnx.Relu"(%x) : (tensor<4096xf32>) -> tensor<4096xf32> loc("a1")
  %h1 = comet.compress %a1 : tensor<4096xf32> -> !comet.compressed<tensor<4096xf32>, mask> loc("a1.compress")
  %a2 = "onnx.Relu"(%x) : (tensor<4096xf32>) -> tensor<4096xf32> loc("a2")
  %h2 = comet.compress %a2 : tensor<4096xf32> -> !comet.compressed<tensor<4096xf32>, mask> loc("a2.compress")
  %t = "onnx.Relu"(%x) : (tensor<4096xf32>) -> tensor<4096xf32> loc("t")
  %d2 = comet.decompress %h2 : !comet.compressed<tensor<4096xf32>, mask> -> tensor<4096xf32> loc("a2.decompress")
  %g2 = "onnx.ReluGrad"(%t, %d2) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32> loc("a2_Grad")
  %d1 = comet.decompress %h1 : !comet.compressed<tensor<4096xf32>, mask> -> tensor<4096xf32> loc("a1.decompress")
  %g1 = "onnx.ReluGrad"(%g2, %d1) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32> loc("a1_Grad")
  return %g1 : tensor<4096xf32>
}

// -----

// A mask decompress is fused only when every reader is ReluGrad's X
// (operand 1). %d1 is also read by an Add, and %d2 is ReluGrad's dY: both
// are materialised (16384 B each), their handles end at the decompress.
// %d3 feeds two ReluGrads as X: fused, 0 B, its handle lives to the second.

// CHECK-LABEL: comet memory report: @mask_not_fused
// CHECK: mask decompresses fused into ReluGrad (0 B): 1

// JSON: "name": "mask_not_fused",
// JSON: "name": "a1.decompress",
// JSON: "bytes": 16384,
// JSON-NOT: "fused_mask_decompress"
// JSON: "name": "a2.decompress",
// JSON: "bytes": 16384,
// JSON-NOT: "fused_mask_decompress"
// JSON: "name": "a3.decompress",
// JSON: "tensor_bytes": 16384,
// JSON-NEXT: "bytes": 0,
// JSON: "decompressed_from": "a3",
// JSON-NEXT: "fused_mask_decompress": true,
func.func @mask_not_fused(%x: tensor<4096xf32> {onnx.name = "x"}, %dy: tensor<4096xf32> {onnx.name = "dy"}) -> (tensor<4096xf32> {onnx.name = "o1"}, tensor<4096xf32> {onnx.name = "o2"}, tensor<4096xf32> {onnx.name = "o3"}, tensor<4096xf32> {onnx.name = "o4"}) {
  %a1 = "onnx.Relu"(%x) : (tensor<4096xf32>) -> tensor<4096xf32> loc("a1")
  %h1 = comet.compress %a1 : tensor<4096xf32> -> !comet.compressed<tensor<4096xf32>, mask> loc("a1.compress")
  %a2 = "onnx.Relu"(%x) : (tensor<4096xf32>) -> tensor<4096xf32> loc("a2")
  %h2 = comet.compress %a2 : tensor<4096xf32> -> !comet.compressed<tensor<4096xf32>, mask> loc("a2.compress")
  %a3 = "onnx.Relu"(%x) : (tensor<4096xf32>) -> tensor<4096xf32> loc("a3")
  %h3 = comet.compress %a3 : tensor<4096xf32> -> !comet.compressed<tensor<4096xf32>, mask> loc("a3.compress")
  %d1 = comet.decompress %h1 : !comet.compressed<tensor<4096xf32>, mask> -> tensor<4096xf32> loc("a1.decompress")
  %g1 = "onnx.ReluGrad"(%dy, %d1) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32> loc("a1_Grad")
  %s1 = "onnx.Add"(%g1, %d1) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32> loc("s1")
  %d2 = comet.decompress %h2 : !comet.compressed<tensor<4096xf32>, mask> -> tensor<4096xf32> loc("a2.decompress")
  %g2 = "onnx.ReluGrad"(%d2, %x) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32> loc("a2_Grad")
  %d3 = comet.decompress %h3 : !comet.compressed<tensor<4096xf32>, mask> -> tensor<4096xf32> loc("a3.decompress")
  %g3 = "onnx.ReluGrad"(%dy, %d3) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32> loc("a3_Grad")
  %g4 = "onnx.ReluGrad"(%g3, %d3) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32> loc("a3_Grad2")
  return %s1, %g2, %g3, %g4 : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
}

// -----

// A weight seen through a layout op (ORT transposes weights for the input
// gradient's MatMul) is a parameter, not an activation: wt, held from the
// forward MatMul to the backward one, is no candidate.

// CHECK-LABEL: comet memory report: @transposed_weight
// CHECK: long-lived candidates (min-bytes=0, min-distance=3): 0, 0 B
// CHECK: wt parameter
func.func @transposed_weight(%x: tensor<4x16xf32> {onnx.name = "input"},
    %w: tensor<8x16xf32> {onnx.name = "fc.weight"},
    %acc: tensor<8x16xf32> {onnx.name = "fc.weight_grad.accumulation.buffer"},
    %dy: tensor<4x8xf32> {onnx.name = "dy"}) -> (tensor<4x8xf32>, tensor<4x16xf32>) {
  %wt = "onnx.Transpose"(%w) {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32> loc("wt")
  %y = "onnx.MatMul"(%x, %wt) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("fc")
  %r = "onnx.Relu"(%y) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu")
  %a = "onnx.Add"(%r, %y) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("add")
  %b = "onnx.Add"(%a, %r) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("add2")
  %dx = "onnx.FusedMatMul"(%dy, %wt) {transB = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("fc_Grad/FusedMatMul")
  return %b, %dx : tensor<4x8xf32>, tensor<4x16xf32>
}
