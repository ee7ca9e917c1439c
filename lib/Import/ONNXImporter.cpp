//===- ONNXImporter.cpp - ONNX model to the onnx dialect ------------------===//
//
// Walks the plain copy of the model (ONNXModel.h) in file order, which is a
// topological order, and builds one op per node. Everything that cannot be
// represented is an error that names the node; nothing is dropped.
//
//===----------------------------------------------------------------------===//
#include "comet/Import/ONNXImporter.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"
#include "comet/Import/ONNXModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace comet;
namespace ox = comet::onnx_import;
namespace conx = comet::onnx;

namespace {

class Importer {
public:
  Importer(MLIRContext *ctx, StringRef filename)
      : ctx(ctx), b(ctx), fileLoc(FileLineColLoc::get(ctx, filename, 0, 0)) {}

  OwningOpRef<ModuleOp> run(ox::Model &model);

private:
  /// "node 'name' (domain.OpType)" for messages.
  std::string label(const ox::Node &node) const {
    std::string name = node.name.empty() ? "#" + std::to_string(nodeIndex)
                                         : "'" + node.name + "'";
    return "node " + name + " (" +
           (node.domain.empty() ? std::string("ai.onnx") : node.domain) + "." +
           node.opType + ")";
  }
  Location locOf(StringRef name) {
    return NameLoc::get(b.getStringAttr(name), fileLoc);
  }

  FailureOr<Type> convertType(const ox::ValueType &type, StringRef what,
                              Location loc);
  FailureOr<Attribute> convertTensor(const ox::Tensor &t, StringRef blobName,
                                     Location loc);
  FailureOr<Attribute> convertAttribute(const ox::Attribute &a,
                                        const ox::Node &node, Location loc);
  LogicalResult checkSupportedOps(const ox::Graph &g);
  LogicalResult dropUnreadBatchNormOutputs(ox::Graph &g);
  LogicalResult importNode(const ox::Node &node);
  Value noValue(Location loc) {
    return conx::NoValueOp::create(b, loc, b.getNoneType()).getResult();
  }

  MLIRContext *ctx;
  OpBuilder b;
  Location fileLoc;
  llvm::StringMap<Value> values;
  llvm::StringMap<const ox::ValueType *> declaredTypes;
  /// Domains the model imports an opset for ("" for ai.onnx).
  llvm::StringSet<> opsets;
  llvm::StringSet<> blobNames;
  size_t nodeIndex = 0;
};

} // namespace

FailureOr<Type> Importer::convertType(const ox::ValueType &type, StringRef what,
                                      Location loc) {
  if (type.kind == ox::ValueType::Missing)
    return emitError(loc) << what << " has no type", failure();
  if (type.kind == ox::ValueType::Unsupported)
    return emitError(loc) << what
                          << " has a type other than a tensor or a sequence "
                             "of tensors",
           failure();
  Type elt = conx::getElementType(ctx, type.elemType);
  if (!elt)
    return emitError(loc) << what << " has unsupported element type "
                          << type.elemType,
           failure();
  Type tensor;
  if (!type.hasShape) {
    tensor = UnrankedTensorType::get(elt);
  } else {
    SmallVector<int64_t> shape;
    for (const ox::Dim &d : type.dims)
      shape.push_back(d.value >= 0 ? d.value : ShapedType::kDynamic);
    tensor = RankedTensorType::get(shape, elt);
  }
  if (type.kind == ox::ValueType::Sequence)
    return Type(conx::SeqType::get(ctx, tensor));
  return tensor;
}

FailureOr<Attribute> Importer::convertTensor(const ox::Tensor &t,
                                             StringRef blobName, Location loc) {
  Type elt = conx::getElementType(ctx, t.dataType);
  size_t esize = ox::elementByteSize(t.dataType);
  if (!elt || esize == 0)
    return emitError(loc) << "tensor '" << t.name
                          << "' has unsupported data type " << t.dataType,
           failure();
  auto type = RankedTensorType::get(t.dims, elt);
  if (t.bytes.size() != size_t(type.getNumElements()) * esize)
    return emitError(loc) << "tensor '" << t.name << "' has " << t.bytes.size()
                          << " bytes of data for " << type,
           failure();
  // Resource keys must be identifiers; make them unique per module.
  std::string key;
  for (char c : blobName)
    key.push_back(llvm::isAlnum(c) || c == '_' || c == '.' ? c : '_');
  if (key.empty() || llvm::isDigit(key[0]))
    key.insert(key.begin(), '_');
  std::string unique = key;
  for (int i = 1; !blobNames.insert(unique).second; ++i)
    unique = key + "_" + std::to_string(i);
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(t.bytes.data(), t.bytes.size()), alignof(uint64_t));
  return Attribute(
      DenseResourceElementsAttr::get(type, unique, std::move(blob)));
}

FailureOr<Attribute> Importer::convertAttribute(const ox::Attribute &a,
                                                const ox::Node &node,
                                                Location loc) {
  if (!a.refAttrName.empty())
    return emitError(loc) << label(node) << ": attribute '" << a.name
                          << "' refers to a function attribute",
           failure();
  switch (a.kind) {
  case ox::Attribute::Float:
    return Attribute(b.getF32FloatAttr(a.f));
  case ox::Attribute::Int:
    return Attribute(b.getI64IntegerAttr(a.i));
  case ox::Attribute::String:
    return Attribute(b.getStringAttr(a.s));
  case ox::Attribute::Floats:
    return Attribute(b.getDenseF32ArrayAttr(a.floats));
  case ox::Attribute::Ints:
    return Attribute(b.getDenseI64ArrayAttr(a.ints));
  case ox::Attribute::Strings:
    return Attribute(b.getStrArrayAttr(
        SmallVector<StringRef>(a.strings.begin(), a.strings.end())));
  case ox::Attribute::TensorKind:
    return convertTensor(a.t, node.name + "." + a.name, loc);
  default:
    return emitError(loc) << label(node) << ": attribute '" << a.name
                          << "' has unsupported ONNX attribute type " << a.kind,
           failure();
  }
}

/// Whether a type from the file and one from inference can describe the same
/// value: same kind and element type, and no two static dims differ.
static bool compatible(Type a, Type b) {
  if (auto sa = dyn_cast<conx::SeqType>(a)) {
    auto sb = dyn_cast<conx::SeqType>(b);
    return sb && compatible(sa.getElementType(), sb.getElementType());
  }
  auto ta = dyn_cast<TensorType>(a), tb = dyn_cast<TensorType>(b);
  if (!ta || !tb || ta.getElementType() != tb.getElementType())
    return false;
  if (!ta.hasRank() || !tb.hasRank())
    return true;
  if (ta.getRank() != tb.getRank())
    return false;
  for (auto [x, y] : llvm::zip(ta.getShape(), tb.getShape()))
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return false;
  return true;
}

/// The file's type, made more precise by the inferred one where the file
/// leaves the rank or a dim open (the two are known to be compatible).
static Type refine(Type file, Type inferred) {
  if (!file || !inferred)
    return file ? file : inferred;
  auto tf = dyn_cast<TensorType>(file), ti = dyn_cast<TensorType>(inferred);
  if (!tf || !ti || !ti.hasRank())
    return file;
  if (!tf.hasRank())
    return inferred;
  SmallVector<int64_t> shape(tf.getShape());
  for (auto [d, x] : llvm::zip(shape, ti.getShape()))
    if (ShapedType::isDynamic(d))
      d = x;
  return RankedTensorType::get(shape, tf.getElementType());
}

static StringRef domainName(StringRef domain) {
  return domain.empty() || domain == "ai.onnx" ? StringRef("ai.onnx") : domain;
}

static bool isSupported(const ox::Node &node) {
  const conx::OpInfo *info = conx::lookupOpInfo(node.opType);
  return info && conx::isSameDomain(info->domain, node.domain);
}

/// One error for the whole graph, so that a user sees everything a model
/// needs at once: each unsupported domain::op_type with its first node.
LogicalResult Importer::checkSupportedOps(const ox::Graph &g) {
  llvm::MapVector<std::pair<StringRef, StringRef>, size_t> firstNode;
  for (auto [i, node] : llvm::enumerate(g.nodes))
    if (!isSupported(node))
      firstNode.insert({{domainName(node.domain), node.opType}, i});
  if (firstNode.empty())
    return success();
  const ox::Node &first = g.nodes[firstNode.front().second];
  InFlightDiagnostic diag = emitError(locOf(first.name));
  diag << "the model has " << firstNode.size() << " op type"
       << (firstNode.size() == 1 ? "" : "s") << " that COMET does not support:";
  for (auto [k, entry] : llvm::enumerate(firstNode)) {
    const ox::Node &node = g.nodes[entry.second];
    diag << (k ? ", " : " ") << entry.first.first << "::" << entry.first.second
         << " (first node "
         << (node.name.empty() ? "#" + std::to_string(entry.second)
                               : "'" + node.name + "'")
         << ")";
  }
  return diag;
}

/// generate_artifacts' eval graphs keep torch's three BatchNormalization
/// outputs with training_mode=0, where ONNX defines only Y (ONNX Runtime
/// rejects them). Inference computes no running statistics: unread ones are
/// dropped, a read one is an error.
LogicalResult Importer::dropUnreadBatchNormOutputs(ox::Graph &g) {
  llvm::StringSet<> read;
  for (const ox::Node &n : g.nodes)
    for (const std::string &in : n.inputs)
      read.insert(in);
  for (const ox::ValueInfo &v : g.outputs)
    read.insert(v.name);
  for (ox::Node &n : g.nodes) {
    if (n.opType != "BatchNormalization" || !conx::isSameDomain(n.domain, ""))
      continue;
    bool training = llvm::any_of(n.attributes, [](const ox::Attribute &a) {
      return a.name == "training_mode" && a.i != 0;
    });
    if (training)
      continue;
    for (size_t i = 1; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty())
        continue;
      if (read.contains(n.outputs[i]))
        return emitError(locOf(n.name))
               << "node '" << n.name << "' (ai.onnx.BatchNormalization): "
               << "output '" << n.outputs[i]
               << "' is read, but training_mode=0 computes only Y";
      n.outputs[i].clear();
    }
    while (n.outputs.size() > 1 && n.outputs.back().empty())
      n.outputs.pop_back();
  }
  return success();
}

LogicalResult Importer::importNode(const ox::Node &node) {
  Location loc = locOf(node.name);
  // checkSupportedOps has rejected every op type the table lacks.
  const conx::OpInfo *info = conx::lookupOpInfo(node.opType);
  assert(info && isSupported(node) && "checkSupportedOps runs first");
  StringRef domain = node.domain == "ai.onnx" ? "" : StringRef(node.domain);
  if (!opsets.contains(domain))
    return emitError(loc) << label(node) << ": the model imports no opset for "
                          << "domain '" << (domain.empty() ? "ai.onnx" : domain)
                          << "'";

  // Inputs: "" is an absent optional input; trailing ones may be left out.
  size_t nIn = node.inputs.size();
  bool variadic = info->maxInputs == ~0u;
  if (nIn < info->minInputs || (!variadic && nIn > info->maxInputs))
    return emitError(loc) << label(node) << ": has " << nIn
                          << " inputs, expected "
                          << (variadic ? "at least " : "") << info->minInputs
                          << (variadic || info->minInputs == info->maxInputs
                                  ? std::string()
                                  : " to " + std::to_string(info->maxInputs)),
           failure();
  SmallVector<Value> operands;
  for (const std::string &name : node.inputs) {
    if (name.empty()) {
      operands.push_back(noValue(loc));
      continue;
    }
    Value v = values.lookup(name);
    if (!v)
      return emitError(loc) << label(node) << ": input '" << name
                            << "' is not a graph input, an initializer or "
                               "the output of an earlier node",
             failure();
    operands.push_back(v);
  }
  if (!variadic)
    while (operands.size() < info->maxInputs)
      operands.push_back(noValue(loc));

  size_t nOut = node.outputs.size();
  // A variadic result list (SplitTraining) has the node's outputs.
  size_t nResults = info->maxOutputs == ~0u ? nOut : info->maxOutputs;
  if (nOut < info->minOutputs || nOut > nResults)
    return emitError(loc) << label(node) << ": has " << nOut
                          << " outputs, expected " << info->minOutputs
                          << (info->minOutputs == info->maxOutputs
                                  ? std::string()
                                  : " to " + std::to_string(info->maxOutputs)),
           failure();

  OperationName opName("onnx." + node.opType, ctx);
  auto registered = opName.getRegisteredInfo();
  if (!registered)
    return emitError(loc) << label(node) << ": op 'onnx." << node.opType
                          << "' is not registered",
           failure();
  SmallVector<NamedAttribute> attrs;
  ArrayRef<StringAttr> known = registered->getAttributeNames();
  llvm::StringSet<> seen;
  for (const ox::Attribute &a : node.attributes) {
    if (!llvm::any_of(known, [&](StringAttr k) { return k == a.name; }))
      return emitError(loc) << label(node) << ": unknown attribute '" << a.name
                            << "' for " << node.opType,
             failure();
    if (!seen.insert(a.name).second)
      return emitError(loc) << label(node) << ": attribute '" << a.name
                            << "' appears twice",
             failure();
    FailureOr<mlir::Attribute> attr = convertAttribute(a, node, loc);
    if (failed(attr))
      return failure();
    attrs.push_back(b.getNamedAttr(a.name, *attr));
  }

  // Check attribute kinds before the op exists: its accessors (and so type
  // inference) assume them.
  NamedAttrList attrList(attrs);
  if (failed(registered->verifyInherentAttrs(
          attrList, [&]() { return emitError(loc) << label(node) << ": "; })))
    return failure();

  // Results: the file's types where it has them, inference for the rest.
  SmallVector<Type> fileTypes(nResults, Type());
  for (size_t i = 0; i < nResults; ++i) {
    if (i >= nOut || node.outputs[i].empty()) {
      fileTypes[i] = b.getNoneType();
      continue;
    }
    if (const ox::ValueType *vt = declaredTypes.lookup(node.outputs[i])) {
      FailureOr<Type> t = convertType(
          *vt, "value '" + node.outputs[i] + "' of " + label(node), loc);
      if (failed(t))
        return failure();
      fileTypes[i] = *t;
    }
  }
  // Until inference, every present output is pending: every ONNX result
  // constraint accepts it and the verifiers skip it, so the first check is
  // of the operands and attributes alone. The file's types come after, where
  // a mismatch with inference gets its own message.
  OperationState state(loc, opName);
  state.addOperands(operands);
  state.addAttributes(attrs);
  Type placeholder = UnrankedTensorType::get(conx::PendingType::get(ctx));
  for (Type t : fileTypes)
    state.addTypes(t && isa<NoneType>(t) ? t : placeholder);
  Operation *op = b.create(state);

  // The whole verifier (ODS checks, then the op's verify()) runs before
  // inference, which relies on it: the file is untrusted.
  if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
    return emitError(loc) << label(node) << " is invalid (see above)",
           failure();
  SmallVector<Type> inferred;
  auto infer = dyn_cast<conx::TypeInferenceOpInterface>(op);
  if (!infer || failed(infer.inferResultTypes(inferred)))
    inferred.assign(op->getNumResults(), Type());
  for (size_t i = 0; i < nOut; ++i) {
    if (node.outputs[i].empty())
      continue;
    Type t = fileTypes[i], guess = inferred[i];
    if (t && guess && !compatible(t, guess))
      return emitError(loc) << label(node) << ": type mismatch for output '"
                            << node.outputs[i] << "': the file says " << t
                            << " but the inputs give " << guess,
             failure();
    t = refine(t, guess);
    if (!t)
      return emitError(loc)
                 << label(node) << ": cannot infer the type of output '"
                 << node.outputs[i] << "' and the file gives none",
             failure();
    op->getResult(i).setType(t);
  }
  if (failed(mlir::verify(op)))
    return emitError(loc) << label(node) << " is invalid (see above)",
           failure();
  for (size_t i = 0; i < nOut; ++i) {
    const std::string &name = node.outputs[i];
    if (name.empty())
      continue;
    if (!values.insert({name, op->getResult(i)}).second)
      return emitError(loc) << label(node) << ": output '" << name
                            << "' is already defined",
             failure();
  }
  return success();
}

OwningOpRef<ModuleOp> Importer::run(ox::Model &model) {
  ox::Graph &g = model.graph;
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  SmallVector<NamedAttribute> opsetAttrs;
  for (const auto &[domain, version] : model.opsetImports) {
    opsetAttrs.push_back(b.getNamedAttr(domain.empty() ? "ai.onnx" : domain,
                                        b.getI64IntegerAttr(version)));
    opsets.insert(domain == "ai.onnx" ? "" : domain);
  }
  (*module)->setAttr("onnx.ir_version", b.getI64IntegerAttr(model.irVersion));
  (*module)->setAttr("onnx.opset_import", b.getDictionaryAttr(opsetAttrs));
  if (!model.producerName.empty())
    (*module)->setAttr("onnx.producer",
                       b.getStringAttr(model.producerVersion.empty()
                                           ? model.producerName
                                           : model.producerName + " " +
                                                 model.producerVersion));
  if (model.numFunctions)
    return emitError(fileLoc) << "the model defines " << model.numFunctions
                              << " local functions, which COMET does not "
                                 "import",
           nullptr;
  if (g.numSparseInitializers)
    return emitError(fileLoc) << "the graph has sparse initializers, which "
                                 "COMET does not import",
           nullptr;

  for (const ox::ValueInfo &v : g.valueInfo)
    declaredTypes[v.name] = &v.type;
  for (const ox::ValueInfo &v : g.outputs)
    declaredTypes[v.name] = &v.type;

  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (const ox::ValueInfo &v : g.inputs) {
    FailureOr<Type> t =
        convertType(v.type, "graph input '" + v.name + "'", locOf(v.name));
    if (failed(t))
      return nullptr;
    argTypes.push_back(*t);
    argLocs.push_back(locOf(v.name));
  }
  b.setInsertionPointToEnd(module->getBody());
  std::string fnName = g.name.empty() ? "main_graph" : g.name;
  auto func =
      func::FuncOp::create(b, fileLoc, fnName, b.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  for (auto [i, v] : llvm::enumerate(g.inputs)) {
    body->getArgument(i).setLoc(argLocs[i]);
    func.setArgAttr(i, "onnx.name", b.getStringAttr(v.name));
    if (!values.insert({v.name, body->getArgument(i)}).second)
      return emitError(argLocs[i])
                 << "graph input '" << v.name << "' is declared twice",
             nullptr;
  }
  b.setInsertionPointToEnd(body);
  for (const ox::Tensor &t : g.initializers) {
    Location loc = locOf(t.name);
    FailureOr<mlir::Attribute> value = convertTensor(t, t.name, loc);
    if (failed(value))
      return nullptr;
    auto init = conx::InitializerOp::create(
        b, loc, cast<TypedAttr>(*value).getType(), b.getStringAttr(t.name),
        cast<ElementsAttr>(*value));
    // An initializer that is also a graph input is the input's default:
    // the argument wins, as in ONNX.
    values.insert({t.name, init.getResult()});
  }
  if (failed(checkSupportedOps(g)) || failed(dropUnreadBatchNormOutputs(g)))
    return nullptr;
  for (const ox::Node &node : g.nodes) {
    if (failed(importNode(node)))
      return nullptr;
    ++nodeIndex;
  }
  SmallVector<Value> results;
  for (const ox::ValueInfo &v : g.outputs) {
    Value r = values.lookup(v.name);
    if (!r)
      return emitError(locOf(v.name))
                 << "graph output '" << v.name
                 << "' is not a graph input, an initializer or a node output",
             nullptr;
    results.push_back(r);
  }
  func::ReturnOp::create(b, locOf("graph outputs"), results);
  func.setType(b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, v] : llvm::enumerate(g.outputs))
    func.setResultAttr(i, "onnx.name", b.getStringAttr(v.name));
  if (failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> comet::importONNXModel(StringRef bytes,
                                             StringRef filename,
                                             MLIRContext *context) {
  context->loadDialect<conx::ONNXDialect, func::FuncDialect>();
  ox::Model model;
  std::string error;
  if (!ox::readONNXModel(bytes.data(), bytes.size(), model, error)) {
    emitError(FileLineColLoc::get(context, filename, 0, 0))
        << "cannot read ONNX model: " << error;
    return nullptr;
  }
  return Importer(context, filename).run(model);
}

void comet::registerONNXImportDialects(DialectRegistry &registry) {
  registry.insert<conx::ONNXDialect, func::FuncDialect>();
}
