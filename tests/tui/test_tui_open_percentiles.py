"""The TUI writes a percentile that is a lower bound only `≥low`, as the report does: past a Prometheus histogram's
largest finite bound (no max seen: `outputs.report.source_open`), or in the log2 rows' open top slot."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from formats_support import open_top_records
from prometheus_support import scraped_intervals
from tui_support import fixture_items, run_ended

from latencymap.core.accumulator import Accumulator
from latencymap.core.model import Interval
from latencymap.core.percentiles import percentile_estimates
from latencymap.outputs.report import first_bucket_note, percentile_text, report_text, stream_report
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.findings import window_findings
from latencymap.tui.inspector import inspect_columns, inspection_summary
from latencymap.tui.layout import INSPECTOR_W
from latencymap.tui.overview import MARK_W, OverviewList, OverviewScreen, _values, name_width, strip_cells
from latencymap.tui.overview_stats import NOW_COLUMNS, OverviewStats, StreamRow
from latencymap.tui.overview_strips import p99_levels, strips_p99
from latencymap.tui.palette import cell_style
from latencymap.tui.percentiles import cell_figures
from latencymap.tui.status import status_text
from latencymap.tui.window import Window
from latencymap.views.frame import LEVELS

#: Top finite bound 100 ms: 30% of the requests take 300 ms, past it, so p99 is only `≥100ms`.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1)
REQUESTS = [0.004] * 70 + [0.3] * 30
#: The inspector's note where its figures lie in a Prometheus source's first bucket (each line fits the panel).
PLACED = "in the source's first bucket (0, 100ms]:\nfigures placed by its exact sum"


def test_a_prometheus_p99_past_the_top_bound_reads_as_a_lower_bound_in_header_overview_and_inspector() -> None:
    """The report writes p99 `≥100ms` (the largest finite bound, values past it not known); the overview's "p99 now"
    and "p99 all" wrote `100ms`. Header, overview and inspector now agree with the report; p50 stays exact."""
    acc = Accumulator()
    acc.add(scraped_intervals(BUCKETS, REQUESTS))
    hist = next(iter(acc.streams.values()))
    source = acc.sources[hist.stream]
    total = stream_report(hist, acc)["total"]
    assert total["open"] == ["p90_s", "p99_s", "p999_s"] and percentile_text(total, 0.99) == "≥100ms"
    p50 = percentile_text(total, 0.50)
    assert not p50.startswith("≥")
    line = status_text(hist, hist.n, state="ended", skipped=0, stream_index=0, streams=1, ingest_rate=0,
                       source=source).plain.splitlines()[1]
    assert f"p50 {p50}  p99 ≥100ms" in line.split("overall", 1)[1], line
    assert "p99 ≥100ms" in inspection_summary(inspect_columns(hist, 0, hist.n, 0, 63, source=source)).plain
    row = OverviewStats().rows([hist], sources=acc.sources)[0]
    assert _values(row)[:3] == (p50, "≥100ms", "≥100ms")
    assert row.open == {"p99 now", "p99 all"}


def test_a_percentile_in_the_rows_open_top_slot_reads_as_a_lower_bound_in_the_overview(tmp_path: Path) -> None:
    """1.5% of the events in the open top slot (counts only): the overview wrote p99 now and all as the slot's low,
    a plain number; now `≥`, as the header's latest and the report."""
    acc = Accumulator()
    acc.add(fixture_items(open_top_records(tmp_path / "top.txt")))
    hist = next(iter(acc.streams.values()))
    total = stream_report(hist, acc)["total"]
    assert total["open"] == ["p99_s", "p999_s"]
    row = OverviewStats().rows([hist])[0]
    assert _values(row)[1:3] == ("≥53,376d", "≥53,376d")  # `≥53,376 days`, fitted to the column
    assert row.open == {"p99 now", "p99 all"}
    line = status_text(hist, hist.n, state="ended", skipped=0, stream_index=0, streams=1, ingest_rate=0).plain
    assert f"p99 {percentile_text(total, 0.99)}" in line.splitlines()[1].split("overall", 1)[1]


#: Half the requests take 200-400 ms, past the top finite bound (100 ms): p90 and p99 of every column lie in `+Inf`.
SLOW = [0.004] * 50 + [0.2 + 0.2 * k / 49 for k in range(50)]
#: More columns than the overview's "now" (which then comes from the rows, not the source's whole-stream buckets).
COLUMNS = NOW_COLUMNS + 3


def _slow_columns(name: str = "req_duration_seconds", values: list[float] = SLOW,
                  buckets: tuple[float, ...] = BUCKETS) -> list[Interval]:
    """`COLUMNS` intervals of a real prometheus_client exporter (`buckets`, up to 100 ms by default) scraped on
    loopback, each but the first (before any request) holding `values`; every one's own `+Inf` bucket, as the
    exposition gave it, holds the requests past the largest finite bound."""
    intervals = scraped_intervals(buckets, values, columns=COLUMNS, name=name)
    above = sum(v > buckets[-1] for v in values)
    assert len(intervals) == COLUMNS
    for k, iv in enumerate(intervals):
        assert iv.source_buckets is not None and iv.source_buckets.bounds[-1] == float("inf")
        held = (int(iv.source_buckets.counts.sum()), int(iv.source_buckets.counts[-1]))
        assert held == ((0, 0) if k == 0 else (len(values), above))
    return intervals


def test_per_column_percentiles_in_the_inf_bucket_read_as_at_least_the_top_bound() -> None:
    """Rebinned, the `+Inf` bucket goes to the row of 100 ms (65.5-131 ms), so the header's "latest (rows)", the
    overview's "p99 now", the inspector on one column and the percentile strip said `p99 129ms`, `p90 114ms` for
    requests of 200-400 ms; now `≥100ms`, as the whole stream's figures. p50 (rank 50 of 100, the 50 below 100 ms
    reach it) stays a plain number."""
    acc = Accumulator()
    acc.add(_slow_columns())
    hist = next(iter(acc.streams.values()))
    source = acc.sources[hist.stream]
    assert percentile_text(stream_report(hist, acc)["total"], 0.99) == "≥100ms"
    latest = status_text(hist, hist.n, state="ended", skipped=0, stream_index=0, streams=1, ingest_rate=0,
                         source=source).plain.splitlines()[1].split("overall", 1)[0]
    assert "latest (rows)" in latest and "p99 ≥100ms" in latest and "p50 ≥" not in latest, latest
    column = inspection_summary(inspect_columns(hist, hist.n - 1, hist.n, 0, 63, source=source)).plain
    assert "p90 ≥100ms" in column and "p99 ≥100ms" in column and "p99.9 ≥100ms" in column and "p50 ≥" not in column
    row = OverviewStats().rows([hist], sources=acc.sources)[0]
    assert row.now_rows and _values(row)[1:3] == ("≥100ms", "≥100ms") and not _values(row)[0].startswith("≥")
    assert row.open == {"p99 now", "p99 all"}
    stats = hist.column_stats(slice(1, None))
    assert (stats.percentiles[:, 1:] == pytest.approx(0.1)) and stats.open[:, 1:].all() and not stats.open[:, 0].any()
    values, at_least = cell_figures(hist, Window(hist.n, 12, 1))
    held = np.isfinite(values[:, 1])
    assert held.sum() == hist.n - 1 and at_least[held, 1].all() and (values[held, 1] == pytest.approx(0.1))
    assert not at_least[:, 0].any()


#: Powers of two in milliseconds, 1 ms to 128 ms: each bucket folds exactly onto one millisecond row.
POW2_BUCKETS = tuple(2.0**k / 1000 for k in range(8))


def test_power_of_two_buckets_tell_their_inf_events_as_other_layouts_do() -> None:
    """Bounds that fold exactly onto rows kept no buckets of their own, so the `+Inf` events (200-400 ms) sat in the
    row of 128 ms (128-256 ms) as if known there: the report, overview, inspector and columns read p99 as a plain
    number below 256 ms. Now they say `≥128ms`, the largest finite bound, as for the default bounds."""
    acc = Accumulator()
    acc.add(_slow_columns(buckets=POW2_BUCKETS))
    hist = next(iter(acc.streams.values()))
    source = acc.sources[hist.stream]
    assert hist.stream.unit == "millisec"  # folded exactly, a row per bucket
    total = stream_report(hist, acc)["total"]
    assert total["open"] == ["p90_s", "p99_s", "p999_s"] and percentile_text(total, 0.99) == "≥128ms"
    assert not percentile_text(total, 0.50).startswith("≥")
    column = inspection_summary(inspect_columns(hist, hist.n - 1, hist.n, 0, 63, source=source)).plain
    assert "p90 ≥128ms" in column and "p99 ≥128ms" in column and "p50 ≥" not in column
    row = OverviewStats().rows([hist], sources=acc.sources)[0]
    assert _values(row)[1:3] == ("≥128ms", "≥128ms") and row.open == {"p99 now", "p99 all"}
    stats = hist.column_stats(slice(1, None))
    assert (stats.percentiles[:, 1:] == pytest.approx(0.128)) and stats.open[:, 1:].all() and \
        not stats.open[:, 0].any()


def test_columns_without_requests_past_the_top_bound_keep_their_rows_figures() -> None:
    """Only a column's own `+Inf` events make its figures lower bounds: columns of fast requests are unchanged (the
    rows' estimate, no `≥`), though the stream's buckets have a `+Inf` bucket."""
    acc = Accumulator()
    acc.add(_slow_columns(values=[0.004] * 60 + [0.07] * 40))
    hist = next(iter(acc.streams.values()))
    stats = hist.column_stats(slice(1, None))
    rows = percentile_estimates(hist.counts_in(slice(1, None)), hist.low, hist.high)
    assert not stats.open.any() and np.array_equal(stats.percentiles, rows)
    assert hist.overflow() == (0.0, pytest.approx(np.nan, nan_ok=True))


def test_the_header_of_the_running_tui_and_its_saved_svg_say_at_least(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI itself (Textual pilot) on the scraped columns: its header's latest p99 and the saved SVG."""
    monkeypatch.chdir(tmp_path)
    app = LatencyMapApp(iter(_slow_columns()), color_mode="truecolor")
    seen: dict[str, str] = {}

    async def scenario(pilot) -> None:
        seen["status"] = str(app.query_one("#status").render())
        await pilot.press("s")
        await pilot.pause(0.5)

    run_ended(app, scenario, size=(120, 40))
    latest = seen["status"].splitlines()[1].split("overall", 1)[0]
    assert "p99 ≥100ms" in latest, latest
    svg = next(p for p in app.saved if p.suffix == ".svg").read_text()
    assert "p99&#160;≥100ms" in svg or "p99 ≥100ms" in svg


def _rank_intervals(slow: list[int], peers: int) -> list[Interval]:
    """The columns of `peers` ranks scraped from real exporters, in time order: those in `slow` half past the top
    bound, the others all at 20 ms."""
    out: list[Interval] = []
    clock: list[Interval] = []
    for rank in range(peers):
        scraped = _slow_columns(f"rank{rank}_step_seconds", SLOW if rank in slow else [0.02] * 100)
        clock = clock or scraped  # on one time axis, as ranks scraped together: none ended before the others
        out += [replace(iv, start=at.start, end=at.end) for iv, at in zip(scraped, clock, strict=True)]
    return sorted(out, key=lambda iv: iv.end)


def _ranks(slow: list[int], peers: int) -> list[StreamRow]:
    """Overview rows of `_rank_intervals`."""
    acc = Accumulator()
    acc.add(_rank_intervals(slow, peers))
    return OverviewStats().rows(list(acc.streams.values()), sources=acc.sources)


def test_vs_peers_of_a_lower_bound_p99_is_a_lower_bound_or_none() -> None:
    """"vs peers" is p99 now over the others' median: rank3's p99 now is only `≥100ms`, so its ratio is only at
    least that (it was written `×4.x`, as if exact); a rank whose others' median holds a lower bound gets none."""
    rows = {r.label: r for r in _ranks([3], 4)}
    slow = rows["rank3_step_seconds"]
    assert "p99 now" in slow.open and "vs peers" in slow.open
    others = rows["rank0_step_seconds"].p99_now
    assert slow.vs_peers == pytest.approx(0.1 / others) and slow.slow
    assert _values(slow)[4] == f"≥×{0.1 / others:.2g} ▲"
    for rank in range(3):  # their others' median is of two exact ranks and rank3, the largest: it is told
        row = rows[f"rank{rank}_step_seconds"]
        assert row.vs_peers == pytest.approx(1.0) and "vs peers" not in row.open
    pair = {r.label: r for r in _ranks([1], 2)}
    assert _values(pair["rank1_step_seconds"])[4].startswith("≥×")
    assert _values(pair["rank0_step_seconds"])[4] == "-"  # its one peer's p99 is a lower bound: no ratio to tell


def test_overview_strip_cells_past_the_top_bound_are_the_bound_and_open() -> None:
    """The overview's heat strips gave a cell of requests past 100 ms the rows' estimate of its `+Inf` events (129 ms),
    a plain value, where its p99 is only `≥100ms`: now that bound, a lower bound only (as `cell_figures` and the
    numbers); a cell of fast requests keeps the rows' estimate, exact."""
    acc = Accumulator()
    acc.add(_rank_intervals([1], 2))
    fast, slow = (next(h for h in acc.streams.values() if h.stream.label == f"rank{k}_step_seconds") for k in (0, 1))
    edges = np.concatenate([[slow.start[0]], slow.end[: slow.n]])  # one cell per column
    (fast_p99, fast_open), (slow_p99, slow_open) = strips_p99([(fast, fast.n), (slow, slow.n)], edges)
    over, bound = slow.overflow_in()
    past = over > 0
    assert past.sum() == slow.n - 1 and (bound[past] == BUCKETS[-1]).all()  # every column but the first, before any
    assert slow_open.tolist() == past.tolist() and (slow_p99[past] == BUCKETS[-1]).all()
    rows = percentile_estimates(slow.counts_in(), slow.low, slow.high, (0.99,))[:, 0]
    assert (rows[past] > BUCKETS[-1]).all()  # what the strip said before: the rows' estimate, past the bound
    assert not fast_open.any() and fast.overflow_in()[0].sum() == 0
    held = fast.counts_in().sum(axis=1) > 0
    np.testing.assert_array_equal(fast_p99[held], cell_figures(fast, Window(fast.n, fast.n, 1))[0][held, 1])
    assert np.isnan(fast_p99[~held]).all()


def test_the_overview_colours_an_open_strip_cell_as_its_bound_and_marks_it(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI itself (Textual pilot): rank1's strip cells are the colour of 100 ms on the scale, marked `≥`, the
    scale ends at that bound (it read `… 129ms`, the rows' estimate), the heading says what `≥` means; rank0's cells
    carry no mark; the saved text frame shows the marks too."""
    monkeypatch.chdir(tmp_path)
    app = LatencyMapApp(iter(_rank_intervals([1], 2)), color_mode="truecolor")
    width = 120
    cells, at = strip_cells(width), MARK_W + name_width(width) + 1

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        listing = app.screen.query_one(OverviewList)
        low, high = listing.scale
        assert high == pytest.approx(BUCKETS[-1]) and low < high
        heading = listing.render_line(0).text
        assert "≥: at least" in heading or "≥ at least" in heading, heading
        lines = {listing.render_line(y).text[MARK_W: at].strip(): listing.render_line(y) for y in (1, 2)}
        slow, fast = lines["rank1_step_seconds"].crop(at, at + cells), lines["rank0_step_seconds"].crop(at, at + cells)
        level = p99_levels([np.array([BUCKETS[-1]])], LEVELS, np.array([low, high]))[0][0][0]
        marked = [seg for seg in slow if "≥" in seg.text]
        assert marked and all(seg.style.bgcolor == cell_style("truecolor", "intensity", level).bgcolor
                              for seg in marked)
        assert "≥" not in fast.text and fast.text.strip() == ""  # colour only: spaces on their backgrounds
        await pilot.press("s")
        await pilot.pause(0.5)

    run_ended(app, scenario, size=(width, 40))
    text = next(p for p in app.saved if p.suffix == ".txt").read_text().splitlines()
    line = next(t for t in text if t[MARK_W: at].strip() == "rank1_step_seconds")
    assert "≥" in line[at: at + cells] and any("≥" in t and "at least" in t for t in text[:3]), text


#: Prometheus' own request histogram: its first bucket is (0, 100ms]; loopback requests take about 300µs.
COARSE = (0.1, 0.2, 0.4, 1.0, 3.0)
FAST = [0.0003] * 40


def test_a_first_bucket_the_exact_sum_proves_faster_reads_as_an_upper_bound_in_header_overview_and_inspector() -> None:
    """Every request fell in (0, 100ms] and the exact sum puts their mean at 300µs. histogram_quantile's straight line
    from 0 gives p50 50ms and p99 99ms: the report says so on a line of its own, which the TUI has no room for. The
    overview wrote "p99 now 300µs" (the rows) beside "p99 all 99ms", and the header "overall … p99 99ms"; they now
    write what is known, `≤100ms`."""
    acc = Accumulator()
    acc.add(scraped_intervals(COARSE, FAST, columns=NOW_COLUMNS + 3))
    hist = next(iter(acc.streams.values()))
    source = acc.sources[hist.stream]
    report = stream_report(hist, acc)
    assert percentile_text(report["total"], 0.99) == "99ms"  # the report keeps histogram_quantile's, with its line
    line = status_text(hist, hist.n, state="ended", skipped=0, stream_index=0, streams=1, ingest_rate=0,
                       source=source).plain.splitlines()[1]
    assert "p50 ≤100ms  p99 ≤100ms" in line.split("overall", 1)[1], line
    whole = inspection_summary(inspect_columns(hist, 0, hist.n, 0, 63, source=source)).plain
    assert "p99 ≤100ms" in whole and "99ms" not in whole.replace("≤100ms", ""), whole
    row = OverviewStats().rows([hist], sources=acc.sources)[0]
    assert _values(row)[2] == "≤100ms" and row.at_most == {"p50 all", "p99 all"}
    assert _values(row)[1].endswith("µs")  # now: the rows (the exact sum places them), short of the whole stream
    one = inspection_summary(inspect_columns(hist, hist.n - 1, hist.n, 0, 63, source=source)).plain
    assert "p99 " in one and PLACED in one, one
    assert max(len(line) for line in one.splitlines()) <= INSPECTOR_W - 2, one  # the panel's border
    items = [item.text for item in window_findings(hist, 0, hist.n, source=source)]
    assert items[1] == first_bucket_note(source, hist.stream.unit) and items[1] in report_text(acc), items


def test_the_first_bucket_notes_are_only_where_the_figures_lie_in_that_bucket() -> None:
    """300µs requests, then 101 ms ones (the source's (100ms, 200ms]): the inspector said of a slow column that its
    figures were 'placed by the exact sum inside the source's (0, 100ms]', and the panel of the slow columns gave the
    whole stream's first-bucket line as if it were theirs."""
    fast = scraped_intervals(COARSE, FAST, columns=5)
    slow = scraped_intervals(COARSE, [0.101] * 40, columns=5)
    shift = fast[-1].end - slow[0].start + 1.0
    acc = Accumulator()
    acc.add([*fast, *(replace(i, start=i.start + shift, end=i.end + shift) for i in slow)])
    hist = next(iter(acc.streams.values()))
    source = acc.sources[hist.stream]
    note = first_bucket_note(source, hist.stream.unit)
    assert note is not None and note in report_text(acc)
    late = inspection_summary(inspect_columns(hist, hist.n - 1, hist.n, 0, 63, source=source)).plain
    assert "placed by its exact sum" not in late, late
    early = inspection_summary(inspect_columns(hist, 1, 2, 0, 63, source=source)).plain
    assert PLACED in early, early
    assert note not in [item.text for item in window_findings(hist, hist.n - 4, hist.n, source=source)]
    assert note in [item.text for item in window_findings(hist, 0, hist.n, source=source)]
