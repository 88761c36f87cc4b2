"""The inspector and the status line show the accumulator's own numbers."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import numpy as np
import pytest
from formats_support import open_top_records
from tui_support import example_items, fixture_items, run_ended, synthetic, wait_ended

from latencymap.core.accumulator import Accumulator
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.core.percentiles import PERCENTILE_NAMES
from latencymap.core.units import format_duration
from latencymap.outputs.report import stream_report
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.heatmap import HeatMap
from latencymap.tui.inspector import Inspector, inspect_columns, inspection_chart
from latencymap.tui.palette import detect_mode
from latencymap.tui.percentiles import PercentileStrip
from latencymap.tui.status import status_text
from latencymap.views.frame import fold_rows


def test_inspector_equals_the_accumulator_for_each_cursor_column() -> None:
    items = example_items()
    app = LatencyMapApp(iter(items), color_mode="truecolor")
    ref = Accumulator()
    ref.add(items)
    hist = next(iter(ref.streams.values()))

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            spec = app.query_one("#frequency").spec
            lo, hi = spec.lo, spec.hi  # the rows on screen (fitted to the window)
            for _ in range(5):
                await pilot.press("left")
                ins = app.query_one(Inspector).inspection
                col = app.view.cursor
                assert (ins.first, ins.stop) == (col, col + 1)
                counts = fold_rows(hist.counts[col:col + 1], lo, hi)[0]
                assert [r.count for r in ins.rows] == counts.astype(int).tolist()
                assert ins.events == int(hist.counts[col].sum())
                stats = hist.column_stats(slice(col, col + 1))
                np.testing.assert_array_equal(list(ins.percentiles.values()), stats.percentiles[0])
                assert ins.start == hist.start[col] and ins.end == hist.end[col]
                assert ins.events_per_s == stats.events_per_s[0]
                total = counts.sum()
                if total:
                    np.testing.assert_allclose([r.percent for r in ins.rows], counts / total * 100)
                    assert abs(ins.rows[-1].cumulative - 100) < 1e-9

    asyncio.run(main())


def test_zoomed_cell_inspects_the_merged_columns() -> None:
    acc = Accumulator()
    acc.add(synthetic(40))
    hist = next(iter(acc.streams.values()))
    ins = inspect_columns(hist, 10, 14, 8, 20)
    assert ins.events == int(hist.counts[10:14].sum())
    assert ins.percentiles == hist.totals(slice(10, 14)).percentiles


def test_status_shows_label_safely_and_state() -> None:
    stream = StreamId("evil\x1b[31mlabel\x07", "bpf", "millisec")
    counts = np.zeros(64, dtype=np.int64)
    counts[3] = 10
    acc = Accumulator()
    acc.add([Interval(stream, 0.0, 1.0, counts)])
    hist = acc.streams[stream]
    text = status_text(hist, 1, state="paused", skipped=2, stream_index=0, streams=1, ingest_rate=0.0)
    assert "\x1b" not in text.plain and "\x07" not in text.plain
    assert "PAUSED" in text.plain and "skipped 2" in text.plain and "columns 1" in text.plain
    assert "p99" in text.plain and "10 ev/s" in text.plain


def test_colour_modes() -> None:
    assert detect_mode("truecolor", no_color=False) == "truecolor"
    assert detect_mode("256", no_color=False) == "256"
    assert detect_mode("truecolor", no_color=True) == "mono"
    assert detect_mode("truecolor", no_color=False, enabled=False) == "mono"


def test_mono_mode_draws_shades() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="mono")

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            strips = app.query_one("#frequency").build_strips(110, "mono")
            assert any("█" in s.text for s in strips)

    asyncio.run(main())


def test_a_failing_flow_ends_the_app_and_keeps_the_error() -> None:
    def broken():
        yield from synthetic(3)
        raise ValueError("boom")

    app = LatencyMapApp(broken(), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(1.0)

    asyncio.run(main())
    assert isinstance(app.ingest.error, ValueError) and app.return_code == 1


def test_no_color_env_draws_shades(monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = LatencyMapApp(iter(example_items()))

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            heat = app.query_one("#frequency")
            assert heat.mode == "mono"
            assert any("█" in heat.render_line(y).text for y in range(heat.spec.rows + 2))

    asyncio.run(main())


def _short_columns(seconds: float, counts: list[list[int]]) -> object:
    """A history of columns `seconds` long (real dates), each column's counts in slots 10, 11, ..."""
    stream = StreamId("short", "bpf", "millisec")
    items = []
    for k, col in enumerate(counts):
        c = np.zeros(NSLOTS, dtype=np.int64)
        c[10:10 + len(col)] = col
        start = 1_795_700_000.0 + k * seconds
        items.append(Interval(stream, start, start + seconds, c, None, duration=seconds))
    acc = Accumulator()
    acc.add(items)
    return acc.streams[stream]


def test_a_sub_second_column_shows_tenths_or_hundredths_not_a_zero_length_time() -> None:
    hist = _short_columns(0.1, [[5]] * 4)
    ins = inspect_columns(hist, 2, 3, 8, 20)
    assert ins.start_text.endswith(":20.2") and ins.end_text.endswith(":20.3"), (ins.start_text, ins.end_text)
    hist = _short_columns(0.01, [[5]] * 4)
    ins = inspect_columns(hist, 2, 3, 8, 20)
    assert ins.start_text.endswith(":20.02") and ins.end_text.endswith(":20.03"), (ins.start_text, ins.end_text)
    assert len(ins.end_text) == len("HH:MM:SS.03")
    whole = inspect_columns(_short_columns(1.0, [[5]] * 4), 2, 3, 8, 20)  # a second or more: whole seconds
    assert len(whole.end_text) == 8 and "." not in whole.start_text


def test_a_bucket_with_events_never_reads_zero_percent() -> None:
    hist = _short_columns(1.0, [[3200, 1]])  # 1 event of 3,201: 0.03 %
    ins = inspect_columns(hist, 0, 1, 8, 20)
    for compact, at in ((False, -3), (True, -2)):
        lines = inspection_chart(ins, None, compact).plain.splitlines()[1:]
        (one,) = [line.split() for line in lines if line.split()[at] == "1"]
        assert one[at + 1] == "<0.1", lines
        empty = [line.split() for line in lines if line.split()[at] == "0"]
        assert all(row[at + 1] == "0.0" for row in empty)  # no events: 0.0 still


def test_counts_past_2_53_read_exactly_and_rates_in_p() -> None:
    """The inspector's counts were folded through float64: 2**53 + 1 read 9007199254740992 and 2**62 - 1 read
    4611686018427387904. Exact now, with their shares, and the status line's rate in P, not `461168602G ev/s`."""
    big = [2**53 + 1, 2**62 - 1]
    hist = _short_columns(10.0, [big])
    ins = inspect_columns(hist, 0, 1, 8, 20)
    assert ins.events == sum(big)
    assert [r.count for r in ins.rows if r.count] == big and all(type(r.count) is int for r in ins.rows)
    assert [round(r.percent, 4) for r in ins.rows if r.count] == [0.1949, 99.8051]
    chart = inspection_chart(ins, None).plain
    assert all(f" {n} " in chart for n in big), chart
    text = status_text(hist, 1, state="", skipped=0, stream_index=0, streams=1, ingest_rate=0.0).plain
    assert "462P ev/s" in text and "G ev/s" not in text, text


def test_neighbouring_one_second_columns_show_their_times_alike() -> None:
    """bcc's readings come 0.9999 s to 1.0001 s apart, at .622 past the second: the inspector showed tenths for the
    shorter columns and whole seconds (cut, 0.6 s early) for the others, and so did the cursor label. One precision
    for the view now: whole seconds, rounded, for every column, in the inspector and under the map."""
    stream = StreamId("syscall read", "bpf", "nanosec")
    base = 1_795_700_000.0  # a whole second, local time whatever the zone
    ends = [base + 0.622 + k - (0.0001 if k % 2 else 0.0) for k in range(31)]
    items = []
    for k in range(1, len(ends)):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[20] = k
        items.append(Interval(stream, ends[k - 1], ends[k], counts, None, duration=ends[k] - ends[k - 1]))
    app = LatencyMapApp(iter(items), color_mode="truecolor")

    def whole(epoch: float) -> str:
        return time.strftime("%H:%M:%S", time.localtime(round(epoch)))

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            freq = next(m for m in app.query(HeatMap) if m.kind == "frequency")
            for _ in range(6):
                await pilot.press("left")
                await pilot.pause(0.05)
                ins = app.query_one(Inspector).inspection
                assert ins is not None and ins.stop - ins.first == 1
                assert ins.start_text.endswith(" " + whole(ins.start)), (ins.start, ins.start_text)
                assert ins.end_text == whole(ins.end), (ins.end, ins.end_text)
                (cursor_line,) = [line for line in freq.plain_lines() if "▲" in line]
                assert re.findall(r"\d\d:\d\d:\d\d\S*", cursor_line) == [whole(ins.end)], cursor_line

    asyncio.run(main())


def test_an_hgrm_columns_inspector_says_the_headers_percentiles_from_the_sources_buckets(fixtures: Path) -> None:
    """The only column of an `.hgrm` is the whole stream: the inspector gives the percentiles the header and the
    report give, from the file's own buckets (p99 10.5 ms, inside its rows at 0.9892 and 0.9903), not the log2 rows'
    (12.6 ms)."""
    app = LatencyMapApp(iter(fixture_items(fixtures / "hdrhistogram" / "service_ms.hgrm")), color_mode="mono")

    async def scenario(pilot) -> None:
        screen = [strip.text for strip in app.screen._compositor.render_strips()]
        overall = screen[1].split("overall", 1)[1]
        assert "p99 10.5ms" in overall and "p50 312µs" in overall and "(source's buckets)" in overall, screen[1]
        inspector = app.query_one(Inspector)
        ins = inspector.inspection
        assert ins is not None and (ins.first, ins.stop) == (0, 1)
        assert 10.379e-3 <= ins.percentiles[0.99] <= 10.568e-3 and 0.687e-3 <= ins.percentiles[0.90] <= 0.694e-3
        assert ins.mean_s == pytest.approx(0.771e-3, rel=1e-3)  # its footer: Mean = 0.771 ms
        lines = inspector.plain_lines()
        assert "p50 312µs  p90 688µs" in lines and "p99 10.5ms  p99.9 15.8ms" in lines, lines

    run_ended(app, scenario)


def test_one_column_of_a_rebinned_stream_of_many_is_its_rows(fixtures: Path) -> None:
    """The source's buckets are sums over the whole stream: a column of many (OTLP) is inspected from its rows."""
    acc = Accumulator()
    acc.add(fixture_items(fixtures / "otlp" / "checkout_metrics.jsonl"))
    for hist in acc.streams.values():
        source = acc.sources[hist.stream]
        col = hist.n - 2
        ins = inspect_columns(hist, col, col + 1, 0, NSLOTS - 1, source=source)
        assert ins.percentiles == hist.totals(slice(col, col + 1)).percentiles
        whole = inspect_columns(hist, 0, hist.n, 0, NSLOTS - 1, source=source)
        total = stream_report(hist, acc)["total"]
        assert whole.percentiles == {q: total[f"{name}_s"] for q, name in PERCENTILE_NAMES.items()}
        assert whole.percentiles != hist.totals().percentiles


def test_percentiles_in_the_open_top_bucket_read_as_lower_bounds(tmp_path: Path) -> None:
    """1.5% of the events in the open top bucket (counts only, its values not known): the header, the inspector and
    the strip wrote p99 as a closed number, `4611686018s`, where the report writes `≥low` (a lower bound only).
    Now they all write it as the report does, `≥53,376 days`; p50, in a closed bucket, stays as it was."""
    path = open_top_records(tmp_path / "top.txt")
    app = LatencyMapApp(iter(fixture_items(path)), color_mode="mono")
    low = format_duration(2.0**62 * 1e-9, long_units=True)
    assert low == "53,376 days"

    async def scenario(pilot) -> None:
        screen = [strip.text for strip in app.screen._compositor.render_strips()]
        latest, overall = screen[1].split("overall", 1)
        for part in (latest, overall):
            assert f"p99 ≥{low}" in part and "p50 1.46µs" in part, screen[1]
        lines = app.query_one(Inspector).plain_lines()
        assert f"p99 ≥{low}  p99.9 ≥{low}" in lines and "p50 1.46µs  p90 1.93µs" in lines, lines
        strip = app.query_one(PercentileStrip).plain_lines()
        assert strip[1].endswith(f"▲ p99 ≥{low}") and strip[2].endswith("▲ p50 1.46µs"), strip

    run_ended(app, scenario)
