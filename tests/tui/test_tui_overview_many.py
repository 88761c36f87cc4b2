"""The overview of hundreds of streams: numbers kept from frame to frame equal a fresh computation, and the lines on
screen show the right streams with the right numbers, scrolled, re-sorted and while new columns arrive."""

from __future__ import annotations

import asyncio
import math
import threading

import numpy as np
import pytest
from rich.style import Style
from textual.strip import Strip
from tui_support import gated, ranks, wait_ended, wait_until

from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.model import Interval
from latencymap.core.percentiles import percentile_estimates
from latencymap.core.units import format_duration
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.overview import COLUMNS, MARK_W, NAME_W, OverviewList, OverviewScreen, _heat, strip_cells
from latencymap.tui.overview_stats import NOW_COLUMNS, OverviewStats, StreamRow
from latencymap.tui.overview_strips import p99_levels, strip_p99, strips_p99

STREAMS, FIRST, LATER, SLOW = 300, 20, 10, 250


def same_row(kept: StreamRow, fresh: StreamRow) -> None:
    assert (kept.index, kept.label) == (fresh.index, fresh.label)
    for name in ("p50_now", "p99_now", "p50_all", "p99_all", "vs_peers", "waited_now"):
        a, b = getattr(kept, name), getattr(fresh, name)
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12), name
    assert kept.waited_s == pytest.approx(fresh.waited_s, rel=1e-12)


@pytest.mark.parametrize("cap", [None, 25])
def test_numbers_kept_from_frame_to_frame_equal_a_fresh_computation(cap: int | None) -> None:
    """Streams that changed are recomputed, the others kept: after batches of new columns (past a column limit that
    drops the oldest), with windows ending in the past (paused, scrolled), the rows are what a new computation says."""
    items = ranks(streams=40, columns=60, slow=3)
    acc = Accumulator(cap=cap)
    kept = OverviewStats()
    rng = np.random.default_rng(1)
    at = 0
    for size in (400, 37, 1, 500, 90, 800, 572):
        acc.add(items[at: at + size])
        at += size
        histories = list(acc.streams.values())
        stops = [int(rng.integers(0, h.n + 1)) if rng.random() < 0.3 else h.n for h in histories]
        for got, want in zip(kept.rows(histories, stops), OverviewStats().rows(histories, stops), strict=True):
            same_row(got, want)
    assert at == len(items) and any(h.dropped for h in acc.streams.values()) == (cap is not None)
    histories = list(acc.streams.values())
    rows = kept.rows(histories)
    whole = Accumulator()  # every column seen, none dropped: what "waited" covers, kept or not
    whole.add(items)
    for row, hist in zip(rows, histories, strict=True):  # against the history itself, as test_tui_overview does
        now = hist.counts_in(slice(hist.n - NOW_COLUMNS, hist.n)).sum(axis=0)
        assert row.p99_now == percentile_estimates(now, hist.low, hist.high, (0.99,))[0]
        assert row.waited_s == pytest.approx(float(whole.streams[hist.stream].time_in().sum()))


def expected_lines(acc: Accumulator) -> list[tuple[str, str]]:
    """(label, numbers as drawn) of every stream, slowest p99 now first, computed from the histories."""
    histories: list[StreamHistory] = list(acc.streams.values())
    p50, p99, p99_all, waited = [], [], [], []
    for hist in histories:
        now = hist.counts_in(slice(hist.n - NOW_COLUMNS, hist.n)).sum(axis=0)
        a, b = percentile_estimates(now, hist.low, hist.high, (0.50, 0.99))
        p50.append(a)
        p99.append(b)
        p99_all.append(percentile_estimates(hist.counts_in().sum(axis=0), hist.low, hist.high, (0.99,))[0])
        waited.append(float(hist.time_in().sum()))
    out = []
    for i in sorted(range(len(histories)), key=lambda i: -p99[i]):
        ratio = p99[i] / float(np.median(p99[:i] + p99[i + 1:]))  # the median of its peers, itself left out
        values = (format_duration(p50[i]), format_duration(p99[i]), format_duration(p99_all[i]),
                  format_duration(waited[i], long_units=True), f"×{ratio:.2g}" + (" ▲" if ratio >= 2 else ""))
        out.append((histories[i].stream.label, " " + "".join(f"{v:>{w}} " for v, (_, w) in zip(values, COLUMNS,
                                                                                                  strict=True))))
    return out


def cells_of(strip: Strip) -> list[tuple[str, Style | None]]:
    return [(ch, seg.style) for seg in strip for ch in seg.text]


def check_screen(app: LatencyMapApp) -> OverviewList:
    """Every stream line on screen is the stream the sorted list puts there, with its numbers and its own heat strip
    (on the scale of every stream's p99s and the lines shown); `>` on the selection; the heading says which lines."""
    listing = app.screen.query_one(OverviewList)
    want = expected_lines(app.acc)
    assert len(listing.rows) == len(want)
    strips = [listing.render_line(y) for y in range(1, listing.size.height)]
    shown = min(listing.lines_shown, len(want) - listing.top)
    assert shown == listing.lines_shown  # a full screen of streams: the list never scrolls past its end
    heading = listing.render_line(0).text[MARK_W:]
    assert heading.startswith(f"streams {listing.top + 1}–{listing.top + shown} of {len(want)}"), heading
    cells, at = strip_cells(listing.size.width), MARK_W + NAME_W + 1
    by_label = {h.stream.label: h for h in app.acc.streams.values()}
    labels = [label for label, _ in want[listing.top: listing.top + shown]]
    fleet = np.array([v for r in listing.rows for v in (r.p99_now, r.p99_all)])  # every stream's, on screen or not
    if app.ended:  # the whole run over the strips (where the clock puts it: test_tui_overview_time)
        p99 = strips_p99([(by_label[s], by_label[s].n) for s in labels], listing.clock.fitted(cells).edges(cells))
    else:  # the newest columns, one per cell
        p99 = [strip_p99(by_label[s], by_label[s].n, cells) for s in labels]
    levels, _, _ = p99_levels([v for v, _ in p99], 6, fleet)
    for k, strip in enumerate(strips[:shown]):
        label, numbers = want[listing.top + k]
        text = strip.text
        assert text[MARK_W: MARK_W + NAME_W].strip() == label
        assert text.endswith(numbers), (text, numbers)
        assert text.startswith(">") == (listing.top + k == listing.selected)
        assert cells_of(strip.crop(at, at + cells)) == cells_of(Strip(_heat(levels[k], listing.mode, p99[k][1])))
    assert listing.top <= listing.selected < listing.top + listing.lines_shown
    assert len(listing._strips) <= listing.size.height  # only the lines on screen were drawn
    return listing


def slow_later(items: list[Interval]) -> list[Interval]:
    """`LATER` more columns of every stream, in which stream `SLOW` moves to slots 16..17."""
    out = []
    for k in range(LATER):
        for i, item in enumerate(items[:STREAMS]):
            counts = item.counts.copy()
            if i == SLOW:
                counts[16:18] = 50
            t = item.end + FIRST + k
            out.append(Interval(item.stream, t - 1, t, counts))
    return out


@pytest.mark.slow
def test_300_streams_show_the_right_lines_scrolled_re_sorted_and_while_columns_arrive() -> None:
    items = ranks(streams=STREAMS, columns=FIRST, slow=-1)
    gate = threading.Event()
    app = LatencyMapApp(gated(items + slow_later(items), len(items), gate), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=(180, 50)) as pilot:
            await wait_until(pilot, lambda: app.acc.intervals_seen == len(items) and isinstance(app.screen,
                                                                                              OverviewScreen))
            await pilot.pause(0.4)
            listing = check_screen(app)
            await pilot.press("pagedown", "pagedown", "down", "down", "down")
            await pilot.pause(0.05)
            assert listing.selected == 2 * listing.lines_shown + 3
            check_screen(app)
            picked = listing.current().label
            await pilot.press("end")
            await pilot.pause(0.05)
            assert listing.top == STREAMS - listing.lines_shown
            check_screen(app)
            await pilot.press("home", *["down"] * 60)  # the selection scrolls the list by one line at a time
            await pilot.pause(0.05)
            assert listing.top == 60 - listing.lines_shown + 1
            picked = listing.current().label
            check_screen(app)
            gate.set()  # new columns: stream SLOW becomes the slowest, every number moves
            await wait_ended(pilot)
            assert listing.current().label == picked  # the selection stays on its stream as the order changes
            check_screen(app)
            await pilot.press("home")
            await pilot.pause(0.05)
            listing = check_screen(app)
            assert listing.current().label == f"rank{SLOW}/step"

    asyncio.run(main())


def test_back_from_a_stream_the_overview_is_as_it_was() -> None:
    """One overview screen for the whole run: Esc from the stream opened shows the same order, filter and selection."""
    app = LatencyMapApp(iter(ranks()), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=(180, 50)) as pilot:
            await wait_ended(pilot)
            overview = app.screen
            assert isinstance(overview, OverviewScreen)
            await pilot.press("o", "slash", "r", "a", "n", "k", "1", "enter", "down", "down")
            listing = overview.query_one(OverviewList)
            picked = listing.current().label
            shown = [r.label for r in listing.rows]
            await pilot.press("enter")
            assert app.on_maps and app.query_one("#frequency").hist.stream.label == picked
            await pilot.press("escape")
            await pilot.pause(0.1)
            assert app.screen is overview and (overview.order, overview.needle) == ("waited", "rank1")
            assert [r.label for r in listing.rows] == shown and listing.current().label == picked
            assert check_labels(listing) == shown

    asyncio.run(main())


def check_labels(listing: OverviewList) -> list[str]:
    return [listing.render_line(y).text[MARK_W: MARK_W + NAME_W].strip() for y in range(1, len(listing.rows) + 1)]
