"""The extension comet._comet (python/src/comet_ext.cpp), wherever it was built.

`pip install ./python` puts it into the package itself. The editable install
that scripts/setup.sh makes in .venv and .venv-export leaves it where the
project's build wrote it, $COMET_BUILD_DIR/python/comet (default: build/ in
the source tree), next to the libraries it links; that folder is appended to
the package's path, so that `import comet._comet` finds it there.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path

import comet

_SOURCE_ROOT = Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    return Path(os.environ.get("COMET_BUILD_DIR") or _SOURCE_ROOT / "build")


def load():
    """comet._comet, or ImportError saying how to build it."""
    try:
        return importlib.import_module("comet._comet")
    except ModuleNotFoundError as e:
        if e.name != "comet._comet":
            raise
    where = build_dir() / "python" / "comet"
    if where.is_dir() and str(where) not in comet.__path__:
        comet.__path__.append(str(where))
        try:
            return importlib.import_module("comet._comet")
        except ModuleNotFoundError as e:
            if e.name != "comet._comet":
                raise
    raise ImportError(
        "comet._comet (COMET's engine for comet.training.api) is not built: "
        f"it is neither in the package nor in {where}. Build COMET with "
        "scripts/build.sh (COMET_BUILD_DIR names another build folder), or "
        "install the package with `pip install ./python` against a built "
        "COMET (docs/python.md)")
