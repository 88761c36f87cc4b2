"""`latencymap replay --start/--end`: a window that holds no interval says where the recording's intervals are."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from skips_support import requires_binary
from tmux_support import Pane

from latencymap.core.model import Interval, StreamId
from latencymap.flow.recording import Recorder


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


def recording(path: Path, n: int = 20) -> Path:
    """`n` one-second intervals of one stream, recorded."""
    recorder = Recorder(str(path))
    for i in range(n):
        recorder.write(Interval(StreamId("io", "bpf", "microsec"), 1_700_000_000.0 + i, 1_700_000_001.0 + i,
                                np.full(64, 3, dtype=np.int64)))
    recorder.close()
    return path


def test_a_window_past_the_end_says_where_the_intervals_are_and_fails(tmp_path: Path) -> None:
    # It said `latencymap: no data yet` and exited 0, as if the recording were empty.
    rec = recording(tmp_path / "rec.txt")
    done = cli("replay", "--max", "--plain", "--once", "--start", "1000", str(rec))
    assert done.returncode == 1, done.stderr
    assert f"latencymap: {rec}: no interval from 1000 s on; the recording's intervals cover 0 s to 20 s" in done.stderr
    done = cli("replay", "--max", "--plain", "--once", "--start", "30.5", "--end", "40", str(rec))
    assert done.returncode == 1
    assert "no interval between 30.5 s and 40 s; the recording's intervals cover 0 s to 20 s" in done.stderr
    done = cli("replay", "--max", "--emit", "--start", "1000", str(rec))
    assert done.returncode == 1 and "no interval from 1000 s on" in done.stderr and "<begin record>" not in done.stdout


def test_a_window_that_holds_intervals_is_replayed_as_before(tmp_path: Path) -> None:
    rec = recording(tmp_path / "rec.txt")
    done = cli("replay", "--max", "--emit", "--start", "15", str(rec))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("<begin record>") == 5 and "no interval" not in done.stderr
    done = cli("replay", "--max", "--plain", "--once", str(rec))
    assert done.returncode == 0 and "no interval" not in done.stderr


def test_an_empty_recording_is_not_said_to_miss_the_window(tmp_path: Path) -> None:
    rec = recording(tmp_path / "rec.txt", n=0)
    done = cli("replay", "--max", "--plain", "--once", "--start", "1000", str(rec))
    assert done.returncode == 0 and "no interval" not in done.stderr


def test_replay_reads_another_input_with_its_format_options(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("1.5 3.0\n2.0 5.0\n3.5 120.0\n4.0 7.0\n")  # time (s) and latency: the raw format's pairs
    done = cli("replay", "--input-format", "raw", "--unit", "us", "--max", "--plain", "--once", str(pairs))
    assert done.returncode == 0, done.stderr
    assert "Columns: 4" in done.stdout and "unit: microsec" in done.stdout
    assert "replay trace.zst --speed 10" in cli("replay", "--help").stdout  # its own examples


@pytest.fixture
def pane() -> Iterator[type[Pane]]:
    """Real terminals (tmux), closed after the test."""
    made: list[Pane] = []

    class Closed(Pane):
        def __init__(self, command: str, size: tuple[int, int] = (160, 50)) -> None:
            super().__init__(command, size)
            made.append(self)

    yield Closed
    for each in made:
        each.close()


LATENCYMAP = f"TERM=xterm-256color {shlex.quote(sys.executable)} -m latencymap"


def _replayed(pane: type[Pane], command: str, header: str) -> Pane:
    """The tmux pane of `command` (a replay in the TUI) once its input has ended, its header reading `header`."""
    term = pane(command)
    screen = term.wait_for("ENDED", timeout=60)
    assert header in screen.splitlines()[0], screen
    return term


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
@pytest.mark.timeout(120)
def test_replay_of_a_pipe_or_a_fifo_in_the_tui_shows_every_record(pane: type[Pane], example_data: Path) -> None:
    """`cat FILE | latencymap replay -` (or `replay <(cat FILE)`) showed `ENDED waiting for data…`: the burst scan
    opened the same pipe again and took the records. The input is now read once, for both: 71 columns, as the file
    by name, and `n` finds the scan done."""
    data = shlex.quote(str(example_data))
    for command in (f"cat {data} | {LATENCYMAP} replay --max -",
                    f"bash -c {shlex.quote(f'{LATENCYMAP} replay --max <(cat {data})')}"):
        term = _replayed(pane, command, "columns 71")
        term.keys("n")
        term.wait_for("no burst of")  # of the stream shown (its label, then "after the cursor")
        term.keys("q")
        term.wait_for("EXIT=0")


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
@pytest.mark.timeout(180)
def test_replay_of_a_late_pipe_or_a_fifo_in_the_tui_loses_no_record(pane: type[Pane], tmp_path: Path) -> None:
    """`replay <(sleep 1; cat REC)` showed `columns 19866  skipped 70` of 20,000, and `replay FIFO` a blank screen
    forever: the loader of the recording's profile samples opened the input a third time, taking bytes from the
    pipe, or waiting for the FIFO's writer, gone once the replay had read it all."""
    rec = shlex.quote(str(recording(tmp_path / "rec.zst", n=3000)))
    fifo = tmp_path / "rec.fifo"
    os.mkfifo(fifo)
    for command in (f"bash -c {shlex.quote(f'{LATENCYMAP} replay --max <(sleep 1; cat {rec})')}",
                    f"(cat {rec} > {shlex.quote(str(fifo))} &); {LATENCYMAP} replay --max {shlex.quote(str(fifo))}"):
        term = _replayed(pane, command, "columns 3000  skipped 0")
        term.keys("q")
        term.wait_for("EXIT=0")


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
@pytest.mark.timeout(120)
@pytest.mark.parametrize("command", ["replay", "view"])
def test_dash_typed_at_the_terminal_is_refused_by_the_tui(pane: type[Pane], command: str) -> None:
    """`latencymap replay -` at a terminal started the TUI, which then read its keys where the records were typed:
    `q`, Ctrl-C, Ctrl-D and SIGTERM could not end it. It is refused as `view -` is (one check for both)."""
    term = pane(f"{LATENCYMAP} {command} -")
    screen = term.wait_for("EXIT=", timeout=60)
    assert "EXIT=2" in screen, screen
    assert "Error: '-' reads records typed at the terminal, where the TUI reads its keys: add --plain" in screen


def test_count_keeps_n_intervals_of_each_stream_of_a_recording_as_report_does(tmp_path: Path) -> None:
    """`replay --count 3` of a recording of `sda` and then `sdb` replayed `sda` alone: it stopped, as at a live
    pipe, once every stream seen had 3 intervals, while `report --count 3` read the file whole (3 of each). A
    recording is a file: replay now reads it to its end too. The intervals it leaves out are not waited for at the
    recorded pace: `sda`'s last, 10 minutes on, is not waited for."""
    recorder = Recorder(str(tmp_path / "rec.txt"))
    t0 = 1_700_000_000.0
    for label, starts in (("sda", [*range(6), 600]), ("sdb", range(6, 12))):
        for t in starts:
            recorder.write(Interval(StreamId(label, "bpf", "microsec"), t0 + t, t0 + t + 1,
                                    np.full(64, 3, dtype=np.int64)))
    recorder.close()
    rec = str(tmp_path / "rec.txt")
    done = cli("replay", "--max", "--emit", "--count", "3", rec)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("label, ")] == ["label, sda"] * 3 + [
        "label, sdb"] * 3  # before: sda's 3 alone
    said = [line for line in done.stderr.splitlines() if "--count 3" in line]
    assert said == ["latencymap: --count 3: 'sda' (bpf, microsec) had 4 more intervals after its first 3: left out",
                    "latencymap: --count 3: 'sdb' (bpf, microsec) had 3 more intervals after its first 3: left out"]
    reported = cli("report", "--count", "3", rec)
    assert [f"latencymap: {line.strip()}" for line in reported.stdout.splitlines() if "--count 3" in line] == said
    started = time.monotonic()  # what is kept spans 9 s: 2 s at 5 times the pace; sda's last would add 2 min
    paced = cli("replay", "--speed", "5", "--emit", "--count", "3", rec)
    records = [line for line in done.stdout.splitlines() if not line.startswith("#")]  # the header: the options
    assert [line for line in paced.stdout.splitlines() if not line.startswith("#")] == records
    assert time.monotonic() - started < 60
