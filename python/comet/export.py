"""Export ONNX Runtime training artifacts for COMET.

Usage (see docs/models.md):
  python -m comet.export lenet --out DIR            # a built-in model
  python -m comet.export path/to/model.onnx --out DIR
  python -m comet.export --all --out test/fixtures/models
  python -m comet.export --list-ops DIR/training_model.onnx
  python -m comet.export --torch-models DIR [--only cnn,transformer]
                                                    # PyTorch models (needs torch:
                                                    # run with .venv-export/bin/python)
  python -m comet.export resnet18 --out DIR --image-size 224
                                                    # resnet18, mobilenet_v2 at another
                                                    # input size (default 28)
  python -m comet.export gpt --out DIR --model-args layers=6,d_model=384,heads=6,seq_len=512
                                                    # a PyTorch model's constructor
                                                    # arguments (the gpt's size)

For each model DIR receives:
  model.onnx                 the forward graph with its initial weights
  training_model.onnx        forward + cross-entropy loss + gradient graph
  eval_model.onnx            forward + loss (no gradients)
  optimizer_model.onnx       the first optimizer (AdamW by default)
  <opt>_optimizer_model.onnx one more file per further optimizer (e.g. sgd)
  checkpoint                 ORT checkpoint with the parameters
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import inspect
import io
import json
import os
import pathlib
import sys
import tempfile
from typing import Iterable

import onnx
from onnx import numpy_helper

from . import ort_training
from .models import BATCH_DIM, INPUT_NAME, MODELS, OPSET, OUTPUT_NAME

OPTIMIZERS = ("adamw", "sgd")
# Models defined in PyTorch (python/comet/torch_models.py), exported with
# torch.onnx.export in training mode: name -> (ONNX opset, checked in under
# test/fixtures/models).  torch 1.13 exports LayerNorm at opset 17 as a
# one-output LayerNormalization, whose gradient ONNX Runtime 1.19 cannot
# build; at opset 16 it is decomposed, hence the Transformer's opset.  The
# two large ones (ResNet-18 has 45 MB of weights) are generated into the
# build folder by scripts/export-torch-models.sh instead.
TORCH_MODELS = {
    "cnn": (17, True),
    "transformer": (16, True),
    "resnet18": (17, False),
    "mobilenet_v2": (17, False),
    "shufflenet_v2_x0_5": (17, False),
    "efficientnet_b0": (17, False),
    # Exported when a test needs it (GatherGrad, ConcatTraining,
    # SplitTraining against ORT), into the build folder like the large ones.
    "embedding": (17, False),
    "actnet": (17, True),
    # A GPT-style decoder on int64 token ids (Split, Equal, Where, Range);
    # opset 16 for the decomposed LayerNorm, as the transformer.
    "gpt": (16, False),
}
# The PyTorch models whose layers do not fix the input size (a global
# average pool before the head): they export at any --image-size; the
# others take 28x28 only.
TORCH_ANY_IMAGE_SIZE = ("resnet18", "mobilenet_v2")
# The input size the models are exported at unless --image-size says.
IMAGE_SIZE = 28
TORCH_ENV_HINT = ("the PyTorch models need torch and torchvision: run with "
                  ".venv-export/bin/python (made by scripts/setup.sh)")
# The newest ONNX IR version that onnxruntime-training 1.19.2 loads.
ORT_MAX_IR_VERSION = 10


@contextlib.contextmanager
def _quiet_stderr(enabled: bool = True):
    """Capture fd 2: the ORT gradient builder logs every graph transformer at
    INFO level regardless of the Python logging settings.  The text is
    re-emitted if the body raises."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            tmp.seek(0)
            sys.stderr.write(tmp.read().decode(errors="replace")[-20000:])
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _reset_graph_names() -> None:
    # onnxblock names generated values "onnx::<token>::<N>" from a
    # process-global counter; resetting it makes the names (e.g. the loss
    # output "onnx::loss::2") the same for every model and every run.
    gu = ort_training.load("onnxblock._graph_utils")
    gu._GRAPH_TOKEN = 0


def _batchnorm_stats(model: onnx.ModelProto) -> set[str]:
    stats = set()
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            stats.update(n for n in node.input[3:5] if n)
    return stats


# metadata_props key under which torch_to_onnx lists the module's float
# buffers (a JSON list of initializer names): state that is not trained.
FROZEN_KEY = "comet.frozen"


def _declared_frozen(model: onnx.ModelProto) -> set[str]:
    for p in model.metadata_props:
        if p.key == FROZEN_KEY:
            return set(json.loads(p.value))
    return set()


def trainable_params(model: onnx.ModelProto) -> tuple[list[str], list[str]]:
    """Split float initializers into (requires_grad, frozen).

    BatchNormalization running statistics and the initializers the model
    declares frozen (a torch module's buffers, such as a causal mask) are
    frozen; every other float initializer is trained."""
    stats = _batchnorm_stats(model) | _declared_frozen(model)
    floats = [i.name for i in model.graph.initializer
              if i.data_type == onnx.TensorProto.FLOAT]
    return [n for n in floats if n not in stats], [n for n in floats if n in stats]


def _dummy_input(module, image_size: int = IMAGE_SIZE):
    """What the export traces: the module's example_input(2) where it has
    one (the GPT's token ids), else a [2, 1, image_size, image_size] float
    batch."""
    import torch

    if hasattr(module, "example_input"):
        return module.example_input(2)
    return torch.zeros(2, 1, image_size, image_size, dtype=torch.float32)


def torch_to_onnx(module, opset: int = OPSET, image_size: int = IMAGE_SIZE) -> onnx.ModelProto:
    """Export a torch.nn.Module taking [batch, 1, image_size, image_size]
    (or its example_input) to an ONNX model with the same input/output names
    and symbolic batch dim as the built-in models; the height and width are
    fixed (they set the sizes of every activation, hence the memory).  Only
    used when torch is
    installed."""
    import torch

    import warnings

    import torch

    module = module.to("cpu")
    dummy = _dummy_input(module, image_size)
    buf = io.BytesIO()
    module.train()
    # Tracing runs one training-mode forward, which moves the BatchNorm
    # running statistics; the exported initializers take the values from
    # before it, and the module gets them back.
    state = module.state_dict()
    before = collections.OrderedDict((k, v.detach().clone()) for k, v in state.items())
    # The per-module versions ride along: a module that checks its own on
    # load (torchvision's MNASNet) refuses a state dict without them.
    before._metadata = getattr(state, "_metadata", None)
    kwargs = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter takes dynamic_axes
    # Training mode keeps BatchNormalization/Dropout as training ops (no
    # folding), which is what ORT's gradient builder expects.
    with warnings.catch_warnings():
        # "Removing mutation from node aten::add_ on block input
        # '<bn>.num_batches_tracked'": a counter ONNX has no use for.
        warnings.filterwarnings("ignore", message=".*num_batches_tracked")
        torch.onnx.export(
            module, (dummy,), buf,
            input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
            dynamic_axes={INPUT_NAME: {0: BATCH_DIM}, OUTPUT_NAME: {0: BATCH_DIM}},
            opset_version=opset, do_constant_folding=False, export_params=True,
            training=torch.onnx.TrainingMode.TRAINING, **kwargs)
    module.load_state_dict(before)
    model = onnx.load_from_string(buf.getvalue())
    for init in model.graph.initializer:
        if init.name in before:
            init.CopyFrom(numpy_helper.from_array(before[init.name].numpy(), init.name))
    # Buffers are state, not parameters: trainable_params freezes them. It
    # knows BatchNorm's statistics from the graph; others (a registered
    # causal mask) are listed in the model's metadata, which models without
    # such buffers do not get, so their exports stay as they were.
    inits = {i.name for i in model.graph.initializer}
    buffers = sorted(n for n, b in module.named_buffers() if b.is_floating_point()
                     and n in inits and n not in _batchnorm_stats(model))
    if buffers:
        onnx.helper.set_model_props(model, {FROZEN_KEY: json.dumps(buffers)})
    # The artifacts builder expects the parameters as initializers only.
    init_names = {i.name for i in model.graph.initializer}
    kept = [i for i in model.graph.input if i.name not in init_names]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model


def check_image_size(name: str, image_size: int) -> None:
    """ValueError unless model `name` can be exported at image_size."""
    if image_size == IMAGE_SIZE:
        return
    if name not in TORCH_MODELS:
        raise ValueError(f"--image-size applies to the PyTorch models {list(TORCH_ANY_IMAGE_SIZE)}; "
                         f"{name!r} takes {IMAGE_SIZE}x{IMAGE_SIZE} only")
    if name not in TORCH_ANY_IMAGE_SIZE:
        raise ValueError(f"{name!r} takes {IMAGE_SIZE}x{IMAGE_SIZE} inputs only (its layers fix "
                         f"the size); --image-size applies to {list(TORCH_ANY_IMAGE_SIZE)}")
    if image_size < 16:
        raise ValueError(f"--image-size must be at least 16 (five stride-2 stages), got {image_size}")


def parse_model_args(text: str) -> dict:
    """'layers=6,d_model=384,dropout=0.1' -> {'layers': 6, 'd_model': 384,
    'dropout': 0.1}: a PyTorch model's constructor arguments (ints, else
    floats); ValueError for anything else."""
    out = {}
    for item in text.split(","):
        key, sep, value = item.strip().partition("=")
        if not item.strip():
            continue
        if not sep or not key.isidentifier():
            raise ValueError(f"--model-args: {item.strip()!r} is not KEY=NUMBER")
        try:
            out[key] = int(value)
        except ValueError:
            try:
                out[key] = float(value)
            except ValueError:
                raise ValueError(f"--model-args: {key}={value!r} is not a number") from None
    return out


def torch_model(name: str, seed: int = 0, image_size: int = IMAGE_SIZE,
                model_args: dict | None = None) -> onnx.ModelProto:
    """Build the PyTorch model `name` (a TORCH_MODELS key) with seed `seed`
    and the constructor arguments `model_args`, and export it to ONNX at its
    opset; ImportError without torch, ValueError for an argument its
    constructor does not take."""
    try:
        from . import torch_models
    except ImportError as e:
        raise ImportError(f"{TORCH_ENV_HINT} ({e})") from e
    opset, _ = TORCH_MODELS[name]
    try:
        module = torch_models.build(name, seed, **(model_args or {}))
    except TypeError as e:
        raise ValueError(f"--model-args for {name}: {e}") from e
    model = torch_to_onnx(module, opset=opset, image_size=image_size)
    model.graph.name = name
    return model


def load_model(source, seed: int = 0, image_size: int = IMAGE_SIZE,
               model_args: dict | None = None) -> tuple[str, onnx.ModelProto]:
    """Resolve a built-in or PyTorch model name, an .onnx path, an
    onnx.ModelProto or a torch.nn.Module into (name, forward model).
    image_size applies to the PyTorch models of TORCH_ANY_IMAGE_SIZE,
    model_args (constructor arguments) to the PyTorch models by name."""
    if model_args and not (isinstance(source, (str, os.PathLike))
                           and os.fspath(source) in TORCH_MODELS):
        raise ValueError(f"--model-args applies to the PyTorch models {list(TORCH_MODELS)} "
                         "by name")
    if isinstance(source, (str, os.PathLike)):
        check_image_size(os.fspath(source), image_size)
    elif image_size != IMAGE_SIZE:
        raise ValueError("--image-size applies to the PyTorch models "
                         f"{list(TORCH_ANY_IMAGE_SIZE)} by name")
    if isinstance(source, onnx.ModelProto):
        return source.graph.name or "model", source
    if isinstance(source, (str, os.PathLike)):
        s = os.fspath(source)
        if s in MODELS:
            return s, MODELS[s](seed)
        if s in TORCH_MODELS:
            return s, torch_model(s, seed, image_size, model_args)
        if s.endswith(".onnx") and os.path.exists(s):
            return pathlib.Path(s).stem, onnx.load(s)
        raise ValueError(
            f"unknown model {s!r}: expected one of {sorted(MODELS) + sorted(TORCH_MODELS)} "
            "or an existing .onnx file")
    if ort_training.have_torch():
        import torch

        if isinstance(source, torch.nn.Module):
            return type(source).__name__.lower(), torch_to_onnx(source)
    raise TypeError(f"cannot export a {type(source).__name__}")


def _fix_ir_version(path: pathlib.Path, ir_version: int) -> None:
    # onnxblock builds optimizer models with onnx.helper.make_model, which
    # stamps the installed onnx package's IR version (14 for onnx 1.23); ORT
    # 1.19 accepts at most IR 10.  The graph uses nothing newer than the base
    # model's IR, so it takes the base model's version.
    m = onnx.load(os.fspath(path))
    if m.ir_version != ir_version:
        m.ir_version = ir_version
        onnx.save(m, os.fspath(path))


def _save_extra_optimizer(kind: str, params, opset: int, path: pathlib.Path) -> None:
    # The same construction as generate_artifacts' optimizer step.
    onnxblock = ort_training.load("onnxblock")
    blocks = {"adamw": onnxblock.optim.AdamW, "sgd": onnxblock.optim.SGD}
    block = blocks[kind]()
    with onnxblock.empty_base(opset_version=opset):
        block(params)
        onnx.save(block.to_model_proto(), path)


def export_artifacts(source, out_dir, optimizers: Iterable[str] = ("adamw", "sgd"),
                     seed: int = 0, quiet: bool = True,
                     image_size: int = IMAGE_SIZE,
                     model_args: dict | None = None) -> dict[str, pathlib.Path]:
    """Write the forward model and ORT training artifacts for `source` into
    `out_dir`; returns {artifact name: path}. image_size: the input's
    height and width (PyTorch models of TORCH_ANY_IMAGE_SIZE only);
    model_args: the constructor arguments of a PyTorch model by name (the
    gpt's layers, d_model, heads, seq_len)."""
    optimizers = [o.lower() for o in optimizers]
    for o in optimizers:
        if o not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {o!r}: expected one of {OPTIMIZERS}")
    if not optimizers:
        raise ValueError("at least one optimizer is needed")
    _, model = load_model(source, seed, image_size, model_args)
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    requires_grad, frozen = trainable_params(model)
    if not requires_grad:
        raise ValueError("the model has no float initializers to train")

    artifacts = ort_training.load("artifacts")
    opt_enum = {"adamw": artifacts.OptimType.AdamW, "sgd": artifacts.OptimType.SGD}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), OPSET)

    onnx.save(model, out / "model.onnx")
    with _quiet_stderr(quiet):
        _reset_graph_names()
        artifacts.generate_artifacts(
            model, requires_grad=requires_grad, frozen_params=frozen or None,
            loss=artifacts.LossType.CrossEntropyLoss,
            optimizer=opt_enum[optimizers[0]], artifact_directory=out)
        paths = {"model": out / "model.onnx",
                 "training_model": out / "training_model.onnx",
                 "eval_model": out / "eval_model.onnx",
                 "checkpoint": out / "checkpoint",
                 "optimizer_model": out / "optimizer_model.onnx"}
        if len(optimizers) > 1:
            # Parameters as generate_artifacts sees them (trainable, frozen).
            trainable = [i for i in model.graph.initializer if i.name in set(requires_grad)]
            frozen_t = [i for i in model.graph.initializer if i.name in set(frozen)]
            for o in optimizers[1:]:
                p = out / f"{o}_optimizer_model.onnx"
                _reset_graph_names()
                _save_extra_optimizer(o, (trainable, frozen_t), opset, p)
                paths[f"{o}_optimizer_model"] = p
    for k, p in paths.items():
        if k.endswith("optimizer_model"):
            _fix_ir_version(p, min(model.ir_version, ORT_MAX_IR_VERSION))
    return paths


_ORT_SCHEMAS_REGISTERED = False


def register_ort_schemas() -> None:
    """Teach the onnx checker ORT's training ops that live in the default
    domain.  ORT registers MaxPoolGrad under "" (not com.microsoft), so
    onnx.checker rejects every graph with a MaxPool as "No Op registered for
    MaxPoolGrad".  The schema below follows ORT's (dY, Indices) -> dX with
    MaxPool's attributes.  Ops in com.microsoft need nothing: the checker
    skips domains it does not know."""
    global _ORT_SCHEMAS_REGISTERED
    if _ORT_SCHEMAS_REGISTERED:
        return
    from onnx import defs

    S = defs.OpSchema
    ints, one_int, string = S.AttrType.INTS, S.AttrType.INT, S.AttrType.STRING
    attrs = [S.Attribute(n, t, "", required=False) for n, t in (
        ("kernel_shape", ints), ("strides", ints), ("pads", ints), ("dilations", ints),
        ("auto_pad", string), ("ceil_mode", one_int), ("storage_order", one_int))]
    try:
        defs.get_schema("MaxPoolGrad", 1, "")
    except defs.SchemaError:
        defs.register_schema(S(
            "MaxPoolGrad", "", 1, doc="ONNX Runtime training: gradient of MaxPool.",
            inputs=[S.FormalParameter("dY", "T"), S.FormalParameter("Indices", "I")],
            outputs=[S.FormalParameter("dX", "T")],
            type_constraints=[("T", ["tensor(float16)", "tensor(float)", "tensor(double)"], ""),
                              ("I", ["tensor(int64)"], "")],
            attributes=attrs))
    _ORT_SCHEMAS_REGISTERED = True


def check_model(path) -> None:
    """onnx.checker (full check, with shape inference) on an artifact file;
    raises onnx.checker.ValidationError."""
    register_ort_schemas()
    onnx.checker.check_model(onnx.load(os.fspath(path)), full_check=True)


def list_ops(path) -> list[tuple[str, str, int]]:
    """(domain, op_type, count) for every op type of an ONNX file, sorted;
    the default domain is written "ai.onnx"."""
    m = onnx.load(os.fspath(path), load_external_data=False)
    c = collections.Counter((n.domain or "ai.onnx", n.op_type) for n in m.graph.node)
    return sorted((d, t, k) for (d, t), k in c.items())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m comet.export",
        description="Export ONNX Runtime training artifacts (training/eval/optimizer "
                    "models and checkpoint) for a built-in model or an .onnx file.")
    p.add_argument("model", nargs="?", help=f"one of {sorted(MODELS)} or a forward .onnx file")
    p.add_argument("--out", help="output directory (with --all: the parent directory)")
    p.add_argument("--all", action="store_true", help="export every built-in model into OUT/<name>")
    p.add_argument("--torch-models", metavar="DIR",
                   help="export the PyTorch models into DIR/<name> (needs torch: run with "
                        ".venv-export/bin/python)")
    p.add_argument("--only", metavar="NAMES",
                   help=f"with --torch-models: a comma list from {list(TORCH_MODELS)} "
                        "(default: all)")
    p.add_argument("--optimizer",
                   help="comma list from {adamw,sgd}; the first is optimizer_model.onnx, "
                        "the others <name>_optimizer_model.onnx (default: adamw,sgd; "
                        "adamw with --torch-models)")
    p.add_argument("--seed", type=int, default=0, help="weight init seed (default 0)")
    p.add_argument("--image-size", type=int, default=IMAGE_SIZE, metavar="N",
                   help=f"input height and width of the PyTorch models {list(TORCH_ANY_IMAGE_SIZE)} "
                        f"(default {IMAGE_SIZE}; the others take {IMAGE_SIZE} only)")
    p.add_argument("--model-args", metavar="K=V,...",
                   help="constructor arguments of a PyTorch model named on the command line, "
                        "e.g. gpt's layers=6,d_model=384,heads=6,seq_len=512")
    p.add_argument("--list-ops", metavar="FILE", nargs="+",
                   help="print 'domain op_type count' for each ONNX file and exit")
    p.add_argument("--json", action="store_true", help="with --list-ops: print JSON")
    p.add_argument("--check", metavar="FILE", nargs="+",
                   help="run onnx.checker (full) on each ONNX file and exit")
    p.add_argument("--verbose", action="store_true", help="show ONNX Runtime's log output")
    a = p.parse_args(argv)

    if a.check:
        bad = 0
        for f in a.check:
            try:
                check_model(f)
                print(f"{f}: ok")
            except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
                bad += 1
                print(f"{f}: {e}", file=sys.stderr)
        return 1 if bad else 0

    if a.list_ops:
        result = {f: list_ops(f) for f in a.list_ops}
        if a.json:
            print(json.dumps({f: [{"domain": d, "op_type": t, "count": k} for d, t, k in ops]
                              for f, ops in result.items()}, indent=1))
        else:
            for f, ops in result.items():
                print(f"# {f}")
                for d, t, k in ops:
                    print(f"{d} {t} {k}")
        return 0

    if a.only and not a.torch_models:
        p.error("--only goes with --torch-models")
    try:
        model_args = parse_model_args(a.model_args or "")
    except ValueError as e:
        p.error(str(e))
    if model_args and (a.torch_models or a.all):
        p.error("--model-args goes with one PyTorch model named on the command line")
    default_opt = "adamw" if a.torch_models else "adamw,sgd"
    opts = [o.strip() for o in (a.optimizer or default_opt).split(",") if o.strip()]
    if a.torch_models:
        if a.model or a.all or a.out:
            p.error("--torch-models takes no model, --all or --out")
        names = [n.strip() for n in (a.only or ",".join(TORCH_MODELS)).split(",") if n.strip()]
        bad = [n for n in names if n not in TORCH_MODELS]
        if bad:
            p.error(f"unknown torch model(s) {bad}: expected names from {list(TORCH_MODELS)}")
        jobs = [(n, pathlib.Path(a.torch_models) / n) for n in names]
    elif not a.out:
        p.error("--out is required")
    elif a.all:
        if a.model:
            p.error("--all takes no model argument")
        jobs = [(n, pathlib.Path(a.out) / n) for n in MODELS]
    else:
        if not a.model:
            p.error("a model name or file is required (or --all)")
        jobs = [(a.model, pathlib.Path(a.out))]
    for src, out in jobs:
        try:
            paths = export_artifacts(src, out, opts, seed=a.seed, quiet=not a.verbose,
                                     image_size=a.image_size, model_args=model_args)
        except (ValueError, TypeError, ImportError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"{src}: " + " ".join(sorted(pp.name for pp in paths.values())) + f" -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
