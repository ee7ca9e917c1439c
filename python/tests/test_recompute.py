"""BatchNorm (+ ReLU or ReLU6) outputs, Dropout and GELU outputs and cheap
stem convolutions recomputed in the backward (comet-recompute-activations, comet-train --recompute, the
default) instead of kept: uncompressed, the loss and every gradient are the
same bit for bit as with --recompute=false, and the step against ONNX
Runtime; compressed, within the bounds' reach of the uncompressed step; and
the whole-step peak drops."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import helper

from comet.export import export_artifacts
from comet.models._builder import GraphBuilder
from comet_tools import dump_one_step, tool
from test_engine_vs_ort import ort_step, rel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "test", "fixtures", "models")
BATCH = 8


def _relu6(g: GraphBuilder):
    """Clip(x, 0, 6) with constant bounds, as torch exports ReLU6."""
    # Constant nodes, not initializers: ORT would train those.
    n = g._name("relu6")
    lo, hi = f"{n}.min", f"{n}.max"
    for name, v in ((lo, 0.0), (hi, 6.0)):
        g.nodes.append(helper.make_node(
            "Constant", [], [name], name=name,
            value=helper.make_tensor(name, onnx.TensorProto.FLOAT, [], [v])))
    y = f"{n}.out"
    g.nodes.append(helper.make_node("Clip", [g.x, lo, hi], [y], name=n))
    g.x = y
    return y


def mixed(seed: int = 0) -> onnx.ModelProto:
    """A stem on one channel, conv-BN-ReLU and conv-BN-ReLU6 chains, a
    residual block: every recompute the pass makes."""
    g = GraphBuilder("recompute", seed)
    g.conv(8, 3, pad=1, bias=False)            # stem: 9 MACs per output
    g.batchnorm()
    g.relu()
    x = g.x
    g.conv(8, 3, pad=1, bias=False)
    g.batchnorm()
    g.relu()                                   # recomputed for conv below
    g.conv(8, 3, pad=1, bias=False)
    y = g.batchnorm()
    g.add(y, x)
    g.relu()
    g.conv(16, 3, stride=2, pad=1, bias=False)
    g.batchnorm()
    _relu6(g)                                  # recomputed with the clip
    g.conv(16, 1, bias=False)
    g.batchnorm()
    _relu6(g)
    g.global_avgpool()
    g.flatten()
    g.gemm(10, output="logits")
    return g.model()


@pytest.fixture(scope="module")
def mixed_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("recompute")
    export_artifacts(mixed(), out, optimizers=["adamw"])
    return str(out)


def _model_dir(name, mixed_dir):
    return mixed_dir if name == "mixed" else os.path.join(MODELS, name)


def _one_step(model_dir, tmp_path, tag, compress, extra=()):
    return dump_one_step(model_dir, tmp_path, tag, BATCH, compress, extra)


def _grads(d):
    return {p.name: np.fromfile(p, dtype=np.float32) for p in d.iterdir()
            if p.name.endswith(".grad.bin") or p.name == "loss.bin"}


@pytest.mark.parametrize("name", ["resnet", "cnn", "mixed", "transformer"])
def test_uncompressed_recompute_is_bit_for_bit(name, tmp_path, mixed_dir):
    model_dir = _model_dir(name, mixed_dir)
    rng = np.random.default_rng(11)
    images = rng.random((BATCH, 1, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, size=BATCH, dtype=np.int64)
    images.tofile(tmp_path / "in.bin")
    labels.tofile(tmp_path / "labels.bin")
    on, on_ir = _one_step(model_dir, tmp_path, "on", "none", [])
    off, off_ir = _one_step(model_dir, tmp_path, "off", "none",
                            ["--recompute=false"])
    if name == "transformer":
        # Each attention's dropout output, from the softmax and the mask
        # (a DropoutGrad call each), not kept.
        assert (on_ir.count("call @comet_rt_dropout_grad(")
                == off_ir.count("call @comet_rt_dropout_grad(") + 2)
    else:
        assert "call @comet_rt_batch_norm_apply(" in on_ir
    assert "comet_rt_batch_norm_apply" not in off_ir
    if name == "mixed":
        # The stem's and the block's ReLU outputs and the first ReLU6's
        # (the second feeds the average pool, which reads only its shape).
        assert on_ir.count("call @comet_rt_batch_norm_apply(") == 3
        # Every BatchNorm input here is kept for a recompute, so no conv is
        # cloned as well (that would keep alive what the other frees).
        assert (on_ir.count("call @comet_rt_conv2d(")
                == off_ir.count("call @comet_rt_conv2d("))
    files = sorted(p.name for p in off.iterdir())
    assert "loss.bin" in files and len(files) > 1
    for f in files:
        assert (on / f).read_bytes() == (off / f).read_bytes(), f
    if name == "mixed":
        # The graph itself is right: ONNX Runtime gives the same step.
        loss_ref, grads_ref = ort_step(model_dir, images, labels)
        loss = float(np.fromfile(on / "loss.bin", dtype=np.float32)[0])
        assert abs(loss - loss_ref) <= 1e-4 * abs(loss_ref)
        for p, g_ref in grads_ref.items():
            g = np.fromfile(on / f"{p}.grad.bin",
                            dtype=np.float32).reshape(g_ref.shape)
            assert rel(g, g_ref) <= 1e-4, p


@pytest.mark.parametrize("name", ["resnet", "mixed", "transformer"])
def test_compressed_recompute_stays_within_the_bounds(name, tmp_path,
                                                      mixed_dir):
    """Static bounds with and without recompute: with it, the gradients are
    no further from the uncompressed step than compression alone puts them
    (the recompute reads a lossy input, bounded by what its readers
    tolerate)."""
    model_dir = _model_dir(name, mixed_dir)
    rng = np.random.default_rng(12)
    rng.random((BATCH, 1, 28, 28), dtype=np.float32).tofile(tmp_path / "in.bin")
    rng.integers(0, 10, size=BATCH, dtype=np.int64).tofile(
        tmp_path / "labels.bin")
    ref = _grads(_one_step(model_dir, tmp_path, "ref", "none", [])[0])
    on = _grads(_one_step(model_dir, tmp_path, "on", "static", [])[0])
    off = _grads(_one_step(model_dir, tmp_path, "off", "static",
                           ["--recompute=false"])[0])
    worst_on = max(rel(on[k], ref[k]) for k in ref)
    worst_off = max(rel(off[k], ref[k]) for k in ref)
    # No further from the uncompressed step than compression alone.
    assert worst_on <= 1.5 * worst_off + 1e-3, (worst_on, worst_off)
    assert abs(on["loss.bin"][0] - ref["loss.bin"][0]) <= 1e-3


def test_peak_drops_and_is_predicted(tmp_path, mixed_dir):
    exe = tool("comet-train")
    reports = {}
    for compress in ("none", "static"):
        for tag, extra in (("on", []), ("off", ["--recompute=false"])):
            rep = tmp_path / f"{compress}-{tag}.json"
            subprocess.run([exe, mixed_dir, "--data", "synthetic",
                            "--synthetic-size", "64", "--batch", "32",
                            "--max-steps", "2", "--eval-samples", "-1",
                            "--compress", compress, "--report", str(rep),
                            "--quiet"] + extra,
                           check=True, capture_output=True, text=True)
            reports[compress, tag] = json.loads(rep.read_text())
    on, off = reports["none", "on"], reports["none", "off"]
    assert on["loss_history"] == off["loss_history"]
    # The report names what the backward computes again: the two ReLU
    # outputs and the first ReLU6 output (graph names of the exporter).
    for compress in ("none", "static"):
        assert len(reports[compress, "on"]["recomputed"]) == 3, compress
        assert reports[compress, "off"]["recomputed"] == [], compress
    for compress in ("none", "static"):
        on, off = reports[compress, "on"], reports[compress, "off"]
        assert on["tensor_peak_bytes"] < off["tensor_peak_bytes"], compress
        pred = on["predicted_tensor_peak_bytes"]
        assert abs(pred - on["tensor_peak_bytes"]) <= 0.02 * pred, compress
