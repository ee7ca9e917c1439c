//===- Passes.td - COMET conversion passes -----------------*- tablegen -*-===//
#ifndef COMET_CONVERSION_PASSES_TD
#define COMET_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def CometLowerToRuntime : Pass<"comet-lower-to-runtime", "mlir::ModuleOp"> {
  let summary = "Lower onnx and comet ops to calls into the runtime's C ABI";
  let description = [{
    Rewrites every function of onnx/comet ops on tensors into a function on
    memrefs that calls the runtime's C interface (every function it calls is
    declared once, in runtime/include/comet/runtime/abi.def), in the op order
    of the input:

    - Shapes are specialized first: every dynamic dimension takes
      `batch-size` (0 rejects dynamic dimensions), so every buffer has a
      static shape and the kernels get exact sizes.
    - Signature: a leading `!llvm.ptr` argument (`comet.context`) is the
      runtime context, which every runtime call takes first; the tensor
      arguments become memrefs of the same shape; one memref argument is
      appended per result (destination passing, marked `comet.result`); and
      the function returns the runtime status (i32, 0 on success) with
      `llvm.emit_c_interface`. The caller owns all these buffers. The
      argument a loss reads as labels is marked `comet.labels = <classes>`
      (its scores' dim 1), an integer argument that Gathers read as
      indices `comet.index_range = <n>` (the valid ids, [0, n)): the roles
      the driver binds inputs by.
    - Every value the function computes lives in a buffer from
      `comet_rt_buffer_alloc(ctx, bytes, category)` (a `memref<?xi8>` that
      `memref.view` gives the value's type), counted in the runtime
      allocator's category from the ActivationLiveness analysis (parameter
      -> params, gradient -> grads, optimizer state -> optimizer_state,
      activation -> activations, other -> other). A returned value is
      written straight into its result memref.
    - Deallocation points come from the same ActivationLiveness analysis:
      a value is freed (`comet_rt_buffer_free`) right after the op at the
      end of its live interval (its last use, or its definition when
      unused).
    - `comet.compress` becomes `comet_rt_compress`, which returns an opaque
      handle (an i64, 0 on failure) owned by the runtime and counted as
      `compressed`; a lossy bound with a slot passes the slot, whose value
      is read from the context's slot table at run time (the compiled bound
      only seeds it). The codec number is the dialect's, which is the
      runtime's. `comet.decompress` fills a fresh buffer through
      `comet_rt_decompress`; the handle is released with
      `comet_rt_handle_free` at the end of its live interval (after its last
      decompress, or after the last ReluGrad that reads a fused mask
      decompress straight from the handle).
    - With `tuner-statistics` (the default), a compress marked `comet.tune`
      first calls `comet_rt_slot_observe_act`, and an op marked
      `comet.observe` calls `comet_rt_slot_observe_grad` (and `_max`) on
      its operands: the bound tuner's statistics. Without it the graph
      calls neither, so it runs on a device that does not gather them.
    - With `check-errors`, a non-zero status (or a null buffer or handle)
      branches to an exit block that calls `comet_rt_step_abort`, which
      frees the buffers and handles still live, and returns the status.

    Before:
    ```mlir
    func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
      %0 = onnx.Relu(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
      return %0 : tensor<?x8xf32>
    }
    ```
    After (`batch-size=4`, abridged):
    ```mlir
    func.func @f(%ctx: !llvm.ptr {comet.context}, %x: memref<4x8xf32>,
                 %out: memref<4x8xf32> {comet.result = 0 : i64}) -> i32
        attributes {llvm.emit_c_interface} {
      %0 = memref.cast %x : memref<4x8xf32> to memref<*xf32>
      %1 = memref.cast %out : memref<4x8xf32> to memref<*xf32>
      %rc = call @comet_rt_relu(%ctx, %0, %1)
          : (!llvm.ptr, memref<*xf32>, memref<*xf32>) -> i32
      ...
      return %c0_i32 : i32
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"batchSize", "batch-size", "int64_t", /*default=*/"0",
           "Size of every dynamic dimension (0: dynamic dims are an error)">,
    Option<"checkErrors", "check-errors", "bool", /*default=*/"true",
           "Return the first non-zero runtime status">,
    Option<"tunerStatistics", "tuner-statistics", "bool", /*default=*/"true",
           "Call the bound tuner's statistics entries (slot_observe_*) where "
           "comet.tune and comet.observe mark them; off, the graph calls none "
           "(the site table keeps the consumers)">,
  ];
}

#endif // COMET_CONVERSION_PASSES_TD
