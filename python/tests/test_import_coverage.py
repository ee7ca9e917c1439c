"""No silent drops: every node of every fixture graph comes out of
`comet-opt model.onnx` as one onnx.<op_type> op, in file order, at
NameLoc(node name); initializers, inputs and outputs are all there, and every
(domain, op_type) is listed in docs/onnx-ops.md.

Uses the comet-opt of $COMET_BUILD_DIR (set by the ctest entry), else build/.
"""
import collections
import re
import subprocess
from pathlib import Path

import onnx
import pytest
from comet_tools import tool

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "test" / "fixtures" / "models").glob("*/*.onnx"))
INPUTS = sorted(p for p in (ROOT / "test" / "Import" / "Inputs").glob("*.onnx")
                if not p.name.startswith("bad-"))
NOT_NODES = {"onnx.NoValue", "onnx.Initializer"}


def documented_ops():
    """(domain, op_type) pairs from the table in docs/onnx-ops.md."""
    ops = set()
    for line in (ROOT / "docs" / "onnx-ops.md").read_text().splitlines():
        m = re.match(r"\|\s*`(\w+)`\s*\|\s*`([\w.]+)`\s*\|", line)
        if m:
            ops.add((m.group(2), m.group(1)))
    return ops


def imported(path):
    """Op names, their location names, and the func signature sizes."""
    out = subprocess.run([tool("comet-opt"), str(path), "-mlir-print-op-generic",
                          "-mlir-print-debuginfo"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    aliases = dict(re.findall(r'^(#loc\d*) = loc\("((?:[^"\\]|\\.)*)"\(#loc\)\)', text, re.M))
    ops = []
    for m in re.finditer(r'"(onnx\.\w+)"\(.*loc\((#loc\d*)\)$', text, re.M):
        ops.append((m.group(1), aliases.get(m.group(2))))
    ftype = re.search(r'function_type = \((.*?)\) -> \(?(.*?)\)?, ', text)
    return ops, text


@pytest.mark.parametrize("path", FIXTURES + INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_node_is_imported(path):
    model = onnx.load(str(path))
    g = model.graph
    ops, text = imported(path)
    nodes = [op for op in ops if op[0] not in NOT_NODES]
    # Same count, same op types, same order, each at its node's name.
    assert len(nodes) == len(g.node)
    assert [name for name, _ in nodes] == ["onnx." + n.op_type for n in g.node]
    assert [loc for _, loc in nodes] == [n.name for n in g.node]
    inits = [loc for name, loc in ops if name == "onnx.Initializer"]
    assert inits == [t.name for t in g.initializer]
    # One func argument per graph input and one result per graph output,
    # named as in the file.
    arg_names = re.findall(r'onnx\.name = "((?:[^"\\]|\\.)*)"', text)
    assert arg_names == [v.name for v in g.input] + [v.name for v in g.output]
    # Initializer data is in the resource section, not printed as decimals.
    if g.initializer:
        assert "dense_resource<" in text and "dialect_resources" in text
        assert "dense<" not in text


def test_every_fixture_op_is_documented():
    docs = documented_ops()
    assert docs, "docs/onnx-ops.md has no op table"
    seen = collections.Counter()
    for path in FIXTURES:
        for n in onnx.load(str(path)).graph.node:
            seen[(n.domain or "ai.onnx", n.op_type)] += 1
    missing = set(seen) - docs
    assert not missing, f"op types in fixtures but not in docs/onnx-ops.md: {missing}"
