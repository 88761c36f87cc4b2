"""A stream whose bucket layout changes, from the real SDK: delta exponential points whose scale changes from one
export to the next, and a redeploy with new explicit bounds. The time waited and the mean stay the exact sums';
the report's source buckets cover the whole stream, or say how much of it they do cover."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from otlp_support import Recorded, by_label, exporter, free_port, push_and_receive

from latencymap.core.accumulator import accumulate
from latencymap.outputs.gates import check_gates, parse_gate
from latencymap.outputs.report import build_report, report_text
from latencymap.sources.otlp.receiver import receive


def widening() -> Recorded:
    """Request durations in seconds: narrow on even exports (a fine scale), wide on odd ones (a coarser scale)."""
    return Recorded("http.server.request.duration.expo", "s",
                    lambda rng, n: rng.uniform(0.001, 0.02 if n % 2 == 0 else 0.5, 100), seed=8)


def only_stream(items: list[Any]) -> tuple[list[Any], dict[str, Any], str]:
    acc = accumulate(items)
    (stream,) = build_report(acc)["streams"]
    return next(iter(by_label(items).values())), stream, report_text(acc)


def test_delta_exponential_points_whose_scale_changes_keep_the_exact_time_and_all_their_buckets() -> None:
    record = widening()
    got, _ = push_and_receive("protobuf", "delta", record, pushes=6)
    columns, stream, text = only_stream(got)
    scales = {round(1 / math.log2(c.source_buckets.bounds[-1] / c.source_buckets.bounds[-2])) for c in columns}
    assert len(scales) > 1  # the SDK chose a finer scale for the narrow exports
    values = np.array(record.values)
    total = stream["total"]
    assert total["events"] == len(values) == 600
    assert total["time_s"] == pytest.approx(values.sum(), rel=1e-9)  # not the rows' estimate
    assert total["mean_s"] == pytest.approx(values.mean(), rel=1e-9)
    own = stream["source_buckets"]
    assert not own["mixed_bounds"] and own["whole_stream"] and own["events"] == own["stream_events"] == 600
    assert own["time_s"] == pytest.approx(values.sum(), rel=1e-9)
    assert own["p50_s"] == pytest.approx(np.median(values), rel=0.1)  # histogram_quantile over every event
    assert "(the source's exact sum)" in text and "percentiles come from the source's buckets" in text
    acc = accumulate(got)
    mean = values.mean()
    assert not check_gates(acc, [parse_gate(f"mean > {mean * 1.001 * 1e3:.6f}ms")])  # the exact mean passes


def test_a_redeploy_with_new_explicit_bounds_keeps_the_exact_time_and_says_what_its_buckets_hold() -> None:
    """viewchange.sh's shape: one pod (the same service.instance.id) restarted with a View of other bounds."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/metrics"
    items = receive(f"127.0.0.1:{port}", idle_timeout=0.5)
    got = [next(items)]
    rng = np.random.default_rng(4)
    values: list[float] = []
    for bounds in ((1.0, 2.5, 5.0, 10.0, 50.0, 100.0), (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)):
        reader = PeriodicExportingMetricReader(exporter("protobuf", url, "cumulative"),
                                               export_interval_millis=3_600_000)
        provider = MeterProvider(
            metric_readers=[reader], resource=Resource.create({"service.name": "pod", "service.instance.id": "p1"}),
            views=[View(instrument_name="*", aggregation=ExplicitBucketHistogramAggregation(bounds))])
        histogram = provider.get_meter("t").create_histogram("rpc.duration", unit="ms")
        try:
            for _ in range(3):
                for value in rng.lognormal(1.2, 0.6, 200).tolist():
                    histogram.record(value)
                    values.append(value)
                assert reader.force_flush(10_000)
        finally:
            provider.shutdown()
    got += items
    _, stream, text = only_stream(got)
    total = stream["total"]
    assert total["events"] == len(values) == 1200
    assert total["time_s"] == pytest.approx(sum(values) / 1e3, rel=1e-9)
    assert total["mean_s"] == pytest.approx(np.mean(values) / 1e3, rel=1e-9)
    own = stream["source_buckets"]
    assert own["mixed_bounds"] and not own["whole_stream"]
    assert own["stream_events"] == 1200 and own["events"] == 600  # the first deployment's buckets only
    assert own["time_s"] == pytest.approx(sum(values[:600]) / 1e3, rel=1e-9)  # the time of those 600
    assert "waited (the source's exact sum)" in text
    assert "do not nest (they hold 600 of the 1,200 events), so percentiles come from the rows" in text


def test_a_view_without_bounds_is_one_bucket_in_the_report() -> None:
    """nobounds/run.py's shape: a View with no bucket boundaries leaves one (+Inf) bucket: "1 bucket is kept"."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/metrics"
    items = receive(f"127.0.0.1:{port}", idle_timeout=0.5)
    got = [next(items)]
    reader = PeriodicExportingMetricReader(exporter("protobuf", url, "delta"), export_interval_millis=3_600_000)
    provider = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": "nb"}),
                             views=[View(instrument_name="*", aggregation=ExplicitBucketHistogramAggregation([]))])
    histogram = provider.get_meter("t").create_histogram("rpc.duration", unit="ms")
    try:
        for value in (3.0, 4.0, 5.0):
            histogram.record(value)
        assert reader.force_flush(10_000)
    finally:
        provider.shutdown()
    got += items
    _, stream, text = only_stream(got)
    assert stream["source_buckets"]["bounds_s"] == [None] and stream["total"]["time_s"] == pytest.approx(0.012)
    assert "rebinned: the source's 1 bucket is kept beside the rows below" in text
