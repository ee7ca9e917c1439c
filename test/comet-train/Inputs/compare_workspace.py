"""Compares two comet-train reports of the same run, without and with a
workspace limit: the losses, and that each prediction's ConvGrad term
stays within its run's measured workspace."""
import json
import sys

whole, split = (json.load(open(p)) for p in sys.argv[1:3])
lw, ls = whole["loss_history"], split["loss_history"]
print("losses within 1e-5:", len(lw) == len(ls) > 0
      and all(abs(a - b) <= 1e-5 * max(1.0, abs(a)) for a, b in zip(lw, ls)))
print("prediction within the measured workspace:",
      all(0 <= r["predicted_workspace_bytes"] <= r["workspace_peak_bytes"]
          for r in (whole, split)))
