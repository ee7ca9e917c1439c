"""The PyTorch models (python/comet/torch_models.py) as a user exports them:
torch.onnx.export in training mode, then ONNX Runtime's generate_artifacts;
and the ONNX Runtime reference step (comet.ort_reference) on their artifacts.

The export runs in the export environment .venv-export (Debian's torch), in a
subprocess; everything else runs here.  Where .venv-export, torch,
llvm-tblgen or Fashion-MNIST is missing the tests skip, and fail under CI=true.
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import pytest

from comet import data, export, op_inventory, ort_reference

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "test" / "fixtures" / "models"
EXPORT_PY = pathlib.Path(os.environ.get("COMET_EXPORT_PYTHON", ROOT / ".venv-export" / "bin" / "python"))
BUILD = pathlib.Path(os.environ.get("COMET_BUILD_DIR", ROOT / "build"))
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
SMALL = ["cnn", "transformer", "actnet"]
# ORT's AveragePoolGrad takes dX's shape from the graph when the session is
# made; with the symbolic batch of the artifacts that shape is empty and the
# step dies of SIGFPE (test_torch_models_vs_ort.py makes the batch static
# for its check), so actnet has no reference step here.
REFERENCE_SMALL = ["cnn", "transformer"]
LARGE = ["resnet18", "mobilenet_v2", "shufflenet_v2_x0_5", "efficientnet_b0"]
FILES = ["model.onnx", "training_model.onnx", "eval_model.onnx", "optimizer_model.onnx",
         "checkpoint"]
LOSS = "onnx::loss::2"
# Parameter counts of the torch modules (trainable, BatchNorm running statistics).
PARAMS = {"cnn": (207018, 96), "transformer": (104394, 0), "actnet": (9098, 0),
          "resnet18": (11175370, 9600), "mobilenet_v2": (2236106, 34112),
          "shufflenet_v2_x0_5": (351610, 7952), "efficientnet_b0": (4019782, 42016)}
OPSETS = {"cnn": 17, "transformer": 16, "actnet": 17, "resnet18": 17, "mobilenet_v2": 17,
          "shufflenet_v2_x0_5": 17, "efficientnet_b0": 17}


def need(ok: bool, why: str) -> None:
    if not ok:
        if CI:
            pytest.fail(f"{why} (CI=true: a missing prerequisite fails)")
        pytest.skip(why)


def _run(cmd, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), PYTHONWARNINGS="ignore")
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout)


@pytest.fixture(scope="module")
def export_python():
    need(EXPORT_PY.exists(), f"{EXPORT_PY} not found: scripts/setup.sh makes .venv-export")
    r = _run([EXPORT_PY, "-c", "import torch, torchvision, onnxruntime"], timeout=120)
    need(r.returncode == 0, f"{EXPORT_PY} cannot import torch/torchvision: {r.stderr[-500:]}")
    return EXPORT_PY


@pytest.fixture(scope="module")
def small_export(export_python, tmp_path_factory):
    out = tmp_path_factory.mktemp("torch_models")
    r = _run([export_python, "-m", "comet.export", "--torch-models", out, "--only", ",".join(SMALL)])
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def large_models(export_python):
    out = BUILD / "models"
    r = _run(["bash", ROOT / "scripts" / "export-torch-models.sh", out, *LARGE], timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def fashion_batch():
    need(os.path.isdir(data.data_dir()), f"{data.data_dir()}: dataset-fashion-mnist not installed")
    return ort_reference.fixed_batch(8)


def dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def check_artifacts(d: pathlib.Path, name: str) -> None:
    """The files, graph inputs and outputs a user's artifact folder has."""
    assert sorted(p.name for p in d.iterdir() if not p.name.startswith(".")) == sorted(FILES)
    fwd = onnx.load(d / "model.onnx")
    assert [o.version for o in fwd.opset_import if o.domain in ("", "ai.onnx")] == [OPSETS[name]]
    (inp,), (out,) = fwd.graph.input, fwd.graph.output
    assert (inp.name, dims(inp)) == ("input", ["batch", 1, 28, 28])
    assert (out.name, dims(out)) == ("logits", ["batch", 10])
    trainable, frozen = export.trainable_params(fwd)
    size = {i.name: int(np.prod(i.dims)) for i in fwd.graph.initializer}
    assert (sum(size[p] for p in trainable), sum(size[p] for p in frozen)) == PARAMS[name]

    tm = onnx.load(d / "training_model.onnx")
    names = [i.name for i in tm.graph.input]
    assert names[:2] == ["input", "labels"] and names[-1] == "lazy_reset_grad"
    ins = {i.name: i for i in tm.graph.input}
    assert dims(ins["input"]) == ["batch", 1, 28, 28] and dims(ins["labels"]) == ["batch"]
    assert set(trainable + frozen) <= set(names)
    assert [n for n in names if n.endswith("_grad.accumulation.buffer")] == \
        [f"{p}_grad.accumulation.buffer" for p in trainable]
    assert [o.name for o in tm.graph.output] == \
        [LOSS] + [f"{p}_grad.accumulation.out" for p in trainable]

    em = onnx.load(d / "eval_model.onnx")
    assert [i.name for i in em.graph.input][:2] == ["input", "labels"]
    assert [o.name for o in em.graph.output] == [LOSS]
    assert not any(n.op_type.endswith("Grad") for n in em.graph.node)
    om = onnx.load(d / "optimizer_model.onnx")
    assert [(n.domain, n.op_type) for n in om.graph.node] == [("com.microsoft", "AdamWOptimizer")]
    assert om.ir_version <= 10


# Op types that make each model what it is (docs/models.md has all of them).
KEY_OPS = {
    "cnn": {("com.microsoft", "BatchNormInternal"), ("ai.onnx", "Dropout"),
            ("com.microsoft", "DropoutGrad"), ("ai.onnx", "MaxPoolGrad")},
    "transformer": {("ai.onnx", "LayerNormalization"), ("com.microsoft", "LayerNormalizationGrad"),
                    ("com.microsoft", "FusedMatMul"), ("com.microsoft", "BiasGelu"),
                    ("com.microsoft", "SoftmaxGrad_13"), ("ai.onnx", "Dropout"),
                    ("ai.onnx", "Transpose")},
    "actnet": {("com.microsoft", "SigmoidGrad"), ("com.microsoft", "TanhGrad"),
               ("ai.onnx", "AveragePoolGrad"), ("ai.onnx", "Pad"), ("ai.onnx", "Neg")},
    "resnet18": {("com.microsoft", "BatchNormInternal"), ("ai.onnx", "MaxPoolGrad"),
                 ("ai.onnx", "GlobalAveragePool")},
    "mobilenet_v2": {("ai.onnx", "Clip"), ("ai.onnx", "GreaterOrEqual"), ("ai.onnx", "Dropout"),
                     ("com.microsoft", "BatchNormInternal")},
    # The channel shuffle (Reshape, Transpose, Reshape on targets built from
    # Shape) and the channel split (Slice with bounds computed from Shape).
    "shufflenet_v2_x0_5": {("ai.onnx", "Transpose"), ("ai.onnx", "Slice"),
                           ("com.microsoft", "SliceGrad"), ("com.microsoft", "ConcatTraining"),
                           ("com.microsoft", "SplitTraining"), ("ai.onnx", "MaxPoolGrad")},
    # SiLU fused into QuickGelu; the squeeze-excitation's Sigmoid; the
    # stochastic depth's noise (ConstantOfShape, Dropout).
    "efficientnet_b0": {("com.microsoft", "QuickGelu"), ("com.microsoft", "QuickGeluGrad"),
                        ("com.microsoft", "SigmoidGrad"), ("ai.onnx", "ConstantOfShape"),
                        ("ai.onnx", "Dropout"), ("com.microsoft", "BatchNormInternal")},
}


def check_key_ops(d, name):
    ops = {(dm, t) for dm, t, _ in export.list_ops(d / "training_model.onnx")}
    assert KEY_OPS[name] <= ops, KEY_OPS[name] - ops


@pytest.mark.parametrize("name", SMALL)
def test_small_model_export(small_export, name):
    check_artifacts(small_export / name, name)
    check_key_ops(small_export / name, name)


@pytest.mark.parametrize("name", SMALL)
def test_checked_in_fixture_is_the_export(small_export, name):
    # The export is deterministic and the fixture is what regenerate.sh makes.
    for f in FILES:
        assert (small_export / name / f).read_bytes() == (FIXTURES / name / f).read_bytes(), f


@pytest.mark.parametrize("name", SMALL)
def test_checked_in_fixture_is_small(name):
    assert sum(f.stat().st_size for f in (FIXTURES / name).iterdir()) < 2 * 1024 * 1024


def test_gpt_export(export_python, tmp_path):
    """The gpt as a user exports it: int64 token ids [batch, 32] in, logits
    [batch * 32, 256] out (`view(-1, vocab)`), so ONNX Runtime's labels are
    declared ['batch'] (they hold one label per token). The causal masks,
    registered buffers, are frozen parameters (inputs of the training graph
    without a gradient buffer); the graphs hold the ops that make it a GPT:
    Split (q, k, v), Equal and Where (the mask, and its gradient), and in
    the eval graph Range (the positions) and Reciprocal."""
    r = _run([export_python, "-m", "comet.export", "--torch-models", tmp_path,
              "--only", "gpt"])
    assert r.returncode == 0, r.stderr[-3000:]
    d = tmp_path / "gpt"
    fwd = onnx.load(d / "model.onnx")
    (inp,), (out,) = fwd.graph.input, fwd.graph.output
    assert (inp.name, dims(inp)) == ("input", ["batch", 32])
    assert inp.type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert out.name == "logits" and dims(out)[0] == "batch"
    trainable, frozen = export.trainable_params(fwd)
    assert frozen == ["blocks.0.mask", "blocks.1.mask"]
    size = {i.name: int(np.prod(i.dims)) for i in fwd.graph.initializer}
    # 256 x 64 token and 32 x 64 position tables, 2 blocks of 49,984, the
    # final LayerNorm and the 64 x 256 head; two 32 x 32 masks.
    assert (sum(size[p] for p in trainable), sum(size[p] for p in frozen)) == (134912, 2048)

    tm = onnx.load(d / "training_model.onnx")
    ins = {i.name: i for i in tm.graph.input}
    assert [i.name for i in tm.graph.input][:2] == ["input", "labels"]
    assert dims(ins["labels"]) == ["batch"]
    assert ins["labels"].type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert "blocks.0.mask" in ins and "blocks.0.mask_grad.accumulation.buffer" not in ins
    ops = {(dm, t) for dm, t, _ in export.list_ops(d / "training_model.onnx")}
    assert {("ai.onnx", "Split"), ("ai.onnx", "Equal"), ("ai.onnx", "Where"),
            ("com.microsoft", "GatherGrad")} <= ops
    eval_ops = {t for _, t, _ in export.list_ops(d / "eval_model.onnx")}
    assert {"Split", "Equal", "Where", "Range", "Reciprocal"} <= eval_ops


def test_gpt_export_at_another_size(export_python, tmp_path):
    """--model-args passes the gpt's constructor arguments: one block of
    d_model 32 and 2 heads over 16 positions gives token ids [batch, 16]
    and the parameters of that size; an argument the constructor does not
    take, a malformed one, or one for a model that is not a PyTorch model
    by name is an error."""
    d = tmp_path / "gpt"
    r = _run([export_python, "-m", "comet.export", "gpt", "--out", d, "--optimizer",
              "adamw", "--model-args", "layers=1,d_model=32,heads=2,seq_len=16"])
    assert r.returncode == 0, r.stderr[-3000:]
    fwd = onnx.load(d / "model.onnx")
    assert dims(fwd.graph.input[0]) == ["batch", 16]
    trainable, frozen = export.trainable_params(fwd)
    assert frozen == ["blocks.0.mask"]
    size = {i.name: int(np.prod(i.dims)) for i in fwd.graph.initializer}
    # 256 x 32 token and 16 x 32 position tables, one block (2 LayerNorms
    # 64, q/k/v 3168, projection 1056, MLP 4224 + 4128), the final
    # LayerNorm and the 32 x 256 head; one 16 x 16 mask.
    assert (sum(size[p] for p in trainable), sum(size[p] for p in frozen)) == (29664, 256)
    for args, message in ((["gpt", "--model-args", "width=3"], "unexpected keyword"),
                          (["gpt", "--model-args", "layers"], "is not KEY=NUMBER"),
                          (["gpt", "--model-args", "layers=two"], "is not a number"),
                          (["lenet", "--model-args", "layers=1"], "applies to the PyTorch")):
        r = _run([export_python, "-m", "comet.export", *args, "--out", tmp_path / "x"])
        assert r.returncode == 2 and message in r.stderr, r.stderr[-2000:]
        assert "Traceback" not in r.stderr


def test_torch_model_cli_errors(export_python, tmp_path):
    r = _run([export_python, "-m", "comet.export", "--torch-models", tmp_path, "--only", "alexnet"])
    assert r.returncode == 2 and "unknown torch model" in r.stderr
    r = _run([export_python, "-m", "comet.export", "--torch-models", tmp_path, "--all"])
    assert r.returncode == 2 and "takes no model" in r.stderr


def test_torch_models_without_torch_name_the_export_environment(tmp_path):
    r = _run([sys.executable, "-c", "import torch"])
    if r.returncode == 0:
        pytest.skip("this Python has torch")
    r = _run([sys.executable, "-m", "comet.export", "cnn", "--out", tmp_path])
    assert r.returncode == 2 and ".venv-export" in r.stderr, r.stderr


@pytest.mark.parametrize("name", LARGE)
def test_large_model_export(large_models, name):
    check_artifacts(large_models / name, name)
    check_key_ops(large_models / name, name)


# -- the ONNX Runtime reference step -------------------------------------------

# The loss before training: about ln(10), but efficientnet_b0's is 4.73 on
# this batch: torchvision initializes its classifier uniformly in
# +-1/sqrt(10) over 1280 features, and the untrained logits have a standard
# deviation near 4.
FIRST_LOSS = {"efficientnet_b0": (1.5, 8.0)}


def check_reference(d, batch):
    x, y = batch
    ref = ort_reference.reference_step(d, x=x, y=y)
    params, trainable = ort_reference.load_parameters(d)
    assert ref.loss.shape == () and np.isfinite(ref.loss)
    lo, hi = FIRST_LOSS.get(d.name, (1.5, 4.0))
    assert lo < float(ref.loss) < hi
    assert sorted(ref.grads) == sorted(trainable)
    for p, g in ref.grads.items():
        assert g.shape == params[p].shape and g.dtype == np.float32, p
        assert np.isfinite(g).all(), p
    assert sum(np.abs(g).sum() > 0 for g in ref.grads.values()) >= len(trainable) - 1
    tm = onnx.load(d / "training_model.onnx")
    assert len(ref.masks) == sum(n.op_type == "Dropout" for n in tm.graph.node)
    for m in ref.masks.values():
        assert m.dtype == np.bool_ and m.shape[0] in (x.shape[0], 4 * x.shape[0])
    # The same masks and gradients again, and the training API agrees.
    again = ort_reference.reference_step(d, x=x, y=y)
    assert all(np.array_equal(again.grads[k], ref.grads[k]) for k in ref.grads)
    loss, grads = ort_reference.module_step(d, x, y)
    assert loss == float(ref.loss)
    for p in trainable:
        np.testing.assert_array_equal(grads[p], ref.grads[p])
    return ref


@pytest.mark.parametrize("name", REFERENCE_SMALL)
def test_reference_step_small(name, fashion_batch):
    ref = check_reference(FIXTURES / name, fashion_batch)
    if name == "cnn":  # BatchNorm running statistics moved from 0 and 1
        assert len(ref.stats) == 4
        assert not np.allclose(next(iter(ref.stats.values())), 0)


@pytest.mark.parametrize("name", LARGE)
def test_reference_step_large(large_models, name, fashion_batch):
    check_reference(large_models / name, fashion_batch)


def test_reference_cli(tmp_path, fashion_batch):
    out = tmp_path / "ref.npz"
    r = _run([sys.executable, "-m", "comet.ort_reference", FIXTURES / "transformer",
              "--out", out, "--batch", "4"])
    assert r.returncode == 0, r.stderr
    z = np.load(out)
    assert z["input"].shape == (4, 1, 28, 28) and z["labels"].shape == (4,)
    assert sum(k.startswith("grad:") for k in z.files) == 31
    assert sum(k.startswith("mask:") for k in z.files) == 8
    assert z["grad:head.weight"].shape == (10, 64)


# -- the op inventory ------------------------------------------------------------

@pytest.fixture(scope="module")
def importer_ops():
    try:
        tblgen = op_inventory.find_tblgen()
    except FileNotFoundError as e:
        need(False, str(e))
    return op_inventory.importer_ops(tblgen=tblgen)


def test_importer_table_from_tablegen(importer_ops):
    conv, grad, acc = (importer_ops[("ai.onnx", "Conv")],
                       importer_ops[("com.microsoft", "ConvGrad")],
                       importer_ops[("com.microsoft", "InPlaceAccumulatorV2")])
    assert {"group", "kernel_shape", "pads", "strides"} <= conv.attributes
    assert conv.max_inputs == 3 and conv.max_outputs == 1
    assert grad.max_outputs == 3 and acc.max_inputs == 3
    assert importer_ops[("ai.onnx", "Sum")].max_inputs is None  # variadic
    assert ("ai.onnx", "ConvGrad") not in importer_ops


def test_inventory_counts_and_support(importer_ops):
    dirs = {n: FIXTURES / n for n in SMALL}
    inv = op_inventory.inventory(dirs, importer_ops)
    for n, d in dirs.items():
        for g in op_inventory.GRAPHS:
            for dom, t, k in export.list_ops(d / g):
                assert inv.counts[(dom, t)][(n, g)] == k
    table = op_inventory.markdown(inv, importer_ops)
    for key in inv.counts:
        row = next(l for l in table.splitlines() if l.startswith(f"| {key[0]} | {key[1]} |"))
        assert row.endswith("| no |") == (key not in importer_ops), row
    assert "ratio=0.25, training_mode=True" in op_inventory.attribute_notes(inv)
