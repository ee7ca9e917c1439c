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
