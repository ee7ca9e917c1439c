//===- ONNXBase.td - The onnx dialect and its types -------*- tablegen -*-===//
#ifndef COMET_DIALECT_ONNX_IR_ONNXBASE_TD
#define COMET_DIALECT_ONNX_IR_ONNXBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "comet/Dialect/ONNX/IR/ONNXInterfaces.td"
include "comet/Dialect/ONNX/IR/ONNXTraits.td"

def ONNX_Dialect : Dialect {
  let name = "onnx";
  let cppNamespace = "::comet::onnx";
  let summary = "ONNX and ONNX Runtime training graphs, one op per op_type";
  let description = [{
    The `onnx` dialect is what `comet-opt model.onnx` imports an ONNX Runtime
    training graph into. Each ONNX node becomes one op named `onnx.<op_type>`
    (`onnx.Conv`, `onnx.ConvGrad`, `onnx.InPlaceAccumulatorV2`, ...). Ops of
    the default domain (`ai.onnx`, written `""` in files) and of ONNX Runtime's
    contrib domain (`com.microsoft`) share the dialect; every op's summary
    starts with its domain, and `comet::onnx::lookupOpInfo` gives it to code.

    Operands and results keep ONNX's positions. An absent optional input
    (an empty name in the file) is the `none` value of `onnx.NoValue`; an
    absent optional output has type `none`. ONNX attributes are typed MLIR
    attributes with their ONNX names: `INT` is `i64`, `FLOAT` is `f32`,
    `INTS` is `array<i64: ...>`, `FLOATS` is `array<f32: ...>`, `STRING` a
    string, `TENSOR` a `dense_resource` elements attribute.

    Graph initializers become `onnx.Initializer` ops whose data lives in the
    file's resource section as `dense_resource` blobs.

    Result types come from the file's value_info; where it has none, from
    the op's own type inference (`TypeInferenceOpInterface`).
  }];
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    /// The ONNX domain of the dialect's default ops, as written in files.
    static constexpr ::llvm::StringLiteral kDefaultDomain = "";
    static constexpr ::llvm::StringLiteral kMicrosoftDomain = "com.microsoft";
  }];
}

def ONNX_SeqType : TypeDef<ONNX_Dialect, "Seq"> {
  let mnemonic = "seq";
  let summary = "An ONNX sequence of tensors";
  let description = [{
    ONNX `sequence_type`, e.g. the parameter lists that ONNX Runtime's
    optimizer ops take: `!onnx.seq<tensor<*xf32>>`.
  }];
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

def ONNX_PendingType : TypeDef<ONNX_Dialect, "Pending"> {
  let mnemonic = "pending";
  let summary = "The element type of a result the importer has not typed yet";
  let description = [{
    While the importer checks a node, a result that the file gives no type
    is a `tensor<*x!onnx.pending>`: every ONNX result constraint accepts it,
    and the verifiers' shape and element-type checks skip it, so the whole
    verifier can run before type inference. Inference then replaces it; no
    verified module holds one.
  }];
}

// ONNX INT attributes are signed; I64Attr's getter would zero-extend.
def ONNX_I64Attr : SignlessIntegerAttrBase<I64, "64-bit integer attribute"> {
  let returnType = "int64_t";
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

// Operand and result constraints. An ONNX_OptionalConstraint accepts `none`,
// the value of an input or output that a node leaves out.
class ONNX_OptionalConstraint;
def ONNX_Tensor : AnyTypeOf<[AnyTensor], "tensor">;
def ONNX_OptTensor : AnyTypeOf<[AnyTensor, NoneType], "tensor or none">,
                     ONNX_OptionalConstraint;
def ONNX_TensorOrSeq : AnyTypeOf<[AnyTensor, ONNX_SeqType], "tensor or sequence">;
def ONNX_OptTensorOrSeq : AnyTypeOf<[AnyTensor, ONNX_SeqType, NoneType],
                                    "tensor, sequence or none">,
                          ONNX_OptionalConstraint;

// An op of ONNX domain `domain` ("" is ai.onnx) whose mnemonic is its ONNX
// op_type. The summary starts with the domain so the generated docs show it.
// comet-tblgen -gen-onnx-op-table makes the importer's table
// (comet::onnx::lookupOpInfo) from these definitions: the op_type, the
// domain, and the node arity and names of the ODS operands and results. A
// node may leave out trailing ONNX_Opt* values; a Variadic one takes one or
// more.
//
// Result types: an op with a family trait (ONNX_InferenceTrait,
// ONNXTraits.td) has its inferResultTypes from the trait; ONNX_Op declares
// it on every other op, whose C++ defines it (ONNXTypeInference.cpp).
class ONNX_Op<string mnemonic, string domain, string text,
              list<Trait> traits = []>
    : Op<ONNX_Dialect, mnemonic,
         !listconcat(traits,
           !if(!empty(!filter(t, traits, !isa<ONNX_InferenceTrait>(t))),
               [DeclareOpInterfaceMethods<ONNX_TypeInferenceOpInterface>],
               [ONNX_TypeInferenceOpInterface]))> {
  assert !le(!size(!filter(t, traits, !isa<ONNX_InferenceTrait>(t))), 1),
         mnemonic # ": an op has one family trait (ONNX_InferenceTrait) "
                  # "at most";
  string onnxOpType = mnemonic;
  string onnxDomain = domain;
  string onnxSummary = text;
  // The runtime function (abi.def) the op lowers to, when its lowering is
  // that one call with the op's inputs, then its outputs, then its
  // attributes as i64 or f32 scalars (abi.def's order): comet-tblgen
  // -gen-onnx-runtime-calls generates the lowering pattern, and the build
  // checks the arguments against abi.def. Empty: a hand-written pattern
  // lowers the op (lib/Conversion/CometToRuntime).
  string runtimeCall = "";
  // The attributes the call takes, in its order; unset: all of the op's.
  list<string> runtimeCallAttrs = ?;
  let summary = "[" # !if(!eq(domain, ""), "ai.onnx", domain) # "] " # text;
  // One generic form for all: ONNX ops are many and regular.
  let assemblyFormat = [{
    `(` operands `)` attr-dict `:` functional-type(operands, results)
  }];
}

#endif // COMET_DIALECT_ONNX_IR_ONNXBASE_TD
