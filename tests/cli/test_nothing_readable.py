"""An input of which no record could be read is a failure (exit 1, 2 under --strict), said with its first error;
records run together on one line are both read; the skipped count is the number of records lost."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from field_support import EXAMPLE
from skips_support import requires_binary

from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, Notice
from latencymap.protocol import ProtocolReader


def semicolons(records: int = 4) -> str:
    """A connector that wrote `value; count` rows (a spreadsheet's CSV export): no record is readable."""
    out = []
    for k in range(records):
        rows = "".join(f"{1 << i}; {10 * k + i}\n" for i in range(6))
        out.append(f"<begin record>\ntimestamp, microsec, {1_700_000_000_000_000 + k * 1_000_000}, t{k}\n"
                   f"label, io\nlatencyunit, microsec\n{rows}<end record>\n")
    return "".join(out)


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], input=stdin, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "NO_COLOR": "1"})


@pytest.fixture
def unreadable(tmp_path: Path) -> Path:
    path = tmp_path / "semicolons.txt"
    path.write_text(semicolons())
    return path


def test_report_of_an_unreadable_input_fails_with_its_first_error(unreadable: Path) -> None:
    r = run("report", str(unreadable))
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"latencymap: {unreadable}: no record could be read (4 skipped)")
    assert "line 5" in last and "'1; 0'" in last
    assert "Skipped records: 4" in r.stdout  # the report itself still says what happened
    doc = run("report", "--format", "json", str(unreadable))
    assert doc.returncode == 1 and json.loads(doc.stdout)["errors"]["skipped_records"] == 4


def test_plain_view_and_stdin_fail_too_and_strict_gives_2(unreadable: Path) -> None:
    plain = run("--plain", "--once", str(unreadable))
    assert plain.returncode == 1 and "no record could be read (4 skipped)" in plain.stderr
    piped = run("--plain", "--once", stdin=unreadable.read_text())
    assert piped.returncode == 1 and "<stdin>: no record could be read" in piped.stderr
    strict = run("report", "--strict", str(unreadable))
    assert strict.returncode == 2 and "line 5" in strict.stderr


def test_a_readable_input_beside_an_unreadable_one_is_reported_and_the_run_fails(unreadable: Path) -> None:
    r = run("report", "--format", "json", str(unreadable), str(EXAMPLE))
    assert r.returncode == 1
    (stream,) = json.loads(r.stdout)["streams"]
    assert stream["columns"] == 71
    assert f"{unreadable}: no record could be read" in r.stderr
    assert f"{EXAMPLE}: no record could be read" not in r.stderr


def test_one_good_record_is_not_a_failure(tmp_path: Path) -> None:
    """A baseline alone makes no column, but it was read: no data yet is not an error, and the report says which
    stream was read and why it has no column (it said only "No data.")."""
    path = tmp_path / "one.txt"
    path.write_text(EXAMPLE.read_text().split("<end record>")[0] + "<end record>\n")
    r = run("report", str(path))
    assert r.returncode == 0
    assert r.stdout.startswith("No data.\nNotes:\n")
    assert (f"\n   {path}: 'db file sequential read latency data from gv$event_histogram': 1 record, the baseline of "
            "cumulative counters; a column needs a second record\n") in r.stdout
    doc = json.loads(run("report", "--format", "json", str(path)).stdout)
    assert doc["streams"] == [] and doc["errors"]["skipped_records"] == 0
    assert any("1 record, the baseline" in m for m in doc["errors"]["messages"])


def run_together(text: str) -> str:
    """Every record's end joined to the next record's begin on one line, as a writer that lost a newline prints."""
    return text.replace("<end record>\n<begin record>", "<end record><begin record>")


def test_records_run_together_on_one_line_are_both_read(tmp_path: Path) -> None:
    records = "".join(f"<begin record>\ntimestamp, microsec, {k + 1}000000, t\nlabel, x\n1, {k}\n2, {2 * k}\n"
                      "<end record>\n" for k in range(6))
    text = run_together(records)
    assert text.count("\n") == records.count("\n") - 5
    for items in (Differ().run(ProtocolReader("t").read(text.splitlines(True))),
                  Differ().run(ProtocolReader("t").read_chunks([text[:50], text[50:]], runs=True))):
        got = list(items)
        assert [type(i) for i in got] == [Interval] * 5
        assert [int(i.counts[1:3].sum()) for i in got] == [3] * 5
    path = tmp_path / "joined.txt"
    noise = "\n\n31 rows selected.\n\n\nPL/SQL procedure successfully completed.\n\n"
    joined = run_together(EXAMPLE.read_text().replace(noise, "\n"))
    assert joined.count("<end record><begin record>") == 71
    path.write_text(joined)
    doc = json.loads(run("report", "--format", "json", str(path)).stdout)
    assert doc["streams"][0]["columns"] == 71 and doc["errors"]["skipped_records"] == 0


def test_a_bad_record_run_together_with_a_good_one_costs_one_skip() -> None:
    good = "<begin record>\ntimestamp, microsec, {t}, t\nlabel, x\n1, {c}\n<end record>\n"
    bad = "<begin record>\ntimestamp, microsec, {t}, t\nlabel, x\n1; {c}\n<end record>\n"
    text = run_together(good.format(t=1_000_000, c=1) + bad.format(t=2_000_000, c=2) + good.format(t=3_000_000, c=3)
                        + good.format(t=4_000_000, c=4))
    for items in (ProtocolReader("t").read(text.splitlines(True)), ProtocolReader("t").read_chunks([text])):
        got = list(items)
        assert sum(i.skipped for i in got if isinstance(i, Notice)) == 1
        assert len([i for i in got if not isinstance(i, Notice)]) == 3


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
def test_the_tui_says_so_and_exits_1(unreadable: Path) -> None:
    name = f"lmtest-{uuid.uuid4().hex[:8]}"
    command = f"{shlex.quote(sys.executable)} -m latencymap {shlex.quote(str(unreadable))}; echo EXIT=$?; sleep 30"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "160", "-y", "50", command], check=True)
    try:
        deadline, screen = time.monotonic() + 30, ""
        while time.monotonic() < deadline and "EXIT=" not in screen:
            time.sleep(0.2)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True,
                                    check=True).stdout
        assert "EXIT=1" in screen, screen
        assert "no record could be read (4 skipped)" in screen.replace("\n", "")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def test_a_compressed_input_cut_before_its_first_record_is_said_once(tmp_path: Path) -> None:
    import zstandard

    whole = zstandard.ZstdCompressor().compress(semicolons().encode())
    cut = tmp_path / "cut.zst"
    cut.write_bytes(whole[: len(whole) // 2])
    for args in (["--plain", "--once", str(cut)], ["replay", "--max", "--plain", "--once", str(cut)]):
        done = run(*args)
        assert done.returncode == 1
        assert done.stderr.count("nothing could be decompressed") == 1, done.stderr  # the note, not the error again
    report = run("report", str(cut))
    assert report.returncode == 1 and "nothing could be decompressed" in report.stdout + report.stderr
