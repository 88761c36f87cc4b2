"""Faults in a live source or an input, one test each: data read before the fault is intact, the message is specific.

Chosen behaviour:
- a source that raises mid-stream: exit code 1 and one stderr line `latencymap: <source>: the source failed:
  <ExceptionType>: <message> (at <file>:<line>)`, no traceback; the intervals before it stay in the view and the
  recording. In the TUI the same line comes after the terminal is restored.
- EOF in the middle of a record (the producer died): the end of input is a normal end, exit code 0; the torn record
  is skipped with `record has no <end record> (input ended)`, every complete record before it is kept; with
  `--strict` the torn record is fatal: exit code 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from skips_support import requires_binary

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import latencymap.cli.main as cli
    from latencymap.core.buckets import NSLOTS
    from latencymap.core.model import Interval, StreamId
    from latencymap.plugins import Source

    class Boom(Source):
        name = "boom"
        summary = "three intervals, then an exception"

        def items(self):
            stream = StreamId("boom", "bpf", "microsec")
            for k in range(3):
                counts = np.zeros(NSLOTS, dtype=np.int64)
                counts[5] = k + 1
                yield Interval(stream, 1.7e9 + k, 1.7e9 + k + 1, counts)
            raise RuntimeError("disk on fire")

    cli.main.add_command(cli.source_command(Boom))
    cli.main(sys.argv[1:], prog_name="latencymap")
""")


def record(k: int, count: int) -> str:
    return (f"<begin record>\ntimestamp, microsec, {(k + 1) * 1_000_000}, t{k}\nlabel, torn\ndatasource, bpf\n"
            f"latencyunit, microsec\n8, {count}\n<end record>\n")


def report(path: Path) -> dict:
    r = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_source_raising_mid_stream_keeps_its_intervals_and_exits_1(tmp_path: Path) -> None:
    child, rec = tmp_path / "child.py", tmp_path / "rec.txt"
    child.write_text(CHILD)
    r = subprocess.run([sys.executable, str(child), "boom", "--plain", "--record", str(rec)], capture_output=True,
                       text=True, timeout=60)
    lines = child.read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "raise RuntimeError" in text)
    assert r.returncode == 1, r.stderr
    assert f"latencymap: boom: the source failed: RuntimeError: disk on fire (at child.py:{line})" in r.stderr
    assert "Traceback" not in r.stderr
    assert "Frequency" in r.stdout  # the frames of the intervals before the failure were drawn
    (stream,) = report(rec)["streams"]
    assert stream["columns"] == 3 and stream["total"]["events"] == 6


def test_eof_in_the_middle_of_a_record_keeps_every_complete_record(tmp_path: Path) -> None:
    torn = "".join(record(k, 10 * k) for k in range(4)) + "<begin record>\ntimestamp, microsec, 9000000, t\n8, 9"
    rec = tmp_path / "rec.txt"
    r = subprocess.run([sys.executable, "-m", "latencymap", "--plain", "--once", "--record", str(rec)], input=torn,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "<stdin>: line 29: record has no <end record> (input ended); record skipped" in r.stderr
    (stream,) = report(rec)["streams"]
    assert stream["columns"] == 3 and stream["total"]["events"] == 30
    strict = subprocess.run([sys.executable, "-m", "latencymap", "report", "--strict"], input=torn,
                            capture_output=True, text=True, timeout=60)
    assert strict.returncode == 2 and "record has no <end record> (input ended)" in strict.stderr


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
def test_a_source_raising_under_the_tui_restores_the_terminal_then_says_why(tmp_path: Path) -> None:
    child = tmp_path / "child.py"
    child.write_text(CHILD.replace("raise RuntimeError", "import time; time.sleep(2); raise RuntimeError"))
    name = f"lmfault-{tmp_path.name[-12:]}"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "140", "-y", "40",
                    f"{sys.executable} {child} boom; echo EXIT=$?; sleep 30"], check=True)
    try:
        deadline = time.monotonic() + 40
        screen = ""
        while "EXIT=" not in screen and time.monotonic() < deadline:
            time.sleep(0.2)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True,
                                    check=True).stdout
        alternate = subprocess.run(["tmux", "display", "-p", "-t", name, "#{alternate_on}"], capture_output=True,
                                   text=True, check=True).stdout.strip()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert "EXIT=1" in screen, screen
    assert "latencymap: boom: the source failed: RuntimeError: disk on fire" in screen
    assert "Traceback" not in screen and alternate == "0"
