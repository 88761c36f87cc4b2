"""The overview's strips share one time axis: a stream that stopped is drawn where its columns were and marked stale,
not compared with its live peers; once the input has ended the axis spans the whole run, less the silences far longer
than the time read (recordings years apart); the saved plain-text overview draws its strips in shade characters."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tui_support import fixture_items, ranks, run_ended, synthetic

from latencymap.core.accumulator import Accumulator
from latencymap.flow.pipeline import diffed
from latencymap.sources.spark.source import SparkSource
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.axis import TICK
from latencymap.tui.overview import MARK_W, OverviewList, OverviewScreen, name_width, strip_cells
from latencymap.tui.overview_axis import GAP, RUN_CELLS, SILENT_INTERVALS, allot, cut_runs, stream_runs
from latencymap.tui.overview_stats import NOW_COLUMNS, OverviewStats, SharedClock
from latencymap.tui.overview_strips import cells_by_time, strip_p99
from latencymap.tui.window import Window
from latencymap.views.options import SHADES

STOPPED = 25  # columns rank3 lacks at the end
SPARK = Path(__file__).resolve().parents[2] / "fixtures" / "spark" / "plain"
RANKS = Path(__file__).resolve().parents[2] / "fixtures" / "training" / "ranks12.txt"


def dead_rank() -> list:
    """12 ranks of 60 one-second columns; rank3 stops 25 s before the others."""
    cut = 1_700_000_000.0 + 60 - STOPPED
    return [iv for iv in ranks() if not (iv.stream.label == "rank3/step" and iv.start >= cut)]


def test_a_stream_that_stopped_is_stale_not_compared() -> None:
    acc = Accumulator()
    acc.add(dead_rank())
    rows = {r.label: r for r in OverviewStats().rows(list(acc.streams.values()))}
    dead = rows["rank3/step"]
    assert dead.stale and dead.stale_s == STOPPED
    assert math.isnan(dead.p99_now) and math.isnan(dead.vs_peers) and not dead.slow
    assert math.isfinite(dead.p99_all)
    live = [r for label, r in rows.items() if label != "rank3/step"]
    assert not any(r.stale for r in live) and all(math.isfinite(r.vs_peers) for r in live)


def test_strips_are_placed_by_time() -> None:
    acc = Accumulator()
    acc.add(dead_rank())
    histories = list(acc.streams.values())
    rows = OverviewStats().rows(histories)
    shared = SharedClock.of(rows)
    assert shared is not None and shared.span == 1.0
    edges = shared.edges(40)
    by_label = {h.stream.label: h for h in histories}
    live, dead = by_label["rank1/step"], by_label["rank3/step"]
    # a live stream: as its columns (same ends as the newest), the last cell its newest column
    want = Window(live.n, 40, 1).cell_counts(live)
    assert (cells_by_time(live, live.n, edges)[0] == want).all()
    # the stream that stopped: its newest column STOPPED cells left of the right edge, the cells after it empty
    counts = cells_by_time(dead, dead.n, edges)[0]
    filled = np.flatnonzero(counts.sum(axis=1))
    assert filled[-1] == 40 - 1 - STOPPED
    assert (counts[filled[0]: filled[-1] + 1] == Window(dead.n, 40 - STOPPED, 1).cell_counts(dead)[-len(
        range(filled[0], filled[-1] + 1)):]).all()


def test_overview_draws_the_stopped_stream_on_the_shared_axis_and_saves_shades() -> None:
    app = LatencyMapApp(iter(dead_rank()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        listing = app.screen.query_one(OverviewList)
        cells = strip_cells(listing.size.width)
        rows = {r.label: r for r in listing.rows}
        dead = rows["rank3/step"]
        assert dead.stale
        p99 = listing._p99.get([dead.hist], [dead.hist.n], listing.clock.edges(cells))[0][0]
        assert np.isnan(p99[-STOPPED:]).all() and np.isfinite(p99[-STOPPED - 1])
        # one column's p99 as the strip of its own would give, on the shared axis
        own = strip_p99(dead.hist, dead.hist.n, cells - STOPPED)[0]
        assert np.allclose(p99[: cells - STOPPED][np.isfinite(own)], own[np.isfinite(own)])
        text = app.screen.plain_lines()
        line = next(t for t in text[1:] if "rank3/step" in t)
        assert "stale" in line
        assert any(ch in line for ch in SHADES[1:])  # the heat strip in shades, not blank
        assert sum(any(ch in t for ch in SHADES[1:]) for t in text) >= 12
        assert "stale: rank3/step" in text[0], text[0]

    run_ended(app, scenario, size=(140, 30))


def test_now_columns_are_what_stale_is_measured_in() -> None:
    acc = Accumulator()
    acc.add([iv for iv in ranks(streams=3) if not (iv.stream.label == "rank0/step"
                                                   and iv.start >= 1_700_000_000.0 + 60 - NOW_COLUMNS)])
    rows = {r.label: r for r in OverviewStats().rows(list(acc.streams.values()))}
    assert not rows["rank0/step"].stale  # NOW_COLUMNS behind: its newest columns are still "now"


def test_columns_a_little_longer_than_the_cells_leave_no_false_gap() -> None:
    from latencymap.core.buckets import NSLOTS
    from latencymap.core.model import Interval, StreamId

    acc = Accumulator()
    counts = np.zeros(NSLOTS, dtype=np.int64)
    counts[10] = 5
    t0 = 1_700_000_000.0
    acc.add([Interval(StreamId("slow/clock", "bpf", "microsec"), t0 + 1.04 * k, t0 + 1.04 * (k + 1), counts)
             for k in range(30)])
    hist = next(iter(acc.streams.values()))
    edges = SharedClock(float(hist.end[-1]), 1.0).edges(40)
    filled = cells_by_time(hist, hist.n, edges)[0].sum(axis=1) > 0
    first = int(np.argmax(filled))
    assert filled[first:].all() and not filled[: first].any()
    assert not filled[max(0, first - 1)] or first == 0


def test_a_live_axis_follows_now_and_an_ended_one_spans_the_whole_run() -> None:
    acc = Accumulator()
    acc.add(dead_rank())
    rows = OverviewStats().rows(list(acc.streams.values()))
    live = SharedClock.of(rows)
    assert live is not None and live.fitted(20) == live  # live: the newest 20 seconds, as before
    ended = SharedClock.of(rows, whole=True)
    assert ended is not None and ended.oldest == 1_700_000_000.0  # the start of the oldest column
    fitted = ended.fitted(20)
    assert fitted.span == pytest.approx(60 / 19.5)  # the run over the strip exactly: no cell before its start
    edges = fitted.edges(20)
    assert edges[0] == pytest.approx(ended.oldest) and edges[-1] > ended.newest
    for hist in acc.streams.values():  # every column of every stream is on the axis
        assert cells_by_time(hist, hist.n, edges)[0].sum() == hist.counts.sum()


def test_an_ended_run_a_little_longer_than_the_strip_fills_it() -> None:
    """62 one-second columns on 60 cells: every cell holds a column or two. Whole columns per cell made it 2 a cell
    and left the first half of the strip empty, its time labels before the run's start (ranks12 at 120x40)."""
    acc = Accumulator()
    acc.add(ranks(streams=2, columns=62))
    rows = OverviewStats().rows(list(acc.streams.values()))
    fitted = SharedClock.of(rows, whole=True).fitted(60)
    edges = fitted.edges(60)
    for hist in acc.streams.values():
        counts = cells_by_time(hist, hist.n, edges)[0]
        assert (counts.sum(axis=1) > 0).all() and counts.sum() == hist.counts.sum()


def test_an_ended_run_shorter_than_the_strip_spans_it() -> None:
    """60 one-second columns on 80 cells: the run from the first cell to the last, not its last 60 cells only."""
    acc = Accumulator()
    acc.add(ranks(streams=3))
    rows = OverviewStats().rows(list(acc.streams.values()))
    assert SharedClock.of(rows).fitted(80) == SharedClock.of(rows)  # live: one column per cell, filling as time goes
    fitted = SharedClock.of(rows, whole=True).fitted(80)
    edges = fitted.edges(80)
    assert fitted.span < 1.0 and edges[0] == pytest.approx(1_700_000_000.0) and edges[-1] > fitted.newest
    for hist in acc.streams.values():
        counts = cells_by_time(hist, hist.n, edges)[0]
        assert (counts.sum(axis=1) > 0).all()  # every cell, the first included
        cells = {tuple(c) for c in counts.tolist()}
        assert cells == {tuple(c) for c in hist.counts.tolist()}  # each cell one whole column, every column shown


def test_an_ended_per_stage_spark_log_shows_every_stage_in_the_overview(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`latencymap spark --per-stage LOG`: stages 0 and 1 ended seconds before the last stage; the strips showed the
    newest 8 s only, so theirs were blank although their numbers were listed."""
    monkeypatch.chdir(tmp_path)
    source = SparkSource(target=str(SPARK), per_stage=True)
    app = LatencyMapApp(diffed(source.items(), "spark"), color_mode="truecolor", analysis=source.analysis)

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        listing = app.screen.query_one(OverviewList)
        cells = strip_cells(listing.size.width)
        rows = listing.rows
        assert len(rows) == 5 and sum(r.ended for r in rows) == 4
        first = min(float(r.hist.start[0]) for r in rows)
        assert max(r.end_s for r in rows) - first > cells * min(r.interval_s for r in rows)  # longer than the axis
        edges = listing.clock.fitted(cells).edges(cells)
        placed = {}
        for r in rows:
            p99 = listing._p99.get([r.hist], [r.hist.n], edges)[0][0]
            assert np.isfinite(p99).any(), r.label
            assert edges[0] < r.hist.end[0] and r.hist.end[-1] <= edges[-1], r.label  # all its columns on the axis
            placed[r.label.split()[3]] = int(np.flatnonzero(np.isfinite(p99))[0])
        assert [placed[s] for s in "01234"] == sorted(placed.values())  # the stages in the order they ran
        await pilot.press("s")
        await pilot.pause()
        text = app.saved[1].read_text().splitlines()
        for stage in "01234":
            line = next(t for t in text if f"stage {stage} " in t)
            assert any(ch in line for ch in SHADES[1:]), line  # the saved frame shows its cells too

    run_ended(app, scenario, size=(160, 40))


def test_the_overview_of_an_ended_short_run_fills_every_strip() -> None:
    """20 columns on strips of 80-odd cells: the saved overview's strips are shaded from their first cell to their last,
    not blank over the 60-odd cells before the run's start."""
    app = LatencyMapApp(iter(ranks(streams=3, columns=20)), color_mode="mono")

    async def scenario(pilot) -> None:
        listing = app.screen.query_one(OverviewList)
        width = listing.size.width
        cells = strip_cells(width)
        assert cells > 60
        start = MARK_W + name_width(width) + 1
        lines = [t for t in app.screen.plain_lines() if "/step" in t]
        assert len(lines) == 3
        for line in lines:
            assert all(ch in SHADES[1:] for ch in line[start: start + cells]), line

    run_ended(app, scenario, size=(160, 20))


def test_an_80x24_overview_has_its_time_axis_under_the_strips() -> None:
    """ranks12 at 80x24: 14-cell strips and lines to spare under them, but the axis was blank (its 2-minute step
    had no round time that fits 14 cells); a smaller step labels them."""
    app = LatencyMapApp(iter(fixture_items(RANKS)), color_mode="mono")

    async def scenario(pilot) -> None:
        listing = app.screen.query_one(OverviewList)
        width = listing.size.width
        assert len(listing.rows) < listing.lines_shown  # room for the axis
        axis = listing.render_line(1 + len(listing.rows)).text
        start = MARK_W + name_width(width) + 1
        used = [i for i, ch in enumerate(axis) if ch != " "]
        assert TICK in axis and start <= used[0] and used[-1] < start + strip_cells(width), axis
        assert any(TICK in line for line in app.screen.plain_lines())

    run_ended(app, scenario, size=(80, 24))


YEARS = 6 * 365 * 86400.0  # two recordings this far apart


def years_apart() -> list:
    """An `old/read` recording of 40 one-second columns, and 3 ranks of 20 one-second columns six years later."""
    return [*synthetic(40, label="old/read", start=1_700_000_000.0 - YEARS), *ranks(streams=3, columns=20)]


def test_recordings_years_apart_each_get_their_part_of_the_axis_and_a_gap_between() -> None:
    """Years over 40-odd cells: each stream's columns fell in one cell (its strip one dot), the axis labels all
    `00:00:00`. The silence between them is cut out: one cell marked `┆` in every strip, each recording over cells
    in proportion to its length, and each one's date at its first cell."""
    app = LatencyMapApp(iter(years_apart()), color_mode="mono")

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        listing = app.screen.query_one(OverviewList)
        width = listing.size.width
        cells = strip_cells(width)
        clock = listing.clock.fitted(cells)
        gap = clock.gaps(cells)
        assert len(gap) == 1 and 40 / 60 * cells - 3 <= gap[0] <= 40 / 60 * cells + 3, (gap, cells)
        edges = clock.edges(cells)
        assert len(edges) == cells + 1 and (np.diff(edges) > 0).all()
        for r in listing.rows:
            counts = cells_by_time(r.hist, r.hist.n, edges)[0]
            assert counts.sum() == r.hist.counts.sum()  # every column on the axis
            filled = np.flatnonzero(counts.sum(axis=1))
            old = r.label == "old/read"
            assert len(filled) >= (gap[0] - 2 if old else cells - gap[0] - 3), (r.label, filled)
            assert (filled < gap[0]).all() if old else (filled > gap[0]).all()
        start = MARK_W + name_width(width) + 1
        lines = app.screen.plain_lines()
        strips = [t for t in lines if "/read" in t or "/step" in t]
        assert len(strips) == 4 and all(t[start + gap[0]] == GAP for t in strips), strips
        axis = next(t for t in lines[len(strips) + 1:] if TICK in t)
        day = {label: time.strftime("%Y-%m-%d", time.localtime(at))
               for label, at in (("old", 1_700_000_000.0 - YEARS), ("new", 1_700_000_000.0))}
        assert axis.index(TICK + day["old"]) == start and axis[start + gap[0]] == GAP, axis
        assert axis.index(TICK + day["new"]) == start + gap[0] + 1, axis

    run_ended(app, scenario, size=(120, 30))


def test_a_silence_is_cut_only_when_longer_than_the_time_with_columns() -> None:
    one = np.array([[0.0, 100.0]])
    assert cut_runs([one, np.array([[150.0, 250.0]])], 1.0) == ()  # a pause shorter than the runs: empty cells
    assert cut_runs([one, np.array([[350.0, 450.0]])], 1.0) == ((0.0, 100.0), (350.0, 450.0))
    assert cut_runs([one, np.array([[150.0, 160.0]])], 10.0) == ()  # and longer than SILENT_INTERVALS intervals
    assert cut_runs([np.array([[0.0, 10.0], [50.0, 60.0]]), np.array([[5.0, 55.0]])], 1.0) == ()  # a peer fills it
    runs = ((0.0, 100.0), (1e9, 1e9 + 50.0), (2e9, 2e9 + 10.0))
    kept, allotted = allot(runs, 40)
    assert kept == runs and sum(allotted) + 2 == 40 and allotted[0] > allotted[1] > allotted[2] >= RUN_CELLS
    kept, allotted = allot(runs, 7)  # too narrow for three: the runs closest in time go together
    assert kept == ((0.0, 1e9 + 50.0), (2e9, 2e9 + 10.0)) and sum(allotted) + 1 == 7


def test_a_column_across_the_silence_counts_at_its_end() -> None:
    """One stream read before and after years of silence: its first column after it spans the years (a counter's
    difference), and is no reason to keep them on the axis."""
    before, after = synthetic(30, label="disk", start=1_700_000_000.0 - YEARS), synthetic(30, label="disk")
    across = replace(after[0], start=before[-1].end, duration=0.0)  # a cumulative source's first one after it
    acc = Accumulator()
    acc.add([*before, across, *after[1:]])
    hist = next(iter(acc.streams.values()))
    assert hist.durations.max() > YEARS / 2
    runs = stream_runs(hist, hist.n, SILENT_INTERVALS * 1.0)
    assert len(runs) == 2 and runs[1][0] == pytest.approx(1_700_000_000.0 - SILENT_INTERVALS)
