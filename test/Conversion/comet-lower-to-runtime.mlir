// RUN: comet-opt %s -split-input-file --comet-lower-to-runtime=batch-size=2 -cse | FileCheck %s

// Shapes are specialized to batch-size; the runtime context comes first and
// every runtime call takes it; results become out arguments; a computed value
// lives in a buffer of the category the analysis gives it (activation = 3),
// viewed with its type, and is freed right after its last use; the returned
// value is written straight into its out argument; a failure frees what the
// step still holds (step_abort) and returns the status.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %[[CTX:[a-z0-9]+]]: !llvm.ptr {comet.context}
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<2x8xf32> {onnx.name = "input"}
// CHECK-SAME: %[[W:[a-z0-9]+]]: memref<4x8xf32> {onnx.name = "fc.weight"}
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<2x4xf32> {comet.result = 0 : i64, onnx.name = "y"}
// CHECK-SAME: -> i32 attributes {llvm.emit_c_interface}
// CHECK-DAG: %[[BYTES:.*]] = arith.constant 32 : i64
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : i32
// CHECK: %[[RAW:.*]] = call @comet_rt_buffer_alloc(%[[CTX]], %[[BYTES]], %[[C3]]) : (!llvm.ptr, i64, i32) -> memref<?xi8>
// CHECK: memref.extract_aligned_pointer_as_index %[[RAW]]
// CHECK: cf.cond_br
// CHECK: %[[H:.*]] = memref.view %[[RAW]][%{{.*}}][] : memref<?xi8> to memref<2x4xf32>
// CHECK: %[[NONE:.*]] = memref.alloca() : memref<0xf32>
// CHECK: %[[RC:.*]] = call @comet_rt_gemm(%[[CTX]],
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[RC]]
// CHECK: cf.cond_br %[[OK]], ^[[NEXT:.*]], ^[[FAIL:[a-z0-9]+]](%[[RC]] : i32)
// CHECK: ^[[NEXT]]:
// CHECK: %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<2x4xf32> to memref<*xf32>
// CHECK: call @comet_rt_relu(%[[CTX]], %{{.*}}, %[[OUTU]])
// CHECK: call @comet_rt_buffer_free(%[[CTX]], %[[RAW]]) : (!llvm.ptr, memref<?xi8>) -> ()
// CHECK-NOT: comet_rt_buffer_free
// CHECK: return %{{.*}} : i32
// CHECK: ^[[FAIL]](%[[CODE:.*]]: i32):
// CHECK-NEXT: call @comet_rt_step_abort(%[[CTX]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: return %[[CODE]] : i32
func.func @mlp(%x: tensor<?x8xf32> {onnx.name = "input"},
               %w: tensor<4x8xf32> {onnx.name = "fc.weight"},
               %dw: tensor<4x8xf32> {onnx.name = "fc.weight_grad.accumulation.buffer"})
    -> (tensor<?x4xf32> {onnx.name = "y"}) {
  %none = onnx.NoValue
  %h = onnx.Gemm(%x, %w, %none) {transB = 1 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>, none) -> tensor<?x4xf32>
  %r = onnx.Relu(%h) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// comet.compress becomes a runtime handle (codec sz = 1, the slot and its
// compiled bound, site 0); the original dies at the compress, the handle
// is freed after its decompress (its last use), and the decompressed copy
// after ReluGrad.
// CHECK-LABEL: func.func @saved(
// CHECK: %[[RRAW:.*]] = call @comet_rt_buffer_alloc(
// CHECK: call @comet_rt_relu(
// CHECK-DAG: %[[SZ:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[SLOT:.*]] = arith.constant 5 : i64
// CHECK-DAG: %[[EB:.*]] = arith.constant 1.000000e-03 : f64
// CHECK-DAG: %[[SITE:.*]] = arith.constant 0 : i64
// CHECK: %[[HANDLE:.*]] = call @comet_rt_compress(%arg0, %{{.*}}, %[[SZ]], %[[SLOT]], %[[EB]], %[[SITE]]) : (!llvm.ptr, memref<*xf32>, i32, i64, f64, i64) -> i64
// CHECK: arith.cmpi ne, %[[HANDLE]]
// CHECK: cf.cond_br
// CHECK: call @comet_rt_buffer_free(%arg0, %[[RRAW]])
// CHECK: %[[DRAW:.*]] = call @comet_rt_buffer_alloc(
// CHECK: call @comet_rt_decompress(%arg0, %[[HANDLE]], %{{.*}}) : (!llvm.ptr, i64, memref<*xf32>) -> i32
// CHECK: cf.cond_br
// CHECK: call @comet_rt_handle_free(%arg0, %[[HANDLE]]) : (!llvm.ptr, i64) -> ()
// CHECK: call @comet_rt_relu_grad(
// CHECK: call @comet_rt_buffer_free(%arg0, %[[DRAW]])
// CHECK: return
func.func @saved(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %r = onnx.Relu(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = comet.compress %r bound <abs = 1.0e-3, slot = 5> : tensor<2x8xf32> -> !comet.compressed<tensor<2x8xf32>, sz>
  %d = comet.decompress %c : !comet.compressed<tensor<2x8xf32>, sz> -> tensor<2x8xf32>
  %g = onnx.ReluGrad(%dy, %d) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

// The mask codec (2) has no slot (-1) and no bound; each compress gets
// its own site, and the lowered function lists the sites for the Engine.
// CHECK-LABEL: func.func @mask(
// CHECK-SAME: comet.sites = [#comet.site<value = "{{[^"]*}}", codec = mask, bytes = 64>, #comet.site<value = "{{[^"]*}}", codec = sz, bytes = 64, bound = #comet.bound<abs = 2.500000e-01, slot = 0>>]
// CHECK-DAG: %[[MASK:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[NOSLOT:.*]] = arith.constant -1 : i64
// CHECK: call @comet_rt_compress(%arg0, %{{.*}}, %[[MASK]], %[[NOSLOT]], %{{.*}}, %{{.*}})
// CHECK: %[[SITE1:.*]] = arith.constant 1 : i64
// CHECK: call @comet_rt_compress(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SITE1]])
func.func @mask(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %r = onnx.Relu(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = comet.compress %r : tensor<2x8xf32> -> !comet.compressed<tensor<2x8xf32>, mask>
  %c2 = comet.compress %x bound <abs = 0.25, slot = 0> : tensor<2x8xf32> -> !comet.compressed<tensor<2x8xf32>, sz>
  %d = comet.decompress %c : !comet.compressed<tensor<2x8xf32>, mask> -> tensor<2x8xf32>
  %d2 = comet.decompress %c2 : !comet.compressed<tensor<2x8xf32>, sz> -> tensor<2x8xf32>
  %g = onnx.ReluGrad(%dy, %d) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %g, %d2 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// A mask decompress read only as ReluGrad's X is fused: no buffer and no
// call at the decompress; each ReluGrad reads the bits from the handle
// (comet_rt_relu_grad_mask), and the handle is freed after the last one.
// CHECK-LABEL: func.func @fused_mask(
// CHECK: %[[RRAW:.*]] = call @comet_rt_buffer_alloc(
// CHECK: call @comet_rt_relu(
// CHECK: %[[HANDLE:.*]] = call @comet_rt_compress(
// CHECK: call @comet_rt_buffer_free(%arg0, %[[RRAW]])
// CHECK-NOT: comet_rt_decompress
// The one allocation before the first ReluGrad is its dX.
// CHECK: %[[GRAW:.*]] = call @comet_rt_buffer_alloc(
// CHECK-NOT: comet_rt_buffer_alloc
// CHECK: %[[G:.*]] = memref.view %[[GRAW]]
// CHECK: %[[GC:.*]] = memref.cast %[[G]]
// CHECK: call @comet_rt_relu_grad_mask(%arg0, %{{.*}}, %[[HANDLE]], %[[GC]]) : (!llvm.ptr, memref<*xf32>, i64, memref<*xf32>) -> i32
// CHECK-NOT: comet_rt_handle_free
// CHECK: call @comet_rt_relu_grad_mask(%arg0, %{{.*}}, %[[HANDLE]], %{{.*}}) : (!llvm.ptr, memref<*xf32>, i64, memref<*xf32>) -> i32
// CHECK: call @comet_rt_handle_free(%arg0, %[[HANDLE]]) : (!llvm.ptr, i64) -> ()
// CHECK-NOT: comet_rt_decompress
// CHECK: return
func.func @fused_mask(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %r = onnx.Relu(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = comet.compress %r : tensor<2x8xf32> -> !comet.compressed<tensor<2x8xf32>, mask>
  %d = comet.decompress %c : !comet.compressed<tensor<2x8xf32>, mask> -> tensor<2x8xf32>
  %g = onnx.ReluGrad(%dy, %d) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g2 = onnx.ReluGrad(%g, %d) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %g2 : tensor<2x8xf32>
}

// -----

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

// Dropout and DropoutGrad (unfused: the mask is a plain i1 buffer, a byte
// per element) call the runtime with ratio and training_mode as memrefs.
// CHECK-LABEL: func.func @dropout(
// CHECK: call @comet_rt_dropout(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xi1>, memref<*xf32>, memref<*xi1>) -> i32
// CHECK: call @comet_rt_dropout_grad(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xi1>, memref<*xf32>, memref<*xi1>, memref<*xf32>) -> i32
func.func @dropout(%x: tensor<2x8xf32>, %r: tensor<f32>, %t: tensor<i1>, %dy: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %y, %m = onnx.Dropout(%x, %r, %t) : (tensor<2x8xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x8xf32>, tensor<2x8xi1>)
  %dx = onnx.DropoutGrad(%dy, %m, %r, %t) : (tensor<2x8xf32>, tensor<2x8xi1>, tensor<f32>, tensor<i1>) -> tensor<2x8xf32>
  return %y, %dx : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// ReLU6 and its gradient: Clip, the compares (predicates 0 = >=, 1 = <=),
// And, Cast from bool and Mul.
// CHECK-LABEL: func.func @clip_grad(
// CHECK: call @comet_rt_clip(%arg0,
// CHECK: %[[GE:.*]] = arith.constant 0 : i64
// CHECK: call @comet_rt_compare(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[GE]]) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xi1>, i64) -> i32
// CHECK: %[[LE:.*]] = arith.constant 1 : i64
// CHECK: call @comet_rt_compare(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[LE]])
// CHECK: call @comet_rt_and_i1(
// CHECK: call @comet_rt_cast_i1_f32(
// CHECK: call @comet_rt_mul(%arg0, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>) -> i32
func.func @clip_grad(%x: tensor<2x8xf32>, %lo: tensor<f32>, %hi: tensor<f32>, %dy: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %y = onnx.Clip(%x, %lo, %hi) : (tensor<2x8xf32>, tensor<f32>, tensor<f32>) -> tensor<2x8xf32>
  %ge = onnx.GreaterOrEqual(%x, %lo) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xi1>
  %le = onnx.LessOrEqual(%x, %hi) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xi1>
  %m = onnx.And(%ge, %le) : (tensor<2x8xi1>, tensor<2x8xi1>) -> tensor<2x8xi1>
  %f = onnx.Cast(%m) {to = 1 : i64} : (tensor<2x8xi1>) -> tensor<2x8xf32>
  %dx = onnx.Mul(%dy, %f) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y, %dx : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// A returned value whose dynamic dim is not the batch (the attention
// dropout's mask: batch x heads = 2 x 4 rows) takes its refined type, not
// the batch fallback.
// CHECK-LABEL: func.func @returned_heads(
// CHECK-SAME: memref<8x3xf32> {comet.result = 0 : i64}, %{{.*}}: memref<8x3xi1> {comet.result = 1 : i64}
func.func @returned_heads(%x: tensor<?x4x3xf32>) -> (tensor<?x3xf32>, tensor<?x3xi1>) {
  %s = onnx.Initializer "s" dense<[-1, 3]> : tensor<2xi64>
  %y = onnx.Reshape(%x, %s) : (tensor<?x4x3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  %r = onnx.Initializer "r" dense<0.5> : tensor<f32>
  %t = onnx.Initializer "t" dense<true> : tensor<i1>
  %d, %m = onnx.Dropout(%y, %r, %t) : (tensor<?x3xf32>, tensor<f32>, tensor<i1>) -> (tensor<?x3xf32>, tensor<?x3xi1>)
  return %d, %m : tensor<?x3xf32>, tensor<?x3xi1>
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

// A float Neg multiplies by -1 (Scale); Pad of some axes spreads its pads
// over all dims.
// CHECK-DAG: memref.global "private" constant @[[M1:__comet_const_[0-9]+]] : memref<1xf32> = dense<-1.000000e+00>
// CHECK-DAG: memref.global "private" constant @[[PADS:__comet_const_[0-9]+]] : memref<4xi64> = dense<[0, 1, 0, 2]>
// CHECK-LABEL: func.func @neg_and_axes_pad(
// CHECK: memref.get_global @[[M1]] : memref<1xf32>
// CHECK: call @comet_rt_scale(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64) -> i32
// CHECK: memref.get_global @[[PADS]] : memref<4xi64>
// CHECK: call @comet_rt_pad(%arg0,
func.func @neg_and_axes_pad(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x6xf32>) {
  %none = onnx.NoValue
  %n = onnx.Neg(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %pads = onnx.Constant {value = dense<[1, 2]> : tensor<2xi64>} : tensor<2xi64>
  %axes = onnx.Constant {value = dense<[-1]> : tensor<1xi64>} : tensor<1xi64>
  %p = onnx.Pad(%x, %pads, %none, %axes) : (tensor<2x3xf32>, tensor<2xi64>, none, tensor<1xi64>) -> tensor<2x6xf32>
  return %n, %p : tensor<2x3xf32>, tensor<2x6xf32>
}

// -----

// dX written over dY (onnx's InPlaceGradient ops; ActivationLiveness's
// inPlaceOf): a ReluGrad whose dY dies there writes into dY's buffer, and a
// chain of them shares it; dY read again later (%g, by the Add) or an
// argument (%dy) gets a fresh dX. The shared buffer is freed once, after
// the chain's last reader.
// CHECK-LABEL: func.func @in_place(
// CHECK: call @comet_rt_relu(
// CHECK: %[[G:.*]] = call @comet_rt_buffer_alloc(%arg0, %{{.*}}, %{{.*}})
// CHECK: %[[GV:.*]] = memref.view %[[G]]
// CHECK: %[[GC:.*]] = memref.cast %[[GV]]
// CHECK: call @comet_rt_relu_grad(%arg0, %{{.*}}, %{{.*}}, %[[GC]])
// CHECK: %[[G2:.*]] = call @comet_rt_buffer_alloc(
// CHECK: %[[G2V:.*]] = memref.view %[[G2]]
// CHECK: %[[G2C:.*]] = memref.cast %[[G2V]]
// CHECK: call @comet_rt_relu_grad(%arg0, %[[GC]], %{{.*}}, %[[G2C]])
// CHECK: call @comet_rt_relu_grad(%arg0, %[[G2C]], %{{.*}}, %[[G2C]])
// CHECK: %[[S:.*]] = call @comet_rt_buffer_alloc(
// CHECK: %[[SV:.*]] = memref.view %[[S]]
// CHECK: %[[SC:.*]] = memref.cast %[[SV]]
// CHECK: call @comet_rt_add(%arg0, %[[G2C]], %[[GC]], %[[SC]])
// CHECK: call @comet_rt_buffer_free(%arg0, %[[G]])
// CHECK: call @comet_rt_buffer_free(%arg0, %[[G2]])
// CHECK: call @comet_rt_relu_grad(%arg0, %[[SC]], %{{.*}}, %[[SC]])
// CHECK: call @comet_rt_relu_grad(%arg0, %[[SC]], %{{.*}}, %[[SC]])
// CHECK-NOT: comet_rt_buffer_free(%arg0, %[[G2]])
// CHECK: call @comet_rt_add(
// CHECK: call @comet_rt_buffer_free(%arg0, %[[S]])
func.func @in_place(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %r = onnx.Relu(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %g = onnx.ReluGrad(%dy, %r) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g2 = onnx.ReluGrad(%g, %r) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g3 = onnx.ReluGrad(%g2, %r) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %s = onnx.Add(%g3, %g) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g4 = onnx.ReluGrad(%s, %r) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g5 = onnx.ReluGrad(%g4, %r) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %t = onnx.Add(%g5, %x) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %t : tensor<2x8xf32>
}
