"""`listen`'s idle and start timeouts (`Waiting`), shared by the socket and OTLP; the real SDK exporting over HTTP and
gRPC from a program slower to start than the idle timeout."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from otlp_support import free_port

from latencymap.core.model import Notice
from latencymap.sources import listen_wait
from latencymap.sources.listen_wait import Waiting


class Clock:
    """`time.monotonic` in `listen_wait`, moved by hand."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 100.0
        monkeypatch.setattr(listen_wait.time, "monotonic", lambda: self.now)


def test_the_idle_timeout_waits_for_the_first_sender_and_counts_from_the_last_one_leaving(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    waiting = Waiting(1.0, None, "nobody")
    clock.now += 50
    assert not waiting.over()  # none came yet: it waits, however long
    waiting.left()
    clock.now += 0.9
    assert not waiting.over()
    assert not waiting.over(busy=True)
    clock.now += 0.2
    assert waiting.over() and not waiting.over(busy=True)  # one there (a writer connected) keeps it going
    waiting.left()  # another request
    assert not waiting.over()


def test_the_start_timeout_ends_the_run_saying_so_when_none_came_and_is_over_once_one_did(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    waiting = Waiting(None, 2.0, "listen --otlp: no request came")
    clock.now += 1.9
    assert not waiting.over()
    clock.now += 0.2
    assert not waiting.over(busy=True)  # a writer is connected, though it sent nothing yet
    assert waiting.over() == Notice("listen --otlp: no request came within 2s (--start-timeout)", skipped=0)
    waiting.left()
    clock.now += 3600
    assert not waiting.over()  # no idle timeout: it waits for the next one


EXPORTER = """
import sys, time
time.sleep(float(sys.argv[3]))  # the program's start (importing torch): longer than the listener's idle timeout
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
how, endpoint = sys.argv[1:3]
delta = {Histogram: AggregationTemporality.DELTA}
if how == "grpc":
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    exporter = OTLPMetricExporter(endpoint=endpoint, insecure=True, timeout=5, preferred_temporality=delta)
else:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    exporter = OTLPMetricExporter(endpoint=endpoint, timeout=5, preferred_temporality=delta)
reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
provider = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": "late"}))
histogram = provider.get_meter("late").create_histogram("job.duration", unit="ms")
for n in range(3):
    for k in range(100):
        histogram.record(1.0 + k)
    print(reader.force_flush(10_000), flush=True)
    time.sleep(0.3)
provider.shutdown()
"""

TRANSPORTS = ["http", pytest.param("grpc", marks=pytest.mark.grpc)]


def _listen(how: str, port: int, *options: str) -> list[str]:
    """`latencymap report --format json listen` over `how` at `port`, with `options`."""
    where = ["--otlp-grpc", f"127.0.0.1:{port}"] if how == "grpc" else ["--otlp", f"127.0.0.1:{port}"]
    return [sys.executable, "-m", "latencymap", "report", "--format", "json", "listen", *where, *options]


@pytest.mark.slow
@pytest.mark.parametrize("how", TRANSPORTS)
def test_an_exporter_slower_to_start_than_the_idle_timeout_loses_nothing(how: str) -> None:
    """`--idle-timeout 1` counted from the receiver's start: the SDK's first export, 2 s later, found no receiver
    (`No data.`) and the program lost its whole run. Now it counts from the last request."""
    port = free_port()
    listener = subprocess.Popen(_listen(how, port, "--idle-timeout", "1"), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:
        assert listener.stderr is not None
        assert "receiving OpenTelemetry metrics" in listener.stderr.readline()
        endpoint = f"127.0.0.1:{port}" if how == "grpc" else f"http://127.0.0.1:{port}/v1/metrics"
        exporter = subprocess.run([sys.executable, "-c", EXPORTER, how, endpoint, "2"], capture_output=True,
                                  text=True, timeout=120)
        exported = time.monotonic()
        out, err = listener.communicate(timeout=60)
        after = time.monotonic() - exported
    finally:
        if listener.poll() is None:
            listener.kill()
            listener.communicate()
    assert exporter.returncode == 0 and exporter.stdout.split() == ["True"] * 3, exporter.stderr
    assert listener.returncode == 0, err
    assert after < 5.0, after  # the idle timeout, from the last request (the exporter's last, as it shut down)
    [stream] = json.loads(out)["streams"]
    assert stream["stream"]["label"] == "late/job.duration"
    assert stream["total"]["events"] == 300


@pytest.mark.slow
@pytest.mark.parametrize("how", TRANSPORTS)
def test_a_start_timeout_stops_a_receiver_no_request_came_to_and_says_so(how: str) -> None:
    """It was a usage error with --otlp and --otlp-grpc. Nothing came: the report is that of an input with nothing
    in it (exit code 0, no stream), its notes saying why; stderr says it as it happens."""
    port = free_port()
    began = time.monotonic()
    done = subprocess.run(_listen(how, port, "--start-timeout", "1", "--idle-timeout", "0.2"), capture_output=True,
                          text=True, timeout=60)
    assert 1.0 <= time.monotonic() - began < 20, done.stderr
    said = f"{'listen --otlp-grpc' if how == 'grpc' else 'listen --otlp'}: no request came within 1s (--start-timeout)"
    assert done.returncode == 0, done.stderr
    assert f"latencymap: {said}" in done.stderr.splitlines()
    assert json.loads(done.stdout)["streams"] == []
    assert json.loads(done.stdout)["errors"] == {"skipped_records": 0, "messages": [said]}
