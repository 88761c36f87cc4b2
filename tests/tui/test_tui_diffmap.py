"""The difference map: a cell where one of the two streams has no column is nothing to compare, drawn `·` and kept out
of the largest difference, never a zero difference; a column of no events is data (a rate of 0), an empty gap
column is not; two streams that never overlap say so instead of `max |A−B| 0/s`."""

from __future__ import annotations

import numpy as np

from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.tui.axis import LABEL_W
from latencymap.tui.diffmap import DiffMap
from latencymap.tui.heatmap import RIGHT_W

T0 = 1_700_000_000.0


def history(name: str, cols: range, events: int = 1000, empty: tuple[int, ...] = (),
            gaps: tuple[int, ...] = ()) -> StreamHistory:
    """A bpf µs stream of one-second columns at `cols` (seconds from T0) of `events` in the 64 µs slot; none in the
    columns `empty` (idle: data) and `gaps` (missing data)."""
    hist = StreamHistory(StreamId(f"/cluster/eu-west-1/{name}/nvme0n1/read", "bpf", "microsec"))
    for col in cols:
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[6] = 0 if col in empty or col in gaps else events
        hist.extend([Interval(hist.stream, T0 + col, T0 + col + 1, counts, gap=col in gaps)])
    return hist


def drawn(a: StreamHistory, b: StreamHistory, cells: int) -> tuple[np.ndarray, list[str]]:
    """The difference map of `a` and `b` on `cells` cells (one column a cell): its values, and its lines as text."""
    diffmap = DiffMap(a, b)
    lines = [strip.text for strip in diffmap.render_lines_all(LABEL_W + 1 + cells + RIGHT_W, "mono")]
    assert diffmap.values is not None
    return diffmap.values, lines


def test_cells_where_b_has_no_column_are_nothing_to_compare_not_no_difference() -> None:
    """The hunt's fleet: host011 against host077, which stopped at col 20 (the same 64 µs load until then): every cell
    after col 20 was A − 0 forced to 0, the whole map blank under `max |A−B| 0/s`."""
    values, lines = drawn(history("host011", range(60)), history("host077", range(21)), 60)
    assert np.isnan(values[:, 21:]).all()  # missing, not 0
    assert (values[:, :21] == 0).all()  # the same load where both have data: no difference, said as 0
    cells = [line[LABEL_W + 1: LABEL_W + 1 + 60] for line in lines[1:-1]]
    assert all(row[21:] == "·" * 39 and not row[:21].strip() for row in cells), cells
    assert "max |A−B| 0/s" in lines[1] and "(where both have one)" in lines[2] and "· B has no column" in lines[3], \
        lines[:4]


def test_streams_that_never_overlap_do_not_claim_no_difference() -> None:
    """host077 (cols 0–20) against host088 (from col 40): no cell holds both; the map said `max |A−B| 0/s`."""
    values, lines = drawn(history("host077", range(21)), history("host088", range(40, 61)), 30)
    assert np.isnan(values[:, -21:]).all()
    assert not any("max |A−B|" in line for line in lines), lines
    assert "no cell with both" in lines[1] and "· B has no column" in lines[2], lines[:3]


def test_a_column_of_no_events_is_a_rate_of_zero_and_an_empty_gap_column_is_missing() -> None:
    """B idle at col 5 (a column without events: data) is A − 0 there; B's gap at col 7 (no data) is missing, as is
    a cell after B's last column."""
    values, lines = drawn(history("host011", range(10)), history("host012", range(9), empty=(5,), gaps=(7,)), 10)
    assert np.isnan(values[:, [7, 9]]).all() and not np.isnan(values[:, [0, 1, 2, 3, 4, 5, 6, 8]]).any()
    assert values[:, 5].sum() == 1000.0 and values[:, [0, 1, 2, 3, 4, 6, 8]].sum() == 0.0
    row = next(line for line in lines if "+" in line)[LABEL_W + 1: LABEL_W + 11]
    assert row == "     + · ·", row  # the idle column: A has more; the gap and the end: nothing to compare
