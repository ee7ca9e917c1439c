"""Where the tests find COMET's built executables (one place for all)."""
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {"comet-train": "COMET_TRAIN", "comet-opt": "COMET_OPT"}


def tool(name: str) -> str:
    """$COMET_TRAIN / $COMET_OPT, $COMET_BUILD_DIR/bin, PATH, then build/bin;
    skips the test if none exists."""
    env = ENV[name]
    candidates = [os.environ.get(env)]
    if os.environ.get("COMET_BUILD_DIR"):
        candidates.append(os.path.join(os.environ["COMET_BUILD_DIR"], "bin", name))
    candidates += [shutil.which(name), str(ROOT / "build" / "bin" / name)]
    for path in candidates:
        if path and os.path.exists(path):
            return path
    pytest.skip(f"{name} not built (set {env} or COMET_BUILD_DIR)")
