//===- Cuda.h - The CUDA backend: one run() per abi.def entry -------------===//
//
// Every entry's computation on a CUDA device, by family: Conv.cu, Gemm.cu,
// Norm.cu, Softmax.cu, Loss.cu, Pool.cu, Eltwise.cu, Binary.cu, Shape.cu,
// Gather.cu, Reduce.cu, Optim.cu, Dropout.cu, Codec.cu; the context's
// device state in Device.cu. The arguments arrive validated; a run() only
// queues work on the context's stream. Entries this backend lacks are
// declared, with the reason, in Exclusions.def. Plain C++ (no CUDA
// headers), for the dispatcher. Not installed.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_BACKENDS_CUDA_CUDA_H
#define COMET_RUNTIME_BACKENDS_CUDA_CUDA_H

#include "Contract.h"

namespace comet::rt::cuda {

/// The CUDA backend's table (Table.cu).
const Backend &table();
/// Puts ctx on CUDA device 0: stream, pool, cuBLAS and cuDNN handles
/// (Device.cu).
int32_t attach(comet_rt_context *ctx);
/// What the contract's handle checks ask about a CUDA handle (Codec.cu).
bool handleInfo(comet_rt_context *ctx, int64_t h, HandleInfo &out);

#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args) COMET_RT_DECLARE_RUN(name, ret)
#include "comet/runtime/abi.def"

} // namespace comet::rt::cuda

#endif // COMET_RUNTIME_BACKENDS_CUDA_CUDA_H
