//===- ONNXTraits.td - Op families of the onnx dialect ----*- tablegen -*-===//
//
// The C++ traits are in ONNXTraits.h. A family trait (an ONNX_InferenceTrait)
// verifies what the family's ops share and gives the op its result types;
// ONNX_Op declares inferResultTypes on the ops without one.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_DIALECT_ONNX_IR_ONNXTRAITS_TD
#define COMET_DIALECT_ONNX_IR_ONNXTRAITS_TD

include "mlir/IR/OpBase.td"

// A trait that implements TypeInferenceOpInterface's inferResultTypes.
class ONNX_InferenceTrait;

class ONNX_ParamTrait<string name, string params>
    : ParamNativeOpTrait<name, params>, ONNX_InferenceTrait {
  let cppNamespace = "::comet::onnx";
}

// Y = f(X) elementwise, X's shape and element type; `kind` is the element
// kind X may have: "Float", "FloatOrSignedInt" or "Any".
class ONNX_UnaryElementwise<string kind = "Float">
    : ONNX_ParamTrait<"UnaryElementwise", "::comet::onnx::ElementKind::" # kind>;

// (dY, saved float activation, ...) -> dX, all of one shape and element
// type; dX's inferred type is operand `like`'s.
class ONNX_ElementwiseGradient<int like = 0>
    : ONNX_ParamTrait<"ElementwiseGradient", !cast<string>(like)>;

// numpy broadcasting of all operands into the result, whose element type is
// the operands' ("Same") or i1 ("Bool").
class ONNX_Broadcast<string result = "Same">
    : ONNX_ParamTrait<"Broadcast", "::comet::onnx::BroadcastResult::" # result>;

// Result i has the type of operand operands[i].
class ONNX_ResultsLike<list<int> operands>
    : ONNX_ParamTrait<"ResultsLike",
                      !interleave(!foreach(i, operands, !cast<string>(i)),
                                  ", ")>;

// A reduction of operand 0 over its `axes` (an operand or an attribute)
// with `keepdims` (and `noop_with_empty_axes` where the op has it).
def ONNX_Reduction : NativeOpTrait<"Reduction">, ONNX_InferenceTrait {
  let cppNamespace = "::comet::onnx";
}

//===----------------------------------------------------------------------===//
// Saved-activation families (ONNXSavedActivations.h). Each implements
// SavedActivationOpInterface: an op that lists one lists no interface.
//===----------------------------------------------------------------------===//

class ONNX_SavedActivationTrait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::comet::onnx";
}

// Operand 1 is read only as "> 0": a 1-bit mask holds it (ReluGrad, ...).
def ONNX_MaskGradient : ONNX_SavedActivationTrait<"MaskGradient">;

// The lowering reads the mask operand from a mask handle (not a trait of
// the interface; ActivationLiveness fuses the decompress only for these).
def ONNX_ReadsMaskHandle : NativeOpTrait<"ReadsMaskHandle"> {
  let cppNamespace = "::comet::onnx";
}

// Gemm, MatMul, FusedMatMul: A or B is a saved activation in the backward.
def ONNX_MatMulGradient : ONNX_SavedActivationTrait<"MatMulGradient">;

// dX = dY * f'(operand 1): the op defines getCurvatureBound() (max |f''|);
// `terms` is "BatchAndPixels" or "Rows"; `dense` says the saved value has
// no zeros.
class ONNX_ActivationGradient<string terms, bit dense = 0>
    : ParamNativeOpTrait<"ActivationGradient",
                         "::comet::onnx::GradientTerms::" # terms # ", " #
                         !if(dense, "true", "false")> {
  let cppNamespace = "::comet::onnx";
}

// BatchNormalizationGrad, LayerNormalizationGrad: X read through xhat; the
// op defines getSummedTerms.
def ONNX_NormalizationGradient
    : ONNX_SavedActivationTrait<"NormalizationGradient">;

#endif // COMET_DIALECT_ONNX_IR_ONNXTRAITS_TD
