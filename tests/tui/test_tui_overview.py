"""The overview of many streams: numbers against the accumulator, every key (Pilot), hundreds of streams, A − B."""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from tui_support import note_line, ranks, run_ended, synthetic, told

from latencymap.core.accumulator import Accumulator
from latencymap.core.model import Interval, StreamId
from latencymap.core.percentiles import percentile_estimates
from latencymap.core.sanitize import cell_width, cut_middle
from latencymap.core.units import fit_duration, format_duration, format_number
from latencymap.tui.actions import not_comparable
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.diffmap import DiffMap, DiffScreen
from latencymap.tui.heatmap import HeatMap
from latencymap.tui.note_line import TOLD_STYLES, NoteLine
from latencymap.tui.overview import COLUMNS, MARK_W, NAME_W, OverviewList, OverviewScreen, name_width, strip_cells
from latencymap.tui.overview_stats import NOW_COLUMNS, OverviewStats, StreamRow, sort_rows
from latencymap.tui.overview_strips import strip_p99
from latencymap.tui.window import Window

SIZE = (180, 50)


run = functools.partial(run_ended, size=SIZE)


def listing(app: LatencyMapApp) -> OverviewList:
    return app.screen.query_one(OverviewList)


def shown_labels(app: LatencyMapApp) -> list[str]:
    lines = [listing(app).render_line(y).text for y in range(1, listing(app).size.height)]
    return [line[3:29].strip() for line in lines if "/step" in line]


def others_median(peers: list[StreamRow], row: StreamRow) -> float:
    """The median p99 now of `row`'s peers, itself left out (as `analysis.peers` compares)."""
    return float(np.median([r.p99_now for r in peers if r is not row]))


def test_stats_are_the_accumulators_numbers() -> None:
    acc = Accumulator()
    acc.add(ranks())
    histories = list(acc.streams.values())
    rows = OverviewStats().rows(histories)
    for row, hist in zip(rows, histories, strict=True):
        now = hist.counts[hist.n - NOW_COLUMNS:].sum(axis=0)
        p50, p99 = percentile_estimates(now, hist.low, hist.high, (0.50, 0.99))
        assert (row.p50_now, row.p99_now) == (p50, p99)
        assert row.p99_all == hist.totals().percentiles[0.99]
        assert row.waited_s == pytest.approx(float(hist.time.sum()))
    slow = next(r for r in rows if r.label == "rank7/step")
    assert slow.vs_peers == pytest.approx(slow.p99_now / others_median(rows, slow)) and slow.slow
    assert [r.label for r in rows if r.slow] == ["rank7/step"]
    assert sort_rows(rows, "p99 now")[0] is slow and sort_rows(rows, "vs peers")[0] is slow
    assert [r.label for r in sort_rows(rows, "label", "RANK1")] == ["rank1/step", "rank10/step", "rank11/step"]
    waited = [r.waited_s for r in sort_rows(rows, "waited")]
    assert waited == sorted(waited, reverse=True)


def test_strip_p99_per_cell() -> None:
    acc = Accumulator()
    acc.add(ranks())
    hist = acc.streams[next(iter(acc.streams))]
    p99, _ = strip_p99(hist, hist.n, 40, zoom=2)
    win = Window(hist.n, 40, 2)
    a, b = win.columns_of(39)
    assert p99[-1] == percentile_estimates(hist.counts[a:b].sum(axis=0), hist.low, hist.high, (0.99,))[0]
    assert np.isnan(p99[: 40 - hist.n // 2]).all() and np.isfinite(p99[40 - hist.n // 2:]).all()


def test_overview_first_lists_every_stream_slowest_first() -> None:
    app = LatencyMapApp(iter(ranks()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        labels = shown_labels(app)
        assert len(labels) == 12 and labels[0] == "rank7/step"
        head = str(app.screen.query_one("#overview-head").render())
        assert "12 streams" in head and "slow now: rank7/step" in head

    run(app, scenario)


def test_overview_keys_move_sort_filter_open_and_come_back(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = LatencyMapApp(iter(ranks()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        lst = listing(app)
        await pilot.press("down", "down")
        assert lst.selected == 2
        await pilot.press("up")
        assert lst.selected == 1
        await pilot.press("end")
        assert lst.selected == 11
        await pilot.press("home")
        assert lst.selected == 0
        await pilot.press("pagedown")
        assert lst.selected == 11
        await pilot.press("pageup")
        assert lst.selected == 0
        await pilot.press("o")  # time waited
        assert app.screen.order == "waited"
        waited = [r.waited_s for r in lst.rows]
        assert waited == sorted(waited, reverse=True)
        await pilot.press("o", "o")  # vs peers, then label (numbers in numeric order)
        assert app.screen.order == "label" and shown_labels(app)[:3] == ["rank0/step", "rank1/step", "rank2/step"]
        await pilot.press("slash", "r", "a", "n", "k", "1")
        assert app.screen.needle == "rank1" and shown_labels(app) == ["rank1/step", "rank10/step", "rank11/step"]
        await pilot.press("enter")  # keeps the filter, back to the list
        await pilot.press("down", "enter")  # opens rank10
        assert not isinstance(app.screen, OverviewScreen)
        assert app.query_one("#frequency", HeatMap).hist.stream.label == "rank10/step"
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("escape")  # clears the filter
        assert app.screen.needle == "" and len(shown_labels(app)) == 12
        await pilot.press("s")
        await pilot.pause()
        svg, txt = app.saved
        assert "<svg" in svg.read_text() and "rank7/step" in txt.read_text() and "OVERVIEW" in txt.read_text()

    run(app, scenario)


def test_a_b_d_show_the_difference_map() -> None:
    app = LatencyMapApp(iter(ranks()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("d")
        assert note_line(app) == " difference map  mark two streams first: a on one, b on the other"
        await pilot.press("a", "down", "b", "d")  # A: rank7 (slowest), B: the next one
        assert isinstance(app.screen, DiffScreen)
        diff = app.screen.query_one(DiffMap)
        await pilot.pause(0.2)
        a, b = app.screen.a, app.screen.b
        assert a.stream.label == "rank7/step"
        win = Window(a.n, diff.values.shape[1], 1)
        lo = a.n - 1
        col = win.cell_of(lo)
        rates = (a.counts[lo] / a.durations[lo]) - (b.counts[lo] / b.durations[lo])
        assert diff.values[:, col].sum() == pytest.approx(rates.sum())
        assert np.nanmax(diff.values) > 0 and np.nanmin(diff.values) < 0  # A slower: more in slow rows, fewer in fast
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)

    run(app, scenario)


def test_a_paused_difference_map_shows_each_stream_s_own_columns() -> None:
    """Paused after a look at a rank that stopped at column 20 of 60, the difference map of two other ranks shows
    their 60 columns (streams do not share column indexes: each is frozen at its own), opened and resized; opened
    while paused, none of A's columns read since."""
    import asyncio
    import threading

    from tui_support import gated, wait_until

    items = ranks(streams=4, columns=60, slow=-1)
    items = [item for k, item in enumerate(items) if item.stream.label != "rank3/step" or k // 4 < 20]
    gate = threading.Event()
    app = LatencyMapApp(gated(items, len(items) - 3 * 10, gate), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.acc.intervals_seen == len(items) - 30)
            app.open_stream(3)
            await pilot.pause(0.2)
            await pilot.press("escape", "space")
            gate.set()
            await wait_until(pilot, lambda: app.ended)
            await pilot.press("o", "o", "o", "home", "a", "down", "b", "d")  # sorted by label
            assert isinstance(app.screen, DiffScreen) and app.state_name == "paused"
            await pilot.pause(0.2)
            diff = app.screen.query_one(DiffMap)
            assert (app.screen.a.stream.label, app.screen.b.stream.label) == ("rank0/step", "rank1/step")
            assert app.screen.a.n == 60 and diff.stop == 50
            await pilot.resize_terminal(150, 40)
            await pilot.pause(0.2)
            assert diff.stop == 50

    asyncio.run(main())


def test_streams_of_two_datasources_with_the_same_buckets_have_a_difference_map() -> None:
    """PyLatencyMap records name their disk in `datasource`: diskA and diskB share the lower-bound buckets."""
    intervals = [replace(iv, stream=StreamId(iv.stream.label, "disk" + "AB"[int(iv.stream.label[4:5]) % 2],
                                             "microsec")) for iv in ranks(streams=2)]
    app = LatencyMapApp(iter(intervals), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("a", "down", "b", "d")
        assert isinstance(app.screen, DiffScreen), told(app)

    run(app, scenario)


def test_streams_whose_rows_differ_are_refused_with_the_reason_as_written() -> None:
    assert not_comparable(StreamId("a", "diskA", "microsec"), StreamId("b", "bpf", "microsec")) is None
    assert not_comparable(StreamId("a", "oracle", "microsec"), StreamId("b", "bpf", "microsec")) is None  # [0, 1), ...
    assert not_comparable(StreamId("a", "bpf", "microsec"), StreamId("b", "bpf", "millisec")) == \
        "A is in microsec and B in millisec: their rows are not the same buckets"
    intervals = [replace(iv, stream=StreamId(iv.stream.label, "bpf", "millisec" if "0" in iv.stream.label
                                             else "microsec")) for iv in ranks(streams=2)]
    app = LatencyMapApp(iter(intervals), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("a", "down", "b", "d")
        assert isinstance(app.screen, OverviewScreen)
        said = note_line(app)
        assert said.startswith(" difference map  A is in m") and said.endswith("their rows are not the same buckets")
        assert app.screen.query_one(NoteLine).note[1] == TOLD_STYLES[True]  # a warning: red
        app.notify("x.txt line 3: expected [begin record]; label [/]")  # input's brackets are text, not markup
        await pilot.pause(0.3)
        assert note_line(app) == " latencymap  x.txt line 3: expected [begin record]; label [/]"
        assert told(app)[0] == said  # said before: it comes back if its time is not up

    run(app, scenario)


def test_hundreds_of_streams_draw_only_the_lines_on_screen() -> None:
    app = LatencyMapApp(iter(ranks(streams=300, columns=20)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        lst = listing(app)
        assert len(lst.rows) == 300
        assert len(lst._strips) <= lst.size.height  # the lines on screen (and the axis), not 300
        await pilot.press("end")
        assert lst.top == 300 - lst.lines_shown and lst.current() is lst.rows[-1]
        assert math.isfinite(lst.scale[0])

    run(app, scenario)


def test_one_stream_has_no_overview() -> None:
    app = LatencyMapApp(iter(synthetic(30)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert not isinstance(app.screen, OverviewScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, OverviewScreen)
        assert told(app)[-1].startswith(" overview  one stream only")

    run(app, scenario)


def test_strip_cells_fit_the_width() -> None:
    assert strip_cells(180) > 90 and strip_cells(20) == 8


def test_every_map_key_on_the_overview_and_the_difference_map_keeps_the_app_alive(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    found = {"stragglers": [{"key": "rank7", "group": "step", "duration_s": 0.1, "reference_s": 0.02,
                             "ratio": 5.0}], "stages": []}
    app = LatencyMapApp(iter(ranks()), color_mode="truecolor", analysis=lambda: found)
    keys = ["left", "right", "home", "end", "pageup", "pagedown", "plus", "minus", "left_square_bracket",
            "right_square_bracket", "r", "e", "E", "l", "f", "f", "p", "p", "m", "c", "x", "g", "n", "tab",
            "shift+tab", "space", "space", "s"]

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        for key in keys:
            await pilot.press(key)
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("home", "a", "down", "b", "d")  # (end moved the selection to the last line)
        assert isinstance(app.screen, DiffScreen)
        for key in keys:
            await pilot.press(key)
        assert isinstance(app.screen, DiffScreen)
        await pilot.press("escape", "home", "enter")
        assert app.maps.query_one("#stragglers").found == found  # analysed at the end, under the overview
        texts = [p.read_text() for p in app.saved if p.suffix == ".txt"]
        assert any("OVERVIEW" in t for t in texts) and any("A − B" in t for t in texts)

    run(app, scenario)


def test_peers_are_streams_of_one_unit_and_datasource() -> None:
    acc = Accumulator()
    acc.add(ranks(streams=4))
    acc.add([Interval(StreamId("bytes", "bpf", "millisec"), i.start, i.end, i.counts)
             for i in ranks(streams=1, slow=-1)])
    rows = {r.label: r for r in OverviewStats().rows(list(acc.streams.values()))}
    assert math.isnan(rows["bytes"].vs_peers)  # alone in its unit: no peers
    mine = [rows[f"rank{i}/step"] for i in range(4)]
    assert all(r.vs_peers == pytest.approx(r.p99_now / others_median(mine, r)) for r in mine)


def test_streams_whose_labels_name_no_disk_rank_or_instance_have_no_peers() -> None:
    """`syscall read` against `syscall fsync` headlined "slow now: read ×17": they do different work. Loop devices
    are disks, compared by operation as the report compares them."""
    acc = Accumulator()
    names = ["syscall read", "syscall fsync", "block I/O loop0 read", "block I/O loop1 read", "block I/O vda read"]
    for i in ranks(streams=5, slow=1):
        acc.add([replace(i, stream=StreamId(names[int(i.stream.label[4])], "bpf", "microsec"))])
    rows = {r.label: r for r in OverviewStats().rows(list(acc.streams.values()))}
    assert math.isnan(rows["syscall read"].vs_peers) and math.isnan(rows["syscall fsync"].vs_peers)
    disks = [rows[f"block I/O {d} read"] for d in ("loop0", "loop1", "vda")]
    assert all(math.isfinite(r.vs_peers) for r in disks)


def test_a_ranks_phases_are_peers_of_that_phase_on_other_ranks_not_of_its_other_phases() -> None:
    """Four even ranks, each with a step and a much faster data_wait stream (one unit and datasource): no rank is
    slow, and each phase's ratio is to its own phase's median."""
    acc = Accumulator()
    for i in ranks(streams=4, slow=-1):
        fast = np.roll(i.counts, -8)  # the same shape, 256 times faster
        acc.add([i, Interval(StreamId(i.stream.label.replace("step", "data_wait"), "bpf", "microsec"), i.start,
                             i.end, fast)])
    rows = OverviewStats().rows(list(acc.streams.values()))
    assert len(rows) == 8 and not [r.label for r in rows if r.slow]
    for phase in ("step", "data_wait"):
        mine = [r for r in rows if r.label.endswith(phase)]
        assert all(r.vs_peers == pytest.approx(r.p99_now / others_median(mine, r)) for r in mine)
        assert all(0.5 < r.vs_peers < 2 for r in mine)


def test_difference_rates_read_only_the_columns_on_screen_and_match_the_whole_history() -> None:
    from latencymap.core import columns
    from latencymap.core.accumulator import set_chunk_columns
    from latencymap.tui.diffmap import rates_by_time

    rng = np.random.default_rng(4)
    s = StreamId("a", "bpf", "microsec")
    before = columns.CHUNK_COLUMNS
    set_chunk_columns(16)  # sealed, compressed chunks are read back too
    try:
        acc = Accumulator()
        counts = np.zeros((200, 64), dtype=np.int64)
        counts[:, 8:14] = rng.poisson(50, (200, 6))
        acc.add([Interval(s, 1000.0 + k, 1001.0 + k + 0.01 * (k % 3), counts[k]) for k in range(200)])
    finally:
        set_chunk_columns(before)
    hist = acc.streams[s]
    for edges in (np.array([-np.inf, 1040.5, 1070.0, 1130.2]), np.array([1100.0, 1150.0, 1150.0, 1301.0])):
        rates, seconds = rates_by_time(hist, edges)
        idx = np.searchsorted(hist.end, edges, side="right")
        whole = np.vstack([counts[a:b].sum(axis=0) for a, b in pairwise(idx)]).astype(float)
        spans = np.array([hist.durations[a:b].sum() for a, b in pairwise(idx)])
        assert np.allclose(seconds, spans)
        assert np.allclose(rates, np.divide(whole, spans[:, None], out=np.zeros_like(whole),
                                            where=spans[:, None] > 0))


def test_the_selection_stays_on_top_until_the_user_picks_a_line_then_follows_it() -> None:
    """Rows sorted again as data comes (rank 7 turns slow at the end): an untouched selection is the top line, the
    stream the order puts first; once the user has moved, it stays on the stream picked."""
    items = ranks()
    early, late = Accumulator(), Accumulator()
    early.add(items[: len(items) // 3])
    late.add(items)
    before = sort_rows(OverviewStats().rows(list(early.streams.values())), "p99 now")
    after = sort_rows(OverviewStats().rows(list(late.streams.values())), "p99 now")
    assert before[0].label != "rank7/step" and after[0].label == "rank7/step"
    untouched = OverviewList()
    untouched.set_rows(before, {})
    untouched.set_rows(after, {})
    assert untouched.current() is after[0]
    picked = OverviewList()
    picked.set_rows(before, {})
    picked.chosen = True
    picked.move(1)
    chosen = before[1].index
    picked.set_rows(after, {})
    current = picked.current()
    assert current is not None and current.index == chosen


def test_names_that_differ_only_at_the_end_stay_apart() -> None:
    labels = ['prometheus_http_request_duration_seconds{handler="/api/v1/query"}',
              'prometheus_http_request_duration_seconds{handler="/metrics"}',
              "db file sequential read latency data from gv$event_histogram [host2/io.txt]"]
    shown = [cut_middle(label, NAME_W) for label in labels]
    assert all(len(s) == NAME_W for s in shown) and len(set(shown)) == 3
    assert shown[0] == 'prometheus…/api/v1/query"}' and shown[2].endswith("[host2/io.txt]")
    assert cut_middle("sda", NAME_W) == "sda"


def test_wide_names_keep_the_columns_in_place() -> None:
    wide = "磁盘读取延迟统计数据来自主机一号的第一块硬盘"
    shown = cut_middle(wide, NAME_W)
    assert shown == "磁盘读取延…号的第一块硬盘" and cell_width(shown) <= NAME_W
    assert cut_middle("é" * 40, NAME_W) == "é" * 10 + "…" + "é" * 15
    assert cell_width("e\u0301") == 1 and cell_width("ab") == 2


def test_dropped_columns_still_count_in_overall_figures() -> None:
    from latencymap.core.accumulator import HistoryLimit
    from latencymap.tui.status import status_lines

    whole, capped = Accumulator(), Accumulator(cap=HistoryLimit(columns=7))
    whole.add(ranks())
    capped.add(ranks())
    rows = OverviewStats().rows(list(capped.streams.values()))
    for row, full, hist in zip(rows, whole.streams.values(), capped.streams.values(), strict=True):
        assert hist.dropped and hist.n == 7
        assert row.p99_all == full.totals().percentiles[0.99]  # every column seen, not the 7 kept
        assert row.waited_s == pytest.approx(float(full.time.sum()))
        first, second = (" ".join(f.text for f in line) for line in status_lines(
            hist, hist.n, state="ended", skipped=0, stream_index=0, streams=1, ingest_rate=0.0))
        rate = full.totals().events / full.totals().duration_s
        assert f"columns {full.n} (7 kept)" in first
        assert second.split("overall")[1].split()[0] == format_number(rate)


def stages(n: int = 38) -> list[Interval]:
    """Spark's `--per-stage` streams of a finished application: stage k's tasks end in columns k..k+1 only, so every
    stage but the last ended long before the newest column, as stages do."""
    rng = np.random.default_rng(5)
    out = []
    for k in range(n):
        stream = StreamId(f"spark hunt-plain stage {k} task duration", "spark", "millisec")
        for j in (k, k + 1):
            counts = np.zeros(64, dtype=np.int64)
            counts[12:15] = rng.integers(1, 6, 3)
            out.append(Interval(stream, 1_700_000_000.0 + j, 1_700_000_001.0 + j, counts))
    return sorted(out, key=lambda iv: iv.end)


def test_per_stage_names_show_the_stage_and_stages_that_ended_are_not_stale() -> None:
    """38 stages `spark hunt-plain stage N task duration` showed as `spark hunt…7 task duration` for 7, 17, 27 and 37,
    and the header called 37 of them stale."""
    app = LatencyMapApp(iter(stages()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        width = listing(app).size.width
        lines = [listing(app).render_line(y).text for y in range(1, listing(app).size.height)]
        names = [line[3:3 + NAME_W] for line in lines if "stage" in line]
        assert len(names) == 38 and len(set(names)) == 38, names  # no two rows look alike
        for k in (7, 17, 27, 37):
            assert sum(f" stage {k} " in name for name in names) == 1
        assert all(cell_width(name) == NAME_W for name in names) and width == SIZE[0]
        rows = listing(app).rows
        ended = {r.label.split()[3] for r in rows if r.ended}  # stages more than NOW_COLUMNS before the last
        assert ended == {str(k) for k in range(38 - 1 - NOW_COLUMNS)} and not any(r.stale for r in rows)
        text = app.screen.plain_lines()
        assert "stale" not in "\n".join(text), text[0]

    run(app, scenario)


def test_a_hung_rank_stays_stale_while_streams_without_peers_that_ended_are_not() -> None:
    """The rule: stale is a stream that stopped while a peer (its label but for the rank) goes on."""
    acc = Accumulator()
    cut = 1_700_000_000.0 + 60 - 25
    acc.add([iv for iv in ranks(streams=3) if not (iv.stream.label == "rank1/step" and iv.start >= cut)])
    acc.add([replace(iv, stream=StreamId("warm-up phase", "bpf", "microsec"))
             for iv in synthetic(10, start=1_700_000_000.0)])
    rows = {r.label: r for r in OverviewStats().rows(list(acc.streams.values()))}
    assert rows["rank1/step"].stale and rows["rank1/step"].stale_s == 25
    assert rows["warm-up phase"].ended and not rows["warm-up phase"].stale
    assert math.isnan(rows["warm-up phase"].p99_now) and math.isnan(rows["warm-up phase"].stale_s)


def test_a_slow_rank_of_two_is_compared_with_the_other_alone_and_flagged() -> None:
    """Against a median of itself and its one peer, a rank read ×1.4 at 2.2× and ×2 was out of reach: its peers'
    median leaves it out, as the report's peer groups do (`analysis.peers.ratios_to_others`)."""
    acc = Accumulator()
    acc.add(ranks(streams=2, slow=1))
    rows = {r.label: r for r in OverviewStats().rows(list(acc.streams.values()))}
    fast, slow = rows["rank0/step"], rows["rank1/step"]
    assert slow.p99_now / fast.p99_now >= 2
    assert slow.vs_peers == pytest.approx(slow.p99_now / fast.p99_now) and slow.slow
    assert fast.vs_peers == pytest.approx(fast.p99_now / slow.p99_now) and not fast.slow


def slow_buckets(streams: int = 2, columns: int = 12) -> list[Interval]:
    """`host<i>/io` (bpf, µs): most events in slot 10 (0.5 ms), a few in slot 41 (2^40 µs, 12.7 days) in each
    column: months waited in all."""
    out = []
    for k in range(columns):
        for i in range(streams):
            counts = np.zeros(64, dtype=np.int64)
            counts[10], counts[41] = 100, 1 + i
            out.append(Interval(StreamId(f"host{i}/io", "bpf", "microsec"), 1_700_000_000.0 + k,
                                1_700_000_001.0 + k, counts))
    return out


@pytest.mark.parametrize(("width", "names"), [
    (60, ("p99 now", "waited", "vs peers")), (70, ("p99 now", "p99 all", "waited", "vs peers")),
    (80, ("p50 now", "p99 now", "p99 all", "waited", "vs peers")),
])
def test_a_narrow_overview_drops_whole_columns_and_cuts_no_number(width: int, names: tuple[str, ...]) -> None:
    """At 60 columns the numbers were cut at the edge (`116170` for 11617094s, `vs peers` gone): whole columns go
    (p50 now first), every number left is whole, and every duration reads as the report writes it (`days`), in its
    column's width (`fit_duration`): p99 now read `1544203s`, one cell too wide for its column."""
    app = LatencyMapApp(iter(slow_buckets()), color_mode="mono")

    async def scenario(pilot) -> None:
        lst = listing(app)
        head = lst.render_line(0).text
        assert [n for n in ("p50 now", "p99 now", "p99 all", "waited", "vs peers") if n in head] == list(names)
        low, high = (format_duration(v, long_units=True) for v in lst.scale)
        assert (low in head and high in head) or "…" not in head[MARK_W + name_width(width):], head  # whole, or none
        assert cell_width(head.rstrip()) <= width
        p99s = []
        for y, row in enumerate(lst.rows, start=1):
            line = lst.render_line(y).text
            texts = {"p50 now": row.p50_now, "p99 now": row.p99_now, "p99 all": row.p99_all, "waited": row.waited_s}
            widths = dict(COLUMNS)
            shown = {name: fit_duration(v, widths[name]) for name, v in texts.items()}
            shown["vs peers"] = f"×{row.vs_peers:.2g}" + (" ▲" if row.slow else "")
            numbers = "".join(f" {shown[name]:>{w}}" for name, w in COLUMNS if name in names)
            assert line.rstrip().endswith(numbers) and cell_width(line.rstrip()) <= width, line
            assert all(len(shown[name]) <= w for name, w in COLUMNS), shown
            assert "days" in shown["waited"] and shown["p50 now"].endswith("µs"), shown
            p99s.append(shown["p99 now"])
        assert sorted(p99s) == ["1.02ms", "18 days"]  # 17.9 days: 9 cells, 2 digits fit

    run_ended(app, scenario, size=(width, 20))


def test_difference_map_follows_live_data_after_the_cursor_was_moved_and_stays_when_paused() -> None:
    """A cursor moved in a stream's view holds its window back; the map screen's window grows with the data while
    the history is shorter than it, and so does the difference map's (it froze at the columns of that moment), until
    the display is paused."""
    import asyncio
    import threading

    from tui_support import gated, wait_until

    items = ranks(streams=2, columns=60)
    gate, more = threading.Event(), threading.Event()

    def flow():
        yield from gated(items[:80], 40, gate)
        more.wait(10)
        yield from items[80:]

    app = LatencyMapApp(flow(), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.acc.intervals_seen >= 40 and isinstance(app.screen, OverviewScreen))
            await pilot.press("enter")
            await pilot.pause(0.2)
            await pilot.press("left", "escape")
            await pilot.pause(0.2)
            assert app.view.end is not None  # held back
            await pilot.press("home", "a", "down", "b", "d")
            assert isinstance(app.screen, DiffScreen)
            diff = app.screen.query_one(DiffMap)
            await pilot.pause(0.3)
            assert diff.stop == app.screen.a.n == 20
            gate.set()
            await wait_until(pilot, lambda: app.acc.intervals_seen >= 80)
            await wait_until(pilot, lambda: diff.stop == app.screen.a.n == 40, timeout=5)
            await pilot.press("space")  # paused: the difference map stays where it is
            more.set()
            await wait_until(pilot, lambda: app.ended)
            await pilot.pause(0.6)
            assert diff.stop == 40 and app.screen.a.n == 60
            await pilot.press("space")
            await wait_until(pilot, lambda: diff.stop == 60, timeout=5)
            await pilot.press("q")

    asyncio.run(main())


def _slow_rows(labels: list[str], slow: int) -> list[StreamRow]:
    """Rows of an overview (no history needed for its header): the first `slow` of `labels` slow now (10× their
    peers)."""
    return [StreamRow(k, None, label, vs_peers=10.0 if k < slow else 1.0)  # type: ignore[arg-type]
            for k, label in enumerate(labels)]


def test_the_overview_head_keeps_how_many_are_slow_on_a_narrow_terminal() -> None:
    """At 80 columns the head read `slow now: host000/sda` for six slow hosts: the `+3 more` went first, then the
    names, so one name looked like all."""
    from latencymap.tui.fit import fit_fields
    from latencymap.tui.overview import overview_head

    rows = _slow_rows([f"host{k:03d}/sda" for k in range(0, 600, 10)], 6)
    wide = "".join(f.text for f in fit_fields(overview_head("ended", 60, rows, "", "p99 now", 0), 200))
    assert "slow now (6): host000/sda, host010/sda, host020/sda, …" in wide, wide
    for width in (80, 60):
        narrow = "".join(f.text for f in fit_fields(overview_head("ended", 60, rows, "", "p99 now", 0), width))
        assert "slow now (6): host000/sda" in narrow, narrow
    one = "".join(f.text for f in fit_fields(overview_head("ended", 60, rows[5:], "", "p99 now", 0), 200))
    assert "slow now: host050/sda" in one, one


def test_a_ratio_to_the_peers_is_written_whole_and_the_list_title_is_never_cut_through_a_number() -> None:
    from latencymap.tui.overview import _first_fitting, _ratio

    assert [_ratio(r) for r in (1.14, 9.96, 39.2, 112.4, 9876.0, 1.5e9)] == ["1.1", "10", "39", "112", "9,876",
                                                                            "1.5e+09"]
    titles = ("streams 1–21 of 60", "1–21 of 60", "1–21/60")
    assert [_first_fitting(titles, w) for w in (26, 14, 8)] == ["streams 1–21 of 60", "1–21 of 60", "1–21/60"]


def test_streams_of_one_label_are_told_apart_by_datasource_and_unit() -> None:
    from latencymap.tui.overview import shown_labels as overview_labels

    acc = Accumulator()
    for ds, unit in (("bpf", "microsec"), ("bpf", "nanosec"), ("oracle", "microsec")):
        counts = np.zeros(64, dtype=np.int64)
        counts[10] = 5
        acc.add([Interval(StreamId("sda", ds, unit), 0.0, 1.0, counts)])
    acc.add([Interval(StreamId("sdb", "bpf", "microsec"), 0.0, 1.0, np.ones(64, dtype=np.int64))])
    rows = OverviewStats().rows(list(acc.streams.values()), sources=acc.sources)
    assert sorted(overview_labels(rows)) == ["sda [bpf, microsec]", "sda [bpf, nanosec]", "sda [oracle, microsec]",
                                              "sdb"]


@pytest.mark.parametrize("width", [12, 14, 16, 18, 20])
def test_a_cut_name_always_shows_where_it_was_cut(width: int) -> None:
    """At 16 cells `sda [oracle, microsec]` read `oracle, microsec`, a label of its own, beside `…[bpf, microsec]`."""
    from latencymap.tui.overview_names import distinct_names

    labels = ["sda [bpf, microsec]", "sda [oracle, microsec]", "sda [bpf, nanosec]"]
    for label, name in zip(labels, distinct_names(labels, width), strict=True):
        assert cell_width(name) <= width and (name == label or "…" in name), (label, name)


def test_a_stale_or_slow_name_cut_in_the_head_keeps_what_tells_it_apart() -> None:
    """stale300.txt at 80 columns: the head read `stale (2): /cluster/…77/nvme0n1/read`, which host077 and host177
    (both stale) match alike; the list cuts names around the part that tells them apart, and the head now does too."""
    from latencymap.tui.fit import fit_fields
    from latencymap.tui.overview import overview_head

    labels = [f"/cluster/eu-west-1/host{k:03d}/nvme0n1/read" for k in range(300)]
    rows = [StreamRow(k, None, label, vs_peers=10.0 if k == 205 else 1.0,  # type: ignore[arg-type]
                      behind_s=15.0 if k in (77, 177) else math.nan, stopped_alone=k in (77, 177))
            for k, label in enumerate(labels)]
    for width in (70, 80, 100):
        head = "".join(f.text for f in fit_fields(overview_head("ended", 300, rows, "", "p99 now", 0), width))
        stale = head.partition("stale (2): ")[2].partition("  ")[0]
        slow = head.partition("slow now: ")[2]
        assert "host077" in stale and "host205" in slow, (width, head)


@pytest.mark.parametrize("width", [1, 4, 12, 16, 20, 26, 40])
def test_one_label_is_cut_as_the_list_cuts_it_among_all(width: int) -> None:
    """The head cuts one name (`distinct_name`, not every label of a thousand-stream list at each repaint) exactly as
    `distinct_names` cuts it among all of them, labels alike as first cut included."""
    from latencymap.tui.overview_names import distinct_name, distinct_names

    for labels in ([f"/cluster/eu-west-{k % 3}/host{k:05d}/nvme{k % 4}n1/read" for k in range(300)],
                   ["sda [bpf, microsec]", "sda [oracle, microsec]", "sda [bpf, nanosec]", "sda [bpf, nanosec]"],
                   ["spark app stage 17 task duration", "spark app stage 1 task duration", "a…b", "a", ""]):
        assert [distinct_name(labels, k, width) for k in range(len(labels))] == distinct_names(labels, width)
