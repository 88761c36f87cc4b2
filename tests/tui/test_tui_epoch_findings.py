"""The findings panel says what the report says of a `timed_iter` loop's epoch start-up (analysis/epochs.py), on each
of its three streams (the epochs' starts, the batches' waits, the ends), over the columns on screen; nothing where the
report says nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from epochs_support import record_loop
from formats_support import report_json
from skips_support import requires_module
from tui_support import fixture_items, panel_items

from latencymap.core.accumulator import accumulate
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.findings import FindingItem, epoch_findings

TORCH = requires_module("torch", remedy=".ci/install-system.sh installs torch==2.13.0 (CPU)")


def panel_items_of(path: Path) -> dict[str, list[FindingItem]]:
    """Each stream's findings panel items, by label, once the recording at `path` is read."""
    return panel_items(LatencyMapApp(iter(fixture_items(path)), color_mode="truecolor"))


@pytest.mark.slow
@TORCH
def test_each_stream_of_a_loop_whose_workers_start_anew_shows_the_reports_epoch_finding(tmp_path: Path) -> None:
    """Workers not persistent: the report's finding (with persistent_workers) on each of the loop's three streams;
    persistent ones: no line on any of them."""
    restarting, persisting = tmp_path / "restart.txt", tmp_path / "persist.txt"
    record_loop(restarting, persistent=False, interval=0.25)
    record_loop(persisting, persistent=True, interval=0.25)
    finding = report_json(restarting)["epochs"][0]["finding"]
    line = f"{finding['what']} — {finding['why']}"
    assert "persistent_workers=True" in line
    seen = panel_items_of(restarting)
    assert set(seen) == {"dl/rank0/data_wait.epoch_start", "dl/rank0/data_wait", "dl/rank0/data_wait.epoch_end"}
    for label, items in seen.items():
        assert [item.text for item in items if "epoch start-up" in item.text] == [line], label
    assert not any("epoch start-up" in item.text for items in panel_items_of(persisting).values() for item in items)


@pytest.mark.slow
@TORCH
def test_the_finding_is_over_the_columns_on_screen(tmp_path: Path) -> None:
    """Over the first epoch's start alone (the starts' first column on screen) nothing repeats: no finding; over all
    the columns, the report's."""
    path = tmp_path / "rec.txt"
    record_loop(path, persistent=False, epochs=3, step_s=0.005, interval=0.1)
    acc = accumulate(iter(fixture_items(path)))
    starts = next(h for h in acc.streams.values() if h.stream.label == "dl/rank0/data_wait.epoch_start")
    assert starts.n == 3
    finding = report_json(path)["epochs"][0]["finding"]
    assert epoch_findings(acc, starts, 0, starts.n) == [FindingItem(f"{finding['what']} — {finding['why']}")]
    assert epoch_findings(acc, starts, 0, 1) == []
