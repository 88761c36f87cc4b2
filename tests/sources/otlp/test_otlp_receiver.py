"""The OTLP/HTTP receiver on loopback: answers as OTLP says, names bad requests, goes on, stops cleanly."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse
from otlp_support import (
    busy_port,
    by_label,
    free_port,
    good_request,
    json_request,
    listening,
    messages,
    post,
    sdk_collect,
)

from latencymap.flow.inputs import InputError
from latencymap.sources.otlp import receiver
from latencymap.sources.otlp.receiver import parse_address, receive

HTML = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
LABEL = "unit/rpc.duration"


@pytest.fixture
def otlp() -> Iterator[tuple[str, list[Any], Iterator[Any]]]:
    """(base URL, items so far, the receiver generator), with the server already listening."""
    yield from listening(receive, "http://127.0.0.1:{port}")


def test_bad_requests_get_status_codes_and_notices_and_a_good_one_still_counts(otlp: Any) -> None:
    base, got, items = otlp
    url = f"{base}/v1/metrics"
    body = good_request([3.0, 30.0, 300.0])

    code, kind, answer = post(url, body[: len(body) // 2], "application/x-protobuf")
    assert (code, kind) == (400, "application/x-protobuf")
    status = Status.FromString(answer)
    assert status.code == 3 and "truncated or not protobuf" in status.message

    code, kind, answer = post(url, HTML, "text/html")
    assert code == 415 and b"application/x-protobuf or application/json" in answer

    code, kind, answer = post(url, HTML, "application/json")
    assert (code, kind) == (400, "application/json")
    assert json.loads(answer)["code"] == 3 and "invalid JSON at line 1 column 1" in json.loads(answer)["message"]

    assert post(url, b"not gzip", "application/json", encoding="gzip")[0] == 400
    assert post(url, body, "application/x-protobuf", encoding="br")[0] == 415
    assert post(f"{base}/v1/traces", body, "application/x-protobuf")[0] == 404
    assert post(url, b"", None, method="GET")[0] == 405

    code, kind, answer = post(url, body, "application/x-protobuf", gzipped=True)
    assert (code, kind) == (200, "application/x-protobuf")
    assert not ExportMetricsServiceResponse.FromString(answer).HasField("partial_success")

    got += items
    said = messages(got)[1:]
    assert len(said) == 7
    assert all(m.startswith("listen --otlp: 127.0.0.1:") for m in said)
    assert "POST /v1/metrics: " in said[0] and "truncated or not protobuf" in said[0]
    assert "Content-Type 'text/html'; expected application/x-protobuf or application/json" in said[1]
    assert "invalid JSON" in said[2] and "expected an OTLP/JSON ExportMetricsServiceRequest" in said[2]
    assert "POST /v1/traces" in said[5] and "GET /v1/metrics" in said[6]
    [column] = by_label(got)[LABEL]
    assert column.counts.sum() == 3


def test_rejected_points_are_a_partial_success(otlp: Any) -> None:
    base, got, items = otlp
    doc = json_request(sdk_collect([3.0, 30.0], name="rpc.duration"))
    metrics = doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
    broken = json.loads(json.dumps(metrics[0]))
    broken["name"] = "rpc.broken"
    broken["histogram"]["dataPoints"][0]["explicitBounds"] = [10.0, 5.0]
    broken["histogram"]["dataPoints"][0]["bucketCounts"] = ["1", "0", "1"]
    metrics.append(broken)
    code, kind, answer = post(f"{base}/v1/metrics", json.dumps(doc).encode(), "application/json; charset=utf-8")
    assert (code, kind) == (200, "application/json")
    partial = json.loads(answer)["partialSuccess"]
    assert partial["rejectedDataPoints"] == "1" and "strictly increasing" in partial["errorMessage"]
    got += items
    assert by_label(got)[LABEL][0].counts.sum() == 2
    assert any("'rpc.broken' point 0" in m and "point skipped" in m for m in messages(got))


def test_a_full_queue_answers_503_and_nothing_accepted_is_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(receiver, "QUEUE_REQUESTS", 2)
    port = free_port()
    items = receive(f"127.0.0.1:{port}", idle_timeout=0.3)
    next(items)
    url = f"http://127.0.0.1:{port}/v1/metrics"
    codes = [post(url, good_request([float(n + 2)]), "application/x-protobuf")[0] for n in range(3)]
    assert codes == [200, 200, 503]  # nobody drained the queue yet: the exporter is told to retry
    got = list(items)
    assert sum(int(c.counts.sum()) for c in by_label(got)[LABEL]) == 2


def test_stops_cleanly_and_frees_the_port() -> None:
    port = free_port()
    items = receive(f"127.0.0.1:{port}")
    assert "http://127.0.0.1:" in next(items).message
    assert any(t.name == "latencymap-otlp" for t in threading.enumerate())
    items.close()  # the view quit while the receiver waited
    assert not any(t.name == "latencymap-otlp" and t.is_alive() for t in threading.enumerate())
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))


def test_a_busy_port_is_a_clear_error() -> None:
    with busy_port() as port, pytest.raises(InputError, match=f"--otlp 127.0.0.1:{port}: cannot listen"):
        next(receive(f"127.0.0.1:{port}"))


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:4318", ("127.0.0.1", 4318)), ("0.0.0.0:9000", ("0.0.0.0", 9000)), ("[::1]:4318", ("::1", 4318)),
    (":4318", ("127.0.0.1", 4318)), ("4318", ("127.0.0.1", 4318)), ("localhost:0", ("localhost", 0)),
])
def test_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["127.0.0.1:http", "127.0.0.1:70000", "host:"])
def test_bad_addresses(text: str) -> None:
    with pytest.raises(ValueError, match="expected HOST:PORT"):
        parse_address(text)
