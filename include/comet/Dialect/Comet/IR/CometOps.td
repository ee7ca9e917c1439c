//===- CometOps.td - comet ops -----------------------------*- tablegen -*-===//
#ifndef COMET_DIALECT_COMET_IR_COMETOPS_TD
#define COMET_DIALECT_COMET_IR_COMETOPS_TD

include "comet/Dialect/Comet/IR/CometBase.td"
include "comet/Dialect/Comet/IR/CometAttrs.td"
include "comet/Dialect/Comet/IR/CometTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Comet_CompressOp : Comet_Op<"compress", [Pure]> {
  let summary = "Store a tensor through a codec";
  let description = [{
    Produces the compressed form of `input`. Lossy codecs (`sz`) need a
    `bound`; lossless ones (`mask`, `raw`) take none. The result type repeats
    the input's tensor type.

    ```mlir
    %c = comet.compress %x bound <abs = 1.0e-03, slot = 0>
        : tensor<8x16xf32> -> !comet.compressed<tensor<8x16xf32>, sz>
    %m = comet.compress %y : tensor<8x16xf32> -> !comet.compressed<tensor<8x16xf32>, mask>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       OptionalAttr<Comet_BoundAttr>:$bound);
  let results = (outs Comet_CompressedType:$result);
  // The bound is written without its `#comet.bound` prefix: a qualified
  // attribute would swallow the `: type` that follows it.
  let assemblyFormat = [{
    $input (`bound` $bound^)? attr-dict `:` type($input) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::comet::Codec getCodec() { return getResult().getType().getCodec(); }
  }];
}

def Comet_DecompressOp : Comet_Op<"decompress", [Pure]> {
  let summary = "Rebuild a tensor from its compressed form";
  let description = [{
    Gives back the tensor that `comet.compress` stored, within the bound of
    its codec. The result type is the compressed type's tensor type.

    ```mlir
    %x2 = comet.decompress %c : !comet.compressed<tensor<8x16xf32>, sz> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Comet_CompressedType:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` qualified(type($input)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Comet_OptimizerUpdateOp : Comet_Op<"optimizer_update"> {
  let summary = "One parameter's optimizer update, in place, inside the step";
  let description = [{
    Applies the runtime's optimizer kernel of `kind` (the abi.def entry:
    `adamw`, `sgd_v2` or `sgd_momentum`) to one parameter: `weight` and its
    `states` (AdamW's two moments, the momentum SGD's velocity, none for
    `sgd_v2`) are function arguments written in place, `grad` is the
    parameter's gradient of this step, and `lr` and `step` are the step's
    learning rate and optimizer step count, read at run time. The
    hyperparameters are attributes, as the kernel takes them.
    comet-fuse-optimizer writes it in place of a gradient's accumulation.

    ```mlir
    comet.optimizer_update "adamw" %w, %dw states(%m, %v : tensor<4xf32>, tensor<4xf32>)
        lr %lr : tensor<1xf32> step %step : tensor<1xi64> : tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kind, AnyRankedTensor:$weight,
                       AnyRankedTensor:$grad, Variadic<AnyRankedTensor>:$states,
                       AnyRankedTensor:$lr, AnyRankedTensor:$step,
                       DefaultValuedAttr<F32Attr, "0.9f">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.999f">:$beta,
                       DefaultValuedAttr<F32Attr, "1e-8f">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.0f">:$weight_decay,
                       DefaultValuedAttr<F32Attr, "0.9f">:$momentum,
                       DefaultValuedAttr<I64Attr, "0">:$adam_mode,
                       DefaultValuedAttr<I64Attr, "1">:$correct_bias);
  let assemblyFormat = [{
    $kind $weight `,` $grad (`states` `(` $states^ `:` type($states) `)`)?
    `lr` $lr `:` type($lr) `step` $step `:` type($step) attr-dict `:`
    type($weight) `,` type($grad)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The optimizer states `kind` keeps per parameter; -1 for an unknown
    /// kind.
    static int numStates(::llvm::StringRef kind) {
      return kind == "adamw" ? 2 : kind == "sgd_momentum" ? 1
                                   : kind == "sgd_v2" ? 0 : -1;
    }
  }];
}

def Comet_BatchNormApplyOp : Comet_Op<"batch_norm_apply", [Pure]> {
  let summary = "BatchNorm's training output again, from the saved statistics";
  let description = [{
    Recomputes `act(scale * (x - saved_mean) * saved_inv_std + bias)` per
    channel (dim 1), where `saved_mean` and `saved_inv_std` are the
    statistics a training-mode `onnx.BatchNormInternal` saved for its
    gradient. With that op's own operands it gives its output bit for bit
    (the runtime's `batch_norm_apply` and `batch_norm_internal` share one
    expression), then `activation`: `none`, `relu` (as onnx.Relu) or `clip`
    (as onnx.Clip with bounds `lo` and `hi`).
    comet-recompute-activations writes it in the backward in place of a
    BatchNorm (+ ReLU or Clip) output kept alive from the forward.

    ```mlir
    %r = comet.batch_norm_apply %x, %scale, %b, %mean, %inv_std {activation = "relu"}
        : (tensor<8x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
           tensor<4xf32>) -> tensor<8x4x6x6xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$x, AnyRankedTensor:$scale,
                       AnyRankedTensor:$bias, AnyRankedTensor:$saved_mean,
                       AnyRankedTensor:$saved_inv_std,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$activation,
                       DefaultValuedAttr<F32Attr, "0.0f">:$lo,
                       DefaultValuedAttr<F32Attr, "0.0f">:$hi);
  let results = (outs AnyRankedTensor:$y);
  let assemblyFormat = [{
    $x `,` $scale `,` $bias `,` $saved_mean `,` $saved_inv_std attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // COMET_DIALECT_COMET_IR_COMETOPS_TD
