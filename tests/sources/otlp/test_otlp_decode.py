"""OTLP protobuf and JSON, as the SDK's own encoders write them, decode to the same points; bad input is named."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from otlp_support import json_request, protobuf_request, sdk_collect

from latencymap.sources.otlp.decode import DecodeError, decode_json, decode_protobuf
from latencymap.sources.otlp.points import CUMULATIVE, DELTA, Decoded


def sdk_data(temporality: str = "delta") -> Any:
    data = sdk_collect([0.0, 1.5, 3.0, 250.0], name="db.expo", temporality=temporality, attributes={"op": "get"})
    explicit = sdk_collect([4.0, 40.0, 400.0], name="http.duration", temporality=temporality,
                           attributes={"route": "/a", "code": "200"})
    data.resource_metrics[0].scope_metrics[0].metrics.extend(explicit.resource_metrics[0].scope_metrics[0].metrics)
    return data


def comparable(decoded: Decoded) -> list[tuple[Any, ...]]:
    return [(p.key, p.unit, p.temporality, p.start_ns, p.time_ns, p.count, p.sum, p.counts.tolist(), p.bounds,
             p.scale, p.offset, p.zero_count, p.negative, p.flags) for p in decoded.points]


@pytest.mark.parametrize("temporality", ["delta", "cumulative"])
def test_sdk_protobuf_and_json_decode_to_the_same_points(temporality: str) -> None:
    data = sdk_data(temporality)
    from_protobuf = decode_protobuf(protobuf_request(data))
    from_json = decode_json(json.loads(json.dumps(json_request(data))))
    assert comparable(from_protobuf) == comparable(from_json)
    kinds = {p.key.metric: p for p in from_json.points}
    assert kinds["db.expo"].key.exponential and not kinds["http.duration"].key.exponential
    assert kinds["db.expo"].zero_count == 1 and kinds["db.expo"].count == 4
    assert kinds["http.duration"].key.attributes == (("code", "200"), ("route", "/a"))
    assert dict(kinds["http.duration"].key.resource)["service.name"] == "unit"
    assert {p.temporality for p in from_json.points} == {DELTA if temporality == "delta" else CUMULATIVE}
    assert not from_json.problems and not from_protobuf.problems


@pytest.mark.parametrize("snake_case", [False, True])
def test_protobuf_json_mapping_with_enum_names_decodes_the_same(snake_case: bool) -> None:
    body = protobuf_request(sdk_data())
    message = ExportMetricsServiceRequest.FromString(body)
    text = json_format.MessageToJson(message, preserving_proto_field_name=snake_case)
    assert "AGGREGATION_TEMPORALITY_DELTA" in text  # names, not the integers OTLP/JSON asks for
    assert comparable(decode_json(json.loads(text))) == comparable(decode_protobuf(body))


def test_truncated_protobuf_says_so() -> None:
    body = protobuf_request(sdk_data())
    with pytest.raises(DecodeError, match="truncated or not protobuf"):
        decode_protobuf(body[: len(body) // 2])


def test_html_is_not_a_protobuf_request() -> None:
    with pytest.raises(DecodeError, match="not a protobuf ExportMetricsServiceRequest"):
        decode_protobuf(b"<html><body>502 Bad Gateway</body></html>")
    with pytest.raises(DecodeError, match="no field of an ExportMetricsServiceRequest"):
        decode_protobuf(b"\x12\x03abc")  # valid wire format, unknown field only
    assert decode_protobuf(b"").points == []


def test_a_malformed_point_is_reported_and_the_others_kept() -> None:
    doc = json_request(sdk_data())
    metrics = doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
    bad = copy.deepcopy(next(m for m in metrics if "histogram" in m))
    bad["name"] = "broken"
    bad["histogram"]["dataPoints"][0]["bucketCounts"] = ["1", "2"]
    metrics.append(bad)
    metrics.append({"name": "queue.size", "unit": "1", "gauge": {"dataPoints": []}})
    decoded = decode_json(doc)
    assert {p.key.metric for p in decoded.points} == {"db.expo", "http.duration"}
    assert decoded.problems == ["metric 'broken' point 0: 2 bucket counts for 15 bounds (expected 16)"]
    assert decoded.ignored == {"queue.size": "Gauge"}


@pytest.mark.parametrize(("doc", "message"), [
    ([1, 2], "a JSON list, expected an object"),
    ({"hello": 1}, "keys 'hello', expected \"resourceMetrics\""),
    ({"resourceMetrics": {"not": "a list"}}, "resourceMetrics is dict"),
])
def test_json_that_is_not_a_metrics_request(doc: Any, message: str) -> None:
    with pytest.raises(DecodeError, match=message.replace("(", r"\(").replace("[", r"\[")):
        decode_json(doc)


def test_other_signals_and_json_number_forms() -> None:
    assert decode_json({"resourceSpans": []}).signals == {"traces"}
    assert decode_json({}).points == []
    doc = json_request(sdk_data())
    point = doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][1]["histogram"]["dataPoints"][0]
    point["count"] = int(point["count"])  # a number instead of a string is accepted
    point["sum"] = "NaN"
    decoded = decode_json(doc)
    [explicit] = [p for p in decoded.points if not p.key.exponential]
    assert explicit.sum is None and explicit.count == 3
