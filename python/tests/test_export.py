"""Checks that the checked-in ORT training fixtures are real training graphs:
valid ONNX, the expected op types and I/O, and that ORT's training API lowers
the loss with them on Fashion-MNIST."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from comet import export, ort_training
from comet.models import BATCH_DIM, MODELS

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "test" / "fixtures" / "models"
NAMES = sorted(MODELS)
FILES = ["model.onnx", "training_model.onnx", "eval_model.onnx",
         "optimizer_model.onnx", "sgd_optimizer_model.onnx", "checkpoint"]
LOSS = "onnx::loss::2"

_COMMON = {("ai.onnx", "Flatten"), ("ai.onnx", "Gemm"), ("ai.onnx", "Identity"),
           ("ai.onnx", "ReduceSum"), ("ai.onnx", "Relu"),
           ("ai.onnx", "SoftmaxCrossEntropyLoss"),
           ("com.microsoft", "InPlaceAccumulatorV2"), ("com.microsoft", "ReluGrad"),
           ("com.microsoft", "SoftmaxCrossEntropyLossGrad")}
_POOLED_CNN = _COMMON | {("ai.onnx", "Conv"), ("ai.onnx", "MaxPool"),
                         ("ai.onnx", "MaxPoolGrad"), ("ai.onnx", "Reshape"),
                         ("ai.onnx", "Shape"), ("com.microsoft", "ConvGrad")}
# The op types that onnxruntime-training 1.19.2 puts in each training graph
# (docs/models.md lists them with counts).
EXPECTED_TRAINING_OPS = {
    "lenet": _POOLED_CNN,
    "vgg": _POOLED_CNN,
    "mlp": _COMMON,
    "resnet": _COMMON | {("ai.onnx", "Add"), ("ai.onnx", "Conv"), ("ai.onnx", "Expand"),
                         ("ai.onnx", "GlobalAveragePool"), ("ai.onnx", "Reshape"),
                         ("ai.onnx", "Shape"), ("ai.onnx", "Sum"),
                         ("com.microsoft", "BatchNormInternal"),
                         ("com.microsoft", "BatchNormalizationGrad"),
                         ("com.microsoft", "ConvGrad"), ("com.microsoft", "Scale")},
}
EXPECTED_FORWARD_OPS = {
    "lenet": {"Conv", "Relu", "MaxPool", "Flatten", "Gemm"},
    "mlp": {"Flatten", "Gemm", "Relu"},
    "resnet": {"Conv", "BatchNormalization", "Relu", "Add", "GlobalAveragePool",
               "Flatten", "Gemm"},
    "vgg": {"Conv", "Relu", "MaxPool", "Flatten", "Gemm"},
}
PARAM_COUNTS = {"lenet": 8042, "mlp": 52650, "resnet": 5266, "vgg": 29602}


def op_set(path):
    return {(d, t) for d, t, _ in export.list_ops(path)}


def dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_fixture_sizes_are_small():
    # The built-in models' folders; test_torch_models.py checks the PyTorch ones.
    total = sum(f.stat().st_size for n in NAMES for f in (FIXTURES / n).iterdir())
    assert total < 2 * 1024 * 1024, total


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fname", [f for f in FILES if f.endswith(".onnx")])
def test_fixture_passes_onnx_checker(name, fname):
    path = FIXTURES / name / fname
    export.check_model(path)


@pytest.mark.parametrize("name", NAMES)
def test_forward_model(name):
    m = onnx.load(FIXTURES / name / "model.onnx")
    assert {n.op_type for n in m.graph.node} - {"Identity"} == EXPECTED_FORWARD_OPS[name]
    (inp,), (out,) = m.graph.input, m.graph.output
    assert (inp.name, dims(inp)) == ("input", [BATCH_DIM, 1, 28, 28])
    assert (out.name, dims(out)) == ("logits", [BATCH_DIM, 10])
    n_params = sum(int(np.prod(i.dims)) for i in m.graph.initializer)
    assert n_params == PARAM_COUNTS[name]


@pytest.mark.parametrize("name", NAMES)
def test_training_graph_ops_and_io(name):
    path = FIXTURES / name / "training_model.onnx"
    assert op_set(path) == EXPECTED_TRAINING_OPS[name]

    fwd = onnx.load(FIXTURES / name / "model.onnx")
    trainable, frozen = export.trainable_params(fwd)
    assert trainable and (bool(frozen) == (name == "resnet"))
    shapes = {i.name: list(i.dims) for i in fwd.graph.initializer}

    tm = onnx.load(path)
    ins = {i.name: i for i in tm.graph.input}
    names = [i.name for i in tm.graph.input]
    assert names[:2] == ["input", "labels"] and names[-1] == "lazy_reset_grad"
    assert dims(ins["input"]) == [BATCH_DIM, 1, 28, 28]
    assert dims(ins["labels"]) == [BATCH_DIM]
    assert ins["labels"].type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert ins["lazy_reset_grad"].type.tensor_type.elem_type == onnx.TensorProto.BOOL
    # Every parameter is an input; every trainable one has an accumulation buffer.
    for p in trainable + frozen:
        assert dims(ins[p]) == shapes[p]
    bufs = [n for n in names if n.endswith("_grad.accumulation.buffer")]
    assert bufs == [f"{p}_grad.accumulation.buffer" for p in trainable]
    for p in trainable:
        assert dims(ins[f"{p}_grad.accumulation.buffer"]) == shapes[p]
    outs = [o.name for o in tm.graph.output]
    assert outs == [LOSS] + [f"{p}_grad.accumulation.out" for p in trainable]
    # Each trainable parameter's gradient is produced and accumulated.
    produced = {o for n in tm.graph.node for o in n.output}
    for p in trainable:
        assert f"{p}_grad" in produced
    acc = [n for n in tm.graph.node if n.op_type == "InPlaceAccumulatorV2"]
    assert len(acc) == len(trainable)
    # The symbolic batch reaches the intermediate values' shapes.
    vi = {v.name: dims(v) for v in tm.graph.value_info}
    assert vi["logits_grad"] == [BATCH_DIM, 10]


@pytest.mark.parametrize("name", NAMES)
def test_eval_and_optimizer_graphs(name):
    em = onnx.load(FIXTURES / name / "eval_model.onnx")
    assert [o.name for o in em.graph.output] == [LOSS]
    assert not any(n.op_type.endswith("Grad") for n in em.graph.node)
    assert op_set(FIXTURES / name / "optimizer_model.onnx") == {("com.microsoft", "AdamWOptimizer")}
    assert op_set(FIXTURES / name / "sgd_optimizer_model.onnx") == {("com.microsoft", "SGDOptimizerV2")}
    for f in ("optimizer_model.onnx", "sgd_optimizer_model.onnx"):
        assert onnx.load(FIXTURES / name / f).ir_version <= 10  # ORT 1.19's maximum


def test_he_init_is_seeded_and_scaled():
    a, b, c = MODELS["vgg"](0), MODELS["vgg"](0), MODELS["vgg"](1)
    wa = {i.name: numpy_helper.to_array(i) for i in a.graph.initializer}
    wb = {i.name: numpy_helper.to_array(i) for i in b.graph.initializer}
    wc = {i.name: numpy_helper.to_array(i) for i in c.graph.initializer}
    assert all(np.array_equal(wa[k], wb[k]) for k in wa)
    assert not np.array_equal(wa["fc1.weight"], wc["fc1.weight"])
    w = wa["fc1.weight"]  # [32, 784]: 25,088 draws, std sqrt(2/784)
    assert abs(w.std() / np.sqrt(2 / 784) - 1) < 0.03
    assert abs(w.mean()) < 0.01 * np.sqrt(2 / 784) * 10
    assert not wa["fc1.bias"].any()


def test_regenerate_matches_fixture(tmp_path):
    for name in NAMES:
        out = tmp_path / name
        paths = export.export_artifacts(name, out)
        assert sorted(p.name for p in paths.values()) == sorted(FILES)
        for f in FILES:
            if f.endswith(".onnx"):
                assert op_set(out / f) == op_set(FIXTURES / name / f), (name, f)
        # Same forward weights as the checked-in model (the seed is 0).
        new = {i.name: numpy_helper.to_array(i) for i in onnx.load(out / "model.onnx").graph.initializer}
        old = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(FIXTURES / name / "model.onnx").graph.initializer}
        assert new.keys() == old.keys()
        for k in old:
            np.testing.assert_allclose(new[k], old[k], rtol=1e-6, atol=0)
        tm_new = onnx.load(out / "training_model.onnx")
        tm_old = onnx.load(FIXTURES / name / "training_model.onnx")
        assert [i.name for i in tm_new.graph.input] == [i.name for i in tm_old.graph.input]
        assert [o.name for o in tm_new.graph.output] == [o.name for o in tm_old.graph.output]


def test_export_is_deterministic(tmp_path):
    export.export_artifacts("lenet", tmp_path / "a")
    export.export_artifacts("lenet", tmp_path / "b")
    for f in FILES:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_export_from_onnx_file_and_errors(tmp_path):
    paths = export.export_artifacts(str(FIXTURES / "mlp" / "model.onnx"), tmp_path / "m",
                                    optimizers=["sgd"])
    assert op_set(paths["training_model"]) == EXPECTED_TRAINING_OPS["mlp"]
    assert op_set(paths["optimizer_model"]) == {("com.microsoft", "SGDOptimizerV2")}
    with pytest.raises(ValueError, match="unknown model"):
        export.export_artifacts("alexnet", tmp_path / "x")
    with pytest.raises(ValueError, match="unknown optimizer"):
        export.export_artifacts("mlp", tmp_path / "x", optimizers=["lamb"])


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "comet.export", *args],
                          capture_output=True, text=True, env=env, cwd=ROOT)


def test_cli_list_ops_and_errors(tmp_path):
    r = _cli("--list-ops", str(FIXTURES / "lenet" / "training_model.onnx"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("# ")
    rows = {tuple(l.split()[:2]): int(l.split()[2]) for l in lines[1:]}
    assert rows[("com.microsoft", "ConvGrad")] == 2
    assert rows[("ai.onnx", "MaxPoolGrad")] == 2
    assert rows[("com.microsoft", "InPlaceAccumulatorV2")] == 10
    r = _cli("nosuchmodel", "--out", str(tmp_path))
    assert r.returncode == 2 and "unknown model" in r.stderr
    r = _cli("mlp", "--out", str(tmp_path / "mlp"), "--optimizer", "adamw")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "mlp" / "training_model.onnx").exists()
    assert not (tmp_path / "mlp" / "sgd_optimizer_model.onnx").exists()


# -- training with ORT's training API -----------------------------------------

def _training_api():
    try:
        return ort_training.load("api")
    except ImportError as e:  # pragma: no cover - depends on the wheel
        pytest.skip(f"onnxruntime training API unavailable: {e}")


@pytest.fixture(scope="module")
def fashion():
    from comet import data

    try:
        x, y = data.load_fashion_mnist("train", limit=4096)
        xt, yt = data.load_fashion_mnist("test", limit=512)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    return x, y, xt, yt


def train_and_eval(model_dir, fashion, optimizer="optimizer_model.onnx", lr=3e-3,
                   steps=40, batch=32):
    """Returns (eval loss before, eval loss after, training losses)."""
    api = _training_api()
    x, y, xt, yt = fashion
    state = api.CheckpointState.load_checkpoint(str(model_dir / "checkpoint"))
    module = api.Module(str(model_dir / "training_model.onnx"), state,
                        str(model_dir / "eval_model.onnx"))
    opt = api.Optimizer(str(model_dir / optimizer), module)
    opt.set_learning_rate(lr)
    module.eval()
    before = float(module(xt, yt))
    module.train()
    losses = []
    for s in range(steps):
        lo = float(module(x[s * batch:(s + 1) * batch], y[s * batch:(s + 1) * batch]))
        opt.step()
        module.lazy_reset_grad()
        losses.append(lo)
    module.eval()
    after = float(module(xt, yt))
    return before, after, losses


@pytest.mark.parametrize("name", NAMES)
def test_ort_training_lowers_loss(name, fashion):
    before, after, losses = train_and_eval(FIXTURES / name, fashion)
    assert np.isfinite(losses).all()
    # Initial loss is near ln(10) for a 10-class problem.
    assert 1.5 < losses[0] < 4.0, losses[0]
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.3, losses
    # ResNet's eval graph uses the never-updated BN running stats (see
    # docs/models.md), so only its training loss is required to fall.
    if name != "resnet":
        assert after < before - 0.3, (before, after)


def test_ort_training_with_sgd(fashion):
    before, after, losses = train_and_eval(FIXTURES / "lenet", fashion,
                                           optimizer="sgd_optimizer_model.onnx", lr=0.05)
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.2, losses
    assert after < before - 0.2, (before, after)


def test_checkpoint_holds_the_forward_weights():
    api = _training_api()
    for name in NAMES:
        state = api.CheckpointState.load_checkpoint(str(FIXTURES / name / "checkpoint"))
        fwd = onnx.load(FIXTURES / name / "model.onnx")
        trainable, frozen = export.trainable_params(fwd)
        params = state.parameters
        assert len(params) == len(trainable) + len(frozen)
        for init in fwd.graph.initializer:
            p = params[init.name]
            np.testing.assert_array_equal(p.data, numpy_helper.to_array(init))
            assert p.requires_grad == (init.name in trainable)

