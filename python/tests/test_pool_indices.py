"""MaxPool's Indices kept as window positions (comet-compact-pool-indices, a
byte each) against ONNX's flat int64 indices (comet-train
--flat-pool-indices): the same loss and gradients bit for bit, on the
fixtures with MaxPool and on a ResNet-style graph whose pools overlap, pad,
round up (ceil_mode) and dilate; and a few steps of training give the same
losses."""
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


def _pool(g: GraphBuilder, k: int, stride: int, pad: int = 0,
          dilation: int = 1, ceil: bool = False):
    """A MaxPool with the window attributes torch exports."""
    n = g._name("maxpool")
    y = f"{n}.out"
    g.nodes.append(helper.make_node(
        "MaxPool", [g.x], [y], name=n, kernel_shape=[k, k],
        strides=[stride, stride], pads=[pad] * 4, dilations=[dilation] * 2,
        ceil_mode=int(ceil)))
    c, h, w = g.shape
    span = (k - 1) * dilation + 1

    def out(n_in):
        num = n_in + 2 * pad - span
        return (-(-num // stride) if ceil else num // stride) + 1

    g.x, g.shape = y, [c, out(h), out(w)]
    return y


def resnet_style(seed: int = 0) -> onnx.ModelProto:
    g = GraphBuilder("pools", seed)
    g.conv(8, 3, pad=1, bias=False)            # 8x28x28
    g.batchnorm()
    g.relu()
    _pool(g, 3, 2, pad=1)                      # ResNet's stem pool: 8x14x14
    x = g.x
    g.conv(8, 3, pad=1, bias=False)
    g.batchnorm()
    g.relu()
    g.conv(8, 3, pad=1, bias=False)
    y = g.batchnorm()
    g.add(y, x)
    g.relu()
    _pool(g, 3, 2, ceil=True)                  # ceil mode: 8x7x7
    _pool(g, 2, 1, dilation=2)                 # dilated: 8x5x5
    g.conv(16, 3, pad=1)
    g.relu()
    g.global_avgpool()
    g.flatten()
    g.gemm(10, output="logits")
    return g.model()


@pytest.fixture(scope="module")
def pools_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("pools")
    export_artifacts(resnet_style(), out, optimizers=["adamw"])
    return str(out)


def _model_dir(name, pools_dir):
    return pools_dir if name == "pools" else os.path.join(MODELS, name)


def _one_step(model_dir, tmp_path, tag, compress, extra=()):
    return dump_one_step(model_dir, tmp_path, tag, BATCH, compress, extra)


@pytest.mark.parametrize("compress", ["none", "static"])
@pytest.mark.parametrize("name", ["lenet", "vgg", "cnn", "pools"])
def test_window_positions_give_the_same_gradients(name, compress, tmp_path,
                                                   pools_dir):
    model_dir = _model_dir(name, pools_dir)
    rng = np.random.default_rng(5)
    images = rng.random((BATCH, 1, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, size=BATCH, dtype=np.int64)
    images.tofile(tmp_path / "in.bin")
    labels.tofile(tmp_path / "labels.bin")
    window, window_ir = _one_step(model_dir, tmp_path, "window",
                                  compress, [])
    flat, flat_ir = _one_step(model_dir, tmp_path, "flat", compress,
                              ["--flat-pool-indices"])
    pools = 3 if name == "pools" else 2
    assert window_ir.count("call @comet_rt_maxpool2d_window(") == pools
    assert window_ir.count("call @comet_rt_maxpool_grad_window(") == pools
    assert "call @comet_rt_maxpool2d(" not in window_ir
    assert flat_ir.count("call @comet_rt_maxpool2d(") == pools
    assert flat_ir.count("call @comet_rt_maxpool_grad(") == pools
    assert "_window(" not in flat_ir
    files = sorted(p.name for p in flat.iterdir())
    assert "loss.bin" in files and len(files) > 1
    for f in files:
        assert (window / f).read_bytes() == (flat / f).read_bytes(), f
    if name == "pools" and compress == "none":
        # The graph itself is right: ONNX Runtime gives the same step.
        loss_ref, grads_ref = ort_step(model_dir, images, labels)
        loss = float(np.fromfile(window / "loss.bin", dtype=np.float32)[0])
        assert abs(loss - loss_ref) <= 1e-4 * abs(loss_ref)
        for p, g_ref in grads_ref.items():
            g = np.fromfile(window / f"{p}.grad.bin",
                            dtype=np.float32).reshape(g_ref.shape)
            assert rel(g, g_ref) <= 1e-4, p


def test_training_losses_and_peak(tmp_path, pools_dir):
    """Three steps of training: the same loss history; the predicted and
    measured peaks drop by at most the indices' 7 bytes per element."""
    exe = tool("comet-train")
    reports = {}
    for tag, extra in (("window", []), ("flat", ["--flat-pool-indices"])):
        rep = tmp_path / f"{tag}.json"
        subprocess.run([exe, pools_dir, "--data", "synthetic",
                        "--synthetic-size", "96", "--batch", "32",
                        "--max-steps", "3", "--eval-samples", "-1",
                        "--compress", "none", "--report", str(rep),
                        "--quiet"] + extra,
                       check=True, capture_output=True, text=True)
        reports[tag] = json.loads(rep.read_text())
    w, f = reports["window"], reports["flat"]
    assert w["steps"] == 3 and w["loss_history"] == f["loss_history"]
    assert w["final_loss"] == f["final_loss"]
    # Indices of the three pools at batch 32: 8x14x14 + 8x7x7 + 8x5x5.
    elements = 32 * 8 * (14 * 14 + 7 * 7 + 5 * 5)
    for key in ("predicted_peak_bytes", "peak_bytes"):
        saved = f[key] - w[key]
        assert 0 < saved <= 7 * elements, (key, saved)
