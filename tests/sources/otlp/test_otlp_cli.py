"""`latencymap listen --otlp` as a command: --emit, --record and report see what the SDK pushed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import numpy as np
import pytest
from click.testing import CliRunner
from otlp_support import Pusher, exporter, free_port, post, push_job_durations, report_of_pushes

from latencymap.cli import main as cli
from latencymap.sources.otlp import DEFAULT_ADDRESS


def report(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli.main, ["report", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    return {s["stream"]["label"]: s for s in json.loads(result.output)["streams"]}


@pytest.mark.slow
def test_emit_and_record_carry_every_observation_to_report(tmp_path: Path) -> None:
    port = free_port()
    emitted, recording = tmp_path / "emitted.txt", tmp_path / "run.txt"
    with emitted.open("w") as out:
        child = subprocess.Popen([sys.executable, "-m", "latencymap", "listen", "--otlp", f"127.0.0.1:{port}",
                                  "--emit", "--record", str(recording), "--idle-timeout", "8"],
                                 stdout=out, stderr=subprocess.PIPE, text=True)
        try:
            assert child.stderr is not None
            line = child.stderr.readline()  # the receiver is listening once it says so
            assert f"receiving OpenTelemetry metrics at http://127.0.0.1:{port}/v1/metrics" in line, line
            values = push_job_durations(Pusher(exporter("protobuf", f"http://127.0.0.1:{port}/v1/metrics",
                                                        "cumulative"), service="cli"))
            assert child.wait(timeout=60) == 0, child.stderr.read()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stderr.close()
    label = "cli/job.duration{queue=default}"
    for path in (emitted, recording):
        stream = report(path)[label]
        assert stream["total"]["events"] == len(values)
        assert stream["stream"]["unit"] == "microsec" and stream["stream"]["datasource"] == "otlp"
    assert "receiving OpenTelemetry" not in recording.read_text()  # where it listened is no note of the reading
    header = json.loads(recording.read_text().splitlines()[0].split(" ", 2)[2])
    assert header["source"] == "listen" and header["options"]["otlp"] == f"127.0.0.1:{port}"


def test_otlp_without_an_address_binds_the_default_on_loopback() -> None:
    command = cli.main.commands["listen"]
    assert command.make_context("listen", ["--otlp", "--emit"]).params["otlp"] == DEFAULT_ADDRESS
    assert command.make_context("listen", ["--otlp", "[::1]:9999"]).params["otlp"] == "[::1]:9999"
    assert command.make_context("listen", []).params["otlp"] is None


def test_otlp_and_a_socket_path_together_are_a_usage_error() -> None:
    from latencymap.sources.listen import ListenSource

    with pytest.raises(click.UsageError, match="give no socket PATH"):
        ListenSource(path="x.sock", otlp=DEFAULT_ADDRESS)
    result = CliRunner().invoke(cli.main, ["listen", "--otlp", "not-an-address", "--emit"])
    assert result.exit_code == 2 and "expected HOST:PORT" in result.output


def test_sigterm_still_says_the_count_of_points_skipped_since_the_first(tmp_path: Path) -> None:
    """A series' points not after its previous one are said once, then as a count now and then and at the input's
    end; a receiver stopped by SIGTERM (or Ctrl-C, `--duration`) never reached that end, so the last count went
    unsaid. The command's end says it (stderr), as it finishes recordings."""
    import signal

    def request(count: int, name: str = "lat") -> bytes:
        point = {"startTimeUnixNano": "1700000000000000000", "timeUnixNano": "1700000010000000000",
                 "count": str(count), "sum": 3.0 * count, "bucketCounts": ["0", str(count)], "explicitBounds": [1.0]}
        metric = {"name": name, "unit": "ms", "histogram": {"aggregationTemporality": 1, "dataPoints": [point]}}
        return json.dumps({"resourceMetrics": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
            "scopeMetrics": [{"scope": {"name": "t"}, "metrics": [metric]}]}]}).encode()

    port = free_port()
    child = subprocess.Popen([sys.executable, "-m", "latencymap", "report", "listen", "--otlp", f"127.0.0.1:{port}"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stderr is not None
        assert "receiving OpenTelemetry metrics" in child.stderr.readline()
        # the same time each: the first is a column, the other four skipped; then another series' second point,
        # said at once when the worker takes it: one queue in order, so it has taken every request before it
        for body in (*(request(count) for count in (1, 2, 3, 4, 5)), request(1, "done"), request(2, "done")):
            assert post(f"http://127.0.0.1:{port}/v1/metrics", body, "application/json")[0] == 200
        assert "svc/lat: a second point at 1700000010000000000 ns" in child.stderr.readline()
        assert "svc/done: a second point at" in child.stderr.readline()
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 143
    (said,) = err.splitlines()  # the peer's port, then the count
    assert said.startswith("latencymap: listen --otlp: 127.0.0.1:")
    assert said.endswith(": svc/lat: 3 more points not after the previous one (4 in all); skipped")
    assert "terminated (SIGTERM)" in out


def test_the_receivers_greeting_is_said_not_filed_among_the_reports_messages() -> None:
    """h3's finding 7c: "receiving OpenTelemetry metrics at ..." says where the receiver listens (on stderr, as it
    starts): the report's `errors.messages` filed it as what reading said (a recording kept it as a note: above)."""
    port = free_port()

    def greeted(child: subprocess.Popen[str]) -> None:
        assert child.stderr is not None
        assert "receiving OpenTelemetry metrics at" in child.stderr.readline()

    code, out, err, values = report_of_pushes(
        ["--otlp", f"127.0.0.1:{port}", "--idle-timeout", "1"], greeted,
        lambda: push_job_durations(Pusher(exporter("json", f"http://127.0.0.1:{port}/v1/metrics", "delta"),
                                          service="cli")))
    assert code == 0, err
    doc = json.loads(out)
    assert [s["total"]["events"] for s in doc["streams"]] == [len(values)]
    assert doc["errors"] == {"skipped_records": 0, "messages": []}


def _greeted(child: subprocess.Popen[str]) -> None:
    """The receiver listens: it said so."""
    assert child.stderr is not None
    assert "receiving OpenTelemetry metrics at" in child.stderr.readline()


@pytest.mark.slow
def test_a_receiver_that_got_no_latency_histogram_fails_as_a_file_of_the_same_metrics_does(tmp_path: Path) -> None:
    """hprom's finding 2: the SDK's requests holding a counter (a Sum) and a histogram of `{request}` made a run of
    `report listen --otlp` say "No data." with exit code 0, where the same metrics in a file (the SDK's file
    exporter) say why and exit 1 ("Nothing readable is a failure"). The receiver's run ends as the file's does: the
    report written, the same reason, one line on stderr, exit code 1."""
    from opentelemetry.exporter.otlp.json.file.metric_exporter import FileMetricExporter
    from opentelemetry.sdk.metrics import Histogram, MeterProvider
    from opentelemetry.sdk.metrics.export import AggregationTemporality, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    port, path = free_port(), tmp_path / "counts.jsonl"

    def push() -> np.ndarray:
        exporters = [exporter("protobuf", f"http://127.0.0.1:{port}/v1/metrics", "delta"),
                     FileMetricExporter(path, preferred_temporality={Histogram: AggregationTemporality.DELTA})]
        readers = [PeriodicExportingMetricReader(e, export_interval_millis=3_600_000) for e in exporters]
        provider = MeterProvider(metric_readers=readers, resource=Resource.create({"service.name": "counts"}))
        meter = provider.get_meter("t")
        requests, depth = meter.create_counter("http.requests"), meter.create_histogram("queue.depth", unit="{request}")
        for k in range(3):
            requests.add(5)
            depth.record(3.0 + k)
            assert all(reader.force_flush(10_000) for reader in readers)
        provider.shutdown()
        return np.zeros(0)

    code, out, err, _ = report_of_pushes(["--otlp", f"127.0.0.1:{port}", "--idle-timeout", "3"], _greeted, push)
    filed = CliRunner().invoke(cli.main, ["report", "--format", "json", str(path)])
    assert code == filed.exit_code == 1, err
    received, read = json.loads(out), json.loads(filed.stdout)
    assert received["streams"] == read["streams"] == []
    assert received["errors"]["skipped_records"] == read["errors"]["skipped_records"] == 1
    why = "metric 'http.requests' is a Sum, not a Histogram or ExponentialHistogram; skipped"
    assert received["errors"]["messages"][-1] == f"listen --otlp: no latency histogram received: {why}"
    assert read["errors"]["messages"][-1] == f"{path}: no latency histogram in it: {why}"
    assert err.splitlines()[-1] == ("latencymap: listen --otlp: no record could be read (1 skipped); the first: "
                                    f"listen --otlp: no latency histogram received: {why}")
    assert filed.stderr.splitlines()[-1] == (f"latencymap: {path}: no record could be read (1 skipped); the first: "
                                             f"{path}: no latency histogram in it: {why}")


@pytest.mark.slow
def test_a_receiver_whose_every_request_was_skipped_fails_and_one_that_got_none_does_not() -> None:
    """Requests that cannot be decoded (400), and nothing else: nothing readable, exit code 1, naming the first. A run
    that received no request at all (ended by --start-timeout: --idle-timeout counts from the last request) read
    nothing and skipped nothing: "No data.", exit code 0, as an empty file."""
    port = free_port()

    def invalid() -> np.ndarray:
        for body in (b"{", b"not json"):
            assert post(f"http://127.0.0.1:{port}/v1/metrics", body, "application/json")[0] == 400
        return np.zeros(0)

    code, out, err, _ = report_of_pushes(["--otlp", f"127.0.0.1:{port}", "--idle-timeout", "2"], _greeted, invalid)
    assert code == 1, err
    assert json.loads(out)["errors"]["skipped_records"] == 2
    last = err.splitlines()[-1]
    assert last.startswith("latencymap: listen --otlp: no record could be read (2 skipped); the first: listen --otlp: "
                           "127.0.0.1:"), last
    assert last.endswith("POST /v1/metrics: invalid JSON at line 1 column 2; expected an OTLP/JSON "
                         "ExportMetricsServiceRequest"), last
    code, out, err, _ = report_of_pushes(["--otlp", f"127.0.0.1:{free_port()}", "--idle-timeout", "0.5",
                                          "--start-timeout", "1"], _greeted,
                                         lambda: np.zeros(0))
    assert code == 0, err
    assert json.loads(out)["streams"] == [] and json.loads(out)["errors"]["skipped_records"] == 0
