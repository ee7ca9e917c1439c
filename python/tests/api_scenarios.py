"""The same training code under ONNX Runtime's training API and COMET's.

    python api_scenarios.py ort|comet SCENARIO MODEL_DIR OUT.npz [JSON]

imports onnxruntime.training.api (ort) or comet.training.api (comet) as
`api`; nothing else differs between the two runs but COMET's keyword
arguments (JSON "comet": {...}, e.g. {"compress": "none"}). Each scenario
writes what it saw to OUT.npz for test_training_api.py to compare.
onnxruntime.training imports torch, so the ORT side runs with .venv-export's
Python; this file runs under numpy 1 and 2 alike.
"""
from __future__ import annotations

import json
import sys

import numpy as np


def get_api(which: str):
    if which == "ort":
        from onnxruntime.training import api
    elif which == "comet":
        from comet.training import api
    else:
        raise SystemExit(f"unknown API {which!r}")
    return api


def batch(n: int, seed: int, classes: int = 10):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, classes, n).astype(np.int64)
    return x, y


class Run:
    def __init__(self, which: str, folder: str, args: dict):
        self.which, self.folder, self.args = which, folder, args
        self.api = get_api(which)
        self.out: dict[str, np.ndarray] = {}

    def module(self, state, eval_model=True):
        kw = self.args.get("comet", {}) if self.which == "comet" else {}
        return self.api.Module(f"{self.folder}/training_model.onnx", state,
                               f"{self.folder}/eval_model.onnx" if eval_model else None,
                               **kw)

    def optimizer(self, module):
        name = self.args.get("optimizer", "optimizer_model.onnx")
        return self.api.Optimizer(f"{self.folder}/{name}", module)

    def load(self, path=None):
        return self.api.CheckpointState.load_checkpoint(path or f"{self.folder}/checkpoint")

    def params(self, state, prefix="param:"):
        for name, p in state.parameters:
            self.out[prefix + name] = np.array(p.data)

    def train(self, module, optimizer, steps, first_seed=100, prefix="loss"):
        b = self.args.get("batch", 8)
        losses = []
        for i in range(steps):
            x, y = batch(b, first_seed + i)
            losses.append(float(module(x, y)))
            optimizer.step()
            module.lazy_reset_grad()
        self.out[prefix] = np.array(losses, np.float64)

    def eval(self, module, key="eval"):
        x, y = batch(self.args.get("eval_batch", 16), 7)
        module.eval()
        out = module(x, y)
        module.train()
        self.out[key] = np.asarray(out)


def scenario_steps(r: Run):
    """Trains `steps` steps (at `lr` if given) and records the losses, the
    parameters, the eval outputs and the learning rate."""
    state = r.load()
    module = r.module(state)
    optimizer = r.optimizer(module)
    if "lr" in r.args:
        optimizer.set_learning_rate(r.args["lr"])
    r.params(state, "start:")
    r.train(module, optimizer, r.args.get("steps", 20))
    r.params(state)
    r.eval(module)
    r.out["lr"] = np.array(optimizer.get_learning_rate())
    if r.which == "comet":
        r.out["comet:ratio"] = np.array(module.memory_stats()["compression_ratio"])


def scenario_grads(r: Run):
    """Gradients accumulate until lazy_reset_grad, and the optimizer steps
    on the sum: g1 and g2 alone (a new module starts with a reset
    pending), then g12 of both batches, then the step."""
    state = r.load()
    module = r.module(state)
    optimizer = r.optimizer(module)
    b = r.args.get("batch", 8)
    (x1, y1), (x2, y2) = batch(b, 1), batch(b, 2)
    trainable = [n for n, p in state.parameters if p.requires_grad]

    def grads(key):
        for n in trainable:
            r.out[key + n] = np.array(state.parameters[n].grad)

    module(x1, y1)
    grads("g1:")
    module.lazy_reset_grad()
    module(x2, y2)
    grads("g2:")
    module.lazy_reset_grad()
    module(x1, y1)
    module(x2, y2)
    grads("g12:")
    optimizer.step()
    r.params(state, "after:")


def scenario_lr(r: Run):
    """Learning rates: the default, set/get, and LinearLRScheduler's
    sequence for a few (warmup, total, initial) triples."""
    state = r.load()
    module = r.module(state)
    optimizer = r.optimizer(module)
    seq = [optimizer.get_learning_rate()]
    optimizer.set_learning_rate(0.25)
    seq.append(optimizer.get_learning_rate())
    r.out["basic"] = np.array(seq)
    x, y = batch(4, 3)
    for k, (w, t, lr) in enumerate([(3, 10, 0.01), (2, 5, 0.1), (0, 4, 0.1), (5, 5, 0.5)]):
        state = r.load()
        module = r.module(state)
        optimizer = r.optimizer(module)
        scheduler = r.api.LinearLRScheduler(optimizer, w, t, lr)
        lrs = [optimizer.get_learning_rate()]
        for _ in range(8):
            module(x, y)
            optimizer.step()
            scheduler.step()
            lrs.append(optimizer.get_learning_rate())
        r.out[f"schedule{k}"] = np.array(lrs)


def scenario_save(r: Run):
    """Trains, sets properties and saves the checkpoint with the optimizer
    state to `path`."""
    state = r.load()
    module = r.module(state)
    optimizer = r.optimizer(module)
    optimizer.set_learning_rate(r.args.get("lr", 0.01))
    r.train(module, optimizer, r.args.get("steps", 3))
    state.properties["epoch"] = 4
    state.properties["best"] = 0.125
    state.properties["tag"] = r.which
    r.params(state)
    r.api.CheckpointState.save_checkpoint(state, r.args["path"], include_optimizer_state=True)
    if "path_no_optimizer" in r.args:
        r.api.CheckpointState.save_checkpoint(state, r.args["path_no_optimizer"])


def scenario_resume(r: Run):
    """Loads `path`, records what it holds, and trains on from it."""
    state = r.load(r.args["path"])
    r.params(state, "loaded:")
    for name, value in state.properties:
        r.out["property:" + name] = np.array(value)
    module = r.module(state)
    optimizer = r.optimizer(module)
    # A schedule goes on from the checkpoint's step count.
    scheduler = r.api.LinearLRScheduler(optimizer, 2, 10, 0.1)
    r.out["scheduled_lr"] = np.array(optimizer.get_learning_rate())
    optimizer.set_learning_rate(r.args.get("lr", 0.01))
    r.train(module, optimizer, r.args.get("steps", 2), first_seed=200)
    scheduler.step()
    r.out["scheduled_lr_after"] = np.array(optimizer.get_learning_rate())
    r.params(state)


def scenario_export(r: Run):
    """Trains a few steps, exports the inference model to `path` and
    records the eval outputs and the parameters."""
    state = r.load()
    module = r.module(state)
    optimizer = r.optimizer(module)
    optimizer.set_learning_rate(0.01)
    r.train(module, optimizer, 3)
    r.params(state)
    r.eval(module)
    module.export_model_for_inferencing(r.args["path"], r.args["outputs"])


def scenario_contiguous(r: Run):
    """get_contiguous_parameters, get_parameters_size, copy_buffer_to_parameters."""
    state = r.load()
    module = r.module(state)
    optimizer = r.optimizer(module)
    x, y = batch(4, 5)
    module(x, y)
    optimizer.step()
    for t in (False, True):
        r.out[f"size{int(t)}"] = np.array(module.get_parameters_size(t))
        r.out[f"flat{int(t)}"] = module.get_contiguous_parameters(t).numpy()
    # As ORT's own loops do it: an OrtValue (its binding takes no other).
    from onnxruntime import OrtValue
    buf = module.get_contiguous_parameters(True).numpy() * np.float32(0.5)
    module.copy_buffer_to_parameters(OrtValue.ortvalue_from_numpy(buf)._ortvalue, True)
    r.params(state)


def scenario_batches(r: Run):
    """Batches of different sizes, as a DataLoader's last partial batch:
    the losses, the parameters and the eval outputs of a 3-sample batch."""
    state = r.load()
    module = r.module(state)
    optimizer = r.optimizer(module)
    optimizer.set_learning_rate(0.01)
    losses = []
    for i, n in enumerate(r.args.get("sizes", [8, 8, 3, 8, 3])):
        x, y = batch(n, 300 + i)
        losses.append(float(module(x, y)))
        optimizer.step()
        module.lazy_reset_grad()
    r.out["loss"] = np.array(losses)
    r.params(state)
    x, y = batch(3, 9)
    module.eval()
    r.out["eval3"] = np.asarray(module(x, y))
    module.train()


def _outcome(f):
    """What f() gives, or the name of the exception it raises."""
    try:
        return repr(f())
    except Exception as e:  # noqa: BLE001 - recorded for comparison
        if isinstance(e, KeyError):
            return "KeyError: " + str(e)
        # ORT raises RuntimeError; COMET's InputError and InputTypeError are
        # RuntimeErrors too.
        return next(t.__name__ for t in (RuntimeError, TypeError, ValueError, Exception)
                    if isinstance(e, t))


def scenario_state(r: Run):
    """CheckpointState's parameters and properties as a user pokes them:
    values, conversions, iteration order and the errors."""
    state = r.load()
    params, props = state.parameters, state.properties
    names = [n for n, _ in params]
    first = names[0]
    seen = {
        "names": repr(names),
        "len": repr(len(params)),
        "contains": repr((first in params, "nope" in params)),
        "requires_grad": repr([p.requires_grad for _, p in params]),
        "repr": repr(params[first]),
        "missing": _outcome(lambda: params["nope"]),
        "set_missing": _outcome(lambda: params.__setitem__("nope", np.zeros(1, np.float32))),
        "grad_before_module": _outcome(lambda: params[first].grad),
        "props_empty": repr((len(props), list(props))),
    }
    for k, v in [("i", 7), ("f", 0.1), ("s", "text"), ("b", True), ("neg", -3),
                 ("big", 2**40), ("z", 1.5)]:
        props[k] = v
        seen["prop_" + k] = repr((props[k], type(props[k]).__name__))
    props["i"] = "now a string"
    seen["props"] = repr(list(props))
    seen["props_len"] = repr((len(props), "i" in props, "x" in props))
    seen["prop_missing"] = _outcome(lambda: props["x"])
    seen["prop_none"] = _outcome(lambda: props.__setitem__("n", None))
    seen["prop_list"] = _outcome(lambda: props.__setitem__("n", [1]))
    # Values are set once a Module exists: ORT 1.19 crashes on a write
    # before (Parameters.__setitem__ on a state without a module).
    module = r.module(state)
    seen["grad_after_module"] = repr(np.asarray(params[first].grad).shape)
    shape = params[first].data.shape
    seen["set_shape"] = _outcome(lambda: setattr(params[first], "data",
                                                 np.zeros((3, 3, 3), np.float32)))
    seen["set_dtype"] = _outcome(lambda: setattr(params[first], "data",
                                                 np.zeros(shape, np.float64)))
    params[first] = np.full(shape, 0.5, np.float32)
    seen["set_value"] = repr(float(params[first].data.ravel()[0]))
    params[first].data = np.full(shape, 0.25, np.float32)
    seen["set_data"] = repr(float(params[first].data.ravel()[0]))
    x, y = batch(4, 1)
    seen["loss_after_set"] = repr(round(float(module(x, y)), 4))
    seen["input_names"] = repr((module.input_names(), module.output_names()))
    module.eval()
    seen["eval_names"] = repr((module.input_names(), module.output_names()))
    module.train()
    seen["training"] = repr((module.training, module.eval().training, module.train().training))
    r.out = {k: np.array(v) for k, v in seen.items()}


SCENARIOS = {k[len("scenario_"):]: v for k, v in globals().items()
             if k.startswith("scenario_")}


def run(which: str, scenario: str, folder: str, args: dict) -> dict:
    r = Run(which, folder, args)
    SCENARIOS[scenario](r)
    return r.out


if __name__ == "__main__":
    which, scenario, folder, out = sys.argv[1:5]
    args = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    np.savez(out, **run(which, scenario, folder, args))
