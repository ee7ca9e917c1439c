"""Benchmark COMET's CPU codec against SZ3 (pysz) and ZFP (zfpy).

Runs every codec side by side in one process on the same activations, at the
same absolute error bounds, and prints a table and writes JSON:

    .venv/bin/python -m comet.bench_codec [--activations DIR] [--json OUT]

The activations come in four classes. By default (--data real, dump_real)
they are the forward tensors of the exported PyTorch models cnn, transformer,
resnet18 and mobilenet_v2, from their training graphs run in ONNX Runtime on
Fashion-MNIST test images: post_relu (Relu, ReLU6 outputs), dense (Conv,
BatchNorm, Gemm, MatMul outputs), softmax (the attention Softmax outputs) and
gelu (the BiasGelu outputs). --data fixtures (dump_classes) is the older set:
the fixture models' eval graphs, with numpy softmax / exact GELU applied to
their dense tensors.

Our codec is called through a ctypes binding of the C ABI in
kernels/include/comet/runtime/codec.h (libCometCodec.so), once per
--entropy setting (comet_rt_codec_set_entropy: off, auto, always, none;
rows comet-sz for auto, the default, and comet-sz:off, comet-sz:always,
comet-sz:none).
Throughput is uncompressed bytes over the median wall time.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

CODECS = {"raw": 0, "sz": 1, "mask": 2}
DTYPES = {"f32": 0, "f16": 1, "bf16": 2}
ISAS = {"auto": 0, "baseline": 1, "avx2": 2}
ENTROPY = {"auto": 0, "off": 1, "always": 2, "none": 3}
STATUS = {
    0: "ok",
    1: "invalid argument",
    2: "output buffer too small",
    3: "truncated stream",
    4: "corrupt stream",
    5: "unsupported stream version or feature",
    6: "out of memory",
}
REPO = Path(__file__).resolve().parents[2]
RESULT_KEYS = [
    "codec", "eb", "bytes_in", "bytes_out", "ratio", "max_abs_err",
    "zeros_preserved", "compress_gbps", "decompress_gbps",
]


class CodecError(RuntimeError):
    pass


def find_library(name: str = "libCometCodec.so", env: str = "COMET_CODEC_LIB",
                 hint: str = "build it") -> Path:
    """A library of the build: $<env>, $COMET_BUILD_DIR/lib, or build*/lib."""
    if os.environ.get(env):
        return Path(os.environ[env])
    dirs = []
    if os.environ.get("COMET_BUILD_DIR"):
        dirs.append(Path(os.environ["COMET_BUILD_DIR"]))
    dirs += [REPO / "build"] + sorted(Path(p) for p in glob.glob(str(REPO / "build*")))
    for d in dirs:
        lib = d / "lib" / name
        if lib.exists():
            return lib
    raise FileNotFoundError(
        f"{name} not found; {hint} and set COMET_BUILD_DIR or {env}")


class CodecLib:
    """A thin ctypes binding of the comet_rt_codec_* C ABI."""

    def __init__(self, path: Path | str | None = None):
        self.lib = ctypes.CDLL(str(path or find_library()))
        L = self.lib
        L.comet_rt_codec_max_compressed_size.restype = ctypes.c_size_t
        L.comet_rt_codec_max_compressed_size.argtypes = [
            ctypes.c_int, ctypes.c_int, ctypes.c_uint64]
        L.comet_rt_codec_compress.restype = ctypes.c_int
        L.comet_rt_codec_compress.argtypes = [
            ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint32, ctypes.c_double,
            ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
        L.comet_rt_codec_decompress.restype = ctypes.c_int
        L.comet_rt_codec_decompress.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
        L.comet_rt_codec_set_num_threads.restype = None
        L.comet_rt_codec_set_num_threads.argtypes = [ctypes.c_int]
        L.comet_rt_codec_compress_version.restype = ctypes.c_int
        L.comet_rt_codec_compress_version.argtypes = [
            ctypes.c_int] + L.comet_rt_codec_compress.argtypes
        L.comet_rt_codec_set_isa.restype = ctypes.c_int
        L.comet_rt_codec_set_isa.argtypes = [ctypes.c_int]
        L.comet_rt_codec_active_isa.restype = ctypes.c_int
        L.comet_rt_codec_active_isa.argtypes = []
        L.comet_rt_codec_set_entropy.restype = ctypes.c_int
        L.comet_rt_codec_set_entropy.argtypes = [ctypes.c_int]
        L.comet_rt_codec_get_entropy.restype = ctypes.c_int
        L.comet_rt_codec_get_entropy.argtypes = []
        L.comet_rt_codec_channel_bounds_pay.restype = ctypes.c_int
        L.comet_rt_codec_channel_bounds_pay.argtypes = [
            ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint32]
        L.comet_rt_codec_compress_channels.restype = ctypes.c_int
        L.comet_rt_codec_compress_channels.argtypes = [
            ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint32,
            ctypes.POINTER(ctypes.c_double), ctypes.c_void_p, ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_size_t)]

    def set_isa(self, isa: str) -> None:
        """'auto', 'baseline' or 'avx2' (the bytes never depend on it)."""
        st = self.lib.comet_rt_codec_set_isa(ISAS[isa])
        if st:
            raise CodecError(f"set_isa({isa}): {STATUS.get(st, st)}")

    def active_isa(self) -> str:
        code = self.lib.comet_rt_codec_active_isa()
        return {v: k for k, v in ISAS.items()}[code]

    def set_entropy(self, mode: str) -> None:
        """'auto', 'off' or 'always': when the encoder tries coded chunks
        (every setting's bytes decode the same way)."""
        st = self.lib.comet_rt_codec_set_entropy(ENTROPY[mode])
        if st:
            raise CodecError(f"set_entropy({mode}): {STATUS.get(st, st)}")

    def entropy(self) -> str:
        code = self.lib.comet_rt_codec_get_entropy()
        return {v: k for k, v in ENTROPY.items()}[code]

    def set_num_threads(self, n: int) -> None:
        self.lib.comet_rt_codec_set_num_threads(int(n))

    def compress(self, x: np.ndarray, codec: str = "sz", eb: float = 1e-3,
                 dtype: str = "f32", out: np.ndarray | None = None,
                 version: int = 2) -> np.ndarray:
        x = np.ascontiguousarray(x)
        dims = (ctypes.c_uint64 * max(1, x.ndim))(*x.shape)
        cap = self.lib.comet_rt_codec_max_compressed_size(
            CODECS[codec], DTYPES[dtype], x.size)
        if out is None or out.size < cap:
            out = np.empty(cap, dtype=np.uint8)
        size = ctypes.c_size_t(0)
        st = self.lib.comet_rt_codec_compress_version(
            version, CODECS[codec], DTYPES[dtype], x.ctypes.data, dims, x.ndim,
            eb, out.ctypes.data, out.size, ctypes.byref(size))
        if st:
            raise CodecError(f"compress: {STATUS.get(st, st)}")
        return out[: size.value]

    def channel_bounds_pay(self, shape) -> bool:
        """Whether the runtime stores a tensor of this shape with one bound
        per channel (comet_rt_codec_channel_bounds_pay)."""
        dims = (ctypes.c_uint64 * max(1, len(shape)))(*shape)
        return bool(self.lib.comet_rt_codec_channel_bounds_pay(dims, len(shape)))

    def compress_channels(self, x: np.ndarray, ebs, dtype: str = "f32",
                          entropy: str | None = None) -> np.ndarray:
        """An sz stream with one bound per channel (dim 1 of x, ebs[c]),
        under the entropy setting in force unless one is given."""
        x = np.ascontiguousarray(x)
        ebs = np.ascontiguousarray(ebs, dtype=np.float64)
        if x.ndim < 2 or ebs.shape != (x.shape[1],):
            raise CodecError("compress_channels: one bound per channel of dim 1")
        dims = (ctypes.c_uint64 * x.ndim)(*x.shape)
        cap = self.lib.comet_rt_codec_max_compressed_size(
            CODECS["sz"], DTYPES[dtype], x.size) + 8 * x.shape[1]
        out = np.empty(cap, dtype=np.uint8)
        size = ctypes.c_size_t(0)
        mode = ENTROPY[entropy] if entropy else self.lib.comet_rt_codec_get_entropy()
        st = self.lib.comet_rt_codec_compress_channels(
            mode, DTYPES[dtype], x.ctypes.data, dims, x.ndim,
            ebs.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            out.ctypes.data, out.size, ctypes.byref(size))
        if st:
            raise CodecError(f"compress_channels: {STATUS.get(st, st)}")
        return out[: size.value]

    def decompress(self, stream: np.ndarray, out: np.ndarray) -> np.ndarray:
        stream = np.ascontiguousarray(stream, dtype=np.uint8)
        st = self.lib.comet_rt_codec_decompress(
            stream.ctypes.data, stream.size, out.ctypes.data, out.nbytes)
        if st:
            raise CodecError(f"decompress: {STATUS.get(st, st)}")
        return out


# ---------------------------------------------------------------------------
# Peers
# ---------------------------------------------------------------------------

def _median_time(fn, repeat, threads=1):
    """Median over `repeat` runs. One thread: the calling thread's CPU time
    (every codec then runs in it), which leaves out the time spent waiting
    for a core on a shared machine; more threads: wall time."""
    clock = time.thread_time if threads == 1 else time.perf_counter
    times = []
    for _ in range(max(1, repeat)):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


class CometSz:
    """Our sz codec with one comet_rt_codec_set_entropy setting: named
    comet-sz for the default (auto), comet-sz:off and comet-sz:always."""

    def __init__(self, lib: CodecLib, entropy: str = "auto"):
        self.lib = lib
        self.entropy = entropy
        self.name = "comet-sz" if entropy == "auto" else f"comet-sz:{entropy}"

    def run(self, x, eb, threads, repeat):
        self.lib.set_num_threads(threads)
        self.lib.set_entropy(self.entropy)
        try:
            s = self.lib.compress(x, "sz", eb)
            stream = s.copy()
            cap = np.empty(s.base.size if s.base is not None else s.size, np.uint8)
            tc = _median_time(lambda: self.lib.compress(x, "sz", eb, out=cap), repeat, threads)
            y = np.empty_like(x)
            td = _median_time(lambda: self.lib.decompress(stream, y), repeat, threads)
        finally:
            self.lib.set_num_threads(0)
            self.lib.set_entropy("auto")
        return stream.size, y, tc, td


class Sz3:
    name = "sz3"

    def run(self, x, eb, threads, repeat):
        from pysz import sz, szConfig, szErrorBoundMode

        conf = szConfig(x.shape)
        conf.errorBoundMode = szErrorBoundMode.ABS
        conf.absErrorBound = eb
        conf.openmp = threads != 1
        s, _ = sz.compress(x, conf)
        tc = _median_time(lambda: sz.compress(x, conf), repeat, threads)
        y, _ = sz.decompress(s, np.float32, x.shape)
        td = _median_time(lambda: sz.decompress(s, np.float32, x.shape), repeat, threads)
        return s.size, np.asarray(y).reshape(x.shape), tc, td


class Zfp:
    name = "zfp"

    def run(self, x, eb, threads, repeat):
        import zfpy

        # zfpy exposes no thread control: it always runs zfp's serial mode.
        s = zfpy.compress_numpy(x, tolerance=eb)
        tc = _median_time(lambda: zfpy.compress_numpy(x, tolerance=eb), repeat, threads)
        y = zfpy.decompress_numpy(s)
        td = _median_time(lambda: zfpy.decompress_numpy(s), repeat, threads)
        return len(s), np.asarray(y).reshape(x.shape), tc, td


ERROR_KEYS = ["err_bias", "err_std", "err_corr_x", "err_lag1", "nonzero_zeroed"]


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation; 0 where either side is constant."""
    a = a - a.mean()
    b = b - b.mean()
    den = np.sqrt(float(np.dot(a, a)) * float(np.dot(b, b)))
    return float(np.dot(a, b)) / den if den > 0 else 0.0


def error_stats(x: np.ndarray, y: np.ndarray, eb: float) -> dict:
    """Is the reconstruction error e = y - x biased or correlated? Over the
    finite elements: err_bias = mean(e) / eb; err_std = sd(e) / eb (an error
    uniform on [-eb, eb] gives 1/sqrt(3) = 0.577); err_corr_x = corr(e, x)
    (a quantiser that shrinks values gives < 0); err_lag1 = corr of
    neighbouring errors in row-major order (an error that a predictor feeds
    forward gives != 0); nonzero_zeroed = the fraction of non-zero x decoded
    as 0 (the dead zone |x| < eb of a quantiser on a grid that holds 0)."""
    x = x.reshape(-1).astype(np.float64)
    y = y.reshape(-1).astype(np.float64)
    finite = np.isfinite(x)
    x, y = x[finite], y[finite]
    if x.size == 0:
        return dict.fromkeys(ERROR_KEYS, 0.0)
    e = y - x
    nz = x != 0
    return {
        "err_bias": float(e.mean()) / eb,
        "err_std": float(e.std()) / eb,
        "err_corr_x": _corr(e, x),
        "err_lag1": _corr(e[:-1], e[1:]) if e.size > 1 else 0.0,
        "nonzero_zeroed": float(np.mean(y[nz] == 0)) if nz.any() else 0.0,
    }


def measure(codec, x: np.ndarray, eb: float, threads: int, repeat: int) -> dict:
    """One codec on one tensor: the JSON keys of comet-codec bench."""
    nbytes, y, tc, td = codec.run(x, eb, threads, repeat)
    finite = np.isfinite(x)
    err = np.abs(x[finite].astype(np.float64) - y[finite].astype(np.float64))
    zeros = x == 0
    return {
        "codec": codec.name,
        "eb": eb,
        "threads": threads,
        "bytes_in": int(x.nbytes),
        "bytes_out": int(nbytes),
        "ratio": x.nbytes / nbytes if nbytes else 0.0,
        "max_abs_err": float(err.max()) if err.size else 0.0,
        "zeros_preserved": bool(np.all(y[zeros] == 0)),
        "compress_seconds": tc,
        "decompress_seconds": td,
        "compress_gbps": x.nbytes / tc / 1e9 if tc > 0 else 0.0,
        "decompress_gbps": x.nbytes / td / 1e9 if td > 0 else 0.0,
        **error_stats(x, y, eb),
    }


def category(name: str, x: np.ndarray) -> str:
    """post_relu: non-negative with many exact zeros (after Relu/MaxPool);
    input: the images themselves; other: the rest."""
    if name.endswith("__input"):
        return "input"
    if x.size and float(x.min()) >= 0 and float(np.mean(x == 0)) >= 0.2:
        return "post_relu"
    return "other"


def aggregate(rows: list[dict]) -> dict:
    """Totals over tensors: ratio = sum in / sum out, GB/s = sum in / sum time."""
    bin_ = sum(r["bytes_in"] for r in rows)
    bout = sum(r["bytes_out"] for r in rows)
    tc = sum(r["compress_seconds"] for r in rows)
    td = sum(r["decompress_seconds"] for r in rows)
    return {
        "tensors": len(rows),
        "bytes_in": bin_,
        "bytes_out": bout,
        "ratio": bin_ / bout if bout else 0.0,
        "max_abs_err": max((r["max_abs_err"] for r in rows), default=0.0),
        "zeros_preserved": all(r["zeros_preserved"] for r in rows),
        "compress_gbps": bin_ / tc / 1e9 if tc else 0.0,
        "decompress_gbps": bin_ / td / 1e9 if td else 0.0,
        # Error statistics: the mean over tensors, weighted by size.
        **{k: sum(r[k] * r["bytes_in"] for r in rows) / bin_ if bin_ else 0.0
           for k in ERROR_KEYS},
    }


CLASSES = ("post_relu", "dense", "softmax", "gelu")


def tensor_class(name: str, x: np.ndarray) -> str:
    """The class a dump_classes name carries (`<class>__...`), else category()."""
    head = name.split("__", 1)[0]
    return head if head in CLASSES else category(name, x)


def softmax(x: np.ndarray) -> np.ndarray:
    """Over each (n, c) map's spatial positions for 4-D tensors (an attention
    row of length H*W), over the last axis otherwise."""
    y = x.reshape(x.shape[0] * x.shape[1], -1) if x.ndim == 4 else x
    y = np.exp(y - y.max(axis=-1, keepdims=True))
    y /= y.sum(axis=-1, keepdims=True)
    return y.reshape(x.shape).astype(np.float32)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x * Phi(x), in double."""
    import math

    erf = np.frompyfunc(math.erf, 1, 1)
    d = x.astype(np.float64)
    return (0.5 * d * (1.0 + erf(d / math.sqrt(2.0)).astype(np.float64))).astype(np.float32)


DENSE_OPS = ("Conv", "BatchNormalization", "Gemm")
TORCH_MODELS = ("cnn", "transformer", "resnet18", "mobilenet_v2")
# Forward ops of the training graphs and the class of their first output.
REAL_CLASSES = {
    "Relu": "post_relu", "Clip": "post_relu",  # mobilenet_v2's ReLU6 is Clip(x, 0, 6)
    "Conv": "dense", "BatchNormInternal": "dense", "BatchNormalization": "dense",
    "Gemm": "dense", "MatMul": "dense", "FusedMatMul": "dense",
    "Softmax": "softmax",
    "BiasGelu": "gelu", "Gelu": "gelu", "FastGelu": "gelu",
}
LOSS_OPS = ("SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLossInternal")


def forward_tensors(graph) -> list[tuple[str, str]]:
    """(output name, class) of the forward nodes of a training graph: those
    before its loss, whose op type REAL_CLASSES names (a Clip only if its
    lower bound is the constant 0, i.e. a ReLU6)."""
    from onnx import numpy_helper

    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consts.update({n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in graph.node
                   if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"})
    out = []
    for n in graph.node:
        if n.op_type in LOSS_OPS:
            break
        cls = REAL_CLASSES.get(n.op_type)
        if cls is None:
            continue
        if n.op_type == "Clip":
            lo = consts.get(n.input[1]) if len(n.input) > 1 else None
            if lo is None or float(np.asarray(lo).reshape(-1)[0]) != 0.0:
                continue
        out.append((n.output[0], cls))
    return out


def dump_real(out_dir: Path, batch: int = 64, models=TORCH_MODELS,
              torch_models_dir: Path | None = None, seed: int = 0) -> list[Path]:
    """Runs each exported PyTorch model's training_model.onnx forward (and
    backward) in ONNX Runtime on the first `batch` Fashion-MNIST test images,
    with its checkpoint's weights, and saves <class>__<model>__<tensor>.npy
    for every forward tensor forward_tensors() classifies.  cnn and
    transformer are checked in (test/fixtures/models); resnet18 and
    mobilenet_v2 come from `torch_models_dir` (default
    $COMET_BUILD_DIR/models, made by scripts/export-torch-models.sh).  A
    model that is not there is an error."""
    import re

    import onnx

    from comet.activations import MODELS_DIR
    from comet.data import load_fashion_mnist
    from comet.ort_reference import run_training_graph

    torch_models_dir = Path(torch_models_dir or _build_dir() / "models")
    images, labels = load_fashion_mnist("test", limit=batch)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for m in models:
        d = MODELS_DIR / m
        if not (d / "training_model.onnx").exists():
            d = torch_models_dir / m
        if not (d / "training_model.onnx").exists():
            raise FileNotFoundError(
                f"{m}: no training_model.onnx in {MODELS_DIR / m} nor {d} "
                "(scripts/export-torch-models.sh makes resnet18 and mobilenet_v2)")
        wanted = forward_tensors(onnx.load(str(d / "training_model.onnx")).graph)
        values = run_training_graph(d, images, labels, [n for n, _ in wanted], seed)
        for name, cls in wanted:
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            p = out_dir / f"{cls}__{m}__{safe}.npy"
            np.save(p, np.ascontiguousarray(values[name], dtype=np.float32))
            paths.append(p)
    return paths


def sample_classes(src_dir: Path, out_dir: Path, mb_per_class: float) -> list[Path]:
    """Copies a sample of dump_real's tensors (src_dir) to out_dir: per
    class, tensors taken from each model in turn (in name order), skipping
    those that would take the class past mb_per_class MB. What
    scripts/gpu-run.sh carries to a GPU machine for comet.bench_codec_cuda's
    classes."""
    import shutil

    budget = int(mb_per_class * 1e6)
    by_class: dict[str, dict[str, list[Path]]] = {}
    for p in sorted(Path(src_dir).glob("*.npy")):
        parts = p.stem.split("__")
        if len(parts) >= 3:
            by_class.setdefault(parts[0], {}).setdefault(parts[1], []).append(p)
    if not by_class:
        raise FileNotFoundError(f"no <class>__<model>__*.npy tensors in {src_dir}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for cls, models in sorted(by_class.items()):
        queues = [list(v) for _, v in sorted(models.items())]
        used = 0
        while any(queues):
            for q in queues:
                while q:
                    p = q.pop(0)
                    size = p.stat().st_size
                    if used + size <= budget:
                        used += size
                        dst = out_dir / p.name
                        shutil.copyfile(p, dst)
                        paths.append(dst)
                        break
    return paths


def dump_classes(out_dir: Path, batch: int = 64, models=("lenet", "mlp", "resnet", "vgg")) -> list[Path]:
    """The synthetic data set (--data fixtures): runs each fixture model's
    eval graph on `batch` Fashion-MNIST test images in ONNX Runtime and saves
    <class>__<model>__<tensor>.npy: Relu outputs as post_relu,
    Conv/BatchNormalization/Gemm outputs as dense, and softmax() and gelu()
    of each dense tensor as softmax and gelu."""
    import re

    import onnx

    from comet.activations import MODELS_DIR, run_with_outputs
    from comet.data import load_fashion_mnist

    images, labels = load_fashion_mnist("test", limit=batch)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for m in models:
        d = MODELS_DIR / m
        if not (d / "eval_model.onnx").exists():
            continue
        g = onnx.load(str(d / "eval_model.onnx")).graph
        wanted = [(n.output[0], "post_relu") for n in g.node if n.op_type == "Relu"]
        wanted += [(n.output[0], "dense") for n in g.node if n.op_type in DENSE_OPS]
        values = run_with_outputs(d, d / "eval_model.onnx", [n for n, _ in wanted],
                                  images, labels)
        for (name, cls), v in zip(wanted, values):
            v = np.ascontiguousarray(v, dtype=np.float32)
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            variants = [(cls, v)]
            if cls == "dense":
                variants += [("softmax", softmax(v)), ("gelu", gelu(v))]
            for c, a in variants:
                p = out_dir / f"{c}__{m}__{safe}.npy"
                np.save(p, a)
                paths.append(p)
    return paths


def run_benchmark(tensors: dict[str, np.ndarray], ebs=(1e-2, 1e-3, 1e-4),
                  threads=(1,), repeat: int = 3, lib: CodecLib | None = None,
                  peers=True, entropy=("auto",)) -> dict:
    """entropy: our codec once per comet_rt_codec_set_entropy setting."""
    lib = lib or CodecLib()
    codecs = [CometSz(lib, e) for e in entropy] + ([Sz3(), Zfp()] if peers else [])
    rows = []
    for name, x in tensors.items():
        x = np.ascontiguousarray(x, dtype=np.float32)
        cat = tensor_class(name, x)
        for eb in ebs:
            for t in threads:
                for c in codecs:
                    if c.name == "zfp" and t != 1:
                        continue  # serial only, see Zfp
                    r = measure(c, x, eb, t, repeat)
                    r.update(tensor=name, category=cat)
                    rows.append(r)
    summary = []
    present = [c for c in CLASSES + ("input", "other") if any(r["category"] == c for r in rows)]
    for cat in present + ["all"]:
        for eb in ebs:
            for t in threads:
                for c in codecs:
                    sel = [r for r in rows if r["codec"] == c.name and r["eb"] == eb
                           and r["threads"] == t and (cat == "all" or r["category"] == cat)]
                    if sel:
                        summary.append({"category": cat, "codec": c.name, "eb": eb,
                                        "threads": t, **aggregate(sel)})
    return {"threads_all": os.cpu_count(), "repeat": repeat, "rows": rows,
            "summary": summary}


def format_table(result: dict) -> str:
    lines = [
        "| data | eb | codec | threads | ratio | max err | zeros kept | compress GB/s | decompress GB/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in result["summary"]:
        th = "1" if s["threads"] == 1 else f"all ({result['threads_all']})"
        lines.append(
            f"| {s['category']} | {s['eb']:g} | {s['codec']} | {th} | {s['ratio']:.2f} | "
            f"{s['max_abs_err']:.3g} | {'yes' if s['zeros_preserved'] else 'no'} | "
            f"{s['compress_gbps']:.3f} | {s['decompress_gbps']:.3f} |")
    return "\n".join(lines)


def format_error_table(result: dict) -> str:
    """The reconstruction error's statistics (error_stats), one thread."""
    lines = [
        "| data | eb | codec | bias mean(e)/eb | sd(e)/eb (uniform 0.577) | corr(e, x) | corr(e_i, e_i+1) | non-zeros decoded as 0 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in result["summary"]:
        if s["threads"] != 1:
            continue
        lines.append(
            f"| {s['category']} | {s['eb']:g} | {s['codec']} | {s['err_bias']:+.4f} | "
            f"{s['err_std']:.3f} | {s['err_corr_x']:+.3f} | {s['err_lag1']:+.3f} | "
            f"{s['nonzero_zeroed']:.3f} |")
    return "\n".join(lines)


def speed_and_ratio_vs_sz3(result: dict) -> list[dict]:
    """Per class, eb and entropy setting: our ratio / SZ3's and our
    single-thread compress (and decompress) throughput / SZ3's (the targets
    are >= 1 and >= 10)."""
    out = []
    by = {(s["category"], s["codec"], s["eb"], s["threads"]): s for s in result["summary"]}
    for (cat, codec, eb, t), s in by.items():
        if not codec.startswith("comet-sz") or t != 1:
            continue
        peer = by.get((cat, "sz3", eb, 1))
        if peer:
            entropy = codec.split(":", 1)[1] if ":" in codec else "auto"
            out.append({"category": cat, "eb": eb, "entropy": entropy,
                        "ratio_vs_sz3": s["ratio"] / peer["ratio"],
                        "compress_speed_vs_sz3": s["compress_gbps"] / peer["compress_gbps"],
                        "decompress_speed_vs_sz3": s["decompress_gbps"] / peer["decompress_gbps"]})
    return out


def _build_dir() -> Path:
    return Path(os.environ.get("COMET_BUILD_DIR", REPO / "build"))


def load_tensors(directory: Path) -> dict[str, np.ndarray]:
    return {p.stem: np.load(p) for p in sorted(Path(directory).glob("*.npy"))}


def format_vs_sz3(rows: list[dict]) -> str:
    lines = ["| data | eb | entropy | ratio vs SZ3 (goal >= 1) | 1-thread compress vs SZ3 (goal >= 10) | 1-thread decompress vs SZ3 |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['category']} | {r['eb']:g} | {r['entropy']} | {r['ratio_vs_sz3']:.2f}x | "
                     f"{r['compress_speed_vs_sz3']:.2f}x | {r['decompress_speed_vs_sz3']:.2f}x |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    build = _build_dir()
    ap.add_argument("--data", default="real", choices=("real", "fixtures"),
                    help="real: the exported PyTorch models' activations (dump_real); "
                         "fixtures: the fixture models' with synthetic softmax/gelu (dump_classes)")
    ap.add_argument("--activations", default=None,
                    help="folder of .npy activations (dumped there if empty; default "
                         "$COMET_BUILD_DIR/activations_real or activations_classes)")
    ap.add_argument("--torch-models", default=str(build / "models"),
                    help="folder with resnet18/ and mobilenet_v2/ (scripts/export-torch-models.sh)")
    ap.add_argument("--models", default=None,
                    help="comma list of models to dump (default: all four of --data)")
    ap.add_argument("--batch", type=int, default=64, help="images per dump")
    ap.add_argument("--eb", default="1e-2,1e-3,1e-4")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", default="1", help="comma list; 0 = all cores")
    ap.add_argument("--isa", default="auto", choices=sorted(ISAS))
    ap.add_argument("--entropy", default="auto",
                    help="comma list of off, auto (the default the runtime uses), always: "
                         "when our encoder tries coded chunks; one comet-sz row each")
    ap.add_argument("--json", default=str(build / "bench_codec.json"))
    ap.add_argument("--lib", default=None, help="path of libCometCodec.so")
    args = ap.parse_args(argv)

    if args.activations is None:
        args.activations = str(build / ("activations_real" if args.data == "real"
                                        else "activations_classes"))
    tensors = load_tensors(Path(args.activations))
    if not tensors:
        if args.data == "real":
            models = args.models.split(",") if args.models else TORCH_MODELS
            dump_real(Path(args.activations), batch=args.batch, models=models,
                      torch_models_dir=Path(args.torch_models))
        else:
            models = args.models.split(",") if args.models else ("lenet", "mlp", "resnet", "vgg")
            dump_classes(Path(args.activations), batch=args.batch, models=models)
        tensors = load_tensors(Path(args.activations))
    if not tensors:
        sys.exit(f"no activations in {args.activations} and none could be dumped")
    ebs = [float(e) for e in args.eb.split(",")]
    lib = CodecLib(args.lib)
    lib.set_isa(args.isa)
    threads = tuple(int(t) for t in args.threads.split(","))
    entropy = tuple(args.entropy.split(","))
    for e in entropy:
        if e not in ENTROPY:
            ap.error(f"--entropy: {e!r} is not one of {', '.join(ENTROPY)}")
    result = run_benchmark(tensors, ebs=ebs, threads=threads, repeat=args.repeat, lib=lib,
                           entropy=entropy)
    result["entropy"] = list(entropy)
    result["isa"] = lib.active_isa()
    result["vs_sz3"] = speed_and_ratio_vs_sz3(result)
    result["activations"] = {k: list(v.shape) for k, v in tensors.items()}
    print(f"{len(tensors)} tensors, {sum(v.nbytes for v in tensors.values()) / 1e6:.1f} MB, "
          f"{os.cpu_count()} cores, encoder ISA {result['isa']}, median of {args.repeat}")
    print(format_table(result))
    print()
    print(format_vs_sz3(result["vs_sz3"]))
    print()
    print(format_error_table(result))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
