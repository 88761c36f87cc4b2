from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from process_support import run_file_size_limited

from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, Notice, Snapshot
from latencymap.flow.inputs import MAX_LINE, read_input
from latencymap.plugins import load_registry
from latencymap.protocol import ProtocolReader

REGISTRY = load_registry()
LINES = st.one_of(
    st.sampled_from(["<begin record>", "<end record>", "<BEGIN RECORD>", "label, x", "datasource, oracle",
                     "latencyunit, microsec", "latencyunit, parsec", "counts, interval", "start, microsec, 5",
                     "flags, reset", "~", "value |--- count", "4294967295, 7", "0, 1", "-1, 4"]),
    st.builds(lambda v, c: f"{v}, {c}", st.integers(-(2**70), 2**70), st.integers(-(2**70), 2**70)),
    st.builds(lambda e, c: f"{2**e}, {c}", st.integers(0, 300), st.integers(0, 2**64)),
    st.builds(lambda t: f"timestamp, microsec, {t}, d", st.integers(-(2**63), 2**63)),
    st.builds(lambda v, c: f"{v} |@@@ {c}", st.integers(-5, 2**40), st.integers(0, 2**40)),
    st.text(max_size=40),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LINES, max_size=60))
def test_reader_and_differ_never_crash_and_never_count_negative(lines: list[str]) -> None:
    clock = iter(range(10**6))
    differ = Differ(clock=lambda: float(next(clock)))
    for item in differ.run(ProtocolReader("fuzz").read(lines)):
        assert isinstance(item, (Interval, Notice))
        if isinstance(item, Interval):
            assert (item.counts >= 0).all()
            assert item.end > item.start
            assert item.time is None or np.isfinite(item.time).all()


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_on_stdin_never_crash(data: bytes) -> None:
    payload = b"<begin record>\n" + data + b"\n<end record>\n"
    items = list(read_input("-", REGISTRY, "pylatencymap", stdin=io.BytesIO(payload)))
    assert all(isinstance(i, (Snapshot, Interval, Notice)) for i in items)


def test_megabyte_lines_are_cut_and_reading_goes_on() -> None:
    huge = b"label, " + b"A" * (3 * MAX_LINE) + b"\n"
    payload = (b"<begin record>\n" + huge + b"1, 1\n<end record>\n"
               + b"\x00\xff\xfe\n<begin record>\n1, 2\n<end record>\n")
    items = list(read_input("-", REGISTRY, stdin=io.BytesIO(payload)))
    snaps = [i for i in items if isinstance(i, Snapshot)]
    assert len(snaps) == 2 and len(snaps[0].stream.label) <= 200


ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b[31m\x08\x9b\x00"


def _hostile_file(tmp_path: Path) -> Path:
    p = tmp_path / "hostile.txt"
    text = ""
    for i in range(3):
        text += (f"<begin record>\ntimestamp, microsec, {i + 1}000000, {ESCAPES}date\nlabel, evil{ESCAPES}label\n"
                 f"1, {i * 5}\n<end record>\n")
    text += f"<begin record>\n{ESCAPES}bad line\n<end record>\n"
    p.write_text(text)
    return p


def test_escape_sequences_never_reach_plain_view_or_text_report(tmp_path: Path) -> None:
    p = _hostile_file(tmp_path)
    env = {**os.environ, "NO_COLOR": "1"}
    for args in (["--plain", "--once", str(p)], ["report", str(p)], ["report", "--format", "json", str(p)]):
        r = subprocess.run([sys.executable, "-m", "latencymap", *args], capture_output=True, text=True, env=env,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        for out in (r.stdout, r.stderr):
            assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\x08" not in out
            assert "\r" not in out
        assert "evil" in r.stdout


def test_sigterm_exits_cleanly_with_recording_flushed(tmp_path: Path) -> None:
    producer = (
        "import sys, time\n"
        "for i in range(100000):\n"
        "    print(f'<begin record>\\ntimestamp, microsec, {(i + 1) * 1000000}, x\\n1, {i}\\n<end record>', "
        "flush=True)\n"
        "    time.sleep(0.02)\n"
    )
    rec = tmp_path / "term.txt"
    prod = subprocess.Popen([sys.executable, "-c", producer], stdout=subprocess.PIPE)
    view = subprocess.Popen([sys.executable, "-m", "latencymap", "--plain", "--screen_delay=0", "--record", str(rec)],
                            stdin=prod.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not rec.exists() or rec.read_text().count("<end record>") < 5):
        time.sleep(0.05)
    view.send_signal(signal.SIGTERM)
    rc = view.wait(15)
    prod.kill()
    prod.wait()
    assert rc == 143
    assert "Traceback" not in view.stderr.read()
    text = rec.read_text()
    assert text.endswith("<end record>\n")


def test_disk_full_while_recording_keeps_what_was_written(tmp_path: Path, example_data: Path) -> None:
    rec = tmp_path / "full.txt"
    r = run_file_size_limited(6000, [sys.executable, "-m", "latencymap", "--plain", "--once", "--record", str(rec),
                                     str(example_data)], capture_output=True)
    assert r.returncode == 1, r.stderr
    assert "recording stopped" in r.stderr and "intact" in r.stderr and "Traceback" not in r.stderr
    complete = rec.read_text().count("<end record>")
    assert complete >= 3
    rep = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(rec)],
                         capture_output=True, text=True, timeout=60)
    (stream,) = json.loads(rep.stdout)["streams"]
    assert stream["columns"] == complete


def test_a_recording_cut_mid_line_before_the_next_record_loses_only_the_cut_one(tmp_path: Path,
                                                                                 example_data: Path) -> None:
    """A record cut inside a bucket line, the next record's `<begin record>` right after it on that line (a writer
    killed mid-write, its file appended to): `report` skips the cut record alone and reads the next."""
    rec = tmp_path / "rec.txt"
    made = subprocess.run([sys.executable, "-m", "latencymap", "--plain", "--once", "--record", str(rec),
                           str(example_data)], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    records = rec.read_text().split("<begin record>\n")
    cut = 35
    head, rows = records[cut].split("datasource, bpf\n")
    lost = sum(int(row.split(",")[1]) for row in rows.splitlines()[:-1])
    records[cut] = head + "datasource, bpf\n" + rows[:rows.index(", ") + 2]  # `1, ` then the next `<begin record>`
    cut_file = tmp_path / "cut.txt"
    cut_file.write_text("<begin record>\n".join(records))
    assert cut_file.read_text().count(", <begin record>\n") == 1

    def report(path: Path) -> dict[str, Any]:
        r = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(path)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)  # type: ignore[no-any-return]

    whole, broken = report(rec), report(cut_file)
    (stream,), (left,) = whole["streams"], broken["streams"]
    assert left["columns"] == stream["columns"] - 1
    assert left["total"]["events"] == stream["total"]["events"] - lost
    assert broken["errors"]["skipped_records"] == 1
    line = cut_file.read_text().splitlines().index("1, <begin record>") + 1
    assert [m for m in broken["errors"]["messages"] if "cut off mid-line" in m] == [
        f"{cut_file}: line {line}: record cut off mid-line: the line ends in '1,', then the next record's "
        "<begin record>; record skipped"]
