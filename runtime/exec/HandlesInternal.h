//===- HandlesInternal.h - Slot and site bookkeeping of compress ----------===//
//
// What every backend's comet_rt_compress shares with Handles.cpp: the slot
// table of bounds and the per-site statistics (comet/runtime/handles.h), and
// the error slot comet_rt_handles_last_error reads. Not installed.
//
//===----------------------------------------------------------------------===//
#ifndef COMET_RUNTIME_EXEC_HANDLESINTERNAL_H
#define COMET_RUNTIME_EXEC_HANDLESINTERNAL_H

#include "comet/runtime/context.h"

#include <cstdint>
#include <string>

namespace comet::rt {

/// Records msg for comet_rt_handles_last_error; returns code.
int32_t handlesFail(int32_t code, std::string msg);
void handlesClearError();

/// Checks site and gives the bound a compress at it uses: slot's for sz
/// with slot >= 0 (defining it with eb when undefined), else eb; prevOut is
/// the site's last stream size (0 before its first). Fails (op names the
/// caller) on a bad site or bound.
int32_t siteBegin(comet_rt_context *ctx, const char *op, int32_t codec,
                  int64_t slot, int64_t site, double &eb, int64_t &prevOut);
/// Counts one compress at site: bytesIn of f32 became bytesOut of block.
void siteRecord(comet_rt_context *ctx, int64_t site, int32_t codec,
                int64_t slot, double eb, int64_t bytesIn, int64_t bytesOut);

} // namespace comet::rt

#endif // COMET_RUNTIME_EXEC_HANDLESINTERNAL_H
