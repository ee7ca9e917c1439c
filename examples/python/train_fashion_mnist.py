"""Trains ONNX Runtime training artifacts on Fashion-MNIST with
comet.training.api (ORT's training API, run by COMET with its activations
compressed), saves the checkpoint and the inference model, and runs that
model in ONNX Runtime's InferenceSession.

    python examples/python/train_fashion_mnist.py [ARTIFACTS] [--epochs N]

ARTIFACTS is a folder that onnxruntime.training.artifacts.generate_artifacts
wrote (default: the LeNet fixture). docs/python.md explains each call.
"""
import argparse
import os
import sys
import time

import numpy as np
import onnxruntime

from comet.data import batches, load_fashion_mnist
from comet.training.api import CheckpointState, Module, Optimizer

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("artifacts", nargs="?", default="test/fixtures/models/lenet")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--limit", type=int, default=None, help="train on the first N images")
p.add_argument("--out", default="out/example", help="where the checkpoint and model go")
a = p.parse_args()
d = a.artifacts
train_x, train_y = load_fashion_mnist("train", limit=a.limit)
test_x, test_y = load_fashion_mnist("test", limit=a.limit)
tb = min(500, len(test_x))  # the test batch
os.makedirs(a.out, exist_ok=True)

state = CheckpointState.load_checkpoint(f"{d}/checkpoint")
module = Module(f"{d}/training_model.onnx", state, f"{d}/eval_model.onnx")  # compress="static"
optimizer = Optimizer(f"{d}/optimizer_model.onnx", module)
optimizer.set_learning_rate(2e-3)


def progress(done, total, text):
    bar = "#" * (30 * done // total)
    print(f"\r[{bar:<30}] {done}/{total} {text}", end="", file=sys.stderr, flush=True)


for epoch in range(a.epochs):
    module.train()
    losses, t0 = [], time.time()
    n = -(-len(train_x) // a.batch)  # the last batch is partial: a second engine
    for i in range(n):
        x, y = train_x[i * a.batch:(i + 1) * a.batch], train_y[i * a.batch:(i + 1) * a.batch]
        losses.append(float(module(x, y)))
        optimizer.step()
        module.lazy_reset_grad()
        progress(i + 1, n, f"loss {np.mean(losses[-50:]):.4f}")
    module.eval()
    test = [float(module(x, y)) for x, y in batches(test_x, test_y, tb)]
    print(f"\nepoch {epoch + 1}: train loss {np.mean(losses):.4f}, test loss "
          f"{np.mean(test):.4f}, {time.time() - t0:.1f} s")

stats = module.memory_stats()
print(f"peak {stats['peak_bytes'] / 2**20:.2f} MiB, activations "
      f"{stats['activation_bytes_uncompressed'] / 2**20:.2f} -> "
      f"{stats['activation_bytes_compressed'] / 2**20:.2f} MiB "
      f"({stats['compression_ratio']:.1f}x)")
state.properties["epochs"] = a.epochs
CheckpointState.save_checkpoint(state, f"{a.out}/checkpoint", include_optimizer_state=True)
module.export_model_for_inferencing(f"{a.out}/inference.onnx", ["logits"])

session = onnxruntime.InferenceSession(f"{a.out}/inference.onnx")
name = session.get_inputs()[0].name
correct = sum(int((session.run(None, {name: x})[0].argmax(1) == y).sum())
              for x, y in batches(test_x, test_y, tb))
print(f"inference model: test accuracy {correct / (len(test_x) // tb * tb):.4f} "
      f"({a.out}/inference.onnx)")
