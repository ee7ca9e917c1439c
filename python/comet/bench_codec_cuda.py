"""Benchmark COMET's CUDA codec beside device memcpy and nvCOMP, on one GPU.

    COMET_BUILD_DIR=build .venv/bin/python -m comet.bench_codec_cuda \
        [--gib 1.0] [--eb 1e-3] [--reps 10] [--data DIR] [--json OUT]

Data: --gib GiB of f32 activation-like data made on the host (post-ReLU of a
3-tap smoothed normal field, ~50 % exact zeros), copied to the device once.
With --data DIR (.npy files named `<class>__...`, as comet.bench_codec's
dump_real and sample_classes write them), one data set per class instead:
the class's tensors flattened and concatenated in name order, repeated up to
--gib GiB; every class gets the rows below.
Rows, all in the same process and on the same device buffer:

  comet-sz        comet_rt_codec_cuda_compress / _decompress (eb = --eb);
                  the decoding is checked against the bound and the zeros
  memcpy          cudaMemcpyAsync device to device of the same bytes
  nvcomp-<algo>   nvidia-nvcomp-cu13 (PyPI) lossless Bitcomp, ANS, ...,
                  skipped with a note when the package is missing

GB/s is uncompressed bytes over the median of --reps timed runs (after one
warm-up), timed with CUDA events on the codec's stream (COMET, memcpy) or
with wall time around a device synchronize (nvCOMP, whose Python API owns its
stream). COMET's blocking calls include their single read-back. Prints a
table and writes JSON (device name included) to --json, default
$COMET_BUILD_DIR/bench_codec_cuda.json.

Nothing is loaded or run at import time, so `import comet.bench_codec_cuda`
works on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from comet.bench_codec import find_library

REPO = Path(__file__).resolve().parents[2]
SZ, F32 = 1, 0
NVCOMP_ALGOS = ["Bitcomp", "ANS", "Cascaded", "LZ4"]


def build_dir() -> Path:
    if os.environ.get("COMET_BUILD_DIR"):
        return Path(os.environ["COMET_BUILD_DIR"])
    return REPO / "build"


def find_codec_cuda() -> Path:
    """libCometCodecCuda.so: $COMET_CODEC_CUDA_LIB, $COMET_BUILD_DIR/lib, build*/lib."""
    return find_library("libCometCodecCuda.so", "COMET_CODEC_CUDA_LIB",
                        "build with nvcc present")


class Cuda:
    """The few CUDA runtime calls the benchmark needs, through ctypes."""

    H2D, D2H, D2D = 1, 2, 3

    def __init__(self):
        names = ["libcudart.so", "libcudart.so.13", "/usr/local/cuda/lib64/libcudart.so"]
        last = None
        for name in names:
            try:
                self.rt = ctypes.CDLL(name)
                break
            except OSError as e:
                last = e
        else:
            raise OSError(f"cannot load the CUDA runtime: {last}")
        rt = self.rt
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        rt.cudaMalloc.argtypes = [ctypes.POINTER(vp), sz]
        rt.cudaFree.argtypes = [vp]
        rt.cudaMemcpy.argtypes = [vp, vp, sz, ctypes.c_int]
        rt.cudaMemcpyAsync.argtypes = [vp, vp, sz, ctypes.c_int, vp]
        rt.cudaStreamCreate.argtypes = [ctypes.POINTER(vp)]
        rt.cudaStreamSynchronize.argtypes = [vp]
        rt.cudaEventCreate.argtypes = [ctypes.POINTER(vp)]
        rt.cudaEventRecord.argtypes = [vp, vp]
        rt.cudaEventSynchronize.argtypes = [vp]
        rt.cudaEventElapsedTime.argtypes = [ctypes.POINTER(ctypes.c_float), vp, vp]
        rt.cudaGetErrorString.restype = ctypes.c_char_p
        count = ctypes.c_int(0)
        self.check(rt.cudaGetDeviceCount(ctypes.byref(count)), "cudaGetDeviceCount")
        if count.value == 0:
            raise RuntimeError("no CUDA device")
        self.stream = vp()
        self.check(rt.cudaStreamCreate(ctypes.byref(self.stream)), "cudaStreamCreate")
        self.start, self.stop = vp(), vp()
        self.check(rt.cudaEventCreate(ctypes.byref(self.start)), "cudaEventCreate")
        self.check(rt.cudaEventCreate(ctypes.byref(self.stop)), "cudaEventCreate")

    def check(self, err, what):
        if err != 0:
            msg = self.rt.cudaGetErrorString(err).decode()
            raise RuntimeError(f"{what}: CUDA error {err} ({msg})")

    def device_name(self) -> str:
        # cudaDeviceProp's first member is char name[256].
        buf = ctypes.create_string_buffer(4096)
        self.check(self.rt.cudaGetDeviceProperties(buf, 0), "cudaGetDeviceProperties")
        return buf.value.decode(errors="replace")

    def malloc(self, nbytes: int) -> int:
        p = ctypes.c_void_p()
        self.check(self.rt.cudaMalloc(ctypes.byref(p), max(nbytes, 1)), "cudaMalloc")
        return p.value

    def free(self, p: int):
        self.rt.cudaFree(ctypes.c_void_p(p))

    def to_device(self, arr: np.ndarray) -> int:
        p = self.malloc(arr.nbytes)
        self.check(self.rt.cudaMemcpy(p, arr.ctypes.data, arr.nbytes, self.H2D), "H2D")
        return p

    def to_host(self, p: int, nbytes: int, dtype=np.uint8) -> np.ndarray:
        out = np.empty(nbytes // np.dtype(dtype).itemsize, dtype)
        self.check(self.rt.cudaMemcpy(out.ctypes.data, p, nbytes, self.D2H), "D2H")
        return out

    def sync(self):
        self.check(self.rt.cudaDeviceSynchronize(), "cudaDeviceSynchronize")

    def time_ms(self, fn) -> float:
        """Milliseconds between events around fn() on the stream."""
        rt = self.rt
        self.check(rt.cudaEventRecord(self.start, self.stream), "cudaEventRecord")
        fn()
        self.check(rt.cudaEventRecord(self.stop, self.stream), "cudaEventRecord")
        self.check(rt.cudaEventSynchronize(self.stop), "cudaEventSynchronize")
        ms = ctypes.c_float()
        self.check(rt.cudaEventElapsedTime(ctypes.byref(ms), self.start, self.stop),
                   "cudaEventElapsedTime")
        return ms.value


class CodecCuda:
    """ctypes binding of comet_rt_codec_cuda_* (kernels/include/comet/runtime/codec_cuda.h)."""

    def __init__(self, path=None):
        L = self.lib = ctypes.CDLL(str(path or find_codec_cuda()))
        vp, sz, u64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64
        L.comet_rt_codec_cuda_max_compressed_size.restype = sz
        L.comet_rt_codec_cuda_max_compressed_size.argtypes = [ctypes.c_int, ctypes.c_int, u64]
        L.comet_rt_codec_cuda_compress.restype = ctypes.c_int
        L.comet_rt_codec_cuda_compress.argtypes = [
            ctypes.c_int, ctypes.c_int, vp, ctypes.POINTER(u64), ctypes.c_uint32,
            ctypes.c_double, vp, sz, ctypes.POINTER(sz), vp]
        L.comet_rt_codec_cuda_decompress.restype = ctypes.c_int
        L.comet_rt_codec_cuda_decompress.argtypes = [vp, sz, vp, sz, vp]

    def max_size(self, n: int) -> int:
        return self.lib.comet_rt_codec_cuda_max_compressed_size(SZ, F32, n)

    def compress(self, d_x: int, n: int, eb: float, d_out: int, cap: int, stream) -> int:
        dims = (ctypes.c_uint64 * 1)(n)
        size = ctypes.c_size_t(0)
        st = self.lib.comet_rt_codec_cuda_compress(SZ, F32, d_x, dims, 1, eb, d_out, cap,
                                                   ctypes.byref(size), stream)
        if st != 0:
            raise RuntimeError(f"comet_rt_codec_cuda_compress: status {st}")
        return size.value

    def decompress(self, d_in: int, size: int, d_out: int, cap: int, stream):
        st = self.lib.comet_rt_codec_cuda_decompress(d_in, size, d_out, cap, stream)
        if st != 0:
            raise RuntimeError(f"comet_rt_codec_cuda_decompress: status {st}")


def class_data(directory: Path, nbytes: int) -> dict[str, np.ndarray]:
    """Per class of the .npy files in directory: their f32 values in name
    order, repeated to nbytes (a whole number of the class's values if that
    is more)."""
    from comet.bench_codec import tensor_class

    parts: dict[str, list[np.ndarray]] = {}
    for p in sorted(Path(directory).glob("*.npy")):
        x = np.load(p)
        if x.dtype != np.float32:
            continue
        parts.setdefault(tensor_class(p.stem, x), []).append(x.ravel())
    if not parts:
        raise FileNotFoundError(f"no f32 .npy tensors in {directory}")
    out = {}
    for cls, xs in sorted(parts.items()):
        one = np.concatenate(xs)
        n = max(nbytes // 4, one.size)
        out[cls] = np.resize(one, n)  # np.resize repeats the values
    return out


def make_data(nbytes: int, seed: int = 0) -> np.ndarray:
    """Post-ReLU activation-like f32: a smoothed normal field, clipped at 0."""
    n = nbytes // 4
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(n + 2, dtype=np.float32)
    x = base[2:] + base[1:-1]
    x += base[:-2]
    x *= np.float32(1 / np.sqrt(3))
    np.maximum(x, 0, out=x)
    return x


class DeviceArray:
    """__cuda_array_interface__ over a raw device pointer, for nvCOMP."""

    def __init__(self, ptr: int, nbytes: int):
        self.__cuda_array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
            "version": 3, "strides": None, "stream": None}


def gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9


def bench_comet(cuda: Cuda, codec: CodecCuda, x: np.ndarray, d_x: int, eb: float,
                reps: int) -> dict:
    n, nbytes = x.size, x.nbytes
    cap = codec.max_size(n)
    d_s, d_y = cuda.malloc(cap), cuda.malloc(nbytes)
    try:
        size = codec.compress(d_x, n, eb, d_s, cap, cuda.stream)  # warm-up
        ct = [cuda.time_ms(lambda: codec.compress(d_x, n, eb, d_s, cap, cuda.stream))
              for _ in range(reps)]
        codec.decompress(d_s, size, d_y, nbytes, cuda.stream)
        dt = [cuda.time_ms(lambda: codec.decompress(d_s, size, d_y, nbytes, cuda.stream))
              for _ in range(reps)]
        y = cuda.to_host(d_y, nbytes, np.float32)
        err = float(np.max(np.abs(x.astype(np.float64) - y))) if n else 0.0
        zeros = bool(np.all(y[x == 0] == 0))
        if err > eb or not zeros:
            raise RuntimeError(f"comet-sz broke its guarantees: max err {err}, zeros {zeros}")
        return {"codec": "comet-sz", "eb": eb, "bytes_in": nbytes, "bytes_out": size,
                "ratio": nbytes / size, "max_abs_err": err, "zeros_preserved": zeros,
                "compress_gbps": gbps(nbytes, statistics.median(ct) / 1e3),
                "decompress_gbps": gbps(nbytes, statistics.median(dt) / 1e3)}
    finally:
        cuda.free(d_s)
        cuda.free(d_y)


def bench_memcpy(cuda: Cuda, d_x: int, nbytes: int, reps: int) -> dict:
    d_y = cuda.malloc(nbytes)
    try:
        copy = lambda: cuda.check(cuda.rt.cudaMemcpyAsync(  # noqa: E731
            d_y, d_x, nbytes, Cuda.D2D, cuda.stream), "memcpy")
        copy()
        t = statistics.median(cuda.time_ms(copy) for _ in range(reps))
        return {"codec": "memcpy", "eb": 0.0, "bytes_in": nbytes, "bytes_out": nbytes,
                "ratio": 1.0, "max_abs_err": 0.0, "zeros_preserved": True,
                "compress_gbps": gbps(nbytes, t / 1e3), "decompress_gbps": gbps(nbytes, t / 1e3)}
    finally:
        cuda.free(d_y)


def bench_nvcomp(cuda: Cuda, d_x: int, nbytes: int, reps: int) -> list[dict]:
    try:
        from nvidia import nvcomp  # nvidia-nvcomp-cu13 from PyPI
    except ImportError as e:
        return [{"codec": "nvcomp", "skipped": f"nvidia-nvcomp-cu13 not installed ({e})"}]
    rows = []
    src = nvcomp.as_array(DeviceArray(d_x, nbytes))
    for algo in NVCOMP_ALGOS:
        try:
            c = nvcomp.Codec(algorithm=algo)

            def timed(fn):
                fn()
                cuda.sync()
                ts = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    out = fn()
                    cuda.sync()
                    ts.append(time.perf_counter() - t0)
                return out, statistics.median(ts)

            enc, ct = timed(lambda: c.encode(src))
            dec, dt = timed(lambda: c.decode(enc))
            out_bytes = int(enc.buffer_size)
            if int(dec.buffer_size) != nbytes:
                raise RuntimeError(f"decoded {dec.buffer_size} bytes, expected {nbytes}")
            rows.append({"codec": f"nvcomp-{algo}", "eb": 0.0, "bytes_in": nbytes,
                         "bytes_out": out_bytes, "ratio": nbytes / out_bytes,
                         "max_abs_err": 0.0, "zeros_preserved": True,
                         "compress_gbps": gbps(nbytes, ct), "decompress_gbps": gbps(nbytes, dt),
                         "nvcomp_version": getattr(nvcomp, "__version__", "?")})
        except Exception as e:  # one algorithm failing must not hide the others
            rows.append({"codec": f"nvcomp-{algo}", "skipped": f"{type(e).__name__}: {e}"})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=1.0, help="data size in GiB (>= 1 for the report)")
    ap.add_argument("--eb", type=float, default=1e-3, help="absolute error bound")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--no-nvcomp", action="store_true")
    ap.add_argument("--data", type=Path, default=None,
                    help="a folder of <class>__*.npy tensors: one data set per class")
    args = ap.parse_args(argv)

    nbytes = int(args.gib * (1 << 30)) // 256 * 256
    # The data first: a bad --data fails before any device work.
    sets = (class_data(args.data, nbytes) if args.data
            else {"synthetic_post_relu": make_data(nbytes)})
    cuda = Cuda()
    codec = CodecCuda()
    rows = []
    for cls, x in sets.items():
        d_x = cuda.to_device(x)
        try:
            got = [bench_memcpy(cuda, d_x, x.nbytes, args.reps),
                   bench_comet(cuda, codec, x, d_x, args.eb, args.reps)]
            if not args.no_nvcomp:
                got += bench_nvcomp(cuda, d_x, x.nbytes, args.reps)
        finally:
            cuda.free(d_x)
        zero_frac = float(np.mean(x == 0))
        for r in got:
            r.update({"class": cls, "zero_fraction": zero_frac})
        rows += got

    device = cuda.device_name()
    print(f"device: {device}; {nbytes / 2**30:.2f} GiB f32 per class; median of {args.reps}")
    print(f"{'class':<20} {'zeros':>6} {'codec':<16} {'eb':>8} {'ratio':>8} {'max err':>10} "
          f"{'compress GB/s':>14} {'decompress GB/s':>16}")
    for r in rows:
        head = f"{r['class']:<20} {r['zero_fraction']:>6.0%} {r['codec']:<16}"
        if "skipped" in r:
            print(f"{head} skipped: {r['skipped']}")
            continue
        print(f"{head} {r['eb']:>8.0e} {r['ratio']:>8.2f} {r['max_abs_err']:>10.3g} "
              f"{r['compress_gbps']:>14.1f} {r['decompress_gbps']:>16.1f}")
    out = args.json or build_dir() / "bench_codec_cuda.json"
    result = {"device": device, "bytes_per_class": nbytes,
              "data": str(args.data) if args.data else "synthetic",
              "eb": args.eb, "reps": args.reps, "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
