"""`latencymap listen --otlp-grpc` as a command: a report of what the SDK pushed, usage errors, a busy port."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from typing import Any

import click
import grpc
import pytest
from click.testing import CliRunner
from otlp_support import (
    Pusher,
    exporter,
    free_port,
    post,
    protobuf_request,
    push_job_durations,
    report_of_pushes,
    sdk_collect,
)

from latencymap.cli import main as cli
from latencymap.sources.listen import ListenSource
from latencymap.sources.otlp import DEFAULT_ADDRESS, DEFAULT_GRPC_ADDRESS

pytestmark = pytest.mark.grpc  # gRPC in this process: run last (tests/conftest.py)


@pytest.mark.slow
def test_report_of_a_listen_run_counts_every_observation_the_sdk_pushed() -> None:
    port = free_port()

    def listening(_: subprocess.Popen[str]) -> None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=60)

    code, out, err, values = report_of_pushes(
        ["--otlp-grpc", f"127.0.0.1:{port}", "--idle-timeout", "3"], listening,
        lambda: push_job_durations(Pusher(exporter("grpc+gzip", f"127.0.0.1:{port}", "cumulative"), service="cli")))
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    [stream] = report["streams"]
    assert stream["stream"]["label"] == "cli/job.duration{queue=default}"
    assert stream["total"]["events"] == len(values)
    assert stream["stream"]["unit"] == "microsec" and stream["stream"]["datasource"] == "otlp"
    assert report["errors"]["messages"] == []  # the greeting says where it listens, on stderr: no note of the reading
    assert err.startswith(f"latencymap: listen --otlp-grpc: receiving OpenTelemetry metrics over OTLP/gRPC at "
                          f"127.0.0.1:{port}\n"), err


@pytest.mark.slow
def test_a_busy_port_is_one_clear_line_and_exit_code_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "latencymap", "listen", "--otlp-grpc", f"127.0.0.1:{port}",
                               "--emit"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == f"latencymap: --otlp-grpc 127.0.0.1:{port}: cannot listen: Address already in use"
    assert "<begin record>" not in done.stdout


def test_otlp_grpc_without_an_address_binds_the_default_on_loopback() -> None:
    command = cli.main.commands["listen"]
    assert command.make_context("listen", ["--otlp-grpc", "--emit"]).params["otlp_grpc"] == DEFAULT_GRPC_ADDRESS
    assert command.make_context("listen", ["--otlp-grpc", "[::1]:9999"]).params["otlp_grpc"] == "[::1]:9999"
    assert command.make_context("listen", []).params["otlp_grpc"] is None
    assert ListenSource(otlp_grpc="127.0.0.1:4999").describe() == {"source": "listen", "otlp_grpc": "127.0.0.1:4999"}


@pytest.mark.parametrize(("options", "expected"), [
    ({"otlp": DEFAULT_ADDRESS}, "give one of them"),
    ({"path": "x.sock"}, "give no socket PATH"),
    ({"writers": 2}, "give no socket PATH or --writers"),
])
def test_otlp_grpc_with_another_transport_is_a_usage_error(options: dict[str, Any], expected: str) -> None:
    with pytest.raises(click.UsageError, match=expected):
        ListenSource(otlp_grpc=DEFAULT_GRPC_ADDRESS, **options)


def test_bad_address_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli.main, ["listen", "--otlp-grpc", "not-an-address", "--emit"])
    assert result.exit_code == 2 and "--otlp-grpc: expected HOST:PORT (e.g. 127.0.0.1:4317)" in result.output


def test_without_grpcio_otlp_grpc_says_how_to_get_it_and_http_still_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "grpc", None)  # `import grpc` fails as if grpcio were not installed
    monkeypatch.delitem(sys.modules, "latencymap.sources.otlp.grpc_receiver", raising=False)
    result = CliRunner().invoke(cli.main, ["listen", "--otlp-grpc", "--emit"])
    assert result.exit_code == 2
    assert "--otlp-grpc needs the grpcio package: pip install 'latencymap[otlp]'" in result.output
    port = free_port()
    items = ListenSource(otlp=f"127.0.0.1:{port}", idle_timeout=0.3).items()
    assert "http://127.0.0.1:" in next(items).message
    body = protobuf_request(sdk_collect([2.0, 20.0], name="rpc.duration"))
    assert post(f"http://127.0.0.1:{port}/v1/metrics", body, "application/x-protobuf")[0] == 200
    assert sum(int(item.counts.sum()) for item in items if hasattr(item, "counts")) == 2


@pytest.mark.slow
def test_a_run_that_received_no_latency_histogram_fails_as_over_http() -> None:
    """hprom's finding 2, over gRPC: a counter alone is nothing readable (as in a file, or over HTTP): the report is
    written, then one line says why and the exit code is 1 (it was "No data." and 0)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    port = free_port()

    def listening(_: subprocess.Popen[str]) -> None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=60)

    def push() -> Any:
        reader = PeriodicExportingMetricReader(exporter("grpc", f"127.0.0.1:{port}", "delta"),
                                               export_interval_millis=3_600_000)
        provider = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": "counts"}))
        provider.get_meter("t").create_counter("http.requests").add(5)
        assert reader.force_flush(10_000)
        provider.shutdown()
        return None

    code, out, err, _ = report_of_pushes(["--otlp-grpc", f"127.0.0.1:{port}", "--idle-timeout", "3"], listening, push)
    assert code == 1, err
    assert json.loads(out)["streams"] == []
    assert err.splitlines()[-1] == (
        "latencymap: listen --otlp-grpc: no record could be read (1 skipped); the first: listen --otlp-grpc: no "
        "latency histogram received: metric 'http.requests' is a Sum, not a Histogram or ExponentialHistogram; skipped")
