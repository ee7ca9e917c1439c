//===- codec-decode-fuzzer.cpp - Fuzz every codec decoder -----------------===//
//
// The input is a candidate stream; its header picks the decoder (sz, mask or
// raw, any dtype). Decoding must return a status and stay in bounds: the
// output buffer is exactly the capacity passed, so ASan sees any overrun.
//
//===----------------------------------------------------------------------===//
#include "comet/runtime/codec.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  comet_rt_codec_info info;
  comet_rt_status st = comet_rt_codec_get_info(data, size, &info);
  // Cap the output so that a header claiming terabytes is cheap to refuse.
  size_t cap = 1 << 16;
  if (st == COMET_RT_SUCCESS && info.decompressed_bytes <= cap)
    cap = size_t(info.decompressed_bytes);
  std::vector<uint8_t> out(cap);
  comet_rt_status dst =
      comet_rt_codec_decompress(data, size, out.data(), out.size());
  // get_info and decompress must agree on what is well-formed.
  if (st != COMET_RT_SUCCESS && dst == COMET_RT_SUCCESS)
    abort();
  return 0;
}
