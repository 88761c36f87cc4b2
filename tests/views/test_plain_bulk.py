"""Plain frames drawn in bulk are byte for byte the frames `PlainRenderer` draws one after another."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from frames_support import generated, with_notices
from resets_support import restarted_copy

from latencymap.cli.common import REGISTRY
from latencymap.core.accumulator import Accumulator, HistoryLimit
from latencymap.core.model import Interval, Notice, SourceBuckets, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.views import bulk_rows, plain_bulk, printer
from latencymap.views.frame import RowFit, row_range
from latencymap.views.options import ViewOptions
from latencymap.views.plain import PlainRenderer
from latencymap.views.plain_bulk import BulkFrames

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
OPTIONS = {
    "default": ViewOptions(),
    "no colour, narrow": ViewOptions(num_records=7, color=False),
    "wide": ViewOptions(num_records=150),
    "one column": ViewOptions(num_records=1),
    "pinned": ViewOptions(num_records=30, min_bucket=3, max_bucket=14, frequency_maxval=40.0,
                          intensity_maxval=1e-3),
}


def fixture(name: str) -> list[Interval | Notice]:
    return list(input_flow([str(FIXTURES / name)], REGISTRY))


def one_by_one(items: Sequence[Interval | Notice], opts: ViewOptions) -> tuple[bytes, PlainRenderer]:
    """Frame after frame, as the plain view drew them before bulk frames."""
    acc, renderer, out = Accumulator(), PlainRenderer(opts), []
    for item in items:
        acc.add([item])
        if isinstance(item, Interval):
            out.append(renderer.render(acc))
    return "".join(out).encode(), renderer


def in_bulk(items: Sequence[Interval | Notice], opts: ViewOptions, chunk: int) -> tuple[bytes, PlainRenderer, int]:
    """The same frames with `BulkFrames` taking runs of up to `chunk` intervals; also how many it drew."""
    acc, renderer = Accumulator(), PlainRenderer(opts)
    bulk, out, drawn, at = BulkFrames(renderer), [], 0, 0
    while at < len(items):
        item = items[at]
        run = [x for x in items[at: at + chunk] if isinstance(x, Interval)]
        run = run[: next((i for i, x in enumerate(items[at: at + chunk]) if isinstance(x, Notice)), len(run))]
        count = bulk.ready(acc, run) if run and not isinstance(item, Notice) else 0
        if count:
            out.append(bulk.draw(acc, run[:count]).tobytes())
            drawn, at = drawn + count, at + count
            continue
        acc.add([item])
        if isinstance(item, Interval):
            out.append(renderer.render(acc).encode())
        at += 1
    return b"".join(out), renderer, drawn


def first_difference(a: bytes, b: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"at byte {at} of {len(a)}/{len(b)}:\n{a[max(0, at - 200): at + 80]!r}\n{b[max(0, at - 200): at + 80]!r}"


STREAMS = {
    "oracle sample": lambda: fixture("pylatencymap/example_latency_data.txt"),
    "systemtap sample": lambda: fixture("pylatencymap/test_SystemTap_data.txt"),
    "generated": lambda: generated(200),
    "generated, exact times from 100": lambda: generated(160, seed=3, exact_from=100),
    "generated, notices": lambda: with_notices(generated(150, seed=11, unit="nanosec"), 40),
    # sources without date text (hlog, bcc, bpftrace, 10046): the footer shows each column's end as a date
    "generated, no date text mostly": lambda: [dataclasses.replace(iv, date="") if i % 3 else iv
                                               for i, iv in enumerate(generated(120, seed=5))],
    "hlog, no date text": lambda: fixture("hdrhistogram/jHiccup-2.0.7S.logV2.hlog"),
}


@pytest.mark.parametrize("stream", list(STREAMS))
@pytest.mark.parametrize("option", list(OPTIONS))
def test_bulk_frames_are_the_same_bytes_and_leave_the_same_state(stream: str, option: str) -> None:
    items = STREAMS[stream]()
    want, ref = one_by_one(items, dataclasses.replace(OPTIONS[option]))
    intervals = sum(isinstance(x, Interval) for x in items)
    for chunk in (1024, 7):
        got, renderer, drawn = in_bulk(items, dataclasses.replace(OPTIONS[option]), chunk)
        assert got == want, f"{stream}, {option}, runs of {chunk}: {first_difference(got, want)}"
        assert drawn == intervals - 1  # all but the first frame
        ((s, totals),) = renderer.totals.items()
        assert totals.counts.tolist() == ref.totals[s].counts.tolist()
        assert (totals.spent, totals.duration) == (ref.totals[s].spent, ref.totals[s].duration)
        assert {k: f.range for k, f in renderer.fits.items()} == {k: f.range for k, f in ref.fits.items()}


def test_a_restarted_source_draws_its_reset_marks_in_bulk() -> None:
    items = list(input_flow(["-"], REGISTRY, stdin=__import__("io").BytesIO(restarted_copy(30).encode())))
    want, _ = one_by_one(items, ViewOptions())
    got, _, drawn = in_bulk(items, ViewOptions(), 64)
    assert b"R counter reset" in got and drawn > 60
    assert got == want, first_difference(got, want)


def test_second_stream_and_column_cap_fall_back_to_one_frame_at_a_time() -> None:
    a, b = generated(120, seed=1), generated(60, seed=2, label="other")
    items: list[Interval | Notice] = [*a[:80], *b, *a[80:]]
    want, _ = one_by_one(items, ViewOptions(num_records=40))
    got, _, drawn = in_bulk(items, ViewOptions(num_records=40), 50)
    assert got == want, first_difference(got, want)
    assert 70 <= drawn < 80  # only the first stream's run, before the second stream appears
    capped = Accumulator(cap=50)
    renderer = PlainRenderer(ViewOptions())
    bulk = BulkFrames(renderer)
    capped.add(a[:1])
    renderer.render(capped)
    assert bulk.ready(capped, a[1:]) == 49  # up to the cap, no column dropped
    assert BulkFrames(renderer).ready(Accumulator(cap=HistoryLimit(budget=1 << 20)), a) == 0  # budget too tight


def test_a_stream_that_keeps_its_sources_buckets_draws_in_bulk_while_its_times_are_exact() -> None:
    """Kept buckets make a title's note follow the source's totals frame by frame, unless every column carries its
    times (HdrHistogram logs: a note of none); from the first column without them, one frame at a time."""
    kept = SourceBuckets((10.0, 20.0), np.array([0, 1]), None)
    exact = [dataclasses.replace(iv, source_buckets=kept) for iv in generated(100, seed=4, exact_from=0)]
    items: list[Interval | Notice] = [*exact[:60], dataclasses.replace(exact[60], time=None), *exact[61:]]
    want, _ = one_by_one(items, ViewOptions())
    got, _, drawn = in_bulk(items, ViewOptions(), 1024)
    assert got == want, first_difference(got, want)
    assert drawn == 59  # all but the first of the 60 exact columns; the rest one at a time


def test_fitted_rows_checked_sums_and_recomputed_sums_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows from prefix sums with the error bound, from every window summed again, and frame by frame agree."""
    items = generated(300, seed=5, exact_from=150)
    acc = Accumulator()
    acc.add(items)
    (hist,) = acc.streams.values()
    width = 60
    expect, fit = [], RowFit()
    for n in range(1, hist.n + 1):
        rows = row_range(hist, first=n - width, stop=n, fit=fit)
        expect.append((rows.lo, rows.hi, rows.folds))
    span = bulk_rows.Span.read(hist, 0, hist.n)
    starts, stops = bulk_rows.window_bounds(0, hist.n, width, 0)
    assert bulk_rows.fitted_rows(hist, span, starts, stops, RowFit()) == expect
    monkeypatch.setattr(bulk_rows, "_unsure", lambda cs_ev, cs_tm, tol: np.ones(len(cs_ev), dtype=bool))
    fitted = RowFit()
    assert bulk_rows.fitted_rows(hist, span, starts, stops, fitted) == expect
    assert fitted.range == fit.range


@pytest.fixture
def colour_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def run_plain_to(path: Path, items: Sequence[Interval | Notice], opts: ViewOptions, delay: float,
                 history: HistoryLimit | int = 100_000) -> bytes:
    with path.open("w", encoding="utf-8") as out:
        printer.run_plain(iter(items), copy.copy(opts), once=False, screen_delay=delay, history=history, out=out)
    return path.read_bytes()


@pytest.mark.usefixtures("colour_terminal")
@pytest.mark.parametrize("name", ["generated", "oracle sample"])
def test_plain_view_without_delay_writes_the_same_file_in_bulk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                name: str) -> None:
    """The plain view's replay (reader thread, bulk frames, writev into the file) against its one-frame loop."""
    monkeypatch.setattr(printer.time, "sleep", lambda _: None)
    items = STREAMS[name]()
    drawn: list[int] = []
    draw = BulkFrames.draw

    def counted(self: BulkFrames, acc: Accumulator, intervals: Sequence[Interval]) -> plain_bulk.Pieces:
        drawn.append(len(intervals))
        return draw(self, acc, intervals)

    monkeypatch.setattr(BulkFrames, "draw", counted)
    want = run_plain_to(tmp_path / "one.out", items, ViewOptions(), delay=1.0)
    assert not drawn
    got = run_plain_to(tmp_path / "bulk.out", items, ViewOptions(), delay=0.0)
    assert got == want, first_difference(got, want)
    assert sum(drawn) == sum(isinstance(x, Interval) for x in items) - 1


def test_plain_view_without_delay_writes_through_a_text_stream_too(tmp_path: Path) -> None:
    """No file descriptor to gather into (a StringIO): the frames are joined and written as text."""
    import io

    items = generated(90, seed=9)
    want = run_plain_to(tmp_path / "one.out", items, ViewOptions(color=False), delay=1e-9)
    out = io.StringIO()
    printer.run_plain(iter(items), ViewOptions(color=False), once=False, screen_delay=0, history=1000, out=out)
    assert out.getvalue().encode() == want


def test_notices_and_errors_keep_their_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    class Broken(Exception):
        pass

    def flow() -> Iterator[Interval | Notice]:
        yield from with_notices(generated(30, seed=4), 10)
        raise Broken

    with pytest.raises(Broken), (tmp_path / "x.out").open("w") as out:
        printer.run_plain(flow(), ViewOptions(color=False), once=False, screen_delay=0, history=1000, out=out)
    assert (tmp_path / "x.out").read_text().count("\nColumns: ") == 30
    assert capsys.readouterr().err.count("skipped") == 3


def test_one_stream_id_object_or_an_equal_one() -> None:
    items = generated(40, seed=8)
    twin = [dataclasses.replace(iv, stream=StreamId(*dataclasses.astuple(iv.stream))) for iv in items]
    want, _ = one_by_one(items, ViewOptions())
    got, _, drawn = in_bulk(twin, ViewOptions(), 100)
    assert got == want and drawn == 39
