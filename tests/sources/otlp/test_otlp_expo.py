"""Exponential buckets on log2 slots: exact folding at scale >= 0 (against the SDK's own bucketing), spreading below."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from otlp_support import only_point, sdk_collect

from latencymap.core.buckets import NSLOTS, bin_values
from latencymap.sources.otlp.expo import downscale, fold_exact, lower_edge, own_buckets, spread_expo, subtract


def sdk_fold(values: list[float], max_size: int = 160) -> tuple[int, np.ndarray]:
    """(scale, slot counts) of the SDK's exponential histogram of `values`, folded."""
    point = only_point(sdk_collect(values, max_size=max_size))
    slots = fold_exact(point.scale, point.positive.offset, np.asarray(point.positive.bucket_counts, dtype=np.int64))
    slots[0] += point.zero_count
    return point.scale, slots


@pytest.mark.parametrize("scale", range(21))
def test_buckets_at_scale_zero_and_finer_lie_inside_one_octave(scale: int) -> None:
    index = np.arange(-70 << scale, 70 << scale, max(1, (140 << scale) // 20000), dtype=np.int64)
    octave = index >> scale
    # base**i = 2**(i / 2**s): the bucket (2**(i/2**s), 2**((i+1)/2**s)] is inside (2**k, 2**(k+1)], k = i >> s
    assert ((octave << scale) <= index).all()
    assert (index + 1 <= (octave + 1) << scale).all()
    for i in index[:: max(1, len(index) // 200)].tolist():
        slots = fold_exact(scale, i, np.array([1], dtype=np.int64))
        assert slots[min(max((i >> scale) + 1, 0), NSLOTS - 1)] == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=1e-3, max_value=1e12, allow_nan=False), min_size=1, max_size=300))
def test_sdk_buckets_fold_exactly_into_the_slots_of_the_values(values: list[float]) -> None:
    values = [v for v in values if math.frexp(v)[0] != 0.5]  # powers of two: see the next test
    if not values:
        return
    scale, slots = sdk_fold(values)
    assert scale >= 0  # the SDK keeps 160 buckets: 50 octaves fit at scale >= 1
    np.testing.assert_array_equal(slots, bin_values(np.array(values))[0])


def test_a_power_of_two_folds_one_slot_below_a_raw_reader() -> None:
    values = [0.0, 0.25, 1.0, 2.0, 3.0, 4.0, 1024.0, 1500.0, 2.0**40]
    scale, slots = sdk_fold(values)
    assert scale >= 0
    # OTel buckets are (lower, upper]: 2**k closes the bucket below it, which is latencymap's [2**(k-1), 2**k)
    np.testing.assert_array_equal(slots, bin_values(np.nextafter(np.array(values), 0))[0])
    raw = bin_values(np.array(values))[0]
    assert not np.array_equal(slots, raw)
    assert slots.sum() == raw.sum() == len(values)
    assert slots[1] == 1 and raw[1] == 1  # 2.0 in [1, 2); 1.0 in [0, 1) with 0 and 0.25
    assert slots[0] == 3 and raw[0] == 2


def test_downscaling_matches_the_sdk_at_the_coarser_scale() -> None:
    rng = np.random.default_rng(7)
    values = rng.lognormal(3.0, 2.0, 2000).tolist()
    fine = only_point(sdk_collect(values, max_size=160))
    coarse = only_point(sdk_collect(values, max_size=20))
    assert fine.scale > coarse.scale
    offset, counts = downscale(fine.positive.offset, np.asarray(fine.positive.bucket_counts, dtype=np.int64),
                               fine.scale - coarse.scale)
    want = np.asarray(coarse.positive.bucket_counts, dtype=np.int64)
    nonzero = np.flatnonzero(counts)
    assert offset + nonzero[0] == coarse.positive.offset + np.flatnonzero(want)[0]
    np.testing.assert_array_equal(np.trim_zeros(counts), np.trim_zeros(want))


def test_subtract_aligns_offsets_and_shows_buckets_that_went_down() -> None:
    offset, diff = subtract(4, np.array([3, 4, 5]), 5, np.array([1, 5]))  # type: ignore[misc]
    assert offset == 4 and diff.tolist() == [3, 3, 0]
    offset, diff = subtract(5, np.array([3, 4, 5]), 3, np.array([0, 0, 1, 1]))  # type: ignore[misc]
    assert offset == 5 and diff.tolist() == [2, 3, 5]  # the base's zeros outside the point's buckets are no counts
    offset, diff = subtract(2, np.array([1]), 0, np.array([], dtype=np.int64))  # type: ignore[misc]
    assert offset == 2 and diff.tolist() == [1]


def test_subtract_of_a_base_with_counts_outside_the_buckets_is_none_without_building_their_union() -> None:
    """Buckets of the base (the previous cumulative point) that the point lacks went down to 0. Built over the union
    of both index ranges, a base at offset -2**31 and a point near 2**31 asked for 32 GiB: the receiver died of two
    requests."""
    assert subtract(5, np.array([3, 4, 5]), 4, np.array([1, 1, 1])) is None
    assert subtract(2**31 - 5, np.array([1, 2, 3]), -(2**31), np.array([1, 2])) is None
    assert subtract(0, np.array([], dtype=np.int64), 0, np.array([1])) is None


def test_coarse_scales_spread_evenly_over_the_octaves_of_a_bucket() -> None:
    values = [1.5, 3.0, 1e3, 7e5, 2e8, 3e8]
    point = only_point(sdk_collect(values, max_size=2))
    scale, offset = point.scale, point.positive.offset
    counts = np.asarray(point.positive.bucket_counts, dtype=np.int64)
    assert scale < 0
    slots, bounds, own = spread_expo(scale, offset, counts, point.zero_count, 0.0, 1.0)
    assert slots.sum() == len(values)
    width = 1 << -scale
    want = np.zeros(NSLOTS)
    for n, count in enumerate(counts.tolist()):
        for octave in range((offset + n) * width, (offset + n + 1) * width):
            want[min(max(octave + 1, 0), NSLOTS - 1)] += count / width
    assert np.abs(slots - want).max() < 1  # largest remainder: each slot within one event of its share
    # the point's own buckets: zero bucket, the gap below the first bucket, then base**(i+1) upper bounds
    assert bounds[2:] == tuple(2.0 ** ((offset + n + 1) * width) for n in range(len(counts)))
    assert own.tolist() == [point.zero_count, 0, *counts.tolist()]


def test_a_coarse_buckets_events_stay_in_its_own_octaves() -> None:
    """Scale -2: bucket 0 is octaves 0-3 (slots 1-4), bucket 1 octaves 4-7 (slots 5-8). Bucket 0's one event, a
    quarter in each of its slots, is not handed to bucket 1's halves."""
    slots, _, _ = spread_expo(-2, 0, np.array([1, 2], dtype=np.int64), 0, 0.0, 1.0)
    assert slots[1:5].sum() == 1 and slots[5:9].sum() == 2 and slots.sum() == 3


def test_a_unit_conversion_spreads_every_scale_and_keeps_totals() -> None:
    values = [0.0042, 0.013, 0.5, 2.5]  # seconds, read as microseconds
    point = only_point(sdk_collect(values))
    counts = np.asarray(point.positive.bucket_counts, dtype=np.int64)
    slots, bounds, own = spread_expo(point.scale, point.positive.offset, counts, 0, 0.0, 1e6)
    assert slots.sum() == own.sum() == len(values)
    assert bounds[-1] == pytest.approx(lower_edge(point.scale, point.positive.offset + len(counts)) * 1e6)
    assert list(bounds) == sorted(set(bounds))
    for value in values:  # every event lands in the slot of its value, or the next one (bucket straddles a slot)
        slot = int(bin_values(np.array([value * 1e6]))[0].argmax())
        assert slots[slot] + slots[slot - 1] > 0


def test_buckets_beyond_the_float_range_merge_and_keep_totals() -> None:
    # scale -10: base = 2**1024, past the largest float: bucket 0 is (1, inf), buckets 1 and 2 lie beyond it
    slots, bounds, own = spread_expo(-10, 0, np.array([1, 2, 3], dtype=np.int64), 4, 0.0, 1.0)
    assert slots.sum() == own.sum() == 10
    assert list(bounds) == sorted(set(bounds)) and bounds[-1] == math.inf
    assert slots[0] == 4 and slots[NSLOTS - 1] >= 5  # the zero bucket; almost every octave of (1, inf) is above 2**62


def test_buckets_below_one_unit_fold_into_slot_zero_and_are_kept_as_they_are() -> None:
    """hn1's `tiny.duration`: values of 0.3 µs in a µs metric (and so, read as µs, in an ms one) fold into slot 0,
    ten octaves in one row; the point's own buckets keep them 2**-scale apart for the percentiles."""
    values = [0.21, 0.3, 0.3, 0.45, 0.9, 1.7]
    point = only_point(sdk_collect(values))
    counts = np.asarray(point.positive.bucket_counts, dtype=np.int64)
    slots = fold_exact(point.scale, point.positive.offset, counts)
    assert slots[0] == 5 and slots[1] == 1
    bounds, own = own_buckets(point.scale, point.positive.offset, counts, point.zero_count, 0.0, 1.0)
    held = [b for b, n in zip(bounds, own.tolist(), strict=True) for _ in range(n)]
    assert len(held) == len(values)
    for value, upper in zip(sorted(values), held, strict=True):  # each value in a bucket of its own, a few % wide
        assert value <= upper < value * 2 ** (2.0**-point.scale)
    _, spread_bounds, spread_own = spread_expo(point.scale, point.positive.offset, counts, 0, 0.0, 1.0)
    assert spread_bounds == bounds and spread_own.tolist() == own.tolist()  # one description of a point's buckets


def test_a_value_no_float_holds_in_microseconds_is_the_top_bucket_without_a_warning() -> None:
    """h3's finding 7a: 1e300 ms in an exponential histogram leaked numpy's "overflow encountered in multiply" on
    stderr (its bucket's edges, in µs, reach past a float's range). It is in its own bucket, the sum is kept,
    and the report writes its huge durations in a few digits, not 290 of them."""
    import warnings

    from otlp_support import protobuf_request

    from latencymap.core.accumulator import accumulate
    from latencymap.outputs.report import build_report, report_text
    from latencymap.sources.otlp.decode import decode_protobuf
    from latencymap.sources.otlp.points import PointStreams

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        items = list(PointStreams().feed(decode_protobuf(protobuf_request(sdk_collect([1.0, 2.0, 3.0, 1e300]))), "p"))
        (column,) = [i for i in items if hasattr(i, "counts")]
        own = column.source_buckets
        assert own is not None and int(own.counts.sum()) == 4
        assert own.bounds[int(np.flatnonzero(own.counts)[-1])] >= 1e303  # µs
        assert int(column.counts.sum()) == 4 and own.total_time == pytest.approx(1e297)
        acc = accumulate(items)
        (stream,) = build_report(acc)["streams"]
        text = report_text(acc)
    assert stream["total"]["mean_s"] == pytest.approx(2.5e296)
    assert "mean 2.89e+291 days" in text and max(map(len, text.split())) < 40, text
