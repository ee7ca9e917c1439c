//===- Coverage.h - A graph's runtime entries against a device -*- C++ -*-===//
//
// What a driver checks before the first step: every runtime entry a
// compiled graph calls (comet/driver/Trainer.h, Entry::runtimeEntries) is
// implemented by the device's backend (comet/runtime/coverage.h).
//
//===----------------------------------------------------------------------===//
#ifndef COMET_DRIVER_COVERAGE_H
#define COMET_DRIVER_COVERAGE_H

#include <string>
#include <vector>

namespace comet {

/// "" when `device` ("cpu", "cuda") implements every entry of `entries`
/// (abi.def names, with or without the comet_rt_ prefix); else one message
/// naming each missing entry and why the backend lacks it.
std::string checkDeviceCoverage(const std::string &device,
                                const std::vector<std::string> &entries);

/// The runtime entries the optimizer `kind` (OptimizerConfig::kind) calls.
std::vector<std::string> optimizerEntries(const std::string &kind);

/// docs/runtime-coverage.md: one row per abi.def entry, a column per device.
std::string runtimeCoverageMarkdown();

} // namespace comet

#endif // COMET_DRIVER_COVERAGE_H
