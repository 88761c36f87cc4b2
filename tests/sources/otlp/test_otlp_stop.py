"""`report listen --otlp` stopped by a signal: what the receiver had acknowledged is in the report, what comes after
the stop is refused (503, UNAVAILABLE), a second signal stops at once, and no signal makes a traceback."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from otlp_support import EVENTS, SERIES, Posters, events, free_port, http_send, left_unread, request

from latencymap.sources.otlp.receiver import BEHIND, DRAIN_S, STOPPING


@contextmanager
def receiver(*options: str, grpc: bool = False) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A real `report --format json listen --otlp` (or `--otlp-grpc`) process, listening; and where."""
    port = free_port()
    flag = "--otlp-grpc" if grpc else "--otlp"
    child = subprocess.Popen([sys.executable, "-m", "latencymap", "report", "--format", "json", "listen", flag,
                              f"127.0.0.1:{port}", *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stderr is not None
        line = child.stderr.readline()
        assert "receiving OpenTelemetry metrics" in line, line + child.stderr.read()
        yield child, f"127.0.0.1:{port}"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def grpc_send(address: str) -> Callable[[dict[str, Any]], str | None]:
    """Send the request as OTLP protobuf over gRPC: None when acknowledged, else UNAVAILABLE's details, or "gone"."""
    import grpc
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
    from otlp_support import grpc_export

    def send(doc: dict[str, Any]) -> str | None:
        body = ParseDict(doc, ExportMetricsServiceRequest()).SerializeToString()
        code, details, _, trailers = grpc_export(address, body)
        if code == grpc.StatusCode.OK:
            return None
        assert code == grpc.StatusCode.UNAVAILABLE, (code, details)
        if details in (BEHIND, STOPPING):
            assert "google.rpc.retryinfo-bin" in trailers
            return details
        return "gone"

    return send


@pytest.mark.slow
def test_sigterm_around_the_end_of_duration_never_makes_a_traceback() -> None:
    """A SIGTERM that lands as `--duration 1` ends (the flow's end, the report written, the end-of-command hooks
    running, the exit) ends the command with its code (0 when it came after the end, 143), never with a traceback
    (a signal raised inside a hook that waited for the receiver's drain did, in 7 of 30 runs), and the report holds
    every event acknowledged."""

    def run(k: int) -> tuple[int, str, str, int]:
        with receiver("--duration", "1") as (child, address):
            started = time.monotonic()
            acked = sum(SERIES * EVENTS for at in range(3) if http_send(address)(request(at, k)) is None)
            time.sleep(max(0.0, 0.85 + 0.5 * k / 29 - (time.monotonic() - started)))
            child.send_signal(signal.SIGTERM)
            out, err = child.communicate(timeout=30)
            return child.returncode, out, err, acked

    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(run, range(30)))
    for code, out, err, acked in runs:
        assert "Traceback" not in err and "Exception ignored" not in err, err
        assert code in (0, 143, -signal.SIGTERM), (code, err)
        assert acked == 3 * SERIES * EVENTS and events(out) == acked, err
    assert {code for code, *_ in runs} & {143}, "no SIGTERM landed before the end: the test tests nothing"


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                                   (signal.SIGHUP, 129, "hung up (SIGHUP)"),
                                                   (signal.SIGINT, 130, "interrupted (Ctrl-C)")])
def test_a_signal_reports_every_event_acknowledged_and_refuses_what_comes_after(sig: int, code: int, said: str) -> None:
    """The queue of acknowledged requests full (a request refused as BEHIND), a signal: the report counts every event
    of every request acknowledged (200), exactly (a drain past DRAIN_S counts and says the requests it left); those
    sent after the stop get 503 "stopping" and are not counted;
    the exit code is the signal's. Before, what was queued was dropped unsaid (a real run kept 3,039 of 47,988)."""
    with receiver() as (child, address):
        posters = Posters(http_send(address))
        posters.until(lambda: posters.refused[BEHIND] > 0)  # the queue holds QUEUE_REQUESTS requests
        signalled = time.monotonic()
        child.send_signal(sig)
        posters.until(lambda: posters.refused[STOPPING] + posters.refused["gone"] >= 8)
        posters.join()
        out, err = child.communicate(timeout=30)
        took = time.monotonic() - signalled
    assert child.returncode == code, err
    assert "Traceback" not in err and "not passed on" not in err, err
    assert posters.refused[STOPPING] > 0, posters.refused  # the drain takes long enough to refuse some
    # Every event acknowledged is in the report, or its request counted and said as left unread: only where taking in
    # the queue ran past DRAIN_S (4-5 s for a full one on a loaded machine; 1.5 s here unloaded).
    assert events(out) + left_unread(err) * SERIES * EVENTS == posters.acked, err
    assert left_unread(err) == 0 or took >= DRAIN_S, (took, err)
    assert said in out


@pytest.mark.slow
def test_a_second_sigterm_during_the_drain_stops_at_once() -> None:
    """A second SIGTERM while the receiver takes in a full queue stops it at once (exit 143, the report of what was
    taken in), and says at the end how many acknowledged requests were not passed on."""
    with receiver() as (child, address):
        posters = Posters(http_send(address))
        posters.until(lambda: posters.refused[BEHIND] > 0)
        child.send_signal(signal.SIGTERM)
        posters.until(lambda: posters.refused[STOPPING] > 0)  # the first taken: the intake closed, the drain begun
        second = time.monotonic()
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=30)
        took = time.monotonic() - second
        posters.join()
    assert child.returncode == 143, err
    assert "Traceback" not in err, err
    assert "acknowledged requests not passed on" in err, err
    assert 0 < events(out) < posters.acked
    # Not the drain's deadline (nor the whole queue: 256 requests of 50 points take 1.5 s, 4-5 s on a loaded machine,
    # where this took 1.2-2.3 s: events < acked above says the drain was cut short).
    assert took < DRAIN_S, took


@pytest.mark.slow
@pytest.mark.grpc
def test_grpc_reports_every_event_acknowledged_and_refuses_what_comes_after() -> None:
    """As over HTTP: over OTLP/gRPC, after SIGTERM every event acknowledged is reported, and later calls get
    UNAVAILABLE (with RetryInfo) and are not counted."""
    with receiver(grpc=True) as (child, address):
        posters = Posters(grpc_send(address))
        posters.until(lambda: posters.refused[BEHIND] > 0)
        signalled = time.monotonic()
        child.send_signal(signal.SIGTERM)
        posters.until(lambda: posters.refused[STOPPING] + posters.refused["gone"] >= 8)
        posters.join()
        out, err = child.communicate(timeout=30)
        took = time.monotonic() - signalled
    assert child.returncode == 143, err
    assert "Traceback" not in err and "not passed on" not in err, err
    assert posters.refused[STOPPING] > 0, posters.refused
    assert events(out) + left_unread(err) * SERIES * EVENTS == posters.acked, err  # as over HTTP
    assert left_unread(err) == 0 or took >= DRAIN_S, (took, err)


class SdkPusher:
    """The SDK's own OTLP/HTTP exporter in a thread, pushing delta exports of 10 values until stopped or refused; it
    counts the values of the exports acknowledged (SUCCESS: a delta export that failed is not sent again)."""

    def __init__(self, address: str) -> None:
        import threading

        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import Histogram, MeterProvider
        from opentelemetry.sdk.metrics.export import AggregationTemporality, PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource

        self.exporter = OTLPMetricExporter(endpoint=f"http://{address}/v1/metrics", timeout=2,
                                           preferred_temporality={Histogram: AggregationTemporality.DELTA})
        self.reader = PeriodicExportingMetricReader(self.exporter, export_interval_millis=3_600_000)
        self.provider = MeterProvider(metric_readers=[self.reader], resource=Resource.create({"service.name": "sdk"}))
        self.acked, self.results = 0, []
        export = self.exporter.export

        def counted(data: Any, *args: Any, **kwargs: Any) -> Any:
            result = export(data, *args, **kwargs)
            self.results.append(result.name)
            return result

        self.exporter.export = counted  # type: ignore[method-assign]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._push)
        self.thread.start()

    def _push(self) -> None:
        histogram = self.provider.get_meter("t").create_histogram("rpc.duration", unit="ms")
        while not self.stop.is_set():
            for value in range(1, 11):
                histogram.record(float(value))
            self.reader.force_flush()
            if self.results[-1] != "SUCCESS":
                return
            self.acked += 10
            time.sleep(0.02)

    def join(self) -> None:
        self.stop.set()
        self.thread.join(60)
        self.provider.shutdown()


@pytest.mark.slow
def test_duration_reports_every_event_acknowledged_and_refuses_what_comes_after() -> None:
    """h3's finding 5: `--duration` ended the flow at the deadline, and what the receiver had answered 200 but not
    passed on yet was lost (an SDK exporter told SUCCESS 10 times, 2,000 events; 1,900 reported). At the deadline the
    receiver stops taking requests (503 "stopping", as at SIGTERM), takes in what it had answered, and the report
    holds every event acknowledged; the exit code is 0."""
    with receiver("--duration", "2") as (child, address):
        sdk = SdkPusher(address)
        posters = Posters(http_send(address))  # the queue of acknowledged requests full as the deadline comes
        out, err = child.communicate(timeout=60)
        posters.join()
        sdk.join()
    assert child.returncode == 0, err
    assert "Traceback" not in err, err
    assert posters.refused[STOPPING] > 0 and sdk.acked > 0, (posters.refused, sdk.results)
    got, unread, acked = events(out), left_unread(err), posters.acked + sdk.acked
    if unread:  # the drain took longer than DRAIN_S (a loaded machine) and said how many requests it left: each held
        # 10 events (the SDK's) to SERIES * EVENTS (a poster's)
        assert got + unread * 10 <= acked <= got + unread * SERIES * EVENTS, err
    else:
        assert got == acked, err
    messages = json.loads(out)["errors"]["messages"]
    assert any(m.startswith("--duration 2: ") for m in messages), messages
