"""OTLP points' `min` and `max`: decoded (JSON and protobuf), carried into each column's values seen, and keeping
the report's percentiles and rows within them, with the real SDK's points; a recording keeps them."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from otlp_support import Recorded, push_and_receive
from test_otlp_points import explicit, run

from latencymap.cli import main as cli
from latencymap.core.accumulator import Accumulator
from latencymap.core.model import Interval
from latencymap.outputs.report import report_text, stream_report
from latencymap.sources.otlp.decode import decode_json, decode_protobuf
from latencymap.sources.otlp.points import CUMULATIVE, DELTA

QS = {"p50_s": 50, "p90_s": 90, "p99_s": 99, "p999_s": 99.9}


def milliseconds() -> Recorded:
    """Request durations of about 3 ms in a histogram in seconds with the SDK's default bounds (0, 5, 10, 25 ...)."""
    return Recorded("http.server.request.duration", "s", lambda rng, n: rng.lognormal(math.log(0.003), 0.4, 300))


def widening() -> Recorded:
    """Lognormal latencies (ms) that widen from push to push into an exponential histogram of 4 buckets, so that
    the SDK ends at a negative scale (each bucket many octaves wide)."""
    return Recorded("rpc.expo", "ms", lambda rng, n: rng.lognormal(math.log(50), (0.5, 1.5, 3.0)[n], 300))


def report_of(items: list[Any]) -> dict[str, Any]:
    """The JSON report of the one stream `items` hold."""
    acc = Accumulator()
    acc.add(item for item in items if isinstance(item, Interval))
    (hist,) = acc.streams.values()
    return stream_report(hist, acc)


@pytest.mark.slow
@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
@pytest.mark.parametrize("encoding", ["protobuf", "json"])
@pytest.mark.parametrize("recorder", [milliseconds, widening])
def test_percentiles_and_rows_stay_within_the_sdk_min_and_max(recorder: type, encoding: str,
                                                              temporality: str) -> None:
    record = recorder()
    got, pusher = push_and_receive(encoding, temporality, record, pushes=3, expo_max_size=4)
    ((_, point),) = pusher.sdk.items()
    values = np.array(record.values)
    to_s = 1.0 if recorder is milliseconds else 1e-3
    least, most = point.min * to_s, point.max * to_s
    assert (least, most) == (values.min() * to_s, values.max() * to_s)
    doc = report_of(got)
    total = doc["total"]
    assert total["events"] == len(values) == point.count  # exact totals unchanged
    assert total["time_s"] == pytest.approx(values.sum() * to_s, rel=1e-9)
    for name in QS:
        assert least <= total[name] <= most, (name, total[name], least, most)
    truth = {name: float(np.percentile(values, q)) * to_s for name, q in QS.items()}
    if recorder is milliseconds:  # before: p50 2.5 s, p99 4.95 s (a straight line over the bucket 0-5 s)
        assert all(truth[n] / 2 <= total[n] <= truth[n] * 2 for n in QS), (total, truth)
    else:  # before: p999 thousands of seconds (the top bucket's octaves up to 16,777 s)
        assert sdk_scale(pusher) < 0
        assert truth["p99_s"] <= total["p999_s"] <= most
    buckets = doc["buckets"]
    assert buckets[0]["high"] > least and buckets[-1]["low"] <= most  # no row wholly outside [min, max]
    assert buckets[0]["min_s"] == pytest.approx(least, rel=1e-12)
    assert buckets[-1]["max_s"] == pytest.approx(most, rel=1e-12)


class PowersOfTwo(Recorded):
    """Microsecond latencies in a histogram whose bounds are powers of two, 1 to 1024 us (they fold onto the rows,
    `+Inf` in the row of 1024 us): most near 20 us; `slow` of them 3 to 7 ms, in `+Inf`."""

    def __init__(self, slow: int) -> None:
        super().__init__("rpc.duration", "us", lambda rng, n: np.concatenate(
            [rng.uniform(17, 30, 90), rng.uniform(3000, 7000, slow)]))

    def setup(self, meter: Any) -> Any:
        return meter.create_histogram(self.name, unit=self.unit,
                                      explicit_bucket_boundaries_advisory=[2.0**k for k in range(11)])


@pytest.mark.slow
@pytest.mark.parametrize("slow", [0, 10])
def test_power_of_two_buckets_are_said_folded_only_where_the_rows_hold_them_so(slow: int) -> None:
    """The SDK's `max` spreads the `+Inf` bucket's events onto the rows up to it (3-7 ms here): those rows are not the
    buckets, so the report says rebinned (it said each bucket folds onto one row, `+Inf` in the row of its lower
    bound, where the rows showed it over three); with `+Inf` empty the rows are the buckets, and it says so."""
    record = PowersOfTwo(slow)
    got, _ = push_and_receive("json", "delta", record, pushes=2)
    acc = Accumulator()
    acc.add(item for item in got if isinstance(item, Interval))
    (hist,) = acc.streams.values()
    rows = hist.totals().counts
    assert rows.sum() == len(record.values)
    assert (np.count_nonzero(rows) > 2) == (slow > 0)  # the slow ones spread over rows from 2 ** 10 us to their max
    assert stream_report(hist, acc)["source_buckets"]["rebinned"] is (slow > 0)
    text = report_text(acc)
    assert ("fold onto the rows below, one row each" in text) is (slow == 0)
    assert ("rebinned: the source's 12 buckets" in text) is (slow > 0)


def sdk_scale(pusher: Any) -> int:
    ((_, point),) = pusher.sdk.items()
    return int(point.scale)


@pytest.mark.slow
def test_a_recording_keeps_what_min_and_max_say(tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.json.file.metric_exporter import FileMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.metrics.view import ExponentialBucketHistogramAggregation, View
    from opentelemetry.sdk.resources import Resource

    source = tmp_path / "metrics.jsonl"
    reader = PeriodicExportingMetricReader(FileMetricExporter(source), export_interval_millis=3_600_000)
    provider = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": "svc"}), views=[
        View(instrument_name="*.expo", aggregation=ExponentialBucketHistogramAggregation(max_size=4))])
    records = (milliseconds(), widening())
    instruments = [record.setup(provider.get_meter("t")) for record in records]
    for n in range(3):
        for record, instrument in zip(records, instruments, strict=True):
            record(instrument, n)
        reader.force_flush()
    provider.shutdown()
    recording = tmp_path / "metrics.rec"
    with recording.open("wb") as out:  # `--emit` writes to the process's own stdout
        subprocess.run([sys.executable, "-m", "latencymap", "view", "--emit", str(source)], stdout=out, check=True,
                       timeout=120)
    assert "extremes, " in recording.read_text()
    runner = CliRunner()
    reports = []
    for path in (source, recording):
        result = runner.invoke(cli.main, ["report", "--format", "json", str(path)])
        assert result.exit_code == 0, result.output
        reports.append({s["stream"]["label"]: {k: s[k] for k in ("total", "buckets", "source_buckets")}
                        for s in json.loads(result.stdout)["streams"]})
    assert reports[0] == reports[1]
    most = {"svc/http.server.request.duration": max(records[0].values), "svc/rpc.expo": max(records[1].values) / 1e3}
    assert {label: stream["total"]["p999_s"] <= most[label] for label, stream in reports[0].items()} == \
        dict.fromkeys(most, True)


def test_min_and_max_are_decoded_from_json_and_protobuf() -> None:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
    from otlp_support import json_request, protobuf_request, sdk_collect

    data = sdk_collect([0.25, 3.0, 7.5], name="rpc.duration")
    doc, body = json_request(data), protobuf_request(data)
    assert [(p.least, p.most) for p in (decode_json(doc).points[0], decode_protobuf(body).points[0])] == \
        [(0.25, 7.5)] * 2
    dp = doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["histogram"]["dataPoints"][0]
    del dp["min"], dp["max"]
    request = ExportMetricsServiceRequest.FromString(body)
    request.resource_metrics[0].scope_metrics[0].metrics[0].histogram.data_points[0].ClearField("min")
    for point in (decode_json(doc).points[0], decode_protobuf(request.SerializeToString()).points[0]):
        assert (point.least, point.most) == (None, None)  # absent: not known (not 0)
    dp["min"], dp["max"] = "8.0", 7.5  # min above max: neither is used
    assert (decode_json(doc).points[0].least, decode_json(doc).points[0].most) == (None, None)


def test_a_delta_point_min_and_max_bound_its_rows_and_values_seen() -> None:
    point = explicit(110, [0, 90, 10, 0], start_s=100, temporality=DELTA)
    point.least, point.most = 1.1, 7.0  # ms; buckets (-inf, 0], (0, 5], (5, 10], (10, inf)
    (column,) = [i for i in run(point) if isinstance(i, Interval)]
    used = np.flatnonzero(column.counts)
    assert column.counts.sum() == 100
    seen = column.extremes
    assert seen is not None
    assert seen[0, used[0]] == pytest.approx(1.1e-3) and seen[1, used[-1]] == pytest.approx(7e-3)
    assert 2.0 ** (used[-1] - 1) <= 7000 and 2.0 ** used[0] > 1100  # rows (µs) within [1.1 ms, 7 ms]


def test_a_cumulative_min_and_max_bound_the_columns_diffed_from_them() -> None:
    first = explicit(110, [0, 50, 0, 0], start_s=100, temporality=CUMULATIVE)
    first.least, first.most = 2.0, 4.0
    second = explicit(120, [0, 90, 10, 0], start_s=100, temporality=CUMULATIVE)
    second.least, second.most = 2.0, 9.0  # the max grew: the second column holds 9 ms; its min is at least 2 ms
    columns = [i for i in run(first, second) if isinstance(i, Interval)]
    assert [c.counts.sum() for c in columns] == [50, 50]
    for column, most in zip(columns, (4e-3, 9e-3), strict=True):
        seen = column.extremes
        assert seen is not None
        assert np.nanmin(seen[0]) >= 2e-3 - 1e-12 and np.nanmax(seen[1]) == pytest.approx(most)


def test_min_and_max_the_buckets_contradict_are_not_used() -> None:
    point = explicit(110, [0, 0, 10, 0], start_s=100, temporality=DELTA)
    point.least, point.most = 1.0, 3.0  # every value is in (5, 10] ms
    (column,) = [i for i in run(point) if isinstance(i, Interval)]
    assert column.extremes is None


def test_without_min_and_max_nothing_changes() -> None:
    plain = explicit(110, [0, 90, 10, 0], start_s=100, temporality=DELTA)
    (column,) = [i for i in run(plain) if isinstance(i, Interval)]
    assert column.extremes is None


def sdk_columns(temporality: str) -> tuple[list[Interval], list[float]]:
    """The columns latencymap makes of ten exports of a histogram in seconds with the SDK's default bounds (every
    value in its bucket (0, 5 s]): a hundred requests of about 3 ms each, but those of export 6, twenty times slower;
    and the values recorded."""
    rng = np.random.default_rng(5)
    exports = [(rng.lognormal(math.log(0.003), 0.4, 100) * (20 if export == 6 else 1)).tolist()
               for export in range(10)]
    return recorded_columns(temporality, exports), [value for export in exports for value in export]


def recorded_columns(temporality: str, exports: list[list[float]], unit: str = "s",
                     min_max: bool = True) -> list[Interval]:
    """The columns latencymap makes of the real SDK's exports of a histogram in `unit` (default bounds, and points
    without min and max unless `min_max`), one export after recording each list of `exports`."""
    from opentelemetry.sdk.metrics import Histogram, MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
    from opentelemetry.sdk.resources import Resource
    from otlp_support import TEMPORALITY, protobuf_request

    from latencymap.sources.otlp.points import PointStreams

    reader = InMemoryMetricReader(preferred_temporality={Histogram: TEMPORALITY[temporality]})
    views = [] if min_max else [View(instrument_name="*", aggregation=ExplicitBucketHistogramAggregation(
        record_min_max=False))]
    provider = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": "svc"}), views=views)
    histogram = provider.get_meter("t").create_histogram("http.server.request.duration", unit=unit)
    streams, columns = PointStreams(), []
    for export in exports:
        for value in export:
            histogram.record(value)
        decoded = decode_protobuf(protobuf_request(reader.get_metrics_data()))
        columns += [i for i in streams.feed(decoded, "sdk") if isinstance(i, Interval)]
    provider.shutdown()
    return columns


def median_row(column: Interval) -> int:
    return int(np.searchsorted(np.cumsum(column.counts), column.counts.sum() / 2))


def test_a_cumulative_columns_exact_sum_places_it_as_its_delta_twins() -> None:
    """A cumulative point's min and max are those since the start: they bound a column diffed from it, but its exact
    sum (the time of its own events) places them, as the same export's delta point does. Before: every column after
    the slow one spread over [0.6 ms, 195 ms] (min and max since the start), their medians 8-16 ms, a lasting shift."""
    delta, values = sdk_columns("delta")
    cumulative, again = sdk_columns("cumulative")
    assert values == again and len(delta) == len(cumulative) == 10
    assert [c.counts.sum() for c in cumulative] == [100] * 10
    medians = [median_row(c) for c in delta]
    assert [median_row(c) for c in cumulative] == medians
    ms = 1000  # microsecond rows: row r holds [2 ** (r - 1), 2 ** r) µs
    assert [2 ** (m - 1) < 4 * ms and 2 ** m > 2 * ms for m in medians] == [i != 6 for i in range(10)]
    assert 2 ** (medians[6] - 1) >= 32 * ms  # the slow export's own column, about 60 ms


@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_percentiles_in_a_bucket_far_wider_than_the_rows_come_from_the_rows(temporality: str) -> None:
    """Every value in the source's bucket (0, 5 s]: its percentiles come from the rows, which place each column's
    events by its exact sum, bounded to that bucket between the values seen, and agree with the report's own rows.
    Before: p50 13.5 ms (log-uniform between the stream's min and max) where 55% of the events are under 4.1 ms."""
    columns, values = sdk_columns(temporality)
    acc = Accumulator()
    acc.add(columns)
    (hist,) = acc.streams.values()
    total = stream_report(hist, acc)["total"]
    truth = {name: float(np.percentile(values, q)) for name, q in QS.items()}
    assert all(truth[n] / 1.5 <= total[n] <= truth[n] * 1.5 for n in QS), (total, truth)
    assert min(values) <= total["p50_s"] and total["p999_s"] <= max(values)
    text = report_text(acc)
    assert "percentiles come from the rows (log-uniform inside each), bounded to the source's bucket holding" in text
    assert "as histogram_quantile" not in text and "histogram_quantile draws" not in text


@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_events_spread_widely_inside_one_bucket_keep_their_spread(temporality: str) -> None:
    """Fifty requests of 3 ms, thirty of 20 ms and twenty of 300 ms an export, all in the SDK's bucket (0, 5 s]: each
    column's sum (67 ms a request) places them over the widest part of [3, 300] ms (min and max) averaging that,
    about all of it: a fifth at 131 ms or more, a tenth or more under 8.2 ms. Before: one octave around 67 ms,
    nothing at or above 131 ms, nothing under 32.8 ms in a cumulative column; p90 115 ms, p99 131 ms (truth 300 ms)."""
    columns = recorded_columns(temporality, [[0.003] * 50 + [0.02] * 30 + [0.3] * 20] * 6)
    assert len(columns) == 6
    for column in columns:  # microsecond rows: row r holds [2 ** (r - 1), 2 ** r) µs
        assert column.counts.sum() == 100
        assert column.counts[:14].sum() >= 10 and 15 <= column.counts[18:20].sum() <= 25
        assert not column.counts[20:].any()
    acc = Accumulator()
    acc.add(columns)
    (hist,) = acc.streams.values()
    total = stream_report(hist, acc)["total"]
    assert total["p90_s"] >= 0.15 and total["p99_s"] >= 0.25 and total["p50_s"] <= 0.05


@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_an_overflow_without_a_max_goes_where_the_sum_proves_its_events_are(temporality: str) -> None:
    """An SDK View that records no min and max (`record_min_max=False`), the default bounds in ms (the last 10 s):
    900 requests of about 3 ms and 100 of about 30 s an export. The overflow (+Inf) went whole into the row of 10 s;
    the 2,000 s more its events took went into every row's time, the fast rows' 3.2x theirs (0.29% of the time for
    0.09%). The sum proves the overflow's events 29.9 s on average at least: they are placed from 10 s up, and the
    fast rows keep about their own time."""
    rng = np.random.default_rng(11)
    exports = [(np.concatenate([rng.lognormal(math.log(3.0), 0.3, 900), rng.lognormal(math.log(30_000.0), 0.2, 100)])
                ).tolist() for _ in range(3)]
    columns = recorded_columns(temporality, exports, unit="ms", min_max=False)
    assert [c.extremes for c in columns] == [None] * 3
    acc = Accumulator()
    acc.add(columns)
    (hist,) = acc.streams.values()
    report = stream_report(hist, acc)
    values = np.concatenate(exports) / 1e3
    assert report["total"]["events"] == len(values) and report["total"]["time_s"] == pytest.approx(values.sum())
    events, spent, _ = hist.slot_sums()  # microsecond rows: row r holds [2 ** (r - 1), 2 ** r) µs
    fast = values[values < 10].sum() / values.sum()
    assert spent[:24].sum() / spent.sum() == pytest.approx(fast, rel=0.3)  # the rows below 8.39 s
    assert events[24:].sum() == 300 and events[25:].sum() >= 150  # from 8.39 s, and from 16.8 s
    assert report["total"]["p99_s"] == 10.0 and "p99_s" in report["total"]["open"]  # still only "at least 10 s"


def burst_findings(temporality: str) -> list[dict[str, Any]]:
    """The report's findings of ten exports of 200 requests of about 3 ms in a histogram in seconds (the SDK's default
    bounds: every value in (0, 5 s]), one of 1 s in export 1, and export 5's twenty times slower."""
    rng = np.random.default_rng(5)
    exports = [(rng.lognormal(math.log(0.003), 0.3, 200) * (20 if export == 5 else 1)).tolist()
               for export in range(10)]
    exports[1][0] = 1.0
    acc = Accumulator()
    acc.add(recorded_columns(temporality, exports))
    (hist,) = acc.streams.values()
    findings: list[dict[str, Any]] = stream_report(hist, acc)["findings"]
    return findings


def test_a_cumulative_burst_after_an_outlier_is_named_as_its_delta_twin_names_it() -> None:
    """A cumulative column's min and max are since the start: after one request of 1 s, [1.1 ms, 1 s] for every
    later column. The burst's 200 requests of 33-126 ms (mean 65 ms) were spread over the widest part of that range
    averaging 65 ms, 1.1-379 ms, into the fast rows: "unimodal ... tail dominates", where the delta twin (each
    column's own min and max) names the burst in col 5. A column whose min and max are bounds only is placed over no
    more octaves than the series' first column (since its start, its min and max its own): the burst is named."""
    for temporality in ("delta", "cumulative"):
        bands = [f for f in burst_findings(temporality) if f["kind"] == "band"]
        assert len(bands) == 1, (temporality, bands)
        assert bands[0]["where"]["first_col"] == bands[0]["where"]["last_col"] == 5
        assert bands[0]["events"] == pytest.approx(201, abs=2) and bands[0]["where"]["low_s"] >= 0.016
