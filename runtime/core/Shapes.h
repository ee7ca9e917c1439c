//===- Shapes.h - Shape arithmetic the checks and backends share ----------===//
//
// What both validates an entry (runtime/core/Checks.cpp) and computes it
// (runtime/backends/*): numpy broadcasting, the ONNX Slice rules, reduced
// axes, the values of Dropout's optional operands. Once validated, a
// backend calls the same function again and gets no error. Not installed.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_CORE_SHAPES_H
#define COMET_RUNTIME_CORE_SHAPES_H

#include "Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace comet::rt {

/// The product of d[from, to).
int64_t product(const std::vector<int64_t> &d, size_t from, size_t to);
/// Row-major strides of dims.
std::vector<int64_t> plainStrides(const std::vector<int64_t> &d);
/// axis + rank when negative (no range check).
inline int64_t normAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// The numpy broadcast of shapes a and b into out; false if they do not
/// broadcast.
bool broadcastShape(const std::vector<int64_t> &a,
                    const std::vector<int64_t> &b, std::vector<int64_t> &out);
/// Strides of `in` seen from out's index space (in padded at the front to
/// out's rank): 0 along broadcast dims. False if in does not broadcast to
/// out.
bool broadcastStrides(const std::vector<int64_t> &in,
                      const std::vector<int64_t> &out,
                      std::vector<int64_t> &strides);

/// Per-dim start, step and count of a Slice of `dims` (ONNX: negative
/// starts and ends count from the back, then clamp).
struct SliceSpec {
  std::vector<int64_t> start, step, count;
};
/// Builds the spec from the host values of starts, ends and the optional
/// axes and steps; "" or why they are invalid.
std::string sliceSpec(const std::vector<int64_t> &dims, const Tensor &starts,
                      const Tensor &ends, const Tensor &axes,
                      const Tensor &steps, SliceSpec &s);

/// Which dims of a rank-r tensor a ReduceSum/ReduceMean reduces: the
/// (host) axes, or all of them when axes is absent. "" or why not.
std::string reducedAxes(int64_t rank, const Tensor &axes,
                        std::vector<bool> &reduced);

/// Dropout's ratio[1]? (default 0.5) and training_mode[1]? (default
/// false), read on the host (PARAM operands).
float dropoutRatio(const Tensor &ratio);
bool dropoutTraining(const Tensor &trainingMode);

} // namespace comet::rt

#endif // COMET_RUNTIME_CORE_SHAPES_H
