//===- CometBase.td - The comet dialect and its enums ------*- tablegen -*-===//
#ifndef COMET_DIALECT_COMET_IR_COMETBASE_TD
#define COMET_DIALECT_COMET_IR_COMETBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Comet_Dialect : Dialect {
  let name = "comet";
  let cppNamespace = "::comet";
  let summary = "Tensors kept in error-bounded compressed form";
  let description = [{
    The `comet` dialect describes activations that a training graph keeps in
    compressed form between the forward pass that produces them and the
    backward pass that reads them. A compressed value has its own type,
    `!comet.compressed<tensor<...>, codec>`, so that no op can read it as a
    tensor by mistake: the only way back is `comet.decompress`.

    Lossy codecs carry a `#comet.bound`: the absolute error bound, and a
    *slot*, the id of the run-time cell that holds the bound in force. The
    runtime's tuner re-tunes a slot while training; the compiler only writes
    its initial value.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // comet.tune, comet.observe, comet.sites and comet.budget carry typed
  // attributes.
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// On a lossy comet.compress: its weight-gradient consumers, an array
    /// of #comet.consumer.
    static constexpr ::llvm::StringLiteral kTuneAttrName = "comet.tune";
    /// On a consumer: the statistics it feeds, an array of #comet.observe.
    static constexpr ::llvm::StringLiteral kObserveAttrName = "comet.observe";
    /// On a lowered function: its compress sites, an array of #comet.site.
    static constexpr ::llvm::StringLiteral kSitesAttrName = "comet.sites";
    /// On a function compressed under policy=budget: the budget, the
    /// predicted peak, the assumed sz ratio, how many values were compressed
    /// and the names of the candidates left raw.
    static constexpr ::llvm::StringLiteral kBudgetAttrName = "comet.budget";
    /// On a function whose step applies the optimizer
    /// (comet-fuse-optimizer): the kernel's kind, a string.
    static constexpr ::llvm::StringLiteral kFusedOptimizerAttrName =
        "comet.fused_optimizer";
    /// On an argument of such a function: its role in the update, a
    /// string: weight, state0, state1, lr or step.
    static constexpr ::llvm::StringLiteral kOptimizerRoleAttrName =
        "comet.optimizer";
    /// On a state argument: the parameter it belongs to, a string.
    static constexpr ::llvm::StringLiteral kOptimizerParamAttrName =
        "comet.optimizer_param";
  }];
}

// The runtime's numbering (comet_rt_codec in comet/runtime/codec.h);
// CometDialect.cpp checks it with static_asserts.
def Comet_CodecRaw : I32EnumAttrCase<"raw", 0>;
def Comet_CodecSz : I32EnumAttrCase<"sz", 1>;
def Comet_CodecMask : I32EnumAttrCase<"mask", 2>;
def Comet_Codec : I32EnumAttr<"Codec", "activation codec", [
    Comet_CodecSz, Comet_CodecMask, Comet_CodecRaw]> {
  let cppNamespace = "::comet";
  let genSpecializedAttr = 0;
  let description = [{
    - `sz`: lossy, error-bounded and zero-preserving (prediction, linear
      quantization, fixed-length block packing). Floating-point tensors only.
    - `mask`: lossless for consumers that read only `x > 0` (ReluGrad); one bit
      per element. Decompression yields 1 where x > 0 and 0 elsewhere.
    - `raw`: an uncompressed copy; useful as a baseline.
  }];
}

def Comet_WeightGradConv : I32EnumAttrCase<"conv", 0>;
def Comet_WeightGradGemm : I32EnumAttrCase<"gemm", 1>;
def Comet_WeightGradBatchNorm : I32EnumAttrCase<"batchnorm", 2>;
def Comet_WeightGradKind : I32EnumAttr<"WeightGradKind",
    "form of a weight gradient that reads a compressed activation", [
    Comet_WeightGradConv, Comet_WeightGradGemm, Comet_WeightGradBatchNorm]> {
  let cppNamespace = "::comet";
  let genSpecializedAttr = 0;
  let description = [{
    Which bound rule applies to a consumer (docs/error-bounds.md):
    - `conv`: a ConvGrad's dW, summed over batch and output pixels;
    - `gemm`: a Gemm or MatMul's dW, summed over the contraction dimension;
    - `batchnorm`: a BatchNormalizationGrad's dscale, summed over batch and
      pixels, the error scaled by 1/std.
  }];
}

class Comet_Op<string mnemonic, list<Trait> traits = []>
    : Op<Comet_Dialect, mnemonic, traits>;

#endif // COMET_DIALECT_COMET_IR_COMETBASE_TD
