from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.core import columns
from latencymap.core.accumulator import (
    MIN_STREAM_BYTES,
    Accumulator,
    HistoryLimit,
    StreamHistory,
    set_chunk_columns,
)
from latencymap.core.buckets import midpoints_seconds
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.units import format_bytes

S = StreamId("s", "bpf", "microsec")


def interval(i: int, counts: list[int], exact: bool = False) -> Interval:
    c = np.zeros(64, dtype=np.int64)
    c[: len(counts)] = counts
    t = c * 1e-6 if exact else None
    return Interval(S, float(i), float(i) + 2.0, c, t)


def test_frequency_and_estimated_intensity() -> None:
    h = StreamHistory(S)
    h.extend([interval(0, [0, 4, 2])])
    assert np.allclose(h.frequency()[0, :3], [0, 2, 1])
    mid = midpoints_seconds("bpf", "microsec")
    assert np.allclose(h.intensity()[0, :3], [0, 4 * mid[1] / 2, 2 * mid[2] / 2])
    assert not h.exact


def test_exact_time_is_kept() -> None:
    h = StreamHistory(S)
    h.extend([interval(0, [0, 4], exact=True)])
    assert h.exact and np.isclose(h.time[0, 1], 4e-6)


def test_history_cap_drops_oldest_and_counts_them() -> None:
    h = StreamHistory(S, cap=100)
    for start in range(0, 250, 10):
        h.extend([interval(i, [i]) for i in range(start, start + 10)])
    assert h.n == 100 and h.dropped == 150
    assert h.start[0] == 150.0 and h.counts[-1, 0] == 249


def test_column_stats_and_totals() -> None:
    h = StreamHistory(S)
    h.extend([interval(0, [0, 10]), interval(2, [0, 0, 10])])
    stats = h.column_stats()
    assert np.allclose(stats.events_per_s, [5, 5])
    t = h.totals()
    assert t.events == 20 and t.duration_s == 4.0
    assert h.used_slots() == (1, 2)


def test_accumulator_routes_streams_and_counts_notices() -> None:
    acc = Accumulator()
    other = StreamId("o", "oracle", "millisec")
    acc.add([interval(0, [1]), Notice("bad"), Interval(other, 0, 1, np.ones(64, dtype=np.int64))])
    assert set(acc.streams) == {S, other}
    assert acc.skipped == 1 and acc.messages == ["bad"]


def fleet(streams: int, columns: int, seed: int = 3) -> list[Interval]:
    """`columns` one-second columns of each of `streams` streams, interleaved, 6 buckets used."""
    rng = np.random.default_rng(seed)
    ids = [StreamId(f"node{k:04d}", "bpf", "microsec") for k in range(streams)]
    out = []
    for i in range(columns):
        counts = np.zeros((streams, 64), dtype=np.int64)
        counts[:, 8:14] = rng.poisson([40, 180, 320, 110, 25, 3], (streams, 6))
        out += [Interval(s, 1e9 + i, 1e9 + i + 1, counts[k]) for k, s in enumerate(ids)]
    return out


def test_a_budget_holds_what_the_growing_blocks_hold_too() -> None:
    # 100 streams of 400 columns: no chunk is sealed at 1,024 columns a chunk, yet the growing blocks hold ~16 KB a
    # stream; under a 400 kB budget they used to go uncounted (1.6 MB held, nothing dropped, nothing said).
    told: list[Notice] = []
    budget = 400_000
    acc = Accumulator(cap=HistoryLimit(budget=budget), on_notice=told.append)
    items = fleet(100, 400)
    for at in range(0, len(items), 2000):
        acc.add(items[at: at + 2000])
        assert acc.nbytes <= budget and acc.held_bytes == acc.nbytes
    hists = list(acc.streams.values())
    assert all(h.n >= 1 and h.n + h.dropped == 400 for h in hists)
    assert acc.dropped_for_budget == sum(h.dropped for h in hists) > 0
    assert [m for m in acc.messages if "is full" in m] == [n.message for n in told if "is full" in n.message]
    assert sum("is full" in m for m in acc.messages) == 1
    # the newest columns are kept, and whole-run totals still cover every column
    whole = Accumulator(cap=None)
    whole.add(items)
    for h in hists:
        assert h.end[-1] == 1e9 + 400
        assert h.totals(all_seen=True).events == whole.streams[h.stream].totals().events
        assert h.totals().events < whole.streams[h.stream].totals().events


def test_a_budget_that_cannot_hold_every_stream_says_so_once() -> None:
    acc = Accumulator(cap=HistoryLimit(budget=20 * MIN_STREAM_BYTES))
    acc.add(fleet(30, 3))
    said = [m for m in acc.messages if "a stream" in m]
    assert len(said) == 1 and "30 streams" not in said[0] and "21 streams" in said[0], said
    assert all(h.n >= 1 for h in acc.streams.values())


@settings(max_examples=60, deadline=None)
@given(budget=st.integers(20_000, 400_000), sizes=st.lists(st.integers(1, 300), min_size=1, max_size=12),
       read=st.booleans(), chunk=st.sampled_from([16, 64, 1024]))
def test_room_for_is_never_wrong(budget: int, sizes: list[int], read: bool, chunk: int) -> None:
    # A view that draws frames in bulk asks whether appending k columns drops none: a yes must hold.
    rng = np.random.default_rng(budget)
    before = columns.CHUNK_COLUMNS
    set_chunk_columns(chunk)
    try:
        acc = Accumulator(cap=HistoryLimit(budget=budget))
        t = 0.0
        for k in sizes:
            counts = np.zeros((k, 64), dtype=np.int64)
            counts[:, 4:40] = rng.integers(0, 1 << 40, (k, 36))  # incompressible
            ivs = [Interval(S, t + i, t + i + 1, counts[i], counts[i] * 1e-9) for i in range(k)]
            t += k
            sure = acc.room_for(k)
            dropped = acc.dropped_for_budget
            acc.add(ivs)
            if sure:
                assert acc.dropped_for_budget == dropped
            # over the budget only when its one stream's newest columns alone take more, and then said
            assert acc.nbytes <= budget or (not acc.streams[S].can_drop_oldest_chunk()
                                            and any("cannot hold" in m for m in acc.messages))
            if read:  # metadata kept decoded, counted from the next append on (it grows as columns come)
                acc.streams[S].flags  # noqa: B018
    finally:
        columns.CHUNK_COLUMNS = before


def test_a_column_limit_says_once_that_it_drops_columns() -> None:
    told: list[Notice] = []
    acc = Accumulator(cap=5, on_notice=told.append)
    for i in range(12):
        acc.add([interval(i, [i + 1])])
    assert acc.dropped_for_columns == 7 and acc.streams[S].n == 5
    assert len(told) == 1 and acc.messages == [told[0].message]
    assert "newest 5 columns" in told[0].message and "--history 5" in told[0].message
    assert acc.streams[S].totals(all_seen=True).events == sum(range(1, 13))


def test_open_bytes_are_what_nbytes_holds_besides_the_sealed_chunks() -> None:
    h = StreamHistory(S)
    for i in range(0, 3000, 300):
        h.extend([interval(j, [j % 7, 3, j % 5], exact=j % 2 == 0) for j in range(i, i + 300)])
        h.counts_in(slice(0, 10))  # a chunk decoded and kept
        h.flags  # noqa: B018
        assert h.open_bytes == h.nbytes - h.sealed_bytes


def churn(pods: int, life: int, alive: int, seed: int = 5) -> list[Interval]:
    """Pods that each give `life` one-second columns, `alive` of them at a time (a new one every life/alive s)."""
    rng = np.random.default_rng(seed)
    ids = [StreamId(f"pod{k}", "bpf", "microsec") for k in range(pods)]
    step = life // alive
    out = []
    for t, k in sorted((k * step + c, k) for k in range(pods) for c in range(life)):
        counts = np.zeros(64, dtype=np.int64)
        counts[8:13] = rng.poisson([3, 20, 40, 10, 2])
        out.append(Interval(ids[k], 1e9 + t, 1e9 + t + 1, counts))
    return out


def test_streams_that_ended_give_up_their_columns_to_a_budget() -> None:
    # 400 pods of 50 columns, 10 alive at a time, under 60 kB: each ended pod kept its newest chunk for good, and
    # the histories grew to several times the budget while it said once, with an early figure, that it could not
    # hold them. Ended pods now give up every column (their sums stay), the live ones keep their newest.
    budget = 60_000
    told: list[Notice] = []
    acc, whole = Accumulator(cap=HistoryLimit(budget=budget), on_notice=told.append), Accumulator(cap=None)
    items = churn(400, 50, 10)
    for at in range(0, len(items), 500):
        acc.add(items[at: at + 500])
        whole.add(items[at: at + 500])
        assert acc.held_bytes <= budget and acc.held_bytes == acc.nbytes
    assert not [n for n in told if "cannot hold" in n.message]
    hists = list(acc.streams.values())
    assert sum(h.n == 0 for h in hists) > 300  # most pods ended long ago
    assert all(h.n >= 1 and h.end[-1] == whole.streams[h.stream].end[-1] for h in hists[-10:])  # the live ones
    for h in hists:
        w = whole.streams[h.stream]
        assert h.n + h.dropped == w.n
        counts, times, dur = h.slot_sums(all_seen=True)
        assert np.array_equal(counts, w.totals().counts) and dur == w.totals().duration_s
        np.testing.assert_allclose(times, w.time.sum(axis=0), rtol=1e-12)
        for fast in (False, True):
            assert h.totals(fast=fast, all_seen=True).percentiles == w.totals().percentiles
    # a pod that comes back starts a new history after its sums
    again = Interval(hists[0].stream, 2e9, 2e9 + 1, items[0].counts)
    acc.add([again])
    before = whole.streams[hists[0].stream].totals().events
    assert hists[0].n == 1 and hists[0].totals(all_seen=True).events == before + int(again.counts.sum())


def test_streams_that_gave_up_their_columns_do_not_count_as_sharing_the_budget() -> None:
    # 30 pods of 400 wide columns, 2 alive at a time, under 20 x 16 KiB: at most 11 hold columns at once (the ended
    # ones gave theirs up), yet the 21st pod was said to make 21 streams share the budget, under 16 KiB each.
    rng = np.random.default_rng(7)
    ids = [StreamId(f"pod{k}", "bpf", "microsec") for k in range(30)]
    acc, holding = Accumulator(cap=HistoryLimit(budget=20 * MIN_STREAM_BYTES)), 0
    items = []
    for t, k in sorted((k * 200 + c, k) for k in range(30) for c in range(400)):
        counts = np.zeros(64, dtype=np.int64)
        counts[4:40] = rng.integers(0, 1 << 40, 36)  # incompressible: a pod's columns take more than 16 KiB
        items.append(Interval(ids[k], 1e9 + t, 1e9 + t + 1, counts))
    for at in range(0, len(items), 100):
        acc.add(items[at: at + 100])
        holding = max(holding, sum(h.n > 0 for h in acc.streams.values()))
    assert len(acc.streams) == 30 and holding < 20 and acc.dropped_for_budget > 0
    assert not [m for m in acc.messages if "a stream now that" in m], acc.messages
    assert sum(h.n == 0 for h in acc.streams.values()) > 15


def test_a_budget_the_live_streams_outgrow_says_so_again_with_the_current_figure() -> None:
    # Every stream live, more of them as time goes on: each keeps its newest columns, whatever the budget; it was
    # said once, with the figure of that moment, while the histories went on to take many times more.
    budget = 20_000
    acc = Accumulator(cap=HistoryLimit(budget=budget))
    over: list[str] = []
    for t, streams in enumerate((60, 60, 150, 400, 420)):
        rng = np.random.default_rng(t)
        for i in range(20):
            counts = np.zeros((streams, 64), dtype=np.int64)
            counts[:, 8:14] = rng.poisson([40, 180, 320, 110, 25, 3], (streams, 6))
            acc.add([Interval(StreamId(f"node{k:04d}", "bpf", "microsec"), 1e9 + 20 * t + i, 1e9 + 20 * t + i + 1,
                              counts[k]) for k in range(streams)])
            said = [m for m in acc.messages if "cannot hold" in m]
            if len(said) > len(over):  # the figures of this moment
                assert f"cannot hold {streams} streams" in said[-1] and format_bytes(acc.held_bytes) in said[-1]
            over = said
    assert 3 <= len(over) <= 4, over
    assert "400 streams" in over[-1] or "420 streams" in over[-1]
    assert all(h.n >= 1 for h in acc.streams.values())


def test_a_notice_that_says_what_a_stream_measures_marks_its_history_before_or_after_its_columns() -> None:
    """A jHiccup log's note (`Notice.measures`) comes before its stream's first column; the history it makes, or one
    already there, keeps what its values measure (`StreamHistory.measures`), which words its findings. Another
    stream's is left alone, and the note is said as any other."""
    acc = Accumulator()
    other = StreamId("t", "bpf", "microsec")
    acc.add([interval(0, [1, 2]), Notice("h.hlog: logged by jHiccup", skipped=0, measures=(other, "jhiccup"))])
    assert acc.streams[S].measures == "" and other not in acc.streams
    acc.add([Interval(other, 0.0, 1.0, np.ones(64, dtype=np.int64))])
    assert acc.streams[other].measures == "jhiccup"
    acc.add([Notice("again", skipped=0, measures=(S, "jhiccup"))])
    assert acc.streams[S].measures == "jhiccup"
    assert acc.messages == ["h.hlog: logged by jHiccup", "again"] and acc.skipped == 0
