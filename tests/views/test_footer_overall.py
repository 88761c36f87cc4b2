"""The footer's "Overall" covers every column seen, whatever the history dropped (a budget, a column limit)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from chunks_support import chunk_columns

from latencymap.core.accumulator import Accumulator, HistoryLimit
from latencymap.core.buckets import bin_extremes, bin_values
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
    with chunk_columns(32):
        yield


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


SPARK = StreamId("spark hunt-c task duration", "spark", "millisec")
#: Task durations (ms) of a real PySpark job's log (per column): a stage of fast tasks, then the warm-up's slow ones.
TASKS_MS = [[697, 520, 775], [25400, 25500, 24000], [536, 593, 1090, 480], [508, 513]]


def spark_columns() -> list[Interval]:
    """Columns as the Spark source makes them: exact sums and the smallest and largest value per slot."""
    out = []
    for i, ms in enumerate(TASKS_MS):
        counts, sums = bin_values(np.array(ms, dtype=np.float64))
        out.append(Interval(SPARK, 1e9 + i, 1e9 + i + 1, counts, sums / 1000.0,
                            extremes=bin_extremes(np.array(ms, dtype=np.float64)) / 1000.0))
    return out


def shown(line: str) -> dict[str, str]:
    """`p99 25.5s` pieces of a footer line, by name."""
    words = line.split()
    return {w: words[i + 1] for i, w in enumerate(words) if w.startswith("p") and w[1:].isdigit()}


@pytest.mark.parametrize("delay", [0.0, 1e-9])
def test_percentiles_of_the_frames_are_the_reports_none_past_the_longest_task(
        delay: float, capsys: pytest.CaptureFixture[str]) -> None:
    """`spark LOG --plain` said `p99 30.8s p999 32.6s` where the longest task took 25.5s: frame after frame and in
    bulk, the footer reads the exact sums and the values seen as the report does (its totals, its columns')."""
    from latencymap.core.units import format_duration

    items = spark_columns()
    run_plain(iter(items), ViewOptions(color=False), once=False, screen_delay=delay, history=1000, out=sys.stdout)
    out = capsys.readouterr().out
    overall = [line for line in out.splitlines() if line.startswith("Overall: ")]
    latest = [line for line in out.splitlines() if line.startswith("Latest: ")]
    assert len(overall) == len(TASKS_MS) == len(latest)
    acc = Accumulator(cap=None)
    for k, iv in enumerate(items):
        acc.add([iv])
        hist = acc.streams[SPARK]
        want = {f"p{name}": format_duration(v) for name, v in
                zip(("50", "90", "99", "999"), hist.totals().percentiles.values(), strict=True)}
        assert shown(overall[k]) == want, (k, overall[k])
        longest = max(max(ms) for ms in TASKS_MS[: k + 1]) / 1000.0
        assert max(hist.totals().percentiles.values()) <= longest
        column = {f"p{name}": format_duration(v) for name, v in
                  zip(("50", "90", "99", "999"), hist.column_stats(slice(k, k + 1)).percentiles[0], strict=True)}
        assert shown(latest[k]) == column, (k, latest[k])
    assert shown(overall[-1])["p999"] == "25.5s" == shown(overall[-1])["p99"], overall[-1]
