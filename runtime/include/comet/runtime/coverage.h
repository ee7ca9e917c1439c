/*===- comet/runtime/coverage.h - Which device implements which entry -----===*
 *
 * The entries of the runtime contract (abi.def) and, per device, whether
 * its backend implements each: what a driver asks before the first step,
 * so that a graph whose device lacks an entry is refused naming every
 * missing one, not failed in the middle of a step. The answers come from
 * the backends' declarations (runtime/backends/<device>/Exclusions.def),
 * whether or not this runtime was built with that backend.
 * docs/runtime-coverage.md is generated from the same answers
 * (`comet-run --print-runtime-coverage`).
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_COVERAGE_H
#define COMET_RUNTIME_COVERAGE_H

#include "comet/runtime/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number of abi.def entries, and entry i's name (without comet_rt_)
 * and family (the op group of its backend files; "host" for the entries
 * the runtime implements itself on every device); NULL out of range. */
COMET_RT_API int32_t comet_rt_num_entries(void);
COMET_RT_API const char *comet_rt_entry_name(int32_t i);
COMET_RT_API const char *comet_rt_entry_family(int32_t i);

/* NULL when device (COMET_RT_DEVICE_*) runs the entry called name (with or
 * without the comet_rt_ prefix); else a static string saying why not: the
 * backend's declared reason, "unknown entry" or "unknown device". */
COMET_RT_API const char *comet_rt_device_lacks(int32_t device,
                                               const char *name);

/* 1 when entry i has passed its tests on device (the CPU: every entry; a
 * device backend: the entries its Verified.def lists), else 0: compiled,
 * but never run there. */
COMET_RT_API int32_t comet_rt_entry_verified(int32_t device, int32_t i);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_COVERAGE_H */
