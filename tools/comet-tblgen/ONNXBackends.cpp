//===- ONNXBackends.cpp - TableGen backends for the onnx dialect ----------===//
//
// The backends read the ops derived from ONNX_Op (ONNXBase.td): its
// onnxOpType and onnxDomain fields and its ODS operands and results.
//
//===----------------------------------------------------------------------===//
#include "ONNXBackends.h"

#include "mlir/TableGen/Argument.h"
#include "mlir/TableGen/Operator.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/TableGenBackend.h"

using namespace llvm;
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
