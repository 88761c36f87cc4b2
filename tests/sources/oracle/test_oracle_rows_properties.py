"""Property tests of Oracle's row parsing (`sample_of_rows`): any bucket or count, never an exception or a bad count."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties_support import CONTROL, NUMBERS, QUICK, ROUNDTRIP

from latencymap.core.buckets import MAX_COUNT, NSLOTS, ORACLE_OVERFLOW, slot_of_bucket_value
from latencymap.sources.oracle.sql import sample_of_rows

EVENTS = st.sampled_from(["db file sequential read", "log file sync", "x\x1b[2J"])
ANY = st.one_of(NUMBERS, st.none(), st.floats(), st.text(max_size=5), st.decimals(allow_nan=True),
                st.sampled_from([Decimal("1e400"), float("inf"), b"7", True]))
GOOD_ROWS = st.tuples(st.integers(1, 4), EVENTS,
                      st.one_of(st.integers(0, NSLOTS - 1).map(lambda e: 1 << e), st.just(ORACLE_OVERFLOW),
                                st.integers(0, 10**6)),
                      st.integers(0, 2**40))


@QUICK
@given(st.lists(st.one_of(GOOD_ROWS, st.tuples(NUMBERS, EVENTS, ANY, ANY)), max_size=40))
def test_any_bucket_and_count_values_give_counts_or_bad_rows_never_an_exception(rows: list[tuple]) -> None:
    sample = sample_of_rows(rows)
    assert 0 <= sample.bad_buckets <= len(rows)
    assert len(sample.problems) <= sample.bad_buckets and not any(CONTROL.search(p[2]) for p in sample.problems)
    for key in sample.counts:
        present = sample.present(key)
        assert present is None or (present.dtype == bool and not present.all())
    for (event, inst), counts in sample.counts.items():
        assert isinstance(event, str) and isinstance(inst, int)
        assert counts.shape == (NSLOTS,) and counts.dtype == np.int64
        assert ((counts >= 0) & (counts <= MAX_COUNT)).all()


@ROUNDTRIP
@given(st.lists(GOOD_ROWS, max_size=60))
def test_well_formed_rows_add_up_per_event_instance_and_slot(rows: list[tuple[int, str, int, int]]) -> None:
    sample = sample_of_rows(rows)
    expected: dict[tuple[str, int], np.ndarray] = {}
    bad = 0
    for inst, event, bucket, count in rows:
        counts = expected.setdefault((event, inst), np.zeros(NSLOTS, dtype=np.int64))
        if bucket == ORACLE_OVERFLOW:
            continue
        if bucket < 1 or bucket & (bucket - 1):
            bad += 1
            continue
        counts[slot_of_bucket_value(bucket, "oracle")] += count
    assert sample.bad_buckets == bad
    assert {k: v.tolist() for k, v in sample.counts.items()} == {k: v.tolist() for k, v in expected.items()}


def test_huge_negative_and_unreadable_counts_are_bad_rows() -> None:
    event = "db file sequential read"
    rows = [(1, event, 8, 2**62), (1, event, 8, 2**62), (1, event, 8, 10**30), (1, event, 8, -3),
            (1, event, 8, float("nan")), (1, event, 8, "x"), (1, event, None, 4), (1, event, 16, 5)]
    sample = sample_of_rows(rows)
    counts = sample.counts[(event, 1)]
    assert counts[slot_of_bucket_value(8, "oracle")] == 2**62 and counts[slot_of_bucket_value(16, "oracle")] == 5
    assert sample.bad_buckets == 6


def test_an_instance_id_that_is_no_number_raises() -> None:
    with pytest.raises((TypeError, ValueError)):
        sample_of_rows([(None, "log file sync", 8, 1)])
