"""Whatever arrives (a real request with any field replaced, flipped or cut bytes, hostile lines), the OTLP path
only rejects with a message or yields well-formed intervals: non-negative counts, totals kept, clean text."""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from otlp_support import json_request, protobuf_request, sdk_collect

from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, Notice
from latencymap.sources.otlp.decode import DecodeError, decode_json, decode_protobuf
from latencymap.sources.otlp.file_format import OtlpJsonFormat
from latencymap.sources.otlp.points import PointStreams

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: 150 examples, times the loaded profile's max_examples over Hypothesis' default (`--hypothesis-profile long`).
SETTINGS = settings(max_examples=max(1, round(1.5 * settings.default.max_examples)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _requests() -> tuple[dict[str, Any], dict[str, Any], bytes]:
    delta = sdk_collect([0.0, 1.5, 3.0, 250.0, 7e5], name="db.expo", attributes={"op": "get"})
    explicit = sdk_collect([4.0, 40.0, 400.0], name="http.duration", temporality="cumulative")
    return json_request(delta), json_request(explicit), protobuf_request(delta) + protobuf_request(explicit)


EXPO_DOC, EXPLICIT_DOC, PROTOBUF = _requests()
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
              st.sampled_from(["NaN", "Infinity", "-1", "18446744073709551616", "\x1b[2J", "9" * 30,
                               "AGGREGATION_TEMPORALITY_DELTA"]), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=12)


def slots_of(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) of a JSON document."""
    out: list[tuple[Any, Any]] = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for key, value in items:
        out.append((doc, key))
        out.extend(slots_of(value))
    return out


def check(items: list[Any]) -> None:
    ends: dict[Any, float] = {}
    for item in items:
        assert isinstance(item, (Interval, Notice)), type(item)
        if isinstance(item, Notice):
            assert not CONTROL.search(item.message), item.message
            continue
        assert not CONTROL.search(item.stream.label), item.stream.label
        assert item.counts.dtype == np.int64 and item.counts.shape == (NSLOTS,) and (item.counts >= 0).all()
        assert math.isfinite(item.start) and math.isfinite(item.end) and item.start < item.end
        assert item.end > ends.get(item.stream, -math.inf)
        ends[item.stream] = item.end
        own = item.source_buckets
        if own is not None:
            assert len(own.bounds) == len(own.counts) and list(own.bounds) == sorted(set(own.bounds))
            assert own.total_time is None or (math.isfinite(own.total_time) and own.total_time >= 0)
            if own.bounds:
                assert (own.counts >= 0).all() and int(own.counts.sum()) == int(item.counts.sum())
            else:  # folded exactly: only the sum is kept
                assert own.total_time is not None


@SETTINGS
@given(st.sampled_from([EXPO_DOC, EXPLICIT_DOC]), st.integers(0, 10_000), JSON_VALUES, st.booleans())
def test_any_field_of_a_real_json_request_replaced(doc: dict[str, Any], where: int, value: Any, twice: bool) -> None:
    doc = copy.deepcopy(doc)
    places = slots_of(doc)
    container, key = places[where % len(places)]
    container[key] = value
    streams = PointStreams()
    try:
        decoded = decode_json(json.loads(json.dumps(doc)))
    except DecodeError as err:
        assert not CONTROL.search(str(err))
        return
    items = list(streams.feed(decoded, "peer"))
    if twice:  # the same request again: a resend is skipped (cumulative) or not after the last (delta)
        items += list(streams.feed(decoded, "peer"))
    check(items)


@SETTINGS
@given(st.integers(0, len(PROTOBUF) - 1), st.integers(1, 255), st.integers(0, len(PROTOBUF)))
def test_flipped_or_cut_protobuf(where: int, flip: int, cut: int) -> None:
    body = bytearray(PROTOBUF[:cut] if cut % 3 == 0 else PROTOBUF)
    if body:
        body[where % len(body)] ^= flip
    try:
        decoded = decode_protobuf(bytes(body))
    except DecodeError as err:
        assert not CONTROL.search(str(err))
        return
    check(list(PointStreams().feed(decoded, "peer")))


@SETTINGS
@given(st.lists(st.one_of(st.just(json.dumps(EXPO_DOC)), st.text(max_size=60),
                          st.builds(lambda s, n: s[: n % (len(s) + 1)], st.just(json.dumps(EXPLICIT_DOC)),
                                    st.integers(0, 4000))), max_size=8))
def test_hostile_lines_in_a_file(lines: list[str]) -> None:
    text = "".join(line.replace("\n", " ") + "\n" for line in lines)
    check(list(OtlpJsonFormat().read(text.splitlines(keepends=True), "f.jsonl")))
