//===- Backends.h - The backends this runtime was built with --------------===//
//
// The composition root of CometRuntime: the dispatcher picks a context's
// backend table here. Not installed.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_DISPATCH_BACKENDS_H
#define COMET_RUNTIME_DISPATCH_BACKENDS_H

#include "Cpu.h"
#ifdef COMET_RT_WITH_CUDA
#include "Cuda.h"
#endif

namespace comet::rt {
/// The table of ctx's device.
const Backend &backendFor(const comet_rt_context *ctx);
} // namespace comet::rt

#endif // COMET_RUNTIME_DISPATCH_BACKENDS_H
