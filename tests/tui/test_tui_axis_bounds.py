"""The time axis keeps its labels under the map's cells (hunt #17: `╵12:43:15` ran into the value column)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from tui_support import fixture_items, synthetic

from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.tui.axis import LABEL_W, TICK, axis_strip, tick_cells, times_strip
from latencymap.tui.window import Window

TRACE = Path(__file__).resolve().parents[2] / "fixtures" / "pylatencymap" / "test_10046_tracefile.trc"


def test_axis_labels_stay_within_the_map_cells() -> None:
    acc = Accumulator()
    acc.add(fixture_items(TRACE))
    hist = next(iter(acc.streams.values()))
    offset = LABEL_W + 1
    for cells in (45, 64, 100, 119, 120, 121, 150):
        for stop in range(max(1, hist.n - 40), hist.n + 1):
            for zoom in (1, 2):
                win = Window(stop, cells, zoom)
                text = axis_strip(hist, win, offset + cells + 30, offset).text
                used = [i for i, ch in enumerate(text) if ch != " "]
                assert used and used[0] >= offset, (cells, stop, zoom)
                assert used[-1] < offset + cells, (cells, stop, zoom, text)  # nothing past the last cell
                labels = text.split()
                assert all(label.count(TICK) == 1 for label in labels), text  # labels never touch
                # only a last label with no room is left out
                assert len(labels) >= len(tick_cells(win.cell_ends(hist), zoom, _offset(hist))[0]) - 1


def _offset(hist: StreamHistory) -> float:
    return float(time.localtime(float(hist.end[-1])).tm_gmtoff)


def test_a_last_label_with_room_before_it_ends_at_its_tick() -> None:
    acc = Accumulator()
    acc.add(synthetic(100, start=1_700_000_000.0))
    hist = next(iter(acc.streams.values()))
    ends = np.full(40, np.nan)
    ends[-3:] = np.asarray(hist.end)[[7, 8, 9]] + np.array([0.0, 3600.0, 3601.0])  # a round time in cell 38
    text = times_strip(hist, ends, 1.0, LABEL_W + 1 + 40 + 10).text
    assert text.rstrip().endswith(TICK) and text.rstrip().index(TICK) == LABEL_W + 1 + 38  # the tick on its cell


FAST_DISK = Path(__file__).resolve().parents[2] / "fixtures" / "bpftrace" / "block_fast_disk.zst"


def test_a_zoomed_map_of_a_few_cells_still_has_a_time_label() -> None:
    """block_fast_disk zoomed out twice (4 columns per cell, its 38 columns in 10 cells): the 60 s step that leaves
    12 cells between labels had no round time under them, and the axis was blank; a smaller step labels it."""
    acc = Accumulator()
    acc.add(fixture_items(FAST_DISK))
    hist = next(iter(acc.streams.values()))
    offset = LABEL_W + 1
    for cells in (10, 12, 40, 60):
        win = Window(hist.n, cells, 4)
        text = axis_strip(hist, win, offset + cells + 30, offset).text
        assert TICK in text, (cells, text)
        used = [i for i, ch in enumerate(text) if ch != " "]
        assert used[0] >= offset and used[-1] < offset + cells, (cells, text)
    for cells in range(2, 9):  # no label fits a strip this short: none, rather than one cut
        win = Window(hist.n, cells, 4)
        text = axis_strip(hist, win, offset + cells + 30, offset).text
        assert TICK not in text or all(offset <= i < offset + cells for i, ch in enumerate(text) if ch != " ")
