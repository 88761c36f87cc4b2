"""A renderer reused frame after frame draws exactly what a fresh one draws for the same history (and rows)."""

from __future__ import annotations

import copy
import math
import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import numpy as np
import pytest
from prometheus_support import DEFAULT_BUCKETS, TEXT_TYPE, Scripted, histogram_page
from pylatencymap_support import need_pylatencymap
from tui_support import example_items

from latencymap.cli.common import REGISTRY
from latencymap.core.accumulator import Accumulator
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.outputs.report import stream_summary
from latencymap.sources.prometheus.scrape import ScrapeSource
from latencymap.views.html import render_html
from latencymap.views.options import ViewOptions
from latencymap.views.plain import PlainRenderer
from latencymap.views.svg import render_svg

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def synthetic_items(n: int) -> list[Interval]:
    rng = np.random.default_rng(5)
    a, b = StreamId("a", "bpf", "microsec"), StreamId("b", "oracle", "millisec")
    out = []
    for i in range(n):
        counts = np.zeros(64, dtype=np.int64)
        counts[rng.integers(3, 30, 4)] = rng.integers(0, 10**rng.integers(1, 7), 4)
        spent = None if i % 3 else counts * 1e-5
        out.append(Interval(a if i % 2 else b, 100.0 + i, 101.0 + i, counts, spent, reset=i % 17 == 0))
    return out


@pytest.mark.parametrize("opts", [
    ViewOptions(),
    ViewOptions(num_records=7, color=False),
    ViewOptions(num_records=12, frequency_maxval=50.0, intensity_maxval=0.001, min_bucket=4, max_bucket=12),
])
@pytest.mark.parametrize("history", [1000, 9])
def test_incremental_frames_equal_fresh_frames(opts: ViewOptions, history: int) -> None:
    items = list(input_flow([str(FIXTURES / "pylatencymap" / "example_latency_data.txt")], REGISTRY))
    items += synthetic_items(60)
    acc = Accumulator(cap=history)
    reused = PlainRenderer(opts)
    for item in items:
        acc.add([item])
        fresh = PlainRenderer(opts)
        fresh.fits = copy.deepcopy(reused.fits)  # the rows fitted so far are state, not a cache
        assert reused.render(acc) == fresh.render(acc)


def test_intensity_maxval_is_in_the_streams_unit_per_second() -> None:
    """PyLatencyMap's `--intensity_maxval` is in <latencyunit>/sec (its map says `(millisec/sec)`); the maps show
    s/s, so the same number pins the same colours: 20000 on millisec records is 20 s/s, on microsec 0.02 s/s."""
    ms, us = StreamId("a", "bpf", "millisec"), StreamId("a", "bpf", "microsec")
    opts = ViewOptions(intensity_maxval=20000)
    assert opts.intensity_scale(ms) == 20.0 and opts.intensity_scale(us) == pytest.approx(0.02)
    assert opts.intensity_scale(StreamId("a", "prometheus", "sec")) == 20000
    assert ViewOptions().intensity_scale(ms) == -1  # autoscale stays autoscale
    acc = Accumulator()
    acc.add(list(input_flow([str(FIXTURES / "pylatencymap" / "example_latency_data.txt")], REGISTRY)))
    (hist,) = acc.streams.values()
    text = PlainRenderer(ViewOptions(color=False, intensity_maxval=20000)).render_stream(hist)
    legend = text.split("Intensity heat map")[1]
    assert ">3.33" in legend and ">16.7" in legend and ">3.33k" not in legend  # 20 s/s in six steps


def cell_colours(frame: str) -> list[list[int]]:
    """The background colour of every cell of a frame's intensity map, top row first (PyLatencyMap's or ours)."""
    rows = []
    for line in re.split(r"Intensity [Hh]eat ?map", frame)[1].splitlines():
        cells = line.split("\x1b[0m")[0]
        runs = re.findall(r"\x1b\[48;5;(\d+)m( +)", cells)
        if runs:
            rows.append([int(colour) for colour, spaces in runs for _ in spaces])
    return rows


@pytest.mark.slow
def test_pinned_intensity_colours_match_real_pylatencymap(tmp_path: Path) -> None:
    """The same `--intensity_maxval=20000` (millisec/sec there) gives PyLatencyMap 1.3's colours cell for cell
    (PyLatencyMap draws -n + 1 columns)."""
    target = need_pylatencymap()
    data = FIXTURES / "pylatencymap" / "example_latency_data.txt"
    pins = ["--min_bucket=0", "--max_bucket=11", "--intensity_maxval=20000"]
    with data.open() as stdin:
        plm = subprocess.run([sys.executable, "-m", "LatencyMap", "--screen_delay=0", "-n", "20", *pins],
                             stdin=stdin, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(target)}, cwd=tmp_path)
    assert plm.returncode == 0, plm.stderr[-500:]
    ours = subprocess.run([sys.executable, "-m", "latencymap", "--plain", "--once", "-n", "21", *pins, str(data)],
                          capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"TERM": "xterm-256color"})
    assert ours.returncode == 0, ours.stderr
    want = cell_colours(plm.stdout.split("\x1b[0m\x1b[2J\x1b[H")[-1])
    got = cell_colours(ours.stdout)
    assert len(want) == len(got) == 12 and all(len(row) == 21 for row in want)
    assert got == want
    assert sum(colour != 15 for row in got for colour in row) > 50  # coloured, not all pale


def test_intensity_titles_say_how_the_reports_header_says_the_time_is_known() -> None:
    """A rebinned stream fitted to its source's exact `_sum` (a real scrape) is not "estimated from bucket
    midpoints" in the plain frame , SVG or HTML; PyLatencyMap's example still is."""
    bounds = (*DEFAULT_BUCKETS, math.inf)
    pages = [histogram_page("svc_seconds", bounds, [0, 0, 30 * k, *[40 * k] * (len(bounds) - 3)], 0.7 * k)
             for k in range(1, 6)]
    endpoint = Scripted([(200, TEXT_TYPE, p) for p in pages])
    try:
        scraped = [i for i in ScrapeSource(url=endpoint.url, metric="svc_seconds", interval=0.01, count=4).items()
                   if isinstance(i, Interval | Notice)]
    finally:
        endpoint.close()
    for items, words in ((scraped, "the source's exact sum"), (example_items(), "estimated from bucket midpoints")):
        acc = Accumulator()
        acc.add(items)
        hist = next(iter(acc.streams.values()))
        assert f"({words})" in stream_summary(hist, acc)[0]
        frame = PlainRenderer(ViewOptions(color=False)).render(acc)
        assert f"Intensity heat map: time waited per second, {words}" in frame
        assert f"Intensity heat map: time waited per second ({words})" in unescape(render_svg(acc))
        assert f"Intensity heat map: time waited per second ({words})" in unescape(render_html(acc))
        if words != "estimated from bucket midpoints":
            assert "midpoints" not in frame
