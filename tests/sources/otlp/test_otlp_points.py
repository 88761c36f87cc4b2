"""Points to intervals: cumulative diffs and resets, delta columns, units, labels, rebinned explicit buckets."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from otlp_support import json_request, protobuf_request, sdk_collect

from latencymap.core.model import Interval, Notice
from latencymap.sources.otlp.decode import decode_json, decode_protobuf, explicit_point, expo_point
from latencymap.sources.otlp.explicit import spread_explicit
from latencymap.sources.otlp.points import CUMULATIVE, DELTA, Decoded, Point, PointStreams, StreamKey

S = 1_000_000_000
BOUNDS = [0.0, 5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0, 5000.0, 7500.0, 10000.0]


def key(metric: str = "rpc", service: str = "svc", exponential: bool = False, **resource: str) -> StreamKey:
    attrs = tuple(sorted({"service.name": service, **resource}.items()))
    return StreamKey(attrs, "scope", metric, exponential, (("route", "/a"),))


def explicit(time_s: int, buckets: list[int], start_s: int = 100, temporality: int = CUMULATIVE,
             total: float | None = None, unit: str = "ms", k: StreamKey | None = None) -> Point:
    return explicit_point(k or key(), unit, temporality, start_s * S, time_s * S, sum(buckets), total, buckets,
                          BOUNDS[: len(buckets) - 1], 0)


def expo(time_s: int, scale: int, offset: int, buckets: list[int], start_s: int = 100, zero: int = 0,
         temporality: int = CUMULATIVE, negative: list[int] | None = None) -> Point:
    return expo_point(key("lat", exponential=True), "us", temporality, start_s * S, time_s * S,
                      sum(buckets) + zero + sum(negative or []), None, scale, zero, 0.0, offset, buckets,
                      negative or [], 0)


def run(*points: Point, streams: PointStreams | None = None) -> list[Any]:
    return list((streams or PointStreams()).feed(Decoded(points=list(points)), "peer"))


def intervals(items: list[Any]) -> list[Interval]:
    return [i for i in items if isinstance(i, Interval)]


def notes(items: list[Any]) -> list[str]:
    return [i.message for i in items if isinstance(i, Notice)]


def test_cumulative_first_point_counts_since_its_start_then_diffs() -> None:
    items = run(explicit(110, [0, 4, 1]), explicit(120, [0, 6, 1]), explicit(130, [1, 6, 3]))
    cols = intervals(items)
    assert [(c.start, c.end) for c in cols] == [(100, 110), (110, 120), (120, 130)]
    assert [int(c.counts.sum()) for c in cols] == [5, 2, 3]
    assert [c.source_buckets.counts.tolist() for c in cols] == [[0, 4, 1], [0, 2, 0], [1, 0, 2]]
    assert not any(c.reset for c in cols)
    assert cols[0].source_buckets.bounds == (0.0, 5000.0, math.inf)  # ms, read as µs


def test_cumulative_reset_by_start_time_or_by_a_count_that_goes_down() -> None:
    items = run(explicit(110, [0, 4, 1]), explicit(120, [0, 1, 0], start_s=115), explicit(130, [0, 3, 0], start_s=115),
                explicit(140, [0, 2, 0], start_s=115))
    cols = intervals(items)
    assert [c.reset for c in cols] == [False, True, False, True]
    assert [int(c.counts.sum()) for c in cols] == [5, 1, 2, 2]
    assert (cols[1].start, cols[1].end) == (115, 120)  # counting began at the new start time
    assert all((c.counts >= 0).all() for c in cols)


def test_cumulative_without_start_is_a_baseline_and_stale_points_are_skipped() -> None:
    items = run(explicit(110, [0, 4, 1], start_s=0), explicit(120, [0, 6, 1], start_s=0),
                explicit(120, [0, 6, 1], start_s=0), explicit(115, [0, 7, 1], start_s=0))
    cols = intervals(items)
    assert len(cols) == 1 and int(cols[0].counts.sum()) == 2 and (cols[0].start, cols[0].end) == (110, 120)
    said = notes(items)
    assert any("baseline" in m for m in said)
    assert sum("not after the previous one" in m for m in said) == 1  # the identical resend is silent


def test_buckets_that_change_while_the_counts_go_on_are_a_gap_not_a_reset_counted_twice() -> None:
    """Same start time, count 7 then 9, but new bounds (or a wider zero bucket): nothing says how the 2 events since
    spread over the new buckets. Read as a reset, that column counted the point whole, the 7 events of the columns
    before again (14 where 9 were observed). It is a gap, said, and counting goes on from that point."""
    items = run(explicit(110, [0, 4, 1]), explicit(120, [0, 6, 1]), explicit(130, [0, 6, 1, 2]),
                explicit(140, [1, 6, 2, 3]))
    cols = intervals(items)
    assert [(c.start, c.end, int(c.counts.sum()), c.gap, c.reset) for c in cols] == [
        (100, 110, 5, False, False), (110, 120, 2, False, False), (120, 130, 0, True, False),
        (130, 140, 3, False, False)]
    assert [m for m in notes(items) if "buckets changed" in m] == [
        "peer: svc/rpc{route=/a}: the buckets changed (new bounds or zero threshold) while the counts went on: what "
        "happened since the point before cannot be split into the new buckets, so that column is a gap; counting "
        "again from this point"]
    straddled = replace(expo(120, 0, 2, [3, 3], zero=3), zero_threshold=3.0)  # (2, 4] split by the new zero bucket
    cols = intervals(run(expo(110, 0, 1, [1, 2, 3], zero=1), straddled))
    assert [(int(c.counts.sum()), c.gap, c.reset) for c in cols] == [(7, False, False), (0, True, False)]
    assert not cols[1].counts.any()


def test_a_zero_bucket_widened_over_whole_buckets_is_diffed_exactly() -> None:
    """The SDK widened the zero threshold to 4: the earlier point's (2, 4] bucket, wholly below it, is in the later
    point's zero count, so the two are diffed exactly (the earlier point's zero count taking that bucket)."""
    wider = replace(expo(120, 0, 2, [3, 3], zero=3), zero_threshold=4.0)  # (2, 4]'s 1 joined the zero bucket
    items = run(expo(110, 0, 1, [1, 2, 3], zero=1), wider)
    cols = intervals(items)
    assert [(int(c.counts.sum()), c.gap, c.reset) for c in cols] == [(7, False, False), (2, False, False)]
    own = cols[1].source_buckets  # since the point before: 1 in the zero bucket [0, 4], 1 in (4, 8], 0 in (8, 16]
    assert own is not None and own.bounds[:2] == (4.0, 8.0) and own.counts.tolist()[:2] == [1, 1]
    assert not [m for m in notes(items) if "buckets changed" in m]
    with_negative = replace(expo(110, 0, 1, [1, 2, 3], zero=1, negative=[1]))  # negative values: how many moved?
    cols = intervals(run(with_negative, replace(expo(120, 0, 2, [3, 3], zero=4), zero_threshold=4.0)))
    assert [c.gap for c in cols] == [False, True]

def test_cumulative_exponential_diffs_across_a_scale_change() -> None:
    # scale 2 then scale 1 (the SDK downscaled when a wider value came): compare at scale 1
    first = expo(110, 2, 8, [1, 2, 3, 4])  # indices 8..11 at scale 2 -> 4..5 at scale 1
    second = expo(120, 1, 4, [4, 7, 0, 5])  # 4 + 7 = 3 + 7 -> one new in idx4, idx5 +0, idx7 +5
    cols = intervals(run(first, second))
    assert int(cols[1].counts.sum()) == 6 and not cols[1].reset
    # idx 4 at scale 1 covers (2**2, 2**2.5] -> slot 3; idx 7 covers (2**3.5, 2**4] -> slot 4
    assert cols[1].counts[3] == 1 and cols[1].counts[4] == 5
    own = cols[1].source_buckets  # exact rows, and the buckets kept (no sum in these points)
    assert own is not None and own.total_time is None and own.counts.tolist() == [0, 0, 1, 0, 0, 5]
    assert own.bounds == pytest.approx((0.0, 4.0, 2**2.5, 8.0, 2**3.5, 16.0))  # zero bucket, gap, then idx 4..7


def test_exact_exponential_columns_keep_their_buckets_and_the_sum_of_their_points() -> None:
    """Folded exactly, the rows are exact, and the buckets (twice finer than rows at scale 1) are kept for
    percentiles; the points' sum (µs here) is what the column spent, in seconds."""
    def summed(time_s: int, buckets: list[int], total_us: float) -> Point:
        return expo_point(key("lat", exponential=True), "us", CUMULATIVE, 100 * S, time_s * S, sum(buckets),
                          total_us, 1, 0, 0.0, 4, buckets, [], 0)

    cols = intervals(run(summed(110, [1, 2, 3, 4], 120.0), summed(120, [4, 7, 3, 5], 300.0)))
    assert [int(c.counts.sum()) for c in cols] == [10, 9]
    for col, spent_us, held in zip(cols, (120.0, 180.0), ([1, 2, 3, 4], [3, 5, 0, 1]), strict=True):
        own = col.source_buckets
        assert own is not None and own.counts.tolist() == [0, 0, *held]
        assert own.total_time == pytest.approx(spent_us * 1e-6)


def test_delta_points_are_columns_and_missing_starts_follow_the_previous_point() -> None:
    items = run(explicit(110, [0, 4, 1], temporality=DELTA, start_s=100),
                explicit(120, [0, 1, 0], temporality=DELTA, start_s=0),
                explicit(120, [0, 1, 0], temporality=DELTA, start_s=0))
    cols = intervals(items)
    assert [(c.start, c.end, int(c.counts.sum())) for c in cols] == [(100, 110, 5), (110, 120, 1)]
    assert any("without a start time" in m for m in notes(items))


def test_zero_count_goes_to_slot_zero_and_negative_buckets_are_ignored_with_one_notice() -> None:
    streams = PointStreams()
    items = run(expo(110, 0, 3, [2], zero=5, temporality=DELTA, negative=[4]), streams=streams)
    items += run(expo(120, 0, 3, [2], zero=0, temporality=DELTA, negative=[1]), streams=streams)
    cols = intervals(items)
    assert cols[0].counts[0] == 5 and cols[0].counts[4] == 2 and cols[0].counts.sum() == 7
    assert sum("negative values" in m for m in notes(items)) == 1


@pytest.mark.parametrize(("unit", "stream_unit", "factor"), [("ms", "microsec", 1e3), ("us", "microsec", 1.0),
                                                              ("ns", "nanosec", 1.0), ("s", "microsec", 1e6),
                                                              ("", "microsec", 1e3)])
def test_units_pick_the_stream_unit_and_scale_bounds(unit: str, stream_unit: str, factor: float) -> None:
    items = run(explicit(110, [0, 4, 1], total=30.0, unit=unit))
    [col] = intervals(items)
    assert col.stream.unit == stream_unit
    assert col.source_buckets.bounds == (0.0, 5.0 * factor, math.inf)
    per_unit = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0, "": 1e-3}[unit]
    assert col.source_buckets.total_time == pytest.approx(30.0 * per_unit)
    assert (not unit) == any("has no unit" in m for m in notes(items))


def test_a_unit_that_is_not_a_duration_is_skipped_once() -> None:
    streams = PointStreams()
    items = run(explicit(110, [0, 4, 1], unit="By"), explicit(120, [0, 5, 1], unit="By"), streams=streams)
    assert not intervals(items)
    assert sum("not a time unit latencymap reads" in m for m in notes(items)) == 1


def test_units_are_case_sensitive_as_ucum_is() -> None:
    """`Ms` is a megasecond, `mS` a millisiemens, `MS` a megasiemens, `S` a siemens: none is read as ms or s (the
    SDK lowercases instrument names, so three metrics `h.ms` in these units were one `ms` stream)."""
    from latencymap.sources.otlp.points import stream_unit

    assert [stream_unit(u) for u in ("Ms", "mS", "MS", "S", "NS", "US", "uS")] == [None] * 7
    assert [stream_unit(u) for u in ("ms", "s", "us", "ns", "µs", "milliseconds", "Seconds")] == [
        ("microsec", 1e3), ("microsec", 1e6), ("microsec", 1.0), ("nanosec", 1.0), ("microsec", 1.0),
        ("microsec", 1e3), ("microsec", 1e6)]
    items = run(explicit(110, [0, 4, 1], unit="mS"), explicit(110, [0, 4, 1], unit="Ms", k=key("other")))
    assert not intervals(items)
    assert sum("not a time unit latencymap reads" in m for m in notes(items)) == 2


def test_default_bounds_rebin_with_totals_exact() -> None:
    buckets = [2, 7, 3, 11, 0, 5, 1, 9, 0, 0, 4, 0, 0, 1, 0, 1]  # SDK default bounds: first bucket holds zeros only
    [col] = intervals(run(explicit(110, buckets, temporality=DELTA)))
    assert col.counts.sum() == sum(buckets)
    assert col.counts[0] >= 2  # (-inf, 0] -> [0, 1)
    assert col.counts[24] == 1  # (10000, +inf) ms -> the slot of 10,000,000 µs: [8.39 s, 16.8 s)
    assert col.source_buckets.counts.tolist() == buckets


def test_same_label_from_two_processes_is_told_apart() -> None:
    a = explicit(110, [0, 1, 0], k=key(**{"service.instance.id": "aaaaaaaa-1"}))
    b = explicit(110, [0, 2, 0], k=key(**{"service.instance.id": "bbbbbbbb-2"}))
    c = explicit(110, [0, 3, 0], k=key(**{"service.instance.id": "bbbbbbbb-2", "host.name": "h"}))
    labels = [col.stream.label for col in intervals(run(a, b, c))]
    assert labels[0] == "svc/rpc{route=/a}"
    assert labels[1] == "svc/rpc{route=/a} [service.instance.id=bbbbbbbb-2]"
    assert labels[2] == "svc/rpc{route=/a} [host.name=h]"
    assert len(set(labels)) == 3


def test_attribute_sets_alike_for_their_first_160_characters_stay_apart_cut_in_the_middle() -> None:
    """Requests of the SDK's own encoders (protobuf and JSON) for three routes that differ only past 160
    characters: three streams, each with its own events, named by their start and end (a cut in the middle)."""
    long = "/api/v1/" + "tenants/" * 20
    data = [sdk_collect([5.0] * (k + 1), name="rpc.duration", attributes={"http.route": f"{long}{k}/orders"})
            for k in range(3)]
    for decoded in ([decode_protobuf(protobuf_request(d)) for d in data],
                    [decode_json(json.loads(json.dumps(json_request(d)))) for d in data]):
        streams = PointStreams()
        got: dict[str, int] = {}
        for request in decoded:
            for col in intervals(list(streams.feed(request, "peer"))):
                got[col.stream.label] = got.get(col.stream.label, 0) + int(col.counts.sum())
        assert sorted(got.values()) == [1, 2, 3]
        for label, n in got.items():
            assert len(label) == 160 and label.count("…") == 1 and label.startswith("unit/rpc.duration{http.route=/a")
            assert label.endswith(f"tenants/{n - 1}/orders}}")


def test_the_same_label_with_nothing_to_tell_them_apart_is_named_apart() -> None:
    a, b = key(), replace(key(), scope="other scope")  # one resource, two scopes: the label does not say which
    labels = [col.stream.label for col in intervals(run(explicit(110, [0, 1, 0], k=a), explicit(110, [0, 2, 0], k=b)))]
    assert labels == ["svc/rpc{route=/a}", "svc/rpc{route=/a} (2)"]


def test_control_characters_in_names_do_not_reach_labels() -> None:
    [col] = intervals(run(explicit(110, [1], k=key(metric="rpc\x1b[31m", service="s\x07"))))
    assert "\x1b" not in col.stream.label and "\x07" not in col.stream.label


def test_totals_stay_exact_past_float_precision() -> None:
    buckets = [3, 2**61 + 1, 7, 2**60 + 3, 1]  # float64 spreading alone loses events past 2**53
    [col] = intervals(run(explicit(110, buckets, temporality=DELTA)))
    assert int(col.counts.sum()) == sum(buckets) and (col.counts >= 0).all()
    [col] = intervals(run(expo(110, -1, 2, [2**61 + 1, 5, 2**60 + 7], temporality=DELTA)))
    assert int(col.counts.sum()) == 2**61 + 2**60 + 13


def test_idle_series_let_go_of_their_last_point_and_come_back_without_counting_twice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pods come and go: a series silent for IDLE_S (points' clocks) is let go; back with the same start time, its
    first point is a baseline; back with a new start (a restart), it counts since then; delta series just go on."""
    from latencymap.sources.otlp import points

    monkeypatch.setattr(points, "EVICT_EVERY", 1)
    streams = PointStreams()
    gone, restarted, busy = key("a"), key("b"), key("c")
    first = [explicit(110, [1, 2, 3], k=gone), explicit(110, [4, 0, 0], k=restarted),
             explicit(110, [0, 5, 0], k=busy, temporality=DELTA, start_s=109)]
    first += [explicit(120, [1, 2, 3], k=gone), explicit(120, [4, 0, 0], k=restarted)]  # every 10 s
    assert sum(int(c.counts.sum()) for c in intervals(run(*first, streams=streams))) == 6 + 4 + 5
    assert streams.held == 3
    later = 120 + int(points.IDLE_S) + 60
    for t in range(180, later + 1, 60):  # c goes on every minute
        run(explicit(t, [0, 1, 0], k=busy, temporality=DELTA, start_s=t - 1), streams=streams)
    assert streams.held == 1  # a and b let go, c (delta, just seen) kept
    back = run(explicit(later + 10, [3, 4, 5], k=gone), explicit(later + 10, [2, 2, 0], k=restarted, start_s=later),
               streams=streams)
    cols = intervals(back)
    assert [c.stream.label for c in cols] == ["svc/b{route=/a}"] and int(cols[0].counts.sum()) == 4
    assert any("back after 900 s or more" in n.message for n in back if isinstance(n, Notice))
    assert streams.held == 3  # c, and a and b again
    (col,) = intervals(run(explicit(later + 20, [3, 6, 5], k=gone), streams=streams))
    assert int(col.counts.sum()) == 2 and not col.reset  # counted from the comeback, not from 100 s
    assert streams.held == 3


def test_a_series_exporting_less_often_than_the_idle_time_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """An hourly cumulative exporter beside a busy one: four of its own intervals, not 15 minutes, make it idle."""
    from latencymap.sources.otlp import points

    monkeypatch.setattr(points, "EVICT_EVERY", 1)
    streams = PointStreams()
    hourly, busy = key("h"), key("c")
    got = []
    for hour in range(4):
        t = 200 + 3600 * hour
        got += run(explicit(t, [hour, hour, 0], k=hourly, start_s=100), streams=streams)
        for minute in range(0, 3600, 600):
            got += run(explicit(t + minute + 1, [1, 0, 0], k=busy, temporality=DELTA, start_s=t + minute),
                       streams=streams)
    cols = [c for c in intervals(got) if c.stream.label == "svc/h{route=/a}"]
    assert [int(c.counts.sum()) for c in cols] == [0, 2, 2, 2]  # every hour's increase, none a baseline
    assert not any("back after" in n.message for n in got if isinstance(n, Notice))


def test_an_explicit_points_sum_places_its_first_bucket() -> None:
    bounds = (5.0, 10.0, 25.0)  # milliseconds; the first bucket (-inf, 5] is taken as [2.5, 5) ms by the rule
    counts = np.array([10, 0, 0, 0])
    assert spread_explicit(bounds, counts, 1000.0, None)[12:14].sum() == 10  # [2.048, 8.192) ms in µs rows
    placed = spread_explicit(bounds, counts, 1000.0, 3.0)  # ten calls of 0.3 ms in all, in the point's sum
    assert placed.sum() == 10 and placed[:11].sum() == 10  # [0, 1024) µs: uniform from 0 to 0.6 ms, mean 0.3 ms


def test_an_explicit_buckets_events_stay_in_its_own_rows() -> None:
    """One call in (100 ms, 1 s] beside fifteen under 10 ms stays in the rows of (100 ms, 1 s], not below 8 ms."""
    counts = np.array([10, 5, 0, 1, 0])  # (-inf, 1], (1, 10], (10, 100], (100, 1000], (1000, +inf) ms
    for total_sum in (None, 530.0):
        slots = spread_explicit((1.0, 10.0, 100.0, 1000.0), counts, 1000.0, total_sum)  # µs rows
        assert slots[17:21].sum() == 1 and slots[:15].sum() == 15 and slots.sum() == 16  # [65.5 ms, 1.05 s)


def test_points_closer_than_a_float_second_can_tell_keep_their_order_and_exact_duration() -> None:
    """A delta point 1 ns long at an epoch time: as seconds its start and end are one float; it still ends after
    it starts, and its duration stays the exact 1 ns."""
    start_ns = 1_795_438_988_531_832_469
    assert start_ns / 1e9 == (start_ns + 1) / 1e9
    point = explicit_point(key(), "ms", DELTA, start_ns, start_ns + 1, 5, None, [0, 4, 1], BOUNDS[:2], 0)
    (col,) = intervals(run(point))
    assert col.end > col.start and col.end == (start_ns + 1) / 1e9 and col.duration == pytest.approx(1e-9)
    assert int(col.counts.sum()) == 5


def test_a_columns_sum_that_counts_negative_values_is_not_its_time() -> None:
    """craft.py's negative2: 10 values of 1.8 ms (scale 1, bucket (1.41, 2] ms) and 4 of -1.8 ms, sum 10.8 ms. The
    negative buckets are left out, and so is the sum (it is not the 10 kept events' time); a later cumulative
    column without new negative values keeps its exact sum."""
    from latencymap.core.accumulator import accumulate
    from latencymap.outputs.report import build_report, report_text

    def point(time_s: int, positive: int, negative: int, total: float) -> Point:
        return expo_point(key("neg", exponential=True), "ms", CUMULATIVE, 100 * S, time_s * S,
                          positive + negative, total, 1, 0, 0.0, 1, [positive], [negative], 0)

    items = run(point(110, 10, 4, 10.8), point(120, 15, 4, 19.8))  # then 5 more of 1.8 ms: 9 ms more
    first, second = intervals(items)
    assert int(first.counts.sum()) == 10 and first.source_buckets.total_time is None  # no sum: the rows' estimate
    assert second.source_buckets is not None and second.source_buckets.total_time == pytest.approx(0.009)
    assert any("so is the sum of a column that holds them" in m for m in notes(items))
    acc = accumulate(items)
    (stream,) = build_report(acc)["streams"]
    assert 1.41e-3 <= stream["total"]["mean_s"] <= 2e-3  # inside the only bucket with events, not 10.8 / 10 ms
    assert "the source's exact sum" not in report_text(acc)


def _skipped(items: list[Any]) -> int:
    return sum(i.skipped for i in items if isinstance(i, Notice))


def test_every_point_not_after_its_series_previous_one_counts_as_skipped_said_as_a_count() -> None:
    """hn1's defect 5: one instrument under two Views exports two points per export, alike but for their scale. Every
    second point is skipped and counted (20 exports: 20, not 1), said once and then as a count, not line by line; a
    resent identical point is not counted."""
    streams = PointStreams()
    got: list[Any] = []
    for k in range(20):
        t = 110 + k
        one = expo(t, 1, 4, [1, 2, 3, 4], start_s=100 + k, temporality=DELTA)
        other = expo(t, 0, 2, [3, 7], start_s=100 + k, temporality=DELTA)  # the same 10 values, another scale
        got += run(one, other, one, streams=streams)  # `one` once more: an exporter's retry, identical
    got += list(streams.finish())
    assert len(intervals(got)) == 20 and _skipped(got) == 20
    said = [m for m in notes(got) if "svc/lat" in m]
    assert len(said) == 2 and "a second point at 110000000000 ns, the time of the previous one" in said[0]
    assert said[1] == "peer: svc/lat{route=/a}: 19 more points not after the previous one (20 in all); skipped"


def test_a_second_cumulative_point_of_another_start_time_is_counted_not_dropped_silently() -> None:
    """The cumulative side of defect 5: the second View's point has its own start time (a few µs later): it was
    dropped with no word. Now it is a skipped point like any other."""
    streams = PointStreams()
    got: list[Any] = []
    for k in range(5):
        got += run(expo(110 + k, 1, 4, [1 + k, 2, 3, 4]), expo(110 + k, 0, 2, [3 + k, 7], start_s=101),
                   streams=streams)
    got += list(streams.finish())
    assert len(intervals(got)) == 5 and _skipped(got) == 5
    assert len(notes(got)) == 2


def test_the_count_of_skipped_points_is_said_again_at_doubling_spans_of_the_points_clock() -> None:
    """Live (no end to say it at), the count is said a minute after the first, then at doubling spans: a day of
    duplicates every 10 s is 12 lines, not 8640; each line says how many since the last."""
    streams = PointStreams()
    got: list[Any] = []
    for k in range(8640):
        t = 110 + 10 * k
        got += run(expo(t, 1, 4, [1], start_s=t - 10, temporality=DELTA),
                   expo(t, 0, 2, [1], start_s=t - 10, temporality=DELTA), streams=streams)
    lines = notes(got)
    assert _skipped(got) + sum(i.skipped for i in streams.finish()) == 8640
    assert 10 <= len(lines) <= 14 and _skipped(got) > 8640 / 2


def test_a_cumulative_point_whose_buckets_lie_far_from_the_previous_ones_is_a_reset_not_a_crash() -> None:
    """Index ranges 2**32 apart: diffing them over their union asked for 32 GiB (MemoryError, the command died)."""
    cols = intervals(run(expo(110, 0, -(2**31), [1, 2]), expo(120, 0, 2**31 - 5, [1, 2, 3])))
    assert [(int(c.counts.sum()), c.reset) for c in cols] == [(3, False), (6, True)]


def test_delta_points_of_processes_that_share_a_resource_are_each_counted_and_a_resend_once() -> None:
    """h3's finding 4: pre-forked workers with one resource (the same service.instance.id) send delta points of one
    series, each with its own start and end; the network delivers one worker's point after a later one of another.
    Such a point was skipped as "not after the previous one" (4,000 of 8,000 acknowledged events counted). Every
    distinct point is counted; one sent again unchanged (an exporter's retry), even after other points, is not; the
    series' shared writers are said once."""
    streams = PointStreams()
    a = [explicit(110 + 10 * k, [0, 1 + k, 1], start_s=100 + 10 * k, temporality=DELTA) for k in range(4)]
    b = [explicit(111 + 10 * k, [0, 2, 2 + k], start_s=101 + 10 * k, temporality=DELTA) for k in range(4)]
    got: list[Any] = []
    for k in range(4):  # b's point, collected after a's, arrives first; a's first point is resent after b's
        got += run(b[k], a[k], *([a[0]] if k == 1 else []), streams=streams)
    got += list(streams.finish())
    cols = intervals(got)
    assert sum(int(c.counts.sum()) for c in cols) == sum(p.count for p in a + b) == 36
    assert sorted((c.start, c.end) for c in cols) == sorted((p.start_ns / S, p.time_ns / S) for p in a + b)
    assert _skipped(got) == 0
    said = notes(got)
    assert len(said) == 1 and said[0].startswith("peer: svc/rpc{route=/a}: delta points that overlap"), said


def test_a_resend_is_counted_once_however_many_points_came_between_within_a_bounded_memory() -> None:
    """The receiver remembered a series' last 32 delta points: workers sharing a resource, one of them resending its
    point after 32 of the others' (an exporter's retry), counted that point twice. A point is remembered for RESEND_S
    of its series' clock: resent after 460 later points (450 s) it is silent, every distinct point counted once; and
    the series keeps only the points of its last RESEND_S."""
    streams = PointStreams()
    workers = 10
    first = explicit(110, [0, 3, 1], start_s=100, temporality=DELTA)
    got = run(first, streams=streams)
    counted = first.count
    for k in range(50):  # 10 workers, each every 10 s (a point each 0.25 s of the series' clock), for 500 s
        batch = [replace(explicit(110, [0, 1 + w % 3, 1], temporality=DELTA), start_ns=(100 + 10 * k) * S + w * S // 4,
                         time_ns=(110 + 10 * k) * S + w * S // 4 + 1) for w in range(workers)]
        got += run(*batch, streams=streams)
        counted += sum(p.count for p in batch)
        if k == 45:
            got += run(first, streams=streams)  # resent after 460 later points, 450 s later
    assert sum(int(c.counts.sum()) for c in intervals(got)) == counted
    assert _skipped(got) == 0
    (recent,) = streams._recent.values()
    assert len(recent) == 50 * workers + 1  # all within RESEND_S of the newest
    for k in range(50, 145):  # 950 s more
        run(*[replace(explicit(110, [0, 1, 0], temporality=DELTA), start_ns=(100 + 10 * k) * S + w * S // 4,
                      time_ns=(110 + 10 * k) * S + w * S // 4 + 1) for w in range(workers)], streams=streams)
    assert len(recent) <= 91 * workers  # the points of the last 900 s only


def test_a_second_delta_point_of_the_same_end_time_is_still_skipped() -> None:
    """Distinct points of one series with the same end time (one instrument under two Views; the second View's first
    point starts a few µs later) are not two processes: the second is skipped and counted, as before, even after a
    later point; the first sent again is silent."""
    one = explicit(110, [0, 4, 1], start_s=100, temporality=DELTA)
    later = explicit(120, [0, 1, 0], start_s=110, temporality=DELTA)
    streams = PointStreams()
    got = run(one, explicit(110, [0, 3, 2], start_s=101, temporality=DELTA), one, later,
              explicit(110, [0, 2, 2], start_s=100, temporality=DELTA), one, streams=streams)
    got += list(streams.finish())
    assert [int(c.counts.sum()) for c in intervals(got)] == [5, 1] and _skipped(got) == 2


def test_a_quiet_stretch_between_delta_points_is_empty_columns() -> None:
    """hprom's finding 1: an SDK sends no delta point for a collection that recorded nothing, and starts the next one
    at the collection before it; each column started at its own point's start, so 30 s without events between two
    points was no column at all (the rate counted only the columns' time, no silence was found). The stretch is
    empty columns now, as many as the next point's span fits in it: none under half of it (a clock's jitter)."""
    cols = intervals(run(explicit(110, [0, 4, 1], start_s=100, temporality=DELTA, total=20.0),
                         explicit(120, [0, 2, 0], start_s=110, temporality=DELTA, total=8.0),
                         explicit(160, [0, 3, 0], start_s=150, temporality=DELTA, total=9.0),  # 30 s: 3 columns
                         explicit(170, [0, 1, 0], start_s=164, temporality=DELTA, total=3.0),  # 4 s of 6: one
                         explicit(180, [0, 1, 0], start_s=172, temporality=DELTA, total=3.0)))  # 2 s of 8: none
    assert [(c.start, c.end, int(c.counts.sum())) for c in cols] == [
        (100, 110, 5), (110, 120, 2), (120, 130, 0), (130, 140, 0), (140, 150, 0), (150, 160, 3), (160, 164, 0),
        (164, 170, 1), (172, 180, 1)]
    quiet = [c for c in cols if not c.counts.any()]
    assert all(c.source_buckets.counts.tolist() == [0, 0, 0] and c.source_buckets.total_time == 0.0 for c in quiet)
    assert all(c.duration == c.end - c.start and not c.gap and not c.reset for c in quiet)


def test_no_quiet_columns_for_a_shared_series_a_series_let_go_or_an_exponential_one_out_of_buckets() -> None:
    """A stretch is not filled in a series that several processes write (one's quiet time is another's busy one),
    nor past the time a series is kept without a point (it went away and came back); an exponential series' quiet
    columns keep its scale and count nothing."""
    shared = intervals(run(explicit(111, [0, 1, 0], start_s=101, temporality=DELTA),
                           explicit(110, [0, 1, 0], start_s=100, temporality=DELTA),  # the other process's, late
                           explicit(150, [0, 1, 0], start_s=140, temporality=DELTA)))
    assert [(c.start, c.end) for c in shared] == [(101, 111), (100, 110), (140, 150)]
    gone = intervals(run(explicit(110, [0, 1, 0], start_s=100, temporality=DELTA),
                         explicit(2000, [0, 1, 0], start_s=1990, temporality=DELTA)))
    assert [(c.start, c.end) for c in gone] == [(100, 110), (1990, 2000)]
    expo_cols = intervals(run(expo(110, 2, 8, [1, 2], start_s=100, temporality=DELTA),
                              expo(140, 2, 9, [3], start_s=130, temporality=DELTA)))
    assert [(c.start, c.end, int(c.counts.sum())) for c in expo_cols] == [
        (100, 110, 3), (110, 120, 0), (120, 130, 0), (130, 140, 3)]
    assert [int(c.source_buckets.counts.sum()) for c in expo_cols] == [3, 0, 0, 3]


@pytest.mark.parametrize(("unit", "seconds"), [("min", 60.0), ("h", 3600.0), ("d", 86400.0), ("minutes", 60.0),
                                               ("Hours", 3600.0)])
def test_minutes_hours_and_days_are_read_as_microseconds(unit: str, seconds: float) -> None:
    """hprom's finding 3: the SDK's histograms in `min` or `h` were skipped as "not a duration (s, ms, us, ns)"; a
    minute is one. They are read as µs: the time waited is the sum's, the events in the rows of their values."""
    from latencymap.core.buckets import bin_values

    values = [0.5, 2.0, 3.0]
    [col] = intervals(run(*decode_protobuf(protobuf_request(sdk_collect(values, name="job", unit=unit))).points))
    assert col.stream.unit == "microsec" and int(col.counts.sum()) == 3
    assert col.source_buckets.total_time == pytest.approx(sum(values) * seconds, rel=1e-12)
    assert col.source_buckets.bounds[1] == 5.0 * seconds * 1e6  # the SDK's default bounds, in µs
    rows = np.flatnonzero(bin_values(np.array(values) * seconds * 1e6)[0])
    assert set(np.flatnonzero(col.counts)) <= set(range(rows[0], rows[-1] + 1))  # within the min and the max


def test_a_unit_not_read_says_which_are() -> None:
    """UCUM is case-sensitive: `H` is a henry, `MIN` nothing; `{request}` counts. Each is said not to be a time unit
    latencymap reads, naming those it reads."""
    items = run(*(explicit(110, [0, 4, 1], unit=u, k=key(u)) for u in ("H", "MIN", "{request}")))
    assert not intervals(items)
    assert [m.split("has unit ", 1)[1] for m in notes(items)] == [
        f"{u!r}, not a time unit latencymap reads (s, ms, us, ns, min, h, d); skipped" for u in ("H", "MIN",
                                                                                                  "{request}")]
