"""Dump real activations: the inputs of every Conv and Gemm/MatMul layer.

A forward pass of each fixture model's eval_model.onnx on Fashion-MNIST test
images runs in ONNX Runtime with those tensors added as graph outputs; each
is saved as <out>/<model>__<tensor>.npy. These are the tensors COMET keeps
for the weight gradients, i.e. what the sz codec compresses in training.

    .venv/bin/python -m comet.activations --out build/activations
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
MODELS_DIR = REPO / "test" / "fixtures" / "models"
MODELS = ("lenet", "mlp", "resnet", "vgg")
LAYER_OPS = ("Conv", "Gemm", "MatMul")


def layer_inputs(graph) -> list[str]:
    """Names of the data inputs of Conv/Gemm/MatMul nodes, in graph order."""
    params = {i.name for i in graph.initializer}
    seen, names = set(), []
    for node in graph.node:
        if node.op_type in LAYER_OPS and node.input:
            name = node.input[0]
            if name not in params and name not in seen:
                seen.add(name)
                names.append(name)
    return names


def model_weights(model_dir: Path) -> dict[str, np.ndarray]:
    """Initial weights, from model.onnx's initializers (eval_model.onnx takes
    them as inputs)."""
    import onnx
    from onnx import numpy_helper

    path = model_dir / "model.onnx"
    if not path.exists():
        return {}
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}


def run_with_outputs(model_dir: Path, path: Path, wanted: list[str],
                     images: np.ndarray, labels: np.ndarray) -> list[np.ndarray]:
    """Runs the graph at `path` in ONNX Runtime on the model's weights and a
    batch, with the tensors named in `wanted` exposed as outputs, and returns
    them in that order."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(path))
    graph = model.graph
    existing = {o.name for o in graph.output}
    for name in wanted:
        if name not in existing:
            graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    weights = model_weights(model_dir)
    feeds = {}
    for inp in sess.get_inputs():
        if inp.name in weights:
            feeds[inp.name] = weights[inp.name]
        elif inp.type == "tensor(int64)":
            feeds[inp.name] = labels
        elif inp.type == "tensor(float)" and len(inp.shape) == 4:
            feeds[inp.name] = images
        elif inp.type == "tensor(float)":
            feeds[inp.name] = images.reshape(images.shape[0], -1)
        else:
            raise ValueError(f"{path}: no value for input {inp.name} ({inp.type})")
    return sess.run(wanted, feeds)


def dump_model(model_dir: Path, images: np.ndarray, labels: np.ndarray,
               out_dir: Path) -> list[Path]:
    import onnx

    path = model_dir / "eval_model.onnx"
    if not path.exists():
        path = model_dir / "model.onnx"
    wanted = layer_inputs(onnx.load(str(path)).graph)
    results = run_with_outputs(model_dir, path, wanted, images, labels)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, value in zip(wanted, results):
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        p = out_dir / f"{model_dir.name}__{safe}.npy"
        np.save(p, np.ascontiguousarray(value, dtype=np.float32))
        paths.append(p)
    return paths


def dump_activations(out_dir: Path, batch: int = 128, models=MODELS,
                     models_dir: Path = MODELS_DIR) -> list[Path]:
    from comet.data import load_fashion_mnist

    images, labels = load_fashion_mnist("test", limit=batch)
    paths = []
    for m in models:
        d = Path(models_dir) / m
        if (d / "eval_model.onnx").exists() or (d / "model.onnx").exists():
            paths += dump_model(d, images, labels, Path(out_dir))
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "build" / "activations"))
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args(argv)
    for p in dump_activations(Path(args.out), args.batch, args.models.split(",")):
        a = np.load(p)
        print(f"{p.name}: {a.shape} zeros={np.mean(a == 0):.2f}")


if __name__ == "__main__":
    main()
