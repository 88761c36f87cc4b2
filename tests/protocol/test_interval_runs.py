"""Interval records (`counts, interval`) whose timestamp does not increase go back into time already read (two
recordings joined with `cat`): another run, shown apart with a note naming the file and the line, never laid over
the first; the bulk reader does as the line reader does."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from latencymap.core.model import Interval, Notice
from latencymap.protocol.reader import MAX_RUNS
from tests.protocol.test_protocol_bulk import by_chunks, by_lines


def record(end: float, label: str = "io", count: int = 1, overlap: bool = False) -> str:
    return (f"<begin record>\ntimestamp, microsec, {int(end * 1e6)}\ncounts, interval\nstart, microsec, "
            f"{int((end - 1) * 1e6)}\n{'flags, overlap' + chr(10) if overlap else ''}latencyunit, microsec\n"
            f"label, {label}\n16, {count}\n<end record>\n")


def run_of(first: int, n: int, label: str = "io") -> str:
    return "".join(record(1_700_000_000 + first + i, label) for i in range(n))


def line_of(text: str, k: int) -> int:
    """The line of the `k`th record (from 0) of `text`."""
    return [i + 1 for i, line in enumerate(text.splitlines()) if line == "<begin record>"][k]


def test_a_second_recording_of_the_same_time_is_shown_apart_from_its_first_record() -> None:
    text = run_of(1, 5) + run_of(1, 5) + run_of(6, 2)  # a, the same time again, then a later part of a
    got = by_lines(text)
    line = line_of(text, 5)
    notes = [g for g in got if g[0] == "notice"]
    assert notes == [("notice", f"t: line {line}: 'io' goes back into the time of its earlier records (its interval "
                      "ends at 1700000001.000000, not after its last one, 1700000005.000000): another run, shown "
                      f"apart, as 'io [t, from line {line}]'", 0)]
    labels = [g[1].label for g in got if g[0] == "iv"]
    assert labels == ["io"] * 5 + [f"io [t, from line {line}]"] * 5 + ["io"] * 2
    ends = [g[3] for g in got if g[0] == "iv" and g[1].label == "io"]
    assert ends == sorted(ends) and len(set(ends)) == len(ends)  # no column laid over another


def test_a_repeated_record_is_a_run_of_one_column_and_streams_are_apart() -> None:
    text = run_of(1, 3) + run_of(3, 1) + run_of(4, 2) + run_of(1, 3, "disk")
    got = by_lines(text)
    labels = [g[1].label for g in got if g[0] == "iv"]
    assert labels == ["io"] * 3 + [f"io [t, from line {line_of(text, 3)}]"] + ["io"] * 2 + ["disk"] * 3


def test_past_the_most_runs_a_record_that_goes_back_is_skipped_and_counted() -> None:
    text = "".join(run_of(10 - k, 1) for k in range(MAX_RUNS + 2))  # every record earlier than the one before
    got = by_lines(text)
    assert len([g for g in got if g[0] == "iv"]) == MAX_RUNS
    skipped = [g for g in got if g[0] == "notice" and g[2]]
    assert len(skipped) == 2 and skipped[0][1].startswith(f"t: line {line_of(text, MAX_RUNS)}: 'io' goes back")
    assert skipped[0][1].endswith("; record skipped")


def test_a_record_flagged_overlap_goes_on_in_its_streams_run_whatever_its_time() -> None:
    """A recording of processes sharing an OpenTelemetry series writes columns that end before columns written
    earlier: read back, each started another run (a stream apart) where the recorded run had one stream. Flagged
    `overlap` (the recorder flags them), such a record goes on in the run of its stream's record before it: in the
    first run, and in a second copy joined to the first (`cat`), in that copy's run."""
    one = run_of(1, 3) + record(1_700_000_002.5, overlap=True) + run_of(4, 2) + record(1_700_000_001, overlap=True)
    text = one + one + record(1_700_000_000.5, "disk", overlap=True)  # a stream's first record: as any
    for got in (by_lines(text), by_chunks(text, [len(text)]), by_chunks(text, [len(one) + 7, 2 * len(one) - 3])):
        labels = [g[1].label for g in got if g[0] == "iv"]
        apart = f"io [t, from line {line_of(text, 7)}]"
        assert labels == ["io"] * 7 + [apart] * 7 + ["disk"], labels
        assert len([g for g in got if g[0] == "notice"]) == 1  # the second copy only
        assert [g[3] for g in got if g[0] == "iv"][:7] == [1_700_000_000 + t for t in (1, 2, 3, 2.5, 4, 5, 1)]


@pytest.mark.parametrize("seed", range(8))
def test_the_bulk_reader_places_intervals_as_the_line_reader_does(seed: int) -> None:
    rng = random.Random(seed)
    parts = [run_of(rng.randrange(30), rng.randrange(1, 6), rng.choice(["io", "disk"])) for _ in range(8)]
    parts += [record(1_700_000_000 + rng.randrange(30), rng.choice(["io", "disk"]), overlap=True) for _ in range(3)]
    rng.shuffle(parts)
    if seed % 2:
        parts.insert(3, "<begin record>\ntimestamp, microsec, 1700000003000000\nlabel, io\n8, 1\n<end record>\n")
    text = "".join(parts)
    cuts = sorted(rng.randrange(len(text)) for _ in range(rng.randrange(6)))
    assert by_chunks(text, cuts) == by_lines(text)
    assert by_chunks(text, [len(text)]) == by_lines(text)


def test_two_recordings_joined_are_two_streams_in_the_report(tmp_path: Path) -> None:
    joined = tmp_path / "joined.txt"
    joined.write_text(run_of(1, 20) + run_of(1, 20))
    done = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(joined)],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [s["columns"] for s in report["streams"]] == [20, 20]
    assert any("goes back into the time of its earlier records" in m for m in report["errors"]["messages"])


def test_interval_items_keep_their_numbers() -> None:
    from latencymap.protocol import ProtocolReader

    got = list(ProtocolReader("t").read((run_of(1, 2) + run_of(1, 1)).splitlines()))
    assert isinstance(got[2], Notice) and isinstance(got[3], Interval)
    assert got[3].counts.sum() == 1 and np.flatnonzero(got[3].counts).size == 1
