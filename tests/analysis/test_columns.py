"""A stream's diagnosis read from its history a chunk at a time is the dense arrays' diagnosis, bit for bit, and
holds no dense matrix of every column."""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.analysis import columns as analysis_columns
from latencymap.analysis.columns import KEPT_BYTES, history_columns
from latencymap.analysis.diagnosis import Diagnosis, diagnose
from latencymap.analysis.summary import stream_diagnosis
from latencymap.core import chunked, columns
from latencymap.core.accumulator import GAP, StreamHistory, set_chunk_columns
from latencymap.core.buckets import NSLOTS, midpoints_seconds
from latencymap.core.model import StreamId


@contextmanager
def chunks_of(history: int, rows: int, kept: int = KEPT_BYTES) -> Iterator[None]:
    """Histories sealed every `history` columns, and analyses reading `rows` columns at a time, a history read whole
    when its columns fit in `kept` bytes."""
    before = columns.CHUNK_COLUMNS, chunked.ROWS, analysis_columns.KEPT_BYTES
    set_chunk_columns(history)
    chunked.ROWS = rows
    analysis_columns.KEPT_BYTES = kept
    try:
        yield
    finally:
        columns.CHUNK_COLUMNS, chunked.ROWS, analysis_columns.KEPT_BYTES = before


def dense_diagnosis(hist: StreamHistory) -> Diagnosis:
    """The diagnosis of the history's dense (columns, 64) arrays, as `stream_diagnosis` computed it before."""
    return diagnose(hist.counts, hist.time, hist.low, hist.high, hist.meta_in("start"), hist.meta_in("end"),
                    datasource=hist.stream.datasource, exact=hist.exact, gaps=(hist.meta_in("flags") & GAP) != 0,
                    seen_max=(hist.seen or (None, None))[1])


def planted(rng: np.random.Generator, n: int, rate: float, lo: int, width: int) -> np.ndarray:
    """(n, 64) counts: a steady shape over `width` slots from `lo`, with what a diagnosis finds planted in it:
    a slow band for a while (an episode), a few far waits (a stall), empty columns (a silence), the shape moving
    up by a slot per third of the run (a drift or a shift), and a burst of a second band."""
    counts = np.zeros((n, NSLOTS), dtype=np.int64)
    shape = rng.dirichlet(np.ones(width))
    counts[:, lo: lo + width] = rng.poisson(rate * shape, (n, width))
    if n == 0:
        return counts
    for _ in range(int(rng.integers(0, 4))):  # episodes
        a = int(rng.integers(0, n))
        counts[a: a + int(rng.integers(2, 40)), int(rng.integers(0, NSLOTS))] += int(rng.poisson(rate / 3) + 1)
    for _ in range(int(rng.integers(0, 3))):  # stalls: far waits in a column or two
        a = int(rng.integers(0, n))
        counts[a: a + int(rng.integers(1, 3)), min(NSLOTS - 1, lo + width + int(rng.integers(3, 12)))] += 1
    if rng.random() < 0.4:  # a silence
        a = int(rng.integers(0, n))
        counts[a: a + int(rng.integers(3, 30))] = 0
    if rng.random() < 0.3:  # the shape moves up
        for k, part in enumerate(np.array_split(np.arange(n), 3)):
            counts[part] = np.roll(counts[part], k, axis=1)
    if rng.random() < 0.2:  # a counter gone wrong: negative counts, which the diagnosis clips
        counts[int(rng.integers(0, n)), lo] = -int(rng.integers(1, 50))
    return counts


@st.composite
def histories(draw: st.DrawFn) -> StreamHistory:
    """A stream's history: random shapes with findings planted, exact or estimated times, gaps, columns of
    uneven length, appended in batches; sometimes a column limit that drops the oldest."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(0, 400))
    lo = draw(st.integers(0, 60))
    width = draw(st.integers(1, NSLOTS - lo))
    counts = planted(rng, n, draw(st.sampled_from([0.5, 4.0, 40.0, 2000.0])), lo, min(width, 12))
    stream = StreamId("s", draw(st.sampled_from(["bpf", "training", "spark"])), "microsec")
    exact = draw(st.sampled_from(["none", "all", "some"]))
    time, timed = None, None
    if exact != "none":
        time = counts * midpoints_seconds(stream.datasource, stream.unit) * rng.uniform(0.6, 1.4, counts.shape)
        timed = np.ones(n, dtype=bool) if exact == "all" else rng.random(n) < 0.7
    dur = rng.choice([1.0, 1.0, 1.0, 0.5, 2.5], n)
    end = 1_790_000_000.0 + np.cumsum(dur)
    gap = rng.random(n) < draw(st.sampled_from([0.0, 0.05]))
    hist = StreamHistory(stream, draw(st.one_of(st.none(), st.integers(5, 400))))
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=4))) | {0, n})
    for a, b in itertools.pairwise(cuts):
        rows = slice(a, b)
        hist.extend_columns(counts[rows], None if time is None else time[rows], None if timed is None else timed[rows],
                            end[rows] - dur[rows], end[rows], dur[rows], np.zeros(b - a, dtype=bool), gap[rows], "")
    return hist


@settings(max_examples=120, deadline=None)
@given(data=st.data(), history=st.integers(1, 64), rows=st.integers(1, 50), kept=st.sampled_from([0, KEPT_BYTES]))
def test_a_history_read_in_chunks_is_diagnosed_as_its_dense_arrays(data: st.DataObject, history: int, rows: int,
                                                                   kept: int) -> None:
    """Read a chunk at a time (`kept` 0: as a history longer than `KEPT_BYTES`), or whole, once."""
    with chunks_of(history, rows, kept):
        hist = data.draw(histories())
        cols = history_columns(hist)
        assert cols.whole == (kept > 0 or hist.n == 0)
        streamed = diagnose(cols, None, hist.low, hist.high, hist.meta_in("start"),
                            hist.meta_in("end"), datasource=hist.stream.datasource, exact=hist.exact,
                            gaps=(hist.meta_in("flags") & GAP) != 0, seen_max=(hist.seen or (None, None))[1])
        dense = dense_diagnosis(hist)
    assert repr(streamed) == repr(dense)  # every field, floats to the last bit
    assert streamed.summary_lines() == dense.summary_lines()


def day(seed: int = 3) -> StreamHistory:
    """A day of one-second columns of one stream (6 buckets, as `hn3/gen_day.py` writes it), with an hour of a slow
    band, a stall and a silence planted."""
    rng = np.random.default_rng(seed)
    n = 86_400
    counts = np.zeros((n, NSLOTS), dtype=np.int64)
    counts[:, 5:11] = rng.poisson([5, 40, 80, 40, 10, 1], (n, 6))
    counts[30_000:33_600, 14] += rng.poisson(30, 3600)  # an hour of a slow band
    counts[50_000, 22] += 2  # two waits of seconds ...
    counts[49_995:50_000] = 0  # ... that held the stream up
    counts[60_000:60_300] = 0  # five minutes without events
    hist = StreamHistory(StreamId("day", "bpf", "microsec"))
    end = 1_795_000_001.0 + np.arange(n, dtype=np.float64)
    ones = np.ones(n)
    hist.extend_columns(counts, None, None, end - ones, end, ones, np.zeros(n, dtype=bool), np.zeros(n, dtype=bool),
                        "")
    return hist


@pytest.fixture(scope="module")
def day_history() -> StreamHistory:
    return day()


def test_a_day_long_stream_is_diagnosed_as_its_dense_arrays(day_history: StreamHistory) -> None:
    streamed = stream_diagnosis(day_history)
    assert {e.kind for e in streamed.episodes} >= {"appear", "stall"} and streamed.silences
    assert repr(streamed) == repr(dense_diagnosis(day_history))


def test_a_day_long_streams_diagnosis_holds_no_dense_matrix() -> None:
    hist = day(4)  # not diagnosed yet (each history's diagnosis is kept)
    tracemalloc.start()
    try:
        stream_diagnosis(hist)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # one (86,400, 64) float64 matrix is 44 MB, and the dense diagnosis held several (about 200 MB)
    assert peak < 20e6


def test_a_short_history_is_read_once_for_every_pass_of_its_diagnosis(monkeypatch: pytest.MonkeyPatch) -> None:
    """The diagnosis goes over the columns pass after pass: a history whose columns fit in `KEPT_BYTES` is read from
    its chunks about once (the ranges that straddle two chunks again), the same diagnosis as its dense arrays'."""
    rng = np.random.default_rng(7)
    n = 5 * chunked.ROWS - 100
    counts = planted(rng, n, 40.0, 5, 10)
    hist = StreamHistory(StreamId("short", "bpf", "microsec"))
    end = 1_795_000_001.0 + np.arange(n, dtype=np.float64)
    ones = np.ones(n)
    hist.extend_columns(counts, None, None, end - ones, end, ones, np.zeros(n, dtype=bool), np.zeros(n, dtype=bool),
                        "")
    reads: list[tuple[int, int]] = []
    counts_in = hist.counts_in

    def counted(cols: slice = slice(None)) -> np.ndarray:
        reads.append((cols.start, cols.stop))
        return counts_in(cols)

    monkeypatch.setattr(hist, "counts_in", counted)
    streamed = stream_diagnosis(hist)
    monkeypatch.setattr(hist, "counts_in", counts_in)
    assert len(reads) <= 2 * 5  # 5 chunks; without keeping them, every pass reads them all again (over 80 reads)
    assert repr(streamed) == repr(dense_diagnosis(hist))
