// RUN: comet-opt %s -split-input-file -verify-diagnostics --comet-hoist-masks="min-distance=0"
// RUN: comet-opt %s -split-input-file -verify-diagnostics --comet-hoist-masks="min-bytes=-1"

// expected-error @+1 {{comet-hoist-masks: min-bytes must be non-negative and min-distance at least 1}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
