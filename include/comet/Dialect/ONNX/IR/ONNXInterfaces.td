//===- ONNXInterfaces.td - onnx op interfaces --------------*- tablegen -*-===//
#ifndef COMET_DIALECT_ONNX_IR_ONNXINTERFACES_TD
#define COMET_DIALECT_ONNX_IR_ONNXINTERFACES_TD

include "mlir/IR/OpBase.td"

def ONNX_TypeInferenceOpInterface : OpInterface<"TypeInferenceOpInterface"> {
  let cppNamespace = "::comet::onnx";
  let description = [{
    Result types from operand types, attributes and constant operands, for
    the values that a file gives no value_info. A result that cannot be
    inferred at all is a null type; a shape that cannot be inferred is
    unranked or has `?` dims.
  }];
  let methods = [
    InterfaceMethod<[{
        Infers one type per result (null where unknown). Call it through
        `inferVerifiedResultTypes`: it may rely on everything the op's
        verifier checks of its operands and attributes (a `perm` is a
        permutation of the data's rank, an axis is in range), and files are
        untrusted.
      }],
      "::mlir::LogicalResult", "inferResultTypes",
      (ins "::llvm::SmallVectorImpl<::mlir::Type> &":$types)>
  ];
}

def ONNX_SavedActivationOpInterface
    : OpInterface<"SavedActivationOpInterface"> {
  let cppNamespace = "::comet::onnx";
  let description = [{
    A backward op that reads activations the forward pass saved: which
    operands it reads that way and how, and what an error-bound rule needs
    to know about the weight gradient it forms from them. The liveness
    analysis classifies uses with it and compress-activations derives bounds
    and the tuner's observation points from it, so neither names op types
    or operand positions.
  }];
  let methods = [
    InterfaceMethod<[{
        How operand `operandNumber` is read as a saved activation, or
        nullopt when that operand is no saved activation (dY, weights).
      }],
      "std::optional<::comet::onnx::SavedActivationKind>",
      "getSavedActivationKind", (ins "unsigned":$operandNumber)>,
    InterfaceMethod<[{
        Whether the op reads saved activations only when it runs in the
        backward pass, computing a gradient from a non-gradient operand.
        ONNX Runtime writes the backward of Gemm and MatMul as Gemm and
        MatMul ops, so their forward uses are no saved-activation reads.
      }],
      "bool", "readsSavedActivationsOnlyInBackward", (ins), [{}],
      [{ return false; }]>,
    InterfaceMethod<[{
        The form of the weight gradient the op computes from a saved
        activation, which picks the bound rule; nullopt when it forms none
        (ReluGrad, MaxPoolGrad).
      }],
      "std::optional<::comet::onnx::WeightGradForm>", "getWeightGradForm",
      (ins), [{}], [{ return std::nullopt; }]>,
    InterfaceMethod<[{
        The result that holds the weight gradient (the one that reaches the
        parameter's accumulation buffer), or nullopt.
      }],
      "std::optional<unsigned>", "getWeightGradResult", (ins), [{}],
      [{ return std::nullopt; }]>,
    InterfaceMethod<[{
        The operand holding the incoming gradient dY when operand
        `activationOperand` is the saved activation.
      }],
      "unsigned", "getOutputGradOperand", (ins "unsigned":$activationOperand),
      [{}], [{ return 0; }]>,
    InterfaceMethod<[{
        The operand holding the per-channel 1/std by which an error in the
        activation reaches the weight gradient, or nullopt.
      }],
      "std::optional<unsigned>", "getInvStdOperand", (ins), [{}],
      [{ return std::nullopt; }]>,
    InterfaceMethod<[{
        N, the number of terms summed per weight-gradient element, each
        dynamic dimension taking `dynamicDimSize`; nullopt when the operand
        shapes do not tell.
      }],
      "std::optional<double>", "getSummedTerms",
      (ins "int64_t":$dynamicDimSize), [{}], [{ return std::nullopt; }]>,
    InterfaceMethod<[{
        Elements of the kernel window (1 for ops without one): with the
        stride product it gives the reuse of each activation element.
      }],
      "double", "getKernelArea", (ins), [{}], [{ return 1; }]>,
    InterfaceMethod<"Product of the window strides (1 without a window).",
      "double", "getStrideProduct", (ins), [{}], [{ return 1; }]>,
    InterfaceMethod<[{
        Whether the saved activation has (almost) no zeros whatever the data,
        so that the fraction R of non-zero elements is 1, not a prior
        (a sigmoid or tanh output).
      }],
      "bool", "hasDenseSavedActivation", (ins), [{}], [{ return false; }]>,
  ];
}

#endif // COMET_DIALECT_ONNX_IR_ONNXINTERFACES_TD
