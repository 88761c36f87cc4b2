"""The composed diagnosis: report keys, summary text, and PyLatencyMap's real Oracle sample."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from diagnosis_support import UNIMODAL, paused

from latencymap.analysis.diagnosis import Diagnosis, diagnose, pct
from latencymap.core.buckets import bin_values, bounds_seconds, midpoints_seconds
from latencymap.core.deltas import Differ
from latencymap.core.model import Interval
from latencymap.flow.inputs import read_input
from latencymap.plugins import load_registry

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "pylatencymap"
LOW, HIGH = bounds_seconds("bpf", "nanosec")


def synthetic(seed: int = 0, ncols: int = 80) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """95% at 300 us, 5% at 10 ms, plus a burst at ~80 ms in columns 30..37; 1 s columns."""
    rng = np.random.default_rng(seed)
    counts, times = [], []
    for j in range(ncols):
        n = rng.poisson(3000)
        slow = rng.binomial(n, 0.05)
        burst = rng.lognormal(np.log(80e6), 0.3, rng.poisson(60)) if 30 <= j < 38 else np.empty(0)
        values = np.r_[rng.lognormal(np.log(300e3), 0.5, n - slow), rng.lognormal(np.log(10e6), 0.5, slow), burst]
        c, s = bin_values(values)
        counts.append(c)
        times.append(s * 1e-9)
    starts = 5000.0 + np.arange(ncols, dtype=np.float64)
    return np.array(counts), np.array(times), starts, starts + 1.0


def test_report_keys_are_plain_json() -> None:
    counts, times, starts, ends = synthetic()
    d = diagnose(counts, times, LOW, HIGH, starts, ends)
    data = json.loads(json.dumps(d.to_json()))  # no NumPy scalars leak out
    assert set(data) == {"bands", "bimodal", "tail", "episodes", "findings"}
    assert all(set(b) == {"low_s", "high_s", "events_share", "time_share"} for b in data["bands"])
    assert set(data["tail"]) == {"threshold_s", "events_share", "time_share", "events", "time_s", "dominant"}
    assert data["bimodal"] is True
    (ep,) = data["episodes"]
    assert set(ep) == {"kind", "first_col", "last_col", "start", "end", "events", "shift_octaves", "gained", "lost",
                       "time_s", "events_share", "time_share", "gained_rate", "usual_rate", "rest_ratio",
                       "began_before_s"}
    assert (ep["kind"], ep["first_col"], ep["last_col"], ep["start"], ep["end"]) == ("appear", 30, 37, 5030.0, 5038.0)
    assert ep["gained"]["low_s"] <= 80e-3 < ep["gained"]["high_s"]


def test_summary_reads_as_a_diagnosis() -> None:
    counts, times, starts, ends = synthetic()
    lines = diagnose(counts, times, LOW, HIGH, starts, ends).summary_lines()
    assert lines[0].startswith("bimodal: 95% of events in ")
    assert "own " in lines[0] and "of the time — two populations" in lines[0]
    # The tail (the 5% at 10 ms) is the slow band itself: said once, in the modes line.
    assert lines[1].startswith("episode cols 30–37 (t+30s–t+38s): a band appeared at ")
    assert len(lines) == 2


@pytest.mark.parametrize(("datasource", "causes"), [
    ("bpf", "(a cache miss, a retry, another device or path)"),
    ("oracle", "what sends waits to the slower band (reads that went to disk, a busy device or path"),
    ("spark", "what sends tasks to the slower band (skewed partitions, a spill, a slow executor, a shuffle fetch)"),
    ("training", "(a DataLoader that cannot keep up, a sync between ranks, a checkpoint)")])
def test_a_second_band_is_explained_in_its_datasource_s_terms(datasource: str, causes: str) -> None:
    counts, times, starts, ends = synthetic()
    d = diagnose(counts, times, LOW, HIGH, starts, ends, datasource=datasource, label="db file sequential read")
    (band,) = [f for f in d.findings if f.kind == "band"]
    assert causes in band.why and causes in d.summary_lines()[0]


def test_col_range_selects_columns_and_keeps_absolute_numbers() -> None:
    counts, times, starts, ends = synthetic()
    inside = diagnose(counts, times, LOW, HIGH, starts, ends, col_range=(10, 70))
    assert [(e.first_col, e.last_col) for e in inside.episodes] == [(30, 37)]
    assert "cols 30–37 (t+30s–t+38s)" in inside.summary_lines()[1]
    before = diagnose(counts, times, LOW, HIGH, starts, ends, col_range=(0, 30))
    assert before.episodes == []
    assert before.events == counts[:30].sum()


def test_unimodal_and_empty() -> None:
    rng = np.random.default_rng(2)
    counts = np.array([bin_values(rng.lognormal(np.log(1e6), 0.4, 1000))[0] for _ in range(20)])
    starts = np.arange(20.0)
    d = diagnose(counts, None, LOW, HIGH, starts, starts + 1)
    assert not d.bimodal and d.time_estimated and d.episodes == []
    assert UNIMODAL.match(d.summary_lines()[0])
    empty = diagnose(np.zeros((3, 64)), None, LOW, HIGH, np.arange(3.0), np.arange(3.0) + 1)
    assert empty.summary_lines() == ["no events"]
    assert empty.to_json() == {"bands": [], "bimodal": False, "tail": None, "episodes": [], "findings": []}


def test_a_band_is_named_by_its_core_with_the_share_of_events_inside_it() -> None:
    counts = np.zeros((40, 64))
    counts[:, 24], counts[:, 25] = 2, 45  # ~47 steps a second of 8-34 ms (ns slots), as ranks12's rank3
    counts[39, 27] = counts[39, 28] = 1  # two stray slow steps in the last column: too few for a band
    starts = np.arange(40.0)
    d = diagnose(counts, None, LOW, HIGH, starts, starts + 1)
    band = d.bands[0]
    assert len(d.bands) == 1 and band.events_share == 1.0  # the band's slots reach the strays
    inside = (band.low_s <= LOW) & (band.high_s >= HIGH)
    assert band.high_s < HIGH[28] and band.core_events_share == pytest.approx(counts[:, inside].sum() / counts.sum())
    assert band.core_events_share < 1
    assert d.summary_lines()[0].startswith("unimodal: 99.9") and "% of events in " in d.summary_lines()[0]
    assert d.to_json()["bands"][0]["events_share"] == 1.0  # the report's contract is unchanged


def test_pct() -> None:
    assert [pct(x) for x in (0.61, 0.04, 0.003, 0.0, 1.0)] == ["61%", "4%", "0.3%", "0%", "100%"]
    # a share short of all is never written 100%
    assert [pct(x) for x in (0.9991, 0.99999, 0.995, 0.99)] == ["99.9%", "99.999%", "99.5%", "99%"]
    # One event short in 10**8 still shows; a float sum's rounding (a band's time over the total) does not.
    assert [pct(1 - 1e-8), pct(1 - 1e-10), pct(1 - 2**-52)] == ["99.99999%", "100%", "100%"]


def sample(name: str) -> tuple[list[Interval], np.ndarray]:
    """Intervals of one of PyLatencyMap's sample files, and their counts (columns x slots)."""
    items = Differ().run(read_input(str(SAMPLES / name), load_registry()))
    intervals = [i for i in items if isinstance(i, Interval)]
    return intervals, np.array([i.counts for i in intervals])


def diagnose_intervals(intervals: list[Interval], counts: np.ndarray) -> Diagnosis:
    """Diagnosis with time estimated from bucket midpoints (these samples carry counts only)."""
    assert all(i.time is None for i in intervals)
    stream = intervals[0].stream
    time = counts * midpoints_seconds(stream.datasource, stream.unit)
    low, high = bounds_seconds(stream.datasource, stream.unit)
    starts, ends = np.array([i.start for i in intervals]), np.array([i.end for i in intervals])
    return diagnose(counts, time, low, high, starts, ends)


def test_diagnosis_of_pylatencymap_example_data() -> None:
    intervals, counts = sample("example_latency_data.txt")  # Oracle db file sequential read, ms
    assert len(intervals) == 71
    d = diagnose_intervals(intervals, counts)
    total = counts.sum()
    # Three modes: cached reads at 1-4 ms, disk reads around 16 ms, and a thin band of ~1 s waits.
    assert d.bimodal and len(d.bands) == 3
    cache, disk, stalls = d.bands
    assert (cache.low_s, cache.high_s) == (0.001, 0.004)
    assert cache.events_share == pytest.approx(counts[:, 1:3].sum() / total)  # slots [1, 2) and [2, 4) ms
    assert disk.low_s <= 0.016 < disk.high_s and disk.events_share > 0.7
    assert stalls.low_s >= 0.256 and stalls.events_share < 0.005 and stalls.time_share > 0.1
    # Half of the time is in the slowest reads, from inside the 16-32 ms bucket up: 15% of them.
    assert d.tail is not None and 0.016 < d.tail.threshold_s < 0.032 and not d.tail.dominant
    assert counts[:, 6:].sum() / total < d.tail.events_share < counts[:, 5:].sum() / total
    assert d.tail.events_share == pytest.approx(0.152, abs=0.001)
    # A steady real stream: no episode (its one short last column alone is not one).
    assert d.episodes == []
    lines = d.summary_lines()
    assert lines[0].startswith("multimodal (3 bands): 24% of events in 1ms–4ms, 76% in 4ms–")
    assert "own 15% of the time" in lines[0]
    # 15% of the events hold half of the time: a wide distribution, not a tail worth a line.
    assert not any("tail" in line for line in lines) and "tail" not in {f.kind for f in d.findings}
    slow = next(f for f in d.findings if f.kind == "band" and f.low_s == stalls.low_s)
    assert slow.time_share == pytest.approx(stalls.time_share) and slow.why


def test_diagnosis_of_pylatencymap_systemtap_data() -> None:
    intervals, counts = sample("test_SystemTap_data.txt")  # block I/O 8 KB reads, us
    d = diagnose_intervals(intervals, counts)
    assert not d.bimodal  # pooled, disk reads at 4-8 ms swamp the rest ...
    # ... but from column 33 on, reads of 256 us - 1 ms (cache hits) take over: an episode.
    fast = counts[:, 9:11].sum(axis=1) / counts.sum(axis=1)  # slots [256, 512) and [512, 1024) us
    assert fast[:33].max() < 0.1 and np.median(fast[33:44]) > 0.4
    (e,) = d.episodes
    assert (e.kind, e.first_col, e.last_col) == ("appear", 33, 43)
    assert e.gained is not None and e.gained.low_s <= 256e-6 and e.gained.high_s >= 1024e-6
    assert e.gained.events_share > 0.5 and e.gained.baseline_share < 0.05
    assert e.shift_octaves <= -2
    # Pooled, the slowest 2% of reads, above 31 ms (the disk's slow tail, no band of their own), hold 36% of the time.
    assert d.summary_lines()[1].startswith("heavy tail: 2% of events (≥ 31.4ms) take 36% of the time")
    assert d.summary_lines()[2].startswith("episode cols 33–43 (t+99s–t+132s): a band appeared at 128µs–2.05ms")


def test_one_far_step_is_an_outlier_band_not_a_population() -> None:
    """79 steps of ~50 ms and one of 5 s (a real `long.txt`-like training run): still two bands (a far event after
    empty octaves), but worded as one event and an outlier, not "two populations"."""
    values = np.r_[np.random.default_rng(2).uniform(40e6, 60e6, 79), 5e9]
    c, s = bin_values(values)
    starts = np.arange(5.0)
    counts, times = np.zeros((5, 64), dtype=np.int64), np.zeros((5, 64))
    counts[2], times[2] = c, s * 1e-9
    d = diagnose(counts, times, LOW, HIGH, starts, starts + 1, datasource="training")
    line = d.summary_lines()[0]
    assert line.startswith("bimodal: 99% of events in ") and ", 1 event in 4.29s–8.59s own" in line
    assert "outliers, not a population" in line and "two populations" not in line
    (band,) = [f for f in d.findings if f.kind == "band"]
    assert "1 event (1%) takes" in band.what


def fast_thin_band(ncols: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """81% of events at ~50 ms and 19% at ~0.2 ms: the thin band is the *fast* one (it owns ~0.1% of the time)."""
    rng = np.random.default_rng(4)
    counts, times = [], []
    for _ in range(ncols):
        values = np.r_[rng.lognormal(np.log(50e6), 0.3, 162), rng.lognormal(np.log(0.2e6), 0.3, 38)]
        c, s = bin_values(values)
        counts.append(c)
        times.append(s * 1e-9)
    starts = np.arange(ncols, dtype=np.float64)
    return np.array(counts), np.array(times), starts, starts + 1.0


@pytest.mark.parametrize(("datasource", "causes"), [
    ("bpf", "(cache hits, early errors, empty results)"), ("spark", "(tiny or empty partitions"),
    ("training", "(a batch already prefetched")])
def test_a_fast_thin_band_is_explained_as_fast_not_as_a_cache_miss(datasource: str, causes: str) -> None:
    counts, times, starts, ends = fast_thin_band()
    d = diagnose(counts, times, LOW, HIGH, starts, ends, datasource=datasource)
    (band,) = [f for f in d.findings if f.kind == "band"]
    assert band.high_s <= 1e-3  # the band beyond the main one is the fast one
    assert causes in band.why and "of the faster band finish" in band.why and "× sooner" in band.why
    for slow_cause in ("a cache miss", "what sends", "skewed partitions", "cannot keep up"):
        assert slow_cause not in band.why
    assert d.summary_lines()[0].startswith("bimodal: 19% of events in ") and band.why in d.summary_lines()[0]


def test_multimodal_bands_each_get_the_why_of_their_direction() -> None:
    """The Oracle sample: cached reads (fast), disk reads (main), ~1 s waits (slow): one line per band finding, each
    with its own why, and a head that does not call three bands two populations."""
    d = diagnose_intervals(*sample("example_latency_data.txt"))
    lines = d.summary_lines()
    assert lines[0].startswith("multimodal (3 bands): ") and "two populations" not in lines[0]
    assert lines[0].endswith(" — not one spread: the mean describes none of the 3 bands")
    fast, slow = lines[1], lines[2]
    assert fast.startswith("band 1ms–4ms: 24% of events") and "— a faster population than the main band" in fast
    assert "(cache hits, early errors, empty results)" in fast and "cache miss" not in fast
    assert slow.startswith("band 256ms–") and "— a slower population than the main band" in slow
    assert "(a cache miss, a retry, another device or path)" in slow and "cache hits" not in slow
    assert [f.line() for f in d.findings if f.kind == "band"] == [fast, slow]


def test_episode_lines_put_each_usual_share_beside_its_own() -> None:
    counts, times, starts, ends = synthetic()
    d = diagnose(counts, times, LOW, HIGH, starts, ends)
    line, e = d.summary_lines()[1], d.episodes[0]
    assert e.gained is not None
    assert (f"with {pct(e.gained.events_share)} of events (usually {pct(e.gained.baseline_share)}) and "
            f"{pct(e.gained.time_share)} of the time (usually {pct(e.gained.baseline_time_share)})") in line
    assert "; usually" not in line


def test_a_slow_band_that_came_in_a_few_columns_says_when() -> None:
    """Three GC pauses: said as bursts at their columns and times, not as a population spread over the run."""
    counts, times, starts, ends = paused([30, 60, 90])
    d = diagnose(counts, times, LOW, HIGH, starts, ends)
    (band,) = [f for f in d.findings if f.kind == "band"]
    assert "100% of them in cols 30, 60 and 90 (t+30s, t+60s, t+90s)" in band.what and band.why.startswith("bursts")
    assert (band.first_col, band.last_col) == (30, 90)
    assert any(line.startswith("band ") and "cols 30, 60 and 90" in line for line in d.summary_lines())


def test_bursts_on_a_period_are_said_as_a_period_and_a_steady_band_is_not_bursts() -> None:
    counts, times, starts, ends = paused(list(range(5, 120, 10)))
    (band,) = [f for f in diagnose(counts, times, LOW, HIGH, starts, ends).findings if f.kind == "band"]
    assert "on a period of 10 from col 5 (t+5s)" in band.what
    counts, times, starts, ends = paused(list(range(120)))  # slow requests in every column: a population
    d = diagnose(counts, times, LOW, HIGH, starts, ends)
    assert not any("bursts" in f.why for f in d.findings)


def test_a_tail_that_is_a_stall_is_said_once_as_the_stall() -> None:
    """Five 2 s waits in one column: the stall line says them with when; a 'heavy tail' line gave the same 45% to
    the stream's ordinary p99 latencies."""
    rng = np.random.default_rng(5)
    counts, times = [], []
    for j in range(60):
        values = rng.lognormal(np.log(1e6), 0.3, 0 if 30 <= j < 40 else 200)  # the loop held up by the waits
        if j == 40:
            values = np.r_[values, np.full(5, 2e9)]
        c, t = bin_values(values)
        counts.append(c)
        times.append(t * 1e-9)
    starts = 1_700_000_000.0 + np.arange(60, dtype=np.float64)
    d = diagnose(np.array(counts), np.array(times), LOW, HIGH, starts, starts + 1.0)
    kinds = [f.kind for f in d.findings]
    assert "stall" in kinds and "tail" not in kinds, kinds


def columns_of(values_per_column: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(counts, times, starts, ends) of 1 s columns, each binned from its values (ns), exact times."""
    binned = [bin_values(v) for v in values_per_column]
    starts = 1_700_000_000.0 + np.arange(len(binned), dtype=np.float64)
    return np.array([c for c, _ in binned]), np.array([t * 1e-9 for _, t in binned]), starts, starts + 1.0


def test_near_even_bands_give_the_finding_to_the_band_that_owns_the_time() -> None:
    """A DataLoader with one slow worker: 199 waits near 100 µs, 201 near 40 ms (99.5% of the time). The 201 were the
    main band by 2 events, so the why asked what made the fast ones fast and no line said where the time went."""
    rng = np.random.default_rng(7)
    fast, slow = np.array_split(rng.lognormal(np.log(100e3), 0.4, 199), 13), np.array_split(
        rng.lognormal(np.log(40e6), 0.4, 201), 13)
    counts, times, starts, ends = columns_of([np.r_[a, b] for a, b in zip(fast, slow, strict=True)])
    d = diagnose(counts, times, LOW, HIGH, starts, ends, datasource="training")
    (band,) = [f for f in d.findings if f.kind == "band"]
    assert band.low_s is not None and band.low_s > 1e-3 and band.time_share > 0.99  # the slow band
    assert "slower band (a DataLoader that cannot keep up" in band.why
    line = d.summary_lines()[0]
    assert re.search(r"50% in \S+ own 99(\.\d)?% of the time — ", line), line
    assert "finish" not in line


def test_a_shift_that_makes_two_bands_comes_first_and_the_band_says_so() -> None:
    """One population moving from 200 µs to 1.6 ms at col 30: its two sides are bands, but no cache miss or retry
    sends events to the slower one; the shift is the explanation, said first."""
    rng = np.random.default_rng(2)
    counts, times, starts, ends = columns_of([rng.lognormal(np.log(200e3 if j < 30 else 1.6e6), 0.3, 1000)
                                              for j in range(60)])
    d = diagnose(counts, times, LOW, HIGH, starts, ends)
    assert [f.kind for f in d.findings] == ["shift", "band"]
    (band,) = [f for f in d.findings if f.kind == "band"]
    assert band.why.startswith("the levels before and after the shift at col 30 (t+30s), not two populations")
    assert "cache miss" not in band.why
    lines = d.summary_lines()
    assert "the levels before and after the shift at col 30" in lines[0] and lines[1].startswith("shift at col 30")


def test_bursts_on_a_period_name_every_burst_even_when_fewer_reach_the_share() -> None:
    """Six equal bursts at cols 5, 15, ..., 55: five of them already hold 80% of the band, but the sixth is as much a
    burst; the finding said `83% of them in 5 columns ... to col 45`, as if the pattern had stopped."""
    counts, times, starts, ends = paused(list(range(5, 60, 10)), ncols=60)
    (band,) = [f for f in diagnose(counts, times, LOW, HIGH, starts, ends).findings if f.kind == "band"]
    assert "100% of them in 6 columns on a period of 10 from col 5 (t+5s) to col 55 (t+55s)" in band.what
    assert band.last_col == 55


def slow_percent(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """99% of events at ~100 µs and 1% at ~7 ms (41% of the time), 1,000 a second for 60 s."""
    counts, times = [], []
    for _ in range(60):
        c, s = bin_values(np.r_[rng.lognormal(np.log(100e3), 0.4, 990), rng.lognormal(np.log(7e6), 0.3, 10)])
        counts.append(c)
        times.append(s * 1e-9)
    starts = 1_700_000_000.0 + np.arange(60, dtype=np.float64)
    return np.array(counts), np.array(times), starts, starts + 1.0


def test_a_tail_from_the_main_band_s_trimmed_edge_up_is_the_slow_band_said_once() -> None:
    """The tail starts in an edge bucket of the main band (256 µs), but the slow band holds nearly all its time: `heavy
    tail: 1% of events (≥ 256µs) take 41%` after `1% in 4.1ms–16.4ms own 41%` said it twice."""
    counts, times, starts, ends = slow_percent(np.random.default_rng(8))
    d = diagnose(counts, times, LOW, HIGH, starts, ends)
    assert d.tail is not None and d.few is not None
    assert any(d.major[0].first_slot <= t.first_slot <= d.major[0].last_slot for t in (d.tail, d.few))
    assert [f.kind for f in d.findings] == ["band"], d.summary_lines()
    assert not any("tail" in line for line in d.summary_lines())


def test_the_band_line_gives_the_main_band_the_share_its_range_holds_as_the_modes_line_does() -> None:
    """~1 ms requests (1,000/s, 0.4% of them in the trimmed 256–512 µs edge) and six bursts of 200 at ~80 ms: `97% of
    events in 512µs–2.05ms` in the modes line and `main band 512µs–2.05ms: 98%` in the band line gave one range two
    shares."""
    rng = np.random.default_rng(9)
    counts, times = [], []
    for j in range(60):
        burst = rng.lognormal(np.log(80e6), 0.2, 200 if j % 10 == 5 else 0)
        c, s = bin_values(np.r_[rng.lognormal(np.log(1e6), 0.25, 1000), burst])
        counts.append(c)
        times.append(s * 1e-9)
    starts = 1_700_000_000.0 + np.arange(60, dtype=np.float64)
    d = diagnose(np.array(counts), np.array(times), LOW, HIGH, starts, starts + 1.0)
    main = max(d.major, key=lambda b: b.events)
    events, time = main.shown_shares
    assert pct(events) != pct(main.events_share)  # the edge bucket moves the rounded share
    (band,) = [f for f in d.findings if f.kind == "band"]
    assert f"(main band 524µs–2.1ms: {pct(events)} of events, {pct(time)} of the time)" in band.what
    assert d.summary_lines()[0].startswith(f"bimodal: {pct(events)} of events in 524µs–2.1ms")


@pytest.mark.parametrize(("slots", "said"), [((20,), False), ((20, 21), False), ((20, 21, 22), True)])
def test_a_modes_line_that_would_restate_a_bucket_table_of_one_or_two_rows_is_left_out_beside_it(
        slots: tuple[int, ...], said: bool) -> None:
    """`unimodal: 100% of events in 1.02ms–2.05ms` above a table of that one bucket says nothing the table does not;
    over three buckets it names the range that holds them (and the TUI, with no table, keeps it)."""
    counts = np.zeros((5, 64))
    counts[:, list(slots)] = 100
    starts = np.arange(5.0)
    d = diagnose(counts, None, LOW, HIGH, starts, starts + 1)
    assert d.summary_lines()[0].startswith("unimodal: 100% of events in ")
    assert any(line.startswith("unimodal:") for line in d.summary_lines(table=True)) is said
    assert d.summary_lines(table=True)[int(said):] == d.summary_lines()[1:]


def test_a_bimodal_stream_of_two_buckets_keeps_its_modes_line_beside_the_table() -> None:
    counts = np.zeros((5, 64))
    counts[:, 10], counts[:, 20] = 100, 100
    starts = np.arange(5.0)
    assert diagnose(counts, None, LOW, HIGH, starts, starts + 1).summary_lines(table=True)[0].startswith("bimodal: ")


def test_the_modes_line_says_bands_below_the_bimodal_bar_without_calling_them_minor() -> None:
    """A band under 3% of the events and 10% of the time is too small to count as a mode: `minor` is what a band
    finding calls a slower band of little time beside one holding most of it, another thing."""
    counts = np.zeros((5, 64))
    counts[:, 2], counts[:, 10], counts[:, 20] = 10, 1000, 100
    starts = np.arange(5.0)
    line = diagnose(counts, None, LOW, HIGH, starts, starts + 1).summary_lines()[0]
    assert ", plus 1 band too small to count as a mode (0.9% of events) — " in line
    assert "minor" not in line


def test_the_tail_s_threshold_lies_within_the_largest_value_seen() -> None:
    """h2's basic.hlog: `tail.threshold_s` 12.3 s where the log's largest value is 10.0 s (its bucket [8.59 s,
    17.2 s) read log-uniform). Given the values seen, it lies among them."""
    values = np.r_[np.full(2000, 150e3), 10e9]
    counts, sums = bin_values(values)
    extremes = np.stack([np.where(counts > 0, LOW, np.nan), np.where(counts > 0, HIGH, np.nan)])
    extremes[:, 34] = (9.9992, 10.0076)  # the slot of 10 s: the one value's sub-bucket
    starts = np.arange(2.0)
    blind = diagnose(np.stack([counts, counts]), np.stack([sums, sums]) * 1e-9, LOW, HIGH, starts, starts + 1)
    d = diagnose(np.stack([counts, counts]), np.stack([sums, sums]) * 1e-9, LOW, HIGH, starts, starts + 1,
                 seen_min=extremes[0], seen_max=extremes[1])
    assert blind.tail is not None and blind.tail.threshold_s > 10.0076
    assert d.tail is not None and 9.9992 <= d.tail.threshold_s <= 10.0076
