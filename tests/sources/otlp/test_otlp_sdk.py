"""Acceptance: the real SDK exporting to `listen --otlp` and `--otlp-grpc`, delta and cumulative, protobuf and JSON.

Every observation the SDK made is counted once (cross-checked with the SDK's in-memory reader on the same
meter provider), explicit and exponential buckets keep the SDK's own counts and sum, exponential histograms at scale
>= 0 in their own unit fold exactly onto the slots of the observed values, and coarser scales are spread.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import numpy as np
import pytest
from otlp_support import by_label, messages, push_and_receive, slot_totals

from latencymap.core.buckets import bin_values
from latencymap.core.source_totals import SourceTotals

ROUTES = ("/cart", "/pay")
#: The gRPC exporter starts gRPC in this process: those cases run last (tests/conftest.py).
GRPC = [pytest.param(name, marks=pytest.mark.grpc) for name in ("grpc", "grpc+gzip")]


class Lognormal:
    """Request latencies (ms) on two routes, recorded into an explicit and an exponential histogram."""

    def __init__(self, per_push: int = 300, seed: int = 22) -> None:
        self.rng = np.random.default_rng(seed)
        self.per_push = per_push
        self.values: dict[str, list[float]] = {route: [] for route in ROUTES}

    def setup(self, meter: Any) -> tuple[Any, Any]:
        return meter.create_histogram("rpc.explicit", unit="ms"), meter.create_histogram("rpc.expo", unit="ms")

    def __call__(self, instruments: tuple[Any, Any], n: int) -> None:
        for value, route in zip(self.rng.lognormal(2.5, 1.4, self.per_push).tolist(),
                                self.rng.integers(0, len(ROUTES), self.per_push).tolist(), strict=True):
            for instrument in instruments:
                instrument.record(value, {"route": ROUTES[route]})
            self.values[ROUTES[route]].append(value)


@pytest.mark.slow
@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
@pytest.mark.parametrize("encoding", ["protobuf", "protobuf+gzip", "json", *GRPC])
def test_every_observation_is_counted_once(encoding: str, temporality: str) -> None:
    record = Lognormal()
    got, pusher = push_and_receive(encoding, temporality, record)
    streams = by_label(got)
    assert not [m for m in messages(got)[1:]], messages(got)
    for route in ROUTES:
        values = np.array(record.values[route])
        explicit = streams[f"acceptance/rpc.explicit{{route={route}}}"]
        expo = streams[f"acceptance/rpc.expo{{route={route}}}"]
        sdk_explicit = pusher.sdk[("rpc.explicit", (("route", route),))]
        sdk_expo = pusher.sdk[("rpc.expo", (("route", route),))]
        assert sdk_explicit.count == sdk_expo.count == len(values)  # the SDK's own in-memory count
        for columns in (explicit, expo):
            assert slot_totals(columns).sum() == len(values)
            assert not any(c.reset for c in columns)
            assert all(b.start == a.end for a, b in itertools.pairwise(columns))  # columns tile time
        # explicit bounds: the SDK's own buckets and sum, kept beside the spread slots
        assert np.sum([c.source_buckets.counts for c in explicit], axis=0).tolist() == list(sdk_explicit.bucket_counts)
        assert explicit[0].source_buckets.bounds == (*(b * 1e3 for b in sdk_explicit.explicit_bounds), math.inf)
        spent = sum(c.source_buckets.total_time for c in explicit)
        assert spent == pytest.approx(values.sum() / 1e3, rel=1e-9)
        # exponential, ms read as µs: spread onto µs rows, the SDK's own buckets and sum kept beside them
        assert sdk_expo.scale >= 0 and expo[0].stream.unit == "microsec"
        assert sum(c.source_buckets.total_time for c in expo) == pytest.approx(values.sum() / 1e3, rel=1e-9)
        kept, sdk = kept_buckets(expo), sdk_buckets(sdk_expo, 1e3)  # the columns' scale may be finer than the SDK's
        assert [sum(n for b, n in kept.items() if b <= bound * (1 + 1e-12)) for bound in sdk] == \
            list(itertools.accumulate(sdk.values()))
        rows = slot_totals(expo)  # each value's µs row, or the next one where its bucket straddles a row's edge
        assert np.abs(np.cumsum(rows - bin_values(values * 1e3)[0])).max() <= 0.05 * len(values)


def kept_buckets(columns: list[Any]) -> dict[float, int]:
    """Upper bound -> count of the buckets the columns kept, added up (on the coarser scale where it changed)."""
    totals = SourceTotals(columns[0].source_buckets.bounds)
    for column in columns:
        totals.add(column.source_buckets)
    assert not totals.mixed
    return {bound: int(n) for bound, n in zip(totals.bounds, totals.counts, strict=True) if n}


def sdk_buckets(point: Any, factor: float) -> dict[float, int]:
    """Upper bound (times `factor`) -> count of an SDK exponential point's zero and positive buckets that hold any."""
    out = {point.zero_threshold * factor: int(point.zero_count)} if point.zero_count else {}
    for k, n in enumerate(point.positive.bucket_counts):
        if n:
            out[float(np.exp2((point.positive.offset + k + 1) / 2.0**point.scale)) * factor] = int(n)
    return out


@pytest.mark.slow
def test_values_on_powers_of_two_fold_by_the_documented_rule() -> None:
    values = [0.0, 0.5, 1.0, 2.0, 3.0, 8.0, 1024.0, 1000.0, 2.0**20]

    class PowersOfTwo:
        def setup(self, meter: Any) -> Any:
            return meter.create_histogram("pow2.expo", unit="us")

        def __call__(self, histogram: Any, n: int) -> None:
            for value in values:
                histogram.record(value)

    got, _pusher = push_and_receive("protobuf", "delta", PowersOfTwo(), pushes=2)
    [columns] = by_label(got).values()
    assert columns[0].stream.unit == "microsec"
    twice = np.array(values * 2)
    np.testing.assert_array_equal(slot_totals(columns), bin_values(np.nextafter(twice, 0))[0])
    assert not np.array_equal(slot_totals(columns), bin_values(twice)[0])


@pytest.mark.slow
@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_coarse_scales_are_spread_and_keep_their_buckets(temporality: str) -> None:
    class Wide:
        def __init__(self) -> None:
            self.values: list[float] = []

        def setup(self, meter: Any) -> Any:
            return meter.create_histogram("wide.expo", unit="ns")

        def __call__(self, histogram: Any, n: int) -> None:
            for value in np.geomspace(1.5 + n, 3e9, 40).tolist():
                histogram.record(value)
                self.values.append(value)

    record = Wide()
    got, pusher = push_and_receive("json", temporality, record, pushes=3, expo_max_size=4)
    [columns] = by_label(got).values()
    [sdk] = pusher.sdk.values()
    assert sdk.scale < 0
    assert slot_totals(columns).sum() == len(record.values) == sdk.count
    assert all(c.source_buckets is not None for c in columns)
    assert sum(int(c.source_buckets.counts.sum()) for c in columns) == sdk.count
    for column in columns:  # own buckets: zero bucket, the gap below the first bucket, then powers of two
        exponents = np.log2(np.array(column.source_buckets.bounds[2:]))
        assert (exponents == np.round(exponents)).all()
    low, high = bin_values(np.array([min(record.values)]))[0].argmax(), bin_values(np.array([3e9]))[0].argmax()
    spread = np.flatnonzero(slot_totals(columns))
    assert spread.min() >= low - (1 << -sdk.scale) and spread.max() <= high + (1 << -sdk.scale)


class BelowAMillisecond:
    """hn1's `tiny.duration` and `rpc.duration`, both in ms: about 0.3 µs, and a lognormal around 20 ms, narrow at
    first, then so wide that its left tail reaches down to microseconds (one mode, no gap)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(16)
        self.tiny: list[float] = []
        self.rpc: list[float] = []

    def setup(self, meter: Any) -> tuple[Any, Any]:
        return meter.create_histogram("tiny.expo", unit="ms"), meter.create_histogram("rpc.expo", unit="ms")

    def __call__(self, instruments: tuple[Any, Any], n: int) -> None:
        tiny, rpc = instruments
        for value in self.rng.lognormal(math.log(3e-4), 0.8, 200).tolist():
            tiny.record(value)
            self.tiny.append(value)
        for value in self.rng.lognormal(math.log(20.0), (0.05, 0.05, 0.5, 3.0, 3.0)[n % 5], 400).tolist():
            rpc.record(value)
            self.rpc.append(value)


@pytest.mark.slow
def test_a_millisecond_metric_below_a_millisecond_has_rows_and_percentiles_of_its_own() -> None:
    """hn1's defects 1 and 4: an `ms` stream's rows started at 1 ms, so 0.3 µs events had p50 500 µs (the `<1ms`
    row's middle, a `--fail-if 'p50 > 100us'` failing on it) and a smooth lognormal got a "bimodal" finding from
    ten octaves lumped in that row. Read as µs with the SDK's own buckets kept, percentiles are the buckets' and
    every octave from 1 µs has its row."""
    from latencymap.core.accumulator import accumulate
    from latencymap.outputs.gates import check_gates, parse_gate
    from latencymap.outputs.report import build_report

    record = BelowAMillisecond()
    got, _ = push_and_receive("protobuf", "delta", record, pushes=5)
    acc = accumulate(got)
    streams = {s["stream"]["label"]: s for s in build_report(acc)["streams"]}
    tiny, rpc = streams["acceptance/tiny.expo"], streams["acceptance/rpc.expo"]
    assert tiny["stream"]["unit"] == rpc["stream"]["unit"] == "microsec"
    for stream, values in ((tiny, np.array(record.tiny)), (rpc, np.array(record.rpc))):
        total = stream["total"]
        assert total["events"] == len(values) and total["time_s"] == pytest.approx(values.sum() / 1e3, rel=1e-9)
        for name, q in (("p50", 50), ("p90", 90), ("p99", 99)):  # within the SDK's buckets (a few % wide)
            assert total[f"{name}_s"] == pytest.approx(np.percentile(values, q) / 1e3, rel=0.05), name
    assert not [f for f in check_gates(acc, [parse_gate("p50 > 100us")]) if "tiny" in f]
    rows = slot_totals(by_label(got)["acceptance/rpc.expo"])  # row k: [2**(k-1), 2**k) µs
    below = int((np.array(record.rpc) < 1.024).sum())
    assert (rows[1:10] > 0).sum() >= 5  # octaves from 1 µs to 512 µs, each a row of its own
    assert rows[:11].sum() == pytest.approx(below, abs=max(2, 0.05 * below))
    assert not rpc["bimodal"]  # one lognormal: no band of its own made by a row ten octaves wide


def _two_views(temporality: str, exports: int) -> tuple[list[Any], int]:
    """hn1's otel_app first version: `rpc.duration` (ms) under two Views (20 and 160 buckets), so each export has two
    points of one series; what `listen --otlp` made of them, and the values recorded."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.metrics.view import ExponentialBucketHistogramAggregation, View
    from opentelemetry.sdk.resources import Resource
    from otlp_support import exporter, free_port

    from latencymap.sources.otlp.receiver import receive

    port = free_port()
    items = receive(f"127.0.0.1:{port}", idle_timeout=0.5)
    got = [next(items)]
    reader = PeriodicExportingMetricReader(exporter("protobuf", f"http://127.0.0.1:{port}/v1/metrics", temporality),
                                           export_interval_millis=3_600_000)
    views = [View(instrument_name="rpc.duration", aggregation=ExponentialBucketHistogramAggregation(max_size=20)),
             View(instrument_name="*.duration", aggregation=ExponentialBucketHistogramAggregation())]
    provider = MeterProvider(metric_readers=[reader], views=views,
                             resource=Resource.create({"service.name": "views", "service.instance.id": "v1"}))
    histogram = provider.get_meter("t").create_histogram("rpc.duration", unit="ms")
    rng = np.random.default_rng(5)
    try:
        for _ in range(exports):
            for value in rng.lognormal(math.log(20.0), 0.5, 100).tolist():
                histogram.record(value, {"route": "/x"})
            assert reader.force_flush(10_000)
    finally:
        provider.shutdown()
    got += items
    return got, 100 * exports


@pytest.mark.slow
@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_every_second_point_of_an_instrument_under_two_views_counts_as_skipped(temporality: str) -> None:
    """hn1's defect 5: 12 exports of two points each; the second of each was skipped with one line and counted 1
    (delta), or dropped without a word (cumulative, whose second View's point has its own start time). Now each is
    counted, and said in two lines: the first, and the count at the end."""
    from latencymap.core.accumulator import accumulate
    from latencymap.outputs.report import build_report

    got, recorded = _two_views(temporality, 12)
    (columns,) = by_label(got).values()
    report = build_report(accumulate(got))
    assert slot_totals(columns).sum() == recorded  # one View's points, every event once
    said = [m for m in messages(got) if "views/rpc.duration" in m]
    assert report["errors"]["skipped_records"] == len(columns) >= 12  # one second point per export
    assert len(said) == 2 and said[1].endswith(f"({len(columns)} in all); skipped")


class QuietMiddle:
    """`sil.duration` (ms): 40 requests before each export but the QUIET ones, each export 0.1 s after the last."""

    QUIET = range(5, 10)

    def __init__(self) -> None:
        self.rng = np.random.default_rng(9)
        self.values: list[float] = []

    def setup(self, meter: Any) -> Any:
        return meter.create_histogram("sil.duration", unit="ms")

    def __call__(self, histogram: Any, n: int) -> None:
        if n not in self.QUIET:
            for value in self.rng.lognormal(1.0, 0.3, 40).tolist():
                histogram.record(value)
                self.values.append(value)
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_a_stretch_without_events_is_empty_columns_and_a_silence_whatever_the_temporality(temporality: str) -> None:
    """hprom's finding 1: the SDK sends no delta point for a collection that recorded nothing, and starts the next
    one at the collection before it. 3 s of requests, 4 s of none and 3 s more read "13 intervals over 10s: 289
    events (44.7/s)", 6.5 s of columns back to back and no silence; sent cumulative, 7 empty columns and a silence.
    Delta points now give the quiet stretch as empty columns too: the columns tile the time (the rate is over all
    of it) and the report finds the silence, as with cumulative points."""
    from latencymap.core.accumulator import accumulate
    from latencymap.outputs.report import build_report

    record = QuietMiddle()
    got, _ = push_and_receive("protobuf", temporality, record, pushes=16)
    (columns,) = by_label(got).values()
    assert all(b.start == a.end for a, b in itertools.pairwise(columns))  # no time left out
    held = [k for k, c in enumerate(columns) if c.counts.any()]
    before, after = held[len(QuietMiddle.QUIET) - 1], held[len(QuietMiddle.QUIET)]  # around the quiet exports
    assert 4 <= after - before - 1 <= 6  # about one empty column per quiet export
    [stream] = build_report(accumulate(got))["streams"]
    assert stream["total"]["events"] == len(record.values)
    assert sum(stream["column_s"]) == pytest.approx(stream["end"] - stream["start"], abs=1e-4)  # the rate's time
    [silence] = [f["where"] for f in stream["findings"] if f["kind"] == "silence"]
    assert (silence["start"], silence["end"]) == (columns[before].end, columns[after].start)
