/*===- comet/runtime/status.h - The status of every comet_rt_ call --------===*
 *
 * One vocabulary for the whole C interface: the codec (codec.h), the
 * runtime's kernels and services (types.h, abi.def) and the data readers
 * return these. It lives with the codec, the lowest library, so that the
 * codec depends on nothing of the runtime above it. Pure C.
 *
 *===----------------------------------------------------------------------===*/
#ifndef COMET_RUNTIME_STATUS_H
#define COMET_RUNTIME_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#ifndef COMET_RT_API
#if defined(_WIN32)
#define COMET_RT_API
#else
#define COMET_RT_API __attribute__((visibility("default")))
#endif
#endif

typedef enum comet_rt_status {
  COMET_RT_SUCCESS = 0,
  /* A null pointer, a bad rank, shape, dtype or attribute value. */
  COMET_RT_ERROR_INVALID_ARGUMENT = 1,
  /* An output buffer is smaller than needed (the codec's *_size functions). */
  COMET_RT_ERROR_BUFFER_TOO_SMALL = 2,
  /* A stream or file is shorter than its header says. */
  COMET_RT_ERROR_TRUNCATED = 3,
  /* Bad magic, or an internally inconsistent stream or file. */
  COMET_RT_ERROR_CORRUPT = 4,
  /* Valid, but not implemented by this build or device. */
  COMET_RT_ERROR_UNSUPPORTED = 5,
  COMET_RT_ERROR_OUT_OF_MEMORY = 6,
  /* A file cannot be opened or read. */
  COMET_RT_ERROR_IO = 7,
  /* A library under a kernel (oneDNN, cuDNN, cuBLAS, CUDA) failed. */
  COMET_RT_ERROR_BACKEND = 8
} comet_rt_status;

/* A static description of a status, never null. */
COMET_RT_API const char *comet_rt_status_string(comet_rt_status status);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RUNTIME_STATUS_H */
