"""The findings panel says what the report's peers comparison says of the stream on screen: the slow rank's own line,
marked on its columns, and on its peers which rank is the slow one; nothing where no peer is slow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tui_support import fixture_items, ranks, run_ended

from latencymap.core.accumulator import accumulate
from latencymap.outputs.report import peer_groups
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.findings import FindingsPanel
from latencymap.tui.peer_findings import PeerFindings

RANKS12 = Path(__file__).resolve().parents[2] / "fixtures" / "training" / "ranks12.txt"


def panel_items(app: LatencyMapApp) -> dict[str, list]:
    """Each stream's findings panel items once the flow has ended, by label."""
    seen: dict[str, list] = {}

    async def scenario(pilot) -> None:
        for k, hist in enumerate(app.acc.streams.values()):
            app.open_stream(k)
            await pilot.pause()
            seen[hist.stream.label] = list(app.query_one(FindingsPanel).items)

    run_ended(app, scenario, size=(160, 50))
    return seen


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
    assert found.items(acc, hist, 0, hist.n, now=soon) == first and found.computed == 1
    later = found.items(acc, hist, 0, hist.n, now=soon + found.took * found.EVERY + 1)
    assert found.computed == 2 and later != first
    assert np.isfinite(found.took)
