"""Which op types of ONNX Runtime artifact graphs COMET's importer supports.

The importer's table is the set of ops in
include/comet/Dialect/ONNX/IR/ONNXOps.td (one op per ONNX op_type; the domain
is the bracketed start of each summary).  This module reads it with
`llvm-tblgen --dump-json`, so it sees what TableGen sees, and checks each
node of the training, eval and optimizer graphs of artifact folders against
it: the op type and domain, the attribute names, and the input and output
counts (the checks ONNXImporter.cpp makes before it builds an op).

  python -m comet.op_inventory DIR... [--td FILE] [--json]

prints a Markdown table (op type x model, node counts in the training / eval
graph) and, per op type, the attribute values found in the graphs
(docs/models.md holds the output for the four PyTorch models).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import sys

import onnx
from onnx import numpy_helper

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPS_TD = ROOT / "include" / "comet" / "Dialect" / "ONNX" / "IR" / "ONNXOps.td"
GRAPHS = ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx")


def find_tblgen() -> str:
    """$LLVM_TBLGEN, LLVM 22's llvm-tblgen, or llvm-tblgen on PATH."""
    for c in (os.environ.get("LLVM_TBLGEN"), "/usr/lib/llvm-22/bin/llvm-tblgen",
              shutil.which("llvm-tblgen")):
        if c and os.path.exists(c):
            return c
    raise FileNotFoundError("llvm-tblgen not found (Debian package llvm-22; or set LLVM_TBLGEN)")


@dataclasses.dataclass(frozen=True)
class OpDef:
    domain: str  # "ai.onnx" or "com.microsoft"
    op_type: str
    attributes: frozenset[str]
    max_inputs: int | None  # None: variadic
    max_outputs: int | None


def importer_ops(td=OPS_TD, tblgen: str | None = None) -> dict[tuple[str, str], OpDef]:
    """{(domain, op_type): OpDef} for every op of the onnx dialect's table."""
    td = pathlib.Path(td)
    include = td.parents[4]  # .../include
    llvm_include = pathlib.Path(tblgen or find_tblgen()).resolve().parents[1] / "include"
    r = subprocess.run([tblgen or find_tblgen(), "--dump-json", "-I", str(llvm_include),
                        "-I", str(include), str(td)],
                       capture_output=True, text=True, check=True)
    recs = json.loads(r.stdout)

    def is_a(name, cls):
        return cls in recs[name]["!superclasses"]

    ops = {}
    for name in recs["!instanceof"]["ONNX_Op"]:
        rec = recs[name]
        summary = rec["summary"]
        if not summary.startswith("["):
            continue  # NoValue, Initializer: not ONNX nodes
        domain = summary[1:summary.index("]")]
        args = [(a[0]["def"], a[1]) for a in rec["arguments"]["args"]]
        attrs = frozenset(n for d, n in args if is_a(d, "Attr"))
        operands = [d for d, _ in args if not is_a(d, "Attr")]
        results = [a[0]["def"] for a in rec["results"]["args"]]
        ops[(domain, rec["opName"])] = OpDef(
            domain, rec["opName"], attrs,
            None if any(is_a(d, "Variadic") for d in operands) else len(operands),
            None if any(is_a(d, "Variadic") for d in results) else len(results))
    return ops


def _domain(node) -> str:
    return node.domain if node.domain not in ("", "ai.onnx") else "ai.onnx"


def _constants(model) -> dict[str, object]:
    """Scalar initializers and Constant outputs by name (for Dropout's ratio
    and training_mode inputs)."""
    out = {}
    tensors = list(model.graph.initializer)
    for n in model.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    t = onnx.TensorProto()
                    t.CopyFrom(a.t)
                    t.name = n.output[0]
                    tensors.append(t)
    for t in tensors:
        if len(t.dims) == 0 or list(t.dims) == [1]:
            v = numpy_helper.to_array(t).reshape(-1)[0]
            out[t.name] = v.item()
    return out


def _attr_text(node, consts) -> str:
    """The attributes of `node` that an importer has to honour, as text."""
    def fmt(v):
        if isinstance(v, bytes):
            return v.decode()
        if isinstance(v, float):
            return f"{v:.6g}"
        if isinstance(v, onnx.TensorProto):
            return f"tensor{list(v.dims)}"
        return v

    parts = [f"{a.name}={fmt(onnx.helper.get_attribute_value(a))}"
             for a in sorted(node.attribute, key=lambda a: a.name)]
    if node.op_type in ("Dropout", "DropoutGrad"):
        # Dropout(data, ratio, training_mode) / DropoutGrad(dY, mask, ratio, training_mode)
        first = 1 if node.op_type == "Dropout" else 2
        for label, i in (("ratio", first), ("training_mode", first + 1)):
            if i < len(node.input) and node.input[i]:
                parts.append(f"{label}={fmt(consts.get(node.input[i], 'input'))}")
            else:
                parts.append(f"{label}=absent")
    if node.op_type in ("BatchNormalization", "BatchNormInternal", "LayerNormalization",
                        "Dropout", "MaxPool"):
        parts.append(f"outputs={sum(1 for o in node.output if o)}")
    return ", ".join(parts)


@dataclasses.dataclass
class Inventory:
    # counts[(domain, op)][(model, graph file)] = node count
    counts: dict = dataclasses.field(default_factory=lambda: collections.defaultdict(collections.Counter))
    # attrs[(domain, op)] = Counter of attribute texts
    attrs: dict = dataclasses.field(default_factory=lambda: collections.defaultdict(collections.Counter))
    # problems[(domain, op)] = set of importer checks the nodes fail
    problems: dict = dataclasses.field(default_factory=lambda: collections.defaultdict(set))
    models: list = dataclasses.field(default_factory=list)


def inventory(model_dirs: dict[str, pathlib.Path], ops: dict[tuple[str, str], OpDef]) -> Inventory:
    inv = Inventory(models=list(model_dirs))
    for model, d in model_dirs.items():
        for g in GRAPHS:
            m = onnx.load(os.fspath(pathlib.Path(d) / g), load_external_data=False)
            consts = _constants(m)
            for n in m.graph.node:
                key = (_domain(n), n.op_type)
                inv.counts[key][(model, g)] += 1
                inv.attrs[key][_attr_text(n, consts)] += 1
                op = ops.get(key)
                if op is None:
                    continue
                unknown = sorted({a.name for a in n.attribute} - op.attributes)
                if unknown:
                    inv.problems[key].add(f"unknown attribute {', '.join(unknown)}")
                if op.max_inputs is not None and len(n.input) > op.max_inputs:
                    inv.problems[key].add(f"{len(n.input)} inputs, the op has {op.max_inputs}")
                if op.max_outputs is not None and len(n.output) > op.max_outputs:
                    inv.problems[key].add(f"{len(n.output)} outputs, the op has {op.max_outputs}")
    return inv


def _support(key, ops, inv) -> str:
    if key not in ops:
        return "no"
    return "yes" if not inv.problems.get(key) else "op only: " + "; ".join(sorted(inv.problems[key]))


def markdown(inv: Inventory, ops) -> str:
    short = {"training_model.onnx": "t", "eval_model.onnx": "e", "optimizer_model.onnx": "o"}
    head = "| domain | op type | " + " | ".join(inv.models) + " | importer |"
    lines = [head, "|" + "---|" * (3 + len(inv.models))]
    for key in sorted(inv.counts, key=lambda k: (k[0], k[1])):
        c = inv.counts[key]
        cells = []
        for model in inv.models:
            cell = " ".join(f"{c[(model, g)]}{short[g]}" for g in GRAPHS if c[(model, g)])
            cells.append(cell)
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(cells)
                     + f" | {_support(key, ops, inv)} |")
    return "\n".join(lines)


def attribute_notes(inv: Inventory, max_variants: int = 6) -> str:
    lines = []
    for key in sorted(inv.attrs):
        variants = inv.attrs[key].most_common()
        texts = [f"`{t}` ({k})" if t else f"none ({k})" for t, k in variants[:max_variants]]
        more = f", {len(variants) - max_variants} more" if len(variants) > max_variants else ""
        lines.append(f"* {key[0]}.{key[1]}: " + "; ".join(texts) + more)
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m comet.op_inventory",
                                description="Op types of artifact folders vs. COMET's importer.")
    p.add_argument("dirs", nargs="+", help="artifact folders (the folder name is the model name)")
    p.add_argument("--td", default=str(OPS_TD), help="ONNXOps.td to read the importer's table from")
    p.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    a = p.parse_args(argv)
    ops = importer_ops(a.td)
    inv = inventory({pathlib.Path(d).name: pathlib.Path(d) for d in a.dirs}, ops)
    if a.json:
        print(json.dumps([
            {"domain": k[0], "op_type": k[1], "supported": k in ops and not inv.problems.get(k),
             "in_table": k in ops, "problems": sorted(inv.problems.get(k, ())),
             "counts": {f"{m}/{g}": n for (m, g), n in inv.counts[k].items()},
             "attributes": dict(inv.attrs[k])}
            for k in sorted(inv.counts)], indent=1))
        return 0
    print(markdown(inv, ops))
    print()
    print(attribute_notes(inv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
