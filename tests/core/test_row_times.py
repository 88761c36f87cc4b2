from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.buckets import NSLOTS, TOP_SLOT, bounds_seconds, midpoints_seconds
from latencymap.core.history import interval_time
from latencymap.core.model import Interval, SourceBuckets, StreamId
from latencymap.core.rebin import rebin_columns, spread_matrix
from latencymap.core.row_times import fit_to_totals
from latencymap.protocol import ProtocolReader, format_record

MS = StreamId("fl", "bpf", "millisec")
LOW, HIGH = bounds_seconds("bpf", "millisec")
MID = midpoints_seconds("bpf", "millisec")
#: Within float rounding of a bound or of the exact time.
REL = 1e-9
#: The rows' upper bounds, the top one open.
OPEN = np.where(np.arange(NSLOTS) == TOP_SLOT, math.inf, HIGH)


def summed(counts: np.ndarray, total: float, stream: StreamId = MS) -> Interval:
    """A column whose source gave only its exact time (bcc's summary line, a `_sum` whose buckets fold onto rows)."""
    return Interval(stream, 0.0, 1.0, counts, source_buckets=SourceBuckets.sum_only(total))


def most(counts: np.ndarray) -> np.ndarray:
    """Each row's time with every event at its upper bound (inf in the open top row, 0 where none)."""
    return counts * np.where(counts > 0, OPEN, 0.0)


def row_counts(rows: dict[int, int]) -> np.ndarray:
    counts = np.zeros(NSLOTS, dtype=np.int64)
    for slot, n in rows.items():
        counts[slot] = n
    return counts


def test_calls_of_0_1_and_5_ms_give_the_4_8_ms_row_a_mean_inside_it() -> None:
    """funclatency -m (or a `_sum` over power-of-two buckets) of 880 calls of 0.1 ms and 100 of 5 ms: 588 ms, of
    which the 4-8 ms row holds 500 (85%). Its midpoints estimate 1040 ms (0.5 ms a call in [0, 1), 6 ms in [4, 8)):
    scaled by one factor, the 4-8 ms row took 57.7%, a mean of 3.39 ms, outside its row. Each row's events moved the
    same fraction toward their lower bounds: 78%, a mean of 4.59 ms (the zero row's 0.147 ms); the time exact."""
    hist = StreamHistory(MS)
    hist.extend([summed(row_counts({0: 880, 3: 100}), 0.588)])
    spent = hist.time_in()[0]
    assert spent.sum() == pytest.approx(0.588, rel=REL)
    assert spent[3] / 100 == pytest.approx(4.59e-3, rel=1e-3) and 4e-3 <= spent[3] / 100 < 8e-3
    assert spent[3] / spent.sum() == pytest.approx(0.780, abs=1e-3)
    assert spent[0] / 880 == pytest.approx(0.147e-3, rel=1e-2)
    assert hist.unheld == 0


def test_a_recorded_rebinned_columns_rows_stay_in_the_buckets_their_events_came_from() -> None:
    """A PyLatencyMap recording (`sourcebuckets`, `sourcecounts`, `sourcetime` lines) of Prometheus' default buckets:
    1000 requests of 4 ms and 10 of 9 ms, a `_sum` of 4.09 s. The rows 2.05-4.1, 4.1-8.19 and 8.19-16.4 ms hold 552,
    455 and 3: the last only (5, 10] ms's events, the middle 448 of (0, 5] ms and 7 of (5, 10] ms, so up to 10 ms and
    5.05 ms on average. Fitted within their rows, they took 11.1 ms and 5.55 ms; within those cells, 9.42 and 4.75."""
    stream = StreamId("req_seconds", "prometheus", "microsec")
    bounds = (5000.0, 10000.0, 25000.0, math.inf)
    counts = np.array([1000, 10, 0, 0])
    rows = rebin_columns(spread_matrix(bounds), counts[None], bounds, np.array([4.09e6]))[0]
    assert rows[12:15].tolist() == [552, 455, 3]
    text = format_record(stream, 101.0, rows, start=100.0, per_interval=True,
                         source=SourceBuckets(bounds, counts, 4.09))
    assert "sourcebuckets, 5000.0, 10000.0, 25000.0, inf\nsourcecounts, 1000, 10, 0, 0\nsourcetime, 4.09\n" in text
    acc = Accumulator()
    acc.add(list(ProtocolReader("rec").read_chunks([text])))
    hist = acc.streams[stream]
    spent, held = hist.time_in()[0].astype(np.float64)[12:15], rows[12:15]
    assert spent.sum() == pytest.approx(4.09, rel=REL) and hist.unheld == 0
    mean = spent / held
    assert 2.048e-3 <= mean[0] <= 4.096e-3 and 4.096e-3 <= mean[1] <= (448 * 5e-3 + 7 * 8.192e-3) / 455
    assert 8.192e-3 <= mean[2] <= 10e-3
    assert mean[1:].tolist() == pytest.approx([4.75e-3, 9.42e-3], rel=1e-3)
    assert interval_time(next(iter(ProtocolReader("again").read_chunks([text]))))[12:15] == pytest.approx(spent)


@st.composite
def columns(draw: st.DrawFn) -> tuple[np.ndarray, float, float, float]:
    """(counts, exact time, the least and the most the rows can hold) of a column of a few held rows (the zero row
    and the open top one among them); its time reachable or not, near the ends too."""
    slots = draw(st.lists(st.sampled_from([0, 1, 2, 5, 9, 20, 40, 62, TOP_SLOT]), min_size=1, max_size=5,
                          unique=True))
    counts = row_counts({s: draw(st.integers(1, 10**9)) for s in slots})
    least, at_most = float((counts * LOW).sum()), float(most(counts).sum())
    where = draw(st.sampled_from(["inside", "at_least", "at_most", "below", "above"]))
    if where == "inside":
        span = at_most - least if math.isfinite(at_most) else 4.0 * ((counts * MID).sum() - least) + 1.0
        total = least + draw(st.floats(0.0, 1.0)) * span
    elif where == "at_least" or (where == "below" and least == 0) or (where in ("at_most", "above") and
                                                                      math.isinf(at_most)):
        total = least
    elif where == "at_most":
        total = at_most
    elif where == "below":
        total = least * draw(st.floats(0.0, 0.999))
    else:
        total = at_most * draw(st.floats(1.001, 1e6))
    return counts, total, least, at_most


@settings(max_examples=300, deadline=None)
@given(col=columns())
@example(col=(np.eye(1, NSLOTS, 0, dtype=np.int64)[0], 1.1528451484873579e-84, 0.0, 0.001))  # found by Hypothesis
def test_each_rows_mean_stays_inside_it_and_the_exact_time_is_kept_where_the_rows_can_hold_it(
        col: tuple[np.ndarray, float, float, float]) -> None:
    """Each row's time is within [events x low, events x high] (its events lie in the row), whatever the exact time;
    where the rows can hold it (between every event at its lower bound and every one at its upper) they add up to it,
    and otherwise every row is at the bound nearer it, the column counted as unheld."""
    counts, total, least, at_most = col
    hist = StreamHistory(MS)
    hist.extend([summed(counts, total)])
    spent = hist.time_in()[0].astype(np.float64)
    assert (spent >= counts * LOW * (1 - REL)).all() and (spent <= most(counts) * (1 + REL)).all()
    assert (spent[counts == 0] == 0).all()
    if least <= total <= at_most:
        assert spent.sum() == pytest.approx(total, rel=REL) and hist.unheld == 0
    else:
        bound = counts * LOW if total < least else most(counts)
        assert spent == pytest.approx(bound, rel=REL) and hist.unheld == 1


def test_rows_that_cannot_hold_the_exact_time_stay_at_their_bound_and_the_accumulator_says_so_once() -> None:
    """A `_sum` below every event at its row's lower bound (a Prometheus bucket spread over two rows, its events at
    its low end): the rows stay at their lower bounds, the stream's own totals keep the sum; said once."""
    acc = Accumulator()
    counts = row_counts({5: 390, 6: 610})  # 16-32 and 32-64 ms: at least 26.4 s
    acc.add([summed(counts, 25.1), Interval(MS, 1.0, 2.0, counts, source_buckets=SourceBuckets.sum_only(25.2))])
    hist = acc.streams[MS]
    assert hist.time_in().astype(np.float64) == pytest.approx(np.vstack([counts * LOW] * 2), rel=REL)
    assert hist.unheld == 2
    said = [m for m in acc.messages if "exact time" in m]
    assert said == ["history: 'fl' (and any other stream so, said once): a column's exact time (its source's sum) "
                    "lies outside what its rows can take, from every event at its row's lower bound to every one at "
                    "its upper bound (its rows place its events as its buckets allow, its sum says otherwise): its "
                    "rows' times are at the nearer of those bounds and miss the sum, which the stream's own totals "
                    "keep"]
    acc.add([Interval(MS, 2.0, 3.0, counts, source_buckets=SourceBuckets.sum_only(25.0))])
    assert acc.streams[MS].unheld == 3 and len([m for m in acc.messages if "exact time" in m]) == 1
    # a fleet of such streams says it once, not once each (50 OTLP series flooded the report's 100 messages)
    other = StreamId("fl2", MS.datasource, MS.unit)
    acc.add([Interval(other, 1.0, 2.0, counts, source_buckets=SourceBuckets.sum_only(25.0))])
    assert acc.streams[other].unheld == 1 and len([m for m in acc.messages if "exact time" in m]) == 1


def test_a_column_of_no_events_with_a_sum_is_no_column_its_rows_cannot_hold() -> None:
    """Rounding can carry a column's events on to the next (Prometheus' fractional `increase()`) and leave its sum: no
    row to place it on, nothing misplaced, nothing said."""
    acc = Accumulator()
    acc.add([summed(row_counts({}), 0.002)])
    assert acc.streams[MS].unheld == 0 and not [m for m in acc.messages if "exact time" in m]
    assert (acc.streams[MS].time_in()[0] == 0).all()


def test_the_open_top_row_takes_what_passes_every_other_rows_upper_bound() -> None:
    """The top row counts longer values too (no upper bound): a time past the midpoints' estimate is its own there,
    the other rows at their midpoints."""
    counts = row_counts({4: 10, TOP_SLOT: 1})
    time = (counts * MID)[None].copy()
    estimate = float(time.sum())
    assert fit_to_totals(time, counts[None], LOW, HIGH, [(0, 3 * estimate)]).tolist() == [True]
    assert time[0, 4] == pytest.approx(10 * MID[4]) and time[0].sum() == pytest.approx(3 * estimate, rel=REL)


def test_a_time_equal_to_the_estimate_leaves_the_midpoints_and_no_column_fits_nothing() -> None:
    counts = row_counts({0: 3, 7: 5})
    time = np.vstack([counts * MID, counts * MID])
    assert fit_to_totals(time, np.vstack([counts, counts]), LOW, HIGH, [(1, float((counts * MID).sum()))]).tolist() \
        == [True]
    assert time == pytest.approx(np.vstack([counts * MID] * 2), rel=REL)
    assert fit_to_totals(time, np.vstack([counts, counts]), LOW, HIGH, []).tolist() == []
