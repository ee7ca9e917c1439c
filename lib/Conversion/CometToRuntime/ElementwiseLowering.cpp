//===- ElementwiseLowering.cpp - Arithmetic, comparisons, casts -----------===//
//
// The elementwise ops whose lowering is more than one call in abi.def's
// order: integer arithmetic (shape arithmetic, folded once shapes are
// static), Sum as pairwise adds, Neg as a Scale by -1, the comparisons with
// their predicate, Cast by element types, Scale with an integer factor,
// i64 Mod.
// Elementwise ops of one call declare it in ODS (`runtimeCall`).
//
//===----------------------------------------------------------------------===//
#include "RuntimeLowering.h"

#include "comet/Dialect/ONNX/IR/ONNXOps.h"
#include "comet/runtime/abi.h"

using namespace mlir;
using namespace comet;
using namespace comet::onnx;
using rtabi::Fn;

namespace {

/// Add, Sub, Mul and Div: f32 with numpy broadcasting, or i64 constants.
template <typename OpTy, Fn fn>
struct ArithmeticLowering : OpRuntimeLoweringPattern<OpTy> {
  LogicalResult lowerOp(OpTy o, RuntimeLowering &rt) const override {
    auto t = cast<RankedTensorType>(o.getC().getType());
    if (t.getElementType().isInteger(64))
      return rt.foldI64(o);
    return rt.call(
        fn, {rt.operand(o.getA()), rt.operand(o.getB()), rt.result(o.getC())});
  }
};

/// Mod of i64 tensors (constant ones have folded): mod_i64. The runtime
/// has no float Mod.
struct ModLowering : OpRuntimeLoweringPattern<ModOp> {
  LogicalResult lowerOp(ModOp o, RuntimeLowering &rt) const override {
    if (!getElementTypeOrSelf(o.getC().getType()).isInteger(64))
      return o.emitError("comet-lower-to-runtime: Mod of ")
             << o.getC().getType() << " is not supported (i64)";
    return rt.call(Fn::mod_i64, {rt.operand(o.getA()), rt.operand(o.getB()),
                                 rt.result(o.getC()), rt.i64(o.getFmod())});
  }
};

struct SumLowering : OpRuntimeLoweringPattern<SumOp> {
  LogicalResult lowerOp(SumOp o, RuntimeLowering &rt) const override {
    unsigned n = o.getNumOperands();
    Value out = rt.result(o.getSum());
    if (n == 1)
      return rt.call(Fn::identity, {rt.operand(o, 0), out});
    // Pairwise into the output: y = x0 + x1, then y = y + xi (the glue
    // kernel reads each element before writing it).
    if (failed(rt.call(Fn::add, {rt.operand(o, 0), rt.operand(o, 1), out})))
      return failure();
    for (unsigned i = 2; i < n; ++i)
      if (failed(rt.call(Fn::add, {out, rt.operand(o, i), out})))
        return failure();
    return success();
  }
};

struct NegLowering : OpRuntimeLoweringPattern<NegOp> {
  LogicalResult lowerOp(NegOp o, RuntimeLowering &rt) const override {
    auto t = cast<RankedTensorType>(o.getY().getType());
    if (t.getElementType().isInteger(64)) {
      if (!getConstantInts(o.getY()))
        return o.emitError("comet-lower-to-runtime: integer Neg is only "
                           "supported on constants");
      return rt.foldI64(o);
    }
    return rt.call(Fn::scale, {rt.operand(o.getX()), rt.constMemref(-1.0f),
                               rt.result(o.getY()), rt.i64(0)});
  }
};

/// GreaterOrEqual, LessOrEqual and Equal: `compare` with the predicate.
template <typename OpTy, int64_t predicate>
struct CompareLowering : OpRuntimeLoweringPattern<OpTy> {
  LogicalResult lowerOp(OpTy o, RuntimeLowering &rt) const override {
    if constexpr (predicate == COMET_RT_COMPARE_EQ)
      if (!getElementTypeOrSelf(o.getA().getType()).isF32())
        return o.emitError("comet-lower-to-runtime: Equal of ")
               << o.getA().getType() << " is not supported (f32)";
    return rt.call(Fn::compare, {rt.operand(o.getA()), rt.operand(o.getB()),
                                 rt.result(o.getC()), rt.i64(predicate)});
  }
};

struct CastLowering : OpRuntimeLoweringPattern<CastOp> {
  LogicalResult lowerOp(CastOp o, RuntimeLowering &rt) const override {
    Type from = cast<ShapedType>(o.getInput().getType()).getElementType();
    Type to = cast<ShapedType>(o.getOutput().getType()).getElementType();
    auto copyWith = [&](Fn fn) {
      return rt.call(fn, {rt.operand(o.getInput()), rt.result(o.getOutput())});
    };
    if (from.isInteger(1) && to.isF32())
      return copyWith(Fn::cast_i1_f32);
    if (from == to && to.isF32())
      return copyWith(Fn::identity);
    if (from == to && to.isInteger(64))
      return copyWith(Fn::identity_i64);
    if (from.isF32() && to.isInteger(64))
      return copyWith(Fn::cast_f32_i64);
    if (from == to && to.isInteger(1))
      return copyWith(Fn::identity_i1);
    // A shape entry made float (the 1/sqrt(head_dim) of exported
    // attention): static, so a constant.
    if (from.isInteger(64) && to.isF32())
      if (auto v = getConstantInts(o.getInput())) {
        SmallVector<float> f(v->begin(), v->end());
        return rt.materializeConstant(
            o.getOutput(),
            DenseElementsAttr::get(cast<ShapedType>(o.getOutput().getType()),
                                   ArrayRef(f)));
      }
    return o.emitError("comet-lower-to-runtime: Cast from ")
           << from << " to " << to << " is not supported";
  }
};

struct ScaleLowering : OpRuntimeLoweringPattern<ScaleOp> {
  LogicalResult lowerOp(ScaleOp o, RuntimeLowering &rt) const override {
    Value scale = rt.operand(o.getScale());
    // ORT's Scale also takes an integer scale (a mean's element count,
    // computed from Size): static here, so an f32 constant.
    if (cast<RankedTensorType>(o.getScale().getType())
            .getElementType()
            .isInteger(64)) {
      auto v = getConstantInts(o.getScale());
      if (!v || v->size() != 1)
        return o.emitError("comet-lower-to-runtime: an integer Scale "
                           "factor must be a constant");
      scale = rt.constMemref(float((*v)[0]));
    }
    return rt.call(Fn::scale,
                   {rt.operand(o.getInput()), scale, rt.result(o.getOutput()),
                    rt.i64(o.getScaleDown())});
  }
};

struct IdentityLowering : OpRuntimeLoweringPattern<IdentityOp> {
  LogicalResult lowerOp(IdentityOp o, RuntimeLowering &rt) const override {
    auto t = dyn_cast<RankedTensorType>(o.getInput().getType());
    if (t && t.getElementType().isF32())
      return rt.call(Fn::identity,
                     {rt.operand(o.getInput()), rt.result(o.getOutput())});
    if (t && t.getElementType().isInteger(64))
      return rt.call(Fn::identity_i64,
                     {rt.operand(o.getInput()), rt.result(o.getOutput())});
    return o.emitError("comet-lower-to-runtime: Identity of ")
           << o.getInput().getType() << " is not supported";
  }
};

} // namespace

void comet::populateElementwiseLoweringPatterns(
    RuntimeLoweringPatternSet &patterns) {
  patterns.add<
      ArithmeticLowering<AddOp, Fn::add>, ArithmeticLowering<SubOp, Fn::sub>,
      ArithmeticLowering<MulOp, Fn::mul>, ArithmeticLowering<DivOp, Fn::div>,
      ModLowering, SumLowering, NegLowering,
      CompareLowering<GreaterOrEqualOp, COMET_RT_COMPARE_GE>,
      CompareLowering<LessOrEqualOp, COMET_RT_COMPARE_LE>,
      CompareLowering<EqualOp, COMET_RT_COMPARE_EQ>, CastLowering,
      ScaleLowering, IdentityLowering>();
}
