//===- ConvLowering.cpp - Convolution and pooling windows -----------------===//
//
// Conv, ConvGrad, MaxPool, MaxPoolGrad, AveragePool and AveragePoolGrad:
// 2-D (NCHW) windows whose attributes become explicit scalars (strides,
// pads top/left/bottom/right, dilations, group); auto_pad must resolve to
// explicit pads.
//
//===----------------------------------------------------------------------===//
#include "RuntimeLowering.h"

#include "comet/Dialect/ONNX/IR/ONNXOps.h"

using namespace mlir;
using namespace comet;
using namespace comet::onnx;
using rtabi::Fn;

namespace {

/// Appends the window's scalars to `out`: strides, pads, dilations, then
/// the group when it is positive.
LogicalResult windowArgs(RuntimeLowering &rt, Operation *op, Value x,
                         std::optional<ArrayRef<int64_t>> pads,
                         std::optional<ArrayRef<int64_t>> strides,
                         std::optional<ArrayRef<int64_t>> dilations,
                         StringRef autoPad, int64_t group,
                         SmallVectorImpl<Value> &out) {
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
    out.push_back(rt.i64(v));
  if (group > 0)
    out.push_back(rt.i64(group));
  return success();
}

struct ConvLowering : OpRuntimeLoweringPattern<ConvOp> {
  LogicalResult lowerOp(ConvOp o, RuntimeLowering &rt) const override {
    SmallVector<Value> a = {rt.operand(o.getX()), rt.operand(o.getW()),
                            rt.operand(o.getB()), rt.result(o.getY())};
    if (failed(windowArgs(rt, o, o.getX(), o.getPads(), o.getStrides(),
                          o.getDilations(), o.getAutoPad(), o.getGroup(), a)))
      return failure();
    return rt.call(Fn::conv2d, a);
  }
};

struct ConvGradLowering : OpRuntimeLoweringPattern<ConvGradOp> {
  LogicalResult lowerOp(ConvGradOp o, RuntimeLowering &rt) const override {
    SmallVector<Value> a = {rt.operand(o.getDY()), rt.operand(o.getX()),
                            rt.operand(o.getW()),  rt.result(o.getDX()),
                            rt.result(o.getDW()),  rt.result(o.getDB())};
    if (failed(windowArgs(rt, o, o.getX(), o.getPads(), o.getStrides(),
                          o.getDilations(), o.getAutoPad(), o.getGroup(), a)))
      return failure();
    return rt.call(Fn::conv_grad2d, a);
  }
};

/// Whether MaxPool's Indices (or MaxPoolGrad's) are window positions (ui8)
/// rather than flat indices.
bool holdsWindowPositions(Value indices) {
  auto t = dyn_cast<RankedTensorType>(indices.getType());
  return t && t.getElementType().isUnsignedInteger(8);
}

/// Appends MaxPool's (or MaxPoolGrad's) kernel and window to `a`; `x` is
/// the pooling's input (MaxPoolGrad's dX).
template <typename OpTy>
LogicalResult maxPoolWindowArgs(OpTy o, RuntimeLowering &rt, Value x,
                                SmallVectorImpl<Value> &a) {
  ArrayRef<int64_t> k = o.getKernelShape();
  if (k.size() != 2)
    return o.emitError("comet-lower-to-runtime: only 2-D ") << o->getName();
  a.push_back(rt.i64(k[0]));
  a.push_back(rt.i64(k[1]));
  return windowArgs(rt, o, x, o.getPads(), o.getStrides(), o.getDilations(),
                    o.getAutoPad(), /*group=*/0, a);
}

/// MaxPool: maxpool2d with flat Indices, maxpool2d_window with window
/// positions (which do not depend on storage_order).
struct MaxPoolLowering : OpRuntimeLoweringPattern<MaxPoolOp> {
  LogicalResult lowerOp(MaxPoolOp o, RuntimeLowering &rt) const override {
    bool positions = holdsWindowPositions(o.getIndices());
    SmallVector<Value> a = {rt.operand(o.getX()), rt.result(o.getY()),
                            rt.result(o.getIndices())};
    if (failed(maxPoolWindowArgs(o, rt, o.getX(), a)))
      return failure();
    if (positions)
      return rt.call(Fn::maxpool2d_window, a);
    a.push_back(rt.i64(o.getStorageOrder()));
    return rt.call(Fn::maxpool2d, a);
  }
};

/// MaxPoolGrad: maxpool_grad from flat indices; maxpool_grad_window from
/// window positions, with the window that turns them into the same flat
/// indices.
struct MaxPoolGradLowering : OpRuntimeLoweringPattern<MaxPoolGradOp> {
  LogicalResult lowerOp(MaxPoolGradOp o, RuntimeLowering &rt) const override {
    SmallVector<Value> a = {rt.operand(o.getDY()), rt.operand(o.getIndices()),
                            rt.result(o.getDX())};
    if (!holdsWindowPositions(o.getIndices()))
      return rt.call(Fn::maxpool_grad, a);
    if (failed(maxPoolWindowArgs(o, rt, o.getDX(), a)))
      return failure();
    a.push_back(rt.i64(o.getStorageOrder()));
    return rt.call(Fn::maxpool_grad_window, a);
  }
};

/// AveragePool and AveragePoolGrad: one window from X (or dY) to Y (dX).
template <typename OpTy, Fn fn>
struct AveragePoolLowering : OpRuntimeLoweringPattern<OpTy> {
  LogicalResult lowerOp(OpTy o, RuntimeLowering &rt) const override {
    ArrayRef<int64_t> k = o.getKernelShape();
    if (k.size() != 2)
      return o.emitError("comet-lower-to-runtime: only 2-D ")
             << o->getName() << " is supported";
    if (o.getCeilMode() != 0)
      return o.emitError("comet-lower-to-runtime: ")
             << o->getName() << " with ceil_mode 1 is not supported";
    if (auto d = o.getDilations();
        d && llvm::any_of(*d, [](int64_t v) { return v != 1; }))
      return o.emitError("comet-lower-to-runtime: ")
             << o->getName() << " with dilations is not supported";
    SmallVector<Value> a = {rt.operand(o, 0), rt.result(o, 0), rt.i64(k[0]),
                            rt.i64(k[1])};
    // Strides and pads; the runtime takes no dilations.
    if (failed(windowArgs(rt, o, o->getOperand(0), o.getPads(), o.getStrides(),
                          std::nullopt, o.getAutoPad(),
                          /*group=*/0, a)))
      return failure();
    a.pop_back_n(2);
    a.push_back(rt.i64(o.getCountIncludePad()));
    return rt.call(fn, a);
  }
};

} // namespace

void comet::populateConvLoweringPatterns(RuntimeLoweringPatternSet &patterns) {
  patterns
      .add<ConvLowering, ConvGradLowering, MaxPoolLowering, MaxPoolGradLowering,
           AveragePoolLowering<AveragePoolOp, Fn::avgpool2d>,
           AveragePoolLowering<AveragePoolGradOp, Fn::avgpool_grad2d>>();
}
