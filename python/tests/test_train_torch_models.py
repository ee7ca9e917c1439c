"""comet-train on the PyTorch-exported models (cnn, resnet18, mobilenet_v2)
for a few Fashion-MNIST steps with --compress static: the report is sane
(every compressed slot shrinks its tensor, the Dropout mask of cnn and
mobilenet_v2 is kept as a 1-bit mask stream) and the loss goes down for cnn
(built-in SGD) and resnet18 (the artifacts' AdamW). mobilenet_v2 (BatchNorm
at batch 8, Dropout 0.2) does not learn measurably in the few steps a test
can afford; its losses must stay finite and bounded. The transformer, the
embedding model and shufflenet_v2_x0_5 also run their eval graphs after
training; the gpt trains on synthetic token sequences.

resnet18, mobilenet_v2 and shufflenet_v2_x0_5 come from
$COMET_BUILD_DIR/models (see
test_torch_models_vs_ort.py); missing models or dataset skip, and fail under
CI=true."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from comet_tools import tool
from test_torch_models_vs_ort import model_dir

FMNIST = "/usr/share/datasets/fashion-mnist"
# name: (batch, steps, learning rate, AdamW from optimizer_model.onnx?); a
# few steps each, about a minute on two cores.
RUNS = {"cnn": (16, 40, 0.02, False), "resnet18": (16, 10, 1e-3, True),
        "mobilenet_v2": (8, 4, 1e-3, True)}


def train(tmp_path, args, timeout=600):
    """comet-train ARGS --report R --quiet, which must succeed; the report."""
    rep = tmp_path / "r.json"
    p = subprocess.run([tool("comet-train"), *args, "--report", str(rep), "--quiet"],
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr
    return json.loads(rep.read_text())


@pytest.mark.parametrize("name", list(RUNS))
def test_static_compression_trains(name, tmp_path):
    if not os.path.isdir(FMNIST):
        pytest.skip("dataset-fashion-mnist not installed")
    d = model_dir(name)
    batch, steps, lr, adamw = RUNS[name]
    opt = ["--optimizer", str(d / "optimizer_model.onnx")] if adamw else []
    r = train(tmp_path, [str(d / "training_model.onnx"), *opt,
                        "--data", "fashion-mnist", "--data-dir", FMNIST,
                        "--batch", str(batch), "--max-steps", str(steps),
                        "--lr", str(lr), "--eval-samples", "-1",
                        "--compress", "static",
                        # mobilenet_v2's mask at batch 8 is 10 KB.
                        "--compress-options", "min-bytes=8192"])
    assert r["steps"] == steps and r["batch"] == batch and r["compress"] == "static"
    losses = r["loss_history"]
    assert len(losses) == steps and all(np.isfinite(losses))
    if name == "mobilenet_v2":
        assert max(losses) < 5.0, losses
    else:
        k = max(2, steps // 4)
        assert np.mean(losses[-k:]) < np.mean(losses[:k]), losses
    assert 0 < r["activation_bytes_compressed"] < r["activation_bytes_uncompressed"]
    assert r["tensor_peak_bytes"] <= r["peak_bytes"]
    for s in r["slots"]:
        assert s["ratio"] > 1.0, s
    if name in ("cnn", "mobilenet_v2"):
        # The analysis names the mask <Dropout node>:1.
        masks = [s for s in r["slots"] if s["value"].endswith("Dropout:1")]
        assert len(masks) == 1 and masks[0]["codec"] == "mask", r["slots"]
        # One bit per element plus the stream header.
        assert masks[0]["ratio"] > 5, masks[0]


# name: training steps of 32 before the evaluation. shufflenet_v2_x0_5
# starts to learn after about 20 steps (mean loss 2.29 over the first 15
# of 60, 1.68 over the last 15; 43% of the 256 test images).
EVAL_RUNS = {"transformer": 5, "embedding": 20, "shufflenet_v2_x0_5": 60}


@pytest.mark.parametrize("name", list(EVAL_RUNS))
def test_trains_and_evaluates(name, tmp_path):
    """An artifact folder with an eval graph of the ops torch exports for
    inference (the transformer's decomposed LayerNorm, GELU as Erf, the
    attention's Shape/Gather/Concat; the embedding model's Gather and
    Concat; ShuffleNet's channel shuffle and channel split, whose Reshape
    targets and Slice bounds are computed from Shape in both graphs)
    trains a few steps of 32 with the folder's AdamW and
    --compress static, then evaluates 256 test images: the report has a
    finite test loss and an accuracy well above chance (0.1; the untrained
    transformer scores 0.094)."""
    if not os.path.isdir(FMNIST):
        if os.environ.get("CI") == "true":
            pytest.fail("dataset-fashion-mnist not installed")
        pytest.skip("dataset-fashion-mnist not installed")
    d = model_dir(name)
    steps = EVAL_RUNS[name]
    r = train(tmp_path, [str(d), "--data", "fashion-mnist",
                        "--data-dir", FMNIST, "--batch", "32", "--max-steps", str(steps),
                        "--eval-samples", "256", "--compress", "static"])
    assert r["steps"] == steps and r["optimizer"] == "AdamWOptimizer"
    assert all(np.isfinite(r["loss_history"]))
    assert np.isfinite(r["test_loss"]) and 0 < r["test_loss"] < 5
    assert 0.2 < r["test_accuracy"] <= 1.0, r["test_accuracy"]


def test_actnet_trains_from_its_artifact_folder(tmp_path):
    """actnet (Sigmoid, Tanh, AveragePool and the Pad torch exports with it)
    trains from its folder alone: the folder's AdamW, eval graph and
    checkpoint. Static compression keeps the sigmoid and tanh outputs that
    SigmoidGrad and TanhGrad read as sz slots (dense: R = 1) and saves
    nothing for AveragePoolGrad, which reads only dY."""
    if not os.path.isdir(FMNIST):
        pytest.skip("dataset-fashion-mnist not installed")
    d = model_dir("actnet")
    steps = 100
    r = train(tmp_path, [str(d), "--data", "fashion-mnist",
                        "--data-dir", FMNIST, "--batch", "32", "--max-steps", str(steps),
                        "--eval-samples", "256"])
    assert r["steps"] == steps and r["compress"] == "static"
    losses = r["loss_history"]
    assert len(losses) == steps and all(np.isfinite(losses))
    # AdamW at 1e-3: about 2.29 over the first 25 steps, 1.30 over the last.
    k = steps // 4
    assert np.mean(losses[-k:]) < 0.75 * np.mean(losses[:k]), losses
    assert 0.3 < r["test_accuracy"] <= 1.0, r["test_accuracy"]
    # Slots are named by the node that computes the value.
    slots = {s["value"]: s for s in r["slots"]}
    for v in ("/features/features.1/Sigmoid", "/features/features.4/Tanh"):
        assert v in slots and slots[v]["codec"] == "sz", r["slots"]
        assert slots[v]["ratio"] > 1.0, slots[v]
    # The Pad output that only AveragePool reads is no saved activation.
    assert not any("Pad" in v for v in slots), r["slots"]


@pytest.mark.parametrize("compress", ["none", "static"])
def test_gpt_trains_on_synthetic_tokens(compress, tmp_path):
    """The gpt (int64 token ids; its labels, declared ['batch'] by ONNX
    Runtime, hold one label per token) trains from its artifact folder on
    --data synthetic: token sequences of its 32 positions with ids in
    [0, 256) and the next id as each token's label, which a model can learn.
    With the folder's AdamW the loss falls from about ln(256) = 5.55, and
    the per-token test accuracy of its eval graph ends far above chance
    (1/256). Static compression keeps the attention softmax, the Dropout
    masks and the block inputs compressed."""
    d = model_dir("gpt")
    steps = 60
    r = train(tmp_path, [str(d), "--data", "synthetic",
                        "--batch", "8", "--max-steps", str(steps),
                        "--eval-samples", "128", "--compress", compress])
    assert r["steps"] == steps and r["optimizer"] == "AdamWOptimizer"
    losses = r["loss_history"]
    assert len(losses) == steps and all(np.isfinite(losses))
    k = steps // 4
    # Measured: 5.61 over the first 15 steps, 4.85 over the last (both
    # settings); test loss 4.69, accuracy 0.139.
    assert np.mean(losses[-k:]) < np.mean(losses[:k]) - 0.3, losses
    assert np.isfinite(r["test_loss"]) and r["test_loss"] < 5.3
    assert 0.05 < r["test_accuracy"] <= 1.0, r["test_accuracy"]
    if compress == "none":
        assert r["slots"] == []
        return
    assert 0 < r["activation_bytes_compressed"] < r["activation_bytes_uncompressed"]
    values = {s["value"]: s for s in r["slots"]}
    for v in ("/blocks/blocks.0/Softmax", "/blocks/blocks.1/Softmax"):
        assert values[v]["codec"] == "sz" and values[v]["ratio"] > 1.0, r["slots"]
    masks = [s for s in r["slots"] if s["codec"] == "mask"]
    assert len(masks) == 6, r["slots"]  # three Dropouts per block


def test_gpt_needs_token_data(tmp_path):
    """Image samples do not fit a model whose input is token ids: synthetic
    images of --synthetic-shape and Fashion-MNIST are errors that say so
    and name the way out."""
    d = model_dir("gpt")
    p = subprocess.run([tool("comet-train"), str(d), "--data", "synthetic",
                        "--synthetic-shape", "1x28x28", "--max-steps", "1", "--quiet"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 1
    assert "--synthetic-shape gives image samples" in p.stderr, p.stderr
    if not os.path.isdir(FMNIST):
        pytest.skip("dataset-fashion-mnist not installed")
    p = subprocess.run([tool("comet-train"), str(d), "--data", "fashion-mnist",
                        "--data-dir", FMNIST, "--max-steps", "1", "--quiet"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 1
    assert "takes int64 token ids" in p.stderr and "--data synthetic" in p.stderr, p.stderr


def test_efficientnet_b0_trains_from_its_artifact_folder(tmp_path):
    """efficientnet_b0 (SiLU as ORT's QuickGelu, squeeze-excitation with
    Sigmoid, stochastic depth as ConstantOfShape and Dropout) trains a few
    steps of 8 from its folder alone (AdamW, checkpoint, eval graph) with
    --compress static. The input X of each QuickGeluGrad that is a
    BatchNorm output (read by nothing else in the backward pass) is an sz
    slot that shrinks, the classifier's Dropout mask is a 1-bit mask stream, and the
    eval graph (the noise's ConstantOfShape and Dropout in inference mode)
    gives a finite loss. The model learns too slowly to show in a few steps
    (ORT's own training API, batch 16, AdamW 1e-3: 7.34 over the first 10
    steps, 6.21 over steps 31-40), so the losses only have to stay finite."""
    if not os.path.isdir(FMNIST):
        pytest.skip("dataset-fashion-mnist not installed")
    d = model_dir("efficientnet_b0")
    steps = 4
    r = train(tmp_path, [str(d), "--data", "fashion-mnist",
                        "--data-dir", FMNIST, "--batch", "8", "--max-steps", str(steps),
                        "--eval-samples", "64", "--compress", "static",
                        "--compress-options", "min-bytes=8192"], timeout=900)
    assert r["steps"] == steps and r["optimizer"] == "AdamWOptimizer"
    assert all(np.isfinite(r["loss_history"])), r["loss_history"]
    assert np.isfinite(r["test_loss"])
    slots = {s["value"]: s for s in r["slots"]}
    # Slots are named by the node that computes the value (":<i>" for a
    # node with several outputs).
    graph = onnx.load(str(d / "training_model.onnx"), load_external_data=False)
    producer = {o: (n, i) for n in graph.graph.node for i, o in enumerate(n.output)}
    xs = []
    for n in graph.graph.node:
        if n.op_type == "QuickGeluGrad":
            src, i = producer[n.input[1]]
            # The squeeze-excitation's fc1 outputs ([8, C, 1, 1]) are below
            # min-bytes; the other 33 X are BatchNorm outputs, recomputed
            # from the BatchNorm's input, which is kept as an sz slot.
            if src.op_type == "BatchNormInternal":
                xs.append((f"{src.name}:{i}", src))
    assert len(xs) == 33
    recomputed = 0
    for v, bn in xs:
        if v not in slots:
            # Recomputed in the backward from the BatchNorm's input
            # (comet-recompute-activations), which is then kept as sz.
            src, i = producer[bn.input[0]]
            v = src.name if len(src.output) == 1 else f"{src.name}:{i}"
            recomputed += 1
        assert v in slots and slots[v]["codec"] == "sz", (v, sorted(slots))
        assert slots[v]["ratio"] > 1.0, slots[v]
    # Each BatchNorm input is kept for its gradient, so every one of these
    # outputs is computed again instead of kept beside it.
    assert recomputed == len(xs)
    masks = [s for s in r["slots"] if s["value"].endswith("Dropout:1")]
    assert [m["value"] for m in masks] == ["/classifier/classifier.0/Dropout:1"], masks
    assert masks[0]["codec"] == "mask" and masks[0]["ratio"] > 5, masks[0]
    assert 0 < r["activation_bytes_compressed"] < r["activation_bytes_uncompressed"]
