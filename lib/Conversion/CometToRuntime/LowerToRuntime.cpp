//===- LowerToRuntime.cpp - onnx/comet ops to runtime calls on memrefs ----===//
//
// Rewrites each function of a training graph into straight-line code on
// memrefs that calls the runtime's C ABI (comet/runtime/exec.h) and the
// compressed-handle ABI (comet/runtime/handles.h). Buffer categories and
// free points come from the ActivationLiveness analysis, so the memory the
// runtime measures is the memory the analysis predicts. Passes.td has the
// contract. This file is the driver: the function's signature, buffers and
// frees, and the runtime calls; each op is lowered by the pattern of its
// family (RuntimeLowering.h, *Lowering.cpp).
//
//===----------------------------------------------------------------------===//
#include "RuntimeLowering.h"

#include "comet/Conversion/Passes.h"
#include "comet/Dialect/Comet/IR/CometOps.h"
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"
#include "comet/runtime/abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace comet {
#define GEN_PASS_DEF_COMETLOWERTORUNTIME
#include "comet/Conversion/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;

using rtabi::Fn;
using rtabi::Kind;

namespace {

/// The runtime allocator's category of a value (comet/runtime/alloc.h).
int32_t rtCategory(ValueCategory c) {
  switch (c) {
  case ValueCategory::Parameter:
    return COMET_RT_MEM_PARAMS;
  case ValueCategory::Gradient:
    return COMET_RT_MEM_GRADS;
  case ValueCategory::OptimizerState:
    return COMET_RT_MEM_OPTIMIZER_STATE;
  case ValueCategory::Activation:
    return COMET_RT_MEM_ACTIVATIONS;
  case ValueCategory::Other:
    return COMET_RT_MEM_OTHER;
  }
  return COMET_RT_MEM_OTHER;
}

MemRefType memrefOf(Type tensorType) {
  auto rt = cast<RankedTensorType>(tensorType);
  return MemRefType::get(rt.getShape(), rt.getElementType());
}

/// Argument attributes that tell the driver the roles of the inputs it
/// binds (docs/execution.md, "Inputs by role").
constexpr llvm::StringLiteral kLabelsAttr = "comet.labels";
constexpr llvm::StringLiteral kIndexRangeAttr = "comet.index_range";

/// The number of classes when `arg` is the labels of a loss: its scores'
/// dim 1 (0 where that is not static).
std::optional<int64_t> labelClasses(BlockArgument arg) {
  for (Operation *user : arg.getUsers()) {
    auto sl = comet::onnx::getLossScoresAndLabels(user);
    if (!sl || sl->second != arg)
      continue;
    auto st = dyn_cast<RankedTensorType>(sl->first.getType());
    return st && st.getRank() >= 2 && !st.isDynamicDim(1) ? st.getDimSize(1)
                                                          : 0;
  }
  return std::nullopt;
}

/// When integer `arg` is the indices of Gathers (token ids into an
/// embedding table), the number of valid ids: the smallest of their data's
/// dims along the axis.
std::optional<int64_t> indexRange(BlockArgument arg) {
  std::optional<int64_t> range;
  for (Operation *user : arg.getUsers()) {
    auto g = dyn_cast<comet::onnx::GatherOp>(user);
    if (!g || g.getIndices() != arg)
      continue;
    auto dt = dyn_cast<RankedTensorType>(g.getData().getType());
    if (!dt)
      return std::nullopt;
    int64_t axis = g.getAxis() < 0 ? g.getAxis() + dt.getRank() : g.getAxis();
    if (axis < 0 || axis >= dt.getRank() || dt.isDynamicDim(axis))
      return std::nullopt;
    range = std::min(range.value_or(INT64_MAX), dt.getDimSize(axis));
  }
  return range;
}

} // namespace

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

void RuntimeLoweringPatternSet::insert(
    std::unique_ptr<RuntimeLoweringPattern> pattern) {
  TypeID id = pattern->getOpTypeID();
  [[maybe_unused]] bool inserted =
      patterns.try_emplace(id, std::move(pattern)).second;
  assert(inserted && "two lowering patterns for one op");
}

const RuntimeLoweringPattern *
RuntimeLoweringPatternSet::lookup(Operation *op) const {
  auto it = patterns.find(op->getName().getTypeID());
  return it == patterns.end() ? nullptr : it->second.get();
}

//===----------------------------------------------------------------------===//
// RuntimeLowering
//===----------------------------------------------------------------------===//

func::FuncOp RuntimeLowering::declare(Fn fn) {
  std::string name = rtabi::symbolName(fn);
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder mb(module.getBodyRegion());
  auto f = func::FuncOp::create(mb, module.getLoc(), name,
                                rtabi::functionType(module.getContext(), fn));
  f.setPrivate();
  f->setAttr("llvm.emit_c_interface", UnitAttr::get(f.getContext()));
  return f;
}

Value RuntimeLowering::allocType(Type tensorType, int32_t category) {
  MemRefType mt = memrefOf(tensorType);
  Type elt = mt.getElementType();
  int64_t elemBytes =
      elt.isInteger(1) ? 1 : (elt.getIntOrFloatBitWidth() + 7) / 8;
  func::CallOp c = emitCall(
      Fn::buffer_alloc, {i64(mt.getNumElements() * elemBytes), i32(category)});
  Value raw = c.getResult(0);
  if (checkErrors) {
    // A null buffer is out of memory.
    Value p = memref::ExtractAlignedPointerAsIndexOp::create(b, loc(), raw);
    Value zero = arith::ConstantIndexOp::create(b, loc(), 0);
    Value ok =
        arith::CmpIOp::create(b, loc(), arith::CmpIPredicate::ne, p, zero);
    check(arith::SelectOp::create(b, loc(), ok, i32(0),
                                  i32(COMET_RT_ERROR_OUT_OF_MEMORY)));
  }
  Value view = memref::ViewOp::create(
      b, loc(), mt, raw, arith::ConstantIndexOp::create(b, loc(), 0),
      ValueRange{});
  rawBuffer[view] = raw;
  return view;
}

Value RuntimeLowering::alloc(Value tensor) {
  int id = la.getId(tensor);
  ValueCategory c = id >= 0 ? la.getValue(id).category : ValueCategory::Other;
  Value m = allocType(tensor.getType(), rtCategory(c));
  owned.insert(tensor);
  return m;
}

Value RuntimeLowering::result(Value v) {
  if (isa<NoneType>(v.getType()))
    return {};
  if (Value m = buffers.lookup(v))
    return m;
  // dX written over dY (ActivationLiveness::ValueInfo::inPlaceOf): the
  // buffer stays owned by the value that allocated it, freed at its end.
  if (int id = la.getId(v); id >= 0 && la.getValue(id).inPlaceOf >= 0)
    if (Value m =
            buffers.lookup(la.getValue(la.getValue(id).inPlaceOf).value)) {
      buffers[v] = m;
      return m;
    }
  Value m = alloc(v);
  buffers[v] = m;
  return m;
}

void RuntimeLowering::bind(Value v, Value m, bool isOwned) {
  buffers[v] = m;
  if (isOwned)
    owned.insert(v);
}

Value RuntimeLowering::i32(int32_t v) {
  return arith::ConstantIntOp::create(b, loc(), v, 32);
}
Value RuntimeLowering::i64(int64_t v) {
  return arith::ConstantIntOp::create(b, loc(), v, 64);
}
Value RuntimeLowering::f32(float v) {
  return arith::ConstantFloatOp::create(b, loc(), b.getF32Type(), APFloat(v));
}
Value RuntimeLowering::f64(double v) {
  return arith::ConstantFloatOp::create(b, loc(), b.getF64Type(), APFloat(v));
}

Value RuntimeLowering::global(DenseElementsAttr data) {
  std::string name = "__comet_const_" + std::to_string(constCounter++);
  while (module.lookupSymbol(name))
    name = "__comet_const_" + std::to_string(constCounter++);
  auto mt = MemRefType::get(data.getType().getShape(),
                            data.getType().getElementType());
  {
    OpBuilder mb(module.getBodyRegion());
    memref::GlobalOp::create(mb, loc(), name, b.getStringAttr("private"), mt,
                             data, /*constant=*/true, IntegerAttr());
  }
  return memref::GetGlobalOp::create(b, loc(), mt, name);
}

LogicalResult RuntimeLowering::materializeConstant(Value v,
                                                   DenseElementsAttr data) {
  // The data lives in a private global; the value itself is an allocated
  // copy, so it is counted like every other tensor.
  Value g = global(data);
  Value m = result(v);
  return success(!m || succeeded(copy(g, m)));
}

LogicalResult RuntimeLowering::copy(Value from, Value to) {
  // A runtime call, not memref.copy: the buffer may be device memory.
  Type elt = cast<MemRefType>(to.getType()).getElementType();
  if (elt.isF32())
    return call(Fn::identity, {from, to});
  if (elt.isInteger(64))
    return call(Fn::identity_i64, {from, to});
  if (elt.isInteger(1))
    return call(Fn::identity_i1, {from, to});
  return emitError(loc()) << "comet-lower-to-runtime: cannot copy a memref of "
                          << elt;
}

Value RuntimeLowering::constMemref(ArrayRef<int64_t> values) {
  return global(DenseElementsAttr::get(
      RankedTensorType::get({int64_t(values.size())}, b.getI64Type()), values));
}

Value RuntimeLowering::constMemref(float value) {
  return global(DenseElementsAttr::get(
      RankedTensorType::get({1}, b.getF32Type()), ArrayRef<float>{value}));
}

Value RuntimeLowering::unranked(Value memref, Type elt) {
  auto ut = UnrankedMemRefType::get(elt, 0);
  if (!memref) {
    Value empty = memref::AllocaOp::create(b, loc(), MemRefType::get({0}, elt));
    return memref::CastOp::create(b, loc(), ut, empty);
  }
  return memref::CastOp::create(b, loc(), ut, memref);
}

void RuntimeLowering::check(Value rc) {
  if (!checkErrors)
    return;
  Region &body = newF.getBody();
  if (!failBlock) {
    OpBuilder::InsertionGuard g(b);
    failBlock = new Block();
    body.push_back(failBlock);
    BlockArgument code = failBlock->addArgument(b.getI32Type(), loc());
    b.setInsertionPointToEnd(failBlock);
    // Free the buffers and handles live at the failing call.
    emitCall(Fn::step_abort, {});
    func::ReturnOp::create(b, loc(), ValueRange{code});
  }
  Value ok =
      arith::CmpIOp::create(b, loc(), arith::CmpIPredicate::eq, rc, i32(0));
  Block *cur = b.getInsertionBlock();
  auto *next = new Block();
  body.getBlocks().insertAfter(cur->getIterator(), next);
  cf::CondBranchOp::create(b, loc(), ok, next, ValueRange{}, failBlock,
                           ValueRange{rc});
  b.setInsertionPointToEnd(next);
}

func::CallOp RuntimeLowering::emitCall(Fn fn, ArrayRef<Value> args) {
  const rtabi::FnInfo &fi = rtabi::info(fn);
  if (fi.params.size() != args.size()) {
    emitError(loc()) << "internal: comet_rt_" << fi.name << " takes "
                     << fi.params.size() << " arguments, got " << args.size();
    return {};
  }
  SmallVector<Value> vals = {ctxArg};
  for (auto [kind, v] : llvm::zip(fi.params, args)) {
    Type elt;
    switch (kind) {
    case Kind::tf32:
      elt = b.getF32Type();
      break;
    case Kind::ti64:
      elt = b.getI64Type();
      break;
    case Kind::ti1:
      elt = b.getI1Type();
      break;
    case Kind::tu8:
      elt = b.getIntegerType(8, /*isSigned=*/false);
      break;
    default:
      vals.push_back(v);
      continue;
    }
    if (v && cast<MemRefType>(v.getType()).getElementType() != elt) {
      emitError(loc()) << "comet-lower-to-runtime: comet_rt_" << fi.name
                       << " takes an operand of element type " << elt
                       << ", got " << v.getType();
      return {};
    }
    vals.push_back(unranked(v, elt));
  }
  auto callOp = func::CallOp::create(b, loc(), declare(fn), vals);
  if (fi.ret == rtabi::Ret::status)
    check(callOp.getResult(0));
  return callOp;
}

LogicalResult RuntimeLowering::lowerReturn(func::ReturnOp ret) {
  unsigned nArgs = oldF.getNumArguments();
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Value out = newF.getArgument(1 + nArgs + i);
    Value m = buffers.lookup(v);
    if (m == out)
      continue;
    if (!m)
      return ret.emitError("comet-lower-to-runtime: returned value #")
             << i << " has no buffer";
    if (failed(copy(m, out)))
      return failure();
  }
  return success();
}

LogicalResult RuntimeLowering::foldI64(Operation *op) {
  auto v = onnx::getConstantInts(op->getResult(0));
  if (!v)
    return op->emitError("comet-lower-to-runtime: integer ")
           << op->getName() << " is only supported on constants";
  auto t = cast<ShapedType>(op->getResult(0).getType());
  if (t.getElementType().isInteger(1)) {
    SmallVector<bool> bits(v->begin(), v->end());
    return materializeConstant(op->getResult(0),
                               DenseElementsAttr::get(t, ArrayRef<bool>(bits)));
  }
  return materializeConstant(op->getResult(0),
                             DenseElementsAttr::get(t, ArrayRef<int64_t>(*v)));
}

/// Whether op computes integer shape arithmetic that folds: one i64 or
/// bool result whose values onnx::getConstantInts knows. Initializers and
/// Constants keep their own lowering.
static bool foldsToIntegerConstant(Operation *op) {
  if (op->getNumResults() != 1 ||
      isa<onnx::InitializerOp, onnx::ConstantOp>(op))
    return false;
  auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!t || !t.hasStaticShape() ||
      !(t.getElementType().isInteger(64) || t.getElementType().isInteger(1)))
    return false;
  auto v = onnx::getConstantInts(op->getResult(0));
  return v && int64_t(v->size()) == t.getNumElements();
}

LogicalResult RuntimeLowering::emitObserves(Operation *op) {
  // The comet dialect's verifier has checked the entries and their operands.
  auto entries = op->getAttrOfType<ArrayAttr>(CometDialect::kObserveAttrName);
  if (!entries || !tunerStatistics)
    return success();
  for (auto e : entries.getAsRange<ObserveAttr>()) {
    Value dy = operand(op->getOperand(e.getGrad()));
    if (dy && cast<MemRefType>(dy.getType()).getElementType().isF32() &&
        failed(call(Fn::slot_observe_grad,
                    {dy, i64(e.getSlot()), i64(e.getConsumer())})))
      return failure();
    if (std::optional<int64_t> auxOperand = e.getAux())
      if (Value aux = operand(op->getOperand(*auxOperand)))
        if (cast<MemRefType>(aux.getType()).getElementType().isF32() &&
            failed(call(Fn::slot_observe_max,
                        {aux, i64(e.getSlot()), i64(e.getConsumer())})))
          return failure();
  }
  return success();
}

LogicalResult RuntimeLowering::lower(Operation *op) {
  // Shape arithmetic is a constant once shapes are static, whichever ops
  // compute it (ViT's expand target: Equal and Where of i64 constants).
  if (foldsToIntegerConstant(op))
    return foldI64(op);
  const RuntimeLoweringPattern *pattern = patterns.lookup(op);
  if (!pattern)
    return op->emitError("comet-lower-to-runtime: no runtime lowering for ")
           << op->getName();
  return pattern->lower(op, *this);
}

LogicalResult RuntimeLowering::run() {
  MLIRContext *ctx = oldF.getContext();
  Block &entry = oldF.getBody().front();
  if (!oldF.getBody().hasOneBlock())
    return oldF.emitError("comet-lower-to-runtime: expected one block");
  auto ret = dyn_cast<func::ReturnOp>(entry.getTerminator());
  if (!ret)
    return oldF.emitError("comet-lower-to-runtime: expected func.return");

  // Signature: the runtime context, the arguments as memrefs, then one out
  // memref per result.
  SmallVector<Type> argTypes = {rtabi::contextType(ctx)};
  for (Type t : oldF.getArgumentTypes()) {
    if (!isa<RankedTensorType>(t))
      return oldF.emitError("comet-lower-to-runtime: argument of type ")
             << t << " is not a ranked tensor";
    argTypes.push_back(memrefOf(t));
  }
  for (Type t : oldF.getResultTypes()) {
    if (!isa<RankedTensorType>(t))
      return oldF.emitError("comet-lower-to-runtime: result of type ")
             << t << " is not a ranked tensor";
    argTypes.push_back(memrefOf(t));
  }
  b.setInsertionPoint(oldF);
  newF = func::FuncOp::create(
      b, oldF.getLoc(), (oldF.getName() + ".lowered").str(),
      FunctionType::get(ctx, argTypes, {b.getI32Type()}));
  newF.setVisibility(oldF.getVisibility());
  newF->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  // Argument i of the old function is argument i + 1 of the new one.
  unsigned nArgs = oldF.getNumArguments();
  newF.setArgAttrs(
      0, b.getDictionaryAttr(b.getNamedAttr("comet.context", b.getUnitAttr())));
  for (unsigned i = 0; i < nArgs; ++i) {
    NamedAttrList attrs(oldF.getArgAttrDict(i));
    BlockArgument a = entry.getArgument(i);
    if (std::optional<int64_t> classes = labelClasses(a))
      attrs.set(kLabelsAttr, b.getI64IntegerAttr(*classes));
    if (std::optional<int64_t> range = indexRange(a))
      attrs.set(kIndexRangeAttr, b.getI64IntegerAttr(*range));
    newF.setArgAttrs(1 + i, attrs.getDictionary(ctx));
  }
  for (unsigned i = 0; i < oldF.getNumResults(); ++i) {
    SmallVector<NamedAttribute> attrs;
    if (DictionaryAttr d = oldF.getResultAttrDict(i))
      attrs.append(d.begin(), d.end());
    attrs.push_back(b.getNamedAttr("comet.result", b.getI64IntegerAttr(i)));
    newF.setArgAttrs(1 + nArgs + i, b.getDictionaryAttr(attrs));
  }
  Block *body = newF.addEntryBlock();
  b.setInsertionPointToStart(body);
  ctxArg = body->getArgument(0);
  for (unsigned i = 0; i < nArgs; ++i)
    buffers[entry.getArgument(i)] = body->getArgument(1 + i);
  // A value the function returns (once, and computed here) is written
  // straight into its out argument.
  DenseSet<Value> seen;
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (seen.insert(v).second && !isa<BlockArgument>(v) &&
        isa<RankedTensorType>(v.getType())) {
      buffers[v] = body->getArgument(1 + nArgs + i);
      inOutArg.insert(v);
    }

  // Free points from the analysis: value -> the step whose end frees it.
  SmallVector<SmallVector<Value, 4>> freeAt(la.getNumSteps());
  for (const ValueInfo &vi : la.getValues())
    if (vi.def >= 0 && !vi.persistent && vi.end >= 0 &&
        vi.end < la.getNumSteps())
      freeAt[vi.end].push_back(vi.value);

  for (auto [step, op] : llvm::enumerate(la.getSchedule())) {
    curLoc = op->getLoc();
    if (auto r = dyn_cast<func::ReturnOp>(op)) {
      if (failed(lowerReturn(r)))
        return failure();
    } else if (failed(emitObserves(op)) || failed(lower(op))) {
      return failure();
    }
    for (Value v : freeAt[step]) {
      if (!owned.contains(v) || inOutArg.contains(v))
        continue;
      Value m = buffers.lookup(v);
      if (isa<CompressedType>(v.getType()))
        emitCall(Fn::handle_free, {m});
      else
        emitCall(Fn::buffer_free, {rawBuffer.lookup(m)});
    }
  }
  curLoc = ret.getLoc();
  func::ReturnOp::create(b, loc(), ValueRange{i32(0)});

  // Record each compress site on the new function for the Engine's report.
  SmallVector<Attribute> sites;
  for (Operation *op : la.getSchedule())
    if (auto c = dyn_cast<CompressOp>(op)) {
      int id = la.getId(c.getInput());
      SmallVector<ConsumerAttr> consumers;
      if (auto tune = c->getAttrOfType<ArrayAttr>(CometDialect::kTuneAttrName))
        llvm::append_range(consumers, tune.getAsRange<ConsumerAttr>());
      sites.push_back(
          SiteAttr::get(b.getContext(), id >= 0 ? la.getValue(id).name : "",
                        c.getCodec(), id >= 0 ? la.getValue(id).tensorBytes : 0,
                        c.getBound().value_or(BoundAttr()), consumers));
    }
  if (!sites.empty())
    newF->setAttr(CometDialect::kSitesAttrName, b.getArrayAttr(sites));
  // The optimizer the step applies (comet-fuse-optimizer), for the driver.
  if (Attribute fused = oldF->getAttr(CometDialect::kFusedOptimizerAttrName))
    newF->setAttr(CometDialect::kFusedOptimizerAttrName, fused);

  std::string name = oldF.getName().str();
  oldF.erase();
  newF.setName(name);
  return success();
}

namespace {

struct LowerToRuntimePass
    : public comet::impl::CometLowerToRuntimeBase<LowerToRuntimePass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *) override {
    auto set = std::make_shared<RuntimeLoweringPatternSet>();
    populateConstantLoweringPatterns(*set);
    populateRuntimeCallLoweringPatterns(*set);
    populateElementwiseLoweringPatterns(*set);
    populateConvLoweringPatterns(*set);
    populateNormalizationLoweringPatterns(*set);
    populateContractionLoweringPatterns(*set);
    populateDataMovementLoweringPatterns(*set);
    populateLossLoweringPatterns(*set);
    populateCompressionLoweringPatterns(*set);
    populateOptimizerLoweringPatterns(*set);
    patterns = std::move(set);
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        funcs.push_back(f);
    for (func::FuncOp f : funcs) {
      // Specialize the shapes first, so the analysis sees exact sizes
      // (comet-specialize-shapes has usually done it already).
      bool dynamic = llvm::any_of(f.getArgumentTypes(), hasDynamicDim);
      f.walk([&](Operation *op) {
        dynamic |= llvm::any_of(op->getResultTypes(), hasDynamicDim);
      });
      if (dynamic && batchSize <= 0) {
        f.emitError("comet-lower-to-runtime: @")
            << f.getName()
            << " has dynamic dimensions; give batch-size=N to specialize them";
        return signalPassFailure();
      }
      if (dynamic && failed(specializeShapes(f, batchSize)))
        return signalPassFailure();
      RuntimeLowering lowering(f, module, *patterns, checkErrors,
                               tunerStatistics);
      if (failed(lowering.run()))
        return signalPassFailure();
    }
  }

  /// Shared by the pass's clones.
  std::shared_ptr<const RuntimeLoweringPatternSet> patterns;
};

} // namespace
