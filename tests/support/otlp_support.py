"""Helpers for the OpenTelemetry tests: the real SDK set up to push to latencymap, free ports, raw requests."""

from __future__ import annotations

import gzip
import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricExporter,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics.view import (
    ExplicitBucketHistogramAggregation,
    ExponentialBucketHistogramAggregation,
    View,
)
from opentelemetry.sdk.resources import Resource

from latencymap.core.model import Interval, Notice
from latencymap.sources.otlp.receiver import BEHIND, STOPPING, receive

GRPC_EXPORT = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
TEMPORALITY = {"delta": AggregationTemporality.DELTA, "cumulative": AggregationTemporality.CUMULATIVE}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def exporter(encoding: str, url: str, temporality: str) -> MetricExporter:
    """The SDK's own OTLP exporter: HTTP protobuf (optionally gzip) or JSON; gRPC (`grpc`, `grpc+gzip`) to HOST:PORT."""
    preferred = {Histogram: TEMPORALITY[temporality]}
    if encoding.startswith("grpc"):
        from grpc import Compression as GrpcCompression
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcExporter

        gzipped = GrpcCompression.Gzip if encoding == "grpc+gzip" else GrpcCompression.NoCompression
        return GrpcExporter(endpoint=url, insecure=True, preferred_temporality=preferred, compression=gzipped)
    if encoding == "json":
        from opentelemetry.exporter.otlp.json.http.metric_exporter import OTLPMetricExporter as JsonExporter

        return JsonExporter(endpoint=url, preferred_temporality=preferred)
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as ProtoExporter

    compression = Compression.Gzip if encoding == "protobuf+gzip" else Compression.NoCompression
    return ProtoExporter(endpoint=url, preferred_temporality=preferred, compression=compression)


class Recorded:
    """An SDK histogram `name` (in `unit`) that records `draw(rng, n)`'s values at the n-th export, keeping every one:
    the truth a report is checked against."""

    def __init__(self, name: str, unit: str, draw: Callable[[np.random.Generator, int], np.ndarray],
                 seed: int = 7) -> None:
        self.name, self.unit, self.draw = name, unit, draw
        self.rng = np.random.default_rng(seed)
        self.values: list[float] = []

    def setup(self, meter: Any) -> Any:
        return meter.create_histogram(self.name, unit=self.unit)

    def __call__(self, histogram: Any, n: int) -> None:
        for value in self.draw(self.rng, n).tolist():
            histogram.record(value)
            self.values.append(value)


@dataclass
class Pusher:
    """A MeterProvider with a pushing reader (exported on `push()`) and an in-memory reader to cross-check."""

    push_exporter: MetricExporter
    service: str = "acceptance"
    expo_max_size: int = 160
    memory: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)
    sdk: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.reader = PeriodicExportingMetricReader(self.push_exporter, export_interval_millis=3_600_000)
        self.provider = MeterProvider(
            metric_readers=[self.reader, self.memory], resource=Resource.create({"service.name": self.service}),
            views=[View(instrument_name="*.expo", aggregation=ExponentialBucketHistogramAggregation(
                max_size=self.expo_max_size))])
        self.meter = self.provider.get_meter("latencymap-tests")

    def push(self) -> None:
        """Export what was recorded since the last push, now."""
        assert self.reader.force_flush(10_000)

    def points(self) -> dict[tuple[str, tuple[tuple[str, Any], ...]], Any]:
        """The SDK's own cumulative points, by (metric name, attributes)."""
        data = self.memory.get_metrics_data()
        assert data is not None
        return {(m.name, tuple(sorted(p.attributes.items()))): p
                for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
                for p in m.data.data_points}

    def close(self) -> None:
        self.provider.shutdown()


def push_and_receive(encoding: str, temporality: str, record: Any, pushes: int = 4,
                     expo_max_size: int = 160) -> tuple[list[Any], Pusher]:
    """Items latencymap made of what `record(meter)` recorded before each of `pushes` exports (`exporter` encodings)."""
    port = free_port()
    if encoding.startswith("grpc"):
        from latencymap.sources.otlp.grpc_receiver import receive as receive_grpc

        items, endpoint = receive_grpc(f"127.0.0.1:{port}", idle_timeout=0.5), f"127.0.0.1:{port}"
    else:
        items, endpoint = receive(f"127.0.0.1:{port}", idle_timeout=0.5), f"http://127.0.0.1:{port}/v1/metrics"
    got = [next(items)]
    pusher = Pusher(exporter(encoding, endpoint, temporality), expo_max_size=expo_max_size)
    try:
        instruments = record.setup(pusher.meter)
        for n in range(pushes):
            record(instruments, n)
            pusher.push()
        pusher.sdk = pusher.points()
    finally:
        pusher.close()  # a last export (cumulative: the same counts again)
    got += items
    return got, pusher


def post(url: str, body: bytes, content_type: str | None, gzipped: bool = False, encoding: str | None = None,
         method: str = "POST") -> tuple[int, str, bytes]:
    """(status, content type, body) of a raw request (`gzipped`: compress the body; `encoding`: just say so)."""
    headers = {} if content_type is None else {"Content-Type": content_type}
    if gzipped:
        body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
    if encoding:
        headers["Content-Encoding"] = encoding
    request = urllib.request.Request(url, data=body if method == "POST" else None, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read()


def by_label(items: list[Any]) -> dict[str, list[Interval]]:
    """The intervals of each stream label, in order."""
    out: dict[str, list[Interval]] = {}
    for item in items:
        if isinstance(item, Interval):
            out.setdefault(item.stream.label, []).append(item)
    return out


def slot_totals(intervals: list[Interval]) -> np.ndarray:
    """Counts per slot over intervals."""
    return np.sum([iv.counts for iv in intervals], axis=0)


def messages(items: list[Any]) -> list[str]:
    """The text of every notice."""
    return [item.message for item in items if isinstance(item, Notice)]


def drain(items: Iterator[Any]) -> list[Any]:
    """Everything a receiver generator still yields (it ends after its idle timeout)."""
    return list(items)


def sdk_collect(values: list[float], *, name: str = "x.expo", unit: str = "ms", max_size: int = 160,
                temporality: str = "delta", attributes: dict[str, str] | None = None,
                boundaries: Sequence[float] | None = None) -> Any:
    """The SDK's MetricsData after recording `values` once (an exponential histogram for names ending in .expo; an
    explicit one on `boundaries` for the others, when given, else on the SDK's default bounds)."""
    memory = InMemoryMetricReader(preferred_temporality={Histogram: TEMPORALITY[temporality]})
    views = [View(instrument_name="*.expo", aggregation=ExponentialBucketHistogramAggregation(max_size=max_size))]
    if boundaries is not None:
        views.append(View(instrument_name=name, aggregation=ExplicitBucketHistogramAggregation(boundaries)))
    provider = MeterProvider(metric_readers=[memory], resource=Resource.create({"service.name": "unit"}), views=views)
    histogram = provider.get_meter("latencymap-tests").create_histogram(name, unit=unit)
    for value in values:
        histogram.record(value, attributes or {})
    data = memory.get_metrics_data()
    provider.shutdown()
    return data


def only_point(data: Any) -> Any:
    """The single data point of MetricsData."""
    [point] = [p for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
               for p in m.data.data_points]
    return point


def protobuf_request(data: Any) -> bytes:
    """MetricsData encoded by the SDK's own OTLP protobuf encoder."""
    from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics

    return encode_metrics(data).SerializeToString()


def json_request(data: Any) -> dict[str, Any]:
    """MetricsData encoded by the SDK's own OTLP/JSON encoder."""
    from opentelemetry.exporter.otlp.json.common.metrics_encoder import encode_metrics

    return encode_metrics(data).to_dict()


def otlp_json_file(path: Path, values: list[float], boundaries: Sequence[float], min_max: bool = True) -> Path:
    """An OTLP/JSON file (one request a line, as `latencymap` reads them) of one SDK histogram `lat` (ms) on
    `boundaries` holding `values`; without its points' min and max unless `min_max` (an exporter that leaves them
    out)."""
    doc = json_request(sdk_collect(values, name="lat", boundaries=boundaries))
    if not min_max:
        for rm in doc["resourceMetrics"]:
            for sm in rm["scopeMetrics"]:
                for metric in sm["metrics"]:
                    for point in metric["histogram"]["dataPoints"]:
                        point.pop("min", None), point.pop("max", None)
    path.write_text(json.dumps(doc) + "\n")
    return path


def grpc_export(address: str, body: bytes, method: str = GRPC_EXPORT,
                gzipped: bool = False) -> tuple[Any, str, bytes, dict[str, Any]]:
    """(status code, details, response, trailing metadata) of one raw unary gRPC call with `body` as the request."""
    import grpc

    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(method)
        compression = grpc.Compression.Gzip if gzipped else grpc.Compression.NoCompression
        try:
            answer, outcome = call.with_call(body, timeout=10, compression=compression)
        except grpc.RpcError as err:
            return err.code(), err.details() or "", b"", dict(err.trailing_metadata() or ())
        return outcome.code(), outcome.details() or "", answer, dict(outcome.trailing_metadata() or ())


def good_request(values: list[float]) -> bytes:
    """A protobuf ExportMetricsServiceRequest of one SDK histogram `rpc.duration` holding `values`."""
    return protobuf_request(sdk_collect(values, name="rpc.duration"))


def listening(receive_at: Any, shown: str) -> Iterator[tuple[str, list[Any], Iterator[Any]]]:
    """For a fixture: (`shown` with {port} filled, items so far, the receiver generator), the server listening."""
    port = free_port()
    items = receive_at(f"127.0.0.1:{port}", idle_timeout=0.3)
    first = [next(items)]
    yield shown.format(port=port), first, items
    items.close()


def push_job_durations(pusher: Pusher, count: int = 500, pushes: int = 3) -> np.ndarray:
    """Record `count` log-normal job durations (s) in `pushes` exports of `pusher`, then close it; the values."""
    latency = pusher.meter.create_histogram("job.duration", unit="s")
    values = np.random.default_rng(3).lognormal(-4.0, 1.0, count)
    for chunk in np.array_split(values, pushes):
        for value in chunk.tolist():
            latency.record(value, {"queue": "default"})
        pusher.push()
    pusher.close()
    return values


def report_of_pushes(listen: Sequence[str], ready: Callable[[subprocess.Popen[str]], None],
                     push: Callable[[], np.ndarray]) -> tuple[int, str, str, np.ndarray]:
    """Exit status, stdout and stderr of `latencymap report --format json listen LISTEN...` (a child process) after
    `push` pushed to it once it was `ready`, and what `push` returned; the child is killed if the test fails."""
    child = subprocess.Popen([sys.executable, "-m", "latencymap", "report", "--format", "json", "listen", *listen],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready(child)
        values = push()
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    return child.returncode, out, err, values


@contextmanager
def busy_port() -> Iterator[int]:
    """A loopback port another socket is listening on, for as long as the block runs."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


# A receiver stopped under load (test_otlp_stop.py, test_tui_exit_codes.py): posters that keep its queue of
# acknowledged requests full, and what a report of the run holds.

T0 = 1_700_000_000_000_000_000
EVENTS = 7  # per point
SERIES = 50  # per request: taking one in is slower than decoding it, so requests queue up


def request(at: int, who: int, series: int = SERIES) -> dict[str, Any]:
    """An OTLP/JSON request: a delta histogram point of EVENTS events for each of `series` series of poster `who`,
    the `at`th second after T0 (each poster sends its series in order)."""
    points = [{"attributes": [{"key": "k", "value": {"stringValue": f"w{who}s{s}"}}],
               "startTimeUnixNano": str(T0 + at * 10**9), "timeUnixNano": str(T0 + (at + 1) * 10**9),
               "count": str(EVENTS), "sum": 3.0 * EVENTS, "bucketCounts": ["0", str(EVENTS)], "explicitBounds": [1.0]}
              for s in range(series)]
    metric = {"name": "lat", "unit": "ms", "histogram": {"aggregationTemporality": 1, "dataPoints": points}}
    return {"resourceMetrics": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                                 "scopeMetrics": [{"scope": {"name": "t"}, "metrics": [metric]}]}]}


def events(out: str) -> int:
    """The events of every stream of a JSON report."""
    return sum(stream["total"]["events"] for stream in json.loads(out)["streams"])


def left_unread(err: str) -> int:
    """The acknowledged requests a drain said it left unread: it ran past DRAIN_S (a loaded machine takes in a full
    queue in 4-5 s)."""
    said = re.search(r"acknowledged requests left unread as it stopped: ([\d,]+)", err)
    return 0 if said is None else int(said[1].replace(",", ""))


def http_send(address: str) -> Callable[[dict[str, Any]], str | None]:
    """Send an OTLP/JSON request over HTTP: None when acknowledged, else why not (the 503's body: BEHIND or
    STOPPING, with Retry-After), or "gone" when nothing answers."""

    def send(doc: dict[str, Any]) -> str | None:
        try:
            code, _, body = post(f"http://{address}/v1/metrics", json.dumps(doc).encode(), "application/json")
        except (urllib.error.URLError, ConnectionError):
            return "gone"
        if code == 200:
            return None
        assert code == 503, (code, body)
        return body.decode().strip()

    return send


class Posters:
    """Threads that each send requests of their own series, in order, until told to stop or refused as stopping;
    they count the events acknowledged and the refusals."""

    def __init__(self, send: Callable[[dict[str, Any]], str | None], threads: int = 8) -> None:
        self.send, self.acked, self.refused = send, 0, {BEHIND: 0, STOPPING: 0, "gone": 0}
        self.stop, self.lock = threading.Event(), threading.Lock()
        self.pool = ThreadPoolExecutor(threads)
        self.runs = [self.pool.submit(self._post, who) for who in range(threads)]

    def _post(self, who: int) -> None:
        at = 0
        while not self.stop.is_set():
            why = self.send(request(at, who))
            at += 1
            with self.lock:
                if why is None:
                    self.acked += SERIES * EVENTS
                else:
                    self.refused[why] += 1
            if why in (STOPPING, "gone"):
                return

    def until(self, what: Callable[[], bool], timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not what():
            assert time.monotonic() < deadline, self.refused
            time.sleep(0.01)

    def join(self) -> None:
        self.stop.set()
        for run in self.runs:
            run.result(timeout=30)
        self.pool.shutdown()
