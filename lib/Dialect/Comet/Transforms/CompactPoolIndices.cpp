//===- CompactPoolIndices.cpp - MaxPool's argmax as a window position -----===//
//
// MaxPool's Indices (flat int64 indices into X) live from the forward to
// MaxPoolGrad in the backward. Where only MaxPoolGrads of the same window
// read them, the argmax's position in its window (a byte for up to 256
// positions) says the same: the window maps it back to the flat index. The
// Indices are retyped to ui8; the analysis, the report and the lowering
// read the new type.
//
//===----------------------------------------------------------------------===//
#include "comet/Dialect/Comet/Transforms/Passes.h"
#include "comet/Dialect/ONNX/IR/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace comet {
#define GEN_PASS_DEF_COMETCOMPACTPOOLINDICES
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;
using namespace comet::onnx;

namespace {

/// A pooling window with ONNX's defaults filled in.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
  std::string autoPad;
  int64_t ceilMode, storageOrder;

  template <typename OpTy> static Window of(OpTy op) {
    size_t n = op.getKernelShape().size();
    auto orDefault = [](std::optional<ArrayRef<int64_t>> v, size_t len,
                        int64_t dflt) {
      return v ? SmallVector<int64_t>(*v) : SmallVector<int64_t>(len, dflt);
    };
    return {SmallVector<int64_t>(op.getKernelShape()),
            orDefault(op.getStrides(), n, 1),
            orDefault(op.getPads(), 2 * n, 0),
            orDefault(op.getDilations(), n, 1),
            op.getAutoPad().str(),
            op.getCeilMode(),
            op.getStorageOrder()};
  }
  bool operator==(const Window &o) const {
    return kernel == o.kernel && strides == o.strides && pads == o.pads &&
           dilations == o.dilations && autoPad == o.autoPad &&
           ceilMode == o.ceilMode && storageOrder == o.storageOrder;
  }
  /// Whether a byte holds every position of the window.
  bool positionsFitAByte() const {
    int64_t n = 1;
    for (int64_t k : kernel)
      if ((n *= k) > kMaxPoolWindowPositions) // before it can overflow
        return false;
    return true;
  }
};

/// Whether the pool's Indices can be window positions: i64, read only as
/// the Indices of MaxPoolGrads of the same window.
bool canCompact(MaxPoolOp pool) {
  auto t = dyn_cast<RankedTensorType>(pool.getIndices().getType());
  if (!t || !t.getElementType().isSignlessInteger(64) ||
      pool.getIndices().use_empty())
    return false;
  Window w = Window::of(pool);
  if (!w.positionsFitAByte())
    return false;
  for (OpOperand &use : pool.getIndices().getUses()) {
    auto grad = dyn_cast<MaxPoolGradOp>(use.getOwner());
    if (!grad || &use != &grad.getIndicesMutable() || !(Window::of(grad) == w))
      return false;
  }
  return true;
}

struct CompactPoolIndicesPass
    : public comet::impl::CometCompactPoolIndicesBase<CompactPoolIndicesPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](MaxPoolOp pool) {
      if (!canCompact(pool))
        return;
      auto t = cast<RankedTensorType>(pool.getIndices().getType());
      pool.getIndices().setType(
          t.clone(IntegerType::get(&getContext(), 8, IntegerType::Unsigned)));
      ++numCompacted;
    });
  }
};

} // namespace
