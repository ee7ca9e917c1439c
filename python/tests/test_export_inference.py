"""The trained model exported for inference (comet-train --export-model,
comet::Engine::exportInferenceModel) against ONNX Runtime (1.19.2).

* ORT's InferenceSession runs it, and its logits give COMET's evaluation:
  the test loss and accuracy comet-train reports.
* It matches ORT's own Module.export_model_for_inferencing for the same
  weights (COMET's checkpoint loaded into ORT): the same inputs, outputs and
  parameters, and the same logits.
* Without an eval graph the training graph's forward part is exported, in
  inference mode (Dropout the identity, BatchNormalization on its running
  statistics): the same logits as the eval graph's export.
"""
import os
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from comet import data, ort_training
from comet_tools import ROOT, tool

FMNIST = "/usr/share/datasets/fashion-mnist"
MODELS = ROOT / "test" / "fixtures" / "models"
EVAL_SAMPLES = 500


def comet_train(model, out, *extra):
    """Trains 6 steps from `model`; writes out/model.onnx, out/ckpt and
    out/report.json."""
    out.mkdir(exist_ok=True)
    r = subprocess.run(
        [tool("comet-train"), str(model), "--data-dir", FMNIST, "--batch",
         "32", "--max-steps", "6", "--seed", "2", "--quiet", "--export-model",
         str(out / "model.onnx"), "--save-checkpoint", str(out / "ckpt"),
         "--report", str(out / "report.json"), *map(str, extra)],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    assert r.returncode == 0, r.stderr
    return out


def session(path):
    import onnxruntime as ort
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def logits(path, x):
    s = session(path)
    assert [i.name for i in s.get_inputs()] == ["input"]
    return s.run(None, {"input": x})[0]


@pytest.fixture(scope="module")
def test_set():
    if not os.path.isdir(FMNIST):
        pytest.skip("dataset-fashion-mnist not installed")
    return data.load_fashion_mnist("test", FMNIST, limit=EVAL_SAMPLES)


@pytest.mark.parametrize("name", ["lenet", "transformer"])
def test_export_gives_comets_evaluation(name, tmp_path, test_set):
    out = comet_train(MODELS / name, tmp_path / name, "--eval-samples",
                      EVAL_SAMPLES)
    m = onnx.load(out / "model.onnx")
    onnx.checker.check_model(m)
    assert [o.name for o in m.graph.output] == ["logits"]
    x, y = test_set
    z = logits(out / "model.onnx", x).astype(np.float64)
    zmax = z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z - zmax).sum(axis=1)) + zmax[:, 0]
    loss = float(np.mean(lse - z[np.arange(len(y)), y]))
    accuracy = float(np.mean(z.argmax(axis=1) == y))
    import json
    report = json.loads((out / "report.json").read_text())
    assert loss == pytest.approx(report["test_loss"], rel=1e-5)
    assert accuracy == pytest.approx(report["test_accuracy"], abs=1.5 / len(y))


@pytest.mark.parametrize("name", ["lenet", "resnet", "transformer"])
def test_export_matches_orts(name, tmp_path, test_set):
    """ORT's export_model_for_inferencing of the same weights."""
    model = MODELS / name
    out = comet_train(model, tmp_path / name, "--eval-samples", -1)
    api = ort_training.load("api")
    state = api.CheckpointState.load_checkpoint(str(out / "ckpt"))
    module = api.Module(str(model / "training_model.onnx"), state,
                        str(model / "eval_model.onnx"))
    module.export_model_for_inferencing(str(out / "ort.onnx"), ["logits"])
    mine, theirs = onnx.load(out / "model.onnx"), onnx.load(out / "ort.onnx")
    assert [i.name for i in mine.graph.input] == \
        [i.name for i in theirs.graph.input]
    assert [o.name for o in mine.graph.output] == \
        [o.name for o in theirs.graph.output]
    ort_inits = {t.name: numpy_helper.to_array(t)
                 for t in theirs.graph.initializer}
    params = [n for n, _ in state.parameters]
    mine_inits = {t.name: numpy_helper.to_array(t)
                  for t in mine.graph.initializer}
    for p in params:
        assert mine_inits[p].tobytes() == ort_inits[p].tobytes(), p
        assert mine_inits[p].tobytes() == state.parameters[p].data.tobytes()
    x = test_set[0][:64]
    np.testing.assert_allclose(logits(out / "model.onnx", x),
                               logits(out / "ort.onnx", x),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["cnn", "resnet"])
def test_training_graph_forward_without_eval_graph(name, tmp_path, test_set):
    """cnn has Dropout, resnet BatchNormalization: in the training graph
    both run in training mode; the export runs them for inference."""
    folder = tmp_path / "artifacts"
    folder.mkdir()
    for f in ("training_model.onnx", "optimizer_model.onnx", "checkpoint"):
        shutil.copy(MODELS / name / f, folder / f)
    a = comet_train(MODELS / name, tmp_path / "eval", "--eval-samples", -1)
    b = comet_train(folder, tmp_path / "forward", "--eval-samples", -1)
    assert (a / "ckpt").read_bytes() == (b / "ckpt").read_bytes()
    m = onnx.load(b / "model.onnx")
    onnx.checker.check_model(m)
    ops = {n.op_type for n in m.graph.node}
    assert not any("Grad" in op or "Loss" in op for op in ops), ops
    x = test_set[0][:64]
    np.testing.assert_allclose(logits(b / "model.onnx", x),
                               logits(a / "model.onnx", x),
                               rtol=1e-5, atol=1e-5)


def test_bad_outputs_are_errors(tmp_path):
    r = subprocess.run(
        [tool("comet-train"), str(MODELS / "lenet"), "--data", "synthetic",
         "--max-steps", "1", "--eval-samples", "-1", "--quiet",
         "--export-model", str(tmp_path / "m.onnx"), "--export-outputs",
         "logits,nothing"],
        capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert "the graph has no value named 'nothing' to output" in r.stderr
    assert not (tmp_path / "m.onnx").exists()
