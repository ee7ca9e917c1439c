#!/usr/bin/env python3
"""Runs one training command with --device cpu and with --device cuda and
compares the two reports.

  cuda_matches_cpu.py [--rtol 1e-4] [--keep DIR] -- comet-train MODEL [options...]
  cuda_matches_cpu.py -- comet-run STEP.so [options...]
  cuda_matches_cpu.py --compare REFERENCE.json REPORT.json

Both runs get `--device D --report OUT.json`. Passes when the final losses
(every step's, and the test losses when evaluated) agree within rtol
(relative) and the graph tensors' peak (tensor_peak_bytes:
the allocator counts device blocks as it counts host ones) is the same
when nothing is compressed (a stream's size follows the values).
Exits 77 (skipped) only when the CUDA run reports that the machine has no
CUDA device; any other failure of either run fails. --keep DIR keeps the
reports (DIR/cpu.json also when the CUDA run is skipped); --compare checks
two reports of the same step (a reference and a rerun) the same way.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77


def run(cmd, device, out):
    p = subprocess.run(cmd + ["--device", device, "--report", out],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def compare(cpu, gpu, rtol, names=("cpu", "cuda")):
    """Prints the comparison of two reports; True when they match."""
    a_name, b_name = names
    ok = True
    # A compressed step's tensor peak holds its streams, whose sizes follow
    # the values (and on CUDA the fixed-width encoder): equal only when
    # nothing is compressed.
    compressed = any(r.get("compress", "none") != "none" for r in (cpu, gpu))
    for key in ("steps", "tensor_peak_bytes"):
        same = cpu[key] == gpu[key]
        if key == "tensor_peak_bytes" and compressed:
            print("%-18s %s %-14s %s %-14s (compressed: not compared)" %
                  (key, a_name, cpu[key], b_name, gpu[key]))
            continue
        ok &= same
        print("%-18s %s %-14s %s %-14s %s" %
              (key, a_name, cpu[key], b_name, gpu[key], "ok" if same else "DIFFERENT"))
    hist_c, hist_g = cpu.get("loss_history"), gpu.get("loss_history")
    if isinstance(hist_c, list) and isinstance(hist_g, list):
        worst = max((abs(a - b) / max(abs(a), 1e-30)
                     for a, b in zip(hist_c, hist_g)), default=0.0)
        close = len(hist_c) == len(hist_g) and worst <= rtol
        ok &= close
        print("%-18s %d steps, worst rel %.3g %s" %
              ("loss_history", len(hist_c), worst, "ok" if close else "TOO FAR"))
    for key in ("final_loss", "test_loss"):
        a, b = cpu.get(key), gpu.get(key)
        if key == "test_loss" and a is None and b is None:
            continue  # no evaluation was asked for
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            print("%s: %s %r, %s %r" % (key, a_name, a, b_name, b))
            ok = False
            continue
        rel = abs(a - b) / max(abs(a), 1e-30)
        close = rel <= rtol
        ok &= close
        print("%-18s %s %-14.8g %s %-14.8g rel %.3g (rtol %g) %s" %
              (key, a_name, a, b_name, b, rel, rtol, "ok" if close else "TOO FAR"))
    print("peak_bytes         %s %-14s %s %s (workspace %s / %s)" %
          (a_name, cpu["peak_bytes"], b_name, gpu["peak_bytes"],
           cpu["workspace_peak_bytes"], gpu["workspace_peak_bytes"]))
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--keep", metavar="DIR",
                    help="keep the reports as DIR/cpu.json and DIR/cuda.json")
    ap.add_argument("--compare", nargs=2, metavar=("REFERENCE", "REPORT"),
                    help="compare two reports of the same step (no run)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.compare:
        reports = []
        for path in args.compare:
            with open(path) as f:
                reports.append(json.load(f))
        return 0 if compare(*reports, args.rtol, ("reference", "report")) else 1
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command")
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.keep or tmp
        os.makedirs(out_dir, exist_ok=True)
        reports = {}
        for device in ("cpu", "cuda"):
            out = os.path.join(out_dir, device + ".json")
            rc, log = run(cmd, device, out)
            if rc != 0:
                if device == "cuda" and "no CUDA device" in log:
                    print("no CUDA device; skipping\n" + log)
                    return SKIP
                print("--device %s failed (%d):\n%s" % (device, rc, log))
                return 1
            with open(out) as f:
                reports[device] = json.load(f)
    cpu, gpu = reports["cpu"], reports["cuda"]
    ok = compare(cpu, gpu, args.rtol)
    if gpu.get("device") != "cuda":
        print("the CUDA report names device %r" % gpu.get("device"))
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
