"""python -m comet.bench_api runs both sides and reports them (a short run:
the figures themselves are the benchmark's, not a test's)."""
import json
import os

import pytest
from comet_tools import tool

from comet import bench_api

FMNIST = "/usr/share/datasets/fashion-mnist"


@pytest.mark.skipif(not os.path.isdir(FMNIST), reason="dataset-fashion-mnist not installed")
def test_short_run_prints_the_table_and_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert bench_api.main(["--models", "lenet", "--steps", "3", "--rounds", "2",
                           "--batch", "16", "--comet-train", tool("comet-train"),
                           "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "comet-train ms" in table and "lenet" in table
    (row,) = json.loads(out.read_text())["rows"]
    assert row["model"] == "lenet" and row["compress"] == "static" and row["batch"] == 16
    assert len(row["comet_train_ms_rounds"]) == len(row["api_ms_rounds"]) == 2
    assert row["comet_train_ms"] > 0 and row["api_ms"] > 0
    assert row["partial_batch"] == 7 and row["second_size_first_call_s"] > 0


def test_bad_arguments(tmp_path):
    with pytest.raises(SystemExit):
        bench_api.main(["--batch", "1", "--comet-train", tool("comet-train")])
    with pytest.raises(SystemExit):
        bench_api.main(["--models", str(tmp_path), "--comet-train", tool("comet-train")])
    with pytest.raises(SystemExit):
        bench_api.main(["--comet-train", str(tmp_path / "nothing")])
