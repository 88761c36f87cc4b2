"""`latencymap scrape` over the protobuf exposition: classic histograms from a real Prometheus' own /metrics, native
ones from a test exporter whose bytes a real Prometheus reads the same way, resets, downscaling and bad answers."""

from __future__ import annotations

import itertools
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_support import (
    NativeExporter,
    NativeHistogramState,
    PrometheusServer,
    Scripted,
    _double,
    _field,
    _message,
    _string,
    _varint,
    prometheus_or_skip,
)
from test_prometheus_scrape import run

from latencymap.core.buckets import bin_values
from latencymap.core.model import Interval
from latencymap.plugins import SourceError
from latencymap.sources.prometheus.exposition import parse_exposition
from latencymap.sources.prometheus.protobuf import (
    ACCEPT,
    NativeReading,
    api_histogram,
    diff_native,
    parse_protobuf,
)
from latencymap.sources.prometheus.scrape import MetricMissing, ScrapeSource
from latencymap.sources.prometheus.series import histogram_readings, labels_key
from latencymap.sources.prometheus.transport import EndpointError

NATIVE = "app_latency_milliseconds"


def scraped(exporter: Any, metric: str, act: Callable[[float], None], intervals: int, interval: float = 1.0
            ) -> tuple[list[Interval], list[str]]:
    """`run` of a scrape of `exporter`'s `metric` every `interval` s, the exporter closed after."""
    try:
        return run(ScrapeSource(url=exporter.url, metric=metric, interval=interval), act, intervals)
    finally:
        exporter.close()


@pytest.fixture
def native() -> Iterator[NativeExporter]:
    exporter = NativeExporter(NATIVE, schema=2, labels={"svc": "a"})
    yield exporter
    exporter.close()


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, NativeExporter]]:
    binary = prometheus_or_skip()
    exporter = NativeExporter(NATIVE, schema=3, labels={"svc": "b"})
    server = PrometheusServer(binary, tmp_path_factory.mktemp("prometheus"), [exporter.url], scrape_interval=1.0,
                              native=True)
    try:
        server.wait_ready()
        yield server, exporter
    finally:
        server.stop()
        exporter.close()


def _get(url: str, accept: str) -> tuple[str, bytes]:
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": accept}), timeout=10) as resp:
        return resp.headers.get("Content-Type", ""), resp.read()


def _served(server: PrometheusServer, count: float) -> dict:
    """The server's own native histogram NATIVE once it holds `count` observations (its query API's answer)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        result = server.get("/api/v1/query", {"query": NATIVE})["data"]["result"]
        if result and "histogram" in result[0] and float(result[0]["histogram"][1]["count"]) == count:
            return result[0]["histogram"][1]
        time.sleep(0.2)
    raise AssertionError("the server never scraped the exporter's last state")


def _buckets(histogram: dict) -> list[tuple[float, float, float]]:
    """(left, right, count) of an API-shaped native histogram, sorted."""
    return sorted((float(lo), float(hi), float(c)) for _, lo, hi, c in histogram["buckets"])


def _assert_same_buckets(ours: list[tuple[float, float, float]], theirs: list[tuple[float, float, float]]) -> None:
    for (glo, ghi, gc), (wlo, whi, wc) in zip(ours, theirs, strict=True):
        assert (glo, ghi) == pytest.approx((wlo, whi), rel=1e-12) and gc == wc


@pytest.mark.slow
def test_prometheus_own_classic_histograms_read_the_same_from_protobuf_and_text(prometheus) -> None:
    server, _ = prometheus
    kind, body = _get(f"{server.url}/metrics", ACCEPT)
    _, text = _get(f"{server.url}/metrics", "text/plain;version=0.0.4")
    assert kind.startswith("application/vnd.google.protobuf")
    page = parse_exposition(text.decode(), openmetrics=False)
    names = sorted(n for n, k in page.types.items() if k == "histogram")
    assert len(names) >= 5, names
    same = 0
    for name in names:
        from_text, _ = histogram_readings(page.samples, name)
        got = parse_protobuf(body, name)
        assert got.page.errors == [] and got.native == {}
        from_protobuf, problems = histogram_readings(got.page.samples, name)
        assert problems == []
        new = set(from_protobuf) ^ set(from_text)  # the first GET may start the /metrics handler's series
        assert all(dict(key).get("handler") == "/metrics" for key in new), (name, new)
        for key, reading in from_text.items():
            if key in new:
                continue
            other = from_protobuf[key]
            assert other.bounds == reading.bounds, (name, key)
            if other.count == reading.count:  # a series that moved between the two GETs cannot be compared
                same += 1
                assert other.cumulative.tolist() == reading.cumulative.tolist(), (name, key)
                assert other.total == pytest.approx(reading.total, rel=1e-15), (name, key)
    assert same >= 5
    metrics = f"{server.url}/metrics"
    with pytest.raises(EndpointError, match=f"{names[0]} has no native histogram here, only classic buckets"):
        ScrapeSource(url=metrics, metric=names[0], kind="native").scrape()
    with pytest.raises(EndpointError, match=r"no histogram nope_seconds \(histograms there: prometheus_"):
        ScrapeSource(url=metrics, metric="nope_seconds").scrape()
    with pytest.raises(EndpointError, match="prometheus_build_info is a gauge, not a histogram"):
        ScrapeSource(url=metrics, metric="prometheus_build_info").scrape()
    counter_said = r"prometheus_http_requests is a counter \(prometheus_http_requests_total\), not a histogram"
    with pytest.raises(MetricMissing, match=counter_said) as counter:  # not "no histogram": no wait helps
        ScrapeSource(url=metrics, metric="prometheus_http_requests").scrape()
    assert counter.value.other_type


@pytest.mark.slow
def test_native_buckets_decode_as_the_prometheus_server_reads_the_same_bytes(prometheus) -> None:
    server, exporter = prometheus
    rng = np.random.default_rng(11)
    for value in rng.lognormal(np.log(20.0), 1.2, 500):
        exporter.observe(float(value))
    exporter.observe(0.0)  # the zero bucket
    _, body = _get(exporter.url, ACCEPT)
    (reading,) = parse_protobuf(body, NATIVE).native.values()
    ours = api_histogram(reading, None)
    theirs = _served(server, reading.count)
    assert float(theirs["count"]) == ours["count"] == 501
    assert float(theirs["sum"]) == pytest.approx(ours["sum"], rel=1e-12)
    want, got = _buckets(theirs), _buckets(ours)
    assert len(got) == len(want) > 10
    _assert_same_buckets(got, want)


@pytest.mark.slow
def test_native_histograms_federated_by_prometheus_decode_as_its_query_api_gives_them(prometheus) -> None:
    """/federate answers protobuf encoded by Prometheus' own Go code (client_model), the only way it can give
    native histograms (2.42's text answer leaves them out): what we decode is what its query API says."""
    server, exporter = prometheus
    for value in (0.3, 2.5, 2.6, 9.0, 180.0, 0.0):
        exporter.observe(value)
    theirs = _served(server, exporter.state.count)
    url = f"{server.url}/federate?match[]={NATIVE}"
    kind, body = _get(url, ACCEPT)
    assert kind.startswith("application/vnd.google.protobuf")
    got = parse_protobuf(body, NATIVE)
    assert got.page.errors == [] and got.page.samples == []
    ((key, reading),) = got.native.items()
    assert dict(key)["svc"] == "b" and dict(key)["job"] == "t0"
    ours = api_histogram(reading, None)
    assert ours["count"] == float(theirs["count"]) and ours["sum"] == pytest.approx(float(theirs["sum"]), rel=1e-12)
    want, have = _buckets(theirs), _buckets(ours)
    assert len(have) == len(want) >= 5
    _assert_same_buckets(have, want)
    readings, _, natives = ScrapeSource(url=url, metric=NATIVE).scrape()
    assert readings == {} and list(natives) == [key]


def test_native_histogram_columns_fold_exactly_and_keep_the_sum(native: NativeExporter) -> None:
    rng = np.random.default_rng(5)
    batches = [rng.lognormal(np.log(5.0), 1.0, n) for n in (200, 0, 37, 400)]
    made = iter(batches)

    def observe(_: float) -> None:
        for value in next(made, []):
            native.observe(float(value))

    native.observe(3.0)  # before the baseline: in no column
    columns, said = run(ScrapeSource(url=native.url, metric=NATIVE, interval=0.001), observe, 4)
    assert said == []
    for column, values in zip(columns, batches, strict=True):
        assert column.stream.label == f'{NATIVE}{{svc="a"}}' and column.stream.unit == "millisec"
        assert column.counts.tolist() == bin_values(values)[0].tolist()  # schema 2 nests in powers of two
        assert not column.reset and not column.gap
        own = column.source_buckets
        assert own is not None and own.total_time == pytest.approx(values.sum() / 1000, rel=1e-9, abs=1e-12)


def test_a_restart_is_a_reset_and_a_coarser_schema_is_diffed_in_it(native: NativeExporter) -> None:
    values = [0.7, 1.3, 2.6, 6.1, 6.2, 40.0, 41.0, 90.0]
    step = iter(range(3))

    def act(_: float) -> None:
        k = next(step, None)
        if k == 0:
            for v in values[:4]:
                native.observe(v)
        elif k == 1:  # the client downscaled to schema 0 (it kept its counts) and took two more observations
            coarse = NativeHistogramState(0)
            for v in values[:6]:
                coarse.observe(v)
            with native.lock:
                native.state = coarse
        elif k == 2:  # the process restarted: a new histogram holding two observations
            fresh = NativeHistogramState(2)
            for v in values[6:]:
                fresh.observe(v)
            with native.lock:
                native.state = fresh

    columns, _ = run(ScrapeSource(url=native.url, metric=NATIVE, interval=0.001), act, 3)
    assert [int(c.counts.sum()) for c in columns] == [4, 2, 2]
    assert [c.reset for c in columns] == [False, False, True]
    assert columns[1].counts.tolist() == bin_values(np.array(values[4:6]))[0].tolist()
    assert columns[2].counts.tolist() == bin_values(np.array(values[6:]))[0].tolist()


def test_downscaling_and_differences_by_hand() -> None:
    fine = NativeReading(2, 0.0, 1.0, {1: 2.0, 4: 3.0, 5: 1.0, -3: 1.0}, {2: 1.0}, 8.0, 10.0)
    coarse = fine.at_schema(0)  # schema 2 → 0: four buckets per one, index i → ((i - 1) >> 2) + 1
    assert coarse.positive == {1: 5.0, 2: 1.0, 0: 1.0} and coarse.negative == {1: 1.0}
    later = NativeReading(0, 0.0, 1.0, {1: 7.0, 2: 1.0, 0: 1.0}, {1: 1.0}, 10.0, 12.5)
    hist, reset = diff_native(fine, later)  # type: ignore[misc]
    assert not reset and hist["count"] == 2.0 and hist["sum"] == 2.5
    assert hist["buckets"] == [[0, 1.0, 2.0, 2.0]]  # bucket 1 of schema 0 is (1, 2]
    assert diff_native(later, fine.at_schema(0)) is not None  # counts went down: a reset, the newer one whole
    assert diff_native(later, fine.at_schema(0))[1] is True  # type: ignore[index]
    assert diff_native(fine, NativeReading(2, 0.5, 1.0, {}, {}, 9.0, None)) is None  # zero bucket width changed
    # the zero bucket widened to 2**0.5 (client_golang does that): `fine`'s buckets wholly inside it, positive
    # (1, 2**0.25] and (2**-1, 2**-0.75] and negative [-2**0.5, -2**0.25), moved into its zero count (1 + 4), diff
    wider = NativeReading(2, 2**0.5, 6.0, {4: 4.0, 5: 1.0}, {}, 10.0, 12.0)
    hist, reset = diff_native(fine, wider)  # type: ignore[misc]
    assert not reset and hist["count"] == 2.0 and hist["sum"] == 2.0
    assert hist["buckets"] == [[3, -2**0.5, 2**0.5, 1.0], [0, 2**0.75, 1.0 * 2**1, 1.0]]
    straddled = NativeReading(2, 1.1, 6.0, {4: 4.0, 5: 1.0}, {}, 10.0, 12.0)  # splits (1, 2**0.25]: no exact diff
    assert diff_native(fine, straddled) is None
    restarted = NativeReading(2, 0.5, 1.0, {4: 2.0}, {}, 3.0, 1.5)  # ... with a restart: what it holds is since then
    hist, reset = diff_native(fine, restarted)  # type: ignore[misc]
    assert reset and hist["count"] == 3.0 and hist["sum"] == 1.5


def test_a_new_zero_bucket_is_a_gap_column_or_with_a_restart_a_reset_one(native: NativeExporter) -> None:
    step = iter(range(4))

    def act(_: float) -> None:
        k = next(step, None)
        with native.lock:
            if k in (0, 2):
                for v in (3.0, 5.0):
                    native.state.observe(v)
            elif k == 1:  # a wider zero bucket, counts going on: the two readings cannot be compared
                wider = NativeHistogramState(2, zero_threshold=0.5)
                for _ in range(native.state.count + 4):
                    wider.observe(2.0)
                native.state = wider
            elif k == 3:  # restarted with the default zero bucket: one observation since
                native.state = NativeHistogramState(2)
                native.state.observe(6.0)

    native.observe(1.0)
    columns, said = run(ScrapeSource(url=native.url, metric=NATIVE, interval=0.001), act, 4)
    assert [int(c.counts.sum()) for c in columns] == [2, 0, 2, 1]
    assert [c.gap for c in columns] == [False, True, False, False]
    assert [c.reset for c in columns] == [False, False, False, True]
    assert len(said) == 1 and "zero bucket's width changed" in said[0]


@pytest.mark.parametrize(("body", "expected"), [
    (b"\x06\x0a\x03abc", "protobuf message 2: its length says 6 bytes, 5 are left (cut short?)"),
    (b"\x02\x0b\x00", "protobuf message 2: field 1 has wire type 3, which the exposition does not use"),
    (b"\x03\x0a\x05a", "protobuf message 2: field 1 runs past its message"),
])
def test_bad_protobuf_is_named_and_what_came_before_is_kept(body: bytes, expected: str) -> None:
    good = NativeExporter.__new__(NativeExporter)
    good.name, good.labels, good.state = NATIVE, {"svc": "a"}, NativeHistogramState(2)
    good.state.observe(3.0)
    got = parse_protobuf(good.family() + body, NATIVE)
    assert list(got.native) == [labels_key({"svc": "a"})]
    assert got.page.errors == [expected]


def test_native_only_and_classic_only_say_which_option_reads_them(native: NativeExporter) -> None:
    native.observe(3.0)
    with pytest.raises(EndpointError, match="served as a native histogram only"):
        ScrapeSource(url=native.url, metric=NATIVE, kind="classic").scrape()
    text = Scripted([(200, "text/plain; version=0.0.4", f"# TYPE {NATIVE} histogram\n{NATIVE}_bucket{{le=\"+Inf\"}} 1\n"
                                                        f"{NATIVE}_count 1\n{NATIVE}_sum 2\n")] * 2)
    try:
        with pytest.raises(EndpointError, match="native histograms come only in protobuf"):
            ScrapeSource(url=text.url, metric=NATIVE, kind="native").scrape()
        readings, _, natives = ScrapeSource(url=text.url, metric=NATIVE, kind="auto").scrape()
        assert natives == {} and list(readings) == [()]
    finally:
        text.close()
    with pytest.raises(EndpointError, match=r"no \S+ series match --match svc=b"):
        ScrapeSource(url=native.url, metric=NATIVE, match=("svc=b",)).scrape()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 299), st.binary(max_size=12))
def test_any_bytes_give_readings_or_named_errors_never_an_exception(noise: bytes, at: int, insert: bytes) -> None:
    exporter = NativeExporter.__new__(NativeExporter)
    exporter.name, exporter.labels, exporter.state = NATIVE, {"svc": "a"}, NativeHistogramState(1)
    for value in (0.5, 3.0, 3.1, 700.0):
        exporter.state.observe(value)
    good = exporter.family()
    for body in (noise, good[:at] + insert + good[at:], good + noise):
        got = parse_protobuf(body, NATIVE)
        assert len(got.page.errors) <= 1
        for reading in got.native.values():
            hist = api_histogram(reading, None)
            assert all(c > 0 for *_, c in hist["buckets"]) and hist["count"] >= 0


def test_negative_native_values_are_left_out_with_one_note_and_their_columns_sum_is_not_the_time() -> None:
    """hn1's `signed_seconds`: a client that observes negative values (a clock stepping back) keeps them in negative
    buckets, and its `_sum` is signed. They are no latencies: left out (they were counted in the lowest rows, making
    a "faster band"), one note for the series, and a column holding them has no exact time (the signed sum is not the
    time its events waited)."""
    exporter = NativeExporter(NATIVE, schema=2, labels={"svc": "n"}, zero_threshold=0.5)
    batches = [[12.0, -3.0, 0.0, 7.5, -40.0, 0.2], [5.0, 6.0], [-1.0, 9.0, -2.5]]
    made = iter(batches)

    def observe(_: float) -> None:
        for value in next(made, []):
            exporter.observe(value)

    columns, said = scraped(exporter, NATIVE, observe, 3, interval=0.001)
    negative = [m for m in said if "negative values are not latencies" in m]
    assert len(negative) == 1 and f'{NATIVE}{{svc="n"}}' in negative[0]
    for column, values in zip(columns, batches, strict=True):
        kept = [v for v in values if v >= -0.5]  # the zero bucket [-0.5, 0.5] is counted whole
        assert int(column.counts.sum()) == len(kept)
        assert column.counts[1:].tolist() == bin_values(np.array([v for v in kept if v > 0.5]))[0][1:].tolist()
        own = column.source_buckets
        holds_negative = any(v < -0.5 for v in values)
        assert own is not None and (own.total_time is None) == holds_negative
        if not holds_negative:
            assert own.total_time == pytest.approx(sum(values) / 1000)


def _timestamp(at: float) -> bytes:
    """A google.protobuf.Timestamp message body: seconds, nanos."""
    seconds = int(at)
    return _field(1, 0, _varint(seconds)) + _field(2, 0, _varint(round((at - seconds) * 1e9)))


class CreatedNative(NativeHistogramState):
    """A native histogram that also sends its created timestamp (field 15), as client_golang does."""

    def __init__(self, schema: int, created: float) -> None:
        super().__init__(schema)
        self.created = created

    def protobuf(self) -> bytes:
        return super().protobuf() + _message(15, _timestamp(self.created))


class CreatedClassic:
    """A classic histogram in protobuf (count, sum, cumulative buckets, created timestamp), values in seconds."""

    def __init__(self, bounds: tuple[float, ...], created: float) -> None:
        self.bounds, self.created = bounds, created
        self.values: list[float] = []

    def observe(self, value: float) -> None:
        self.values.append(value)

    def protobuf(self) -> bytes:
        body = _field(1, 0, _varint(len(self.values))) + _double(2, sum(self.values))
        for b in self.bounds:
            body += _message(3, _field(1, 0, _varint(sum(v <= b for v in self.values))) + _double(2, b))
        return body + _message(15, _timestamp(self.created))


@pytest.mark.parametrize("kind", ["native", "classic"])
def test_a_restart_whose_counts_are_already_higher_is_a_reset_told_by_the_created_timestamp(kind: str) -> None:
    def make(created: float) -> CreatedNative | CreatedClassic:
        return CreatedNative(2, created) if kind == "native" else CreatedClassic((0.005, 0.01, 0.1), created)

    exporter = NativeExporter("job_seconds", schema=2)
    exporter.state = make(1.7e9 + 0.25)  # type: ignore[assignment]
    for _ in range(100):
        exporter.observe(0.01)
    step = itertools.count(1)

    def act(_: float) -> None:
        k = next(step)
        with exporter.lock:
            if k == 1:
                for _ in range(10):
                    exporter.state.observe(0.01)
            elif k == 2:  # restarted, and 500 observations made by the next scrape: no bucket went down
                exporter.state = make(1.7e9 + 60.5)  # type: ignore[assignment]
                for _ in range(500):
                    exporter.state.observe(0.01)

    columns, said = scraped(exporter, "job_seconds", act, 2, interval=1.0)
    assert said == []
    assert [int(c.counts.sum()) for c in columns] == [10, 500]
    assert [c.reset for c in columns] == [False, True] and not any(c.gap for c in columns)
    kept = columns[1].source_buckets
    assert kept is not None and kept.total_time == pytest.approx(5.0)  # the new process's _sum, exact


def test_the_created_timestamp_is_read_for_both_kinds() -> None:
    state = CreatedNative(0, 1.7e9 + 0.125)
    state.observe(3.0)
    classic = CreatedClassic((1.0, 4.0), 1.7e9 + 0.5)
    classic.observe(3.0)
    pages = []
    for histogram in (state, classic):
        family = _string(1, "h") + _field(3, 0, _varint(4)) + _message(4, _message(7, histogram.protobuf()))
        pages.append(parse_protobuf(_varint(len(family)) + family, "h"))
    assert pages[0].native[()].created == 1.7e9 + 0.125
    readings, _ = histogram_readings(pages[1].page.samples, "h")
    assert readings[()].created == 1.7e9 + 0.5


class GaugeNativeExporter(NativeExporter):
    """A native gauge histogram (family type 5): the distribution of what is there now."""

    def family(self) -> bytes:
        body = super().family()
        return body.replace(_field(3, 0, _varint(4)), _field(3, 0, _varint(5)), 1)


def test_a_native_gauge_histogram_column_is_the_distribution_read_at_its_end() -> None:
    exporter = GaugeNativeExporter("queue_age_seconds", schema=0)
    states = [[3.0, 5.0, 5.0], [3.0], [0.0, 9.0, 20.0, 20.0]]
    made = iter(states)

    def act(_: float) -> None:
        values = next(made, [])
        with exporter.lock:
            exporter.state = NativeHistogramState(0, zero_threshold=0.5)
            for v in values:
                exporter.state.observe(v)

    exporter.state.observe(1.5)
    columns, said = scraped(exporter, "queue_age_seconds", act, 3, interval=1.0)
    for column, values in zip(columns, states, strict=True):
        assert int(column.counts.sum()) == len(values)
        own = column.source_buckets
        assert own is not None and own.total_time == pytest.approx(sum(values))
        assert not column.reset and not column.gap
    assert len(said) == 1 and "queue_age_seconds is a gauge histogram" in said[0]


class TwoRoutes(NativeExporter):
    """`job_seconds{route="a"}` from the start, and `route="b"` once the test sets `late`: two metrics, one family."""

    def __init__(self, first: CreatedNative | CreatedClassic) -> None:
        super().__init__("job_seconds", schema=2)
        self.state = first  # type: ignore[assignment]
        self.late: CreatedNative | CreatedClassic | None = None

    def family(self) -> bytes:
        metrics = b"".join(_message(4, _message(1, _string(1, "route") + _string(2, route)) + _message(7, h.protobuf()))
                           for route, h in (("a", self.state), ("b", self.late)) if h is not None)
        family = _string(1, self.name) + _string(2, "Test latency.") + _field(3, 0, _varint(4)) + metrics
        return _varint(len(family)) + family


@pytest.mark.parametrize("kind", ["native", "classic"])
def test_a_series_new_after_the_first_scrape_counts_from_zero_by_its_created_timestamp(kind: str) -> None:
    """A label set first served after the first scrape whose created timestamp is after the scrape before (asked at
    1.7e9 + 1 s here) holds all it counted since then: its first column has it (it was its baseline: lost)."""
    def make(created: float) -> CreatedNative | CreatedClassic:
        return CreatedNative(2, created) if kind == "native" else CreatedClassic((0.005, 0.01, 0.1), created)

    exporter = TwoRoutes(make(1.7e9 - 100.0))
    exporter.state.observe(0.01)
    step = itertools.count(1)

    def act(_: float) -> None:
        k = next(step)
        with exporter.lock:
            exporter.state.observe(0.01)
            if k == 2:
                exporter.late = make(1.7e9 + 1.5)
                for _ in range(40):
                    exporter.late.observe(0.05)

    columns, said = scraped(exporter, "job_seconds", act, 3, interval=1.0)
    assert said == []
    assert [(c.stream.label, int(c.counts.sum())) for c in columns] == [
        ('job_seconds{route="a"}', 1), ('job_seconds{route="a"}', 1), ('job_seconds{route="b"}', 40)]
    late = columns[2]
    assert (late.start, late.end) == (columns[1].start, columns[1].end) and not late.reset and not late.gap
    assert late.source_buckets is not None and late.source_buckets.total_time == pytest.approx(2.0)


@pytest.mark.parametrize("wait", [False, True])
def test_a_histogram_of_the_kind_that_histogram_does_not_read_stops_the_source_at_once(native: NativeExporter,
                                                                                      wait: bool) -> None:
    """`--histogram native` on a text page or a classic-only one, `classic` on a native-only one: asking again cannot
    bring the other kind. The first was asked again 5 times (15 s) before `--count` gave up; the others stopped saying
    `--wait-for-metric waits for it`, which then waited for ever."""
    native.observe(3.0)
    text = Scripted([(200, "text/plain; version=0.0.4", f"# TYPE {NATIVE} histogram\n{NATIVE}_bucket{{le=\"+Inf\"}} 1\n"
                                                        f"{NATIVE}_count 1\n{NATIVE}_sum 2\n")])
    classic = NativeExporter(NATIVE, schema=2)
    classic.state = CreatedClassic((0.005, 0.01), 1.7e9)  # type: ignore[assignment]
    classic.observe(0.004)
    cases = [(native.url, "classic", "is served as a native histogram only (--histogram native reads it)"),
             (text.url, "native", "not the protobuf exposition; native histograms come only in protobuf"),
             (classic.url, "native", "has no native histogram here, only classic buckets (--histogram classic")]
    try:
        for url, kind, words in cases:
            source = ScrapeSource(url=url, metric=NATIVE, kind=kind, count=3, wait_for_metric=wait)
            slept: list[float] = []
            source.sleep = slept.append
            with pytest.raises(SourceError) as stopped:
                list(source.items())
            message = str(stopped.value)
            assert words in message and message.endswith("stopped: asking again would get the same answer")
            assert "--wait-for-metric" not in message and slept == []
    finally:
        text.close()
        classic.close()
