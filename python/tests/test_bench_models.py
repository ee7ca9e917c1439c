"""python -m comet.bench_models: a short real run on the checked-in cnn
artifact folder must give the tables, the per-kind ratios (op types read
from its training graph) and the goals, each figure from the run's own
reports (docs/benchmarks.md, "Exported models at batch 128")."""
import json
import os

import pytest
from comet_tools import ROOT, tool

from comet import bench_models

CNN = os.path.join(ROOT, "test", "fixtures", "models", "cnn")


def test_producers_name_the_saved_values_ops():
    made_by = bench_models.producers("cnn")
    # Single-result nodes are named by the node, several results NAME:i,
    # as the liveness analysis names saved values.
    assert made_by["/features/features.0/Conv"] == "Conv"
    assert made_by["/classifier/classifier.1/Dropout:1"] == "Dropout"
    assert made_by[
        "/features/features.1/BatchNormalization_BatchNormInternal:0"] == \
        "BatchNormInternal"


def test_short_run_tables_and_json(tmp_path, capsys):
    js = tmp_path / "m.json"
    argv = ["--comet-train", tool("comet-train"), "--models", CNN,
            "--configs", "static", "--seeds", "1", "2", "--max-steps", "4",
            "--batch", "32", "--eval-samples", "64", "--threads", "1",
            "--out-dir", str(tmp_path / "out"), "--json", str(js)]
    assert bench_models.main(argv) == 0
    out = capsys.readouterr()
    assert "[4/4]" in out.err  # progress: (none, static) x 2 seeds
    assert "| cnn | static |" in out.out and "Conv/sz" in out.out
    res = json.loads(js.read_text())
    rows = {r["config"]: r for r in res["rows"]}
    assert set(rows) == {"none", "static"}
    none, st = rows["none"], rows["static"]
    assert none["activation_ratio"] == pytest.approx(1.0)
    assert none["accuracy_change_pp"] is None
    assert st["seeds"] == [1, 2] and st["steps"] == 4
    # Compressing stores fewer activation bytes and lowers the peak.
    assert st["activation_bytes_compressed"] < \
        st["activation_bytes_uncompressed"]
    assert st["peak_reduction"] > 1
    # Wall and CPU step times, each against the uncompressed run's.
    assert st["step_cpu_ms"] > 0 and none["step_cpu_vs_none"] == 1
    assert st["step_cpu_vs_none"] == pytest.approx(
        st["step_cpu_ms"] / none["step_cpu_ms"])
    # Per kind: the bytes of the kinds add up to the run's activations.
    kinds = st["per_kind"]
    assert {"Conv/sz", "Dropout/mask"} <= set(kinds)
    total_in = sum(k["bytes_uncompressed"] for k in kinds.values())
    assert total_in == pytest.approx(2 * st["activation_bytes_uncompressed"])
    for k in kinds.values():
        assert k["ratio"] == pytest.approx(
            k["bytes_uncompressed"] / k["bytes_compressed"])
    # The paired change comes from the runs of the same seeds.
    runs = {(r["config"], r["seed"]): r for r in res["runs"]}
    diffs = [100 * (runs["static", s]["test_accuracy"]
                    - runs["none", s]["test_accuracy"]) for s in (1, 2)]
    assert st["accuracy_change_pp"]["diffs"] == pytest.approx(diffs)
    # 4 steps and 2 seeds say nothing about accuracy: no accuracy goal.
    assert not any("accuracy" in g["goal"] for g in res["goals"])
    rows["static"]["seeds"] = [1, 2, 3]
    assert any("cnn static: accuracy change" in g
               for g, _ in bench_models.goals(list(rows.values())))


def test_missing_model_is_an_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        bench_models.main(["--models", str(tmp_path / "nope"),
                           "--out-dir", str(tmp_path)])
    assert e.value.code == 2
    assert "no training graph for model" in capsys.readouterr().err



def test_runs_without_evaluation_have_no_accuracy(tmp_path):
    # comet-train --eval-samples -1 reports test_accuracy null: the table
    # shows no accuracy and no paired change, rather than crashing or 0%.
    assert bench_models.pct(None) == "-" and bench_models.pct(0.5) == "50.00%"
    runs = []
    for c, out in (("none", 800), ("static", 200)):
        rep = tmp_path / f"{c}.json"
        rep.write_text(json.dumps({"tensor_peak_bytes": 900, "slots": [
            {"value": "/features/features.0/Conv", "codec": "sz",
             "bytes_uncompressed": 800, "bytes_compressed": out}]}))
        runs.append({"model": "cnn", "config": c, "seed": 1, "steps": 2,
                     "test_accuracy": None, "peak_bytes": 1000 + out,
                     "report": str(rep), "step_time_ms_median": 2.0,
                     "activation_bytes_uncompressed": 800,
                     "activation_bytes_compressed": out,
                     "compression_ratio": 800 / out})
    rows = {r["config"]: r for r in bench_models.summarise(
        runs, [], ["cnn"], ["none", "static"])}
    st = rows["static"]
    assert st["accuracy_pct_mean"] is None and st["accuracy_change_pp"] is None
    assert st["per_kind"]["Conv/sz"]["ratio"] == pytest.approx(4.0)
    assert st["peak_reduction"] == pytest.approx(1800 / 1200)
    assert st["step_cpu_ms"] is None  # older reports: no CPU time
    assert "| cnn | static |" in bench_models.table(list(rows.values()))
