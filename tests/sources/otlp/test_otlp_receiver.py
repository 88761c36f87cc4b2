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

from latencymap.core.errors import NothingReadable
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

    # nested deeper than json.loads follows: the connection was dropped with no answer, a traceback on stderr
    code, kind, answer = post(url, b"[" * 2000 + b"]" * 2000, "application/json")
    assert (code, kind) == (400, "application/json")
    assert json.loads(answer)["message"].startswith("invalid JSON (nested too deeply to decode); expected an OTLP")

    assert post(url, b"not gzip", "application/json", encoding="gzip")[0] == 400
    assert post(url, body, "application/x-protobuf", encoding="br")[0] == 415
    assert post(f"{base}/v1/traces", body, "application/x-protobuf")[0] == 404
    assert post(url, b"", None, method="GET")[0] == 405

    code, kind, answer = post(url, body, "application/x-protobuf", gzipped=True)
    assert (code, kind) == (200, "application/x-protobuf")
    assert not ExportMetricsServiceResponse.FromString(answer).HasField("partial_success")

    got += items
    said = messages(got)[1:]
    assert len(said) == 8
    assert all(m.startswith("listen --otlp: 127.0.0.1:") for m in said)
    assert "POST /v1/metrics: " in said[0] and "truncated or not protobuf" in said[0]
    assert "Content-Type 'text/html'; expected application/x-protobuf or application/json" in said[1]
    assert "invalid JSON" in said[2] and "expected an OTLP/JSON ExportMetricsServiceRequest" in said[2]
    assert "nested too deeply" in said[3]
    assert "POST /v1/traces" in said[6] and "GET /v1/metrics" in said[7]
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


def taken_in(items: Iterator[Any], got: list[Any]) -> str:
    """The receiver's items put in `got` until it ends as a run that read nothing and skipped something ends
    (NothingReadable, exit code 1 as for a file); its message."""
    with pytest.raises(NothingReadable) as ended:
        for item in items:
            got.append(item)
    return str(ended.value)


def _raw(port: int, data: bytes) -> bytes:
    """What the receiver answers to `data` sent as is on a new connection (until it closes it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(data)
        out = b""
        while chunk := conn.recv(65536):
            out += chunk
    return out


#: The start of a TLS ClientHello: a record of type 22 (handshake), version 3.1; no line end anywhere.
CLIENT_HELLO = bytes.fromhex("160301") + b"\x00\xa0\x01\x00\x00\x9c\x03\x03" + b"\x01" * 160


def test_what_is_no_otlp_http_request_is_told_once_per_peer_with_a_hint(otlp: Any) -> None:
    """silent_http.py's requests: a browser's CORS preflight, HEAD, an OTLP/gRPC client's HTTP/2 preface and an
    https:// exporter's TLS handshake each get one notice naming the peer and saying what to do; Content-Length -1
    is a 400 saying it is not a length."""
    base, got, items = otlp
    port = int(base.rsplit(":", 1)[1])
    preflight = b"OPTIONS /v1/metrics HTTP/1.1\r\nHost: x\r\nAccess-Control-Request-Method: POST\r\n\r\n"
    assert _raw(port, preflight).startswith(b"HTTP/1.0 405")
    assert _raw(port, preflight).startswith(b"HTTP/1.0 405")  # again: not told again
    head = _raw(port, b"HEAD /v1/metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 405") and head.endswith(b"\r\n\r\n")  # no body to a HEAD
    _raw(port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    assert _raw(port, CLIENT_HELLO) == b""  # closed at once, not after the 30 s a request line may take
    _raw(port, CLIENT_HELLO)
    negative = _raw(port, b"POST /v1/metrics HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: -1\r\n\r\n")
    assert negative.startswith(b"HTTP/1.0 400") and b"is not a length" in negative
    assert taken_in(items, got).startswith("listen --otlp: no record could be read (5 skipped); the first: "
                                           "listen --otlp: 127.0.0.1:")
    said = messages(got)[1:]
    assert all(m.startswith("listen --otlp: 127.0.0.1:") for m in said)
    assert [m.split(": ", 2)[2] for m in said] == [
        "OPTIONS: a browser exporter's CORS preflight, which latencymap does not answer; expected POST /v1/metrics "
        "(send from a server-side exporter, or through a Collector)",
        "HEAD: expected POST /v1/metrics",
        "an HTTP/2 connection preface: an OTLP/gRPC client is talking to the OTLP/HTTP port: use --otlp-grpc (port "
        "4317), or the exporter's http/protobuf protocol with http://HOST:PORT/v1/metrics",
        "a TLS handshake on a plain-HTTP port: use http:// in the exporter's endpoint, not https:// (latencymap has "
        "no TLS; put a Collector in front for that)",
        "POST /v1/metrics: Content-Length '-1' is not a length (a number of bytes)"]


def test_an_sdk_exporter_with_https_is_told_to_use_http(otlp: Any) -> None:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    base, got, items = otlp
    https = OTLPMetricExporter(endpoint=base.replace("http://", "https://") + "/v1/metrics", timeout=2)
    https.export(sdk_collect([3.0], name="rpc.duration"))
    https.shutdown()
    taken_in(items, got)
    assert [m for m in messages(got) if "a TLS handshake on a plain-HTTP port: use http://" in m]


@pytest.mark.grpc
def test_an_sdk_grpc_exporter_at_the_http_port_is_told_to_use_otlp_grpc(otlp: Any) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

    base, got, items = otlp
    swapped = OTLPMetricExporter(endpoint=base.removeprefix("http://"), insecure=True, timeout=2)
    swapped.export(sdk_collect([3.0], name="rpc.duration"))
    swapped.shutdown()
    taken_in(items, got)
    assert [m for m in messages(got) if "an OTLP/gRPC client is talking to the OTLP/HTTP port: use --otlp-grpc" in m]
