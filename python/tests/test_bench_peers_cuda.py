"""comet.bench_peers_cuda's host side, without a GPU: the goals it judges,
its refusals, and how it drives comet-run (a stand-in that records its
arguments and writes a report)."""
import json
import stat
import sys

import pytest

from comet import bench_peers_cuda as b

MIB = 1 << 20


def run(peak_mib, ms):
    return {"peak_bytes": peak_mib * MIB, "step_ms_median": ms}


def test_judge_ratios_and_goals():
    rows = {"pytorch-eager": run(5000, 40.0),
            "pytorch-checkpoint": run(4000, 50.0),
            "comet-none": run(3000, 42.0),
            "comet-static": run(1500, 44.0)}
    goals = b.judge(rows)
    s = rows["comet-static"]
    assert s["peak_x_eager"] == pytest.approx(0.3)
    assert s["peak_x_checkpoint"] == pytest.approx(0.375)
    assert s["time_x_none"] == pytest.approx(44 / 42)
    assert goals["static peak below checkpointing's"][0]
    # 4 ms over eager against checkpointing's 10: under half.
    assert goals["static: time overhead < half checkpointing's"][0]
    assert goals["static step <= 1.05x none"][0]
    # Slower than 1.05x none, and over half checkpointing's overhead.
    rows["comet-static"] = run(1500, 46.0)
    goals = b.judge(rows)
    assert not goals["static: time overhead < half checkpointing's"][0]
    assert not goals["static step <= 1.05x none"][0]
    # A failed run judges nothing that needs it.
    rows["pytorch-checkpoint"] = {"error": "out of memory"}
    rows["comet-static"] = run(1500, 46.0)
    assert b.judge(rows) == {}
    assert "peak_x_checkpoint" not in rows["comet-static"]


def test_tf32_runs_are_judged_against_their_own_none():
    rows = {"pytorch-eager": run(5000, 40.0),
            "pytorch-checkpoint": run(4000, 50.0),
            "comet-none": run(3000, 100.0),
            "comet-static": run(1500, 110.0),
            "comet-none-tf32": run(3000, 50.0),
            "comet-static-tf32": run(1500, 52.0)}
    goals = b.judge(rows)
    assert rows["comet-static-tf32"]["time_x_none"] == pytest.approx(52 / 50)
    assert goals["static (TF32 conv) step <= 1.05x none"][0]
    assert not goals["static step <= 1.05x none"][0]


def test_refusals(tmp_path, capsys):
    with pytest.raises(SystemExit):
        b.main(["--peers", str(tmp_path), "--json", str(tmp_path / "o.json")])
    assert "peers.json" in capsys.readouterr().err
    (tmp_path / "peers.json").write_text("[]")
    with pytest.raises(SystemExit):
        b.main(["--peers", str(tmp_path), "--runs", "comet-fast",
                "--json", str(tmp_path / "o.json")])
    assert "unknown runs ['comet-fast']" in capsys.readouterr().err


FAKE = """#!{python}
import json, os, sys
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps({{"args": args,
                        "tf32": os.environ.get("COMET_RT_CUDA_CONV_TF32"),
                        "profile": os.environ.get("COMET_RT_PROFILE")}}) + "\\n")
if "fail" in args[0]:
    sys.stderr.write("comet-run: error: no CUDA device\\n")
    sys.exit(1)
report = args[args.index("--report") + 1]
json.dump({{"peak_bytes": 100 * 2**20, "predicted_peak_bytes": 99 * 2**20,
           "step_time_ms_median": 20.0, "loss_history": [2.3, 2.2],
           "activation_bytes_uncompressed": 10, "activation_bytes_compressed": 5}},
          open(report, "w"))
"""


OPT = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-6,
       "weight_decay": 0.0}


def fake_comet_run(tmp_path):
    log = tmp_path / "calls.jsonl"
    fake = tmp_path / "comet-run"
    fake.write_text(FAKE.format(python=sys.executable, log=str(log)))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return fake, log


def test_drives_comet_run_and_records_failures(tmp_path):
    fake, log = fake_comet_run(tmp_path)
    peers = tmp_path / "peers"
    peers.mkdir()
    work = [{"name": "img", "model": "resnet18", "batch": 4, "image_size": 32,
             "optimizer": OPT,
             "steps": {"comet-none": "img-none.so",
                       "comet-static": "img-fail.so"}},
            {"name": "tok", "model": "gpt", "batch": 2, "seq_len": 16,
             "model_args": "seq_len=16", "optimizer": OPT,
             "steps": {"comet-none": "tok-none.so",
                       "comet-static": "tok-static.so"}}]
    (peers / "peers.json").write_text(json.dumps(work))
    out = tmp_path / "r.json"
    rc = b.main(["--peers", str(peers), "--comet-run", str(fake),
                 "--runs", "comet-none,comet-static,comet-none-tf32",
                 "--steps", "2", "--warmup", "1", "--json", str(out)])
    assert rc == 1  # img's static step failed
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    # The image workload's three runs (TF32 with its variable), the token
    # workload's two (no convolutions: no TF32 run).
    assert [(c["args"][0].rsplit("/", 1)[1], c["tf32"]) for c in calls] == [
        ("img-none.so", None), ("img-fail.so", None), ("img-none.so", "1"),
        ("tok-none.so", None), ("tok-static.so", None)]
    a = calls[0]["args"]
    assert a[a.index("--device") + 1] == "cuda"
    assert a[a.index("--synthetic-shape") + 1] == "1x32x32"
    assert a[a.index("--max-steps") + 1] == "3"
    assert "--synthetic-shape" not in calls[3]["args"]
    res = json.loads(out.read_text())["results"]
    assert "no CUDA device" in res["img"]["runs"]["comet-static"]["error"]
    tok = res["tok"]["runs"]
    assert tok["comet-static"]["peak_bytes"] == 100 * 2**20
    assert tok["comet-static"]["time_x_none"] == 1.0


def test_profile_dir_names_each_runs_table(tmp_path, monkeypatch):
    fake, log = fake_comet_run(tmp_path)
    peers = tmp_path / "peers"
    peers.mkdir()
    (peers / "peers.json").write_text(json.dumps([
        {"name": "img", "model": "resnet18", "batch": 2, "image_size": 8,
         "optimizer": OPT, "steps": {"comet-none": "n.so",
                                     "comet-static": "s.so"}}]))
    # A profile asked for in the environment is not inherited by the runs.
    monkeypatch.setenv("COMET_RT_PROFILE", "-")
    prof = tmp_path / "prof"
    prof.mkdir()
    (prof / "profile-img-comet-none.txt").write_text("an old table")
    assert b.main(["--peers", str(peers), "--comet-run", str(fake),
                   "--runs", "comet-none,comet-static",
                   "--json", str(tmp_path / "r.json")]) == 0
    assert [json.loads(x)["profile"] for x in log.read_text().splitlines()] \
        == [None, None]
    log.unlink()
    assert b.main(["--peers", str(peers), "--comet-run", str(fake),
                   "--runs", "comet-none,comet-static", "--profile-dir",
                   str(prof), "--json", str(tmp_path / "r.json")]) == 0
    got = [json.loads(x)["profile"] for x in log.read_text().splitlines()]
    assert got == [str(prof / "profile-img-comet-none.txt"),
                   str(prof / "profile-img-comet-static.txt")]
    # The runtime appends: an old table is removed first.
    assert not (prof / "profile-img-comet-none.txt").exists()
