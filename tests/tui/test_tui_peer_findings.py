"""The findings panel says what the report's peers comparison says of the stream on screen: the slow rank's own line,
marked on its columns, and on its peers which rank is the slow one; nothing where no peer is slow."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from tui_support import fixture_items, panel_items, ranks, run_ended

from latencymap.core.accumulator import Accumulator, accumulate
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.outputs.report import peer_groups
from latencymap.tui import peer_findings
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.findings import FindingItem, FindingsPanel
from latencymap.tui.peer_findings import PeerFindings

RANKS12 = Path(__file__).resolve().parents[2] / "fixtures" / "training" / "ranks12.txt"



def test_the_slow_rank_of_ranks12_shows_the_reports_slow_rank_line_marked_on_its_slow_phase() -> None:
    """rank 7 is slow for the last third of ranks12 (the report: "slow from t+25.37s for 15 intervals"): its panel
    has the report's line, on the columns of that phase; every other rank's names rank7 as its slow peer."""
    items = fixture_items(RANKS12)
    groups = peer_groups(accumulate(iter(items)))
    line = groups[0].finding.line()
    assert groups[0].slow["name"] == "rank7" and "slow from t+" in line
    seen = panel_items(LatencyMapApp(iter(items), color_mode="truecolor"))
    slow = [item for item in seen["train/rank7/step"] if item.text.startswith("slow rank:")]
    assert [item.text for item in slow] == [line]
    assert slow[0].first_col is not None and 23 <= slow[0].first_col <= 27 and slow[0].last_col >= 38
    for label, found in seen.items():
        if label != "train/rank7/step":
            told = [item.text for item in found if "rank7" in item.text]
            assert len(told) == 1 and told[0].startswith("peers train/rank*/step: the slow rank is rank7, "), \
                (label, told)
            assert not any(item.text.startswith("slow rank:") for item in found)


def test_no_slow_peer_adds_nothing() -> None:
    """Ranks that differ by noise only: no peers line in any panel (no trivia)."""
    items = ranks(streams=4, slow=-1)
    assert not any(g.slow for g in peer_groups(accumulate(iter(items))))
    seen = panel_items(LatencyMapApp(iter(items), color_mode="truecolor"))
    assert len(seen) == 4
    assert not any("peers" in item.text or "slow rank" in item.text for found in seen.values() for item in found)


def test_the_comparison_is_over_the_columns_on_screen_and_recomputed_only_when_they_change() -> None:
    """Over columns before the slow phase rank 7 is not slow; over all of them it is; the same window again is not
    computed again."""
    acc = accumulate(iter(fixture_items(RANKS12)))
    hist = next(h for h in acc.streams.values() if h.stream.label == "train/rank7/step")
    found = PeerFindings()
    assert not any(item.text.startswith("slow rank:") for item in found.items(acc, hist, 0, 20, now=0.0))
    whole = found.items(acc, hist, 0, hist.n, now=100.0)
    assert any(item.text.startswith("slow rank:") for item in whole)
    assert found.computed == 2
    assert found.items(acc, hist, 0, hist.n, now=200.0) == whole and found.computed == 2


def test_a_slow_computation_is_not_repeated_at_every_tick() -> None:
    """When the data changes, the next comparison waits at least `EVERY` times what the last one took: the panel
    keeps the last answer meanwhile (a day of 64 ranks takes seconds)."""
    acc = accumulate(iter(fixture_items(RANKS12)))
    hist = next(h for h in acc.streams.values() if h.stream.label == "train/rank7/step")
    found = PeerFindings()
    first = found.items(acc, hist, 0, 30, now=0.0)
    assert found.computed == 1 and found.took > 0
    soon = found.took * found.EVERY / 2
    assert found.items(acc, hist, 0, hist.n, now=soon) == first and found.computed == 1 and found.held
    later = found.items(acc, hist, 0, hist.n, now=soon + found.took * found.EVERY + 1)
    assert found.computed == 2 and later != first and not found.held
    assert np.isfinite(found.took)


def stalled(offset: float = 0.0, columns: int = 60, zero: bool = False) -> list[Interval]:
    """4 ranks (bpf, µs) of one-second columns; rank2 stalls (slots 18..19) in its column 30 only, its columns `offset`
    seconds after the others' (`zero`: every column zero seconds long)."""
    rng = np.random.default_rng(1)
    out = []
    for k in range(columns):
        for i in range(4):
            counts = np.zeros(NSLOTS, dtype=np.int64)
            if i == 2 and k == 30:
                counts[18:20] = rng.integers(20, 60, size=2)
            else:
                counts[10:13] = rng.integers(20, 60, size=3)
            start = 1_700_000_000.0 + k + (offset if i == 2 else 0.0)
            out.append(Interval(StreamId(f"rank{i}/step", "bpf", "microsec"), start, start + (0 if zero else 1),
                                counts))
    return out


def slow_item(acc: Accumulator, found: PeerFindings | None = None, now: float = 0.0) -> FindingItem:
    """rank2's `slow rank:` item over all its columns."""
    hist = next(h for h in acc.streams.values() if h.stream.label == "rank2/step")
    items = (found or PeerFindings()).items(acc, hist, 0, hist.n, now=now)
    return next(item for item in items if item.text.startswith("slow rank:"))


@pytest.mark.parametrize("offset", [0.0, 0.5])
def test_a_stall_in_one_interval_marks_that_column_only(offset: float) -> None:
    """The stall's interval ends where the next column starts (epoch seconds: no nanosecond below that is a number of
    its own), and a column goes to the interval holding its middle, as the comparison pools it: column 30 only, also
    where rank2's columns are half a second off its peers' (its column 30 is the group's interval 31)."""
    item = slow_item(accumulate(iter(stalled(offset))))
    assert "in 1 interval" in item.text
    assert item.columns() == [(30, 30)]


def test_columns_zero_seconds_long_do_not_crash_the_panel() -> None:
    """Instants (a column zero seconds long: start = end) have no time to compare: nothing said, no crash."""
    acc = accumulate(iter(stalled(zero=True, columns=10)))
    hist = next(h for h in acc.streams.values() if h.stream.label == "rank2/step")
    assert PeerFindings().items(acc, hist, 0, hist.n, now=0.0) == []
    assert PeerFindings().items(acc, hist, 3, 4, now=0.0) == []


def test_an_answer_kept_while_columns_are_dropped_stays_on_its_columns() -> None:
    """The answer kept meanwhile (`EVERY`) is on the same time after the history dropped its oldest columns (`--history
    N`): its columns are history indexes, which then shift."""
    items = stalled(columns=80)
    acc = Accumulator(cap=60)
    accumulate(iter(items[:4 * 50]), acc)
    found = PeerFindings()
    assert slow_item(acc, found=found).columns() == [(30, 30)]
    accumulate(iter(items[4 * 50:]), acc)
    hist = next(h for h in acc.streams.values() if h.stream.label == "rank2/step")
    assert hist.dropped == 20
    kept = slow_item(acc, found=found, now=found.took * found.EVERY / 2)
    assert found.computed == 1 and kept.columns() == [(10, 10)]


def test_a_window_changed_while_the_answer_is_kept_is_compared_once_that_time_has_passed(monkeypatch) -> None:
    """Scrolled while the last answer is kept (`EVERY`), the panel says it of the window shown as soon as that time has
    passed, with no key pressed nor column come in meanwhile (the flow has ended): not the other window's forever."""
    clock = [0.0]
    monkeypatch.setattr(peer_findings, "time", SimpleNamespace(monotonic=lambda: clock[0],
                                                               perf_counter=time.perf_counter))
    app = LatencyMapApp(iter(ranks(streams=4, columns=600, slow=1)), color_mode="truecolor")
    seen = []

    def slow_lines() -> list[str]:
        return [item.text for item in app.query_one(FindingsPanel).items if item.text.startswith("slow rank:")]

    async def scenario(pilot) -> None:
        app.open_stream(1)
        await pilot.pause()
        seen.append(slow_lines())  # the newest columns: rank1's slow last third
        await pilot.press("home")
        await pilot.pause()
        seen.append(slow_lines())  # the oldest columns, the answer kept meanwhile
        clock[0] = 1e6
        await pilot.pause(1.0)
        seen.append(slow_lines())

    run_ended(app, scenario, size=(160, 50))
    assert app.view.stream == 1 and app.current().stream.label == "rank1/step"
    assert seen[0] and seen[1] == seen[0]
    assert seen[2] == []


def test_a_window_too_wide_for_its_peers_is_compared_over_its_newest_columns_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`MAX_CELLS` bounds what one comparison reads (a day of 64 ranks zoomed out took 3.5 s): past it, the newest
    columns on screen are compared, and each line says how many."""
    acc = accumulate(iter(fixture_items(RANKS12)))
    hist = next(h for h in acc.streams.values() if h.stream.label == "train/rank7/step")
    monkeypatch.setattr(PeerFindings, "MAX_CELLS", 12 * 20)
    found = PeerFindings().items(acc, hist, 0, hist.n, now=0.0)
    slow = [item for item in found if "slow rank:" in item.text]
    assert len(slow) == 1 and slow[0].text.startswith("over the newest 20 columns on screen: slow rank: rank7")
    assert slow[0].first_col is not None and slow[0].first_col >= hist.n - 20
    monkeypatch.setattr(PeerFindings, "MAX_CELLS", 12 * hist.n)
    assert not any(item.text.startswith("over the newest") for item in PeerFindings().items(acc, hist, 0, hist.n))
