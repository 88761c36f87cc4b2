"""Rows that fit the data: where the events and the time are, negligible edges folded, hysteresis, pins."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from latencymap.cli.common import REGISTRY
from latencymap.core.accumulator import Accumulator
from latencymap.core.buckets import NSLOTS, midpoints_seconds
from latencymap.core.model import Interval, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.views.frame import (
    MIN_ROWS,
    NEGLIGIBLE,
    REFIT_SLACK,
    MapFits,
    RowFit,
    build_frame,
    fit_rows,
    pinned_range,
    row_labels,
    row_range,
)
from latencymap.views.options import ViewOptions
from latencymap.views.plain import PlainRenderer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MID = midpoints_seconds("bpf", "microsec")


def slots(pairs: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    counts = np.zeros(NSLOTS, dtype=np.int64)
    for s, c in pairs.items():
        counts[s] = c
    return counts, counts * MID


def history(*columns: dict[int, int], unit: str = "microsec"):
    stream = StreamId("disk", "bpf", unit)
    acc = Accumulator()
    acc.add([Interval(stream, 1e9 + k, 1e9 + k + 1, slots(col)[0]) for k, col in enumerate(columns)])
    return acc.streams[stream]


def test_a_fast_disk_gets_its_own_rows() -> None:
    # 16-33 µs I/Os (slots 5, 6) and a few slow ones that hold time: rows 16µs..2ms, none folded
    counts, spent = slots({5: 9000, 6: 4000, 8: 20, 12: 3})
    lo, hi = fit_rows(counts, spent)
    assert lo == 5 and hi == 12  # from the fastest bucket used to the slowest bucket holding time
    hist = history({5: 9000, 6: 4000, 8: 20, 12: 3})
    rows = row_range(hist)
    assert (rows.lo, rows.hi, rows.folds) == (5, 12, (False, False))
    labels = row_labels(hist, rows.lo, rows.hi, rows.folds)
    assert labels[0:2] == ["16µs", "32µs"] and labels[-1] == "2.05ms" and not any(
        lbl.startswith(("<", "≥")) for lbl in labels)


def test_negligible_edges_fold_into_a_row_that_says_so() -> None:
    # one event in [0, 1) µs among a million fast ones, and nothing else far away
    column = {0: 1, 7: 600_000, 8: 400_000, 9: 5_000}
    counts, spent = slots(column)
    assert counts[0] / counts.sum() < NEGLIGIBLE
    lo, hi = fit_rows(counts, spent)
    assert lo == 6 and hi >= 9  # slot 6 is the folded row holding slots 0..6
    hist = history(column)
    rows = row_range(hist)
    assert rows.folds == (True, False)
    labels = row_labels(hist, rows.lo, rows.hi, rows.folds)
    assert labels[0] == "<64µs" and labels[1] == "64µs"
    frame = build_frame(hist, "frequency", 10, rows.lo, rows.hi, folds=rows.folds)
    assert frame.values[:, -1].sum() == pytest.approx(counts.sum())  # nothing lost: the edge row holds it
    assert frame.values[0, -1] == 1


def test_time_keeps_a_rare_slow_bucket_in_view() -> None:
    # 0.01% of the events, but most of the time: never trimmed
    counts, spent = slots({4: 100_000, 20: 10})
    assert counts[20] / counts.sum() < NEGLIGIBLE and spent[20] / spent.sum() > 0.5
    assert fit_rows(counts, spent)[1] == 20


def test_max_rows_keeps_the_densest_slots_and_min_rows_pads() -> None:
    counts = np.zeros(NSLOTS)
    counts[2:40] = 1
    counts[20:26] = 1000
    lo, hi = fit_rows(counts, counts * MID, max_rows=10)
    assert hi - lo + 1 == 10 and lo < 20 and hi >= 25
    one = np.zeros(NSLOTS)
    one[30] = 5
    lo, hi = fit_rows(one, one * MID)
    assert hi - lo + 1 == MIN_ROWS and lo == 29
    assert fit_rows(np.zeros(NSLOTS), np.zeros(NSLOTS)) is None


def test_refit_has_hysteresis() -> None:
    fit = RowFit()
    base = slots({10: 100, 11: 50})
    first = fit.update(*base)
    # a small move inside the rows, or a narrower spread by less than the slack: kept
    assert fit.update(*slots({11: 100, 12: 50})) == first
    assert fit.update(*slots({10: 100})) == first
    assert fit.update(*slots({14: 100, 15: 50})) == first  # still inside the rows (the empty ones above)
    # data out of view: re-fitted at once, to a range that shows it
    wide = fit.update(*slots({10: 100, 11: 50, 25: 10}))
    assert wide[1] >= 25 and wide[0] <= 10
    # alternating between the two states does not flicker while both are in view
    for _ in range(3):
        assert fit.update(*slots({10: 100, 11: 50, 25: 10})) == wide
        assert fit.update(*slots({10: 100, 11: 50, 24: 10})) == wide
    # far too wide for the data now (more than the slack): narrowed
    narrow = fit.update(*base)
    assert narrow == first and (wide[1] - wide[0]) - (narrow[1] - narrow[0]) > REFIT_SLACK
    lower = fit.update(*slots({8: 100}))
    assert lower[0] <= 8 < first[0]  # below the rows: re-fitted
    assert fit.update(np.zeros(NSLOTS), np.zeros(NSLOTS)) == lower  # no events: rows kept


def test_pins_work_as_before() -> None:
    hist = history({5: 10})
    assert pinned_range(hist) == (8, 19)  # PyLatencyMap: 128 µs and 12 rows
    rows = row_range(hist, 4, 12)
    assert (rows.lo, rows.hi, rows.folds) == (5, 13, None)
    assert row_labels(hist, rows.lo, rows.hi, rows.folds)[0].startswith("<")
    assert row_range(hist, 4).hi - row_range(hist, 4).lo + 1 == 12


def test_max_bucket_alone_below_autotunes_lowest_row_keeps_its_top_row() -> None:
    """--max_bucket=5 on µs data (events at 8-64 µs): PyLatencyMap's automatic lowest row is 7 (128 µs), above the
    pinned top row (PyLatencyMap 1.3 stops with an error). The top row stays at 2**5 = 32 µs and the rows go down
    from it, so each row holds what its label says, instead of one row `≥128µs` holding every event."""
    hist = history({4: 30, 5: 20, 6: 10})  # bpf slots 4..6: [8, 16), [16, 32), [32, 64) µs
    rows = row_range(hist, max_bucket=5)
    assert (rows.lo, rows.hi, rows.folds) == (1, 6, None)  # values 2**0..2**5: 1 µs .. 32 µs
    assert row_labels(hist, rows.lo, rows.hi, rows.folds) == ["<2µs", "2µs", "4µs", "8µs", "16µs", "≥32µs"]
    # far below (ns data, automatic lowest row 2**17): autotune's 12 rows down from the top, 2**1..2**12
    assert pinned_range(history({4: 1}, unit="nanosec"), max_bucket=12) == (2, 13)
    assert pinned_range(hist, max_bucket=8) == (8, 9)  # above autotune's lowest row: PyLatencyMap's rule, as before
    text = PlainRenderer(ViewOptions(color=False, max_bucket=5)).render_stream(hist)
    assert "≥128µs" not in text and "≥32µs" in text and "16µs" in text


def test_one_row_holding_every_bucket_is_labelled_all() -> None:
    hist = history({4: 30, 5: 20, 6: 10})
    rows = row_range(hist, 5, 5)
    assert rows.lo == rows.hi == 6 and row_labels(hist, rows.lo, rows.hi, rows.folds) == ["all"]
    assert row_labels(hist, 6, 6, (False, True)) == ["≥32µs"] and row_labels(hist, 6, 6, (True, False)) == ["<64µs"]


def test_plain_frames_of_a_real_fast_disk_show_its_buckets() -> None:
    """bpftrace block-I/O histogram of a virtio disk (p50 12 µs): rows from its own buckets, no options."""
    acc = Accumulator()
    acc.add(list(input_flow([str(FIXTURES / "bpftrace" / "block_usecs_interval.txt")], REGISTRY)))
    hist = next(h for h in acc.streams.values() if h.stream.label == "@usecs")
    text = PlainRenderer(ViewOptions(color=False)).render_stream(hist)
    freq = text.split("Intensity heat map")[0].splitlines()
    labels = [line.split()[0] for line in freq[2:] if line.strip() and "x=time" not in line]
    assert "8µs" in labels and "16µs" in labels and "32µs" in labels
    assert not any(lbl.startswith("<") for lbl in labels)  # nothing folded into a `<256µs` bottom row


def test_max_rows_weighed_by_events_or_by_time_keep_each_population() -> None:
    counts = np.zeros(NSLOTS)
    counts[10:14] = [100, 5000, 20000, 300]  # the many fast events
    counts[30:36] = [20, 40, 80, 160, 300, 400]  # few slow ones that own the time
    spent = counts * MID
    assert spent[30:].sum() / spent.sum() > 0.99 and counts[:20].sum() / counts.sum() > 0.9
    both = fit_rows(counts, spent, max_rows=10)
    events = fit_rows(counts, spent, max_rows=10, weigh="events")
    time = fit_rows(counts, spent, max_rows=10, weigh="time")
    assert events[0] <= 10 and events[1] >= 13  # every fast slot has its own row
    assert time[0] <= 30 and time[1] >= 35  # and every slow one
    assert both == time  # events plus time: the slow band's time outweighs the fast events
    assert fit_rows(counts, spent, weigh="events") == fit_rows(counts, spent)  # room for all: one fit


def test_data_that_fills_the_rows_exactly_is_shown_whole_and_a_window_uses_a_fold_row_it_does_not_need() -> None:
    counts = np.zeros(NSLOTS)
    counts[10:22] = 100  # 12 slots
    assert fit_rows(counts, counts * MID, max_rows=12) == (10, 21)  # no fold rows: none is needed
    counts[22] = 100  # 13 slots in 12 rows: 11 at the bottom (nothing below to fold), the top one folded
    assert fit_rows(counts, counts * 0, max_rows=12, weigh="events") == (10, 21)


def test_both_maps_share_one_fit_until_the_data_needs_more_rows() -> None:
    fits = MapFits()
    counts = np.zeros(NSLOTS)
    counts[10:16] = [100, 5000, 20000, 300, 10, 10]
    spent = counts * MID
    assert fits.update(counts, spent, 12, "events") == fits.update(counts, spent, 12, "time")
    assert set(fits.fits) == {"both"}
    counts[30:36] = [20, 40, 80, 160, 300, 400]
    spent = counts * MID
    events, time = fits.update(counts, spent, 12, "events"), fits.update(counts, spent, 12, "time")
    assert events[0] <= 10 < 13 <= events[1] < 30 and time[0] > 13 and time[1] >= 35
    counts[30:36] = 0  # the slow band gone (another window): one fit again, the rows it had kept
    assert fits.update(counts, counts * MID, 12, "events") == fits.update(counts, counts * MID, 12, "time")
