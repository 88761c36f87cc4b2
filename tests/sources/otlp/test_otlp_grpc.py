"""The OTLP/gRPC receiver on loopback, driven by a raw gRPC client: status codes as OTLP says, notices, clean stops."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from otlp_support import (
    Pusher,
    busy_port,
    by_label,
    exporter,
    free_port,
    good_request,
    grpc_export,
    listening,
    messages,
)

from latencymap.flow.inputs import InputError
from latencymap.sources.otlp import grpc_receiver, receiver
from latencymap.sources.otlp.grpc_receiver import GRPC_LIMIT, receive
from latencymap.sources.otlp.receiver import MAX_BODY

pytestmark = pytest.mark.grpc  # gRPC in this process: run last (tests/conftest.py)

LABEL = "unit/rpc.duration"
TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
HTML = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


@pytest.fixture
def otlp() -> Iterator[tuple[str, list[Any], Iterator[Any]]]:
    """(HOST:PORT, items so far, the receiver generator), with the server already listening."""
    yield from listening(receive, "127.0.0.1:{port}")


def test_garbage_is_invalid_argument_with_a_notice_naming_the_peer_and_the_stream_goes_on(otlp: Any) -> None:
    address, got, items = otlp
    assert got[0].message == f"listen --otlp-grpc: receiving OpenTelemetry metrics over OTLP/gRPC at {address}"
    body = good_request([3.0, 30.0, 300.0])

    code, details, _, _ = grpc_export(address, body[: len(body) // 2])
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "truncated or not protobuf" in details
    code, details, _, _ = grpc_export(address, HTML)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "not a protobuf ExportMetricsServiceRequest" in details
    code, details, _, _ = grpc_export(address, body, method=TRACES)
    assert code == grpc.StatusCode.UNIMPLEMENTED and "OTLP metrics only" in details

    code, _, answer, _ = grpc_export(address, body, gzipped=True)  # gRPC inflates it before we see it
    assert code == grpc.StatusCode.OK
    assert not ExportMetricsServiceResponse.FromString(answer).HasField("partial_success")

    got += items
    said = messages(got)[1:]
    assert len(said) == 3
    assert all(m.startswith("listen --otlp-grpc: ipv4:127.0.0.1:") for m in said), said
    assert "Export: " in said[0] and "truncated or not protobuf" in said[0]
    assert f"{TRACES}: latencymap receives" in said[2]
    [column] = by_label(got)[LABEL]
    assert column.counts.sum() == 3


def test_rejected_points_are_a_partial_success(otlp: Any) -> None:
    address, got, items = otlp
    request = ExportMetricsServiceRequest.FromString(good_request([3.0, 30.0]))
    metrics = request.resource_metrics[0].scope_metrics[0].metrics
    broken = metrics.add()
    broken.CopyFrom(metrics[0])
    broken.name = "rpc.broken"
    point = broken.histogram.data_points[0]
    point.explicit_bounds[:] = [10.0, 5.0]
    point.bucket_counts[:] = [1, 0, 1]
    code, _, answer, _ = grpc_export(address, request.SerializeToString())
    assert code == grpc.StatusCode.OK
    partial = ExportMetricsServiceResponse.FromString(answer).partial_success
    assert partial.rejected_data_points == 1 and "strictly increasing" in partial.error_message
    got += items
    assert by_label(got)[LABEL][0].counts.sum() == 2
    assert any("'rpc.broken' point 0" in m and "point skipped" in m for m in messages(got))


@pytest.mark.slow
def test_oversized_messages_are_resource_exhausted_plain_or_gzip(otlp: Any) -> None:
    address, got, items = otlp
    code, details, _, _ = grpc_export(address, b"\0" * (MAX_BODY + 1))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert details == f"request of {MAX_BODY + 1} bytes (inflated); at most {MAX_BODY} are read"
    bomb = b"\0" * (MAX_BODY + 1)
    assert len(gzip.compress(bomb)) < MAX_BODY // 100
    code, details, _, _ = grpc_export(address, bomb, gzipped=True)  # small on the wire, past the limit inflated
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and str(MAX_BODY) in details
    code, details, _, _ = grpc_export(address, b"\0" * (GRPC_LIMIT + 1), gzipped=True)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details  # gRPC's own refusal
    assert grpc_export(address, good_request([5.0]))[0] == grpc.StatusCode.OK  # the receiver goes on
    got += items
    said = [m for m in messages(got) if "at most" in m]
    assert len(said) == 2 and all(m.startswith("listen --otlp-grpc: ipv4:127.0.0.1:") and m.endswith(
        f"Export: request of {MAX_BODY + 1} bytes (inflated); at most {MAX_BODY} are read; refused") for m in said)
    assert by_label(got)[LABEL][0].counts.sum() == 1


def test_a_full_queue_is_unavailable_with_a_retry_delay_and_nothing_accepted_is_lost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(receiver, "QUEUE_REQUESTS", 2)
    port = free_port()
    items = receive(f"127.0.0.1:{port}", idle_timeout=0.3)
    next(items)
    answers = [grpc_export(f"127.0.0.1:{port}", good_request([float(n + 2)])) for n in range(3)]
    assert [a[0] for a in answers] == [grpc.StatusCode.OK, grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE]
    retry = RetryInfo.FromString(answers[2][3]["google.rpc.retryinfo-bin"])  # what OTLP exporters wait for
    assert (retry.retry_delay.seconds, retry.retry_delay.nanos) == (1, 0)
    got = list(items)
    assert sum(int(c.counts.sum()) for c in by_label(got)[LABEL]) == 2


def test_stops_cleanly_and_frees_the_port() -> None:
    port = free_port()
    items = receive(f"127.0.0.1:{port}")
    assert f"127.0.0.1:{port}" in next(items).message
    assert grpc_export(f"127.0.0.1:{port}", good_request([1.0]))[0] == grpc.StatusCode.OK
    assert any(t.name.startswith("latencymap-otlp-grpc") for t in threading.enumerate())
    items.close()  # the view quit while the receiver waited
    assert not any(t.name.startswith("latencymap-otlp-grpc") and t.is_alive() for t in threading.enumerate())
    with socket.socket() as again:  # as servers bind: a connection we closed may linger in TIME_WAIT
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
    restarted = receive(f"127.0.0.1:{port}")
    assert f"127.0.0.1:{port}" in next(restarted).message
    restarted.close()


def test_a_busy_port_is_a_clear_error_even_for_a_second_receiver(monkeypatch: pytest.MonkeyPatch) -> None:
    with busy_port() as port, pytest.raises(
            InputError, match=f"--otlp-grpc 127.0.0.1:{port}: cannot listen: Address already in use"):
        next(receive(f"127.0.0.1:{port}"))
    port = free_port()
    first = receive(f"127.0.0.1:{port}")
    next(first)
    try:  # gRPC lets two servers share a port (SO_REUSEPORT) unless told not to
        with pytest.raises(InputError, match=f"--otlp-grpc 127.0.0.1:{port}: cannot listen"):
            next(receive(f"127.0.0.1:{port}"))
        with monkeypatch.context() as patch:  # without our own probe, gRPC's failure is still an InputError
            patch.setattr(grpc_receiver, "_check_free", lambda *args: None)
            with pytest.raises(InputError, match=rf"--otlp-grpc 127.0.0.1:{port}: cannot listen \(address in use"):
                next(receive(f"127.0.0.1:{port}"))
    finally:
        first.close()


def test_port_zero_binds_a_free_port_and_says_which() -> None:
    host = "127.0.0.1"
    items = receive(f"{host}:0", idle_timeout=0.3)
    message = next(items).message
    try:
        shown, _, port = message.rpartition(" at ")[2].rpartition(":")
        assert shown == host and int(port) > 0
        assert grpc_export(f"{host}:{port}", good_request([1.0]))[0] == grpc.StatusCode.OK
        got = list(items)
        assert by_label(got)[LABEL][0].counts.sum() == 1
        assert messages(got) == []
    finally:
        items.close()


@pytest.mark.parametrize("text", ["127.0.0.1:http", "127.0.0.1:70000", "no-such-host.invalid:4317"])
def test_bad_addresses_name_the_option(text: str) -> None:
    with pytest.raises(InputError, match="--otlp-grpc"):
        next(receive(text))


@pytest.mark.slow
def test_the_sdk_exporter_retries_after_unavailable_and_nothing_is_lost(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(receiver, "QUEUE_REQUESTS", 1)
    port = free_port()
    items = receive(f"127.0.0.1:{port}", idle_timeout=3)
    got = [next(items)]
    pusher = Pusher(exporter("grpc", f"127.0.0.1:{port}", "delta"))
    histogram = pusher.meter.create_histogram("rpc.duration", unit="ms")
    try:
        histogram.record(1.0)
        pusher.push()  # accepted: the queue is now full, nobody drains it yet
        histogram.record(2.0)
        histogram.record(3.0)
        second = threading.Thread(target=pusher.push)
        second.start()  # told UNAVAILABLE, waits the 1 s we asked for, then retries
        deadline = time.monotonic() + 30
        while not told_to_retry(caplog) and second.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert told_to_retry(caplog), [r.getMessage() for r in caplog.records]
        got += items  # drains the queue while the exporter waits; ends 3 s after the last request
        second.join(30)
    finally:
        pusher.close()
    assert sum(int(c.counts.sum()) for c in by_label(got)["acceptance/rpc.duration"]) == 3


def told_to_retry(caplog: pytest.LogCaptureFixture) -> bool:
    """The SDK's exporter logged that it will retry after our UNAVAILABLE, in the 1 s our RetryInfo asked for."""
    return any("UNAVAILABLE" in r.getMessage() and "retrying in 1.00s" in r.getMessage()
               and "latencymap is behind" in r.getMessage() for r in caplog.records)
