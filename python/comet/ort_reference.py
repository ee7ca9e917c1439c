"""One ONNX Runtime training step on an artifact folder, as the reference that
COMET's own step is compared with (loss and every gradient, 1e-4 relative).

The step runs the folder's training_model.onnx with the parameters from its
`checkpoint` on the first `batch` Fashion-MNIST training images.  It runs the
graph in an onnxruntime InferenceSession (the same kernels as the training
API's Module) with more graph outputs: each trainable parameter's gradient
`<param>_grad`, each Dropout's mask and each BatchNormInternal's updated
running statistics.  onnxruntime.set_seed(seed) comes first, so the Dropout
masks, and with them the gradients, are the same on every run; COMET cannot
draw ORT's random numbers, so a comparison takes the masks from here.
python/tests/test_torch_models.py checks that the gradients equal those of
onnxruntime.training.api.Module.

Usage:
  python -m comet.ort_reference ARTIFACT_DIR --out ref.npz [--batch 8] [--seed 0]

The .npz holds `input`, `labels`, `loss`, `grad:<param>`, `mask:<value>` and
`stat:<value>` (see docs/models.md).  No torch is needed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import sys

import numpy as np
import onnx

from . import data, ort_training

BUFFER_SUFFIX = "_grad.accumulation.buffer"
RESET_INPUT = "lazy_reset_grad"


@dataclasses.dataclass
class Reference:
    input: np.ndarray
    labels: np.ndarray
    loss: np.ndarray  # float32 scalar
    grads: dict[str, np.ndarray]  # trainable parameter -> gradient
    masks: dict[str, np.ndarray]  # Dropout mask output -> bool mask
    stats: dict[str, np.ndarray]  # BatchNormInternal running mean/var outputs

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"input": self.input, "labels": self.labels, "loss": self.loss}
        for prefix, d in (("grad", self.grads), ("mask", self.masks), ("stat", self.stats)):
            out.update({f"{prefix}:{k}": v for k, v in d.items()})
        return out


def load_parameters(model_dir) -> tuple[dict[str, np.ndarray], list[str]]:
    """(every parameter in the checkpoint, the trainable ones' names)."""
    api = ort_training.load("api")
    state = api.CheckpointState.load_checkpoint(os.fspath(pathlib.Path(model_dir) / "checkpoint"))
    params, trainable = {}, []
    for name, p in state.parameters:
        params[name] = p.data
        if p.requires_grad:
            trainable.append(name)
    return params, trainable


def fixed_batch(batch: int):
    """The first `batch` Fashion-MNIST training images and labels."""
    return data.load_fashion_mnist("train", limit=batch)


def run_training_graph(model_dir, x, y, extra: list[str], seed: int = 0) -> dict[str, np.ndarray]:
    """Runs `model_dir`'s training_model.onnx on a batch with the checkpoint's
    parameters (gradient buffers at zero) and returns the loss (key "loss")
    and the values named in `extra`, which become graph outputs.  The eval
    graphs of BatchNorm models are rejected by ORT; this one runs."""
    import onnxruntime as ort

    model_dir = pathlib.Path(model_dir)
    params, _ = load_parameters(model_dir)
    model = onnx.load(os.fspath(model_dir / "training_model.onnx"))
    loss_name = model.graph.output[0].name
    del model.graph.output[:]
    model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n)
                              for n in [loss_name] + list(extra))

    feeds = {}
    for i in model.graph.input:
        if i.name == RESET_INPUT:
            feeds[i.name] = np.array([True])
        elif i.name.endswith(BUFFER_SUFFIX):
            feeds[i.name] = np.zeros_like(params[i.name[:-len(BUFFER_SUFFIX)]])
        elif i.name in params:
            feeds[i.name] = params[i.name]
    data_inputs = [i.name for i in model.graph.input if i.name not in feeds]
    if len(data_inputs) != 2:
        raise ValueError(f"{model_dir}: expected two data inputs (images, labels), "
                         f"found {data_inputs}")
    feeds[data_inputs[0]], feeds[data_inputs[1]] = x, y

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    ort.set_seed(seed)
    values = sess.run(None, feeds)
    out = dict(zip(extra, values[1:]))
    out["loss"] = values[0]
    return out


def reference_step(model_dir, batch: int = 8, seed: int = 0, x=None, y=None) -> Reference:
    """Loss, gradients, Dropout masks and BatchNorm running statistics of one
    training step of `model_dir`'s artifacts (the gradient buffers start at
    zero; no optimizer step).  `x`, `y` replace the Fashion-MNIST batch."""
    model_dir = pathlib.Path(model_dir)
    if x is None:
        x, y = fixed_batch(batch)
    _, trainable = load_parameters(model_dir)

    model = onnx.load(os.fspath(model_dir / "training_model.onnx"))
    grads = [f"{p}_grad" for p in trainable]
    masks = [n.output[1] for n in model.graph.node
             if n.op_type == "Dropout" and len(n.output) > 1 and n.output[1]]
    stats = [o for n in model.graph.node if n.op_type == "BatchNormInternal"
             for o in n.output[1:3] if o]
    produced = {o for n in model.graph.node for o in n.output}
    missing = [g for g in grads if g not in produced]
    if missing:
        raise ValueError(f"{model_dir}: the training graph computes no {missing[0]}")
    out = run_training_graph(model_dir, x, y, grads + masks + stats, seed)
    return Reference(
        input=x, labels=y, loss=np.asarray(out["loss"], dtype=np.float32),
        grads={p: out[f"{p}_grad"] for p in trainable},
        masks={m: out[m] for m in masks}, stats={s: out[s] for s in stats})


def module_step(model_dir, x, y, seed: int = 0) -> tuple[float, dict[str, np.ndarray]]:
    """The same step through onnxruntime.training.api.Module: (loss, grads)."""
    import onnxruntime as ort

    api = ort_training.load("api")
    model_dir = pathlib.Path(model_dir)
    state = api.CheckpointState.load_checkpoint(os.fspath(model_dir / "checkpoint"))
    ort.set_seed(seed)
    module = api.Module(os.fspath(model_dir / "training_model.onnx"), state)
    module.train()
    loss = float(module(x, y))
    return loss, {n: p.grad for n, p in state.parameters if p.requires_grad}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m comet.ort_reference",
        description="One ONNX Runtime training step on an artifact folder: loss, gradients, "
                    "Dropout masks, BatchNorm running statistics, saved as .npz.")
    p.add_argument("model_dir", help="folder with training_model.onnx and checkpoint")
    p.add_argument("--out", required=True, help="the .npz file to write")
    p.add_argument("--batch", type=int, default=8, help="first N Fashion-MNIST training images")
    p.add_argument("--seed", type=int, default=0, help="onnxruntime.set_seed value (default 0)")
    a = p.parse_args(argv)
    try:
        ref = reference_step(a.model_dir, batch=a.batch, seed=a.seed)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    np.savez(a.out, **ref.arrays())
    print(f"{a.model_dir}: loss {float(ref.loss):.6f}, {len(ref.grads)} gradients, "
          f"{len(ref.masks)} dropout masks, {len(ref.stats)} running statistics -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
