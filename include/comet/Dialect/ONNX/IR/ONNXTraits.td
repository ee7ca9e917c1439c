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

#endif // COMET_DIALECT_ONNX_IR_ONNXTRAITS_TD
