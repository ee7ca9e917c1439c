//===- ONNXOps.td - onnx ops -------------------------------*- tablegen -*-===//
//
// One op per ONNX op_type found in ONNX Runtime training, eval and optimizer
// graphs. Operand and result positions are ONNX's; optional ones take `none`.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_DIALECT_ONNX_IR_ONNXOPS_TD
#define COMET_DIALECT_ONNX_IR_ONNXOPS_TD

include "comet/Dialect/ONNX/IR/ONNXBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Shared attribute lists
//===----------------------------------------------------------------------===//

defvar AutoPad = DefaultValuedStrAttr<StrAttr, "NOTSET">;
defvar ConvAttrs = (ins AutoPad:$auto_pad,
                        OptionalAttr<DenseI64ArrayAttr>:$dilations,
                        DefaultValuedAttr<ONNX_I64Attr, "1">:$group,
                        OptionalAttr<DenseI64ArrayAttr>:$kernel_shape,
                        OptionalAttr<DenseI64ArrayAttr>:$pads,
                        OptionalAttr<DenseI64ArrayAttr>:$strides);
defvar MaxPoolAttrs = (ins AutoPad:$auto_pad,
                           DefaultValuedAttr<ONNX_I64Attr, "0">:$ceil_mode,
                           OptionalAttr<DenseI64ArrayAttr>:$dilations,
                           DenseI64ArrayAttr:$kernel_shape,
                           OptionalAttr<DenseI64ArrayAttr>:$pads,
                           DefaultValuedAttr<ONNX_I64Attr, "0">:$storage_order,
                           OptionalAttr<DenseI64ArrayAttr>:$strides);
defvar ReductionAttr = DefaultValuedStrAttr<StrAttr, "mean">;

//===----------------------------------------------------------------------===//
// Values that are not ONNX nodes
//===----------------------------------------------------------------------===//

// dX may be written over dY where dY dies (comet::onnx::InPlaceGradient).
def ONNX_InPlaceGradient : NativeOpTrait<"InPlaceGradient"> {
  let cppNamespace = "::comet::onnx";
}

// Y may be written over X in the forward where X dies at the op
// (comet::onnx::InPlaceForward).
def ONNX_InPlaceForward : NativeOpTrait<"InPlaceForward"> {
  let cppNamespace = "::comet::onnx";
}

def ONNX_NoValueOp : Op<ONNX_Dialect, "NoValue", [Pure]> {
  let summary = "[comet] The absent value of an optional ONNX input";
  let description = [{
    Stands for an empty input name in an ONNX node, so operands keep their
    ONNX positions. Not an ONNX node; its location is the consuming node's.
  }];
  let results = (outs NoneType:$none);
  let assemblyFormat = "attr-dict";
}

def ONNX_InitializerOp : Op<ONNX_Dialect, "Initializer",
                            [Pure, AllTypesMatch<["value", "output"]>]> {
  let summary = "[comet] A graph initializer";
  let description = [{
    A constant tensor of the graph's `initializer` list, named `name` as in
    the file. The importer stores its bytes as a `dense_resource` blob in the
    MLIR file's resource section. Not an ONNX node; its location is
    NameLoc(name).

    ```mlir
    %0 = onnx.Initializer "fc.w" dense_resource<fc.w> : tensor<10x84xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, ElementsAttr:$value);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$name $value attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ai.onnx: forward ops
//===----------------------------------------------------------------------===//

def ONNX_ConstantOp : ONNX_Op<"Constant", "", "A constant tensor", [Pure]> {
  let description = [{ Exactly one of the value attributes is set. }];
  let arguments = (ins OptionalAttr<ElementsAttr>:$value,
                       OptionalAttr<F32Attr>:$value_float,
                       OptionalAttr<DenseF32ArrayAttr>:$value_floats,
                       OptionalAttr<ONNX_I64Attr>:$value_int,
                       OptionalAttr<DenseI64ArrayAttr>:$value_ints);
  let results = (outs ONNX_Tensor:$output);
  let assemblyFormat = "attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def ONNX_ConvOp : ONNX_Op<"Conv", "", "N-d convolution", [Pure]> {
  let description = [{
    `Y = conv(X, W) + B`. X is N x C x D1 x ... , W is M x C/group x k1 x ...;
    `kernel_shape`, when given, must match W's spatial dims.
  }];
  let arguments = !con((ins ONNX_Tensor:$X, ONNX_Tensor:$W, ONNX_OptTensor:$B),
                       ConvAttrs);
  let results = (outs ONNX_Tensor:$Y);
  let hasVerifier = 1;
}

def ONNX_ReluOp : ONNX_Op<"Relu", "", "max(x, 0)",
    [Pure, ONNX_InPlaceForward, ONNX_UnaryElementwise<"Any">]> {
  let arguments = (ins ONNX_Tensor:$X);
  let results = (outs ONNX_Tensor:$Y);
  let runtimeCall = "relu";
}

def ONNX_LeakyReluOp : ONNX_Op<"LeakyRelu", "", "X >= 0 ? X : alpha * X",
    [Pure, ONNX_UnaryElementwise<"Float">]> {
  let description = [{ torch's `nn.LeakyReLU` (`alpha` its negative_slope). }];
  let arguments = (ins ONNX_Tensor:$X,
                       DefaultValuedAttr<F32Attr, "0.01">:$alpha);
  let results = (outs ONNX_Tensor:$Y);
  let runtimeCall = "leaky_relu";
}

def ONNX_MaxPoolOp : ONNX_Op<"MaxPool", "", "N-d max pooling", [Pure]> {
  let description = [{
    The optional second result holds the flat index of each maximum, which
    `onnx.MaxPoolGrad` reads: i64 as in ONNX. As a COMET extension, a ui8
    Indices holds instead each maximum's position in its window,
    `a * kW + b` for window element (a, b) (row-major over kernel_shape),
    allowed when the window has at most 256 elements;
    `--comet-compact-pool-indices` makes it so where only MaxPoolGrad reads
    the indices.
  }];
  let arguments = !con((ins ONNX_Tensor:$X), MaxPoolAttrs);
  let results = (outs ONNX_Tensor:$Y, ONNX_OptTensor:$Indices);
  let hasVerifier = 1;
}

def ONNX_GlobalAveragePoolOp : ONNX_Op<"GlobalAveragePool", "",
    "Mean over all spatial dims", [Pure]> {
  let arguments = (ins ONNX_Tensor:$X);
  let results = (outs ONNX_Tensor:$Y);
  let hasVerifier = 1;
  let runtimeCall = "global_average_pool";
}

def ONNX_GemmOp : ONNX_Op<"Gemm", "", "alpha * A' B' + beta * C",
    [Pure, ONNX_MatMulGradient]> {
  let description = [{
    In a backward pass (dW = Gemm(X, dY, transA = 1)) A or B is a saved
    activation (SavedActivationOpInterface); N is A's contraction dimension.
  }];
  let arguments = (ins ONNX_Tensor:$A, ONNX_Tensor:$B, ONNX_OptTensor:$C,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$transA,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$transB);
  let results = (outs ONNX_Tensor:$Y);
  let hasVerifier = 1;
  let runtimeCall = "gemm";
}

def ONNX_MatMulOp : ONNX_Op<"MatMul", "", "numpy matmul",
    [Pure, ONNX_MatMulGradient]> {
  let description = [{
    In a backward pass A or B is a saved activation
    (SavedActivationOpInterface); N is A's last dimension.
  }];
  let arguments = (ins ONNX_Tensor:$A, ONNX_Tensor:$B);
  let results = (outs ONNX_Tensor:$Y);
  let hasVerifier = 1;
  let runtimeCall = "matmul";
}

def ONNX_FlattenOp : ONNX_Op<"Flatten", "", "Flatten to 2-d at `axis`",
    [Pure]> {
  let arguments = (ins ONNX_Tensor:$input, DefaultValuedAttr<ONNX_I64Attr, "1">:$axis);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
  let runtimeCall = "flatten";
}

def ONNX_ReshapeOp : ONNX_Op<"Reshape", "", "Reshape to a 1-d i64 shape",
    [Pure]> {
  let arguments = (ins ONNX_Tensor:$data, ONNX_Tensor:$shape,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$allowzero);
  let results = (outs ONNX_Tensor:$reshaped);
  let hasVerifier = 1;
  let runtimeCall = "reshape";
}

def ONNX_BatchNormalizationOp : ONNX_Op<"BatchNormalization", "",
    "Batch normalization (inference or training mode)",
    [Pure, ONNX_ResultsLike<[0, 3, 3]>]> {
  let arguments = (ins ONNX_Tensor:$X, ONNX_Tensor:$scale, ONNX_Tensor:$B,
                       ONNX_Tensor:$input_mean, ONNX_Tensor:$input_var,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9">:$momentum,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$training_mode);
  let results = (outs ONNX_Tensor:$Y, ONNX_OptTensor:$running_mean,
                      ONNX_OptTensor:$running_var);
  let hasVerifier = 1;
}

class ONNX_BinaryOp<string mnemonic, string text>
    : ONNX_Op<mnemonic, "", text # " with numpy broadcasting",
              [Pure, ONNX_Broadcast<"Same">]> {
  let arguments = (ins ONNX_Tensor:$A, ONNX_Tensor:$B);
  let results = (outs ONNX_Tensor:$C);
}
def ONNX_AddOp : ONNX_BinaryOp<"Add", "A + B">;
def ONNX_SubOp : ONNX_BinaryOp<"Sub", "A - B">;
def ONNX_MulOp : ONNX_BinaryOp<"Mul", "A * B">;
def ONNX_DivOp : ONNX_BinaryOp<"Div", "A / B">;

def ONNX_ModOp : ONNX_Op<"Mod", "", "A mod B with numpy broadcasting",
    [Pure, ONNX_Broadcast<"Same">]> {
  let description = [{
    With `fmod` 0 the remainder takes the divisor's sign (Python's `%`; for
    integers only), with `fmod` 1 the dividend's (C's `fmod`; floats need
    it). torch exports `%` of integer shape values with fmod 0 (Swin's
    window padding) and `torch.fmod` with 1. A Mod of i64 constants folds
    like the other shape arithmetic (`getConstantInts`); the runtime
    computes one of i64 tensors (`mod_i64`), where a zero divisor is an
    error, not a crash.
  }];
  let arguments = (ins ONNX_Tensor:$A, ONNX_Tensor:$B,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$fmod);
  let results = (outs ONNX_Tensor:$C);
  let hasVerifier = 1;
}

def ONNX_ClipOp : ONNX_Op<"Clip", "", "min(max(input, min), max)",
    [Pure, ONNX_UnaryElementwise<"Float">]> {
  let description = [{
    `min` and `max` are optional one-element inputs (ReLU6 is Clip(x, 0, 6)).
  }];
  let arguments = (ins ONNX_Tensor:$input, ONNX_OptTensor:$min,
                       ONNX_OptTensor:$max);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
  let runtimeCall = "clip";
}

class ONNX_CompareOp<string mnemonic, string text>
    : ONNX_Op<mnemonic, "", text # " (bool result) with numpy broadcasting",
              [Pure, ONNX_Broadcast<"Bool">]> {
  let arguments = (ins ONNX_Tensor:$A, ONNX_Tensor:$B);
  let results = (outs ONNX_Tensor:$C);
}
def ONNX_GreaterOrEqualOp : ONNX_CompareOp<"GreaterOrEqual", "A >= B">;
def ONNX_LessOrEqualOp : ONNX_CompareOp<"LessOrEqual", "A <= B">;
def ONNX_EqualOp : ONNX_CompareOp<"Equal", "A == B">;

def ONNX_AndOp : ONNX_Op<"And", "",
    "Logical and of bool tensors with numpy broadcasting",
    [Pure, ONNX_Broadcast<"Bool">]> {
  let arguments = (ins ONNX_Tensor:$A, ONNX_Tensor:$B);
  let results = (outs ONNX_Tensor:$C);
  let hasVerifier = 1;
  let runtimeCall = "and_i1";
}

def ONNX_SumOp : ONNX_Op<"Sum", "", "Sum of its inputs, with broadcasting",
    [Pure, ONNX_Broadcast<"Same">]> {
  let arguments = (ins Variadic<ONNX_Tensor>:$data_0);
  let results = (outs ONNX_Tensor:$sum);
}

def ONNX_IdentityOp : ONNX_Op<"Identity", "", "A copy of its input",
    [Pure, ONNX_ResultsLike<[0]>]> {
  let arguments = (ins ONNX_TensorOrSeq:$input);
  let results = (outs ONNX_TensorOrSeq:$output);
  let hasVerifier = 1;
}

def ONNX_ShapeOp : ONNX_Op<"Shape", "", "The shape of a tensor as 1-d i64",
    [Pure]> {
  let arguments = (ins ONNX_Tensor:$data, OptionalAttr<ONNX_I64Attr>:$end,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$start);
  let results = (outs ONNX_Tensor:$shape);
  let hasVerifier = 1;
}

def ONNX_ConstantOfShapeOp : ONNX_Op<"ConstantOfShape", "",
    "A tensor of the 1-d i64 `input` shape filled with `value`", [Pure]> {
  let description = [{
    `value` is a one-element tensor whose element type the result takes;
    without it the result is f32 zeros. torch exports `torch.ones` and
    `torch.empty` of a computed shape this way.
  }];
  let arguments = (ins ONNX_Tensor:$input, OptionalAttr<ElementsAttr>:$value);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
}

def ONNX_ReduceSumOp : ONNX_Op<"ReduceSum", "", "Sum over `axes`",
    [Pure, ONNX_Reduction]> {
  let arguments = (ins ONNX_Tensor:$data, ONNX_OptTensor:$axes,
                       DefaultValuedAttr<ONNX_I64Attr, "1">:$keepdims,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$noop_with_empty_axes);
  let results = (outs ONNX_Tensor:$reduced);
  let runtimeCall = "reduce_sum";
}

def ONNX_ExpandOp : ONNX_Op<"Expand", "", "Broadcast to a 1-d i64 shape",
    [Pure]> {
  let arguments = (ins ONNX_Tensor:$input, ONNX_Tensor:$shape);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
  let runtimeCall = "expand";
}

def ONNX_CastOp : ONNX_Op<"Cast", "", "Element type conversion", [Pure]> {
  let description = [{ `to` is an ONNX TensorProto.DataType number. }];
  let arguments = (ins ONNX_Tensor:$input, ONNX_I64Attr:$to,
                       DefaultValuedAttr<ONNX_I64Attr, "1">:$saturate);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
}

def ONNX_SoftmaxCrossEntropyLossOp : ONNX_Op<"SoftmaxCrossEntropyLoss", "",
    "Softmax cross-entropy of scores N x C x ... against labels N x ...",
    [Pure]> {
  let arguments = (ins ONNX_Tensor:$scores, ONNX_Tensor:$labels,
                       ONNX_OptTensor:$weights,
                       OptionalAttr<ONNX_I64Attr>:$ignore_index,
                       ReductionAttr:$reduction);
  let results = (outs ONNX_Tensor:$output, ONNX_OptTensor:$log_prob);
  let hasVerifier = 1;
}

def ONNX_DropoutOp : ONNX_Op<"Dropout", "",
    "Zero elements at random, scale the rest by 1 / (1 - ratio)", []> {
  let description = [{
    `ratio` (f32, default 0.5) and `training_mode` (bool, default false) are
    one-element inputs. In training mode each element is kept with
    probability 1 - ratio; `mask` (bool, X's shape) says which were kept.
    Otherwise Y = X and the mask is all true. Not `Pure`: it draws from the
    runtime context's random stream (the `seed` attribute is not used).
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_OptTensor:$ratio,
                       ONNX_OptTensor:$training_mode,
                       OptionalAttr<ONNX_I64Attr>:$seed);
  let results = (outs ONNX_Tensor:$output, ONNX_OptTensor:$mask);
  let hasVerifier = 1;
  let runtimeCall = "dropout";
  let runtimeCallAttrs = [];
}

//===----------------------------------------------------------------------===//
// ai.onnx: ops of transformer graphs
//===----------------------------------------------------------------------===//

def ONNX_TransposeOp : ONNX_Op<"Transpose", "",
    "Permute the dims: output dim i is input dim perm[i]", [Pure]> {
  let description = [{ Without `perm` the dims are reversed. }];
  let arguments = (ins ONNX_Tensor:$data, OptionalAttr<DenseI64ArrayAttr>:$perm);
  let results = (outs ONNX_Tensor:$transposed);
  let hasVerifier = 1;
}

def ONNX_SoftmaxOp : ONNX_Op<"Softmax", "", "Softmax along `axis`",
    [Pure, ONNX_UnaryElementwise<"Float">]> {
  let arguments = (ins ONNX_Tensor:$input,
                       DefaultValuedAttr<ONNX_I64Attr, "-1">:$axis);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
  let runtimeCall = "softmax";
}

def ONNX_LayerNormalizationOp : ONNX_Op<"LayerNormalization", "",
    "Layer normalization over dims [axis, rank)", [Pure]> {
  let description = [{
    The training graph's form (ONNX Runtime's fusion of the decomposed
    LayerNorm) has three results: Y, the mean and the inverse standard
    deviation 1 / sqrt(var + epsilon), each statistic with X's shape and 1
    in the normalized dims. `stash_type` 1 computes them in float.
  }];
  let arguments = (ins ONNX_Tensor:$X, ONNX_Tensor:$Scale, ONNX_OptTensor:$B,
                       DefaultValuedAttr<ONNX_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<ONNX_I64Attr, "1">:$stash_type);
  let results = (outs ONNX_Tensor:$Y, ONNX_OptTensor:$Mean,
                      ONNX_OptTensor:$InvStdDev);
  let hasVerifier = 1;
}

def ONNX_SliceOp : ONNX_Op<"Slice", "",
    "Slice by 1-d starts, ends, axes and steps (ONNX clamping)", [Pure]> {
  let arguments = (ins ONNX_Tensor:$data, ONNX_Tensor:$starts,
                       ONNX_Tensor:$ends, ONNX_OptTensor:$axes,
                       ONNX_OptTensor:$steps);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
  let runtimeCall = "slice";
}

def ONNX_SqueezeOp : ONNX_Op<"Squeeze", "", "Remove dims of size 1", [Pure]> {
  let description = [{ Without `axes`, every dim of size 1 goes. }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_OptTensor:$axes);
  let results = (outs ONNX_Tensor:$squeezed);
  let hasVerifier = 1;
}

def ONNX_UnsqueezeOp : ONNX_Op<"Unsqueeze", "",
    "Insert dims of size 1 at `axes` of the result", [Pure]> {
  let arguments = (ins ONNX_Tensor:$data, ONNX_Tensor:$axes);
  let results = (outs ONNX_Tensor:$expanded);
  let hasVerifier = 1;
}

def ONNX_ReduceMeanOp : ONNX_Op<"ReduceMean", "",
    "Mean over `axes` (an attribute before opset 18)", [Pure, ONNX_Reduction]> {
  let description = [{ Without `axes`, every dim is reduced. }];
  let arguments = (ins ONNX_Tensor:$data,
                       OptionalAttr<DenseI64ArrayAttr>:$axes,
                       DefaultValuedAttr<ONNX_I64Attr, "1">:$keepdims);
  let results = (outs ONNX_Tensor:$reduced);
  let hasVerifier = 1;
}

def ONNX_SizeOp : ONNX_Op<"Size", "", "The element count as an i64 scalar",
                          [Pure]> {
  let arguments = (ins ONNX_Tensor:$data);
  let results = (outs ONNX_Tensor:$size);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ai.onnx: gradient ops that ONNX Runtime registers in the default domain
//===----------------------------------------------------------------------===//

def ONNX_MaxPoolGradOp : ONNX_Op<"MaxPoolGrad", "",
    "Gradient of MaxPool: scatter dY to the argmax indices",
    [Pure, DeclareOpInterfaceMethods<ONNX_SavedActivationOpInterface>]> {
  let description = [{
    Indices are MaxPool's: flat indices (i64), or window positions (ui8),
    which the window attributes, the forward's, turn back into the same
    flat indices.
  }];
  let arguments = !con((ins ONNX_Tensor:$dY, ONNX_Tensor:$Indices), MaxPoolAttrs);
  let results = (outs ONNX_Tensor:$dX);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// com.microsoft: training ops of ONNX Runtime
//===----------------------------------------------------------------------===//

def ONNX_ConvGradOp : ONNX_Op<"ConvGrad", "com.microsoft",
    "Gradients of Conv with respect to X, W and B",
    [Pure, DeclareOpInterfaceMethods<ONNX_SavedActivationOpInterface,
      ["getWeightGradForm", "getWeightGradResult", "getSummedTerms",
       "getKernelArea", "getStrideProduct"]>]> {
  let description = [{
    Inputs are dY, the forward input X and the weight W; each result is
    optional (`none` where the graph does not need it). X is the activation
    that the forward pass saves for this op.
  }];
  let arguments = !con((ins ONNX_Tensor:$dY, ONNX_Tensor:$X, ONNX_Tensor:$W),
                       ConvAttrs);
  let results = (outs ONNX_OptTensor:$dX, ONNX_OptTensor:$dW, ONNX_OptTensor:$dB);
  let hasVerifier = 1;
}

def ONNX_ReluGradOp : ONNX_Op<"ReluGrad", "com.microsoft",
    "dX = dY where X > 0, else 0",
    [Pure, ONNX_InPlaceGradient, ONNX_ElementwiseGradient<0>,
     ONNX_MaskGradient, ONNX_ReadsMaskHandle]> {
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$X);
  let results = (outs ONNX_Tensor:$dX);
}

def ONNX_LeakyReluGradOp : ONNX_Op<"LeakyReluGrad", "com.microsoft",
    "dX = Y > 0 ? dY : alpha * dY",
    [Pure, ONNX_InPlaceGradient, ONNX_ElementwiseGradient<0>,
     ONNX_MaskGradient]> {
  let description = [{
    The gradient ONNX Runtime builds for LeakyRelu, from its output Y, a
    saved activation read only as Y > 0 (a 1-bit mask holds it).
  }];
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$Y,
                       DefaultValuedAttr<F32Attr, "0.01">:$alpha);
  let results = (outs ONNX_Tensor:$dX);
  let runtimeCall = "leaky_relu_grad";
}

def ONNX_DropoutGradOp : ONNX_Op<"DropoutGrad", "com.microsoft",
    "dX = dY / (1 - ratio) where the mask is true, else 0",
    [Pure, ONNX_InPlaceGradient, ONNX_ResultsLike<[0]>, ONNX_MaskGradient,
     ONNX_ReadsMaskHandle]> {
  let description = [{
    The gradient of Dropout. `ratio` and `training_mode` are Dropout's
    inputs; without training mode dX = dY. The bool mask is a saved
    activation read only as "true or not" (SavedActivationKind::ReluMask),
    so it is kept as a 1-bit mask stream.
  }];
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$mask,
                       ONNX_OptTensor:$ratio, ONNX_OptTensor:$training_mode);
  let results = (outs ONNX_Tensor:$dX);
  let hasVerifier = 1;
}

def ONNX_BatchNormInternalOp : ONNX_Op<"BatchNormInternal", "com.microsoft",
    "Batch normalization that also returns the saved mean and 1/std",
    [Pure, ONNX_InPlaceForward, ONNX_ResultsLike<[0, 3, 3, 3, 3]>]> {
  let arguments = (ins ONNX_Tensor:$X, ONNX_Tensor:$scale, ONNX_Tensor:$B,
                       ONNX_Tensor:$input_mean, ONNX_Tensor:$input_var,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9">:$momentum,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$training_mode);
  let results = (outs ONNX_Tensor:$Y, ONNX_OptTensor:$running_mean,
                      ONNX_OptTensor:$running_var, ONNX_OptTensor:$saved_mean,
                      ONNX_OptTensor:$saved_inv_std);
  let hasVerifier = 1;
}

def ONNX_BatchNormalizationGradOp : ONNX_Op<"BatchNormalizationGrad",
    "com.microsoft", "Gradients of batch normalization",
    [Pure, ONNX_InPlaceGradient, ONNX_ResultsLike<[1, 2, 2]>,
     ONNX_NormalizationGradient]> {
  let description = [{
    `variance` is ONNX Runtime's saved 1/std (BatchNormInternal's
    `saved_inv_std`). X is a saved activation (SavedActivationOpInterface);
    dscale sums dY * xhat over batch and pixels.
  }];
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$X, ONNX_Tensor:$scale,
                       ONNX_Tensor:$mean, ONNX_Tensor:$variance,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs ONNX_Tensor:$X_grad, ONNX_OptTensor:$scale_grad,
                      ONNX_OptTensor:$B_grad);
  let hasVerifier = 1;
  let runtimeCall = "batch_norm_grad";
  let extraClassDeclaration = [{
    std::optional<double> getSummedTerms(int64_t dynamicDimSize);
  }];
}

def ONNX_ScaleOp : ONNX_Op<"Scale", "com.microsoft",
    "Multiply (or divide, with scale_down) by a one-element tensor",
    [Pure, ONNX_ResultsLike<[0]>]> {
  let arguments = (ins ONNX_Tensor:$input, ONNX_Tensor:$scale,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$scale_down);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
}

def ONNX_SoftmaxCrossEntropyLossGradOp : ONNX_Op<"SoftmaxCrossEntropyLossGrad",
    "com.microsoft", "Gradient of SoftmaxCrossEntropyLoss w.r.t. the scores",
    [Pure, ONNX_ResultsLike<[1]>]> {
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$log_prob,
                       ONNX_Tensor:$label, ONNX_OptTensor:$weight,
                       ONNX_OptTensor:$bias,
                       OptionalAttr<ONNX_I64Attr>:$ignore_index,
                       ReductionAttr:$reduction);
  let results = (outs ONNX_Tensor:$d_logits);
  let hasVerifier = 1;
}

def ONNX_SoftmaxCrossEntropyLossInternalOp : ONNX_Op<
    "SoftmaxCrossEntropyLossInternal", "com.microsoft",
    "SoftmaxCrossEntropyLoss with ignore_index as an input", [Pure]> {
  let arguments = (ins ONNX_Tensor:$scores, ONNX_Tensor:$labels,
                       ONNX_OptTensor:$weights, ONNX_OptTensor:$ignore_index,
                       OptionalAttr<ONNX_I64Attr>:$output_type,
                       ReductionAttr:$reduction);
  let results = (outs ONNX_Tensor:$output, ONNX_OptTensor:$log_prob);
  let hasVerifier = 1;
}

def ONNX_SoftmaxCrossEntropyLossInternalGradOp : ONNX_Op<
    "SoftmaxCrossEntropyLossInternalGrad", "com.microsoft",
    "Gradient of SoftmaxCrossEntropyLossInternal w.r.t. the scores",
    [Pure, ONNX_ResultsLike<[1]>]> {
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$log_prob,
                       ONNX_Tensor:$label, ONNX_OptTensor:$weight,
                       ONNX_OptTensor:$ignore_index, ONNX_OptTensor:$bias,
                       OptionalAttr<ONNX_I64Attr>:$output_type,
                       ReductionAttr:$reduction);
  let results = (outs ONNX_Tensor:$d_logits);
  let hasVerifier = 1;
}

def ONNX_InPlaceAccumulatorV2Op : ONNX_Op<"InPlaceAccumulatorV2", "com.microsoft",
    "Add a gradient into its accumulation buffer, or overwrite it", []> {
  let description = [{
    Writes `accumulation_buffer + value` (or `value` where `overwrite_flag`
    is true) into the buffer. Result 0 is a one-element bool flag; result 1,
    when present, the updated buffer.
  }];
  let arguments = (ins ONNX_Tensor:$accumulation_buffer, ONNX_Tensor:$value,
                       ONNX_OptTensor:$overwrite_flag);
  let results = (outs ONNX_Tensor:$updated_flag,
                      ONNX_OptTensor:$accumulation_buffer_out);
  let hasVerifier = 1;
  let runtimeCall = "inplace_accumulator_v2";
}

def ONNX_AdamWOptimizerOp : ONNX_Op<"AdamWOptimizer", "com.microsoft",
    "AdamW step over sequences of parameters, gradients and moments", []> {
  let arguments = (ins ONNX_Tensor:$lr, ONNX_Tensor:$step,
                       ONNX_TensorOrSeq:$weights, ONNX_TensorOrSeq:$gradients,
                       ONNX_TensorOrSeq:$momentums_1,
                       ONNX_TensorOrSeq:$momentums_2,
                       ONNX_OptTensor:$update_signal,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$adam_mode,
                       DefaultValuedAttr<F32Attr, "0.9">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.999">:$beta,
                       DefaultValuedAttr<ONNX_I64Attr, "1">:$correct_bias,
                       DefaultValuedAttr<F32Attr, "1.0e-8">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.0">:$weight_decay);
  let results = (outs ONNX_Tensor:$updated_flag,
                      ONNX_OptTensorOrSeq:$updated_weights,
                      ONNX_OptTensorOrSeq:$updated_momentums_1,
                      ONNX_OptTensorOrSeq:$updated_momentums_2);
  let hasVerifier = 1;
}

def ONNX_SGDOptimizerV2Op : ONNX_Op<"SGDOptimizerV2", "com.microsoft",
    "SGD step over sequences of parameters and gradients", []> {
  let arguments = (ins ONNX_Tensor:$lr, ONNX_TensorOrSeq:$weights,
                       ONNX_TensorOrSeq:$gradients,
                       ONNX_OptTensorOrSeq:$momentums,
                       ONNX_OptTensor:$update_signal);
  let results = (outs ONNX_Tensor:$update_completed,
                      ONNX_OptTensorOrSeq:$updated_weights,
                      ONNX_OptTensorOrSeq:$updated_momentums);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// com.microsoft: transformer ops of ONNX Runtime's training graphs
//===----------------------------------------------------------------------===//

def ONNX_FusedMatMulOp : ONNX_Op<"FusedMatMul", "com.microsoft",
    "alpha * op(A) x op(B), batched, op transposing the last two dims",
    [Pure, ONNX_MatMulGradient]> {
  let description = [{
    ONNX Runtime's fusion of Transpose and MatMul; the backward of a MatMul
    is written with it, so like MatMul it reads a saved activation there
    (SavedActivationOpInterface). `transBatchA`/`transBatchB` move the
    batch dims; COMET supports only 0.
  }];
  let arguments = (ins ONNX_Tensor:$A, ONNX_Tensor:$B,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$transA,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$transB,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$transBatchA,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$transBatchB);
  let results = (outs ONNX_Tensor:$Y);
  let hasVerifier = 1;
}

def ONNX_LayerNormalizationGradOp : ONNX_Op<"LayerNormalizationGrad",
    "com.microsoft", "Gradients of layer normalization",
    [Pure, ONNX_ResultsLike<[1, 2, 2]>, ONNX_NormalizationGradient]> {
  let description = [{
    Inputs dY, the forward X, the scale, and the forward's saved mean and
    inverse standard deviation; results dX, dscale, dbias. X is a saved
    activation read through xhat = (X - mean) * inv_std_var; dscale sums
    over the rows (the dims before axis).
  }];
  let arguments = (ins ONNX_Tensor:$Y_grad, ONNX_Tensor:$X, ONNX_Tensor:$scale,
                       ONNX_Tensor:$mean, ONNX_Tensor:$inv_std_var,
                       DefaultValuedAttr<ONNX_I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<ONNX_I64Attr, "1">:$stash_type);
  let results = (outs ONNX_Tensor:$X_grad, ONNX_OptTensor:$scale_grad,
                      ONNX_OptTensor:$bias_grad);
  let hasVerifier = 1;
  let runtimeCall = "layer_norm_grad";
  let runtimeCallAttrs = ["axis", "epsilon"];
  let extraClassDeclaration = [{
    std::optional<double> getSummedTerms(int64_t dynamicDimSize);
  }];
}

def ONNX_BiasGeluOp : ONNX_Op<"BiasGelu", "com.microsoft",
    "gelu(A + B) with the exact (erf) GELU; B spans A's last dim",
    [Pure, ONNX_ResultsLike<[0]>]> {
  let arguments = (ins ONNX_Tensor:$A, ONNX_Tensor:$B);
  let results = (outs ONNX_Tensor:$C);
  let hasVerifier = 1;
  let runtimeCall = "bias_gelu";
}

def ONNX_BiasGeluGrad_dXOp : ONNX_Op<"BiasGeluGrad_dX", "com.microsoft",
    "dX = dY * gelu'(X + B)",
    [Pure, ONNX_ElementwiseGradient<0>, ONNX_ActivationGradient<"Rows">]> {
  let description = [{
    X, the forward's pre-bias input, is a saved activation
    (SavedActivationOpInterface): its error reaches the next weight
    gradient over X's rows.
  }];
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$X, ONNX_Tensor:$B);
  let results = (outs ONNX_Tensor:$dX);
  let hasVerifier = 1;
  let runtimeCall = "bias_gelu_grad_dx";
  let extraClassDeclaration = [{
    /// |gelu''| <= 2 phi(0) = sqrt(2 / pi).
    static double getCurvatureBound() { return 0.7978845608; }
  }];
}

def ONNX_GeluOp : ONNX_Op<"Gelu", "com.microsoft",
    "gelu(X) with the exact (erf) GELU",
    [Pure, ONNX_UnaryElementwise<"Float">]> {
  let description = [{
    ONNX Runtime fuses torch's exported GELU (Div, Erf, Add, Mul) into this
    op when no bias Add precedes it to make a BiasGelu, e.g. after a Gather.
  }];
  let arguments = (ins ONNX_Tensor:$X);
  let results = (outs ONNX_Tensor:$Y);
  let runtimeCall = "gelu";
}

def ONNX_GeluGradOp : ONNX_Op<"GeluGrad", "com.microsoft",
    "dX = dY * gelu'(X)",
    [Pure, ONNX_ElementwiseGradient<0>, ONNX_ActivationGradient<"Rows">]> {
  let description = [{
    X, the forward's input, is a saved activation
    (SavedActivationOpInterface), bounded as BiasGeluGrad_dX's.
  }];
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$X);
  let results = (outs ONNX_Tensor:$dX);
  let runtimeCall = "gelu_grad";
  let extraClassDeclaration = [{
    /// |gelu''| <= 2 phi(0) = sqrt(2 / pi).
    static double getCurvatureBound() { return 0.7978845608; }
  }];
}

def ONNX_QuickGeluOp : ONNX_Op<"QuickGelu", "com.microsoft",
    "Y = X * sigmoid(alpha * X)", [Pure, ONNX_UnaryElementwise<"Float">]> {
  let description = [{
    ONNX Runtime fuses `X * Sigmoid(X)` (torch's SiLU, alpha = 1) and
    `X * Sigmoid(1.702 * X)` into this op. `alpha` is any finite float
    (default 1.702, ONNX Runtime's).
  }];
  let arguments = (ins ONNX_Tensor:$X,
                       DefaultValuedAttr<F32Attr, "1.702">:$alpha);
  let results = (outs ONNX_Tensor:$Y);
  let hasVerifier = 1;
  let runtimeCall = "quick_gelu";
}

def ONNX_QuickGeluGradOp : ONNX_Op<"QuickGeluGrad", "com.microsoft",
    "dX = dY * (s + alpha * X * s * (1 - s)), s = sigmoid(alpha * X)",
    [Pure, ONNX_ElementwiseGradient<0>,
     ONNX_ActivationGradient<"BatchAndPixels">]> {
  let description = [{
    X, the forward's input, is a saved activation
    (SavedActivationOpInterface), bounded as SigmoidGrad's Y with
    |d^2(QuickGelu)/dX^2| <= |alpha| / 2 in place of |1 - 2Y| <= 1.
  }];
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$X,
                       DefaultValuedAttr<F32Attr, "1.702">:$alpha);
  let results = (outs ONNX_Tensor:$dX);
  let hasVerifier = 1;
  let runtimeCall = "quick_gelu_grad";
  let extraClassDeclaration = [{
    /// |f''| = |alpha| s (1 - s) |2 + u (1 - 2 s)| <= |alpha| / 2 for
    /// f(x) = x sigmoid(alpha x), u = alpha x, s = sigmoid(u) (at u = 0).
    double getCurvatureBound() {
      return std::abs(getAlpha().convertToDouble()) / 2;
    }
  }];
}

def ONNX_SoftmaxGrad_13Op : ONNX_Op<"SoftmaxGrad_13", "com.microsoft",
    "Gradient of Softmax (opset 13) along `axis`: Y * (dY - sum(dY * Y))",
    [Pure, ONNX_ElementwiseGradient<0>,
     DeclareOpInterfaceMethods<ONNX_SavedActivationOpInterface,
      ["getWeightGradForm", "getSummedTerms"]>]> {
  let description = [{
    Y, the forward Softmax output, is a saved activation
    (SavedActivationOpInterface).
  }];
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$Y,
                       DefaultValuedAttr<ONNX_I64Attr, "-1">:$axis);
  let results = (outs ONNX_Tensor:$dX);
  let hasVerifier = 1;
  let runtimeCall = "softmax_grad";
}

def ONNX_SliceGradOp : ONNX_Op<"SliceGrad", "com.microsoft",
    "Gradient of Slice: dY written into zeros of the input's shape", [Pure]> {
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$shape,
                       ONNX_Tensor:$starts, ONNX_Tensor:$ends,
                       ONNX_OptTensor:$axes, ONNX_OptTensor:$steps);
  let results = (outs ONNX_Tensor:$dX);
  let hasVerifier = 1;
  let runtimeCall = "slice_grad";
}

//===----------------------------------------------------------------------===//
// Sigmoid, Tanh, AveragePool and the Pad/Neg that torch exports around it,
// with their gradients (ai.onnx and com.microsoft)
//===----------------------------------------------------------------------===//

def ONNX_SigmoidOp : ONNX_Op<"Sigmoid", "", "1 / (1 + exp(-X))",
    [Pure, ONNX_UnaryElementwise<"Float">]> {
  let arguments = (ins ONNX_Tensor:$X);
  let results = (outs ONNX_Tensor:$Y);
  let runtimeCall = "sigmoid";
}

def ONNX_TanhOp : ONNX_Op<"Tanh", "", "tanh(X)",
    [Pure, ONNX_UnaryElementwise<"Float">]> {
  let arguments = (ins ONNX_Tensor:$input);
  let results = (outs ONNX_Tensor:$output);
  let runtimeCall = "tanh";
}

defvar AveragePoolAttrs = (ins AutoPad:$auto_pad,
                               DefaultValuedAttr<ONNX_I64Attr, "0">:$ceil_mode,
                               DefaultValuedAttr<ONNX_I64Attr, "0">:$count_include_pad,
                               OptionalAttr<DenseI64ArrayAttr>:$dilations,
                               DenseI64ArrayAttr:$kernel_shape,
                               OptionalAttr<DenseI64ArrayAttr>:$pads,
                               OptionalAttr<DenseI64ArrayAttr>:$strides);

def ONNX_AveragePoolOp : ONNX_Op<"AveragePool", "", "N-d average pooling",
                                 [Pure]> {
  let description = [{
    `count_include_pad` 1 divides every window by the kernel area, 0 by the
    number of its elements inside the input.
  }];
  let arguments = !con((ins ONNX_Tensor:$X), AveragePoolAttrs);
  let results = (outs ONNX_Tensor:$Y);
  let hasVerifier = 1;
}

def ONNX_PadOp : ONNX_Op<"Pad", "",
    "Pad (or, with negative pads, crop) each dim of `data`", [Pure]> {
  let description = [{
    `pads` is 1-d i64, the begin pads of the (`axes`) dims then their end
    pads. torch exports `nn.AvgPool2d` with `count_include_pad` as a Pad
    before an unpadded AveragePool; its gradient is a Pad by the negated
    pads.
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_Tensor:$pads,
                       ONNX_OptTensor:$constant_value, ONNX_OptTensor:$axes,
                       DefaultValuedStrAttr<StrAttr, "constant">:$mode);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
}

def ONNX_NegOp : ONNX_Op<"Neg", "", "-X",
    [Pure, ONNX_UnaryElementwise<"FloatOrSignedInt">]> {
  let arguments = (ins ONNX_Tensor:$X);
  let results = (outs ONNX_Tensor:$Y);
}

def ONNX_AveragePoolGradOp : ONNX_Op<"AveragePoolGrad", "",
    "Gradient of AveragePool: each dY spread evenly over its window", [Pure]> {
  let description = [{
    ONNX Runtime registers it in the default domain. It reads no
    activation, only dY; dX has the forward input's shape, which the file's
    value_info gives.
  }];
  let arguments = !con((ins ONNX_Tensor:$dY), AveragePoolAttrs);
  let results = (outs ONNX_Tensor:$dX);
  let hasVerifier = 1;
}

// dX = dY * f'(Y) from the forward output Y, dense (no zeros); `curvature`
// bounds |d f'(Y) / dY| (docs/error-bounds.md, "Sigmoid, tanh and
// QuickGelu").
class ONNX_ActivationGradOp<string mnemonic, string text, string curvature>
    : ONNX_Op<mnemonic, "com.microsoft", text,
              [Pure, ONNX_ElementwiseGradient<1>,
               ONNX_ActivationGradient<"BatchAndPixels", /*dense=*/1>]> {
  let description = [{
    Y, the forward output, is a saved activation
    (SavedActivationOpInterface).
  }];
  let arguments = (ins ONNX_Tensor:$dY, ONNX_Tensor:$Y);
  let results = (outs ONNX_Tensor:$dX);
  let extraClassDeclaration = [{
    static double getCurvatureBound() { return }] # curvature # [{; }
  }];
}
// |d(Y (1 - Y))/dY| = |1 - 2Y| <= 1.
def ONNX_SigmoidGradOp : ONNX_ActivationGradOp<"SigmoidGrad",
                                               "dX = dY * Y * (1 - Y)", "1.0"> {
  let runtimeCall = "sigmoid_grad";
}
// |d(1 - Y^2)/dY| = |2Y| <= 2.
def ONNX_TanhGradOp : ONNX_ActivationGradOp<"TanhGrad", "dX = dY * (1 - Y^2)",
                                            "2.0"> {
  let runtimeCall = "tanh_grad";
}

//===----------------------------------------------------------------------===//
// Exported eval graphs (decomposed LayerNorm and GELU, attention shape
// arithmetic) and embedding models
//===----------------------------------------------------------------------===//

def ONNX_PowOp : ONNX_Op<"Pow", "", "X ^ Y with numpy broadcasting", [Pure]> {
  let arguments = (ins ONNX_Tensor:$X, ONNX_Tensor:$Y);
  let results = (outs ONNX_Tensor:$Z);
  let hasVerifier = 1;
  let runtimeCall = "pow";
}

def ONNX_SqrtOp : ONNX_Op<"Sqrt", "", "Element-wise square root",
    [Pure, ONNX_UnaryElementwise<"Float">]> {
  let arguments = (ins ONNX_Tensor:$X);
  let results = (outs ONNX_Tensor:$Y);
  let runtimeCall = "sqrt";
}

def ONNX_ErfOp : ONNX_Op<"Erf", "", "Element-wise error function",
    [Pure, ONNX_UnaryElementwise<"Float">]> {
  let arguments = (ins ONNX_Tensor:$input);
  let results = (outs ONNX_Tensor:$output);
  let runtimeCall = "erf";
}

def ONNX_ExpOp : ONNX_Op<"Exp", "", "Element-wise exponential",
    [Pure, ONNX_UnaryElementwise<"Float">]> {
  let description = [{
    ONNX Runtime builds Erf's gradient from Mul, Neg and Exp: a GELU that
    it does not fuse (one after a Mul) trains through it.
  }];
  let arguments = (ins ONNX_Tensor:$input);
  let results = (outs ONNX_Tensor:$output);
  let runtimeCall = "exp";
}

def ONNX_ReciprocalOp : ONNX_Op<"Reciprocal", "", "Element-wise 1 / X",
                                [Pure, ONNX_UnaryElementwise<"Float">]> {
  let description = [{
    `1 / sqrt(head_dim)` of an attention as torch exports it for eval.
  }];
  let arguments = (ins ONNX_Tensor:$X);
  let results = (outs ONNX_Tensor:$Y);
  let runtimeCall = "reciprocal";
}

def ONNX_RangeOp : ONNX_Op<"Range", "",
    "start, start + delta, ... below limit (above it for a negative delta)",
    [Pure]> {
  let description = [{
    `start`, `limit` and `delta` are scalars of the result's element type;
    the result has `max(ceil((limit - start) / delta), 0)` elements (the
    positions `torch.arange` gives a GPT's position embedding). Inference
    and the lowering fold integer ranges of constants, which every Range of
    an exported graph is once shapes are static.
  }];
  let arguments = (ins ONNX_Tensor:$start, ONNX_Tensor:$limit,
                       ONNX_Tensor:$delta);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
}

def ONNX_WhereOp : ONNX_Op<"Where", "",
    "condition ? X : Y, the three broadcast together numpy-style", [Pure]> {
  let description = [{
    A causal attention mask as torch exports `masked_fill` (Where(mask == 0,
    -inf, scores)), and its gradient Where(condition, 0, dY) that ONNX
    Runtime builds.
  }];
  let arguments = (ins ONNX_Tensor:$condition, ONNX_Tensor:$X,
                       ONNX_Tensor:$Y);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
  let runtimeCall = "where";
}

def ONNX_SplitOp : ONNX_Op<"Split", "",
    "Split along `axis` into one piece per result", [Pure]> {
  let description = [{
    The lengths are the 1-d i64 input `split` (opset 13+), or, without it,
    equal parts: `num_outputs` (opset 18) pieces of ceil(dim / num_outputs)
    with the last one smaller, or (opset 13-17) the dim divided evenly by the
    number of results. torch exports `qkv.split(d, dim=2)` with a constant
    `split`. `getSplitLengths()` gives the lengths when they are known.
  }];
  let arguments = (ins ONNX_Tensor:$input, ONNX_OptTensor:$split,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$axis,
                       OptionalAttr<ONNX_I64Attr>:$num_outputs);
  let results = (outs Variadic<ONNX_Tensor>:$outputs);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The length of each piece along `axis`: the constant `split`, or the
    /// equal parts of a static dim; nullopt when unknown (a `?` dim, a
    /// split that is no constant) or inconsistent (the verifier's to say).
    std::optional<::llvm::SmallVector<int64_t>> getSplitLengths();
  }];
}

def ONNX_GatherOp : ONNX_Op<"Gather", "",
    "Entries of data along `axis` at integer indices", [Pure]> {
  let description = [{
    The result's dims are data's before `axis`, then indices' dims, then
    data's after `axis` (rank r + q - 1; a scalar index drops the dim).
    A negative index counts from the end of the axis.
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_Tensor:$indices,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$axis);
  let results = (outs ONNX_Tensor:$output);
  let hasVerifier = 1;
}

def ONNX_ConcatOp : ONNX_Op<"Concat", "",
    "Join tensors of one rank along `axis`", [Pure]> {
  let arguments = (ins Variadic<ONNX_Tensor>:$inputs, ONNX_I64Attr:$axis);
  let results = (outs ONNX_Tensor:$concat_result);
  let hasVerifier = 1;
}

def ONNX_GatherGradOp : ONNX_Op<"GatherGrad", "com.microsoft",
    "Gradient of Gather: dY added into zeros of `shape` at the indices",
    [Pure]> {
  let description = [{
    `shape` is the 1-d i64 shape of Gather's data; repeated indices add up.
  }];
  let arguments = (ins ONNX_Tensor:$shape, ONNX_Tensor:$indices,
                       ONNX_Tensor:$dY,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$axis);
  let results = (outs ONNX_Tensor:$dX);
  let hasVerifier = 1;
}

def ONNX_ConcatTrainingOp : ONNX_Op<"ConcatTraining", "com.microsoft",
    "Concat that also gives each input's length along `axis`", [Pure]> {
  let description = [{
    `per_input_length` (1-d i64, one entry per input) is what
    `onnx.SplitTraining` splits the gradient by.
  }];
  let arguments = (ins Variadic<ONNX_Tensor>:$inputs, ONNX_I64Attr:$axis);
  let results = (outs ONNX_Tensor:$concat_result,
                      ONNX_OptTensor:$per_input_length);
  let hasVerifier = 1;
}

def ONNX_SplitTrainingOp : ONNX_Op<"SplitTraining", "com.microsoft",
    "Split along `axis` into pieces of the 1-d i64 lengths `split`", [Pure]> {
  let arguments = (ins ONNX_Tensor:$input, ONNX_Tensor:$split,
                       DefaultValuedAttr<ONNX_I64Attr, "0">:$axis);
  let results = (outs Variadic<ONNX_Tensor>:$outputs);
  let hasVerifier = 1;
}

#endif // COMET_DIALECT_ONNX_IR_ONNXOPS_TD
