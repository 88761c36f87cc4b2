"""Rebinned streams keep their own buckets: exact totals and histogram_quantile percentiles in the report."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from prometheus_support import TEXT_TYPE, Scripted, histogram_page

from latencymap.cli.main import main
from latencymap.core.buckets import bin_values
from latencymap.core.model import Interval, SourceBuckets, StreamId
from latencymap.core.rebin import rebin_counts
from latencymap.core.source_totals import SourceTotals
from latencymap.protocol import ProtocolReader, format_record
from latencymap.sources.otlp.points import row_extremes

BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, math.inf)  # seconds, as Prometheus' `le`


def quantile(q: float, bounds: tuple[float, ...], counts: list[int]) -> float:
    """Prometheus' histogram_quantile, written out from its documentation."""
    total = sum(counts)
    rank, seen = q * total, 0
    for i, c in enumerate(counts):
        if seen + c >= rank:
            if math.isinf(bounds[i]):
                return bounds[i - 1]
            low = bounds[i - 1] if i else 0.0
            return low + (bounds[i] - low) * (rank - seen) / c
        seen += c
    raise AssertionError


def test_percentiles_follow_histogram_quantile() -> None:
    counts = [3, 10, 40, 30, 12, 5]
    totals = SourceTotals(BOUNDS)
    totals.add(SourceBuckets(BOUNDS, np.array(counts), 1.5))
    for q in (0.5, 0.9, 0.99, 0.999):
        assert totals.percentile(q) == pytest.approx(quantile(q, BOUNDS, counts))
    assert totals.percentile(0.999) == 0.1  # in +Inf: the largest finite bound
    assert totals.events == 100 and totals.time_s == 1.5 and not totals.mixed
    totals.add(SourceBuckets(BOUNDS[:-1], np.array(counts[:-1])))
    assert totals.mixed and totals.events == 100


def test_source_lines_survive_both_readers_and_bad_ones_are_named() -> None:
    stream = StreamId("api", "prometheus", "microsec")
    bounds = tuple(b * 1e6 for b in BOUNDS)
    counts = np.array([1, 2, 3, 4, 5, 6])
    text, later = (format_record(stream, end, rebin_counts(bounds, counts), start=end - 1, per_interval=True,
                                 source=SourceBuckets(bounds, counts, 0.25)) for end in (101.0, 102.0))
    for items in (list(ProtocolReader("a").read_chunks([text + later])), list(ProtocolReader("b").read(
            (text + later).splitlines(True)))):
        assert len(items) == 2
        got = items[0].source_buckets
        assert isinstance(items[0], Interval) and got is not None
        assert got.bounds == bounds and got.counts.tolist() == counts.tolist() and got.total_time == 0.25
    zero_first = format_record(stream, 101.0, rebin_counts((0.0, *bounds[1:]), counts), start=100.0,
                               per_interval=True, source=SourceBuckets((0.0, *bounds[1:]), counts, None))
    (item,) = ProtocolReader("otel").read_chunks([zero_first])  # OpenTelemetry's default bounds start at 0
    assert isinstance(item, Interval) and item.source_buckets is not None and item.source_buckets.bounds[0] == 0.0
    bad = text.replace("sourcecounts, 1, 2, 3, 4, 5, 6", "sourcecounts, 1, 2")
    (notice,) = ProtocolReader("rec").read_chunks([bad])
    assert "sourcebuckets' and 'sourcecounts' lines of the same length" in notice.message
    assert "rec: line 1" in notice.message


def scraped(tmp_path: Path, metric: str, les: Sequence[float], cumulative: list[list[int]], sums: list[float]) -> Path:
    """A recording of `latencymap scrape` over pages of one classic histogram: cumulative counts and `_sum`s."""
    pages = [histogram_page(metric, les, c, s) for c, s in zip(cumulative, sums, strict=True)]
    endpoint = Scripted([(200, TEXT_TYPE, p) for p in pages])
    rec = tmp_path / f"{metric}.rec"
    try:
        result = CliRunner().invoke(main, ["scrape", endpoint.url, "--metric", metric, "--interval", "0.05",
                                           "--count", str(len(pages) - 1), "--emit", "--record", str(rec)])
    finally:
        endpoint.close()
    assert result.exit_code == 0, result.output
    return rec


def test_a_scrape_recorded_then_reported_keeps_the_exporters_buckets(tmp_path: Path) -> None:
    les = BOUNDS
    first, second, third = [2, 5, 9, 9, 10, 10], [3, 9, 20, 26, 30, 31], [3, 12, 30, 40, 45, 50]
    rec = scraped(tmp_path, "h_seconds", les, [first, second, third], [0.5, 1.75, 3.0])
    report = CliRunner().invoke(main, ["report", "--format", "json", str(rec)])
    (stream,) = json.loads(report.output)["streams"]
    per_bucket = np.diff([0, *third]) - np.diff([0, *first])
    source = stream["source_buckets"]
    assert source["counts"] == per_bucket.tolist()
    assert source["events"] == stream["total"]["events"] == third[-1] - first[-1]
    assert source["time_s"] == pytest.approx(3.0 - 0.5)
    assert source["bounds_s"][:-1] == pytest.approx(list(les[:-1])) and source["bounds_s"][-1] is None
    assert source["p50_s"] == pytest.approx(quantile(0.5, les, per_bucket.tolist()))
    text = CliRunner().invoke(main, ["report", str(rec)]).output
    assert "40 events" in text and "2.5s waited (the source's exact sum)" in text
    assert "rebinned: the source's 6 buckets" in text
    assert stream["total"]["time_s"] == pytest.approx(2.5) and stream["total"]["p50_s"] == source["p50_s"]


def test_an_exact_fold_keeps_its_buckets_for_inf_and_the_report_takes_its_time_from_the_sum(tmp_path: Path) -> None:
    """Power-of-two millisecond buckets fold onto the rows as they are, but for `+Inf`, whose events the row of its
    lower bound holds as if known: its buckets are kept (they kept only the `_sum`, and p99 read a plain number in
    that row), so the report says the percentiles past 16 ms are only at least that, nothing rebinned; the `_sum` is
    the time waited, live and through a recording."""
    les = (*(b / 1000 for b in (1, 2, 4, 8, 16)), math.inf)
    first, second, third = [1, 2, 4, 4, 5, 5], [2, 6, 9, 12, 14, 15], [4, 9, 15, 20, 22, 25]
    rec = scraped(tmp_path, "h_milliseconds", [b * 1000 for b in les], [first, second, third], [20.0, 95.5, 180.25])
    text = rec.read_text()  # a plain-text recording (no .zst name)
    assert "sourcetime, " in text and "sourcebuckets, 1.0, 2.0, 4.0, 8.0, 16.0, inf\n" in text
    report = CliRunner().invoke(main, ["report", "--format", "json", str(rec)])
    (stream,) = json.loads(report.output)["streams"]
    per_bucket = (np.diff([0, *third]) - np.diff([0, *first])).tolist()
    assert stream["stream"]["unit"] == "millisec" and stream["source_buckets"]["counts"] == per_bucket
    assert stream["source_buckets"]["rebinned"] is False
    assert stream["total"]["events"] == third[-1] - first[-1] == sum(per_bucket)
    above = per_bucket[-1] / sum(per_bucket)  # the share in +Inf: the percentiles past 1 - above are open
    assert stream["total"]["open"] == [f"{n}_s" for n, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99),
                                                               ("p999", 0.999)) if q > 1 - above]
    assert stream["total"]["p99_s"] == pytest.approx(0.016)
    assert stream["total"]["time_s"] == pytest.approx((180.25 - 20.0) / 1000)  # the `_sum`, not midpoints
    assert stream["total"]["mean_s"] == pytest.approx((180.25 - 20.0) / 1000 / 20)
    summary = CliRunner().invoke(main, ["report", str(rec)]).output
    assert "(the source's exact sum)" in summary and "rebinned" not in summary and "p99 ≥16ms" in summary
    assert "the source's 6 buckets fold onto the rows below, one row each (+Inf in the row of its lower bound)" in \
        summary


def test_the_sum_alone_survives_both_readers() -> None:
    stream = StreamId("api", "prometheus", "millisec")
    counts = np.zeros(64, dtype=np.int64)
    counts[3:6] = (4, 2, 1)
    sum_only = SourceBuckets((), np.zeros(0, dtype=np.int64), 0.0375)
    text, later = (format_record(stream, end, counts, start=end - 1, per_interval=True, source=sum_only)
                   for end in (101.0, 102.0))
    assert "sourcetime, 0.0375" in text and "sourcebuckets" not in text
    for items in (list(ProtocolReader("a").read_chunks([text + later])),
                  list(ProtocolReader("b").read((text + later).splitlines(True)))):
        got = items[1].source_buckets
        assert isinstance(items[1], Interval) and got is not None
        assert got.bounds == () and len(got.counts) == 0 and got.total_time == 0.0375
    cumulative = text.replace("counts, interval\n", "")
    (notice,) = [i for i in ProtocolReader("rec").read_chunks([cumulative]) if not isinstance(i, Interval)][:1]
    assert "a source's sum needs a 'counts, interval' record" in notice.message


def test_a_fast_services_first_bucket_is_shown_where_its_sum_puts_it(tmp_path: Path) -> None:
    """Prometheus' own request histogram starts at (0, 100 ms]: requests of ~0.9 ms all land there. The rows follow
    the `_sum`, not the rule's [50, 100) ms, and the report says why its histogram_quantile percentiles differ."""
    les = (0.1, 0.2, 0.4, 1.0, math.inf)
    cumulative = [[4, 4, 4, 4, 4], [10, 10, 10, 10, 10], [16, 16, 16, 16, 16]]
    rec = scraped(tmp_path, "http_seconds", les, cumulative, [0.0036, 0.0090, 0.0144])  # 0.9 ms a request
    (stream,) = json.loads(CliRunner().invoke(main, ["report", "--format", "json", str(rec)]).output)["streams"]
    rows = [(b["low"], b["high"]) for b in stream["buckets"]]
    events = np.sum(stream["frequency"], axis=0)  # intervals of any length: rows that hold events are > 0
    held = [rows[i] for i in np.flatnonzero(events)]
    assert held and all(high <= 0.002048 for _, high in held)  # from 0 to 1.8 ms (mean 0.9 ms), not 50-100 ms
    assert stream["total"]["mean_s"] == pytest.approx(0.0009)
    assert stream["source_buckets"]["p50_s"] == pytest.approx(0.05)  # histogram_quantile's, as Grafana shows
    text = CliRunner().invoke(main, ["report", str(rec)]).output
    assert ("the first bucket, (0, 100ms], holds 100% of the events, whose mean the exact sum puts at 900µs at "
            "most (the rows place them so)") in text
    totals = SourceTotals((1e5, 2e5, math.inf))
    totals.add(SourceBuckets((1e5, 2e5, math.inf), np.array([3, 1, 0]), 0.35))  # up to 83 ms each: the octave fits
    assert totals.first_bucket_faster(1e-6) is None


def test_a_stream_with_exact_times_keeps_finer_buckets_and_says_so() -> None:
    """HdrHistogram logs: the rows are the source's buckets folded exactly and carry their exact times; the finer
    buckets kept beside them give the percentiles. The time is the rows' ("exact"), not "estimated" for want of a
    sum, and nothing was rebinned."""
    from latencymap.core.accumulator import accumulate
    from latencymap.outputs.report import build_report, report_text

    stream = StreamId("log.hlog", "hdrhistogram", "nanosec")
    counts = np.zeros(64, dtype=np.int64)
    counts[18] = 100  # [131072, 262144) ns: 98 at 140 µs and 2 at 250 µs
    time = np.zeros(64)
    time[18] = (98 * 140_000 + 2 * 250_000) * 1e-9
    own = SourceBuckets((139_999.0, 140_000.0, 249_999.0, 250_000.0), np.array([0, 98, 0, 2]), None)
    acc = accumulate(iter([Interval(stream, 100.0 + k, 101.0 + k, counts, time, source_buckets=own)
                           for k in range(3)]))
    (doc,) = build_report(acc)["streams"]
    assert doc["source_buckets"]["rebinned"] is False and doc["source_buckets"]["whole_stream"]
    assert doc["source_buckets"]["time_s"] is None and doc["intensity_exact"]
    assert doc["total"]["time_s"] == pytest.approx(3 * float(time.sum()))
    assert doc["total"]["p99_s"] == pytest.approx(250e-6, abs=1e-9) and doc["total"]["p50_s"] < 140.001e-6
    text = report_text(acc)
    assert "300 events (100/s), 42.7ms waited (exact)" in text
    assert ("finer buckets: the source's own 4 (2 holding events) are kept beside the rows below; percentiles come "
            "from the source's buckets (linear inside each)") in text
    assert "rebinned" not in text and "p99 250µs" in text


def _stalled(datasource: str) -> list[Interval]:
    """20 one-second columns of 60 events of 100 µs and 40 of 200 µs, none in column 6, and a 2 s wait in column 7
    (a stall), as an HdrHistogram log (its fine buckets and exact times), a Prometheus scrape (rebinned, with sums)
    or OpenTelemetry points (rebinned, with sums, min and max)."""
    unit, scale = ("nanosec", 1e3) if datasource == "hdrhistogram" else ("microsec", 1.0)
    stream = StreamId("api", datasource, unit)
    out = []
    for k in range(20):
        held = [0, 60, 0, 40, 0, int(k == 7)] if k != 6 else [0] * 6
        values = np.repeat(np.array([99, 100, 199, 200, 2e6 - 1, 2e6]) * scale, held)
        if datasource == "hdrhistogram":  # fine buckets: (99.999 µs, 100 µs], (199.999 µs, 200 µs], (2 s - 1 ns, 2 s]
            bounds: tuple[float, ...] = tuple(v * scale - d for v in (100, 200, 2e6) for d in (1, 0))
            counts, sums = bin_values(values)
            out.append(Interval(stream, 100.0 + k, 101.0 + k, counts, sums * 1e-9,
                                source_buckets=SourceBuckets(bounds, np.array(held), None)))
            continue
        bounds = (50.0, 150.0, 250.0, 1.5e6, 2.5e6, math.inf)
        per_bucket = np.array([0, held[1], held[3], 0, held[5], 0])
        counts = rebin_counts(bounds, per_bucket)
        seen = (row_extremes(counts, float(values.min()), float(values.max()), unit)
                if datasource == "otlp" and len(values) else None)
        out.append(Interval(stream, 100.0 + k, 101.0 + k, counts, extremes=seen,
                            source_buckets=SourceBuckets(bounds, per_bucket, float(values.sum()) * 1e-6)))
    return out


@pytest.mark.parametrize("datasource", ["hdrhistogram", "prometheus", "otlp"])
def test_a_stall_is_compared_with_the_p50_the_header_prints(datasource: str) -> None:
    """h2's basic.hlog: the header said p50 200µs (the log's own buckets, as the library's 200063 ns) and the stall
    "5,679× the stream's p50 (168µs)" (the rows'). A stream whose own buckets give its percentiles (HdrHistogram's,
    Prometheus', OpenTelemetry's) compares its stall with that p50, in the text and in the JSON shift."""
    from latencymap.analysis.findings import dur, times
    from latencymap.core.accumulator import accumulate
    from latencymap.outputs.report import build_report, report_text

    acc = accumulate(iter(_stalled(datasource)))
    (doc,) = build_report(acc)["streams"]
    p50 = doc["total"]["p50_s"]
    assert doc["source_buckets"]["whole_stream"]
    if datasource == "otlp":  # (50, 150] µs is wider than the row [64, 128) µs holding the rows' p50: theirs
        assert doc["total"]["from_rows"] == ["p50_s"] and 64e-6 <= p50 < 128e-6
    else:
        assert doc["source_buckets"]["p50_s"] == p50
    (stall,) = [e for e in doc["episodes"] if e["kind"] == "stall"]
    mean = stall["time_s"] / stall["events"]
    assert stall["shift_octaves"] == pytest.approx(math.log2(mean / p50))
    text = report_text(acc)
    assert f"p50 {dur(p50)}" in text
    assert f"is {times(mean / p50)} the stream's p50 ({dur(p50)})" in text, text
