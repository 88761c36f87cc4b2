"""PyLatencyMap's `Max(Sum)`: under each map, after the newest column's sum, the largest column sum of the window."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from frames_support import generated
from pylatencymap_support import need_pylatencymap

from latencymap.cli.common import REGISTRY
from latencymap.core.accumulator import Accumulator
from latencymap.core.model import Interval, StreamId
from latencymap.core.units import format_number
from latencymap.flow.pipeline import input_flow
from latencymap.views.options import ViewOptions
from latencymap.views.plain import PlainRenderer
from latencymap.views.plain_bulk import BulkFrames

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
_SUFFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}
_OURS = re.compile(r"sum (\S+)   max\(sum\): (\S+)$")


def _number(text: str) -> float:
    """A `format_number` text as a number."""
    suffix = text[-1] if text[-1] in "kMG" else ""
    return float(text[: len(text) - len(suffix)]) * _SUFFIX[suffix]


def sum_lines(frame: str) -> list[tuple[str, str]]:
    """(newest column's sum, max(sum)) under each map of a frame, as written."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", frame)
    return [m.groups() for line in plain.splitlines() if "x=time" in line and (m := _OURS.search(line))]


def _interval(stream: StreamId, i: int, counts: dict[int, int], duration: float = 2.0) -> Interval:
    c = np.zeros(64, dtype=np.int64)
    for slot, n in counts.items():
        c[slot] = n
    return Interval(stream, 100.0 + 2 * i, 100.0 + 2 * i + duration, c, c * 1e-3)


def test_max_sum_is_the_largest_column_sum_of_the_window() -> None:
    """A busy column counts while it is shown and no longer once it scrolls out; the newest column's sum is the
    latest, whatever the max."""
    stream = StreamId("disk", "bpf", "microsec")
    acc = Accumulator()
    acc.add([_interval(stream, 0, {10: 400, 12: 200}),  # 300 events/s, 0.3 s/s, spread over two rows
             _interval(stream, 1, {10: 40}), _interval(stream, 2, {11: 60}), _interval(stream, 3, {10: 20})])
    (hist,) = acc.streams.values()
    renderer = PlainRenderer(ViewOptions(num_records=4, color=False))
    assert sum_lines(renderer.render_stream(hist)) == [("10", "300"), ("0.01", "0.3")]
    acc.add([_interval(stream, 4, {10: 30})])  # the first column is no longer shown: 60/2 is the largest left
    assert sum_lines(renderer.render_stream(hist)) == [("15", "30"), ("0.015", "0.03")]


def test_max_sum_counts_folded_rows_and_pinned_ranges_too() -> None:
    """Rows pinned away from the data fold it into the edge rows: the column sums still hold every event."""
    stream = StreamId("disk", "bpf", "microsec")
    acc = Accumulator()
    acc.add([_interval(stream, i, {2: 10 * i, 30: 5, 40: 1}) for i in range(6)])
    (hist,) = acc.streams.values()
    frame = PlainRenderer(ViewOptions(num_records=3, min_bucket=8, max_bucket=12, color=False)).render_stream(hist)
    freq = hist.counts_in(slice(3, 6)).sum(axis=1) / hist.meta_in("dur", slice(3, 6))
    assert sum_lines(frame)[0] == (format_number(float(freq[-1]), 4), format_number(float(freq.max()), 4))


@pytest.mark.parametrize("opts", [ViewOptions(), ViewOptions(num_records=7, color=False)])
def test_bulk_frames_show_each_windows_max_sum(opts: ViewOptions) -> None:
    """Frames drawn in bulk carry each frame's own max(sum) (the byte-for-byte check is test_plain_bulk's)."""
    items = generated(120, seed=5)
    acc, renderer = Accumulator(), PlainRenderer(opts)
    acc.add(items[:1])
    renderer.render(acc)
    bulk = BulkFrames(renderer)
    assert bulk.ready(acc, items[1:]) == len(items) - 1
    text = bulk.draw(acc, items[1:]).tobytes().decode()
    (hist,) = acc.streams.values()
    rates = hist.counts_in(slice(0, hist.n)).sum(axis=1) / hist.meta_in("dur", slice(0, hist.n))
    want = [format_number(float(rates[max(0, n - opts.num_records): n].max()), 4) for n in range(2, hist.n + 1)]
    got = [lines[0][1] for lines in map(sum_lines, text.split("Frequency heat map")[1:])]
    assert got == want


def _pylatencymap_max_sums(stdout: str) -> list[float]:
    """PyLatencyMap's Max(Sum) of each map in its last frame: the number after `Sum:......N` on the line under the
    map (the `Max(Sum):` label is on the map's bottom row, above it)."""
    frame = stdout.split("\x1b[0m\x1b[2J\x1b[H")[-1]
    plain = re.sub(r"\x1b\[[0-9;]*m", "", frame)
    assert plain.count("Max(Sum):") == 2
    return [float(m.group(1)) for m in re.finditer(r"Sum:\.*\S+ +(\S+)$", plain, re.MULTILINE)]


def _microsec_records(path: Path, records: int = 40) -> Path:
    """Cumulative PyLatencyMap records of a bpf microsec histogram (2**0 .. 2**12 µs), one every 1.5 s (small enough
    numbers that PyLatencyMap writes every digit of them)."""
    rng = np.random.default_rng(3)
    cum = np.zeros(13, dtype=np.int64)
    out = []
    for i in range(records):
        cum += rng.integers(0, 10, 13) * (rng.random(13) < 0.6) * (1 + 4 * (i % 9 == 4))
        out += ["<begin record>", f"timestamp,microsec,{1_700_000_000_000_000 + 1_500_000 * i},t{i}",
                "latencyunit,microsec", "label,disk", "datasource,bpf"]
        out += [f"{2 ** k},{n}" for k, n in enumerate(cum.tolist())] + ["<end record>"]
    path.write_text("\n".join(out) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("name", "per_second"), [("example_latency_data.txt", 1e3),  # millisec/sec -> s/s
                                                   ("microsec", 1e6)])  # microsec/sec -> s/s
def test_max_sum_is_real_pylatencymaps(tmp_path: Path, name: str, per_second: float) -> None:
    """The same window (PyLatencyMap draws -n + 1 columns) gives PyLatencyMap 1.3's Max(Sum) of both maps: events/s,
    and its latency unit per second where ours is s/s."""
    target = need_pylatencymap()
    data = FIXTURES / "pylatencymap" / name if name != "microsec" else _microsec_records(tmp_path / "us.txt")
    with data.open() as stdin:
        plm = subprocess.run([sys.executable, "-m", "LatencyMap", "--screen_delay=0", "-n", "20"], stdin=stdin,
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(target)}, cwd=tmp_path)
    assert plm.returncode == 0, plm.stderr[-500:]
    want = _pylatencymap_max_sums(plm.stdout)
    ours = subprocess.run([sys.executable, "-m", "latencymap", "--plain", "--once", "-n", "21", str(data)],
                          capture_output=True, text=True, timeout=120)
    assert ours.returncode == 0, ours.stderr
    got = [_number(m) for _, m in sum_lines(ours.stdout)]
    assert len(want) == len(got) == 2 and want[0] > 0 and want[1] > 0
    assert min(want) > 9  # PyLatencyMap writes them rounded to whole numbers; ours to 4 digits
    assert got[0] == pytest.approx(want[0], rel=1e-3, abs=0.5)
    assert got[1] == pytest.approx(want[1] / per_second, rel=1e-3, abs=0.5 / per_second)


def test_once_frame_shows_max_sum_of_the_oracle_sample() -> None:
    """PyLatencyMap's sample: 6944 events/s at most in a column of the last 20 (its `Max(Sum)` reads 6944)."""
    items = list(input_flow([str(FIXTURES / "pylatencymap" / "example_latency_data.txt")], REGISTRY))
    acc = Accumulator()
    acc.add(items)
    (hist,) = acc.streams.values()
    lines = sum_lines(PlainRenderer(ViewOptions(num_records=20)).render_stream(hist))
    assert lines[0] == ("0", "6.944k")
