"""Several senders at once: one sender's clock (an hour ahead, or a point from the future) idles no other's series;
two processes with the same resource writing one cumulative series are each diffed against their own points."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from otlp_support import by_label, exporter, free_port, messages, post, slot_totals

from latencymap.flow.inputs import read_input
from latencymap.plugins import load_registry
from latencymap.sources.otlp import points
from latencymap.sources.otlp.receiver import receive

S = 10**9
T0 = 1_795_000_000 * S
HOUR = 3600 * S


def line(service: str, t_start: int, t: int, count: int, series: int = 1, metric: str = "lat") -> str:
    """One file-exporter line: `series` cumulative explicit points of `service`, each `count` events in (1, 5] ms."""
    dps = [{"attributes": [{"key": "k", "value": {"stringValue": f"v{j}"}}], "startTimeUnixNano": str(t_start),
            "timeUnixNano": str(t), "count": str(count), "sum": count * 2.0,
            "bucketCounts": ["0", str(count), "0"], "explicitBounds": [1.0, 5.0]} for j in range(series)]
    return json.dumps({"resourceMetrics": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeMetrics": [{"scope": {"name": "s"}, "metrics": [{"name": metric, "unit": "ms", "histogram": {
            "aggregationTemporality": 2, "dataPoints": dps}}]}]}]})


def events_by_service(path: Path) -> tuple[dict[str, int], list[str]]:
    items = list(read_input(str(path), load_registry()))
    totals: dict[str, int] = {}
    for label, columns in by_label(items).items():
        service = label.split("/")[0]
        totals[service] = totals.get(service, 0) + int(slot_totals(columns).sum())
    return totals, messages(items)


@pytest.fixture
def evict_often(monkeypatch: pytest.MonkeyPatch) -> None:
    """Look for idle series after every request, as a fleet sending 1,024 points a round does."""
    monkeypatch.setattr(points, "EVICT_EVERY", 1)


@pytest.mark.usefixtures("evict_often")
def test_a_sender_whose_clock_is_an_hour_ahead_idles_no_one(tmp_path: Path) -> None:
    """skew.py's shape: A exports every 10 s; B's clock is an hour ahead. Both are counted whole."""
    path = tmp_path / "m.jsonl"
    rounds = 120
    with path.open("w") as out:
        for k in range(rounds):
            t = T0 + k * 10 * S
            out.write(line("A", T0 - S, t, 10 * (k + 1), series=50) + "\n")
            out.write(line("B", T0 - S + HOUR, t + HOUR, 10 * (k + 1), series=4) + "\n")
    totals, said = events_by_service(path)
    assert totals == {"A": 50 * 10 * rounds, "B": 4 * 10 * rounds}
    assert not [m for m in said if "back after" in m], said


@pytest.mark.usefixtures("evict_often")
def test_a_point_from_the_future_idles_no_one() -> None:
    """One point an hour ahead in B's series b0: A's series, and B's other series, lose nothing."""
    path_points = []
    for k in range(100):
        t = T0 + k * 10 * S
        path_points.append(line("A", T0 - S, t, 10 * (k + 1), series=3))
        future = t + HOUR if k == 40 else t
        path_points.append(line("B", T0 - S, future, 10 * (k + 1), series=1, metric="leap"))
        path_points.append(line("B", T0 - S, t, 10 * (k + 1), series=2))
    streams = points.PointStreams()
    from latencymap.sources.otlp.decode import decode_json

    items: list[Any] = []
    for n, text in enumerate(path_points):
        items += streams.feed(decode_json(json.loads(text)), f"line {n}")
    got = {label: int(slot_totals(cs).sum()) for label, cs in by_label(items).items()}
    assert {k: v for k, v in got.items() if not k.startswith("B/leap")} == {
        f"{s}/lat{{k=v{j}}}": 1000 for s, n in (("A", 3), ("B", 2)) for j in range(n)}
    assert not [m for m in messages(items) if "back after" in m]


def test_idle_series_are_still_let_go_when_their_sender_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory bound: B (clock an hour ahead) stops; A goes on; after 15 minutes B's series are let go."""
    monkeypatch.setattr(points, "EVICT_EVERY", 1)
    streams = points.PointStreams()
    from latencymap.sources.otlp.decode import decode_json

    def feed(text: str) -> None:
        list(streams.feed(decode_json(json.loads(text)), "x"))

    for k in range(10):
        feed(line("A", T0 - S, T0 + k * 10 * S, k + 1, series=2))
        feed(line("B", T0 - S + HOUR, T0 + HOUR + k * 10 * S, k + 1, series=3))
    assert streams.held == 5
    for k in range(10, 10 + 91):  # A alone for 910 s
        feed(line("A", T0 - S, T0 + k * 10 * S, k + 1, series=2))
    assert streams.held == 2


@pytest.mark.usefixtures("evict_often")
def test_live_sdk_beside_a_sender_an_hour_ahead_loses_nothing() -> None:
    """skew_live.sh's shape: a hand-made point an hour in the future from another service reaches `listen --otlp`
    first; then the SDK exports cumulative points. Every value the SDK recorded is counted."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/metrics"
    items = receive(f"127.0.0.1:{port}", idle_timeout=0.5)
    got = [next(items)]
    ahead = int(time.time() * 1e9) + HOUR
    status, _, _ = post(url, line("skewed-host", ahead - S, ahead, 1).encode(), "application/json")
    assert status == 200
    provider = MeterProvider(metric_readers=[reader := PeriodicExportingMetricReader(
        exporter("protobuf", url, "cumulative"), export_interval_millis=3_600_000)],
        resource=Resource.create({"service.name": "svc"}))
    histogram = provider.get_meter("t").create_histogram("rpc.server.duration", unit="ms")
    routes = 20
    try:
        for n in range(5):
            for r in range(routes):
                histogram.record(1.0 + n + r, {"route": f"/r{r}"})
            assert reader.force_flush(10_000)
    finally:
        provider.shutdown()
    got += items
    streams = by_label(got)
    counted = {label: int(slot_totals(cs).sum()) for label, cs in streams.items() if label.startswith("svc/")}
    assert counted == {f"svc/rpc.server.duration{{route=/r{r}}}": 5 for r in range(routes)}
    assert not [m for m in messages(got) if "back after" in m]


def test_two_processes_with_one_resource_are_each_diffed_against_their_own_points() -> None:
    """dupinst.sh's shape: two SDK processes with the same service.instance.id export one cumulative series in turn
    (start times A, B, A, B...). Each is counted once, not everything since its start at every point."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/metrics"
    items = receive(f"127.0.0.1:{port}", idle_timeout=0.5)
    got = [next(items)]
    resource = Resource.create({"service.name": "web", "service.instance.id": "web-host-1"})
    workers = []
    for _ in range(2):
        reader = PeriodicExportingMetricReader(exporter("protobuf", url, "cumulative"),
                                               export_interval_millis=3_600_000)
        provider = MeterProvider(metric_readers=[reader], resource=resource)
        workers.append((provider, reader, provider.get_meter("t").create_histogram("http.duration", unit="ms")))
        time.sleep(0.01)  # a later start time
    rng = np.random.default_rng(3)
    recorded = 0
    try:
        for _ in range(6):
            for _, reader, histogram in workers:
                for value in rng.lognormal(1.0, 0.5, 100).tolist():
                    histogram.record(value)
                recorded += 100
                assert reader.force_flush(10_000)
    finally:
        for provider, _, _ in workers:
            provider.shutdown()
    got += items
    (columns,) = by_label(got).values()
    assert int(slot_totals(columns).sum()) == recorded == 1200
    assert sum(c.reset for c in columns) == 1  # the second process's first point, counted since its start
    said = [m for m in messages(got) if "two start times" in m]
    assert len(said) == 1 and "web/http.duration" in said[0] and "service.instance.id" in said[0]


class _LosesFirstAnswer(ThreadingHTTPServer):
    """A proxy in front of `listen --otlp` that passes every request on, but answers the first one 503 (Retry-After:
    `retry_s`) after the receiver took it: a gateway that lost the receiver's answer. The SDK's exporter sends that
    request again, as its retry code does, while other exporters go on."""

    daemon_threads = True

    def __init__(self, target: str, retry_s: int) -> None:
        super().__init__(("127.0.0.1", 0), _LosingHandler)
        self.target, self.retry_s, self.lock, self.answered = target, retry_s, threading.Lock(), 0


class _LosingHandler(BaseHTTPRequestHandler):
    server: _LosesFirstAnswer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "content-encoding")}
        with urllib.request.urlopen(urllib.request.Request(self.server.target, body, headers), timeout=10) as answer:
            status, reply = answer.status, answer.read()
        with self.server.lock:
            first, self.server.answered = self.server.answered == 0, self.server.answered + 1
        assert status == 200
        self.send_response(503 if first else 200)
        if first:
            self.send_header("Retry-After", str(self.server.retry_s))
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.slow
def test_a_retry_after_many_later_points_of_other_processes_of_the_resource_is_counted_once() -> None:
    """Defect: pre-forked workers with one resource send one delta series; the receiver remembered the last 32 points
    of a series to tell a retry from another worker's point, so a worker's retry (the SDK sends the request again
    after its backoff, here the 2 s a lost answer's Retry-After asked for) that came after 40 other workers' points
    was counted twice. Every value the workers recorded is counted once."""
    port = free_port()
    items = receive(f"127.0.0.1:{port}", idle_timeout=3.0)
    got = [next(items)]
    proxy = _LosesFirstAnswer(f"http://127.0.0.1:{port}/v1/metrics", retry_s=2)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{proxy.server_address[1]}/v1/metrics"
    resource = Resource.create({"service.name": "web", "service.instance.id": "web-host-1"})
    workers = []
    for _ in range(41):
        reader = PeriodicExportingMetricReader(exporter("protobuf", url, "delta"), export_interval_millis=3_600_000)
        provider = MeterProvider(metric_readers=[reader], resource=resource)
        workers.append((provider, reader, provider.get_meter("t").create_histogram("http.duration", unit="ms")))
    rng = np.random.default_rng(5)
    values: list[float] = []
    try:
        def record(histogram: Any) -> None:
            for value in rng.lognormal(1.0, 0.5, 10).tolist():
                histogram.record(value)
                values.append(value)

        first = workers[0]
        record(first[2])
        retried = threading.Thread(target=first[1].force_flush, args=(10_000,))
        retried.start()  # answered 503 after the receiver took it: sent again in 2 s
        while not proxy.answered:
            time.sleep(0.01)
        for _, reader, histogram in workers[1:]:  # 40 later points of the series before the retry
            record(histogram)
            assert reader.force_flush(10_000)
        retried.join(10)
        assert proxy.answered == 42  # the retry came, after the others
    finally:
        for provider, _, _ in workers:
            provider.shutdown()
        proxy.shutdown()
    got += items
    (columns,) = by_label(got).values()
    assert int(slot_totals(columns).sum()) == len(values) == 410
    assert sum(c.source_buckets.total_time for c in columns) == pytest.approx(sum(values) / 1e3, rel=1e-9)
    assert not [m for m in messages(got) if "skipped" in m], messages(got)
