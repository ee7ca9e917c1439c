"""ONNX Runtime's training API (`onnxruntime.training.api` 1.19) over COMET.

A loop written for ORT runs with its import changed:

    from comet.training.api import CheckpointState, Module, Optimizer, \\
        LinearLRScheduler

    state = CheckpointState.load_checkpoint("artifacts/checkpoint")
    module = Module("artifacts/training_model.onnx", state,
                    "artifacts/eval_model.onnx")
    optimizer = Optimizer("artifacts/optimizer_model.onnx", module)
    for x, y in batches:
        loss = module(x, y)
        optimizer.step()
        module.lazy_reset_grad()

and trains through COMET's compiled step with its activations compressed
(static bounds by default). COMET's options are keyword-only arguments of
Module; `module.memory_stats()` reports the memory. docs/python.md lists what
differs from ONNX Runtime and why: COMET compiles the graphs for a batch size
at the first call that brings it, Module inputs are numpy arrays or DLPack
tensors (no OrtValue), a bad input raises InputError/InputTypeError naming
it.
"""
from __future__ import annotations

import os
import re
from typing import Any, Iterator

import numpy as np

from comet._native import load as _load_native

_C = _load_native()

#: A user input that does not fit the graph (also a ValueError and, as in
#: ORT, a RuntimeError).
InputError = _C.InputError
#: A user input of the wrong kind or dtype (also a TypeError and a
#: RuntimeError).
InputTypeError = _C.InputTypeError

_GRAD_BUFFER = "_grad.accumulation.buffer"
_GRAD_OUT = "_grad.accumulation.out"
_RESET_GRAD = "lazy_reset_grad"
#: ORT's learning rate until an optimizer state or set_learning_rate says
#: otherwise (AdamW and SGD alike).
_DEFAULT_LR = float(np.float32(0.001))
_TYPE_NAMES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32",
               7: "int64", 9: "bool", 10: "float16", 11: "float64"}


class Parameter:
    """A model parameter of a CheckpointState: its data, gradient and whether
    it is trained. Returned by `state.parameters[name]`."""

    def __init__(self, name: str, state: CheckpointState):
        self._name = name
        self._state = state

    @property
    def name(self) -> str:
        """The name of the parameter"""
        return self._name

    @property
    def data(self) -> np.ndarray:
        """A copy of the parameter's values"""
        return self._state._get(self._name)

    @data.setter
    def data(self, value: np.ndarray) -> None:
        """Overwrites the parameter's values (same shape, float32)"""
        self._state._set(self._name, value)

    @property
    def grad(self) -> np.ndarray | None:
        """A copy of the gradient (None for a parameter that is not
        trained, or before a Module uses the state)"""
        return self._state._grad(self._name)

    @property
    def requires_grad(self) -> bool:
        """Whether the parameter is trained"""
        return self._state._ckpt.trainable(self._name)

    def __repr__(self) -> str:
        return f"Parameter(name={self.name}, requires_grad={self.requires_grad})"


class Parameters:
    """The parameters of a CheckpointState, a mapping by name (iterated in
    name order, as ORT does)."""

    def __init__(self, state: CheckpointState):
        self._state = state

    def __getitem__(self, name: str) -> Parameter:
        if name not in self:
            raise KeyError(f"Parameter {name} not found.")
        return Parameter(name, self._state)

    def __setitem__(self, name: str, value: np.ndarray) -> None:
        if name not in self:
            raise KeyError(f"Parameter {name} not found.")
        self._state._set(name, value)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._state._ckpt.has(name)

    def __iter__(self) -> Iterator[tuple[str, Parameter]]:
        for name in self._state._names():
            yield name, Parameter(name, self._state)

    def __repr__(self) -> str:
        return repr(self._state._names())

    def __len__(self) -> int:
        return len(self._state._names())


def _property_value(name: str, value: Any) -> int | float | str:
    """A property as ORT stores it: an int64, a float32 or a string."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        if not -2**63 <= int(value) < 2**63:
            raise TypeError(f"property {name!r}: {value} does not fit in an int64")
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(np.float32(value))
    if isinstance(value, str):
        return value
    raise TypeError(f"property {name!r}: properties are int, float or str, "
                    f"not {type(value).__name__}")


class Properties:
    """User properties of a CheckpointState (int, float or str by name),
    saved in the checkpoint."""

    def __init__(self, state: CheckpointState):
        self._state = state

    def __getitem__(self, name: str) -> int | float | str:
        if name not in self:
            raise KeyError(f"Property {name} not found.")
        return self._state._properties[name]

    def __setitem__(self, name: str, value: int | float | str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"property names are str, not {type(name).__name__}")
        self._state._properties[name] = _property_value(name, value)

    def __contains__(self, name: object) -> bool:
        return name in self._state._properties

    def __iter__(self) -> Iterator[tuple[str, int | float | str]]:
        props = self._state._properties
        for name in sorted(props):
            yield name, props[name]

    def __repr__(self) -> str:
        return repr(sorted(self._state._properties))

    def __len__(self) -> int:
        return len(self._state._properties)


class CheckpointState:
    """The training state: parameters, optimizer state and properties.

    Create it with `CheckpointState.load_checkpoint`. Once a Module uses it,
    the parameters live in the Module's compiled engine and every read or
    write goes there.
    """

    def __init__(self, state):
        if not isinstance(state, _C.Checkpoint):
            raise TypeError(f"Invalid argument for CheckpointState received {type(state)}")
        self._ckpt = state
        self._path: str | None = None
        self._properties: dict[str, int | float | str] = dict(state.properties())
        # The engines of the Module that uses the state (they hold the live
        # values, and keep them when the Module is gone, as ORT's state does).
        self._live: _Live | None = None
        self._parameters = Parameters(self)
        self._properties_view = Properties(self)

    @classmethod
    def load_checkpoint(cls, checkpoint_uri: str | os.PathLike) -> CheckpointState:
        """Reads an ONNX Runtime checkpoint."""
        path = os.fspath(checkpoint_uri)
        state = cls(_C.Checkpoint.read(path))
        state._path = path
        return state

    @classmethod
    def save_checkpoint(cls, state: CheckpointState, checkpoint_uri: str | os.PathLike,
                        include_optimizer_state: bool = False) -> None:
        """Writes the state as an ONNX Runtime checkpoint (atomically): the
        parameters, the properties and, with include_optimizer_state, the
        optimizer state when the state has one (an Optimizer was created,
        or the checkpoint it was loaded from had one), as ORT does."""
        path = os.fspath(checkpoint_uri)
        props = state._property_lists()
        engine = state._engine()
        include = include_optimizer_state and (
            state._ckpt.has_optimizer_state
            or (state._live is not None and state._live.optimizer))
        if engine is not None:
            engine.save_checkpoint(path, include, props)
        else:
            state._ckpt.write(path, include, props)

    @property
    def parameters(self) -> Parameters:
        return self._parameters

    @property
    def properties(self) -> Properties:
        return self._properties_view

    # -- where the values are ------------------------------------------------

    def _property_lists(self):
        """The properties as the checkpoint's ints, floats and strings."""
        ints, floats, strings = [], [], []
        for name in sorted(self._properties):
            v = self._properties[name]
            (strings if isinstance(v, str) else floats if isinstance(v, float)
             else ints).append((name, v))
        return ints, floats, strings

    def _engine(self):
        return self._live.active if self._live is not None else None

    def _names(self) -> list[str]:
        return sorted(self._ckpt.names())

    def _get(self, name: str) -> np.ndarray:
        engine = self._engine()
        return engine.get_parameter(name) if engine else self._ckpt.values(name)

    def _set(self, name: str, value) -> None:
        engine = self._engine()
        if engine:
            engine.set_parameter(name, value)
        else:
            self._ckpt.set_values(name, value)

    def _grad(self, name: str) -> np.ndarray | None:
        if not self._ckpt.trainable(name) or self._live is None:
            return None
        engine = self._engine()
        if engine:
            return engine.get_gradient(name)
        # A Module's gradient buffers start at zero.
        return np.zeros(self._ckpt.dims(name), np.float32)


def _parse_bytes(name: str, value) -> int:
    """A size in bytes: an int, or a string with a KiB/MiB/GiB suffix."""
    if value is None:
        return 0
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        n = int(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+)\s*(KiB|MiB|GiB)?\s*", value)
        if not m:
            raise ValueError(f"{name}: {value!r} is not a size (e.g. 900MiB or 943718400)")
        n = int(m.group(1)) << {None: 0, "KiB": 10, "MiB": 20, "GiB": 30}[m.group(2)]
    else:
        raise TypeError(f"{name} is an int (bytes) or a str like '900MiB', "
                        f"not {type(value).__name__}")
    if n <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return n


def _user_inputs(signature, exclude) -> list[tuple[str, int, tuple]]:
    return [i for i in signature["inputs"]
            if i[0] not in exclude and not i[0].endswith(_GRAD_BUFFER)
            and i[0] != _RESET_GRAD]


class _Graph:
    """What ORT's Module shows of one graph: its user inputs and outputs by
    the ONNX file, before anything is compiled."""

    def __init__(self, path: str, parameters: set[str]):
        sig = _C.read_signature(path)
        self.inputs = _user_inputs(sig, parameters)
        self.parameters = [i[0] for i in sig["inputs"] if i[0] in parameters]
        self.outputs = [o for o in sig["outputs"] if not o[0].endswith(_GRAD_OUT)]
        self.ignore_index = list(sig["ignore_index"])
        # The input whose first dim is the batch: the first of rank >= 2
        # (labels may be flattened to [batch * tokens]).
        ranks = [len(i[2]) for i in self.inputs]
        self.batch_input = next((k for k, r in enumerate(ranks) if r >= 2), 0)


class Module:
    """Trains and evaluates ONNX Runtime training artifacts through COMET.

    Args as ORT's: train_model_uri, state, eval_model_uri, device ("cpu" or
    "cuda"), session_options (accepted and ignored: COMET has no ORT
    session). COMET's own options are keyword-only:

        compress: "static" (default), "adaptive" or "none"
        compress_options: extra options of --comet-compress-activations
        compress_only, compress_except: value names to compress / to leave raw
        memory_budget: whole-step peak to fit (bytes, or "900MiB")
        assumed_sz_ratio: the sz ratio a budget assumes (3.0)
        bound_rule ("comet" | "acgc" | "noise"), bound_k, grad_magnitude,
        acgc_e, noise_fraction, retune_interval, stats_interval,
        stats_window, eb_min, eb_max, eb_relative_range, channel_bounds: the
        bound tuner of compress="adaptive" (comet-train's flags of the same
        names; None keeps the tuner's default, as the flag left out does)
        seed: the seed of the Dropout masks
        opt_level: LLVM's code generation level (0-3)

    The graphs are compiled for a batch size at the first call that brings
    it (the shapes are specialized); another batch size (a DataLoader's last
    partial batch) compiles a second engine that takes over the training
    state, and switching back copies it back.
    """

    training: bool

    def __init__(self, train_model_uri: str | os.PathLike, state: CheckpointState,
                 eval_model_uri: str | os.PathLike | None = None, device: str = "cpu",
                 session_options=None, *, compress: str = "static",
                 compress_options: str = "", compress_only=None, compress_except=None,
                 memory_budget=None, assumed_sz_ratio: float = 3.0,
                 bound_rule: str | None = None, bound_k: float | None = None,
                 grad_magnitude: str | None = None, acgc_e: float | None = None,
                 noise_fraction: float | None = None, retune_interval: int | None = None,
                 stats_interval: int | None = None, stats_window: int | None = None,
                 eb_min: float | None = None, eb_max: float | None = None,
                 eb_relative_range: float | None = None,
                 channel_bounds: bool | None = None, recompute: bool = True,
                 entropy_by_peak: bool = True, seed: int = 0, opt_level: int = 2):
        if not isinstance(state, CheckpointState):
            raise TypeError(f"state must be a CheckpointState, not {type(state).__name__}")
        self.training = True
        self._state = state
        self._train_path = os.fspath(train_model_uri)
        self._eval_path = os.fspath(eval_model_uri) if eval_model_uri is not None else None
        for what, path in (("training model", self._train_path),
                           ("eval model", self._eval_path)):
            if path is not None and not os.path.isfile(path):
                raise RuntimeError(f"the {what} {path} does not exist")
        params = set(state._ckpt.names())
        self._train = _Graph(self._train_path, params)
        self._eval = _Graph(self._eval_path, params) if self._eval_path else None

        kind, _, index = device.partition(":")
        if kind not in ("cpu", "cuda") or (index and not index.isdigit()):
            raise ValueError(f"device must be 'cpu' or 'cuda', not {device!r}")
        if kind == "cuda" and index not in ("", "0"):
            raise ValueError(f"device {device!r}: COMET runs on the first CUDA device")
        self._device = kind
        self._options = _C.EngineOptions()
        self._options.compress = compress
        if compress_only and compress_except:
            raise ValueError("compress_only and compress_except exclude each other")
        extra = [compress_options] if compress_options else []
        for key, names in (("only", compress_only), ("except", compress_except)):
            if names:
                if compress == "none":
                    raise ValueError(f"compress_{key} needs compress='static' or 'adaptive'")
                names = [names] if isinstance(names, str) else list(names)
                extra.append(f"{key}=" + ",".join(names))
        self._options.compress_options = " ".join(extra)
        self._options.memory_budget = _parse_bytes("memory_budget", memory_budget)
        if self._options.memory_budget and compress == "none":
            raise ValueError("memory_budget needs compress='static' or 'adaptive'")
        self._options.assumed_sz_ratio = float(assumed_sz_ratio)
        self._options.device = self._device
        for name, flag in (("recompute", recompute), ("entropy_by_peak", entropy_by_peak)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, not {type(flag).__name__}")
        self._options.recompute = recompute
        self._options.entropy_by_peak = entropy_by_peak
        self._options.seed = int(seed)
        self._options.opt_level = int(opt_level)
        self._options.eval_model_path = self._eval_path or "none"
        self._tuner = None
        if compress == "adaptive":
            if self._device == "cuda":
                raise ValueError("compress='adaptive' runs its bound tuner on the "
                                 "host: use compress='static' or 'none' on cuda")
            # An argument left at None keeps the tuner's own default.
            t = _C.TunerOptions()
            for name, value, kind in (
                    ("rule", bound_rule, str), ("grad_magnitude", grad_magnitude, str),
                    ("bound_k", bound_k, float), ("acgc_e", acgc_e, float),
                    ("noise_fraction", noise_fraction, float),
                    ("retune_interval", retune_interval, int),
                    ("stats_interval", stats_interval, int),
                    ("stats_window", stats_window, int), ("eb_min", eb_min, float),
                    ("eb_max", eb_max, float),
                    ("eb_relative_range", eb_relative_range, float),
                    ("channel_bounds", channel_bounds, bool)):
                if value is None:
                    continue
                if kind is bool and not isinstance(value, bool):
                    raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
                setattr(t, name, kind(value))
            why = t.validate()
            if why:
                # The tuner names its command-line flags: name the arguments.
                raise ValueError(re.sub(
                    r"(?:--)?\b(bound-k|acgc-e|noise-fraction|retune-interval|stats-interval|"
                    r"stats-window|"
                    r"eb-min|eb-max|eb-relative-range)\b",
                    lambda m: m.group(1).replace("-", "_"), why))
            self._tuner = t

        self._live = _Live()
        self._train_calls: dict[int, int] = {}
        # Until an engine exists: the optimizer graph and learning rate.
        self._optimizer_path = ""
        self._lr = _DEFAULT_LR
        # One module holds a state's live values: an earlier one hands them
        # back to the state first.
        previous = state._live
        if previous is not None and previous.active is not None:
            state._ckpt = previous.active.checkpoint_state(
                state._ckpt.has_optimizer_state or previous.optimizer,
                state._property_lists())
        state._live = self._live

    # -- ORT's Module --------------------------------------------------------

    def __call__(self, *user_inputs):
        """Runs a training step (the training graph's outputs: the loss) or,
        after eval(), the eval graph (its outputs); a single output comes
        back as an array, several as a tuple."""
        graph = self._train if self.training else self._eval
        if graph is None:
            raise RuntimeError("the module has no eval graph: pass eval_model_uri "
                               "to Module to evaluate")
        engine = self._live.active
        try:
            batch = user_inputs[graph.batch_input].shape[0]
        except (AttributeError, IndexError, TypeError):
            batch = None
        if engine is None or batch != engine.batch_size:
            engine = self._engine_for(graph, user_inputs)
        if self.training:
            self._train_calls[engine.batch_size] = self._train_calls.get(engine.batch_size, 0) + 1
            return engine.train(user_inputs)
        return engine.eval(user_inputs)

    def train(self, mode: bool = True) -> Module:
        self.training = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def lazy_reset_grad(self) -> None:
        """The next training call overwrites the gradients instead of adding
        to them."""
        if self._live.active is not None:
            self._live.active.lazy_reset_grad()

    def get_contiguous_parameters(self, trainable_only: bool = False) -> np.ndarray:
        """The parameters flattened one after the other in the training
        graph's order (an array; .numpy() returns it, as ORT's OrtValue)."""
        out = np.empty(self.get_parameters_size(trainable_only), np.float32).view(_Buffer)
        engine = self._live.active
        if engine is not None:
            engine.copy_parameters_to(self._parameter_order(), trainable_only, out)
        else:
            pos = 0
            for name in self._parameter_order(trainable_only):
                v = self._state._ckpt.values(name).ravel()
                out[pos:pos + v.size] = v
                pos += v.size
        return out

    def get_parameters_size(self, trainable_only: bool = True) -> int:
        """The number of elements of the parameters (the trainable ones, or
        all)."""
        ckpt = self._state._ckpt
        return int(sum(np.prod(ckpt.dims(n), dtype=np.int64)
                       for n in self._parameter_order(trainable_only)))

    def copy_buffer_to_parameters(self, buffer, trainable_only: bool = True) -> None:
        """Overwrites the parameters from a flat float32 buffer in the order
        of get_contiguous_parameters (a numpy array, a DLPack tensor or an
        ORT OrtValue)."""
        if "OrtValue" in type(buffer).__name__:
            buffer = buffer.numpy()
        engine = self._live.active
        if engine is not None:
            engine.copy_parameters_from(self._parameter_order(), trainable_only, buffer)
            return
        size = self.get_parameters_size(trainable_only)
        flat = np.asarray(buffer)
        if flat.dtype != np.float32 or flat.shape != (size,):
            raise InputError(f"the buffer must be a float32 array of shape [{size}], "
                             f"got {flat.dtype} {list(flat.shape)}")
        pos = 0
        for name in self._parameter_order(trainable_only):
            dims = self._state._ckpt.dims(name)
            n = int(np.prod(dims, dtype=np.int64))
            self._state._ckpt.set_values(name, flat[pos:pos + n].reshape(dims))
            pos += n

    def export_model_for_inferencing(self, inference_model_uri: str | os.PathLike,
                                     graph_output_names: list[str]) -> None:
        """Writes an ONNX inference model (atomically): the eval graph (or,
        without one, the training graph's forward part) cut to the nodes
        that graph_output_names need, the current parameters as
        initializers."""
        path = os.fspath(inference_model_uri)
        if isinstance(graph_output_names, str) or not all(
                isinstance(n, str) for n in graph_output_names):
            raise TypeError("graph_output_names is a list of output names")
        names = list(graph_output_names)
        engine = self._live.active
        if engine is not None:
            engine.export_inference_model(path, names)
        else:
            self._state._ckpt.export_inference_model(
                self._eval_path or self._train_path, names, self._eval_path is None, path)

    def input_names(self) -> list[str]:
        """The user inputs of the training (or, in eval mode, eval) graph."""
        graph = self._train if self.training else self._eval
        return [i[0] for i in graph.inputs] if graph else []

    def output_names(self) -> list[str]:
        """The outputs of the training (or, in eval mode, eval) graph."""
        graph = self._train if self.training else self._eval
        return [o[0] for o in graph.outputs] if graph else []

    # -- COMET's -------------------------------------------------------------

    def memory_stats(self, batch_size: int | None = None) -> dict:
        """The memory of the engine of `batch_size` (default: the batch size
        of most training calls, else the latest): peak bytes by allocator
        category, activation bytes raw and as stored, their ratio, the
        predicted peak and each compressed value."""
        if batch_size is None and self._train_calls:
            batch_size = max(self._train_calls, key=self._train_calls.get)
        engine = self._live.active if batch_size is None else self._live.engines.get(batch_size)
        if engine is None:
            raise RuntimeError("nothing is compiled yet: COMET compiles at the first call"
                               if batch_size is None else
                               f"no engine was compiled for batch size {batch_size}")
        return engine.stats()

    @property
    def compiled_batch_sizes(self) -> list[int]:
        """The batch sizes compiled so far."""
        return sorted(self._live.engines)

    # -- engines -------------------------------------------------------------

    def _parameter_order(self, trainable_only: bool = False) -> list[str]:
        """The parameters in the training graph's input order (ORT's order
        of the contiguous buffer)."""
        ckpt = self._state._ckpt
        return [n for n in self._train.parameters if not trainable_only or ckpt.trainable(n)]

    def _engine_for(self, graph: _Graph, user_inputs):
        """The engine for these inputs' batch size, compiled if need be,
        holding the training state."""
        batch = self._check_before_compiling(graph, user_inputs)
        engine = self._live.engines.get(batch)
        if engine is None:
            engine = self._compile(batch)
            self._live.engines[batch] = engine
        if self._live.active is not None and engine is not self._live.active:
            engine.copy_state_from(self._live.active)
        self._live.active = engine
        return engine

    def _compile(self, batch: int):
        options = self._options
        options.batch_size = batch
        options.optimizer_path = self._optimizer_path
        options.weights_path = self._state._path or ""
        engine = _C.Engine.load(self._train_path)
        # The first engine starts from the state (with the user's changes,
        # and its optimizer state if it has one); a later one then takes the
        # training state over from the engine that holds it (_engine_for).
        engine.compile(options, self._state._ckpt, self._tuner, self._train.ignore_index)
        if self._live.active is None:
            engine.learning_rate = self._lr
        return engine

    def _check_before_compiling(self, graph: _Graph, user_inputs) -> int:
        """The batch size of the inputs, checked against the ONNX graph so
        that a wrong input does not cost a compilation."""
        n = len(graph.inputs)
        if len(user_inputs) != n:
            names = ", ".join(f"'{i[0]}'" for i in graph.inputs)
            raise InputError(f"{'training' if self.training else 'eval'} step: expected "
                             f"{n} inputs ({names}), got {len(user_inputs)}")
        # Symbolic dims are left to the compiled engine's exact check: an
        # export may name a labels dim "batch" that holds batch x tokens.
        for k, ((name, elem, dims), x) in enumerate(zip(graph.inputs, user_inputs)):
            what = f"input '{name}' ({k + 1} of {n})"
            want = _TYPE_NAMES.get(elem, f"ONNX type {elem}")
            shape = getattr(x, "shape", None)
            if type(x).__name__ == "OrtValue":
                raise InputTypeError(f"{what}: OrtValue inputs are not supported; pass "
                                     "a numpy array (OrtValue.numpy()) or a DLPack tensor")
            if shape is None or not (isinstance(x, np.ndarray) or hasattr(x, "__dlpack__")):
                raise InputTypeError(f"{what}: expected a {want} array (numpy, or a "
                                     f"DLPack tensor), got {type(x).__name__}")
            shape = tuple(int(d) for d in shape)
            if isinstance(x, np.ndarray) and elem in _TYPE_NAMES and x.dtype != np.dtype(want):
                raise InputTypeError(f"{what} has dtype {x.dtype}, expected {want}")
            expected = [d if isinstance(d, int) else "?" for d in dims]
            if len(shape) != len(dims) or any(
                    isinstance(d, int) and d != s for d, s in zip(dims, shape)):
                raise InputError(f"{what} has shape {list(shape)}, expected "
                                 f"[{', '.join(map(str, expected))}]")
        shape = user_inputs[graph.batch_input].shape
        if not shape or shape[0] <= 0:
            raise InputError(f"input '{graph.inputs[graph.batch_input][0]}' holds no samples")
        return int(shape[0])

    def _set_optimizer(self, path: str) -> None:
        """Engines compiled before the Optimizer existed took the optimizer
        graph next to the training graph; another one replaces it."""
        self._optimizer_path = path
        self._live.optimizer = True
        lr = self._learning_rate()
        for engine in self._live.engines.values():
            if os.path.abspath(engine.optimizer_path or "") != os.path.abspath(path):
                engine.set_optimizer(path)
                engine.learning_rate = lr

    def _learning_rate(self) -> float:
        return self._live.active.learning_rate if self._live.active is not None else self._lr

    def _set_learning_rate(self, lr: float) -> None:
        self._lr = float(np.float32(lr))
        if self._live.active is not None:
            self._live.active.learning_rate = lr

    def _optimizer_steps(self) -> int:
        """Optimizer steps taken, counting those of the checkpoint's
        optimizer state (what LinearLRScheduler reads)."""
        engine = self._live.active
        return engine.optimizer_steps if engine is not None else self._state._ckpt.optimizer_step


class _Live:
    """A Module's engines by batch size and the one that holds the training
    state (active); whether an Optimizer was created for it."""

    __slots__ = ("engines", "active", "optimizer")

    def __init__(self):
        self.engines: dict[int, Any] = {}
        self.active = None
        self.optimizer = False


class _Buffer(np.ndarray):
    """get_contiguous_parameters()'s array; .numpy() as on ORT's OrtValue."""

    def numpy(self) -> np.ndarray:
        return self.view(np.ndarray)


class Optimizer:
    """Updates the parameters of `module` from their gradients with the
    optimizer graph of ONNX Runtime's artifacts (AdamW or SGD)."""

    def __init__(self, optimizer_uri: str | os.PathLike, module: Module):
        if not isinstance(module, Module):
            raise TypeError(f"module must be a comet.training.api.Module, not "
                            f"{type(module).__name__}")
        path = os.fspath(optimizer_uri)
        if not os.path.isfile(path):
            raise RuntimeError(f"the optimizer model {path} does not exist")
        kind = _C.read_signature(path)["optimizer"]
        if not kind:
            raise RuntimeError(f"{path} is no optimizer graph: it has no AdamWOptimizer "
                               "or SGDOptimizerV2 node")
        self._module = module
        module._set_optimizer(path)

    def step(self) -> None:
        """One update of the parameters from the current gradients."""
        m = self._module
        if m._live.active is None:
            raise RuntimeError("the module has not run a training step: there are "
                               "no gradients to apply")
        m._live.active.optimizer_step()

    def set_learning_rate(self, learning_rate: float) -> None:
        if not np.isfinite(learning_rate):
            raise ValueError(f"the learning rate must be finite, got {learning_rate}")
        self._module._set_learning_rate(learning_rate)

    def get_learning_rate(self) -> float:
        return float(self._module._learning_rate())


class LinearLRScheduler:
    """ORT's linear learning-rate schedule: a warm-up from 0, then a linear
    decay to 0, as a factor of initial_lr after each optimizer step.

    ONNX Runtime 1.19's binding takes its arguments as (total_step_count,
    warmup_step_count) while its Python passes (warmup_step_count,
    total_step_count): the schedule it runs warms up over `total_step_count`
    steps and decays to 0 by `warmup_step_count`. This class computes the
    same sequence, so that a loop ported from ORT learns as it did there.
    """

    def __init__(self, optimizer: Optimizer, warmup_step_count: int, total_step_count: int,
                 initial_lr: float):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer must be a comet.training.api.Optimizer, not "
                            f"{type(optimizer).__name__}")
        self._optimizer = optimizer
        # As ORT 1.19 runs it (see the class doc).
        self._warmup = int(total_step_count)
        self._total = int(warmup_step_count)
        self._initial_lr = np.float32(initial_lr)
        optimizer.set_learning_rate(float(self._initial_lr))
        self.step()

    def _factor(self, step: int) -> np.float32:
        f32 = np.float32
        if step < self._warmup:
            return f32(step) / max(f32(1), f32(self._warmup))
        remain = f32(self._total - step)
        post = f32(self._total - self._warmup)
        return max(f32(0), remain / max(f32(1), post))

    def step(self) -> None:
        """Sets the learning rate for the optimizer's step count."""
        steps = self._optimizer._module._optimizer_steps()
        self._optimizer.set_learning_rate(float(self._initial_lr * self._factor(steps)))
