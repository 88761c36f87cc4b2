"""What the bench scripts share: the machine their figures come from."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path


def machine() -> str:
    """CPU model, cores, RAM and Python version, for the figures' context."""
    model = "unknown CPU"
    mem_gib = 0.0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = int(line.split()[1]) / 1024**2
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{model}, {os.cpu_count()} cores, {mem_gib:.0f} GiB RAM, Python {platform.python_version()} "
            f"({sys.executable}); load average {load:.1f} at start")

