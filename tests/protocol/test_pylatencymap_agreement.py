"""Inputs PyLatencyMap 1.3 reads its own way, against the real PyLatencyMap 1.3 (installed apart, see
pylatencymap_support): its per-record histograms (`--debug_level=4`) against latencymap's report columns."""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pylatencymap_support import need_pylatencymap

from latencymap.core.units import unit_seconds


def pylatencymap_columns(path: Path, records: int) -> tuple[np.ndarray, np.ndarray]:
    """(frequency, intensity) per column after the baseline, by bucket exponent (0..64), as PyLatencyMap 1.3 computes
    them: events/s and <latencyunit>/s."""
    target = need_pylatencymap()
    with path.open() as stdin:
        run = subprocess.run([sys.executable, "-m", "LatencyMap", "--screen_delay=0", "--debug_level=4",
                              "--min_bucket=0", "--max_bucket=30", f"-n{records}"], stdin=stdin, capture_output=True,
                             text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(target)}, cwd=path.parent)
    assert run.returncode == 0, run.stderr[-500:]

    def last_block(title: str) -> np.ndarray:
        lines = run.stdout.rsplit(f"\n{title}\n", 1)[1].splitlines()[: records + 1]
        rows = [ast.literal_eval(line[: line.rindex("]") + 1]) for line in lines]
        return np.array(rows[-(records - 1):])  # the window's last records, less the baseline

    return last_block("Frequency histograms:"), last_block("Intensity histograms:")


def latencymap_columns(path: Path) -> tuple[np.ndarray, np.ndarray, str]:
    """(frequency, intensity) per column by bucket exponent, as `report --format json` gives them (intensity in the
    stream's unit per second, PyLatencyMap's), and the unit, for the input's only stream."""
    run = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    (stream,) = json.loads(run.stdout)["streams"]
    unit = stream["stream"]["unit"]
    exponents = [round(math.log2(b["low"] / unit_seconds(unit))) for b in stream["buckets"]]
    freq = np.zeros((stream["columns"], 65))
    inten = np.zeros((stream["columns"], 65))
    freq[:, exponents] = stream["frequency"]
    inten[:, exponents] = np.array(stream["intensity"]) / unit_seconds(unit)
    return freq, inten, unit


def write_records(path: Path, records: list[list[str]]) -> Path:
    path.write_text("".join("<begin record>\n" + "".join(f"{line}\n" for line in lines) + "<end record>\n"
                            for lines in records))
    return path


@pytest.mark.slow
def test_a_unit_given_once_holds_for_later_records_as_in_pylatencymap(tmp_path: Path) -> None:
    """Only the first record says `latencyunit, microsec` (PyLatencyMap keeps it): same columns, in µs, not ms."""
    counts = {64: 0, 128: 0, 256: 0}
    records = []
    for i in range(6):
        for value in counts:
            counts[value] += 10 * (i + 1)
        records.append([f"timestamp, microsec, {1_700_000_000_000_000 + i * 1_000_000}, t{i}", "label, io",
                        *(["latencyunit, microsec"] if i == 0 else []), *(f"{v}, {n}" for v, n in counts.items())])
    path = write_records(tmp_path / "unit.txt", records)
    freq, inten, unit = latencymap_columns(path)
    assert unit == "microsec"
    want_freq, want_inten = pylatencymap_columns(path, len(records))
    assert np.allclose(freq, want_freq) and np.allclose(inten, want_inten)
    assert freq[-1, 6:9].tolist() == [60.0, 60.0, 60.0]


@pytest.mark.slow
def test_records_without_a_timestamp_are_one_second_apart_as_in_pylatencymap(tmp_path: Path) -> None:
    """PyLatencyMap's bcc connector without -T writes no timestamp line: a file of such records is read as 1 s
    apart (PyLatencyMap's time factor for them), not microseconds apart."""
    rng = np.random.default_rng(1)
    counts = {64: 0, 128: 0, 256: 0, 512: 0}
    records = []
    for _ in range(5):
        for value in counts:
            counts[value] += int(rng.integers(0, 100))
        records.append(["label, Latency of block I/O requests measured with BPF/bcc", "latencyunit, microsec",
                        "datasource, systemtap", *(f"{v} , {n}" for v, n in counts.items())])
    path = write_records(tmp_path / "untimed.txt", records)
    freq, inten, _ = latencymap_columns(path)
    want_freq, want_inten = pylatencymap_columns(path, len(records))
    assert freq.shape == want_freq.shape == (4, 65)
    assert np.allclose(freq, want_freq) and np.allclose(inten, want_inten)


@pytest.mark.slow
@pytest.mark.parametrize(("label", "row"), [("label,", "1024, {n}"), ("label, ", "+1024, {n}"),
                                            ("label, io", "+1024, +{n}")])
def test_an_empty_label_and_signed_rows_read_as_in_pylatencymap(tmp_path: Path, label: str, row: str) -> None:
    """PyLatencyMap's NetApp connector prints `label,$beauty` (empty when nothing names the stream), and its reader
    takes rows with int(), which reads `+1024`: the same columns (15, then 20 events/s in the 1024 µs row)."""
    records = [[f"timestamp, microsec, {1_700_000_000_000_000 + i * 1_000_000}, t{i}", label, "latencyunit, microsec",
                row.format(n=n)] for i, n in enumerate([10, 25, 45])]
    path = write_records(tmp_path / "records.txt", records)
    freq, inten, _ = latencymap_columns(path)
    want_freq, want_inten = pylatencymap_columns(path, len(records))
    assert np.allclose(freq, want_freq) and np.allclose(inten, want_inten)
    assert freq[:, 10].tolist() == [15.0, 20.0]
