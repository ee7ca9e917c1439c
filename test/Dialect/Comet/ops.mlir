// RUN: comet-opt %s | comet-opt | FileCheck %s
// RUN: comet-opt %s --mlir-print-op-generic | comet-opt | FileCheck %s

// Round-trip of every comet type, attribute and op in custom assembly.

// CHECK-LABEL: func.func @sz_roundtrip
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
func.func @sz_roundtrip(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: %[[C:.*]] = comet.compress %[[X]] bound <abs = 1.000000e-03, slot = 0> : tensor<8x16xf32> -> !comet.compressed<tensor<8x16xf32>, sz>
  %c = comet.compress %x bound <abs = 1.0e-3, slot = 0>
      : tensor<8x16xf32> -> !comet.compressed<tensor<8x16xf32>, sz>
  // CHECK: comet.decompress %[[C]] : !comet.compressed<tensor<8x16xf32>, sz> -> tensor<8x16xf32>
  %y = comet.decompress %c : !comet.compressed<tensor<8x16xf32>, sz> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @bound_without_slot
func.func @bound_without_slot(%x: tensor<4xbf16>) -> !comet.compressed<tensor<4xbf16>, sz> {
  // CHECK: bound <abs = 2.500000e-01>
  %c = comet.compress %x bound <abs = 0.25> : tensor<4xbf16> -> !comet.compressed<tensor<4xbf16>, sz>
  return %c : !comet.compressed<tensor<4xbf16>, sz>
}

// CHECK-LABEL: func.func @mask_and_raw
func.func @mask_and_raw(%x: tensor<2x3x5x5xf32>, %i: tensor<7xi64>) -> (tensor<2x3x5x5xf32>, tensor<7xi64>) {
  // CHECK: comet.compress %{{.*}} : tensor<2x3x5x5xf32> -> !comet.compressed<tensor<2x3x5x5xf32>, mask>
  %m = comet.compress %x : tensor<2x3x5x5xf32> -> !comet.compressed<tensor<2x3x5x5xf32>, mask>
  // CHECK: comet.compress %{{.*}} : tensor<7xi64> -> !comet.compressed<tensor<7xi64>, raw>
  %r = comet.compress %i : tensor<7xi64> -> !comet.compressed<tensor<7xi64>, raw>
  %x2 = comet.decompress %m : !comet.compressed<tensor<2x3x5x5xf32>, mask> -> tensor<2x3x5x5xf32>
  %i2 = comet.decompress %r : !comet.compressed<tensor<7xi64>, raw> -> tensor<7xi64>
  return %x2, %i2 : tensor<2x3x5x5xf32>, tensor<7xi64>
}

// Slots only need to be unique within one function.
// CHECK-LABEL: func.func @same_slot_other_function
func.func @same_slot_other_function(%x: tensor<3xf32>) -> !comet.compressed<tensor<3xf32>, sz> {
  // CHECK: slot = 0
  %c = comet.compress %x bound <abs = 1.0, slot = 0> : tensor<3xf32> -> !comet.compressed<tensor<3xf32>, sz>
  return %c : !comet.compressed<tensor<3xf32>, sz>
}

// Dynamic dimensions are allowed; the runtime takes the size at run time.
// CHECK-LABEL: func.func @dynamic_batch
func.func @dynamic_batch(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
  // CHECK: !comet.compressed<tensor<?x10xf32>, sz>
  %c = comet.compress %x bound <abs = 1.0e-2, slot = 4> : tensor<?x10xf32> -> !comet.compressed<tensor<?x10xf32>, sz>
  %y = comet.decompress %c : !comet.compressed<tensor<?x10xf32>, sz> -> tensor<?x10xf32>
  return %y : tensor<?x10xf32>
}

// The typed contracts between passes: tuner consumers on a slotted compress,
// observations on a consumer, and the sites of a lowered function.

// CHECK-LABEL: func.func @contracts
// CHECK-SAME: comet.sites = [#comet.site<value = "x", codec = mask, bytes = 64>, #comet.site<value = "f", codec = sz, bytes = 256, bound = #comet.bound<abs = 2.500000e-01, slot = 0>, consumers = [#comet.consumer<kind = gemm, param = "fc1.weight", terms = 2.000000e+00, reuse = 1.000000e+00, elements = 64>]>]
func.func @contracts(%x: tensor<2x32xf32>, %dy: tensor<32x8xf32>) -> tensor<2x8xf32> attributes {comet.sites = [#comet.site<value = "x", codec = mask, bytes = 64>, #comet.site<value = "f", codec = sz, bytes = 256, bound = <abs = 0.25, slot = 0>, consumers = [#comet.consumer<kind = gemm, param = "fc1.weight", terms = 2.0, reuse = 1.0, elements = 64>]>]} {
  // CHECK: comet.compress %{{.*}} bound <abs = 2.500000e-01, slot = 0> {comet.tune = [#comet.consumer<kind = conv, param = "", terms = 3.200000e+01, reuse = 9.000000e+00, elements = 64>, #comet.consumer<kind = batchnorm, param = "bn", terms = 3.200000e+01, reuse = 1.000000e+00, elements = 64>]}
  %c = comet.compress %x bound <abs = 0.25, slot = 0> {comet.tune = [#comet.consumer<kind = conv, param = "", terms = 32.0, reuse = 9.0, elements = 64>, #comet.consumer<kind = batchnorm, param = "bn", terms = 32.0, reuse = 1.0, elements = 64>]} : tensor<2x32xf32> -> !comet.compressed<tensor<2x32xf32>, sz>
  %d = comet.decompress %c : !comet.compressed<tensor<2x32xf32>, sz> -> tensor<2x32xf32>
  // CHECK: comet.observe = [#comet.observe<slot = 0, consumer = 0, grad = 1>, #comet.observe<slot = 0, consumer = 1, grad = 1, aux = 0>]
  %g = "onnx.MatMul"(%d, %dy) {comet.observe = [#comet.observe<slot = 0, consumer = 0, grad = 1>, #comet.observe<slot = 0, consumer = 1, grad = 1, aux = 0>]} : (tensor<2x32xf32>, tensor<32x8xf32>) -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// A fused optimizer step: the update of each kind, with its states.
// CHECK-LABEL: func.func @updates
// CHECK-SAME: attributes {comet.fused_optimizer = "adamw"}
// CHECK: comet.optimizer_update "adamw" %{{.*}}, %{{.*}} states(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>) lr %{{.*}} : tensor<1xf32> step %{{.*}} : tensor<1xi64> {adam_mode = 1 : i64, epsilon = 9.99999997E-7 : f32} : tensor<4xf32>, tensor<4xf32>
// CHECK: comet.optimizer_update "sgd_momentum" %{{.*}}, %{{.*}} states(%{{.*}} : tensor<4xf32>) lr %{{.*}} : tensor<1xf32> step %{{.*}} : tensor<1xi64> {momentum = 5.000000e-01 : f32} : tensor<4xf32>, tensor<4xf32>
// CHECK: comet.optimizer_update "sgd_v2" %{{.*}}, %{{.*}} lr %{{.*}} : tensor<1xf32> step %{{.*}} : tensor<1xi64> : tensor<4xf32>, tensor<4xf32>
func.func @updates(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<1xf32>, %s: tensor<1xi64>) attributes {comet.fused_optimizer = "adamw"} {
  comet.optimizer_update "adamw" %w, %g states(%m, %v : tensor<4xf32>, tensor<4xf32>) lr %lr : tensor<1xf32> step %s : tensor<1xi64> {adam_mode = 1 : i64, epsilon = 1.0e-6 : f32} : tensor<4xf32>, tensor<4xf32>
  comet.optimizer_update "sgd_momentum" %w, %g states(%m : tensor<4xf32>) lr %lr : tensor<1xf32> step %s : tensor<1xi64> {momentum = 0.5 : f32} : tensor<4xf32>, tensor<4xf32>
  comet.optimizer_update "sgd_v2" %w, %g lr %lr : tensor<1xf32> step %s : tensor<1xi64> : tensor<4xf32>, tensor<4xf32>
  return
}

// A BatchNorm output recomputed from its input and saved statistics, with
// each activation; the defaults (none, lo = hi = 0) are not printed.
// CHECK-LABEL: func.func @batch_norm_apply
// CHECK: comet.batch_norm_apply %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
// CHECK: comet.batch_norm_apply {{.*}} {activation = "relu"} : (tensor<2x3x4x4xf32>,
// CHECK: comet.batch_norm_apply {{.*}} {activation = "clip", hi = 6.000000e+00 : f32} : (tensor<2x3xf32>,
func.func @batch_norm_apply(%x: tensor<2x3x4x4xf32>, %x2: tensor<2x3xf32>, %c: tensor<3xf32>) {
  %a = comet.batch_norm_apply %x, %c, %c, %c, %c : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %b = comet.batch_norm_apply %x, %c, %c, %c, %c {activation = "relu"} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %d = comet.batch_norm_apply %x2, %c, %c, %c, %c {activation = "clip", lo = 0.0 : f32, hi = 6.0 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}
