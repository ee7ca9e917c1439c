//===- Passes.h - comet dialect passes --------------------------*- C++ -*-===//
#ifndef COMET_DIALECT_COMET_TRANSFORMS_PASSES_H
#define COMET_DIALECT_COMET_TRANSFORMS_PASSES_H

#include "comet/Dialect/Comet/IR/CometOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace comet {

/// comet-compress-activations' `policy`.
enum class CompressPolicy { All, Budget };
/// comet-compress-activations' `codec`.
enum class CodecChoice { Auto, Sz, Mask };
/// comet-compress-activations' `rule`.
enum class BoundRule { Comet, Acgc };
/// comet-compress-activations' `batchnorm`.
enum class BatchNormPolicy { Sz, Keep };

#define GEN_PASS_DECL
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"

} // namespace comet

#endif // COMET_DIALECT_COMET_TRANSFORMS_PASSES_H
