"""python -m comet.zoo (docs/models.md, "The torchvision zoo"): the table
and its parts from known records, then the sweep itself on two small
torchvision models: shufflenet_v2_x0_5 exports at 28x28, imports and
trains, as mnasnet0_5 does; mobilenet_v3_small fails in generate_artifacts (ONNX Runtime 1.19
has no gradient for HardSwish), and a stage past its time limit is a
"timeout" row.

The sweep runs in the export environment ($COMET_EXPORT_PYTHON, default
.venv-export/bin/python) with the built comet-opt and comet-train; without
them the test skips, and fails under CI=true (conftest.py)."""
import json
import os
import pathlib
import subprocess

import pytest
from comet_tools import ROOT, tool

from comet import zoo

EXPORT_PY = pathlib.Path(os.environ.get("COMET_EXPORT_PYTHON",
                                        ROOT / ".venv-export" / "bin" / "python"))


def results(**models):
    meta = {"command": "python -m comet.zoo --docs docs/models.md",
            "versions": {"torch": "1.13", "torchvision": "0.14"}, "sizes": [28, 32],
            "mem_gib": 12.0, "batch": 2, "steps": 3,
            "timeouts": {"export": 1800, "import": 600, "train": 1800}}
    return {"meta": meta, "models": models}


OK = {"model": "resnet18", "size": 28, "params": 11175370, "opset": 17, "ops": 350,
      "notes": ["1-channel conv1"], "exported": True, "imports": True, "trains": True}
NO_OP = {"model": "mobilenet_v3_large", "size": 28, "params": 4214842, "opset": 17, "ops": 900,
         "notes": ["1-channel features.0.0"], "exported": True, "imports": False,
         "trains": False, "stage": "import",
         "reason": "error: the model has 2 op types that COMET does not support: "
                   "ai.onnx::HardSigmoid (first node 'h1'), com.microsoft::Foo (first node #4)",
         "unsupported": ["ai.onnx::HardSigmoid", "com.microsoft::Foo"],
         "op_types": {"ai.onnx::HardSigmoid": 9, "com.microsoft::Foo": 2}}
TIMEOUT = {"model": "vgg19", "size": 224, "params": 139611210, "opset": 17, "ops": 120,
           "notes": ["1-channel features.0"], "exported": True, "imports": True,
           "trains": False, "stage": "train", "reason": "timeout (1800 s)"}
SKIPPED = {"model": "vit_h_14", "params": 631000000, "notes": ["image_size=28"],
           "skipped": True, "stage": "skipped", "imports": None, "trains": None,
           "reason": "631 M parameters, 2.4 GiB of float32 weights; --skip"}


def test_rows():
    assert zoo.row(OK) == "| resnet18 | 28x28 | 11.2 M | 350 | yes | yes |  |"
    r = zoo.row(NO_OP)
    assert r.startswith("| mobilenet_v3_large | 28x28 | 4.2 M | 900 | no | no | import: error:")
    assert zoo.row(SKIPPED) == ("| vit_h_14 |  | 631.0 M |  | - | skipped | image_size=28. "
                                "skipped: 631 M parameters, 2.4 GiB of float32 weights; --skip |")
    # A '|' in a reason cannot end the cell.
    assert "a \\| b" in zoo.row(dict(TIMEOUT, reason="a | b"))


def test_render_summary_and_groups():
    text = zoo.render(results(resnet18=OK, mobilenet_v3_large=NO_OP, vgg19=TIMEOUT,
                              vit_h_14=SKIPPED))
    assert text.startswith(zoo.BEGIN) and text.rstrip().endswith(zoo.END)
    assert "**1 of 4 models train (25.0%)**; 3 export" in text
    assert "3 import into COMET, 1 skipped." not in text  # imports: resnet18 and vgg19
    assert "2 import into COMET, 1 skipped." in text
    assert "`python -m comet.zoo --docs docs/models.md`" in text
    # The op types the importer lacks, with the models and node counts.
    assert "| ai.onnx::HardSigmoid | 1 | 9 | mobilenet_v3_large |" in text
    assert "| com.microsoft::Foo | 1 | 2 | mobilenet_v3_large |" in text
    # The other failures, grouped without their figures.
    assert "| train | timeout (N s) | 1 | vgg19 |" in text
    assert "| skipped | --skip | 1 | vit_h_14 |" in text
    # Rows in name order.
    lines = [ln for ln in text.splitlines() if ln.startswith("| ") and "x" in ln.split("|")[2]]
    assert [ln.split("|")[1].strip() for ln in lines] == ["mobilenet_v3_large", "resnet18", "vgg19"]


def test_render_names_a_partial_sweep():
    # Two of four listed models swept: the share is of those two, and the
    # two to go are named.
    r = results(resnet18=OK, vgg19=TIMEOUT)
    r["meta"]["listed"] = ["alexnet", "resnet18", "vgg19", "vit_b_16"]
    text = zoo.render(r)
    assert ("**Partial sweep: 2 of 4 listed models swept so far**; the share below is "
            "of those swept. Not yet swept: alexnet, vit_b_16.") in text
    assert "**1 of 2 models train (50.0%)**" in text
    # All swept: no such line.
    r["models"].update(alexnet=dict(OK, model="alexnet"), vit_b_16=dict(OK, model="vit_b_16"))
    assert "Partial sweep" not in zoo.render(r)
    assert "**3 of 4 models train (75.0%)**" in zoo.render(r)


def test_a_redo_with_a_higher_cap_is_named_beside_the_first_command():
    base = results(resnet18=OK)["meta"]
    new = dict(base, command="python -m comet.zoo --mem-gib 15", mem_gib=15.0,
               listed=["resnet18", "vgg19"])
    meta = zoo.merged_meta(base, new, ["vgg19"], kept_rows=True)
    # The other rows stay the first command's; the redo is named with its
    # models and its cap.
    assert (meta["command"], meta["mem_gib"]) == (base["command"], 12.0)
    assert meta["listed"] == ["resnet18", "vgg19"]
    assert meta["reruns"] == [{"command": "python -m comet.zoo --redo vgg19 --mem-gib 15",
                               "models": ["vgg19"], "mem_gib": 15.0}]
    # Redoing the model with the first command's options takes it out of
    # the reruns; a redo with the same options, or one that keeps no other
    # row, makes the meta its own.
    again = dict(base, listed=new["listed"])
    assert "reruns" not in zoo.merged_meta(meta, again, ["vgg19"], kept_rows=True)
    assert zoo.merged_meta(meta, again, ["resnet18"], kept_rows=True)["reruns"] == \
        meta["reruns"]
    assert zoo.merged_meta(base, new, ["vgg19"], kept_rows=False) == new
    assert zoo.merged_meta({}, new, ["vgg19"], kept_rows=True) == new

    r = {"meta": meta, "models": {"resnet18": OK,
                                  "vgg19": dict(OK, model="vgg19", mem_gib=15.0)}}
    text = zoo.render(r)
    assert ("each stage capped at 12 GiB of address space and 1800/600/1800 s "
            "(export/import/train). vgg19 made again by `python -m comet.zoo --redo vgg19 "
            "--mem-gib 15`: each stage capped at 15 GiB.") in text
    # The row made under another cap says so; a row under the table's cap
    # (or from before rows kept theirs) does not.
    assert "| vgg19 | 28x28 | 11.2 M | 350 | yes | yes | cap 15 GiB |" in text
    assert "| resnet18 | 28x28 | 11.2 M | 350 | yes | yes |  |" in text
    assert zoo.row(dict(OK, mem_gib=12.0), 12.0).endswith("| yes | yes |  |")


def test_write_docs_replaces_the_section(tmp_path):
    doc = tmp_path / "models.md"
    doc.write_text("# Models\n\nintro\n")
    zoo.write_docs(results(resnet18=OK), doc)
    first = doc.read_text()
    assert first.startswith("# Models\n\nintro\n\n## The torchvision zoo\n\n" + zoo.BEGIN)
    doc.write_text(first + "\n## After\n\ntext\n")
    zoo.write_docs(results(resnet18=OK, vgg19=TIMEOUT), doc)
    second = doc.read_text()
    assert second.count(zoo.BEGIN) == 1 and second.count(zoo.END) == 1
    assert "| vgg19 |" in second and second.endswith("## After\n\ntext\n")


def test_error_lines():
    ort = RuntimeError(
        "/onnxruntime_src/orttraining/core/graph/gradient_builder_registry.cc:29 "
        "onnxruntime::training::GradientDef onnxruntime::training::GetGradientForOp("
        "const onnxruntime::Graph*, std::unordered_map<int, std::vector<long int> >&) "
        "gradient_builder != nullptr was false. The gradient builder has not been "
        "registered: HardSwish for node /features/HardSwish\n")
    assert zoo.error_text(ort) == ("RuntimeError: The gradient builder has not been registered: "
                                   "HardSwish for node /features/HardSwish")
    assert zoo.unsupported_ops(NO_OP["reason"]) == NO_OP["unsupported"]
    assert zoo.error_line("note: x\nloc(\"a\"): error: bad op\nmore\n") == 'loc("a"): error: bad op'
    assert zoo.error_line("one\nlast line\n") == "last line"


def test_reported_oom():
    run = {"peak_rss_mib": 8474}
    assert (zoo.reported_reason("generate_artifacts: MemoryError: std::bad_alloc", run, 10)
            == "out of memory (cap 10 GiB, peak RSS 8474 MiB)")
    assert zoo.reported_reason("generate_artifacts: RuntimeError: x", run, 10) == \
        "generate_artifacts: RuntimeError: x"


def test_limits(tmp_path):
    log = tmp_path / "log"
    run = zoo.run_limited(["sleep", "30"], log, timeout=1, mem_bytes=None)
    assert run["timed_out"] and run["seconds"] < 10
    assert zoo.failure_reason(run, log, 12, 1) == "timeout (1 s)"
    # An allocation past the address-space cap is "out of memory".
    py = ["python3", "-c", "b = bytearray(1 << 30)"]
    run = zoo.run_limited(py, log, timeout=60, mem_bytes=256 << 20)
    assert run["rc"] == 1 and not run["timed_out"]
    assert zoo.failure_reason(run, log, 0.25, 60).startswith("out of memory (cap 0.25 GiB")


def test_sweep(tmp_path):
    if not EXPORT_PY.exists():
        pytest.skip(f"{EXPORT_PY} not found: scripts/setup.sh makes .venv-export")
    tools = {t: tool(t) for t in ("comet-opt", "comet-train")}
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), PYTHONWARNINGS="ignore",
               COMET_OPT=tools["comet-opt"], COMET_TRAIN=tools["comet-train"])
    doc = tmp_path / "models.md"
    p = subprocess.run([str(EXPORT_PY), "-m", "comet.zoo", "--out", str(tmp_path / "zoo"),
                        "--only", "shufflenet_v2_x0_5,mobilenet_v3_small,mnasnet0_5",
                        "--docs", str(doc)], capture_output=True, text=True, env=env,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "2 of 3 train" in p.stdout
    res = json.loads((tmp_path / "zoo" / "zoo.json").read_text())
    r = res["models"]["shufflenet_v2_x0_5"]
    # The 1-channel stem: test_torch_models' count for the same model.
    assert (r["size"], r["params"], r["opset"]) == (28, 351610, 17)
    assert r["exported"] and r["imports"] and r["trains"] and len(r["losses"]) == 3
    assert r["ops"] == sum(r["op_types"].values()) > 100
    assert r["op_types"]["com.microsoft::ConvGrad"] == r["op_types"]["ai.onnx::Conv"]
    # The artifacts are deleted (--keep keeps them), the logs stay.
    folder = tmp_path / "zoo" / "shufflenet_v2_x0_5"
    assert not (folder / "checkpoint").exists() and (folder / "train.log").exists()
    text = doc.read_text()
    assert f"| shufflenet_v2_x0_5 | 28x28 | 0.4 M | {r['ops']} | yes | yes |  |" in text
    m = res["models"]["mobilenet_v3_small"]
    assert (m["stage"], m["exported"]) == ("artifacts", False)
    assert "HardSwish" in m["reason"], m["reason"]
    assert "**2 of 3 models train (66.7%)**" in text
    # MNASNet checks its state dict's version on load: the export restores
    # the module's state with the versions kept.
    assert res["models"]["mnasnet0_5"]["trains"], res["models"]["mnasnet0_5"].get("reason")

    # A stage past its limit: a row saying so, not the end of the sweep.
    p = subprocess.run([str(EXPORT_PY), "-m", "comet.zoo", "--out", str(tmp_path / "zoo2"),
                        "--only", "squeezenet1_1", "--timeout-export", "1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads((tmp_path / "zoo2" / "zoo.json").read_text())["models"]["squeezenet1_1"]
    assert (r["stage"], r["reason"], r["exported"]) == ("export", "timeout (1 s)", False)

    # --redo sweeps the named models again and keeps the others' rows; the
    # command recorded is the one that gives the results in one run.
    stale = dict(r, reason="stale")
    kept = {"model": "resnet18", "exported": True, "imports": True, "trains": True}
    (tmp_path / "zoo2" / "zoo.json").write_text(json.dumps(
        {"meta": {}, "models": {"squeezenet1_1": stale, "resnet18": kept}}))
    p = subprocess.run([str(EXPORT_PY), "-m", "comet.zoo", "--out", str(tmp_path / "zoo2"),
                        "--only", "squeezenet1_1,resnet18", "--redo", "squeezenet1_1",
                        "--timeout-export", "1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads((tmp_path / "zoo2" / "zoo.json").read_text())
    assert res["models"]["squeezenet1_1"]["reason"] == "timeout (1 s)"
    assert res["models"]["resnet18"] == kept
    first = ("python -m comet.zoo --out " + str(tmp_path / "zoo2") +
             " --only squeezenet1_1,resnet18 --timeout-export 1")
    assert res["meta"]["command"] == first
    # A redo with another option: the first command stays the table's, the
    # redo is named beside it and its row keeps its own cap.
    p = subprocess.run([str(EXPORT_PY), "-m", "comet.zoo", "--out", str(tmp_path / "zoo2"),
                        "--only", "squeezenet1_1,resnet18", "--redo", "squeezenet1_1",
                        "--timeout-export", "1", "--mem-gib", "9"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads((tmp_path / "zoo2" / "zoo.json").read_text())
    assert res["meta"]["command"] == first
    assert res["meta"]["reruns"] == [{
        "command": first.replace("comet.zoo --out", "comet.zoo --redo squeezenet1_1 --out")
        + " --mem-gib 9", "models": ["squeezenet1_1"], "mem_gib": 9.0}]
    assert res["models"]["squeezenet1_1"]["mem_gib"] == 9.0
