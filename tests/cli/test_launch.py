"""The console script's launcher: OpenBLAS on one thread unless the user set it, and nothing left for children."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import os, sys
sys.argv = ["latencymap", "--version"]
{start}
threads = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("Threads:"))
print("PROBE", threads, os.environ.get("OPENBLAS_NUM_THREADS", "-"))
"""
LAUNCH = """
from latencymap.cli.launch import main
try:
    main()
except SystemExit:
    pass
"""


def probe(start: str, **env: str) -> tuple[int, str]:
    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | env
    out = subprocess.run([sys.executable, "-c", PROBE.format(start=start)], capture_output=True, text=True,
                         env=environ, timeout=60, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("PROBE"))
    _, threads, value = line.split()
    return int(threads), value


def test_the_cli_starts_numpy_on_one_thread_and_leaves_the_environment_as_it_was() -> None:
    threads, value = probe(LAUNCH)
    assert threads == 1 and value == "-"
    plain_threads, _ = probe("import numpy")
    assert threads <= plain_threads  # OpenBLAS starts one thread per core when left alone


def test_a_users_setting_wins() -> None:
    _, value = probe(LAUNCH, OPENBLAS_NUM_THREADS="2")
    assert value == "2"
