"""The footer's "Overall" covers every column seen, whatever the history dropped (a budget, a column limit)."""

from __future__ import annotations

import numpy as np
import pytest

from latencymap.core.accumulator import Accumulator, HistoryLimit, set_chunk_columns
from latencymap.core.model import Interval, StreamId
from latencymap.views.options import ViewOptions
from latencymap.views.plain import PlainRenderer
from latencymap.views.printer import run_plain

S = StreamId("node0199/sda", "bpf", "microsec")


def rising(n: int, seed: int = 7) -> list[Interval]:
    """A rate that rises over the run, as a day's load does: the newest columns are busier than the average."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        counts = np.zeros(64, dtype=np.int64)
        counts[2:60] = rng.poisson(1 + 40 * i / n, 58)  # wide and noisy: chunks are big
        out.append(Interval(S, 1e9 + 10 * i, 1e9 + 10 * (i + 1), counts, counts * 3e-6 if i % 2 else None))
    return out


def footer(acc: Accumulator, renderer: PlainRenderer | None = None) -> list[str]:
    return (renderer or PlainRenderer(ViewOptions(color=False))).footer_lines(acc.streams[S], 0)


@pytest.fixture
def small_chunks():  # type: ignore[no-untyped-def]
    from latencymap.core import columns

    before = columns.CHUNK_COLUMNS
    set_chunk_columns(32)
    yield
    columns.CHUNK_COLUMNS = before


@pytest.mark.parametrize("cap", [HistoryLimit(columns=50), HistoryLimit(budget=40_000)])
@pytest.mark.usefixtures("small_chunks")
def test_overall_after_columns_are_dropped_is_the_whole_runs(cap: HistoryLimit) -> None:
    items = rising(400)
    whole, bounded = Accumulator(cap=None), Accumulator(cap=cap)
    whole.add(items)
    reused = PlainRenderer(ViewOptions(color=False))
    for at in range(0, 400, 25):  # frame after frame, columns dropped between them
        bounded.add(items[at: at + 25])
        footer(bounded, reused)
    hist = bounded.streams[S]
    assert hist.dropped > 100 and hist.n + hist.dropped == 400
    want = footer(whole)
    assert footer(bounded)[2] == want[2] and footer(bounded)[3] == want[3]  # "Overall: ..." and "Columns: 400"
    assert reused.footer_lines(hist, 0)[2] == want[2]
    assert want[2].startswith("Overall: ")
    kept_rate = hist.totals().events / hist.totals().duration_s
    assert kept_rate > 1.2 * whole.streams[S].totals().events / whole.streams[S].totals().duration_s


def test_the_column_limit_of_the_plain_view_says_so_once(capsys: pytest.CaptureFixture[str]) -> None:
    import io

    out = io.StringIO()
    run_plain(iter(rising(120)), ViewOptions(color=False), once=True, screen_delay=0, history=HistoryLimit(columns=40),
              out=out)
    err = capsys.readouterr().err
    assert err.count("each stream keeps its newest 40 columns (--history 40)") == 1
    whole = Accumulator(cap=None)
    whole.add(rising(120))
    assert footer(whole)[2] in out.getvalue().splitlines()
