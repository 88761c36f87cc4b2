"""OTLP metrics requests (`ExportMetricsServiceRequest`) in JSON or protobuf to histogram points.

JSON follows OTLP/JSON: lowerCamelCase keys (the proto names in snake_case are accepted too), 64-bit integers
as decimal strings or numbers, enums as integers (or their names), doubles as numbers or "NaN"/"Infinity".
Protobuf uses the `opentelemetry-proto` package's generated classes, imported only here (extra `otlp`).
A request that cannot be read at all raises DecodeError; a malformed point is listed in `Decoded.problems`
and the others are kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np

from latencymap.core.buckets import MAX_COUNT
from latencymap.core.sanitize import clean_text, excerpt
from latencymap.sources.otlp.points import CUMULATIVE, DELTA, Attrs, Decoded, Point, StreamKey

#: More positive buckets than this in one point is no histogram an SDK or collector writes (they keep 160).
MAX_EXPO_BUCKETS = 16384
MIN_SCALE, MAX_SCALE = -10, 20
_TEMPORALITY = {"AGGREGATION_TEMPORALITY_DELTA": DELTA, "AGGREGATION_TEMPORALITY_CUMULATIVE": CUMULATIVE}
_OTHER_KINDS = {"gauge": "Gauge", "sum": "Sum", "summary": "Summary"}
_SIGNALS = {"resourceSpans": "traces", "resourceLogs": "logs", "resourceProfiles": "profiles"}


class DecodeError(ValueError):
    """A body or line that is not an OTLP metrics request; the message says what was expected."""


class PointError(ValueError):
    """One malformed data point."""


def protobuf_available() -> bool:
    """True when `opentelemetry-proto` (and protobuf) can be imported."""
    try:
        import opentelemetry.proto.collector.metrics.v1.metrics_service_pb2  # noqa: F401
    except ImportError:
        return False
    return True


# ---- shared point construction -------------------------------------------------------------------------------

def _counts(values: Iterable[int], what: str) -> np.ndarray:
    counts = list(values)
    if any(c < 0 for c in counts) or sum(counts) > MAX_COUNT:
        raise PointError(f"{what} must be counts in [0, 2**62]")
    return np.asarray(counts, dtype=np.int64)


def _common(temporality: int, time_ns: int, count: int) -> None:
    if temporality not in (DELTA, CUMULATIVE):
        raise PointError(f"aggregation temporality {temporality} (expected 1 delta or 2 cumulative)")
    if time_ns <= 0:
        raise PointError("no time_unix_nano")
    if not 0 <= count <= MAX_COUNT:
        raise PointError(f"count {count} outside [0, 2**62]")


def explicit_point(key: StreamKey, unit: str, temporality: int, start_ns: int, time_ns: int, count: int,
                   total: float | None, bucket_counts: list[int], bounds: list[float], flags: int,
                   least: float | None = None, most: float | None = None) -> Point:
    """A validated Histogram point; `least` and `most` are its optional `min` and `max`."""
    _common(temporality, time_ns, count)
    least, most = _range(least, most)
    if not bucket_counts:
        bucket_counts, bounds = [count], []
    if len(bucket_counts) != len(bounds) + 1:
        raise PointError(f"{len(bucket_counts)} bucket counts for {len(bounds)} bounds "
                         f"(expected {len(bounds) + 1})")
    if not all(math.isfinite(b) for b in bounds) or any(b >= a for b, a in pairwise(bounds)):
        raise PointError(f"explicit bounds are not finite and strictly increasing: {excerpt(str(bounds[:20]))}")
    return Point(key, unit, temporality, start_ns, time_ns, count, _finite(total),
                 _counts(bucket_counts, "bucket counts"), tuple(bounds), flags=flags, least=least, most=most)


def expo_point(key: StreamKey, unit: str, temporality: int, start_ns: int, time_ns: int, count: int,
               total: float | None, scale: int, zero_count: int, zero_threshold: float, offset: int,
               positive: list[int], negative: list[int], flags: int, least: float | None = None,
               most: float | None = None) -> Point:
    """A validated ExponentialHistogram point; `least` and `most` are its optional `min` and `max`."""
    _common(temporality, time_ns, count)
    least, most = _range(least, most)
    if not MIN_SCALE <= scale <= MAX_SCALE:
        raise PointError(f"scale {scale} outside [{MIN_SCALE}, {MAX_SCALE}]")
    if len(positive) > MAX_EXPO_BUCKETS or not -(2**31) <= offset < 2**31:
        raise PointError(f"{len(positive)} buckets from offset {offset} (expected at most {MAX_EXPO_BUCKETS}, "
                         "offset within 32 bits)")
    if not (math.isfinite(zero_threshold) and zero_threshold >= 0):
        raise PointError(f"zero threshold {zero_threshold} is not a finite value >= 0")
    held = _counts([zero_count, *positive, sum(negative)], "bucket counts")
    return Point(key, unit, temporality, start_ns, time_ns, count, _finite(total), held[1:-1].copy(),
                 scale=scale, offset=offset, zero_count=int(held[0]), zero_threshold=zero_threshold,
                 negative=int(held[-1]), flags=flags, least=least, most=most)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _range(least: float | None, most: float | None) -> tuple[float | None, float | None]:
    """A point's `min` and `max`: both, or neither when one is missing, not finite or above the other (the smallest
    and the largest value are then not known)."""
    least, most = _finite(least), _finite(most)
    if least is None or most is None or least > most:
        return None, None
    return least, most


# ---- JSON ----------------------------------------------------------------------------------------------------

@lru_cache(maxsize=128)
def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """Field `name` (lowerCamelCase) of a JSON object, or its snake_case spelling."""
    if not isinstance(obj, dict):
        return default
    if name in obj:
        return obj[name]
    return obj.get(_snake(name), default)


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PointError(f"{what} is {type(value).__name__} (expected a list)")
    return value


def _int(value: Any, what: str) -> int:
    """A JSON integer: a number, or a decimal string as OTLP/JSON writes 64-bit values."""
    if isinstance(value, bool):
        raise PointError(f"{what} is a boolean (expected an integer)")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,20}", value.strip()):
        return int(value)
    raise PointError(f"{what} is {excerpt(str(value), 30)} (expected an integer)")


def _double(value: Any, what: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # "NaN", "Infinity", "-Infinity" and numbers in strings
        except ValueError:
            pass
    raise PointError(f"{what} is {excerpt(str(value), 30)} (expected a number)")


def _json_value(value: Any) -> str:
    if not isinstance(value, dict) or not value:
        return ""
    kind, inner = next(iter(value.items()))
    if kind in ("arrayValue", "array_value"):
        return "[" + ",".join(_json_value(v) for v in _list(_get(inner, "values"), "array")) + "]"
    if kind in ("kvlistValue", "kvlist_value"):
        return "{" + ",".join(f"{k}={v}" for k, v in _json_attrs(_get(inner, "values"))) + "}"
    if isinstance(inner, bool):
        return "true" if inner else "false"
    return str(inner)


def _json_attrs(items: Any) -> Attrs:
    pairs = ((str(_get(kv, "key", "")), _json_value(_get(kv, "value"))) for kv in _list(items, "attributes"))
    return tuple(sorted(pairs))


def decode_json(doc: Any) -> Decoded:
    """Points of a parsed OTLP/JSON `ExportMetricsServiceRequest`."""
    if not isinstance(doc, dict):
        raise DecodeError(f"a JSON {type(doc).__name__}, expected an object with \"resourceMetrics\"")
    out = Decoded()
    resource_metrics = _get(doc, "resourceMetrics")
    if resource_metrics is None:
        out.signals = {signal for key, signal in _SIGNALS.items() if _get(doc, key) is not None}
        if doc and not out.signals:
            keys = ", ".join(excerpt(k, 30) for k in list(doc)[:4])
            raise DecodeError(f"a JSON object with keys {keys}, expected \"resourceMetrics\"")
        return out
    try:
        for rm in _list(resource_metrics, "resourceMetrics"):
            resource = _json_attrs(_get(_get(rm, "resource"), "attributes"))
            for sm in _list(_get(rm, "scopeMetrics"), "scopeMetrics"):
                scope = str(_get(_get(sm, "scope"), "name", "") or "")
                for metric in _list(_get(sm, "metrics"), "metrics"):
                    _json_metric(metric, resource, scope, out)
    except PointError as err:
        raise DecodeError(f"not an OTLP metrics request: {err}") from None
    return out


def _json_metric(metric: Any, resource: Attrs, scope: str, out: Decoded) -> None:
    name, unit = str(_get(metric, "name", "") or ""), str(_get(metric, "unit", "") or "")
    explicit, expo = _get(metric, "histogram"), _get(metric, "exponentialHistogram")
    data = explicit if explicit is not None else expo
    if data is None:
        kinds = [label for key, label in _OTHER_KINDS.items() if _get(metric, key) is not None]
        out.ignored[name] = kinds[0] if kinds else "metric without data"
        return
    raw = _get(data, "aggregationTemporality", 0)
    try:
        named = isinstance(raw, str) and raw in _TEMPORALITY
        temporality = _TEMPORALITY[raw] if named else _int(raw, "aggregationTemporality")
    except PointError as err:
        out.problems.append(f"metric {clean_text(name, 80)!r}: {err}")
        return
    for n, dp in enumerate(_list(_get(data, "dataPoints"), "dataPoints")):
        try:
            out.points.append(_json_point(dp, resource, scope, name, unit, temporality, expo is data))
        except PointError as err:
            out.problems.append(f"metric {clean_text(name, 80)!r} point {n}: {err}")


def _json_point(dp: Any, resource: Attrs, scope: str, name: str, unit: str, temporality: int,
                exponential: bool) -> Point:
    if not isinstance(dp, dict):
        raise PointError(f"a {type(dp).__name__} (expected an object)")
    key = StreamKey(resource, scope, name, exponential, _json_attrs(_get(dp, "attributes")))
    start, time = _int(_get(dp, "startTimeUnixNano", 0), "startTimeUnixNano"), _int(_get(dp, "timeUnixNano", 0),
                                                                                    "timeUnixNano")
    count, flags = _int(_get(dp, "count", 0), "count"), _int(_get(dp, "flags", 0), "flags")
    total, least, most = (None if (raw := _get(dp, field)) is None else _double(raw, field)
                          for field in ("sum", "min", "max"))
    if not exponential:
        buckets = [_int(c, "bucketCounts") for c in _list(_get(dp, "bucketCounts"), "bucketCounts")]
        bounds = [_double(b, "explicitBounds") for b in _list(_get(dp, "explicitBounds"), "explicitBounds")]
        return explicit_point(key, unit, temporality, start, time, count, total, buckets, bounds, flags, least, most)
    positive, negative = _get(dp, "positive") or {}, _get(dp, "negative") or {}
    return expo_point(key, unit, temporality, start, time, count, total, _int(_get(dp, "scale", 0), "scale"),
                      _int(_get(dp, "zeroCount", 0), "zeroCount"),
                      _double(_get(dp, "zeroThreshold", 0), "zeroThreshold"),
                      _int(_get(positive, "offset", 0), "offset"),
                      [_int(c, "bucketCounts") for c in _list(_get(positive, "bucketCounts"), "bucketCounts")],
                      [_int(c, "bucketCounts") for c in _list(_get(negative, "bucketCounts"), "bucketCounts")],
                      flags, least, most)


# ---- protobuf ------------------------------------------------------------------------------------------------

def decode_protobuf(body: bytes) -> Decoded:
    """Points of a binary protobuf `ExportMetricsServiceRequest`."""
    from google.protobuf.message import DecodeError as WireError
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    try:
        request = ExportMetricsServiceRequest.FromString(body)
    except WireError as err:
        why = clean_text(str(err).rpartition(": ")[2], 60).lower() or "unreadable"
        raise DecodeError(f"{len(body)} bytes that are not a protobuf ExportMetricsServiceRequest "
                          f"({why}: truncated or not protobuf?)") from None
    if body and not request.ListFields():
        raise DecodeError(f"{len(body)} bytes of protobuf with no field of an ExportMetricsServiceRequest")
    out = Decoded()
    for rm in request.resource_metrics:
        resource = _pb_attrs(rm.resource.attributes)
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                _pb_metric(metric, resource, sm.scope.name, out)
    return out


def _pb_value(value: Any) -> str:
    kind = value.WhichOneof("value")
    if kind is None:
        return ""
    if kind == "array_value":
        return "[" + ",".join(_pb_value(v) for v in value.array_value.values) + "]"
    if kind == "kvlist_value":
        return "{" + ",".join(f"{k}={v}" for k, v in _pb_attrs(value.kvlist_value.values)) + "}"
    if kind == "bool_value":
        return "true" if value.bool_value else "false"
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return str(getattr(value, kind))


def _pb_attrs(items: Any) -> Attrs:
    return tuple(sorted((kv.key, _pb_value(kv.value)) for kv in items))


def _pb_metric(metric: Any, resource: Attrs, scope: str, out: Decoded) -> None:
    kind = metric.WhichOneof("data")
    if kind not in ("histogram", "exponential_histogram"):
        out.ignored[metric.name] = _OTHER_KINDS.get(kind or "", "metric without data")
        return
    data = getattr(metric, kind)
    build: Callable[..., Point] = _pb_expo if kind == "exponential_histogram" else _pb_explicit
    for n, dp in enumerate(data.data_points):
        key = StreamKey(resource, scope, metric.name, kind == "exponential_histogram", _pb_attrs(dp.attributes))
        try:
            out.points.append(build(dp, key, metric.unit, data.aggregation_temporality))
        except PointError as err:
            out.problems.append(f"metric {clean_text(metric.name, 80)!r} point {n}: {err}")


def _pb_optional(dp: Any, name: str) -> float | None:
    """An optional double field of a point (`sum`, `min`, `max`): None when the point has none."""
    return float(getattr(dp, name)) if dp.HasField(name) else None


def _pb_explicit(dp: Any, key: StreamKey, unit: str, temporality: int) -> Point:
    return explicit_point(key, unit, temporality, dp.start_time_unix_nano, dp.time_unix_nano, dp.count,
                          _pb_optional(dp, "sum"), list(dp.bucket_counts), list(dp.explicit_bounds), dp.flags,
                          _pb_optional(dp, "min"), _pb_optional(dp, "max"))


def _pb_expo(dp: Any, key: StreamKey, unit: str, temporality: int) -> Point:
    return expo_point(key, unit, temporality, dp.start_time_unix_nano, dp.time_unix_nano, dp.count,
                      _pb_optional(dp, "sum"), dp.scale, dp.zero_count, dp.zero_threshold, dp.positive.offset,
                      list(dp.positive.bucket_counts), list(dp.negative.bucket_counts), dp.flags,
                      _pb_optional(dp, "min"), _pb_optional(dp, "max"))
