"""`latencymap report --fail-if` over an input of which no record could be read: the gate says it had no stream."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1"})


GATE_LINE = "latencymap: gate failed: 'p99 > 1s': no stream to check (no data)"


def test_a_gate_over_an_unreadable_input_says_it_had_no_stream_to_check(tmp_path: Path) -> None:
    # The run failed for the unreadable input (exit 1) without the gate's line, which an empty input gets.
    bad = tmp_path / "bad.txt"
    bad.write_text("<begin record>\ntimestamp, microsec, 1700000000000000, t\nlatencyunit, microsec\nlabel, io\n"
                   "1, x\n<end record>\n")
    done = run("report", "--fail-if", "p99 > 1s", str(bad))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == GATE_LINE
    assert lines[1].startswith(f"latencymap: {bad}: no record could be read (1 skipped)")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    done = run("report", "--fail-if", "p99 > 1s", str(empty))
    assert done.returncode == 1 and done.stderr.splitlines() == [GATE_LINE]


def test_a_gate_over_a_readable_input_beside_an_unreadable_one_checks_its_streams(tmp_path: Path,
                                                                                   example_data: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("<begin record>\nlabel, io\n1, x\n<end record>\n")
    done = run("report", "--fail-if", "p99 > 1ms", "--fail-if", "p99 > 100s", str(example_data), str(bad))
    assert done.returncode == 1
    assert "gate failed: 'p99 > 1ms'" in done.stderr and "'p99 > 100s'" not in done.stderr
    assert "no record could be read" in done.stderr.splitlines()[-1]
