"""The TUI writes a percentile that is a lower bound only `≥low`, as the report does: past a Prometheus histogram's
largest finite bound (no max seen: `outputs.report.source_open`), or in the log2 rows' open top slot."""

from __future__ import annotations

from pathlib import Path

from formats_support import open_top_records
from prometheus_support import scraped_intervals
from tui_support import fixture_items

from latencymap.core.accumulator import Accumulator
from latencymap.outputs.report import percentile_text, stream_report
from latencymap.tui.inspector import inspect_columns, inspection_summary
from latencymap.tui.overview import _values
from latencymap.tui.overview_stats import OverviewStats
from latencymap.tui.status import status_text

#: Top finite bound 100 ms: 30% of the requests take 300 ms, past it, so p99 is only `≥100ms`.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1)
REQUESTS = [0.004] * 70 + [0.3] * 30


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
