//===- Table.cpp - The CPU backend's table, generated from abi.def --------===//
//
// One member per entry, each the run() of its family's file: an entry
// without one fails to link (the CPU backend declares no exclusions).
//
//===----------------------------------------------------------------------===//
#include "Cpu.h"
#include "comet/runtime/device.h"

namespace comet::rt::cpu {

const Backend &table() {
  static const Backend b = [] {
    Backend t;
    t.name = "cpu";
    t.device = COMET_RT_DEVICE_CPU;
    t.handleInfo = &handleInfo;
#define COMET_RT_ARG(kind, name)
#define COMET_RT_FUNC(name, ret, args)                                         \
  if constexpr (!IsHost<Entry::name>::value)                                   \
    t.name = &run;
#include "comet/runtime/abi.def"
    return t;
  }();
  return b;
}

} // namespace comet::rt::cpu
