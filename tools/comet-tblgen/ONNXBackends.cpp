//===- ONNXBackends.cpp - TableGen backends for the onnx dialect ----------===//
//
// The backends read the ops derived from ONNX_Op (ONNXBase.td): its
// onnxOpType and onnxDomain fields, its ODS operands, results and
// attributes, and its runtimeCall.
//
//===----------------------------------------------------------------------===//
#include "ONNXBackends.h"

#include "mlir/TableGen/Argument.h"
#include "mlir/TableGen/Attribute.h"
#include "mlir/TableGen/Operator.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/TableGenBackend.h"

using namespace llvm;
using mlir::tblgen::NamedAttribute;
using mlir::tblgen::NamedTypeConstraint;
using mlir::tblgen::Operator;

namespace {

/// The ops of the table, sorted by op_type.
std::vector<const Record *> onnxOps(const RecordKeeper &records) {
  std::vector<const Record *> defs(records.getAllDerivedDefinitions("ONNX_Op"));
  llvm::sort(defs, [](const Record *a, const Record *b) {
    return a->getValueAsString("onnxOpType") <
           b->getValueAsString("onnxOpType");
  });
  return defs;
}

/// An operand or result that a node may leave out (its constraint accepts
/// `none`): ONNX_OptTensor and its kin derive from ONNX_OptionalConstraint.
bool isOptional(const NamedTypeConstraint &v) {
  return v.constraint.getDef().isSubClassOf("ONNX_OptionalConstraint");
}

/// Node arity from an ODS operand or result list: a node may leave out the
/// optional values after its last required one; a variadic value counts as
/// one required and makes the list unbounded (~0u).
struct Arity {
  unsigned min = 0, max = 0;
};

Arity arityOf(const Operator &op, ArrayRef<NamedTypeConstraint> values,
              StringRef what) {
  Arity a;
  bool variadic = false;
  for (auto [i, v] : llvm::enumerate(values)) {
    if (v.isOptional() || v.isVariadicOfVariadic())
      PrintFatalError(op.getLoc(),
                      op.getOperationName() + ": " + what + " '" + v.name +
                          "' uses an ODS form the importer does not map "
                          "(use ONNX_Opt* for an optional ONNX value)");
    if (v.isVariadic()) {
      if (variadic)
        PrintFatalError(op.getLoc(), op.getOperationName() +
                                         ": more than one variadic " + what);
      variadic = true;
      a.min = i + 1;
    } else if (!isOptional(v)) {
      a.min = i + 1;
    }
  }
  a.max = variadic ? ~0u : values.size();
  return a;
}

std::string maxString(unsigned n) {
  return n == ~0u ? std::string("kVariadic") : std::to_string(n);
}

/// A C++ string literal of `s`.
std::string quoted(StringRef s) {
  std::string out = "\"";
  llvm::raw_string_ostream os(out);
  os.write_escaped(s);
  return out + "\"";
}

/// The ODS op's own summary text, without the "[domain] " prefix ONNX_Op
/// puts before it for the generated dialect docs.
StringRef plainSummary(const Record &def) {
  return def.getValueAsString("onnxSummary");
}

} // namespace

bool comet::tblgen::emitONNXOpTable(const RecordKeeper &records,
                                    raw_ostream &os) {
  emitSourceFileHeader("The onnx dialect's import table (comet::onnx::OpInfo)",
                       os, records);
  std::vector<const Record *> defs = onnxOps(records);
  std::string table;
  raw_string_ostream entries(table);
  StringRef previous;
  for (const Record *def : defs) {
    Operator op(def);
    StringRef opType = def->getValueAsString("onnxOpType");
    if (op.getOperationName() != ("onnx." + opType).str())
      PrintFatalError(def->getLoc(),
                      op.getOperationName() +
                          ": the importer creates onnx.<op_type>; the "
                          "mnemonic must be the ONNX op_type '" +
                          opType + "'");
    if (opType == previous)
      PrintFatalError(def->getLoc(), "op_type '" + opType + "' twice");
    previous = opType;
    SmallVector<NamedTypeConstraint> operands(op.getOperands()),
        results(op.getResults());
    Arity in = arityOf(op, operands, "operand"),
          out = arityOf(op, results, "result");
    // A node has at least one output even where all are optional (ConvGrad).
    out.min = std::max(out.min, 1u);
    std::string id = def->getName().str();
    auto names = [&](ArrayRef<NamedTypeConstraint> values, StringRef suffix) {
      if (values.empty())
        return std::string("{}");
      os << "static constexpr ::llvm::StringLiteral " << id << suffix
         << "[] = {";
      for (auto [i, v] : llvm::enumerate(values))
        os << (i ? ", " : "") << quoted(v.name);
      os << "};\n";
      return id + suffix.str();
    };
    std::string inputs = names(operands, "Inputs"),
                outputs = names(results, "Outputs");
    entries << "    {" << quoted(opType) << ", "
            << quoted(def->getValueAsString("onnxDomain")) << ", " << in.min
            << ", " << maxString(in.max) << ", " << out.min << ", "
            << maxString(out.max) << ", " << inputs << ", " << outputs << ", "
            << quoted(plainSummary(*def)) << "},\n";
  }
  os << "\n// Sorted by op_type (lookupOpInfo searches it).\n"
     << "static const ::comet::onnx::OpInfo kOpInfos[] = {\n"
     << table << "};\n";
  return false;
}

//===----------------------------------------------------------------------===//
// -gen-onnx-runtime-calls
//===----------------------------------------------------------------------===//

namespace {

/// How an attribute becomes a scalar argument of its runtime function.
struct ScalarArg {
  const char *kind;    ///< rtabi::Kind enumerator
  const char *builder; ///< RuntimeLowering method
  const char *convert; ///< applied to the getter's value
};

std::optional<ScalarArg> scalarArg(const mlir::tblgen::Attribute &attr) {
  if (attr.isOptional())
    return std::nullopt;
  StringRef ret = attr.getReturnType().trim();
  if (ret == "::llvm::APFloat")
    return ScalarArg{"f32", "f32", ".convertToFloat()"};
  if (ret == "int64_t")
    return ScalarArg{"i64", "i64", ""};
  return std::nullopt;
}

} // namespace

bool comet::tblgen::emitONNXRuntimeCalls(const RecordKeeper &records,
                                         raw_ostream &os) {
  emitSourceFileHeader("The onnx ops that lower to one runtime call", os,
                       records);
  SmallVector<std::string> classes;
  os << "#ifdef GEN_ONNX_RUNTIME_CALLS\n#undef GEN_ONNX_RUNTIME_CALLS\n\n";
  for (const Record *def : onnxOps(records)) {
    StringRef fn = def->getValueAsString("runtimeCall");
    if (fn.empty())
      continue;
    Operator op(def);
    std::string cls = op.getQualCppClassName();
    std::string name = op.getOperationName();
    auto fail = [&](const Twine &why) {
      PrintFatalError(def->getLoc(),
                      name + ": runtimeCall '" + fn + "': " + why +
                          "; write a lowering pattern for it instead");
    };
    if (op.isVariadic())
      fail("variadic operands or results have no fixed argument position");
    // Arguments as abi.def orders them: the inputs, the outputs, then the
    // attributes in the op's order, each with the kind it must have.
    SmallVector<std::pair<std::string, std::string>> args; // {expr, check}
    for (int i = 0, e = op.getNumOperands(); i < e; ++i)
      args.push_back(
          {"rt.operand(op->getOperand(" + std::to_string(i) + "))", "tensor"});
    for (int i = 0, e = op.getNumResults(); i < e; ++i)
      args.push_back(
          {"rt.result(op->getResult(" + std::to_string(i) + "))", "tensor"});
    // The attributes: all of them in the op's order, or those that
    // runtimeCallAttrs names, in its order.
    SmallVector<const NamedAttribute *> attrs;
    if (def->isValueUnset("runtimeCallAttrs")) {
      for (const NamedAttribute &a : op.getAttributes())
        attrs.push_back(&a);
    } else {
      for (StringRef attrName :
           def->getValueAsListOfStrings("runtimeCallAttrs")) {
        const NamedAttribute *a =
            llvm::find_if(op.getAttributes(), [&](const NamedAttribute &x) {
              return x.name == attrName;
            });
        if (a == op.getAttributes().end())
          fail("runtimeCallAttrs names '" + attrName +
               "', which is no attribute of the op");
        attrs.push_back(a);
      }
    }
    for (const NamedAttribute *ap : attrs) {
      const NamedAttribute &a = *ap;
      std::optional<ScalarArg> s = scalarArg(a.attr);
      if (!s)
        fail("attribute '" + a.name + "' (" + a.attr.getReturnType() +
             ") is no i64 or f32 scalar");
      args.push_back({("rt." + Twine(s->builder) + "(op." +
                       op.getGetterName(a.name) + "()" + s->convert + ")")
                          .str(),
                      s->kind});
    }
    std::string fnRef = "::comet::rtabi::Fn::" + fn.str();
    os << "/// " << name << " -> comet_rt_" << fn << " (its runtimeCall).\n"
       << "static ::mlir::LogicalResult lowerRuntimeCall(" << cls
       << " op, RuntimeLowering &rt) {\n"
       << "  static_assert(::comet::rtabi::numParams(" << fnRef
       << ") == " << args.size() << ",\n                \"" << name
       << ": comet_rt_" << fn << " must take " << args.size()
       << " arguments (inputs, outputs, attributes)\");\n";
    for (auto [i, arg] : llvm::enumerate(args)) {
      std::string kind =
          "::comet::rtabi::paramKind(" + fnRef + ", " + std::to_string(i) + ")";
      os << "  static_assert("
         << (arg.second == "tensor"
                 ? "::comet::rtabi::isTensorKind(" + kind + ")"
                 : kind + " == ::comet::rtabi::Kind::" + arg.second)
         << ",\n                \"" << name << ": argument " << i
         << " of comet_rt_" << fn << " must be "
         << (arg.second == "tensor" ? "a tensor" : "an " + arg.second)
         << "\");\n";
    }
    os << "  return rt.call(" << fnRef << ", {";
    for (auto [i, arg] : llvm::enumerate(args))
      os << (i ? ",\n                  " : "") << arg.first;
    os << "});\n}\n\n";
    classes.push_back(cls);
  }
  os << "#endif // GEN_ONNX_RUNTIME_CALLS\n\n"
     << "#ifdef GEN_ONNX_RUNTIME_CALL_OPS\n#undef GEN_ONNX_RUNTIME_CALL_OPS\n"
     << llvm::join(classes, ",\n") << "\n#endif // GEN_ONNX_RUNTIME_CALL_OPS\n";
  return false;
}
