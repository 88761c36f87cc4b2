"""The real PyLatencyMap 1.3, installed once into its own folder (never into the venv: its script is `latencymap`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from skips_support import skip_missing

PYLATENCYMAP = "pylatencymap==1.3.0"
#: Where it lives: $LATENCYMAP_PYLATENCYMAP, else the folder bench/bench_pylatencymap.py and .ci/install-system.sh use.
TARGET_ENV = "LATENCYMAP_PYLATENCYMAP"


def pylatencymap_target() -> Path:
    """The folder holding PyLatencyMap 1.3 (`python -m LatencyMap` with it on PYTHONPATH)."""
    explicit = os.environ.get(TARGET_ENV)
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "latencymap-bench" / "pylatencymap-1.3.0"


def need_pylatencymap() -> Path:
    """The PyLatencyMap 1.3 folder, installed there by pip the first time; skips (missing component) if it cannot."""
    target = pylatencymap_target()
    if (target / "LatencyMap.py").is_file():
        return target
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                          "--target", str(target), PYLATENCYMAP], capture_output=True, text=True, timeout=300)
    if pip.returncode != 0 or not (target / "LatencyMap.py").is_file():
        skip_missing("PyLatencyMap 1.3", f"`pip install --no-deps --target {target} {PYLATENCYMAP}` failed here "
                     f"(.ci/install-system.sh installs it): {pip.stderr.strip()[-300:]}")
    return target
