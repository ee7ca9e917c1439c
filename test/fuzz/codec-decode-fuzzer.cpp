//===- codec-decode-fuzzer.cpp - Fuzz every codec decoder -----------------===//
//
// The input is a candidate stream; its header picks the decoder (sz, mask or
// raw, any dtype). Decoding must return a status and stay in bounds: the
// output buffer is exactly the capacity passed, so ASan sees any overrun.
// The host emulation of the CUDA decoder of version 2 fixed-width streams
// (comet/kernels/CodecFixedChunk.h) decodes the same input into its own
// buffer: it must give the CPU decoder's status, or refuse the stream as
// unsupported naming a Rice block or a coded chunk (or not being a
// version 2 sz stream, or carrying one bound per channel, which only the
// CPU decoder reads), and the CPU's bits wherever both succeed.
//
//===----------------------------------------------------------------------===//
#include "comet/kernels/CodecFixedChunk.h"
#include "comet/runtime/codec.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
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

  namespace format = comet::kernels::format;
  std::vector<uint8_t> gpu(cap);
  format::FixedRefusal refusal;
  comet_rt_status gst =
      format::decodeFixedStream(data, size, gpu.data(), gpu.size(), &refusal);
  if (gst == COMET_RT_ERROR_UNSUPPORTED && dst != gst) {
    const bool v2sz = st == COMET_RT_SUCCESS && info.version == 2 &&
                      info.codec == COMET_RT_CODEC_SZ;
    if (v2sz && refusal.mode == 0 && !info.channel_bounds)
      abort(); // a version 2 sz stream refused without a reason
  } else if (gst != dst) {
    abort();
  } else if (gst == COMET_RT_SUCCESS && info.decompressed_bytes &&
             std::memcmp(gpu.data(), out.data(),
                         size_t(info.decompressed_bytes))) {
    abort();
  }
  return 0;
}
