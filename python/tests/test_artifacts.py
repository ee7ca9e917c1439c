"""comet-train on an ONNX Runtime artifact folder as generate_artifacts
writes it: no flag needed, weights from `checkpoint` (not model.onnx), the
folder's AdamW optimizer and its eval_model.onnx (docs/execution.md)."""
import gzip
import json
import math
import os
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from comet_tools import tool
from onnx import helper, numpy_helper
from onnxruntime.tools.ort_format_model.ort_flatbuffers_py.fbs import Checkpoint

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "test", "fixtures", "models")
FMNIST = "/usr/share/datasets/fashion-mnist"
needs_data = pytest.mark.skipif(not os.path.isdir(FMNIST),
                                reason="dataset-fashion-mnist not installed")
BATCH = 8


def run(*args, check=True):
    p = subprocess.run([tool("comet-train"), *map(str, args)],
                       capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"comet-train failed: {p.stderr}")
    return p


def copy_folder(name, tmp_path):
    d = tmp_path / name
    shutil.copytree(os.path.join(MODELS, name), d)
    return d


def shift_checkpoint(path, delta):
    """Adds delta to every parameter of the checkpoint in place, through
    onnxruntime's own generated FlatBuffers classes (not COMET's reader);
    returns the new values by name."""
    buf = bytearray(path.read_bytes())
    state = Checkpoint.Checkpoint.GetRootAs(buf, 0).ModuleState()
    values = {}
    for get, n in ((state.RequiresGradParams, state.RequiresGradParamsLength()),
                   (state.FrozenParams, state.FrozenParamsLength())):
        for i in range(n):
            t = get(i)
            v = t.RawDataAsNumpy().view(np.float32)  # a view into buf
            v += delta
            values[t.Name().decode()] = v.copy().reshape(t.DimsAsNumpy())
    path.write_bytes(bytes(buf))
    return values


def dump_step(folder, out, *extra):
    rng = np.random.default_rng(3)
    rng.random((BATCH, 1, 28, 28), dtype=np.float32).tofile(out.parent / "in.bin")
    rng.integers(0, 10, BATCH, dtype=np.int64).tofile(out.parent / "labels.bin")
    return run(folder, "--batch", BATCH, "--compress", "none", "--dump-grads", out,
               "--inputs", out.parent / "in.bin", "--labels", out.parent / "labels.bin",
               *extra)


@pytest.mark.parametrize("name", ["lenet", "resnet"])
def test_weights_come_from_the_checkpoint(name, tmp_path):
    folder = copy_folder(name, tmp_path)
    # Shifted, the checkpoint differs from model.onnx everywhere; the
    # forward model is removed as well, so nothing else could supply them.
    expected = shift_checkpoint(folder / "checkpoint", 0.5)
    (folder / "model.onnx").unlink()
    out = tmp_path / "dump"
    dump_step(folder, out)
    model = onnx.load(os.path.join(MODELS, name, "model.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    dumped = {p.name[:-len(".param.bin")] for p in out.glob("*.param.bin")}
    assert dumped == set(expected)
    for p, want in expected.items():
        got = np.fromfile(out / f"{p}.param.bin", dtype=np.float32).reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=p)
        assert not np.array_equal(got, inits[p]), p
    if name == "resnet":  # frozen statistics too: running_mean 0 -> 0.5
        np.testing.assert_array_equal(
            np.fromfile(out / "bn1.running_mean.param.bin", dtype=np.float32),
            np.full(8, 0.5, np.float32))


def test_model_onnx_is_the_fallback(tmp_path):
    folder = copy_folder("lenet", tmp_path)
    (folder / "checkpoint").unlink()
    out = tmp_path / "dump"
    p = dump_step(folder, out)
    assert f"weights {folder / 'model.onnx'}" in p.stdout
    w = np.fromfile(out / "fc3.weight.param.bin", dtype=np.float32)
    model = onnx.load(folder / "model.onnx")
    ref = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_array_equal(w, ref["fc3.weight"].ravel())


def test_corrupt_checkpoint_is_a_clear_error(tmp_path):
    folder = copy_folder("lenet", tmp_path)
    data = (folder / "checkpoint").read_bytes()
    (folder / "checkpoint").write_bytes(data[: len(data) // 2])
    p = run(folder, "--max-steps", 1, check=False)
    assert p.returncode == 1
    assert (f"{folder / 'checkpoint'}: corrupt or truncated checkpoint "
            "(FlatBuffers verification failed)") in p.stderr


def test_ambiguous_data_input_is_an_error(tmp_path):
    # A second float graph input that is no parameter: which is the data?
    folder = copy_folder("lenet", tmp_path)
    m = onnx.load(folder / "training_model.onnx")
    m.graph.input.insert(1, helper.make_tensor_value_info(
        "extra", onnx.TensorProto.FLOAT, ["batch", 1, 28, 28]))
    onnx.save(m, folder / "training_model.onnx")
    p = run(folder, "--max-steps", 1, check=False)
    assert p.returncode == 1
    assert ("the training graph's data input is ambiguous: the float inputs "
            f"'input', 'extra' are not parameters of {folder / 'checkpoint'}") in p.stderr


def test_labels_input_bound_by_type_not_name(tmp_path):
    # Renamed data and labels inputs train the same as the originals.
    folder = copy_folder("lenet", tmp_path)
    m = onnx.load(folder / "training_model.onnx")
    rename = {"input": "pixels", "labels": "targets"}
    for v in m.graph.input:
        v.name = rename.get(v.name, v.name)
    for n in m.graph.node:
        n.input[:] = [rename.get(x, x) for x in n.input]
    onnx.save(m, folder / "training_model.onnx")
    (folder / "eval_model.onnx").unlink()
    renamed = tmp_path / "renamed"
    dump_step(folder, renamed)
    orig = tmp_path / "orig"
    dump_step(os.path.join(MODELS, "lenet"), orig)
    for f in orig.iterdir():
        assert (renamed / f.name).read_bytes() == f.read_bytes(), f.name


def eval_labels(n):
    with gzip.open(os.path.join(FMNIST, "t10k-labels-idx1-ubyte.gz")) as f:
        return np.frombuffer(f.read(), np.uint8, offset=8)[:n]


@needs_data
def test_no_flag_but_the_folder(tmp_path):
    """`comet-train ARTIFACT_DIR` alone: one epoch of Fashion-MNIST at batch
    64, compress static, AdamW from the folder at lr 0.001, eval_model.onnx
    on the whole test split; the summary names the files read."""
    folder = os.path.join(MODELS, "lenet")
    p = run(folder)
    files = {"training": os.path.join(folder, "training_model.onnx"),
             "weights": os.path.join(folder, "checkpoint"),
             "eval": os.path.join(folder, "eval_model.onnx")}
    for k, v in files.items():
        assert f"{k} {v}" in p.stdout, p.stdout
    assert (f"optimizer AdamWOptimizer ({os.path.join(folder, 'optimizer_model.onnx')}), "
            "lr 0.001") in p.stdout
    assert "compress static, batch 64, epochs 1" in p.stdout
    assert "steps 937 " in p.stdout
    acc = float(p.stdout.split("test accuracy ")[1].split()[0])
    assert acc > 0.7, p.stdout


@needs_data
@pytest.mark.parametrize("name", ["lenet", "resnet"])
@pytest.mark.parametrize("how", ["folder", "training_model"])
def test_report_names_the_folder_files(name, how, tmp_path):
    folder = os.path.join(MODELS, name)
    arg = folder if how == "folder" else os.path.join(folder, "training_model.onnx")
    rep = tmp_path / "r.json"
    run(arg, "--max-steps", 20, "--eval-samples", 256, "--report", rep, "--quiet")
    r = json.loads(rep.read_text())
    assert r["artifacts"] == {
        "training": os.path.join(folder, "training_model.onnx"),
        "weights": os.path.join(folder, "checkpoint"),
        "eval_model": os.path.join(folder, "eval_model.onnx"),
        "optimizer": os.path.join(folder, "optimizer_model.onnx")}
    assert r["optimizer"] == "AdamWOptimizer"
    assert r["learning_rate"] == pytest.approx(0.001)
    assert r["compress"] == "static" and r["steps"] == 20
    # resnet's eval graph has BatchNormalization(training_mode=0) with three
    # outputs, which the importer reduces to Y.
    assert 0.0 <= r["test_accuracy"] <= 1.0


@needs_data
def test_builtin_optimizer_and_lr_flag(tmp_path):
    rep = tmp_path / "r.json"
    run(os.path.join(MODELS, "lenet"), "--optimizer", "builtin", "--lr", 0.02,
        "--max-steps", 2, "--eval-samples", -1, "--report", rep, "--quiet")
    r = json.loads(rep.read_text())
    assert r["optimizer"] == "builtin-sgd-momentum"
    assert r["artifacts"]["optimizer"] is None
    assert r["learning_rate"] == pytest.approx(0.02)


@needs_data
@pytest.mark.parametrize("name", ["lenet", "resnet"])
def test_eval_runs_the_folders_eval_model(name, tmp_path):
    """An eval_model.onnx whose last Gemm reads zero weights and bias
    (initializers of its own) instead of the parameters: every prediction is
    class 0 and every loss log(10), which only that file can cause (the
    training graph is unchanged)."""
    folder = copy_folder(name, tmp_path)
    m = onnx.load(folder / "eval_model.onnx")
    loss = next(n for n in m.graph.node if n.op_type == "SoftmaxCrossEntropyLoss")
    fc = next(n for n in m.graph.node if loss.input[0] in n.output)
    assert fc.op_type == "Gemm"
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in m.graph.input}
    for i, zero in ((1, "zero_weight"), (2, "zero_bias")):
        m.graph.initializer.append(numpy_helper.from_array(
            np.zeros(shapes[fc.input[i]], np.float32), zero))
        fc.input[i] = zero
    onnx.save(m, folder / "eval_model.onnx")
    n = 500
    rep = tmp_path / "r.json"
    run(folder, "--max-steps", 5, "--eval-samples", n, "--report", rep, "--quiet")
    r = json.loads(rep.read_text())
    assert r["artifacts"]["eval_model"] == str(folder / "eval_model.onnx")
    assert r["test_accuracy"] == pytest.approx(np.mean(eval_labels(n) == 0))
    assert r["test_loss"] == pytest.approx(math.log(10), rel=1e-6)


def test_broken_eval_model_names_the_file(tmp_path):
    folder = copy_folder("lenet", tmp_path)
    (folder / "eval_model.onnx").write_bytes(b"not a model")
    p = run(folder, "--max-steps", 1, check=False)
    assert p.returncode == 1
    assert str(folder / "eval_model.onnx") in p.stderr
