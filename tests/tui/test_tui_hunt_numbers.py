"""The TUI's numbers agree with the report's: a rebinned stream's whole-stream percentiles from its own buckets (header
and overview), the header's interval, the Spark panel's task counts, a pinned compact legend, the zoomed cursor label.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from prometheus_support import DEFAULT_BUCKETS, TEXT_TYPE, Scripted, histogram_page
from tui_support import example_items, fixture_items, run_ended

from latencymap.core.accumulator import Accumulator
from latencymap.core.model import Interval, Notice
from latencymap.core.units import format_duration
from latencymap.outputs.report import stream_report, stream_summary
from latencymap.sources.prometheus.scrape import ScrapeSource
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.axis import clock, cursor_strip
from latencymap.tui.heatmap import HeatMap
from latencymap.tui.overview_stats import OverviewStats
from latencymap.tui.status import status_text
from latencymap.tui.stragglers import stage_line
from latencymap.tui.window import Window
from latencymap.views.options import ViewOptions

ROOT = Path(__file__).resolve().parents[2]
OTLP = ROOT / "fixtures" / "otlp" / "checkout_metrics.jsonl"
HGRM = ROOT / "fixtures" / "hdrhistogram" / "service_ms.hgrm"


def _accumulated(path: Path) -> Accumulator:
    acc = Accumulator()
    acc.add(fixture_items(path))
    return acc


def test_header_overall_of_a_rebinned_stream_is_the_reports() -> None:
    for path in (OTLP, HGRM):
        acc = _accumulated(path)
        for hist in acc.streams.values():
            source = acc.sources.get(hist.stream)
            total = stream_report(hist, acc)["total"]
            line = status_text(hist, hist.n, state="ended", skipped=0, stream_index=0, streams=1, ingest_rate=0,
                               source=source).plain.splitlines()[1]
            overall = line.split("overall", 1)[1]
            assert f"p50 {format_duration(total['p50_s'])}" in overall, (hist.stream.label, line)
            assert f"p99 {format_duration(total['p99_s'])}" in overall, (hist.stream.label, line)
            assert f"mean {format_duration(total['mean_s'])}" in overall, (hist.stream.label, line)
            if source is not None and source.bounds:  # a rebinned stream says where its numbers come from
                assert "source's buckets" in line and ("latest (rows)" in line or hist.n == 1)


def test_header_overall_of_an_hdrhistogram_log_is_the_librarys(tmp_path: Path) -> None:
    """98% at 140 µs and 2% at 250 µs, in one row, written by the library: the running app's header says the
    library's p99, 250 µs, from the log's own sub-buckets (the row read ~150 µs)."""
    from hdr_support import Logged, library_histogram, write_library_log

    values = [140_000] * 98 + [250_000] * 2
    path = write_library_log(tmp_path / "bimodal.hlog", [Logged(None, 1_700_000_000.0 + k, 1.0, values * 25)
                                                         for k in range(8)], 1_700_000_000.0)
    assert library_histogram(values).get_value_at_percentile(99) == 250_111
    app = LatencyMapApp(iter(fixture_items(path)), color_mode="mono")

    async def scenario(pilot) -> None:
        line = [strip.text for strip in app.screen._compositor.render_strips()][1]
        overall = line.split("overall", 1)[1]
        assert "p99 250µs" in overall and "p50 140µs" in overall and "(source's buckets)" in overall, line
        assert "latest (rows)" in line

    run_ended(app, scenario)


def test_cart_p99_is_the_gates_not_the_rows() -> None:
    acc = _accumulated(OTLP)
    cart = next(h for h in acc.streams.values() if "/cart" in h.stream.label)
    line = status_text(cart, cart.n, state="ended", skipped=0, stream_index=0, streams=1, ingest_rate=0,
                       source=acc.sources[cart.stream]).plain.splitlines()[1]
    assert "p99 72.9ms" in line and "87.8ms" not in line


def test_paused_header_keeps_the_whole_stream_figures_it_showed() -> None:
    acc = _accumulated(OTLP)
    cart = next(h for h in acc.streams.values() if "/cart" in h.stream.label)
    source = acc.sources[cart.stream]
    kw = dict(state="paused", skipped=0, stream_index=0, streams=1, ingest_rate=0, source=source)
    whole = status_text(cart, cart.n, **kw).plain.splitlines()[1]
    assert status_text(cart, cart.n, **kw).plain.splitlines()[1] == whole
    earlier = status_text(cart, cart.n - 3, **kw).plain.splitlines()[1]  # not the whole stream: the rows', unlabelled
    assert "source's buckets" not in earlier


def test_overview_p99_all_of_a_rebinned_stream_is_the_reports() -> None:
    acc = _accumulated(OTLP)
    histories = list(acc.streams.values())
    rows = OverviewStats().rows(histories, sources=acc.sources)
    for row in rows:
        total = stream_report(row.hist, acc)["total"]
        assert row.p99_all == total["p99_s"] and row.p50_all == total["p50_s"], row.label


def test_header_interval_is_the_typical_column_not_the_last() -> None:
    acc = _accumulated(OTLP)
    cart = next(h for h in acc.streams.values() if "/cart" in h.stream.label)
    assert float(cart.durations[-1]) < 0.01  # the fixture's last column is a sliver
    head = status_text(cart, cart.n, state="ended", skipped=0, stream_index=0, streams=1,
                       ingest_rate=0).plain.splitlines()[0]
    assert "interval 567ms" in head  # as the report writes durations


def test_stage_line_counts_tasks_as_the_report() -> None:
    stage = {"stage": 4, "attempt": 0, "tasks": 41, "succeeded": 40, "num_tasks": 40, "failed": 1, "killed": 0,
             "speculative": 0, "median_s": 0.412, "max_s": 0.462, "skew": 1.12}
    assert stage_line(stage).startswith("stage 4.0: 40 tasks, 1 failed attempt, median 412ms")


def test_compact_pinned_legend_names_the_pinned_max() -> None:
    app = LatencyMapApp(iter(example_items()), ViewOptions(frequency_maxval=1000), color_mode="mono")

    async def scenario(pilot) -> None:
        freq = next(m for m in app.query(HeatMap) if m.kind == "frequency")
        assert freq.spec is not None and freq.spec.rows < 8  # the one-line legend
        text = "\n".join(freq.plain_lines())
        assert "pinned 1k" in text and "max 2.4k" not in text
        assert "data 2.4k" in text

    run_ended(app, scenario, size=(80, 24))


def test_zoomed_cursor_label_is_the_cells_end() -> None:
    acc = Accumulator()
    acc.add(example_items())
    hist = next(iter(acc.streams.values()))
    win = Window(hist.n, 40, 4)
    cursor = hist.n - 3  # inside the last cell, not its last column
    a, b = win.columns_of(win.cell_of(cursor))
    assert b - 1 != cursor
    text = cursor_strip(hist, win, cursor, 120).text
    want = clock(float(hist.end[b - 1]), float(hist.start[0]), float(hist.end[b - 1] - hist.start[a]))
    assert want in text
    assert clock(float(hist.end[cursor]), float(hist.start[0]), 1.0) not in text
    assert math.isfinite(float(np.asarray(hist.end)[b - 1]))


def test_tenths_of_a_second_are_rounded_with_the_seconds() -> None:
    at = 1_700_000_020.0  # a whole second, local time whatever the zone
    assert clock(at + 0.96, 0.0, step=0.1) == clock(at + 1.0, 0.0, step=0.1)  # 20.96 s reads 21.0, not 20.0
    assert clock(at + 0.34, 0.0, step=0.1).endswith(".3") and clock(at + 0.34, 0.0).count(".") == 0
    assert clock(20.96, 0.0, step=0.1, shift=0.0) == "00:00:21.0"  # a time of day


def _scraped_stream() -> list[Interval | Notice]:
    """Four columns of a real scrape: a classic histogram on prometheus_client's default bounds (rebinned), with
    its exact `_sum`."""
    bounds = (*DEFAULT_BUCKETS, math.inf)
    pages = [histogram_page("svc_seconds", bounds, [0, 0, 30 * k, *[40 * k] * (len(bounds) - 3)], 0.7 * k)
             for k in range(1, 6)]
    endpoint = Scripted([(200, TEXT_TYPE, p) for p in pages])
    try:
        source = ScrapeSource(url=endpoint.url, metric="svc_seconds", interval=0.01, count=4)
        return [i for i in source.items() if isinstance(i, Interval | Notice)]
    finally:
        endpoint.close()


def test_intensity_title_says_how_the_reports_header_says_the_time_is_known() -> None:
    for items, words in ((_scraped_stream(), "the source's exact sum"), (example_items(), None)):
        acc = Accumulator()
        acc.add(items)
        hist = next(iter(acc.streams.values()))
        header = stream_summary(hist, acc)[0]
        app = LatencyMapApp(iter(items), color_mode="mono")

        async def scenario(pilot, header: str = header, words: str | None = words) -> None:
            title = pilot.app.query_one("#intensity", HeatMap).plain_lines()[0]
            if words is None:  # PyLatencyMap's example: no times, the midpoints' estimate
                assert "(estimated from bucket midpoints)" in header and ", estimated from bucket midpoints" in title
            else:
                assert f"({words})" in header and f"(s/s), {words}  [" in title and "midpoints" not in title

        run_ended(app, scenario, size=(160, 50))


def test_one_task_and_one_attempt_are_singular_as_in_the_report() -> None:
    """`1 tasks` in the stragglers panel and the report: one noun count, written as `core.units.plural` does."""
    one = {"stage": 2, "attempt": 0, "tasks": 1, "succeeded": 1, "num_tasks": 1, "failed": 1, "killed": 2,
           "median_s": 0.5, "max_s": 0.5}
    assert stage_line(one).startswith("stage 2.0: 1 task, 1 failed attempt, 2 killed attempts, median 500ms")
    assert stage_line({**one, "succeeded": 1, "num_tasks": 3}).startswith("stage 2.0: 1 of 3 tasks,")
    assert stage_line({"stage": 2, "succeeded": None, "tasks": 1}).startswith("stage 2.0: 1 task, ")
    assert stage_line({"stage": 2, "succeeded": None}).startswith("stage 2.0: no task count, ")


def test_overview_now_of_a_rebinned_stream_is_marked_rows_or_its_sources_when_whole() -> None:
    """"p99 now" of a rebinned stream: the rows' (15.5 ms where histogram_quantile says 10.0 ms) said so in the
    header as the map screen's "latest (rows)"; where the "now" columns are the whole stream, its source's buckets'
    (the header's and the report's figure)."""
    from latencymap.core.percentiles import percentile_estimates
    from latencymap.tui.overview import overview_head
    from latencymap.tui.overview_stats import NOW_COLUMNS

    acc = _accumulated(OTLP)
    rows = OverviewStats().rows(list(acc.streams.values()), sources=acc.sources)
    for row in rows:
        hist = row.hist
        assert hist.n > NOW_COLUMNS and row.now_rows, row.label
        p50, p99 = percentile_estimates(hist.counts[hist.n - NOW_COLUMNS:].sum(axis=0), hist.low, hist.high,
                                        (0.50, 0.99), seen=hist.seen)  # the points' min and max bound the rows
        assert (row.p50_now, row.p99_now) == (p50, p99)
    head = "".join(f.text for f in overview_head("ended", len(rows), rows, "", "p99 now", 0))
    assert "p50/p99 now (rows)" in head and "(rows) of" not in head
    plain = OverviewStats().rows(list(_accumulated(HGRM).streams.values()))  # no sources given: rows, not marked
    assert not any(r.now_rows for r in plain)

    acc = Accumulator()
    acc.add(_scraped_stream())  # 4 columns: "now" is the whole stream
    hist = next(iter(acc.streams.values()))
    total = stream_report(hist, acc)["total"]
    row, = OverviewStats().rows([hist], sources=acc.sources)
    assert not row.now_rows
    assert (row.p50_now, row.p99_now) == (row.p50_all, row.p99_all) == (total["p50_s"], total["p99_s"])
    rows_p99 = percentile_estimates(hist.counts[: hist.n].sum(axis=0), hist.low, hist.high, (0.99,))[0]
    assert rows_p99 != total["p99_s"]  # the rows would say otherwise
    row, = OverviewStats().rows([hist], stops=[hist.n - 1], sources=acc.sources)  # paused short of the whole
    assert row.now_rows and row.p99_all == total["p99_s"]
    head = "".join(f.text for f in overview_head("paused", 2, [row, *plain[:1]], "", "p99 now", 0))
    assert "p50/p99 now (rows) of 1" in head
