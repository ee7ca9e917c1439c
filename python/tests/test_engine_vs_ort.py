"""One training step of each fixture through comet-train (comet::Engine, the
JIT-compiled lowering) against ONNX Runtime running the same
training_model.onnx: the loss and every parameter gradient must agree
within 1e-4 relative (max |comet - ort| / max |ort| per tensor)."""
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from comet_tools import tool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "test", "fixtures", "models")
BATCH = 8
TOL = 1e-4


def ort_step(model_dir, images, labels):
    """Loss and gradients from ORT: the values fed into each
    InPlaceAccumulatorV2 become extra graph outputs."""
    model = onnx.load(os.path.join(model_dir, "training_model.onnx"))
    grads = {}
    for node in model.graph.node:
        if node.op_type == "InPlaceAccumulatorV2":
            buf = node.input[0]
            param = buf[: buf.index("_grad.accumulation.buffer")]
            grads[param] = node.input[1]
    for name in grads.values():
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    weights = {t.name: onnx.numpy_helper.to_array(t)
               for t in onnx.load(os.path.join(model_dir, "model.onnx")).graph.initializer}
    feeds = {}
    for inp in model.graph.input:
        n = inp.name
        if n == "input":
            feeds[n] = images
        elif n == "labels":
            feeds[n] = labels
        elif n == "lazy_reset_grad":
            feeds[n] = np.array([True])
        elif n.endswith("_grad.accumulation.buffer"):
            p = n[: n.index("_grad.accumulation.buffer")]
            feeds[n] = np.zeros_like(weights[p])
        else:
            feeds[n] = weights[n]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    names = [model.graph.output[0].name] + list(grads.values())
    outs = sess.run(names, feeds)
    return float(outs[0]), dict(zip(grads.keys(), outs[1:]))


def rel(a, b):
    scale = max(float(np.max(np.abs(b))), 1e-12)
    return float(np.max(np.abs(a - b))) / scale


@pytest.mark.parametrize("name", ["lenet", "mlp", "resnet", "vgg"])
def test_one_step_matches_ort(name, tmp_path):
    exe = tool("comet-train")
    model_dir = os.path.join(MODELS, name)
    rng = np.random.default_rng(7)
    images = rng.random((BATCH, 1, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, size=BATCH, dtype=np.int64)
    images.tofile(tmp_path / "in.bin")
    labels.tofile(tmp_path / "labels.bin")
    out = tmp_path / "dump"
    subprocess.run([exe, os.path.join(model_dir, "training_model.onnx"),
                    "--batch", str(BATCH), "--compress", "none",
                    "--dump-grads", str(out),
                    "--inputs", str(tmp_path / "in.bin"),
                    "--labels", str(tmp_path / "labels.bin")],
                   check=True, capture_output=True, text=True)
    loss_ref, grads_ref = ort_step(model_dir, images, labels)
    loss = float(np.fromfile(out / "loss.bin", dtype=np.float32)[0])
    diffs = {"loss": abs(loss - loss_ref) / abs(loss_ref)}
    for p, g_ref in grads_ref.items():
        g = np.fromfile(out / f"{p}.grad.bin", dtype=np.float32).reshape(g_ref.shape)
        diffs[p] = rel(g, g_ref)
    worst = max(diffs, key=diffs.get)
    print(f"{name}: max relative diff {diffs[worst]:.2e} ({worst})")
    assert len(grads_ref) > 0
    for k, d in diffs.items():
        assert d <= TOL, f"{name}: {k} differs by {d:.3e} relative"


def test_mask_only_compression_gives_identical_gradients(tmp_path):
    """The mask codec is lossless for ReluGrad: with only mask slots
    compressed (their decompresses fused into ReluGrad), LeNet's loss and
    every gradient equal the uncompressed run's bit for bit."""
    exe = tool("comet-train")
    model = os.path.join(MODELS, "lenet", "training_model.onnx")
    rng = np.random.default_rng(11)
    (rng.random((BATCH, 1, 28, 28), dtype=np.float32) - 0.5).tofile(
        tmp_path / "in.bin")
    rng.integers(0, 10, size=BATCH, dtype=np.int64).tofile(
        tmp_path / "labels.bin")
    common = ["--batch", str(BATCH), "--inputs", str(tmp_path / "in.bin"),
              "--labels", str(tmp_path / "labels.bin")]
    subprocess.run([exe, model, "--compress", "none",
                    "--dump-grads", str(tmp_path / "none")]
                   + common, check=True, capture_output=True, text=True)
    subprocess.run([exe, model, "--compress", "static", "--compress-options",
                    "codec=mask", "--dump-grads", str(tmp_path / "mask"),
                    "--dump-ir", str(tmp_path / "mask.mlir")] + common,
                   check=True, capture_output=True, text=True)
    ir = (tmp_path / "mask.mlir").read_text()
    assert "call @comet_rt_relu_grad_mask" in ir
    assert "call @comet_rt_decompress" not in ir
    files = sorted(p.name for p in (tmp_path / "none").iterdir())
    assert "loss.bin" in files and len(files) > 1
    for f in files:
        assert (tmp_path / "none" / f).read_bytes() == \
            (tmp_path / "mask" / f).read_bytes(), f
