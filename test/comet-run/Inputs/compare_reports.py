"""Checks that comet-run's report equals comet-train's on every figure that
does not depend on time: the losses bit for bit, the memory the allocator
measured, the prediction, the activation bytes and the evaluations.

usage: compare_reports.py [--ignore KEY,...] TRAIN.json RUN.json
Prints one line per compared key (the KEYs left out); exits 1 at the first
difference.
"""
import json
import sys

EXACT = [
    "compress", "optimizer", "optimizer_fused", "learning_rate", "artifacts", "data", "epochs",
    "batch", "steps",
    "final_loss", "loss_history", "test_accuracy", "test_loss",
    "eval_history",
    "peak_bytes", "tensor_peak_bytes", "predicted_peak_bytes",
    "workspace_peak_bytes", "dataset_bytes",
    "activation_bytes_uncompressed", "activation_bytes_compressed",
    "compression_ratio", "categories", "memory_timeline",
    "predicted_timeline",
]
SLOT_KEYS = ["site", "value", "codec", "slot", "bytes_uncompressed",
             "bytes_compressed", "ratio", "eb_history"]


def main():
    args = sys.argv[1:]
    ignore = []
    if args[0] == "--ignore":
        ignore, args = args[1].split(","), args[2:]
    with open(args[0]) as f:
        train = json.load(f)
    with open(args[1]) as f:
        run = json.load(f)
    if train["steps"] <= 0:
        print("FAIL: comet-train ran no step")
        return 1
    for key in EXACT:
        if key in ignore:
            continue
        if train[key] != run[key]:
            print(f"FAIL: {key}: comet-train {train[key]!r} "
                  f"comet-run {run[key]!r}")
            return 1
        if key == "eval_history":
            steps = [e["step"] for e in train[key]]
            print(f"same {key} (steps {steps})")
        else:
            print(f"same {key}")
    if len(train["slots"]) != len(run["slots"]):
        print("FAIL: the number of slots differs")
        return 1
    for a, b in zip(train["slots"], run["slots"]):
        for key in SLOT_KEYS:
            if a[key] != b[key]:
                print(f"FAIL: slot {a['site']} {key}: {a[key]!r} != {b[key]!r}")
                return 1
    print(f"same slots ({len(train['slots'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
