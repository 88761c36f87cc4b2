"""The header of a stream whose columns a `--history` budget dropped once it ended."""

from __future__ import annotations

import numpy as np
from tui_support import run_ended, synthetic

from latencymap.core.accumulator import MIN_STREAM_BYTES, Accumulator, HistoryLimit
from latencymap.core.model import Interval, StreamId
from latencymap.core.units import format_duration, format_number
from latencymap.outputs.report import percentile_text, stream_total
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.status import status_lines


def pods(n: int = 12, life: int = 400, alive: int = 2) -> list[Interval]:
    """`n` pods of `life` wide one-second columns (over 16 KiB each), `alive` at a time."""
    rng = np.random.default_rng(7)
    ids = [StreamId(f"pod{k}", "bpf", "microsec") for k in range(n)]
    out = []
    for t, k in sorted((k * (life // alive) + c, k) for k in range(n) for c in range(life)):
        counts = np.zeros(64, dtype=np.int64)
        counts[4:40] = rng.integers(0, 1 << 20, 36)
        out.append(Interval(ids[k], 1.7e9 + t, 1.7e9 + t + 1, counts))
    return out


def test_a_stream_whose_columns_were_all_dropped_says_so_with_its_whole_run_figures() -> None:
    """An ended pod whose every column went to the budget said `waiting for the second record (the first is the
    baseline)`: it says its columns were dropped, and its figures over every column it had."""
    items = pods()
    app = LatencyMapApp(iter(items), history=HistoryLimit(budget=8 * MIN_STREAM_BYTES), color_mode="truecolor")
    seen: dict[str, str] = {}

    async def scenario(pilot) -> None:
        first = app.acc.streams[StreamId("pod0", "bpf", "microsec")]
        assert first.n == 0 and first.dropped == 400  # it ended: its columns went to the budget
        app.open_stream(0)  # from the overview, as Enter on its row does
        await pilot.pause(0.3)
        assert app.current() is first
        seen["status"] = str(app.query_one("#status").render())

    run_ended(app, scenario, size=(160, 50))
    status = seen["status"]
    assert "waiting" not in status and "columns 400, all dropped (it ended: --history budget)" in status, status
    hist = app.acc.streams[StreamId("pod0", "bpf", "microsec")]
    total = stream_total(hist.totals(slice(0, 0), fast=True, all_seen=True), None, "microsec", 0)
    events = sum(int(i.counts.sum()) for i in items if i.stream.label == "pod0")
    assert total["events"] == events
    overall = status.split("overall", 1)[1]
    assert f"mean {format_duration(total['mean_s'], long_units=True)}" in overall
    assert f"p50 {percentile_text(total, 0.5)}" in overall and f"p99 {percentile_text(total, 0.99)}" in overall
    assert overall.startswith(f" {format_number(events / 400)} ev/s")  # 400 one-second columns


def test_a_paused_header_counts_the_columns_of_the_pause() -> None:
    """Paused (`stop` short of the history: the columns each stream had at the pause), the header counts those, not
    the columns read since (`columns 10` grew to 14 while paused); a stream with none then says why it shows none."""
    acc = Accumulator(cap=HistoryLimit(columns=8))
    acc.add(synthetic(14))
    hist, = acc.streams.values()
    kw = dict(state="paused", skipped=0, stream_index=0, streams=1, ingest_rate=0.0)
    first = " ".join(f.text for f in status_lines(hist, 5, **kw)[0])  # 11 seen at the pause: 6 dropped since
    assert "columns 11 (5 kept)" in first, first
    first = " ".join(f.text for f in status_lines(hist, 0, **kw)[0])
    assert "came after the pause" in first and "waiting" not in first, first
