"""The findings panel says what the report says, in its words: the modes line whole, and each finding's what with its
why (a band that is the two sides of a shift, a band that is the start-up, said so); where findings share cells on
the time axis, the selected one's mark is the one drawn."""

from __future__ import annotations

import numpy as np
from tui_support import example_items, run_ended

from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.outputs.report import explained_diagnosis
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.axis import LABEL_W
from latencymap.tui.findings import FindingItem, FindingsPanel, window_findings
from latencymap.tui.window import Window


def history(slots: list[dict[int, int]]) -> StreamHistory:
    """A bpf µs stream of one-second columns holding `slots` (slot: events) each."""
    hist = StreamHistory(StreamId("/cluster/eu-west-1/host011/nvme0n1/read", "bpf", "microsec"))
    for col, held in enumerate(slots):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        for slot, events in held.items():
            counts[slot] = events
        hist.extend([Interval(hist.stream, 1_700_000_000.0 + col, 1_700_000_001.0 + col, counts)])
    return hist


def test_a_band_that_is_the_two_sides_of_a_shift_is_said_so_in_the_panel_as_in_the_report() -> None:
    """The hunt's fleet: host011 steps from 64 µs to 1–4 ms at col 30. The report's modes line ends `— the levels
    before and after the shift at col 29 (...), not two populations at once`; the panel's read `bimodal: 22% of
    events in 64µs–256µs, 78% in 1.02ms–4.1ms`, the qualifier dropped, and its band line had no why at all."""
    hist = history([{6: 900, 7: 100} if col < 30 else {10: 900, 11: 100} for col in range(60)])
    report = explained_diagnosis(hist)
    texts = [item.text for item in window_findings(hist, 0, hist.n)]
    assert texts[0] == report.summary_lines()[0] and "not two populations at once" in texts[0], texts[0]
    assert texts[1:] == [f.line() for f in report.findings]  # each in the report's words: what — why
    (band,) = [text for text in texts if text.startswith("band ")]
    assert "the levels before and after the shift at col" in band and "not two populations at once" in band, band


def test_a_start_up_band_is_said_to_be_no_population_of_the_run_in_the_panel() -> None:
    """Latencies 2 octaves higher in cols 0–1 only, then a third band in the run: the report says the start-up band
    is `not a population of the run`; the panel said the band's what alone."""
    cols = [{15: 500}] * 40
    cols = [{17: 500}, {17: 500}, *cols[2:]]
    cols[20] = {15: 500, 12: 400}
    hist = history(cols)
    report = explained_diagnosis(hist)
    said = [f.line() for f in report.findings if "not a population of the run" in f.why]
    assert said, [f.line() for f in report.findings]
    texts = [item.text for item in window_findings(hist, 0, hist.n)]
    assert all(line in texts for line in said), (said, texts)


def test_the_selected_findings_mark_is_drawn_where_findings_share_cells() -> None:
    """rec_listen.txt's rank7: the time axis read `4444…` over the columns of finding 2, selected; only the last
    finding over a cell had its mark drawn there."""
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        panel = app.query_one(FindingsPanel)
        items = [FindingItem("modes"), FindingItem("shift", 10, 29), FindingItem("stall", 20, 24),
                 FindingItem("slow rank", 10, 29)]
        win = Window(40, 40, 1)
        for selected, want in ((1, "2" * 20), (2, "4" * 10 + "3" * 5 + "4" * 5), (None, "4" * 20), (3, "4" * 20),
                               (0, "4" * 20)):
            panel.show(items, win, selected, room=4)
            await pilot.pause(0.1)
            marks = panel.render_line(0).text[LABEL_W + 1:]
            assert marks[10:30] == want, (selected, marks)

    run_ended(app, scenario, size=(120, 40))
