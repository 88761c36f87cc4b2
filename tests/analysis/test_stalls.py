"""Stalls: only against columns that have events, only when they matter against wall time, and worded plainly."""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
import pytest
from skips_support import requires_module

from latencymap.analysis.diagnosis import diagnose
from latencymap.analysis.findings import dur, times
from latencymap.analysis.stalls import find_stalls
from latencymap.core.buckets import bin_extremes, bin_values, bounds_seconds
from latencymap.core.percentiles import percentile_estimates
from latencymap.instrument import Timings, diagnose_phase
from latencymap.sinks import MemorySink

LOW, HIGH = bounds_seconds("bpf", "nanosec")


def stream(columns: dict[int, np.ndarray], ncols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(counts, time in s, starts, ends) of 1 s columns holding the given values (ns); the others are empty."""
    counts, spent = np.zeros((ncols, len(LOW))), np.zeros((ncols, len(LOW)))
    for j, values in columns.items():
        c, s = bin_values(values)
        counts[j], spent[j] = c, s * 1e-9
    starts = np.arange(ncols, dtype=np.float64)
    return counts, spent, starts, starts + 1.0


def steady(scale_ns: float, far_ns: float, ncols: int = 10, at: int = 5, n: int = 50) -> dict[int, np.ndarray]:
    """`n` events of ~`scale_ns` per column, and one of `far_ns` in column `at`."""
    rng = np.random.default_rng(1)
    out = {j: rng.lognormal(np.log(scale_ns), 0.2, n) for j in range(ncols)}
    out[at] = np.r_[out[at], far_ns]
    return out


def test_a_pause_of_microseconds_in_a_second_long_column_is_not_a_stall() -> None:
    """One 25 µs event among ~1 µs ones (HdrHistogram's int_tagged_us `write`): far above the usual band and 33% of
    its column's time spent, but 0.0025% of its wall time. The same shape 1,000x longer (a 25 ms pause in a 1 s
    column, 2.5% of it) is a stall."""
    short = stream(steady(1e3, 25e3), 10)
    assert find_stalls(*short[:2], LOW, HIGH, *short[2:]) == []
    long = stream(steady(1e6, 25e6), 10)
    (stall,) = find_stalls(*long[:2], LOW, HIGH, *long[2:])
    assert (stall.first_col, stall.last_col, stall.events) == (5, 5, 1)


def test_events_in_a_single_column_are_never_a_stall() -> None:
    """bpftrace's cumulative `sys_exit_read` map: every event in column 0 (the others empty, the workload done). The
    far reads are the whole stream's third band, not a pause inside it."""
    rng = np.random.default_rng(2)
    values = np.r_[rng.lognormal(np.log(100), 0.2, 2000), rng.lognormal(np.log(10e6), 0.1, 5)]  # 5 far: 50 ms
    counts, spent, starts, ends = stream({0: values}, 3)
    assert find_stalls(counts, spent, LOW, HIGH, starts, ends) == []
    assert not [f for f in diagnose(counts, spent, LOW, HIGH, starts, ends).findings if f.kind == "stall"]


def test_far_events_in_every_column_that_has_events_are_not_a_stall() -> None:
    """40 columns, events only in columns 10 and 11, far events in both: empty columns do not make them rare."""
    rng = np.random.default_rng(3)
    cols = {j: np.r_[rng.lognormal(np.log(1e6), 0.2, 200), 200e6] for j in (10, 11)}
    counts, spent, starts, ends = stream(cols, 40)
    assert find_stalls(counts, spent, LOW, HIGH, starts, ends) == []


def test_a_stall_line_names_one_column_and_the_p50_it_compares_to() -> None:
    cols = steady(1e6, 2e9, ncols=20, at=7)
    cols[6] = np.zeros(0)  # the 2 s wait held the stream up
    counts, spent, starts, ends = stream(cols, 20)
    d = diagnose(counts, spent, LOW, HIGH, starts, ends)
    (stall,) = d.stalls
    line = next(x for x in d.summary_lines() if x.startswith("stall "))
    assert line.startswith("stall col 7 (") and "cols 7–7" not in line
    p50 = float(percentile_estimates(counts.sum(axis=0), LOW, HIGH, (0.5,), times=spent.sum(axis=0))[0])
    assert stall.shift_octaves == pytest.approx(np.log2(stall.time_s / stall.events / p50))
    assert f"its wait ({dur(stall.time_s)}) is {times(stall.time_s / p50)} the stream's p50 ({dur(p50)})" in line
    assert "the median" not in line


def test_a_stall_compares_its_wait_with_the_p50_the_header_prints() -> None:
    """The header's p50 reads the rows within the values seen in their buckets (raw values: 1.00-1.01 ms in
    [524 µs, 1.05 ms)), or comes from the source's own buckets (HdrHistogram's, Prometheus' bounds): given
    (`median_s`), that is the p50 the stall's shift and line start from, not the rows' spread over the whole bucket."""
    rng = np.random.default_rng(5)
    cols = {j: rng.uniform(1.0e6, 1.01e6, 50) for j in range(20)}
    cols[6], cols[7] = np.zeros(0), np.r_[cols[7], 2e9]
    counts, spent, starts, ends = stream(cols, 20)
    extremes = bin_extremes(np.concatenate(list(cols.values()))) * 1e-9
    seen = (extremes[0], extremes[1])
    header = float(percentile_estimates(counts.sum(axis=0), LOW, HIGH, (0.5,), times=spent.sum(axis=0),
                                        seen=seen)[0])
    rows = float(percentile_estimates(counts.sum(axis=0), LOW, HIGH, (0.5,), times=spent.sum(axis=0))[0])
    assert dur(header) != dur(rows)
    for median, kwargs in ((header, {"seen_min": seen[0], "seen_max": seen[1]}), (1.2e-3, {"median_s": 1.2e-3})):
        d = diagnose(counts, spent, LOW, HIGH, starts, ends, **kwargs)
        (stall,) = d.stalls
        assert stall.shift_octaves == pytest.approx(np.log2(stall.time_s / stall.events / median))
        (line,) = [f.line() for f in d.findings if f.kind == "stall"]
        assert f"is {times(stall.time_s / median)} the stream's p50 ({dur(median)})" in line, line


def gc_paused(long_column: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A training loop's steps, ~70 of ~10 ms a second in 1 s columns, held 5.7 s by a GC pause that ends in col 12.
    `long_column`: no record came during the pause, so col 12 spans it (t+12.16 s to t+18.07 s, as in the real
    recording); else cols 12–16 are empty 1 s columns and the 5.7 s step ends in col 17."""
    rng = np.random.default_rng(4)
    ncols = 30
    cols = {j: rng.lognormal(np.log(10e6), 0.1, 70) for j in range(ncols)}
    starts = np.arange(ncols, dtype=np.float64)
    ends = starts + 1.0
    if long_column:
        cols[12] = np.r_[rng.lognormal(np.log(10e6), 0.1, 15), 5.71e9]
        starts[12], ends[12:] = 12.16, ends[12:] + 5.07
        starts[13:] += 5.07
    else:
        for j in range(12, 17):
            cols[j] = np.zeros(0)
        cols[17] = np.r_[cols[17], 5.71e9]
    counts, spent = np.zeros((ncols, len(LOW))), np.zeros((ncols, len(LOW)))
    for j, values in cols.items():
        c, s = bin_values(values)
        counts[j], spent[j] = c, s * 1e-9
    return counts, spent, starts, ends


def test_a_pause_inside_its_long_column_is_said_with_that_column_s_times_and_once() -> None:
    """The GC pause of the real recording: its column's times, not its start less the wait (over 5 full columns),
    and no silence beside it (the pause is why no step was timed)."""
    counts, spent, starts, ends = gc_paused(long_column=True)
    d = diagnose(counts, spent, LOW, HIGH, starts, ends, datasource="training")
    (stall,) = d.stalls
    assert (stall.first_col, stall.last_col, stall.start, stall.end) == (12, 12, 12.16, ends[12])
    assert stall.began_before is None  # the wait fits in its column
    assert [f.kind for f in d.findings] == ["stall"]
    assert d.findings[0].what.startswith("stall col 12 (t+12.16s–t+18.07s): 1 event of ")


def test_a_pause_longer_than_its_column_says_its_wait_began_before_it_and_claims_no_other_column() -> None:
    counts, spent, starts, ends = gc_paused(long_column=False)
    d = diagnose(counts, spent, LOW, HIGH, starts, ends, datasource="training")
    (stall,) = d.stalls
    assert (stall.first_col, stall.last_col, stall.start, stall.end) == (17, 17, 17.0, 18.0)
    assert stall.began_before == pytest.approx((4.71, 5.71), abs=1e-3)
    assert [f.kind for f in d.findings] == ["stall"]  # cols 12–16 held no step: the pause's wait, said once
    what = d.findings[0].what
    assert what.startswith("stall col 17 (t+17s–t+18s; the wait ending in col 17 began 4.71s–5.71s before it): ")
    assert d.to_json()["episodes"][0]["began_before_s"] == pytest.approx([4.71, 5.71], abs=1e-3)


@pytest.mark.parametrize(("first_wait_ns", "stall"), [(8e6, False), (25e6, True)])
def test_a_short_first_column_weighs_its_waits_against_the_median_column(first_wait_ns: float, stall: bool) -> None:
    """A training loop's `data_wait` (~206 µs, ~47 a second, 1 s columns) whose first column runs from the first
    timing to the first flush, 0.12 s, and holds the loop's first `next()`. 8 ms is 6.7% of that column but 0.8% of
    a usual one: no pause; 25 ms is 2.5% of a usual column: a stall, short column or not."""
    rng = np.random.default_rng(7)
    cols = {j: rng.lognormal(np.log(206e3), 0.3, 47) for j in range(1, 22)}
    cols[0] = np.r_[rng.lognormal(np.log(206e3), 0.3, 6), first_wait_ns]
    counts, spent, starts, ends = stream(cols, 22)
    starts[0] = ends[0] - 0.12
    found = find_stalls(counts, spent, LOW, HIGH, starts, ends)
    assert [(s.first_col, s.events) for s in found] == ([(0, 1)] if stall else [])


@pytest.mark.parametrize(("datasource", "most"), [("spark", 3.61), ("spark-no-seen", 4.294967296), ("training", 7.17)])
def test_a_stall_s_waits_began_at_most_the_longest_one_before_it_unless_they_run_one_after_another(
        datasource: str, most: float) -> None:
    """Two parallel Spark warm-up tasks of 3.61 s and 3.56 s end in a 1 s column 0: they began at most 3.61 s (the
    largest value seen; without one, its bucket's top) before it, not 7.17 s, their sum. A training loop's steps run
    one after another: there the sum is possible."""
    rng = np.random.default_rng(5)
    cols = {j: rng.lognormal(np.log(50e6), 0.3, 30) for j in range(1, 30)}
    cols[0] = np.r_[rng.lognormal(np.log(50e6), 0.3, 3), 3.61e9, 3.56e9]  # few others ended: a loop held up
    counts, spent, starts, ends = stream(cols, 30)
    seen = np.full(len(LOW), np.nan)
    seen[np.searchsorted(LOW, 3.61, side="right") - 1] = 3.61
    (stall,) = find_stalls(counts, spent, LOW, HIGH, starts, ends, datasource=datasource.removesuffix("-no-seen"),
                           seen_max=None if datasource.endswith("no-seen") else seen)
    assert stall.first_col == 0 and stall.began_before is not None
    assert stall.began_before == pytest.approx((2.585, most))


def test_a_stall_in_the_open_top_bucket_is_written_open_and_its_waits_reach_the_largest_value_seen() -> None:
    """Waits past the top bucket's nominal end (2**63 ns, 106,752 days), their largest seen (5e19 ns, 578,704 days):
    the stall said `4 events of 53,376 days–106,752 days` and that the wait `began 245,949 days–106,752 days before`
    (a range running backwards: the longest wait was cut at the nominal end). The top bucket is open: `≥53,376
    days`, and the longest wait is the largest value seen; not known, it is bounded only by the column's time."""
    big = np.array([6e18, 9e18, 2e19, 5e19])
    cols = steady(200.0, 0.0, ncols=20, at=10, n=200)
    cols[10] = np.r_[cols[10][:-1], big]
    cols.update({j: np.zeros(0) for j in range(10)})  # the waits held the stream up: nothing completed before them
    counts, spent, starts, ends = stream(cols, 20)
    seen_max = np.full(len(LOW), np.nan)
    seen_max[-1] = 5e19 * 1e-9
    for known in (seen_max, None):
        d = diagnose(counts, spent, LOW, HIGH, starts, ends, seen_max=known)
        (line,) = [f.line() for f in d.findings if f.kind == "stall"]
        assert "4 events of ≥53,376 days" in line and "106,752 days" not in line, line
        assert "began 245,949 days–578,704 days before it" in line if known is not None else \
            "began 245,949 days–983,796 days before it" in line, line


def concurrent(ncols: int = 60, rate: int = 1000) -> dict[int, np.ndarray]:
    """~1 ms requests, `rate` a second in every 1 s column."""
    rng = np.random.default_rng(11)
    return {j: rng.lognormal(np.log(1e6), 0.2, rate) for j in range(ncols)}


@pytest.mark.parametrize("stopped", [False, True])
def test_one_long_request_is_a_stall_only_when_the_stream_stopped_completing_meanwhile(stopped: bool) -> None:
    """One 20 s request ending in col 45 while 1,000 a second went on completing in every column: nothing was held
    up (it was called `a pause`). The same request in a stream that completed nothing while it waited is one."""
    cols = concurrent()
    cols[45] = np.r_[cols[45], 20e9]
    if stopped:
        cols.update({j: np.zeros(0) for j in range(26, 45)})
    counts, spent, starts, ends = stream(cols, 60)
    d = diagnose(counts, spent, LOW, HIGH, starts, ends)
    assert [(s.first_col, s.events) for s in d.stalls] == ([(45, 1)] if stopped else [])
    assert any(line.startswith("stall col 45") for line in d.summary_lines()) == stopped


@pytest.mark.parametrize("seed", range(8))
def test_far_values_of_a_power_law_at_a_steady_rate_are_no_stall(seed: int) -> None:
    """Pareto (alpha 1.5) latencies, 1,000 a second, each drawn on its own: one 131–262 ms value in a column owns a
    quarter of its time, but the stream's rate never dropped (6 seeds of 8 had `a pause ... held the stream up`)."""
    rng = np.random.default_rng(seed)
    cols = {j: 100e3 * (1 + rng.pareto(1.5, 1000)) for j in range(60)}
    counts, spent, starts, ends = stream(cols, 60)
    assert diagnose(counts, spent, LOW, HIGH, starts, ends).stalls == []


def _epoch_loop(epochs: int) -> tuple[Any, list[tuple[float, int]]]:
    """A real training loop (a torch DataLoader, 2 workers taking 1 s to start each epoch, 4 ms steps), each `next()`
    timed as the loop saw it, an epoch's first from `iter()` on, into 0.5 s columns (a loop timed by hand, or a
    recording made before `timed_iter` kept each epoch's start and end apart): its diagnosis, and each epoch's first
    wait as the loop measured it (when it ended, ns)."""
    from torch.utils.data import DataLoader

    sink = MemorySink()
    timings = Timings(sink, run="loop", rank=0, interval=0.5)
    loader = DataLoader(list(range(1920)), batch_size=4, num_workers=2, worker_init_fn=_slow_start)
    firsts = []
    for _epoch in range(epochs):
        start = time.perf_counter_ns()
        it = iter(loader)
        for i in itertools.count():
            try:
                next(it)
            except StopIteration:
                timings.record("data_wait", (time.perf_counter_ns() - start) / 1e9)
                break
            waited = time.perf_counter_ns() - start
            timings.record("data_wait", waited / 1e9)
            if i == 0:
                firsts.append((time.time(), waited))
            time.sleep(0.004)
            start = time.perf_counter_ns()
    timings.close()
    return diagnose_phase(sink.intervals)["loop/rank0/data_wait"], firsts


def _slow_start(_worker: int) -> None:
    """A worker that takes 1 s to start (it opens its shards)."""
    time.sleep(1.0)


@pytest.mark.slow
@pytest.mark.parametrize("epochs", [3, 5])
@requires_module("torch", remedy=".ci/install-system.sh installs torch==2.13.0 (CPU)")
def test_a_stall_at_every_epoch_s_start_is_said_each_time_and_as_one_recurring_stall(epochs: int) -> None:
    """Each epoch waits 1 s for its workers: far waits in 5 columns of ~35 were more than 10% of them (or 3), so 5
    epochs were called a steady thin band ("bimodal ... two populations", no times) while 3 were three stalls. Each
    shows the ~100 waits it held back, so both are a stall per epoch and one recurring stall."""
    for _ in range(3):  # a loaded machine stretches the loop's usual waits too: run it again, up to 3 times
        d, firsts = _epoch_loop(epochs)
        if all(len([e for e in d.stalls if e.start <= ended <= e.end + 0.01]) == 1 for ended, _ in firsts):
            break
    for ended, waited in firsts:  # each epoch's first wait, as the loop measured it, is in a stall that ends then
        (stall,) = [e for e in d.stalls if e.start <= ended <= e.end + 0.01]
        assert stall.time_s >= waited / 1e9 - 0.01, (stall, waited)
    if len(d.stalls) == epochs:  # a loaded machine pauses the loop too: those stalls come at no period
        (line,) = [x for x in d.summary_lines() if x.startswith("recurring stall: ")]
        assert line.startswith(f"recurring stall: {epochs} times, ~") and "one every ~" in line


@pytest.mark.parametrize("share", [0.6, 0.9])
def test_a_thin_band_of_far_waits_in_most_columns_is_a_band_not_a_recurring_stall(share: float) -> None:
    """A loop (200 waits of ~1 ms a second) with one 300 ms wait in most columns: each holds back ~60 waits, yet a
    population present in most columns is a band, however much each one held up."""
    rng = np.random.default_rng(5)
    cols = {j: np.r_[rng.lognormal(np.log(1e6), 0.2, 200 if hit else 260), [300e6] if hit else []]
            for j, hit in enumerate(rng.random(40) < share)}
    counts, spent, starts, ends = stream(cols, 40)
    d = diagnose(counts, spent, LOW, HIGH, starts, ends, datasource="training")
    assert d.stalls == [] and d.bimodal
    assert not [x for x in d.summary_lines() if x.startswith(("stall", "recurring"))]


def test_far_waits_in_a_few_columns_each_holding_the_loop_up_are_stalls_however_many() -> None:
    """Eight 1.5 s waits, one every 5 columns of 40, each where 1.5 s of the usual 200 waits a second are missing:
    eight stalls and one recurring stall (they were a thin band: more than 10% of the columns); the same waits in a
    stream that completed its usual rate through them are none."""
    rng = np.random.default_rng(6)
    for held in (True, False):
        cols = {j: rng.lognormal(np.log(1e6), 0.2, 200) for j in range(40)}
        for j in range(2, 40, 5):
            cols[j] = np.r_[cols[j][:50] if held else cols[j], 1.5e9]
        counts, spent, starts, ends = stream(cols, 40)
        d = diagnose(counts, spent, LOW, HIGH, starts, ends, datasource="training")
        assert [s.first_col for s in d.stalls] == (list(range(2, 40, 5)) if held else [])
        lines = [x for x in d.summary_lines() if x.startswith("recurring stall: ")]
        assert len(lines) == held and (not held or lines[0].startswith(
            "recurring stall: 8 times, ~1.5s waited each, one every ~5s (cols 2, 7, 12, 17, 22, 27, 32, 37): 12s = "))


def test_a_jhiccup_log_s_stalls_say_their_hiccups_not_time_waited() -> None:
    """The eight 1.5 s pauses above as hiccups of a jHiccup log (`measures`), whose summary says its time is `of
    hiccups` (jHiccup's sum, not time waited): each stall and the recurring one said `waited`, and `wait` for one."""
    rng = np.random.default_rng(6)
    cols = {j: rng.lognormal(np.log(1e6), 0.2, 200) for j in range(40)}
    for j in range(2, 40, 5):
        cols[j] = np.r_[cols[j][:50], 1.5e9]
    counts, spent, starts, ends = stream(cols, 40)
    said = [f.what for f in diagnose(counts, spent, LOW, HIGH, starts, ends, measures="jhiccup").findings]
    stalls = [x for x in said if x.startswith("stall ")]
    assert len(stalls) == 8 and all(" 1.5s of hiccups = " in x and "; its hiccup (1.5s) is " in x for x in stalls), \
        stalls
    assert stalls[0].startswith("stall col 2 (t+2s–t+3s; the hiccup ending in col 2 began 500ms–1.5s before it): ")
    (recurring,) = [x for x in said if x.startswith("recurring stall: ")]
    assert recurring.startswith("recurring stall: 8 times, ~1.5s of hiccups each, one every ~5s "), recurring
    assert not [x for x in said if "wait" in x], said
