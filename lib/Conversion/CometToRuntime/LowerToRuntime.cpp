//===- LowerToRuntime.cpp - onnx/comet ops to runtime calls on memrefs ----===//
//
// Rewrites each function of a training graph into straight-line code on
// memrefs that calls the runtime's C ABI (comet/runtime/exec.h) and the
// compressed-handle ABI (comet/runtime/handles.h). Buffer categories and
// free points come from the ActivationLiveness analysis, so the memory the
// runtime measures is the memory the analysis predicts. Passes.td has the
// contract.
//
//===----------------------------------------------------------------------===//
#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Conversion/Passes.h"
#include "comet/Conversion/RuntimeABI.h"
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
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstring>

namespace comet {
#define GEN_PASS_DEF_COMETLOWERTORUNTIME
#include "comet/Conversion/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;

namespace {

using rtabi::Fn;
using rtabi::Kind;

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

/// Lowers one function. Owns the builder state for it.
class FuncLowering {
public:
  FuncLowering(func::FuncOp f, ModuleOp module, bool checkErrors)
      : oldF(f), module(module), b(f.getContext()), checkErrors(checkErrors),
        la(f) {}

  LogicalResult run();

private:
  Location loc() { return curLoc; }

  // --- declarations and constants ---
  /// The declaration of a runtime function (abi.def), added once.
  func::FuncOp declare(Fn fn);
  Value i32c(int32_t v) {
    return arith::ConstantIntOp::create(b, loc(), v, 32);
  }
  Value i64c(int64_t v) {
    return arith::ConstantIntOp::create(b, loc(), v, 64);
  }
  Value f32c(float v) {
    return arith::ConstantFloatOp::create(b, loc(), b.getF32Type(), APFloat(v));
  }
  Value f64c(double v) {
    return arith::ConstantFloatOp::create(b, loc(), b.getF64Type(), APFloat(v));
  }

  // --- buffers ---
  Value alloc(Value tensor);
  Value allocType(Type tensorType, int32_t category);
  Value resultBuffer(Value result);
  LogicalResult materializeConstant(Value result, DenseElementsAttr data);
  /// A read-only i64 / f32 memref of `values` in a private global: attribute
  /// arrays (perm, axes) that the runtime takes as tensors. Not allocated.
  Value constMemref(ArrayRef<int64_t> values);
  Value constMemref(float value);
  /// The buffer of an operand, or null when absent (`none`).
  Value operand(Value v) {
    if (!v || isa<NoneType>(v.getType()))
      return {};
    return buffers.lookup(v);
  }

  // --- calls ---
  /// Emits a call to the runtime function fn with the context and args,
  /// which follow its parameter kinds (a null memref is an absent optional
  /// operand); a status result is checked. Returns the call, or null after
  /// an error.
  func::CallOp emitCall(Fn fn, ArrayRef<Value> args);
  /// Copies the memref from into to (same type) through the runtime.
  LogicalResult copy(Value from, Value to);
  /// emitCall for the op being lowered.
  LogicalResult call(Fn fn, ArrayRef<Value> args) {
    return success(emitCall(fn, args) != nullptr);
  }
  Value unranked(Value memref, Type elt);
  void check(Value rc);

  // --- ops ---
  LogicalResult lower(Operation *op);
  LogicalResult lowerReturn(func::ReturnOp ret);
  /// Integer Add/Sub/Mul/Div of constants (shape arithmetic on Size and
  /// Shape results, static after specialization): a constant.
  LogicalResult foldI64(Operation *op);
  /// The bound tuner's statistics calls (comet/runtime/slot_stats.h) for an op
  /// that compress-activations marked with comet.observe.
  LogicalResult emitObserves(Operation *op);
  LogicalResult convAttrs(Operation *op, Value x,
                          std::optional<ArrayRef<int64_t>> pads,
                          std::optional<ArrayRef<int64_t>> strides,
                          std::optional<ArrayRef<int64_t>> dilations,
                          StringRef autoPad, int64_t group,
                          SmallVectorImpl<Value> &out);

  func::FuncOp oldF, newF;
  ModuleOp module;
  OpBuilder b;
  bool checkErrors;
  ActivationLiveness la;
  Location curLoc = UnknownLoc::get(oldF.getContext());
  DenseMap<Value, Value> buffers;
  /// Fused mask decompresses (ActivationLiveness::isFusedMaskDecompress) ->
  /// the handle their ReluGrad readers take.
  DenseMap<Value, Value> fusedHandle;
  /// Results written straight into their out argument.
  DenseSet<Value> inOutArg;
  /// Values that own a buffer (or handle) this function must free.
  DenseSet<Value> owned;
  /// The memref<?xi8> from buffer_alloc behind each allocated view.
  DenseMap<Value, Value> rawBuffer;
  /// The runtime context: the lowered function's first argument.
  Value ctxArg;
  Block *failBlock = nullptr;
  int64_t nextSite = 0;
  unsigned constCounter = 0;
};

func::FuncOp FuncLowering::declare(Fn fn) {
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

Value FuncLowering::allocType(Type tensorType, int32_t category) {
  MemRefType mt = memrefOf(tensorType);
  Type elt = mt.getElementType();
  int64_t elemBytes =
      elt.isInteger(1) ? 1 : (elt.getIntOrFloatBitWidth() + 7) / 8;
  func::CallOp c =
      emitCall(Fn::buffer_alloc,
               {i64c(mt.getNumElements() * elemBytes), i32c(category)});
  Value raw = c.getResult(0);
  if (checkErrors) {
    // A null buffer is out of memory.
    Value p = memref::ExtractAlignedPointerAsIndexOp::create(b, loc(), raw);
    Value zero = arith::ConstantIndexOp::create(b, loc(), 0);
    Value ok =
        arith::CmpIOp::create(b, loc(), arith::CmpIPredicate::ne, p, zero);
    check(arith::SelectOp::create(b, loc(), ok, i32c(0),
                                  i32c(COMET_RT_ERROR_OUT_OF_MEMORY)));
  }
  Value view = memref::ViewOp::create(
      b, loc(), mt, raw, arith::ConstantIndexOp::create(b, loc(), 0),
      ValueRange{});
  rawBuffer[view] = raw;
  return view;
}

Value FuncLowering::alloc(Value tensor) {
  int id = la.getId(tensor);
  ValueCategory c = id >= 0 ? la.getValue(id).category : ValueCategory::Other;
  Value m = allocType(tensor.getType(), rtCategory(c));
  owned.insert(tensor);
  return m;
}

/// The buffer for an op result: its out argument when the function returns
/// it, else a fresh allocation. `none` results get no buffer.
Value FuncLowering::resultBuffer(Value result) {
  if (isa<NoneType>(result.getType()))
    return {};
  if (Value m = buffers.lookup(result))
    return m;
  // dX written over dY (ActivationLiveness::ValueInfo::inPlaceOf): the
  // buffer stays owned by the value that allocated it, freed at its end.
  if (int id = la.getId(result); id >= 0 && la.getValue(id).inPlaceOf >= 0)
    if (Value m =
            buffers.lookup(la.getValue(la.getValue(id).inPlaceOf).value)) {
      buffers[result] = m;
      return m;
    }
  Value m = alloc(result);
  buffers[result] = m;
  return m;
}

LogicalResult FuncLowering::materializeConstant(Value result,
                                                DenseElementsAttr data) {
  // The data lives in a private global; the value itself is an allocated
  // copy, so it is counted like every other tensor.
  std::string name = "__comet_const_" + std::to_string(constCounter++);
  while (module.lookupSymbol(name))
    name = "__comet_const_" + std::to_string(constCounter++);
  auto mt = memrefOf(result.getType());
  {
    OpBuilder mb(module.getBodyRegion());
    memref::GlobalOp::create(mb, loc(), name, b.getStringAttr("private"), mt,
                             data, /*constant=*/true, IntegerAttr());
  }
  Value g = memref::GetGlobalOp::create(b, loc(), mt, name);
  Value m = resultBuffer(result);
  return success(!m || succeeded(copy(g, m)));
}

LogicalResult FuncLowering::copy(Value from, Value to) {
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

Value FuncLowering::constMemref(ArrayRef<int64_t> values) {
  auto mt = MemRefType::get({int64_t(values.size())}, b.getI64Type());
  std::string name = "__comet_const_" + std::to_string(constCounter++);
  while (module.lookupSymbol(name))
    name = "__comet_const_" + std::to_string(constCounter++);
  {
    OpBuilder mb(module.getBodyRegion());
    memref::GlobalOp::create(
        mb, loc(), name, b.getStringAttr("private"), mt,
        DenseElementsAttr::get(
            RankedTensorType::get(mt.getShape(), b.getI64Type()), values),
        /*constant=*/true, IntegerAttr());
  }
  return memref::GetGlobalOp::create(b, loc(), mt, name);
}

Value FuncLowering::constMemref(float value) {
  auto mt = MemRefType::get({1}, b.getF32Type());
  std::string name = "__comet_const_" + std::to_string(constCounter++);
  while (module.lookupSymbol(name))
    name = "__comet_const_" + std::to_string(constCounter++);
  {
    OpBuilder mb(module.getBodyRegion());
    memref::GlobalOp::create(
        mb, loc(), name, b.getStringAttr("private"), mt,
        DenseElementsAttr::get(RankedTensorType::get({1}, b.getF32Type()),
                               ArrayRef<float>{value}),
        /*constant=*/true, IntegerAttr());
  }
  return memref::GetGlobalOp::create(b, loc(), mt, name);
}

Value FuncLowering::unranked(Value memref, Type elt) {
  auto ut = UnrankedMemRefType::get(elt, 0);
  if (!memref) {
    Value empty = memref::AllocaOp::create(b, loc(), MemRefType::get({0}, elt));
    return memref::CastOp::create(b, loc(), ut, empty);
  }
  return memref::CastOp::create(b, loc(), ut, memref);
}

void FuncLowering::check(Value rc) {
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
      arith::CmpIOp::create(b, loc(), arith::CmpIPredicate::eq, rc, i32c(0));
  Block *cur = b.getInsertionBlock();
  auto *next = new Block();
  body.getBlocks().insertAfter(cur->getIterator(), next);
  cf::CondBranchOp::create(b, loc(), ok, next, ValueRange{}, failBlock,
                           ValueRange{rc});
  b.setInsertionPointToEnd(next);
}

func::CallOp FuncLowering::emitCall(Fn fn, ArrayRef<Value> args) {
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

LogicalResult FuncLowering::convAttrs(
    Operation *op, Value x, std::optional<ArrayRef<int64_t>> pads,
    std::optional<ArrayRef<int64_t>> strides,
    std::optional<ArrayRef<int64_t>> dilations, StringRef autoPad,
    int64_t group, SmallVectorImpl<Value> &out) {
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() != 4)
    return op->emitError("comet-lower-to-runtime: only 2-D (NCHW) ")
           << op->getName() << " is supported";
  if (autoPad != "NOTSET" && autoPad != "VALID")
    return op->emitError("comet-lower-to-runtime: auto_pad ")
           << autoPad << " is not supported; give explicit pads";
  SmallVector<int64_t> p = {0, 0, 0, 0}, s = {1, 1}, d = {1, 1};
  if (pads && autoPad == "NOTSET") {
    if (pads->size() != 4)
      return op->emitError("comet-lower-to-runtime: expected 4 pads");
    // ONNX orders pads (top, left, bottom, right) for 2-D, as the runtime.
    p.assign(pads->begin(), pads->end());
  }
  if (strides) {
    if (strides->size() != 2)
      return op->emitError("comet-lower-to-runtime: expected 2 strides");
    s.assign(strides->begin(), strides->end());
  }
  if (dilations) {
    if (dilations->size() != 2)
      return op->emitError("comet-lower-to-runtime: expected 2 dilations");
    d.assign(dilations->begin(), dilations->end());
  }
  for (int64_t v : {s[0], s[1], p[0], p[1], p[2], p[3], d[0], d[1]})
    out.push_back(i64c(v));
  if (group > 0)
    out.push_back(i64c(group));
  return success();
}

int64_t reductionOf(StringRef r) {
  if (r == "none")
    return 0;
  if (r == "sum")
    return 1;
  return 2;
}

/// Raw little-endian data of an initializer/constant as a dense attribute.
DenseElementsAttr denseOf(ElementsAttr attr) {
  if (auto d = dyn_cast<DenseElementsAttr>(attr))
    return d;
  auto type = cast<ShapedType>(attr.getType());
  if (auto res = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return {};
    ArrayRef<char> data = blob->getData();
    unsigned width = type.getElementType().getIntOrFloatBitWidth();
    size_t elemBytes = width == 1 ? 1 : width / 8;
    if (data.size() != size_t(type.getNumElements()) * elemBytes)
      return {};
    if (width == 1) {
      SmallVector<bool> bits;
      for (char c : data)
        bits.push_back(c != 0);
      return DenseElementsAttr::get(type, bits);
    }
    return DenseElementsAttr::getFromRawBuffer(type, data);
  }
  return {};
}

LogicalResult FuncLowering::lowerReturn(func::ReturnOp ret) {
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

LogicalResult FuncLowering::foldI64(Operation *op) {
  auto v = onnx::getConstantInts(op->getResult(0));
  if (!v)
    return op->emitError("comet-lower-to-runtime: integer ")
           << op->getName() << " is only supported on one-element constants";
  return materializeConstant(
      op->getResult(0),
      DenseElementsAttr::get(cast<ShapedType>(op->getResult(0).getType()),
                             ArrayRef<int64_t>(*v)));
}

LogicalResult FuncLowering::emitObserves(Operation *op) {
  // The comet dialect's verifier has checked the entries and their operands.
  auto entries = op->getAttrOfType<ArrayAttr>(CometDialect::kObserveAttrName);
  if (!entries)
    return success();
  for (auto e : entries.getAsRange<ObserveAttr>()) {
    Value dy = operand(op->getOperand(e.getGrad()));
    if (dy && cast<MemRefType>(dy.getType()).getElementType().isF32() &&
        failed(call(Fn::slot_observe_grad,
                    {dy, i64c(e.getSlot()), i64c(e.getConsumer())})))
      return failure();
    if (std::optional<int64_t> auxOperand = e.getAux())
      if (Value aux = operand(op->getOperand(*auxOperand)))
        if (cast<MemRefType>(aux.getType()).getElementType().isF32() &&
            failed(call(Fn::slot_observe_max,
                        {aux, i64c(e.getSlot()), i64c(e.getConsumer())})))
          return failure();
  }
  return success();
}

LogicalResult FuncLowering::lower(Operation *op) {
  using namespace comet::onnx;
  auto res = [&](unsigned i) { return resultBuffer(op->getResult(i)); };
  auto in = [&](unsigned i) { return operand(op->getOperand(i)); };
  // Split and SplitTraining: one copy per output, at its offset on `axis`.
  auto splitParts = [&](int64_t axis, ArrayRef<int64_t> lengths) {
    int64_t offset = 0;
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      if (failed(
              call(Fn::split_part, {in(0), res(i), i64c(axis), i64c(offset)})))
        return failure();
      offset += lengths[i];
    }
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<NoValueOp>([&](auto) { return success(); })
      .Case<InitializerOp>([&](InitializerOp o) -> LogicalResult {
        DenseElementsAttr d = denseOf(o.getValue());
        if (!d)
          return o.emitError("comet-lower-to-runtime: cannot read the data "
                             "of initializer ")
                 << o.getName();
        return materializeConstant(o.getOutput(), d);
      })
      .Case<ConstantOp>([&](ConstantOp o) -> LogicalResult {
        DenseElementsAttr d;
        if (auto v = o.getValue())
          d = denseOf(*v);
        if (!d)
          return o.emitError(
              "comet-lower-to-runtime: only tensor-valued Constant is "
              "supported");
        return materializeConstant(o.getOutput(), d);
      })
      .Case<ShapeOp>([&](ShapeOp o) -> LogicalResult {
        // Shapes are static after specialization: a constant.
        auto xt = cast<RankedTensorType>(o.getData().getType());
        int64_t r = xt.getRank();
        int64_t start = o.getStart(), end = o.getEnd() ? *o.getEnd() : r;
        if (start < 0)
          start += r;
        if (end < 0)
          end += r;
        start = std::clamp<int64_t>(start, 0, r);
        end = std::clamp<int64_t>(end, start, r);
        SmallVector<int64_t> dims(xt.getShape().begin() + start,
                                  xt.getShape().begin() + end);
        auto t = RankedTensorType::get({int64_t(dims.size())}, b.getI64Type());
        if (t != o.getShape().getType())
          return o.emitError("comet-lower-to-runtime: Shape result type ")
                 << o.getShape().getType() << " does not match " << t;
        return materializeConstant(o.getShape(),
                                   DenseElementsAttr::get(t, ArrayRef(dims)));
      })
      .Case<ConvOp>([&](ConvOp o) -> LogicalResult {
        SmallVector<Value> a = {in(0), in(1), in(2), res(0)};
        if (failed(convAttrs(o, o.getX(), o.getPads(), o.getStrides(),
                             o.getDilations(), o.getAutoPad(), o.getGroup(),
                             a)))
          return failure();
        return call(Fn::conv2d, a);
      })
      .Case<ConvGradOp>([&](ConvGradOp o) -> LogicalResult {
        SmallVector<Value> a = {in(0), in(1), in(2), res(0), res(1), res(2)};
        if (failed(convAttrs(o, o.getX(), o.getPads(), o.getStrides(),
                             o.getDilations(), o.getAutoPad(), o.getGroup(),
                             a)))
          return failure();
        return call(Fn::conv_grad2d, a);
      })
      .Case<GemmOp>([&](GemmOp o) {
        return call(Fn::gemm, {in(0), in(1), in(2), res(0),
                               f32c(o.getAlpha().convertToFloat()),
                               f32c(o.getBeta().convertToFloat()),
                               i64c(o.getTransA()), i64c(o.getTransB())});
      })
      .Case<MatMulOp>([&](MatMulOp) {
        return call(Fn::matmul, {in(0), in(1), res(0)});
      })
      .Case<ReluOp>([&](ReluOp) {
        return call(Fn::relu, {in(0), res(0)});
      })
      .Case<ReluGradOp>([&](ReluGradOp o) {
        // X from a fused mask decompress: read the bits from the handle.
        if (Value h = fusedHandle.lookup(o->getOperand(1)))
          return call(Fn::relu_grad_mask, {in(0), h, res(0)});
        return call(Fn::relu_grad, {in(0), in(1), res(0)});
      })
      .Case<DropoutOp>([&](DropoutOp) {
        return call(Fn::dropout, {in(0), in(1), in(2), res(0), res(1)});
      })
      .Case<DropoutGradOp>([&](DropoutGradOp o) {
        // The mask from a fused mask decompress: read its bits.
        if (Value h = fusedHandle.lookup(o->getOperand(1)))
          return call(Fn::dropout_grad_mask, {in(0), h, in(2), in(3), res(0)});
        return call(Fn::dropout_grad, {in(0), in(1), in(2), in(3), res(0)});
      })
      .Case<MaxPoolOp>([&](MaxPoolOp o) -> LogicalResult {
        SmallVector<Value> a = {in(0), res(0), res(1)};
        ArrayRef<int64_t> k = o.getKernelShape();
        if (k.size() != 2)
          return o.emitError("comet-lower-to-runtime: only 2-D MaxPool");
        a.push_back(i64c(k[0]));
        a.push_back(i64c(k[1]));
        if (failed(convAttrs(o, o.getX(), o.getPads(), o.getStrides(),
                             o.getDilations(), o.getAutoPad(), /*group=*/0, a)))
          return failure();
        a.push_back(i64c(o.getStorageOrder()));
        return call(Fn::maxpool2d, a);
      })
      .Case<MaxPoolGradOp>([&](MaxPoolGradOp) {
        return call(Fn::maxpool_grad, {in(0), in(1), res(0)});
      })
      .Case<GlobalAveragePoolOp>([&](GlobalAveragePoolOp) {
        return call(Fn::global_average_pool, {in(0), res(0)});
      })
      .Case<SoftmaxCrossEntropyLossOp>([&](SoftmaxCrossEntropyLossOp o) {
        auto ii = o.getIgnoreIndex();
        return call(Fn::softmax_cross_entropy_loss,
                    {in(0), in(1), in(2), res(0), res(1),
                     i64c(reductionOf(o.getReduction())), i64c(ii ? *ii : 0),
                     i64c(ii ? 1 : 0)});
      })
      .Case<SoftmaxCrossEntropyLossGradOp>(
          [&](SoftmaxCrossEntropyLossGradOp o) -> LogicalResult {
            if (operand(o.getBias()))
              return o.emitError("comet-lower-to-runtime: "
                                 "SoftmaxCrossEntropyLossGrad with a bias "
                                 "input is not supported");
            auto ii = o.getIgnoreIndex();
            return call(Fn::softmax_cross_entropy_loss_grad,
                        {in(0), in(1), in(2), in(3), res(0),
                         i64c(reductionOf(o.getReduction())),
                         i64c(ii ? *ii : 0), i64c(ii ? 1 : 0)});
          })
      .Case<BatchNormInternalOp>([&](BatchNormInternalOp o) {
        // ORT's training artifacts do not return the updated running
        // statistics, so they would be dropped and evaluation would
        // normalise with the initial 0 and 1 forever. As the frameworks do,
        // update them in place when they come from an argument and the new
        // values are used nowhere else (the kernel is elementwise, so the
        // aliasing is safe).
        for (unsigned i : {1u, 2u}) {
          Value result = o->getResult(i), input = o->getOperand(i + 2);
          if (result.use_empty() && !isa<NoneType>(result.getType()) &&
              isa<BlockArgument>(input) && !buffers.count(result))
            buffers[result] = in(i + 2);
        }
        return call(Fn::batch_norm_internal,
                    {in(0), in(1), in(2), in(3), in(4), res(0), res(1), res(2),
                     res(3), res(4), f32c(o.getEpsilon().convertToFloat()),
                     f32c(o.getMomentum().convertToFloat()),
                     i64c(o.getTrainingMode())});
      })
      .Case<BatchNormalizationOp>([&](BatchNormalizationOp o) {
        return call(Fn::batch_norm_internal,
                    {in(0), in(1), in(2), in(3), in(4), res(0), res(1), res(2),
                     Value(), Value(), f32c(o.getEpsilon().convertToFloat()),
                     f32c(o.getMomentum().convertToFloat()),
                     i64c(o.getTrainingMode())});
      })
      .Case<BatchNormalizationGradOp>([&](BatchNormalizationGradOp o) {
        return call(Fn::batch_norm_grad,
                    {in(0), in(1), in(2), in(3), in(4), res(0), res(1), res(2),
                     f32c(o.getEpsilon().convertToFloat())});
      })
      .Case<FlattenOp>([&](FlattenOp o) {
        return call(Fn::flatten, {in(0), res(0), i64c(o.getAxis())});
      })
      .Case<ReshapeOp>([&](ReshapeOp o) {
        return call(Fn::reshape,
                    {in(0), in(1), res(0), i64c(o.getAllowzero())});
      })
      .Case<IdentityOp>([&](IdentityOp o) -> LogicalResult {
        auto t = dyn_cast<RankedTensorType>(o.getInput().getType());
        if (t && t.getElementType().isF32())
          return call(Fn::identity, {in(0), res(0)});
        if (t && t.getElementType().isInteger(64))
          return call(Fn::identity_i64, {in(0), res(0)});
        return o.emitError("comet-lower-to-runtime: Identity of ")
               << o.getInput().getType() << " is not supported";
      })
      .Case<AddOp, SubOp, MulOp, DivOp>([&](Operation *o) -> LogicalResult {
        auto t = cast<RankedTensorType>(o->getResult(0).getType());
        if (t.getElementType().isInteger(64))
          return foldI64(o);
        Fn fn = isa<AddOp>(o)   ? Fn::add
                : isa<SubOp>(o) ? Fn::sub
                : isa<MulOp>(o) ? Fn::mul
                                : Fn::div;
        return call(fn, {in(0), in(1), res(0)});
      })
      .Case<SizeOp>([&](SizeOp o) -> LogicalResult {
        // Static after specialization: a constant.
        auto xt = cast<RankedTensorType>(o.getData().getType());
        auto t = cast<RankedTensorType>(o.getSize().getType());
        return materializeConstant(
            o.getSize(), DenseElementsAttr::get(t, {xt.getNumElements()}));
      })
      .Case<ConstantOfShapeOp>([&](ConstantOfShapeOp o) -> LogicalResult {
        // The shape is static after specialization: a splat constant.
        auto t = cast<RankedTensorType>(o.getOutput().getType());
        Attribute fill = FloatAttr::get(b.getF32Type(), 0.0);
        if (auto v = o.getValue()) {
          DenseElementsAttr d = denseOf(*v);
          if (!d || d.getNumElements() != 1)
            return o.emitError("comet-lower-to-runtime: cannot read the "
                               "value of ConstantOfShape");
          fill = *d.value_begin<Attribute>();
        }
        return materializeConstant(o.getOutput(),
                                   DenseElementsAttr::get(t, fill));
      })
      .Case<TransposeOp>([&](TransposeOp o) {
        int64_t r = cast<RankedTensorType>(o.getData().getType()).getRank();
        SmallVector<int64_t> perm;
        if (auto p = o.getPerm())
          perm.assign(p->begin(), p->end());
        else
          for (int64_t i = r - 1; i >= 0; --i)
            perm.push_back(i);
        return call(Fn::transpose, {in(0), res(0), constMemref(perm)});
      })
      .Case<SqueezeOp, UnsqueezeOp>([&](Operation *o) -> LogicalResult {
        // Same elements, new dims: a copy.
        auto t = cast<RankedTensorType>(o->getOperand(0).getType());
        if (t.getElementType().isF32())
          return call(Fn::identity, {in(0), res(0)});
        if (t.getElementType().isInteger(64))
          return call(Fn::identity_i64, {in(0), res(0)});
        return o->emitError("comet-lower-to-runtime: ")
               << o->getName() << " of " << t << " is not supported";
      })
      .Case<SoftmaxOp>([&](SoftmaxOp o) {
        return call(Fn::softmax, {in(0), res(0), i64c(o.getAxis())});
      })
      .Case<SoftmaxGrad_13Op>([&](SoftmaxGrad_13Op o) {
        return call(Fn::softmax_grad,
                    {in(0), in(1), res(0), i64c(o.getAxis())});
      })
      .Case<LayerNormalizationOp>([&](LayerNormalizationOp o) -> LogicalResult {
        if (o.getStashType() != 1)
          return o.emitError("comet-lower-to-runtime: LayerNormalization "
                             "with stash_type ")
                 << o.getStashType() << " is not supported (only 1, float)";
        return call(Fn::layer_norm,
                    {in(0), in(1), in(2), res(0), res(1), res(2),
                     i64c(o.getAxis()), f32c(o.getEpsilon().convertToFloat())});
      })
      .Case<LayerNormalizationGradOp>([&](LayerNormalizationGradOp o) {
        return call(Fn::layer_norm_grad,
                    {in(0), in(1), in(2), in(3), in(4), res(0), res(1), res(2),
                     i64c(o.getAxis()), f32c(o.getEpsilon().convertToFloat())});
      })
      .Case<FusedMatMulOp>([&](FusedMatMulOp o) -> LogicalResult {
        if (o.getTransBatchA() || o.getTransBatchB())
          return o.emitError("comet-lower-to-runtime: FusedMatMul with "
                             "transBatchA or transBatchB is not supported");
        return call(Fn::fused_matmul,
                    {in(0), in(1), res(0), f32c(o.getAlpha().convertToFloat()),
                     i64c(o.getTransA()), i64c(o.getTransB())});
      })
      .Case<BiasGeluOp>([&](BiasGeluOp) {
        return call(Fn::bias_gelu, {in(0), in(1), res(0)});
      })
      .Case<BiasGeluGrad_dXOp>([&](BiasGeluGrad_dXOp) {
        return call(Fn::bias_gelu_grad_dx, {in(0), in(1), in(2), res(0)});
      })
      .Case<GeluOp>([&](GeluOp) {
        return call(Fn::gelu, {in(0), res(0)});
      })
      .Case<GeluGradOp>([&](GeluGradOp) {
        return call(Fn::gelu_grad, {in(0), in(1), res(0)});
      })
      .Case<QuickGeluOp>([&](QuickGeluOp o) {
        return call(Fn::quick_gelu,
                    {in(0), res(0), f32c(o.getAlpha().convertToFloat())});
      })
      .Case<QuickGeluGradOp>([&](QuickGeluGradOp o) {
        return call(Fn::quick_gelu_grad, {in(0), in(1), res(0),
                                          f32c(o.getAlpha().convertToFloat())});
      })
      .Case<SliceOp>([&](SliceOp) {
        return call(Fn::slice, {in(0), in(1), in(2), in(3), in(4), res(0)});
      })
      .Case<SliceGradOp>([&](SliceGradOp) {
        return call(Fn::slice_grad,
                    {in(0), in(1), in(2), in(3), in(4), in(5), res(0)});
      })
      .Case<ReduceMeanOp>([&](ReduceMeanOp o) {
        Value axes;
        if (auto a = o.getAxes(); a && !a->empty())
          axes = constMemref(*a);
        return call(Fn::reduce_mean,
                    {in(0), axes, res(0), i64c(o.getKeepdims())});
      })
      .Case<GreaterOrEqualOp>([&](GreaterOrEqualOp) {
        return call(Fn::compare,
                    {in(0), in(1), res(0), i64c(COMET_RT_COMPARE_GE)});
      })
      .Case<LessOrEqualOp>([&](LessOrEqualOp) {
        return call(Fn::compare,
                    {in(0), in(1), res(0), i64c(COMET_RT_COMPARE_LE)});
      })
      .Case<EqualOp>([&](EqualOp o) -> LogicalResult {
        if (!getElementTypeOrSelf(o.getA().getType()).isF32())
          return o.emitError("comet-lower-to-runtime: Equal of ")
                 << o.getA().getType() << " is not supported (f32)";
        return call(Fn::compare,
                    {in(0), in(1), res(0), i64c(COMET_RT_COMPARE_EQ)});
      })
      .Case<WhereOp>([&](WhereOp o) -> LogicalResult {
        if (!getElementTypeOrSelf(o.getOutput().getType()).isF32())
          return o.emitError("comet-lower-to-runtime: Where of ")
                 << o.getOutput().getType() << " is not supported (f32)";
        return call(Fn::where, {in(0), in(1), in(2), res(0)});
      })
      .Case<AndOp>([&](AndOp) {
        return call(Fn::and_i1, {in(0), in(1), res(0)});
      })
      .Case<CastOp>([&](CastOp o) -> LogicalResult {
        Type from = cast<ShapedType>(o.getInput().getType()).getElementType();
        Type to = cast<ShapedType>(o.getOutput().getType()).getElementType();
        if (from.isInteger(1) && to.isF32())
          return call(Fn::cast_i1_f32, {in(0), res(0)});
        if (from == to && to.isF32())
          return call(Fn::identity, {in(0), res(0)});
        if (from == to && to.isInteger(64))
          return call(Fn::identity_i64, {in(0), res(0)});
        if (from.isF32() && to.isInteger(64))
          return call(Fn::cast_f32_i64, {in(0), res(0)});
        if (from == to && to.isInteger(1))
          return call(Fn::identity_i1, {in(0), res(0)});
        // A shape entry made float (the 1/sqrt(head_dim) of exported
        // attention): static, so a constant.
        if (from.isInteger(64) && to.isF32())
          if (auto v = onnx::getConstantInts(o.getInput())) {
            SmallVector<float> f(v->begin(), v->end());
            return materializeConstant(
                o.getOutput(),
                DenseElementsAttr::get(
                    cast<ShapedType>(o.getOutput().getType()), ArrayRef(f)));
          }
        return o.emitError("comet-lower-to-runtime: Cast from ")
               << from << " to " << to << " is not supported";
      })
      .Case<ClipOp>([&](ClipOp) {
        return call(Fn::clip, {in(0), in(1), in(2), res(0)});
      })
      .Case<SumOp>([&](SumOp o) -> LogicalResult {
        unsigned n = o.getNumOperands();
        if (n == 1)
          return call(Fn::identity, {in(0), res(0)});
        // Pairwise into the output: y = x0 + x1, then y = y + xi (the glue
        // kernel reads each element before writing it).
        if (failed(call(Fn::add, {in(0), in(1), res(0)})))
          return failure();
        for (unsigned i = 2; i < n; ++i)
          if (failed(call(Fn::add, {res(0), in(i), res(0)})))
            return failure();
        return success();
      })
      .Case<ExpandOp>([&](ExpandOp) {
        return call(Fn::expand, {in(0), in(1), res(0)});
      })
      .Case<ReduceSumOp>([&](ReduceSumOp o) {
        return call(Fn::reduce_sum,
                    {in(0), in(1), res(0), i64c(o.getKeepdims()),
                     i64c(o.getNoopWithEmptyAxes())});
      })
      .Case<ScaleOp>([&](ScaleOp o) -> LogicalResult {
        Value scale = in(1);
        // ORT's Scale also takes an integer scale (a mean's element count,
        // computed from Size): static here, so an f32 constant.
        if (cast<RankedTensorType>(o.getScale().getType())
                .getElementType()
                .isInteger(64)) {
          auto v = onnx::getConstantInts(o.getScale());
          if (!v || v->size() != 1)
            return o.emitError("comet-lower-to-runtime: an integer Scale "
                               "factor must be a constant");
          scale = constMemref(float((*v)[0]));
        }
        return call(Fn::scale, {in(0), scale, res(0), i64c(o.getScaleDown())});
      })
      .Case<InPlaceAccumulatorV2Op>([&](InPlaceAccumulatorV2Op) {
        return call(Fn::inplace_accumulator_v2,
                    {in(0), in(1), in(2), res(0), res(1)});
      })
      // Sigmoid, Tanh, AveragePool and the Pad/Neg around it.
      .Case<SigmoidOp>([&](SigmoidOp) {
        return call(Fn::sigmoid, {in(0), res(0)});
      })
      .Case<TanhOp>([&](TanhOp) {
        return call(Fn::tanh, {in(0), res(0)});
      })
      .Case<SigmoidGradOp>([&](SigmoidGradOp) {
        return call(Fn::sigmoid_grad, {in(0), in(1), res(0)});
      })
      .Case<TanhGradOp>([&](TanhGradOp) {
        return call(Fn::tanh_grad, {in(0), in(1), res(0)});
      })
      .Case<AveragePoolOp, AveragePoolGradOp>(
          [&](Operation *o) -> LogicalResult {
            auto attrs = [&](auto pool) -> LogicalResult {
              ArrayRef<int64_t> k = pool.getKernelShape();
              if (k.size() != 2)
                return o->emitError("comet-lower-to-runtime: only 2-D ")
                       << o->getName() << " is supported";
              if (pool.getCeilMode() != 0)
                return o->emitError("comet-lower-to-runtime: ")
                       << o->getName() << " with ceil_mode 1 is not supported";
              if (auto d = pool.getDilations();
                  d && llvm::any_of(*d, [](int64_t v) { return v != 1; }))
                return o->emitError("comet-lower-to-runtime: ")
                       << o->getName() << " with dilations is not supported";
              SmallVector<Value> a = {in(0), res(0), i64c(k[0]), i64c(k[1])};
              // Strides and pads; the runtime takes no dilations.
              if (failed(convAttrs(o, o->getOperand(0), pool.getPads(),
                                   pool.getStrides(), std::nullopt,
                                   pool.getAutoPad(), /*group=*/0, a)))
                return failure();
              a.pop_back_n(2);
              a.push_back(i64c(pool.getCountIncludePad()));
              return call(isa<AveragePoolOp>(o) ? Fn::avgpool2d
                                                : Fn::avgpool_grad2d,
                          a);
            };
            if (auto f = dyn_cast<AveragePoolOp>(o))
              return attrs(f);
            return attrs(cast<AveragePoolGradOp>(o));
          })
      .Case<PadOp>([&](PadOp o) -> LogicalResult {
        if (o.getMode() != "constant")
          return o.emitError("comet-lower-to-runtime: Pad mode '")
                 << o.getMode() << "' is not supported (only 'constant')";
        auto pads = onnx::getConstantInts(o.getPads());
        if (!pads)
          return o.emitError("comet-lower-to-runtime: Pad needs constant "
                             "pads");
        // pads of `axes` only: spread over all dims.
        int64_t r = cast<RankedTensorType>(o.getData().getType()).getRank();
        SmallVector<int64_t> full(2 * r, 0);
        if (isa<NoneType>(o.getAxes().getType())) {
          if (int64_t(pads->size()) != 2 * r)
            return o.emitError("comet-lower-to-runtime: Pad has ")
                   << pads->size() << " pads for rank " << r;
          full = *pads;
        } else {
          auto axes = onnx::getConstantInts(o.getAxes());
          if (!axes || pads->size() != 2 * axes->size())
            return o.emitError("comet-lower-to-runtime: Pad needs constant "
                               "axes, two pads each");
          for (auto [i, x] : llvm::enumerate(*axes)) {
            if (x < -r || x >= r)
              return o.emitError("comet-lower-to-runtime: Pad axis ")
                     << x << " is out of range for rank " << r;
            int64_t ax = x < 0 ? x + r : x;
            full[ax] = (*pads)[i];
            full[r + ax] = (*pads)[i + axes->size()];
          }
        }
        return call(Fn::pad, {in(0), constMemref(full), in(2), res(0)});
      })
      .Case<NegOp>([&](NegOp o) -> LogicalResult {
        auto t = cast<RankedTensorType>(o.getY().getType());
        if (t.getElementType().isInteger(64)) {
          if (!onnx::getConstantInts(o.getY()))
            return o.emitError("comet-lower-to-runtime: integer Neg is only "
                               "supported on constants");
          return foldI64(o);
        }
        return call(Fn::scale, {in(0), constMemref(-1.0f), res(0), i64c(0)});
      })
      // Exported eval graphs and embedding models.
      .Case<PowOp>([&](PowOp) {
        return call(Fn::pow, {in(0), in(1), res(0)});
      })
      .Case<SqrtOp>([&](SqrtOp) {
        return call(Fn::sqrt, {in(0), res(0)});
      })
      .Case<ErfOp>([&](ErfOp) {
        return call(Fn::erf, {in(0), res(0)});
      })
      .Case<ExpOp>([&](ExpOp) {
        return call(Fn::exp, {in(0), res(0)});
      })
      .Case<ReciprocalOp>([&](ReciprocalOp) {
        return call(Fn::reciprocal, {in(0), res(0)});
      })
      .Case<RangeOp>([&](RangeOp o) -> LogicalResult {
        if (!getElementTypeOrSelf(o.getOutput().getType()).isInteger(64) ||
            !onnx::getConstantInts(o.getOutput()))
          return o.emitError("comet-lower-to-runtime: Range is only "
                             "supported on integer constants");
        return foldI64(o);
      })
      .Case<GatherOp>([&](GatherOp o) -> LogicalResult {
        Type elt = getElementTypeOrSelf(o.getOutput().getType());
        // An entry of a static shape: a constant.
        if (elt.isInteger(64) && onnx::getConstantInts(o.getOutput()))
          return foldI64(o);
        if (!getElementTypeOrSelf(o.getIndices().getType()).isInteger(64))
          return o.emitError("comet-lower-to-runtime: Gather indices of ")
                 << o.getIndices().getType() << " are not supported (i64)";
        if (elt.isF32() || elt.isInteger(64))
          return call(elt.isF32() ? Fn::gather : Fn::gather_i64,
                      {in(0), in(1), res(0), i64c(o.getAxis())});
        return o.emitError("comet-lower-to-runtime: Gather of ")
               << o.getData().getType() << " is not supported";
      })
      .Case<GatherGradOp>([&](GatherGradOp o) -> LogicalResult {
        if (!getElementTypeOrSelf(o.getIndices().getType()).isInteger(64))
          return o.emitError("comet-lower-to-runtime: GatherGrad indices of ")
                 << o.getIndices().getType() << " are not supported (i64)";
        return call(Fn::gather_grad, {in(1), in(2), res(0), i64c(o.getAxis())});
      })
      .Case<ConcatOp, ConcatTrainingOp>([&](Operation *o) -> LogicalResult {
        Value out = o->getResult(0);
        auto t = cast<RankedTensorType>(out.getType());
        if (t.getElementType().isInteger(64) && onnx::getConstantInts(out)) {
          // A shape built from constants (ConcatTraining stands for every
          // Concat of a training graph); its lengths are constants too.
          if (failed(foldI64(o)))
            return failure();
          auto c = dyn_cast<ConcatTrainingOp>(o);
          if (!c || isa<NoneType>(c.getPerInputLength().getType()))
            return success();
          auto lengths = onnx::getConstantInts(c.getPerInputLength());
          if (!lengths)
            return o->emitError("comet-lower-to-runtime: ConcatTraining's "
                                "per_input_length is not known");
          return materializeConstant(
              c.getPerInputLength(),
              DenseElementsAttr::get(
                  cast<ShapedType>(c.getPerInputLength().getType()),
                  ArrayRef(*lengths)));
        }
        if (!t.getElementType().isF32() && !t.getElementType().isInteger(64))
          return o->emitError("comet-lower-to-runtime: Concat of ")
                 << t << " is not supported";
        int64_t axis = isa<ConcatOp>(o) ? cast<ConcatOp>(o).getAxis()
                                        : cast<ConcatTrainingOp>(o).getAxis();
        if (axis < 0)
          axis += t.getRank();
        SmallVector<int64_t> lengths;
        for (Value v : o->getOperands())
          lengths.push_back(
              cast<RankedTensorType>(v.getType()).getDimSize(axis));
        if (t.getElementType().isInteger(64) && onnx::getConstantInts(out)) {
          if (failed(foldI64(o)))
            return failure();
        } else {
          // One copy per input, each at its offset along the axis.
          Fn fn = t.getElementType().isF32() ? Fn::concat_part
                                             : Fn::concat_part_i64;
          int64_t offset = 0;
          for (unsigned i = 0; i < o->getNumOperands(); ++i) {
            if (failed(call(fn, {in(i), res(0), i64c(axis), i64c(offset)})))
              return failure();
            offset += lengths[i];
          }
        }
        if (auto c = dyn_cast<ConcatTrainingOp>(o);
            c && !isa<NoneType>(c.getPerInputLength().getType()))
          return materializeConstant(
              c.getPerInputLength(),
              DenseElementsAttr::get(
                  cast<ShapedType>(c.getPerInputLength().getType()),
                  ArrayRef(lengths)));
        return success();
      })
      .Case<SplitOp>([&](SplitOp o) -> LogicalResult {
        auto lengths = o.getSplitLengths();
        if (!lengths)
          return o.emitError("comet-lower-to-runtime: Split needs a constant "
                             "split or a static dim to divide");
        auto t = cast<RankedTensorType>(o.getInput().getType());
        if (!t.getElementType().isF32())
          return o.emitError("comet-lower-to-runtime: Split of ")
                 << t << " is not supported (f32)";
        return splitParts(o.getAxis() < 0 ? o.getAxis() + t.getRank()
                                          : o.getAxis(),
                          *lengths);
      })
      .Case<SplitTrainingOp>([&](SplitTrainingOp o) -> LogicalResult {
        auto split = onnx::getConstantInts(o.getSplit());
        if (!split || split->size() != o.getNumResults())
          return o.emitError("comet-lower-to-runtime: SplitTraining needs a "
                             "constant split with one length per output");
        int64_t r = cast<RankedTensorType>(o.getInput().getType()).getRank();
        return splitParts(o.getAxis() < 0 ? o.getAxis() + r : o.getAxis(),
                          *split);
      })
      .Case<CompressOp>([&](CompressOp o) -> LogicalResult {
        auto mt = cast<MemRefType>(operand(o.getInput()).getType());
        bool isBool = mt.getElementType().isInteger(1);
        if (isBool && o.getCodec() != Codec::mask)
          return o.emitError("comet-lower-to-runtime: a bool tensor can "
                             "only be compressed as a mask");
        if (!isBool && !mt.getElementType().isF32())
          return o.emitError("comet-lower-to-runtime: only f32 and bool "
                             "tensors can be compressed");
        int64_t slot = -1;
        double eb = 0;
        if (auto bound = o.getBound()) {
          eb = bound->getAbsValue();
          if (auto s = bound->getSlot())
            slot = *s;
        }
        if (slot >= 0 && o->hasAttr(CometDialect::kTuneAttrName) &&
            failed(call(Fn::slot_observe_act,
                        {operand(o.getInput()), i64c(slot), i64c(0)})))
          return failure();
        int64_t site = nextSite++;
        func::CallOp c =
            isBool
                ? emitCall(Fn::compress_i1, {operand(o.getInput()), i64c(site)})
                : emitCall(Fn::compress,
                           {operand(o.getInput()),
                            i32c(static_cast<int32_t>(o.getCodec())),
                            i64c(slot), f64c(eb), i64c(site)});
        if (!c)
          return failure();
        Value h = c.getResult(0);
        if (checkErrors) {
          // A null handle is a failure; its message is in
          // comet_rt_handles_last_error().
          Value ok = arith::CmpIOp::create(b, loc(), arith::CmpIPredicate::ne,
                                           h, i64c(0));
          Value rc = arith::SelectOp::create(b, loc(), ok, i32c(0), i32c(1));
          check(rc);
        }
        buffers[o.getResult()] = h;
        owned.insert(o.getResult());
        return success();
      })
      .Case<DecompressOp>([&](DecompressOp o) -> LogicalResult {
        Value h = buffers.lookup(o.getInput());
        if (!h)
          return o.emitError("comet-lower-to-runtime: decompress of an "
                             "unknown handle");
        // Fused into its ReluGrad readers: no tensor, no call here; the
        // analysis keeps the handle live until the last of them.
        if (la.isFusedMaskDecompress(o.getResult())) {
          fusedHandle[o.getResult()] = h;
          return success();
        }
        if (!cast<ShapedType>(o.getResult().getType()).getElementType().isF32())
          return o.emitError("comet-lower-to-runtime: only f32 tensors can "
                             "be decompressed into a buffer (a bool mask "
                             "must be read by DropoutGrad alone)");
        return call(Fn::decompress, {h, res(0)});
      })
      .Default([&](Operation *o) {
        return o->emitError("comet-lower-to-runtime: no runtime lowering for ")
               << o->getName();
      });
}

LogicalResult FuncLowering::run() {
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
  func::ReturnOp::create(b, loc(), ValueRange{i32c(0)});

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

  std::string name = oldF.getName().str();
  oldF.erase();
  newF.setName(name);
  return success();
}

struct LowerToRuntimePass
    : public comet::impl::CometLowerToRuntimeBase<LowerToRuntimePass> {
  using Base::Base;

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
      FuncLowering lowering(f, module, checkErrors);
      if (failed(lowering.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
