"""What one bound per channel gains on the values normalizations read.

A BatchNorm (LayerNorm) input X reaches the backward pass as
xhat = (X - mean) * inv_std, per channel (per row). An error E in the stored X
becomes inv_std * E in xhat, so with one bound for the whole tensor the
largest inv_std sets it: eb = t / max(inv_std) for an error of at most t in
every xhat. Stored normalized, X * inv_std with the bound t, every channel's
xhat error is at most t too, and the channels with a smaller inv_std are
stored at a looser bound. The codec's streams with one bound per channel
(t / inv_std_c; docs/codec-format.md, "Bounds per channel", what the tuner's
--channel-bounds writes) give a BatchNorm input the same per channel,
without the multiply, each 64-value block at the smallest bound of its
channels; as in the runtime, a tensor with fewer than 16 values a channel
and sample keeps one bound (comet_rt_codec_channel_bounds_pay). This measures the bytes of the three with COMET's codec on the
inputs of every normalization of the models' training graphs, run in ONNX
Runtime on Fashion-MNIST test images, at each target t (per channel:
BatchNorm inputs only, a LayerNorm's inv_std being per row):

    .venv/bin/python -m comet.bench_norm --models cnn resnet transformer \\
        build/models/resnet18 build/models/mobilenet_v2 --targets 0.01 0.1 \\
        [--trained-steps 200] [--json OUT]

--trained-steps N also measures with the weights after N steps of
comet-train with its defaults (static compression, the folder's optimizer),
where the channels
have drifted apart from the initial weights'. Every form is decoded again
and its largest xhat error checked against t. Prints a table per tensor
and per model, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from .ablation import fixture, train
from .bench_codec import LOSS_OPS, CodecLib, find_library

# Normalizations and the axes their statistic is taken over: None for a
# BatchNorm (all but the channel axis 1), else a LayerNorm's first axis.
NORM_OPS = ("BatchNormalization", "BatchNormInternal", "LayerNormalization")


def norm_inputs(graph) -> list[dict]:
    """The X read by each forward normalization of a training graph: its
    name, the op type, the LayerNorm axis and the epsilon."""
    out = []
    for n in graph.node:
        if n.op_type in LOSS_OPS:
            break
        if n.op_type not in NORM_OPS:
            continue
        attrs = {a.name: a for a in n.attribute}
        eps = attrs["epsilon"].f if "epsilon" in attrs else 1e-5
        axis = None
        if n.op_type == "LayerNormalization":
            axis = attrs["axis"].i if "axis" in attrs else -1
        out.append({"value": n.input[0], "op": n.op_type, "axis": axis,
                    "epsilon": float(eps)})
    return out


def inv_std(x: np.ndarray, axis: int | None, eps: float) -> np.ndarray:
    """The normalization's 1/sqrt(var + eps), shaped to broadcast over x."""
    if axis is None:
        if x.ndim < 2:
            raise ValueError(f"a BatchNorm input of rank {x.ndim}")
        red = tuple(i for i in range(x.ndim) if i != 1)
    else:
        axis = axis % x.ndim
        red = tuple(range(axis, x.ndim))
    var = x.astype(np.float64).var(axis=red, keepdims=True)
    return (1.0 / np.sqrt(var + eps)).astype(np.float32)


def measure(lib: CodecLib, x: np.ndarray, inv: np.ndarray, t: float,
            per_channel: bool = False) -> dict:
    """Bytes of x at one bound (t / max inv_std) and normalized (t), and,
    with per_channel (inv of shape [1, C, 1, ...], a BatchNorm's), at one
    bound per channel (t / inv_std_c); the largest xhat error each gives."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    top = float(inv.max())
    eb = t / top
    s_uniform = lib.compress(x, eb=eb).copy()
    xn = np.ascontiguousarray(x * inv)
    s_norm = lib.compress(xn, eb=t).copy()
    back_u = lib.decompress(s_uniform, np.empty_like(x))
    back_n = lib.decompress(s_norm, np.empty_like(x)) / inv
    err_u = float(np.max(np.abs(back_u - x) * inv))
    err_n = float(np.max(np.abs(back_n - x) * inv))
    # Float rounding of the multiply and divide: a few ulps of xhat.
    slack = 4 * np.finfo(np.float32).eps * float(np.max(np.abs(xn))) + 1e-12
    if err_u > t * (1 + 1e-5) + slack or err_n > t * (1 + 1e-5) + slack:
        raise RuntimeError(f"xhat error over the target {t}: one bound "
                             f"{err_u:.3g}, normalized {err_n:.3g}")
    channels = {}
    if per_channel:
        # Where the table does not pay, the runtime stores one bound.
        pays = lib.channel_bounds_pay(x.shape)
        ebs = (t / inv.astype(np.float64)).reshape(-1)
        s_ch = lib.compress_channels(x, ebs).copy() if pays else s_uniform
        back_c = lib.decompress(s_ch, np.empty_like(x)) if pays else back_u
        # Each element within its channel's bound, so its xhat error is at
        # most t up to the float rounding of t / inv_c.
        err_c = float(np.max(np.abs(back_c.astype(np.float64) - x) * inv))
        if err_c > t * (1 + 1e-6):
            raise RuntimeError(f"xhat error over the target {t}: per "
                               f"channel {err_c:.3g}")
        channels = {"channel_bounds": pays, "bytes_channels": int(s_ch.size),
                    "ratio_channels": x.nbytes / s_ch.size,
                    "gain_channels": s_uniform.size / s_ch.size,
                    "max_xhat_err_channels": err_c}
    return {"target": t, "eb_uniform": eb, "bytes_in": x.nbytes, **channels,
            "bytes_uniform": int(s_uniform.size), "bytes_normalized":
            int(s_norm.size), "ratio_uniform": x.nbytes / s_uniform.size,
            "ratio_normalized": x.nbytes / s_norm.size,
            "gain": s_uniform.size / s_norm.size,
            "max_xhat_err_uniform": err_u, "max_xhat_err_normalized": err_n}


def train_weights(comet_train: str, model: Path, steps: int, out: Path,
                  threads: int) -> Path:
    """A copy of the model folder whose checkpoint holds the weights after
    `steps` steps of comet-train with its defaults (static compression, the
    folder's optimizer)."""
    out.mkdir(parents=True, exist_ok=True)
    for f in model.iterdir():
        if f.name != "checkpoint":
            (out / f.name).symlink_to(f.resolve())
    train(comet_train, str(model), str(out / "report.json"), [], epochs=1,
          batch=64, seed=0, eval_samples=100, max_steps=steps,
          extra=["--save-checkpoint", str(out / "checkpoint")],
          threads=threads, optimizer=None)
    return out


def model_dir(name: str) -> Path:
    """A fixture's artifact folder by name, or the folder `name` names."""
    p = Path(fixture(name))
    d = p.parent if p.name == "training_model.onnx" else p
    if not (d / "training_model.onnx").exists():
        raise FileNotFoundError(f"{name}: no training_model.onnx in {d}")
    return d


def run(models, targets, lib, batch=64, trained_steps=0, comet_train=None,
        threads=1, log=sys.stderr) -> dict:
    import onnx

    from .data import load_fashion_mnist
    from .ort_reference import run_training_graph

    images, labels = load_fashion_mnist("test", limit=batch)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            d = model_dir(name)
            wanted = norm_inputs(onnx.load(str(d / "training_model.onnx")).graph)
            if not wanted:
                raise ValueError(f"{name}: no BatchNorm or LayerNorm in its "
                                 "training graph")
            weights = [("initial", d)]
            if trained_steps:
                log.write(f"{d.name}: {trained_steps} steps of comet-train\n")
                weights.append((f"{trained_steps} steps", train_weights(
                    comet_train, d, trained_steps,
                    Path(tmp) / d.name, threads)))
            for label, wd in weights:
                values = run_training_graph(wd, images, labels,
                                            [w["value"] for w in wanted])
                for w in wanted:
                    x = values[w["value"]]
                    inv = inv_std(x, w["axis"], w["epsilon"])
                    spread = float(inv.max() / np.median(inv))
                    for t in targets:
                        r = measure(lib, x, inv, t,
                                    per_channel=w["axis"] is None)
                        rows.append({"model": d.name, "weights": label,
                                     "value": w["value"], "op": w["op"],
                                     "groups": int(inv.size),
                                     "max_over_median_inv_std": spread, **r})
                log.write(f"{d.name} ({label}): {len(wanted)} inputs\n")
    return {"benchmark": "norm_bounds", "targets": list(targets),
            "batch": batch, "rows": rows, "totals": totals(rows)}


def totals(rows: list[dict]) -> list[dict]:
    """Per model, weights and target: the ratios over all its inputs."""
    acc: dict[tuple, list] = {}
    for r in rows:
        k = (r["model"], r["weights"], r["target"])
        a = acc.setdefault(k, [0, 0, 0, 0, 0])
        a[0] += r["bytes_in"]
        a[1] += r["bytes_uniform"]
        a[2] += r["bytes_normalized"]
        a[3] += 1
        # Per channel where every input has it (BatchNorm), else None.
        a[4] = (a[4] + r["bytes_channels"]
                if a[4] is not None and "bytes_channels" in r else None)
    return [{"model": m, "weights": w, "target": t, "inputs": n,
             "ratio_uniform": b / u, "ratio_normalized": b / z, "gain": u / z,
             "ratio_channels": b / c if c else None,
             "gain_channels": u / c if c else None}
            for (m, w, t), (b, u, z, n, c) in acc.items()]


def _ratio(v) -> str:
    return f"{v:.2f}x" if v else "-"


def _gain(v) -> str:
    return f"{v:.3f}" if v else "-"


def format_tables(result: dict) -> str:
    lines = ["| model | weights | input | groups | max/median inv_std | t | "
             "one bound | per channel | normalized | gain (channel) | "
             "gain (normalized) |", "|" + "---|" * 11]
    for r in result["rows"]:
        lines.append(
            f"| {r['model']} | {r['weights']} | {r['value']} | {r['groups']} "
            f"| {r['max_over_median_inv_std']:.2f} | {r['target']:g} | "
            f"{r['ratio_uniform']:.2f}x | {_ratio(r.get('ratio_channels'))} | "
            f"{r['ratio_normalized']:.2f}x | "
            f"{_gain(r.get('gain_channels'))} | {r['gain']:.3f} |")
    lines += ["", "| model | weights | inputs | t | one bound | per channel "
              "| normalized | gain (channel) | gain (normalized) |",
              "|" + "---|" * 9]
    for r in result["totals"]:
        lines.append(f"| {r['model']} | {r['weights']} | {r['inputs']} | "
                     f"{r['target']:g} | {r['ratio_uniform']:.2f}x | "
                     f"{_ratio(r['ratio_channels'])} | "
                     f"{r['ratio_normalized']:.2f}x | "
                     f"{_gain(r['gain_channels'])} | {r['gain']:.3f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["cnn", "resnet",
                                                     "transformer"],
                    help="fixture names (test/fixtures/models) or artifact "
                         "folders")
    ap.add_argument("--targets", nargs="+", type=float, default=[0.01, 0.1],
                    help="the largest xhat error, t")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--trained-steps", type=int, default=0,
                    help="also measure after N steps of comet-train")
    ap.add_argument("--comet-train", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lib", default=None, help="libCometCodec.so")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if any(not (t > 0) for t in args.targets):
        ap.error("--targets must be positive")
    if args.trained_steps < 0:
        ap.error("--trained-steps must be at least 0")
    if args.trained_steps and not args.comet_train:
        build = Path(os.environ.get("COMET_BUILD_DIR",
                                    Path(__file__).resolve().parents[2] / "build"))
        args.comet_train = shutil.which("comet-train") or str(
            build / "bin" / "comet-train")
    try:
        lib = CodecLib(args.lib or find_library())
        lib.set_num_threads(1)
        result = run(args.models, args.targets, lib, batch=args.batch,
                     trained_steps=args.trained_steps,
                     comet_train=args.comet_train, threads=args.threads)
    except (FileNotFoundError, OSError, ValueError, RuntimeError) as e:
        print(f"comet.bench_norm: {e}", file=sys.stderr)
        return 2
    print(format_tables(result))
    line = json.dumps(result)
    print(line)
    if args.json:
        Path(args.json).write_text(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
