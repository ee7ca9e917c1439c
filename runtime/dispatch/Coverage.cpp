//===- Coverage.cpp - Which device implements which entry -----------------===//
//
// comet/runtime/coverage.h, from abi.def and the device backends'
// declarations: Exclusions.def (entries the backend lacks, and why) and
// Verified.def (entries that have passed their tests on the device). The
// CPU backend implements and runs every entry.
//
//===----------------------------------------------------------------------===//
#include "comet/runtime/coverage.h"
#include "Contract.h"
#include "comet/runtime/device.h"

#include <cstring>
#include <string>

namespace {

using comet::rt::Entry;
using comet::rt::kNumEntries;

struct DeviceCoverage {
  const char *lacks[kNumEntries] = {};
  bool verified[kNumEntries] = {};
};

int32_t indexOf(const char *name) {
  if (!name)
    return -1;
  if (std::strncmp(name, "comet_rt_", 9) == 0)
    name += 9;
  for (int32_t i = 0; i < kNumEntries; ++i)
    if (std::strcmp(comet::rt::entryName(static_cast<Entry>(i)), name) == 0)
      return i;
  return -1;
}

const DeviceCoverage &cuda() {
  static const DeviceCoverage c = [] {
    DeviceCoverage d;
#define COMET_RT_EXCLUDE(name, why) d.lacks[int32_t(Entry::name)] = why;
#include "Exclusions.def"
#define COMET_RT_VERIFIED(name, how) d.verified[int32_t(Entry::name)] = true;
#include "Verified.def"
    return d;
  }();
  return c;
}

} // namespace

extern "C" {

int32_t comet_rt_num_entries(void) { return kNumEntries; }

const char *comet_rt_entry_name(int32_t i) {
  return i >= 0 && i < kNumEntries ? comet::rt::entryName(Entry(i)) : nullptr;
}

const char *comet_rt_entry_family(int32_t i) {
  return i >= 0 && i < kNumEntries ? comet::rt::entryFamily(Entry(i)) : nullptr;
}

const char *comet_rt_device_lacks(int32_t device, const char *name) {
  int32_t i = indexOf(name);
  if (i < 0)
    return "unknown entry";
  if (device == COMET_RT_DEVICE_CPU)
    return nullptr;
  if (device == COMET_RT_DEVICE_CUDA)
    return cuda().lacks[i];
  return "unknown device";
}

int32_t comet_rt_entry_verified(int32_t device, int32_t i) {
  if (i < 0 || i >= kNumEntries)
    return 0;
  if (device == COMET_RT_DEVICE_CPU)
    return 1;
  if (device == COMET_RT_DEVICE_CUDA)
    return cuda().verified[i] ? 1 : 0;
  return 0;
}

} // extern "C"
