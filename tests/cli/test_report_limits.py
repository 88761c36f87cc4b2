"""`report SOURCE` with --count/--duration on a source that stops itself at whole rounds (BPF), on the real kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from process_support import bpf_unavailable

SKIP = bpf_unavailable()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SKIP is not None, reason=SKIP or "")]


def report(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_duration_ends_at_a_whole_reading_so_every_stream_has_the_same_columns() -> None:
    """The flow's own deadline, checked between items, cut the last reading after its first stream: the others lost
    a column, and with --duration 1 were missing from the report."""
    r = report("bpf", "syscall", "--syscalls", "read,write,fsync", "--duration", "1")
    assert r.returncode == 0, r.stderr
    columns = {s["stream"]["label"]: s["columns"] for s in json.loads(r.stdout)["streams"]}
    assert set(columns) == {"syscall read", "syscall write", "syscall fsync"}, columns
    assert len(set(columns.values())) == 1 and min(columns.values()) >= 1, columns


def test_count_ends_a_per_disk_run_that_sees_no_io() -> None:
    """--per-disk has no stream until a disk does I/O: the flow's limit never saw an item and the run never ended."""
    disk = next(p.name for p in sorted(Path("/sys/block").iterdir()) if not p.name.startswith(("loop", "ram")))
    r = report("bpf", "block", "--disk", disk, "--per-disk", "--count", "2", timeout=60)
    assert r.returncode == 0, r.stderr
    assert "tracing block latency" in " ".join(json.loads(r.stdout)["errors"]["messages"])
