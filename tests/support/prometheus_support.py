"""Real parts for the Prometheus tests: a driven prometheus_client exporter, a native-histogram exporter speaking
the protobuf exposition, and a Prometheus server (Debian's `prometheus`) started on a loopback port."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.exposition import choose_encoder, generate_latest
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_TYPE
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from skips_support import skip_missing

from latencymap.core.model import Interval
from latencymap.sources.prometheus.scrape import ScrapeSource

TEXT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PROTOBUF_TYPE = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
#: Bucket bounds in seconds: prometheus_client's defaults (rebinned) and powers of two in milliseconds (exact).
DEFAULT_BUCKETS = Histogram.DEFAULT_BUCKETS
POW2_MS_BUCKETS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024)


def reply(handler: BaseHTTPRequestHandler, status: int, ctype: str, body: bytes) -> None:
    """Answer a test server's request: status, content type and length, then the body."""
    handler.send_response(status)
    handler.send_header("Content-Type", ctype)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def free_port() -> int:
    """A TCP port nothing listens on right now (on 127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prometheus_binary() -> str | None:
    """The Prometheus server binary (Debian package `prometheus`), or None."""
    return shutil.which("prometheus") or next((p for p in ("/usr/bin/prometheus",) if os.access(p, os.X_OK)), None)


def prometheus_or_skip() -> str:
    """The Prometheus server binary; a test that needs it is skipped, saying how to install it, where there is none."""
    binary = prometheus_binary()
    if binary is None:
        skip_missing("prometheus", "apt-get install prometheus (.ci/install-system.sh)")
    return binary


class Serving:
    """A ThreadingHTTPServer on 127.0.0.1 run in a daemon thread; `url` and `close()`."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], path: str = "/metrics", port: int = 0) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Exporter(Serving):
    """A prometheus_client histogram the test drives; each scrape records the counts it served.

    `form` picks the exposition: `negotiate` (as prometheus_client does, by the Accept header), `text`, or
    `openmetrics`. Observing and serving share one lock, so a scrape sees whole observations only. `port`: 0 for a
    free one, or an old one's (a process restarted after an outage).
    """

    def __init__(self, name: str = "app_request_duration_seconds", labels: Sequence[str] = ("method",),
                 buckets: Sequence[float] = DEFAULT_BUCKETS, form: str = "negotiate", port: int = 0) -> None:
        self.name, self.labels, self.buckets = name, tuple(labels), tuple(buckets)
        self.registry = CollectorRegistry()
        self.histogram = self._histogram()
        self.lock = threading.Lock()
        self.served: list[dict[tuple[str, ...], int]] = []
        self.accepts: list[str] = []
        self.form = form
        self._counts: dict[tuple[str, ...], int] = {}
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                accept = self.headers.get("Accept") or ""
                with exporter.lock:
                    exporter.accepts.append(accept)
                    body, ctype = exporter.render(accept)
                    exporter.served.append(dict(exporter._counts))
                reply(self, 200, ctype, body)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler, port=port)

    def render(self, accept: str) -> tuple[bytes, str]:
        if self.form == "text":
            return generate_latest(self.registry), TEXT_TYPE
        if self.form == "openmetrics":
            return generate_openmetrics(self.registry), OPENMETRICS_TYPE
        encoder, ctype = choose_encoder(accept)
        return encoder(self.registry), ctype

    def _histogram(self) -> Histogram:
        return Histogram(self.name, "Request latency.", list(self.labels), registry=self.registry,
                         buckets=list(self.buckets))

    def restart(self) -> None:
        """The exporter's process restarted: a new registry, its histogram created now (a new `_created`)."""
        with self.lock:
            self.registry = CollectorRegistry()
            self.histogram = self._histogram()

    def observe(self, seconds: float, *labels: str) -> None:
        """One observation, counted for the next scrape."""
        with self.lock:
            self.histogram.labels(*labels).observe(seconds) if labels else self.histogram.observe(seconds)
            self._counts[labels] = self._counts.get(labels, 0) + 1


# -- the protobuf exposition, by hand (only what a native histogram needs) ------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire) + payload


def _message(number: int, body: bytes) -> bytes:
    return _field(number, 2, _varint(len(body)) + body)


def _string(number: int, text: str) -> bytes:
    return _message(number, text.encode())


def _double(number: int, value: float) -> bytes:
    return _field(number, 1, struct.pack("<d", value))


def native_index(value: float, schema: int) -> int:
    """The native bucket of `value` > 0: bucket i is (base**(i-1), base**i] with base 2**(2**-schema)."""
    return math.ceil(math.log2(value) * 2.0**schema - 1e-9)


class NativeHistogramState:
    """A native histogram (integer counts) kept by the test: schema, zero bucket, positive and negative buckets (a
    negative value -v in the bucket of v, as client_golang keeps them)."""

    def __init__(self, schema: int, zero_threshold: float = 2.0**-128) -> None:
        self.schema = schema
        self.zero_threshold = zero_threshold
        self.zero_count = 0
        self.buckets: dict[int, int] = {}
        self.negative: dict[int, int] = {}
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.sum += value
        if abs(value) <= self.zero_threshold:
            self.zero_count += 1
        else:
            side = self.buckets if value > 0 else self.negative
            index = native_index(abs(value), self.schema)
            side[index] = side.get(index, 0) + 1

    def protobuf(self) -> bytes:
        """The Histogram message: spans of consecutive indexes, counts as deltas."""
        body = _field(1, 0, _varint(self.count)) + _double(2, self.sum)
        body += _field(5, 0, _varint(_zigzag(self.schema))) + _double(6, self.zero_threshold)
        body += _field(7, 0, _varint(self.zero_count))
        if not self.buckets:
            body += _message(12, b"")  # a no-op span: still a native histogram
        return body + _side(self.negative, 9, 10) + _side(self.buckets, 12, 13)


def _side(buckets: dict[int, int], spans_at: int, deltas_at: int) -> bytes:
    """One side's spans of consecutive indexes (field `spans_at`) and counts as deltas (`deltas_at`)."""
    indexes = sorted(buckets)
    if not indexes:
        return b""
    spans: list[tuple[int, int]] = []
    previous = None
    for i in indexes:
        if previous is not None and i == previous + 1:
            spans[-1] = (spans[-1][0], spans[-1][1] + 1)
        else:
            offset = i if previous is None else i - previous - 1
            spans.append((offset, 1))
        previous = i
    body = b"".join(_message(spans_at, _field(1, 0, _varint(_zigzag(offset))) + _field(2, 0, _varint(length)))
                    for offset, length in spans)
    deltas, last = b"", 0
    for i in indexes:
        deltas += _varint(_zigzag(buckets[i] - last))
        last = buckets[i]
    return body + _message(deltas_at, deltas)


class NativeExporter(Serving):
    """Serves one native histogram in the protobuf exposition (what Prometheus scrapes native histograms from), on
    `port` (0: a free one)."""

    def __init__(self, name: str, schema: int, labels: dict[str, str] | None = None,
                 zero_threshold: float = 2.0**-128, port: int = 0) -> None:
        self.name = name
        self.state = NativeHistogramState(schema, zero_threshold)
        self.labels = labels or {}
        self.lock = threading.Lock()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with exporter.lock:
                    body = exporter.family()
                reply(self, 200, PROTOBUF_TYPE, body)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler, port=port)

    def family(self) -> bytes:
        """One delimited MetricFamily holding the histogram."""
        metric = b"".join(_message(1, _string(1, k) + _string(2, v)) for k, v in sorted(self.labels.items()))
        metric += _message(7, self.state.protobuf())
        family = _string(1, self.name) + _string(2, "Test latency.") + _field(3, 0, _varint(4)) + _message(4, metric)
        return _varint(len(family)) + family

    def observe(self, value: float) -> None:
        with self.lock:
            self.state.observe(value)


# -- the server ----------------------------------------------------------------------------------------------


class PrometheusServer:
    """`prometheus` started on 127.0.0.1:<free port> with its config and TSDB in `workdir`; `stop()` kills it."""

    def __init__(self, binary: str, workdir: Path, targets: Sequence[str], scrape_interval: float = 1.0,
                 native: bool = False) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        workdir.mkdir(parents=True, exist_ok=True)
        every = f"{round(scrape_interval * 1000)}ms"
        parts = [urllib.parse.urlsplit(t) for t in targets]
        jobs = [{"job_name": f"t{i}", "scrape_interval": every, "metrics_path": p.path,
                 "static_configs": [{"targets": [p.netloc]}]} for i, p in enumerate(parts)]
        jobs.append({"job_name": "self", "scrape_interval": every,
                     "static_configs": [{"targets": [f"127.0.0.1:{self.port}"]}]})
        config = workdir / "prometheus.yml"
        config.write_text(json.dumps({"global": {"scrape_interval": every}, "scrape_configs": jobs}))
        args = [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"]
        if native:
            args.append("--enable-feature=native-histograms")
        self.log = (workdir / "prometheus.log").open("wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def get(self, path: str, params: dict[str, Any] | None = None, timeout: float = 5.0) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=timeout) as resp:
            return json.loads(resp.read())

    def wait_ready(self, deadline_s: float = 30.0) -> None:
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.proc.returncode}: {self.log_text()}")
            with contextlib.suppress(OSError, ValueError):
                urllib.request.urlopen(f"{self.url}/-/ready", timeout=1).read()
                return
            time.sleep(0.1)
        raise TimeoutError(f"prometheus not ready after {deadline_s}s: {self.log_text()}")

    def wait_until(self, promql: str, predicate: Any, deadline_s: float = 30.0) -> list[dict[str, Any]]:
        """Poll an instant query until `predicate(result)` holds; the result."""
        end = time.monotonic() + deadline_s
        result: list[dict[str, Any]] = []
        while time.monotonic() < end:
            with contextlib.suppress(OSError, ValueError):
                result = self.get("/api/v1/query", {"query": promql})["data"]["result"]
                if predicate(result):
                    return result
            time.sleep(0.2)
        raise TimeoutError(f"{promql}: never satisfied within {deadline_s}s; last result {result}")

    def wait_past(self, end: float, *timestamps: str) -> None:
        """Sleep until just past `end` (Unix s), then until each of `timestamps` (`timestamp(...)` queries, the first
        sample of each result) is past it: the server has scraped everything up to `end`."""
        time.sleep(max(0.0, end + 1.5 - time.time()))
        for promql in timestamps:
            self.wait_until(promql, lambda r: bool(r) and float(r[0]["value"][1]) > end)

    def log_text(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


@contextlib.contextmanager
def running_prometheus(binary: str, workdir: Path, targets: Sequence[str], **kw: Any) -> Iterator[PrometheusServer]:
    server = PrometheusServer(binary, workdir, targets, **kw)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


class Scripted(Serving):
    """Answers requests from a script of `(status, content type, body)` (the last one repeats); records headers."""

    def __init__(self, script: Sequence[tuple[int, str, str]], delay_first_s: float = 0.0,
                 port: int = 0) -> None:
        self.script = list(script)
        self.requests: list[dict[str, str]] = []
        self.delay_first_s = delay_first_s
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                n = len(endpoint.requests)
                endpoint.requests.append(dict(self.headers.items()))
                if n == 0 and endpoint.delay_first_s:
                    time.sleep(endpoint.delay_first_s)
                status, ctype, body = endpoint.script[min(n, len(endpoint.script) - 1)]
                data = body.encode()
                with contextlib.suppress(OSError):
                    reply(self, status, ctype, data)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler, port=port)


class Redirect(Serving):
    """Answers `status` with a Location of `to` (default: its own `/moved`) followed by the path asked, and a request
    under `/moved` with 200 `ok`; records each request's headers."""

    def __init__(self, to: str | None = None, status: int = 302) -> None:
        self.requests: list[dict[str, str]] = []
        redirect = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                redirect.requests.append(dict(self.headers.items()))
                if self.path.startswith("/moved/"):
                    reply(self, 200, "text/plain", b"ok\n")
                    return
                self.send_response(status)
                self.send_header("Location", (to or f"http://127.0.0.1:{redirect.port}/moved") + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(Handler, path="")


def histogram_page(name: str, bounds: Sequence[float], cumulative: Sequence[int], total: float,
                   labels: str = "") -> str:
    """A text-format page with one classic histogram."""
    extra = f",{labels}" if labels else ""
    lines = [f"# TYPE {name} histogram"]
    for b, c in zip(bounds, cumulative, strict=True):
        le = "+Inf" if math.isinf(b) else repr(b)
        lines.append(f'{name}_bucket{{le="{le}"{extra}}} {c}')
    inner = f"{{{labels}}}" if labels else ""
    lines += [f"{name}_sum{inner} {total!r}", f"{name}_count{inner} {cumulative[-1]}"]
    return "\n".join(lines) + "\n"


def scraped_intervals(buckets: Sequence[float], values: Sequence[float], columns: int = 4,
                      name: str = "req_duration_seconds") -> list[Interval]:
    """`columns` intervals of a real prometheus_client exporter (`buckets`) scraped on loopback by `ScrapeSource`,
    each holding `values` (seconds), observed between one scrape and the next."""
    exporter = Exporter(name, labels=(), buckets=buckets, form="text")
    try:
        out: list[Interval] = []
        for item in ScrapeSource(url=exporter.url, metric=name, interval=0.01, count=columns).items():
            if isinstance(item, Interval):
                out.append(item)
            for seconds in values:
                exporter.observe(seconds)
        return out
    finally:
        exporter.close()
