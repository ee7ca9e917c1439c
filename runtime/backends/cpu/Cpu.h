//===- Cpu.h - The CPU backend: one run() per abi.def entry ---------------===//
//
// Every entry's computation on the host, by family: Conv.cpp, Gemm.cpp,
// Norm.cpp, Softmax.cpp, Loss.cpp, Pool.cpp, Eltwise.cpp, Binary.cpp,
// Shape.cpp, Gather.cpp, Reduce.cpp, Optim.cpp, Dropout.cpp, Codec.cpp,
// Stats.cpp.
// The arguments arrive validated (runtime/core/Contract.h); a run() only
// computes, and fails only when a library or the allocator does. The CPU
// backend implements every entry. Not installed.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_BACKENDS_CPU_CPU_H
#define COMET_RUNTIME_BACKENDS_CPU_CPU_H

#include "Contract.h"

namespace comet::rt::cpu {

/// The CPU backend's table (Table.cpp).
const Backend &table();
/// What the contract's handle checks ask about a CPU handle (Codec.cpp).
bool handleInfo(comet_rt_context *ctx, int64_t h, HandleInfo &out);

#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args) COMET_RT_DECLARE_RUN(name, ret)
#include "comet/runtime/abi.def"

} // namespace comet::rt::cpu

#endif // COMET_RUNTIME_BACKENDS_CPU_CPU_H
