"""The protobuf exposition (`io.prometheus.client.MetricFamily`, length-delimited), where native histograms live.

Prometheus asks for it to scrape native histograms, which the text formats cannot carry; client_golang and
client_java serve it. Decoded here without generated code: a family is `name` (1), `type` (3, 4 = histogram),
`metric` (4), `unit` (5); a metric is `label` (1: `name` 1, `value` 2) and `histogram` (7). A histogram holds
`sample_count` (1, or `sample_count_float` 4), `sample_sum` (2), classic `bucket`s (3: `cumulative_count` 1 or
`cumulative_count_float` 4, `upper_bound` 2), `created_timestamp` (15: `seconds` 1, `nanos` 2), and the native
fields: `schema` (5, sint32), `zero_threshold` (6), `zero_count` (7, or 8 as a float), negative and positive spans
(9, 12: `offset` sint32 1, `length` 2), deltas (10, 13: sint64, each bucket's count minus the one before) or float
counts (11, 14). A span's offset is the gap after the previous span (the first one's is the first bucket's index);
bucket `i` of schema `n` is `(2**((i-1) * 2**-n), 2**(i * 2**-n)]`.

Classic buckets become the text format's samples (`NAME_bucket{le}`, `_sum`, `_count`, `_created`), so they are
read by the same code as a text page (an absent count or sum is proto3's default, 0); so do the untyped (or counter,
gauge) families `NAME_bucket`, `NAME_sum`, `NAME_count` and `NAME_created` that a server's `/federate` gives for a
classic histogram. Native ones become `NativeReading`s (with their created timestamp), diffed here between scrapes:
a created timestamp that changed is a restart, as a count that went down is.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .exposition import Exposition, Sample
from .series import Labels, Matcher, labels_key, restarted

TYPE = "application/vnd.google.protobuf"
ACCEPT = f"{TYPE};proto=io.prometheus.client.MetricFamily;encoding=delimited"
COUNTER, GAUGE, UNTYPED, HISTOGRAM, GAUGE_HISTOGRAM = 0, 1, 3, 4, 5
#: Where a Metric keeps a counter's, a gauge's and an untyped sample's value (each a message with `value` 1).
_SCALAR_FIELDS = {COUNTER: 3, GAUGE: 2, UNTYPED: 5}
_DOUBLE = struct.Struct("<d")
#: Fields of a histogram that only a native one sets.
_NATIVE_FIELDS = frozenset({5, 6, 7, 8, 9, 10, 11, 12, 13, 14})


class ProtobufError(ValueError):
    """Bytes that are not the delimited MetricFamily exposition."""


def is_protobuf(content_type: str) -> bool:
    """True for the protobuf exposition's media type."""
    return content_type.split(";", 1)[0].strip().lower() == TYPE


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ProtobufError("a varint runs past its message")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value & (2**64 - 1), at


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value): an int for varints, bytes otherwise."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, at = _varint(data, at)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, at = data[at: at + size], at + size
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at: at + size], at + size
        else:
            raise ProtobufError(f"field {number} has wire type {wire}, which the exposition does not use")
        if at > len(data):
            raise ProtobufError(f"field {number} runs past its message")
        yield number, wire, value


def _double(wire: int, value: Any) -> float:
    if wire != 1:
        raise ProtobufError(f"expected a double, got wire type {wire}")
    return float(_DOUBLE.unpack(value)[0])


def _uint(wire: int, value: Any) -> int:
    if wire != 0:
        raise ProtobufError(f"expected a varint, got wire type {wire}")
    return int(value)


def _sint(wire: int, value: Any) -> int:
    return _zigzag(_uint(wire, value))


def _ints(wire: int, value: Any, signed: bool) -> list[int]:
    """A repeated varint field's values, packed (wire type 2) or one by one (0)."""
    if wire == 0:
        raw = [value]
    elif wire == 2:
        raw, at = [], 0
        while at < len(value):
            v, at = _varint(value, at)
            raw.append(v)
    else:
        raise ProtobufError(f"expected varints, got wire type {wire}")
    return [_zigzag(v) for v in raw] if signed else raw


def _doubles(wire: int, value: Any) -> list[float]:
    if wire == 1:
        return [_double(wire, value)]
    if wire == 2 and len(value) % 8 == 0:
        return [x for (x,) in _DOUBLE.iter_unpack(value)]
    raise ProtobufError(f"expected doubles, got wire type {wire}")


@dataclass(slots=True)
class NativeReading:
    """One native histogram at one instant: cumulative counts per bucket index (in time, not in le)."""

    schema: int
    zero_threshold: float
    zero_count: float
    positive: dict[int, float]
    negative: dict[int, float]
    count: float
    total: float | None
    created: float | None = None  # the created timestamp (epoch seconds): a new one is a restart

    def at_schema(self, schema: int) -> NativeReading:
        """The same counts in a coarser schema (Prometheus' downscaling: index i → ((i-1) >> k) + 1)."""
        k = self.schema - schema
        if k <= 0:
            return self

        def down(buckets: dict[int, float]) -> dict[int, float]:
            out: dict[int, float] = {}
            for i, c in buckets.items():
                j = ((i - 1) >> k) + 1
                out[j] = out.get(j, 0.0) + c
            return out

        return NativeReading(schema, self.zero_threshold, self.zero_count, down(self.positive),
                             down(self.negative), self.count, self.total, self.created)


@dataclass(slots=True)
class ProtoPage:
    """A decoded answer: classic histograms as text samples, native ones by label set, units by family."""

    page: Exposition = field(default_factory=lambda: Exposition(openmetrics=False))
    native: dict[Labels, NativeReading] = field(default_factory=dict)


def parse_protobuf(body: bytes, metric: str, matchers: Sequence[Matcher] = ()) -> ProtoPage:
    """The families of a delimited protobuf answer; histogram `metric`'s series as samples or native readings.

    Every family's name and type are listed (`page.types`), so a missing metric can be explained; a family that
    does not decode stops the page there with an error naming it (what came before is kept).
    """
    out = ProtoPage()
    page = out.page
    at, number = 0, 0
    while at < len(body):
        number += 1
        try:
            size, at = _varint(body, at)
            if at + size > len(body):
                raise ProtobufError(f"its length says {size} bytes, {len(body) - at} are left (cut short?)")
            _family(body[at: at + size], metric, matchers, out)
        except ProtobufError as err:
            page.errors.append(f"protobuf message {number}: {err}")
            page.bad_lines += 1
            break
        at += size
        page.lines = number
    return out


def _family(data: bytes, metric: str, matchers: Sequence[Matcher], out: ProtoPage) -> None:
    name, kind, unit, metrics = "", 3, "", []
    for number, wire, value in _fields(data):
        if number == 1 and wire == 2:
            name = value.decode("utf-8", "replace")
        elif number == 3 and wire == 0:
            kind = value
        elif number == 4 and wire == 2:
            metrics.append(value)
        elif number == 5 and wire == 2:
            unit = value.decode("utf-8", "replace")
    out.page.types[name] = {COUNTER: "counter", GAUGE: "gauge", 2: "summary", HISTOGRAM: "histogram",
                            GAUGE_HISTOGRAM: "gaugehistogram"}.get(kind, "unknown")
    if unit:
        out.page.units[name] = unit
    if name in (f"{metric}_bucket", f"{metric}_sum", f"{metric}_count", f"{metric}_created") and \
            kind in _SCALAR_FIELDS:
        for raw in metrics:  # a classic histogram as /federate gives it: untyped families of its series
            labels, held = _metric(raw, _SCALAR_FIELDS[kind])
            if held is not None and all(m.matches(labels) for m in matchers):
                fields = _message(held)
                out.page.samples.append(Sample(name, labels, _double(*fields[1]) if 1 in fields else 0.0))
        return
    if name != metric or kind not in (HISTOGRAM, GAUGE_HISTOGRAM):
        return
    for raw in metrics:
        labels, hist = _metric(raw, 7)
        if hist is None or not all(m.matches(labels) for m in matchers):
            continue
        _histogram(name, labels, hist, out)


def _message(data: bytes) -> dict[int, tuple[int, Any]]:
    """A message's fields by number (the last of each)."""
    return {number: (wire, value) for number, wire, value in _fields(data)}


def _metric(data: bytes, at: int) -> tuple[dict[str, str], bytes | None]:
    """A Metric's labels and its value message, field `at` (7: the histogram; 2, 3, 5: a gauge, counter, untyped)."""
    labels: dict[str, str] = {}
    held = None
    for number, wire, value in _fields(data):
        if number == 1 and wire == 2:
            pair = {n: v.decode("utf-8", "replace") for n, w, v in _fields(value) if w == 2}
            labels[pair.get(1, "")] = pair.get(2, "")
        elif number == at and wire == 2:
            held = value
    return labels, held


def _created(wire: int, value: Any) -> float:
    """A google.protobuf.Timestamp (`seconds` 1, `nanos` 2) in epoch seconds."""
    if wire != 2:
        raise ProtobufError(f"the created timestamp has wire type {wire}, expected a message")
    stamp = {n: v for n, w, v in _fields(value) if w == 0}
    seconds = stamp.get(1, 0)
    return float(seconds - (1 << 64) if seconds >= 1 << 63 else seconds) + stamp.get(2, 0) / 1e9


def _histogram(name: str, labels: dict[str, str], data: bytes, out: ProtoPage) -> None:
    count = total = created = None
    classic: list[tuple[float, float]] = []
    native: dict[int, list[Any]] = {}
    for number, wire, value in _fields(data):
        if number == 1 and wire == 0:
            count = float(value)
        elif number == 4:
            count = _double(wire, value)
        elif number == 2:
            total = _double(wire, value)
        elif number == 15:
            created = _created(wire, value)
        elif number == 3 and wire == 2:
            bucket = {n: (w, v) for n, w, v in _fields(value)}
            upper = _double(*bucket[2]) if 2 in bucket else math.inf
            cumulative = _double(*bucket[4]) if 4 in bucket else float(_uint(*bucket[1])) if 1 in bucket else 0.0
            classic.append((upper, cumulative))
        elif number in _NATIVE_FIELDS:
            native.setdefault(number, []).append((wire, value))
    pages = out.page.samples
    if native:
        out.native[labels_key(labels)] = _native(native, count or 0.0, total, created)
    if classic:  # client_golang may give both; `--histogram` chooses
        for upper, cumulative in classic:
            pages.append(Sample(f"{name}_bucket", {**labels, "le": repr(upper)}, cumulative))
        pages.append(Sample(f"{name}_count", dict(labels), count or 0.0))
        pages.append(Sample(f"{name}_sum", dict(labels), total or 0.0))
        if created is not None:
            pages.append(Sample(f"{name}_created", dict(labels), created))


def _native(raw: dict[int, list[Any]], count: float, total: float | None, created: float | None) -> NativeReading:
    def last(number: int, read: Callable[[int, Any], Any], default: Any) -> Any:
        return read(*raw[number][-1]) if number in raw else default

    schema = last(5, _sint, 0)
    if not -4 <= schema <= 8:
        raise ProtobufError(f"native histogram schema {schema}, expected -4 to 8")
    threshold = last(6, _double, 0.0)
    zero = last(8, _double, None)
    if zero is None:
        zero = float(last(7, _uint, 0))
    for what, value in (("zero threshold", threshold), ("zero bucket count", zero), ("sample count", count)):
        if not (math.isfinite(value) and value >= 0):
            raise ProtobufError(f"native histogram {what} {value}, expected a finite number >= 0")
    if total is not None and not math.isfinite(total):
        total = None
    return NativeReading(schema, threshold, zero, _side(raw, 12, 13, 14), _side(raw, 9, 10, 11), count, total,
                         created)


def _side(raw: dict[int, list[Any]], spans_at: int, deltas_at: int, counts_at: int) -> dict[int, float]:
    """Bucket index → count of one side (positive or negative) from its spans and deltas or float counts."""
    spans = []
    for wire, value in raw.get(spans_at, []):
        if wire != 2:
            raise ProtobufError(f"field {spans_at} (a span) has wire type {wire}, expected a message")
        span = {n: v for n, w, v in _fields(value) if w == 0}
        spans.append((_zigzag(span.get(1, 0)), span.get(2, 0)))
    if counts_at in raw:
        counts = [c for w, v in raw[counts_at] for c in _doubles(w, v)]
    else:
        deltas = [d for w, v in raw.get(deltas_at, []) for d in _ints(w, v, signed=True)]
        counts, running = [], 0
        for d in deltas:
            running += d
            counts.append(float(running))
    if sum(length for _, length in spans) != len(counts):
        raise ProtobufError(f"spans cover {sum(length for _, length in spans)} buckets, {len(counts)} counts are "
                            "given")
    indexes: list[int] = []
    index = 0
    for k, (offset, length) in enumerate(spans):
        index = offset if k == 0 else index + offset
        indexes.extend(range(index, index + length))
        index += length
    if any(c < 0 or not math.isfinite(c) for c in counts):
        raise ProtobufError("a native bucket count is negative or not finite")
    return {i: c for i, c in zip(indexes, counts, strict=True) if c}


def diff_native(prev: NativeReading, cur: NativeReading) -> tuple[dict[str, Any], bool] | None:
    """(the API-shaped histogram of what happened between two readings, reset) — or None when the zero bucket's
    width changed and the count did not go down (the two cannot be compared), but for a zero bucket widened over
    whole buckets of `prev` (`_zero_widened`): diffed exactly. A created timestamp that changed, or a count or bucket
    that went down, is a reset: `cur` whole, whatever its zero bucket."""
    if restarted(prev.created, cur.created):
        return api_histogram(cur, None), True
    widened = None
    if prev.zero_threshold != cur.zero_threshold:
        if cur.count < prev.count:
            return api_histogram(cur, None), True
        widened = _zero_widened(prev, cur.zero_threshold)
        if widened is None:
            return None
        prev = widened
    schema = min(prev.schema, cur.schema)
    old, new = prev.at_schema(schema), cur.at_schema(schema)
    went_down = (new.count < old.count or new.zero_count < old.zero_count
                 or any(new.positive.get(i, 0.0) < c for i, c in old.positive.items())
                 or any(new.negative.get(i, 0.0) < c for i, c in old.negative.items()))
    if went_down:
        return None if widened is not None else (api_histogram(new, None), True)
    return api_histogram(new, old), False


def _zero_widened(prev: NativeReading, threshold: float) -> NativeReading | None:
    """`prev` as it reads with the wider zero bucket `[-threshold, threshold]`: its buckets wholly inside it moved
    into its zero count (as the client moved them); None when the bucket is not wider, or splits a bucket holding
    events (how many of them are now in it is not known)."""
    if threshold < prev.zero_threshold:
        return None
    zero = prev.zero_count
    sides: list[dict[int, float]] = []
    for side in (prev.positive, prev.negative):
        kept = {}
        for i, c in side.items():
            if _bound(i, prev.schema) <= threshold:
                zero += c
            elif _bound(i - 1, prev.schema) < threshold:
                return None
            else:
                kept[i] = c
        sides.append(kept)
    return replace(prev, zero_threshold=threshold, zero_count=zero, positive=sides[0], negative=sides[1])


def _bound(index: int, schema: int) -> float:
    """The upper bound of bucket `index` in `schema`: 2**(index * 2**-schema), inf past the float range."""
    exponent = index * 2.0**-schema
    return math.inf if exponent > 1023 else 0.0 if exponent < -1074 else 2.0**exponent


def api_histogram(cur: NativeReading, prev: NativeReading | None) -> dict[str, Any]:
    """`{"count", "sum", "buckets": [[rule, left, right, count], ...]}` as Prometheus' HTTP API writes a native
    histogram: `cur - prev` (or `cur`), in `cur`'s schema (both must share it)."""
    base = prev or NativeReading(cur.schema, cur.zero_threshold, 0.0, {}, {}, 0.0, 0.0)
    buckets: list[list[Any]] = []
    if zero := cur.zero_count - base.zero_count:
        buckets.append([3, -cur.zero_threshold, cur.zero_threshold, zero])
    for side, before, positive in ((cur.positive, base.positive, True), (cur.negative, base.negative, False)):
        for i in sorted(side):
            if c := side[i] - before.get(i, 0.0):
                low, high = _bound(i - 1, cur.schema), _bound(i, cur.schema)
                buckets.append([0, low, high, c] if positive else [1, -high, -low, c])
    total = None if cur.total is None or base.total is None else cur.total - base.total
    return {"count": cur.count - base.count, "sum": total, "buckets": buckets}
