"""COMET's checkpoints against ONNX Runtime's (onnxruntime-training 1.19.2).

* What comet-train --save-checkpoint writes, ORT's CheckpointState reads:
  the parameters byte for byte as COMET holds them, the optimizer state
  under ORT's names, the properties.
* ORT continues training from it: one ORT step from COMET's checkpoint
  equals, bit for bit, one ORT step from ORT's own checkpoint of the same
  state, and it is the AdamW step from the saved moments and step count
  (a numpy AdamW on ORT's gradient), not one from fresh moments.
* What ORT saves after training, COMET reads: the parameters byte for byte.

The file is also read with the FlatBuffers Python runtime on accessors flatc
generates from lib/Import/OrtCheckpoint.fbs, a reader independent of both.
"""
import importlib
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest

from comet import ort_training
from comet_tools import ROOT, tool

MODELS = ROOT / "test" / "fixtures" / "models"
LENET = MODELS / "lenet"
BATCH = 16


def api():
    return ort_training.load("api")


def comet_train(*args):
    r = subprocess.run([tool("comet-train"), *map(str, args)],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def fbs(tmp_path_factory):
    """The checkpoint schema's Python accessors (flatc), as a module whose
    Checkpoint class reads a file's bytes."""
    flatc = shutil.which("flatc")
    if not flatc:
        pytest.skip("flatc not installed")
    out = tmp_path_factory.mktemp("fbs")
    schema = (ROOT / "lib" / "Import" / "OrtCheckpoint.fbs").read_text()
    # Its own namespace: `comet` is the package under test.
    (out / "ckpt.fbs").write_text(
        schema.replace("namespace comet.ortfbs;", "namespace ortckpt;"))
    subprocess.run([flatc, "--python", "-o", str(out), str(out / "ckpt.fbs")],
                   check=True)
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module("ortckpt.Checkpoint")
    finally:
        sys.path.remove(str(out))


def read_fbs(fbs, path):
    """(parameters, optimizer group, properties) as plain Python values."""
    c = fbs.Checkpoint.GetRootAs(path.read_bytes(), 0)

    def tensor(t):
        dims = [t.Dims(i) for i in range(t.DimsLength())]
        raw = t.RawDataAsNumpy().tobytes() if t.RawDataLength() else b""
        return t.Name().decode(), np.frombuffer(raw, np.float32).reshape(dims)

    ms = c.ModuleState()
    params = {}
    for get, n, trainable in ((ms.RequiresGradParams,
                               ms.RequiresGradParamsLength(), True),
                              (ms.FrozenParams, ms.FrozenParamsLength(),
                               False)):
        for i in range(n):
            name, value = tensor(get(i))
            params[name] = (value, trainable)
    group = None
    if c.OptimizerGroupsLength():
        assert c.OptimizerGroupsLength() == 1
        g = c.OptimizerGroups(0)
        states = {}
        for i in range(g.OptimizerStatesLength()):
            s = g.OptimizerStates(i)
            states[s.ParamName().decode()] = dict(
                tensor(s.Momentums(k)) for k in range(s.MomentumsLength()))
        group = dict(name=g.GroupName().decode(), step=g.Step(),
                     lr=g.InitialLearningRate(), states=states)
    props = {}
    bag = c.PropertyBag()
    if bag:
        for get, n in ((bag.Ints, bag.IntsLength()),
                       (bag.Floats, bag.FloatsLength()),
                       (bag.Strings, bag.StringsLength())):
            for i in range(n):
                p = get(i)
                v = p.Value()
                props[p.Name().decode()] = v.decode() if isinstance(v, bytes) else v
    return params, group, props


def batch(seed):
    rng = np.random.default_rng(seed)
    x = rng.random((BATCH, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, BATCH).astype(np.int64)
    return x, y


def comet_view(ckpt, tmp_path):
    """COMET's reading of a checkpoint's parameters (--weights, --dump-grads:
    the weights the step started from), by name, as raw bytes."""
    x, y = batch(0)
    x.tofile(tmp_path / "x.bin")
    y.tofile(tmp_path / "y.bin")
    out = tmp_path / "dump"
    comet_train(LENET, "--batch", BATCH, "--weights", ckpt, "--dump-grads",
                out, "--inputs", tmp_path / "x.bin", "--labels",
                tmp_path / "y.bin", "--compress", "none")
    return {f.name[:-len(".param.bin")]: f.read_bytes()
            for f in out.glob("*.param.bin")}


def ort_step(ckpt, optimizer, lr, x, y):
    """One ORT training step at learning rate `lr` from `ckpt`: (gradients,
    parameters before, parameters after), by name. ORT's Optimizer starts
    at its own default rate, whatever the checkpoint's
    initial_learning_rate."""
    state = api().CheckpointState.load_checkpoint(str(ckpt))
    module = api().Module(str(LENET / "training_model.onnx"), state)
    opt = api().Optimizer(str(LENET / optimizer), module)
    opt.set_learning_rate(lr)
    module.train()
    module(x, y)
    names = [n for n, _ in state.parameters]
    before = {n: state.parameters[n].data.copy() for n in names}
    grads = {n: state.parameters[n].grad.copy() for n in names}
    opt.step()
    after = {n: state.parameters[n].data.copy() for n in names}
    return grads, before, after


def comet_checkpoint(tmp_path, optimizer, steps=5):
    path = tmp_path / ("comet-" + optimizer.replace(".onnx", ""))
    comet_train(LENET, "--data", "synthetic", "--synthetic-size", 256,
                "--batch", BATCH, "--max-steps", steps, "--eval-samples", -1,
                "--quiet", "--optimizer", LENET / optimizer,
                "--save-checkpoint", path)
    return path


def test_ort_reads_what_comet_writes(tmp_path, fbs):
    ckpt = comet_checkpoint(tmp_path, "optimizer_model.onnx")
    state = api().CheckpointState.load_checkpoint(str(ckpt))
    mine = comet_view(ckpt, tmp_path)
    params, group, props = read_fbs(fbs, ckpt)
    names = sorted(n for n, _ in state.parameters)
    assert names == sorted(mine) == sorted(params)
    for n in names:
        p = state.parameters[n]
        assert p.data.tobytes() == mine[n] == params[n][0].tobytes(), n
        assert p.requires_grad and params[n][1]
    # ORT's names: one group, group0, with the step; momentum0 and
    # momentum1 of each trainable parameter's shape.
    assert group["name"] == "group0" and group["step"] == 5
    assert group["lr"] == np.float32(1e-3)
    assert sorted(group["states"]) == names
    for n, moms in group["states"].items():
        assert sorted(moms) == ["momentum0", "momentum1"]
        assert moms["momentum0"].shape == params[n][0].shape
        assert (moms["momentum1"] >= 0).all()
    # The properties, ORT's view and the file's: comet-train's fields.
    ort_props = dict(state.properties)
    assert ort_props == props
    assert props["comet.step"] == 5 and props["comet.batch"] == BATCH
    assert props["comet.version"] == 1
    assert len(props["comet.loss_history"].split(",")) == 5


@pytest.mark.parametrize("optimizer", ["optimizer_model.onnx",
                                       "sgd_optimizer_model.onnx"])
def test_ort_continues_from_comet_checkpoint(tmp_path, fbs, optimizer):
    ckpt = comet_checkpoint(tmp_path, optimizer)
    # ORT's own checkpoint of the same state: COMET's, loaded and saved by
    # ORT (with an optimizer, so its state is ORT's).
    state = api().CheckpointState.load_checkpoint(str(ckpt))
    module = api().Module(str(LENET / "training_model.onnx"), state)
    api().Optimizer(str(LENET / optimizer), module)
    ort_ckpt = tmp_path / "ort"
    api().CheckpointState.save_checkpoint(state, str(ort_ckpt),
                                          include_optimizer_state=True)
    params, group, props = read_fbs(fbs, ckpt)
    ort_params, ort_group, ort_props = read_fbs(fbs, ort_ckpt)
    assert ort_props == props
    assert ort_group["step"] == group["step"] == 5
    for n, (v, trainable) in params.items():
        assert ort_params[n][1] == trainable
        np.testing.assert_array_equal(ort_params[n][0], v)
        for k, m in group["states"][n].items():
            np.testing.assert_array_equal(ort_group["states"][n][k], m)

    x, y = batch(1)
    lr = group["lr"]
    grads, before, after = ort_step(ckpt, optimizer, lr, x, y)
    _, before2, after2 = ort_step(ort_ckpt, optimizer, lr, x, y)
    for n in after:
        assert before[n].tobytes() == params[n][0].tobytes(), n
        assert after[n].tobytes() == after2[n].tobytes(), n

    # The step ORT took is the one from the saved optimizer state.
    attrs = {a.name: onnx.helper.get_attribute_value(a)
             for a in onnx.load(LENET / optimizer).graph.node[0].attribute}
    lr = np.float32(lr)
    for n in after:
        w, g = before[n], grads[n]
        if "alpha" not in attrs:  # SGDOptimizerV2
            want = w - lr * g
        else:
            assert attrs["adam_mode"] == 1 and attrs["correct_bias"] == 1
            a, b = np.float32(attrs["alpha"]), np.float32(attrs["beta"])
            eps, t = np.float32(attrs["epsilon"]), group["step"] + 1
            m = a * group["states"][n]["momentum0"] + (1 - a) * g
            v = b * group["states"][n]["momentum1"] + (1 - b) * g * g
            lr_t = lr * np.sqrt(1 - b ** t) / (1 - a ** t)
            want = w - lr_t * m / (np.sqrt(v) + eps)
            # From fresh moments the step would be another.
            m0, v0 = (1 - a) * g, (1 - b) * g * g
            fresh = w - lr * np.sqrt(1 - b) / (1 - a) * m0 / (np.sqrt(v0) + eps)
            assert np.abs(fresh - want).max() > 1e-5, n
        np.testing.assert_allclose(after[n], want, rtol=1e-5, atol=1e-7,
                                   err_msg=n)


def test_comet_reads_what_ort_writes(tmp_path):
    """ORT's checkpoint after two AdamW steps, with properties: COMET starts
    from exactly its parameters (its optimizer state: EngineCheckpointTest
    on test/fixtures/checkpoints)."""
    state = api().CheckpointState.load_checkpoint(str(LENET / "checkpoint"))
    module = api().Module(str(LENET / "training_model.onnx"), state)
    opt = api().Optimizer(str(LENET / "optimizer_model.onnx"), module)
    module.train()
    for s in range(2):
        module(*batch(10 + s))
        opt.step()
        module.lazy_reset_grad()
    state.properties["epoch"] = 2
    state.properties["note"] = "from ORT"
    path = tmp_path / "ort"
    api().CheckpointState.save_checkpoint(state, str(path),
                                          include_optimizer_state=True)
    mine = comet_view(path, tmp_path)
    assert sorted(mine) == sorted(n for n, _ in state.parameters)
    for n, p in state.parameters:
        assert p.data.tobytes() == mine[n], n
