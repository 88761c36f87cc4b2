"""Fault: the bpftrace process dies (SIGKILL) while `latencymap bpf` streams from it.

Chosen behaviour: latencymap stops with exit code 1 (a source failed) and one stderr line naming bpftrace, its
pid, how it ended (`was killed by signal 9 (SIGKILL)`) and how many readings it gave; every interval read before
the kill stays in the recording, which replays and reports as usual. Real bpftrace runs here (root); skipped
only where BPF cannot exist (not root / no CAP_BPF, kernel without BTF).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from process_support import bpf_unavailable, children_named

from latencymap.plugins import process_end
from latencymap.sources.bpf import preconditions

SKIP = bpf_unavailable()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SKIP is not None, reason=SKIP or "")]


def records(path: Path) -> int:
    return path.read_text().count("<end record>") if path.exists() else 0


def test_process_end_says_code_or_signal() -> None:
    assert process_end(3) == "exited with code 3"
    assert process_end(-9) == "was killed by signal 9 (SIGKILL)"
    assert process_end(-200) == "was killed by signal 200"


@pytest.mark.timeout(120)
def test_bpftrace_killed_mid_stream_keeps_the_intervals_and_says_how_it_died(tmp_path: Path) -> None:
    assert preconditions.bpftrace_problem() is None, preconditions.bpftrace_problem()
    rec = tmp_path / "bpf.txt"
    view = subprocess.Popen([sys.executable, "-m", "latencymap", "bpf", "block", "--backend", "bpftrace",
                             "--interval", "0.2", "--plain", "--record", str(rec)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while records(rec) < 3:
            assert view.poll() is None, view.stderr.read() if view.stderr else ""
            assert time.monotonic() < deadline, "no intervals from bpftrace within 60 s"
            time.sleep(0.05)
        (bpftrace,) = children_named(view.pid, "bpftrace")
        before = records(rec)
        os.kill(bpftrace, signal.SIGKILL)
        rc = view.wait(timeout=30)
        stderr = view.stderr.read() if view.stderr else ""
    finally:
        if view.poll() is None:
            view.kill()
            view.wait()
    assert rc == 1, stderr
    assert f"latencymap: bpftrace (pid {bpftrace}) was killed by signal 9 (SIGKILL) after " in stderr, stderr
    assert "Traceback" not in stderr
    assert children_named(view.pid, "bpftrace") == []
    text = rec.read_text()
    assert text.endswith("<end record>\n") and records(rec) >= before
    report = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(rec)],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    (stream,) = json.loads(report.stdout)["streams"]
    assert stream["columns"] == records(rec) and stream["stream"]["label"].startswith("block I/O")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["bcc", "bpftrace"])
def test_sigterm_finishes_the_bpf_recording(tmp_path: Path, backend: str) -> None:
    """SIGTERM to `latencymap bpf ... --record x.zst`: exit 143 and a recording whose every zstd frame is finished
    (its reading thread, blocked in the backend, never ends it itself), read back whole."""
    import zstandard

    rec = tmp_path / "bpf.zst"
    view = subprocess.Popen([sys.executable, "-m", "latencymap", "bpf", "syscall", "--backend", backend,
                             "--syscalls", "clock_nanosleep", "--interval", "0.2", "--plain", "--record", str(rec)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not rec.exists() or b"<end record>" not in zstandard.ZstdDecompressor().stream_reader(
                rec.read_bytes(), read_across_frames=True).read():
            assert view.poll() is None, view.stderr.read() if view.stderr else ""
            assert time.monotonic() < deadline, f"no interval from {backend} within 60 s"
            time.sleep(0.1)
        time.sleep(0.5)
        view.send_signal(signal.SIGTERM)
        rc = view.wait(timeout=30)
    finally:
        if view.poll() is None:
            view.kill()
            view.wait()
    assert rc == 143, view.stderr.read() if view.stderr else ""
    raw, text = rec.read_bytes(), ""
    while raw:
        frame = zstandard.ZstdDecompressor().decompressobj()
        text += frame.decompress(raw).decode()
        assert frame.eof, "a zstd frame is unfinished (zstd -t: premature end)"
        raw = frame.unused_data
    report = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(rec)],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    (stream,) = json.loads(report.stdout)["streams"]
    assert stream["columns"] == text.count("<end record>") >= 2
