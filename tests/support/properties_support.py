"""Shared pieces of the parser property tests: hostile line strategies and the invariants every reader keeps.

Every reader, whatever it is fed, yields only Interval/Snapshot/Notice items; counts are int64 vectors of
NSLOTS non-negative values; times are finite; per stream, columns move forward in time; labels, dates and
notice messages carry no control or escape characters (they reach terminals).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from latencymap.core.buckets import NSLOTS
from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, Notice, Snapshot, StreamId
from latencymap.core.units import UNIT_SECONDS
from latencymap.flow.inputs import read_input
from latencymap.plugins import TextFormat, load_registry

REGISTRY = load_registry()
#: C0/C1 controls, DEL and bidi overrides: what `clean_text` must have removed from anything shown.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: Terminal attacks and oddities spliced into otherwise plausible lines.
HOSTILE = st.sampled_from(["\x1b[2J", "\x1b[H", "\x1b]0;pwned\x07", "\x9b31m", "\x00", "\u202e", "\r", "\x08",
                           "\ufffd", "\t", "\x85", "\u2028", "\x1b", "'", '"', "]", ")", "|", ","])
#: Numbers a hostile or broken source prints: small, huge, at the int64 and count limits, negative.
NUMBERS = st.one_of(st.integers(0, 64), st.integers(0, 2**40), st.integers(-(2**70), 2**70),
                    st.sampled_from([10**30, 2**62, 2**62 + 1, 2**63 - 1, 2**63, 2**64, -1, 4294967295]))
#: Numerals as printed, including ones too long for `int()` (Python refuses more than 4300 digits).
NUMERALS = st.one_of(NUMBERS.map(str), st.integers(4200, 6000).map(lambda n: "9" * n))


def scaled(examples: int) -> settings:
    """Settings for `examples` examples, times the loaded profile's max_examples over Hypothesis' default 100."""
    factor = settings.default.max_examples / 100
    return settings(max_examples=max(1, round(examples * factor)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


QUICK = scaled(150)
ROUNDTRIP = scaled(80)


def spliced(lines: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """`lines` with a hostile fragment inserted at a random place."""
    return st.builds(lambda s, h, i: s[: i % (len(s) + 1)] + h + s[i % (len(s) + 1):], lines, HOSTILE,
                     st.integers(0, 200))


def hostile_lines(*specific: st.SearchStrategy[str], max_size: int = 60) -> st.SearchStrategy[list[str]]:
    """Lists of lines: format-specific ones, the same with hostile fragments spliced in, and arbitrary text."""
    line = st.one_of(*specific, st.text(max_size=40), st.just(""))
    return st.lists(st.one_of(line, spliced(line)), max_size=max_size)


def clock() -> Any:
    """A deterministic, strictly increasing wall clock for readers and differs."""
    ticks = iter(range(1_700_000_000, 1_800_000_000))
    return lambda: float(next(ticks))


def check_text(text: str, what: str) -> None:
    """`text` is printable: no control or escape characters."""
    assert not CONTROL.search(text), f"{what} carries control characters: {text!r}"


def check_items(items: Iterable[Any]) -> list[Any]:
    """Assert the invariants of reader output (Snapshots allowed); returns the items as a list."""
    out = list(items)
    last_end: dict[StreamId, float] = {}
    for item in out:
        assert isinstance(item, (Interval, Snapshot, Notice)), type(item)
        if isinstance(item, Notice):
            check_text(item.message, "notice")
            assert item.skipped >= 0
            continue
        check_text(item.stream.label, "label")
        check_text(item.stream.datasource, "datasource")
        check_text(item.date, "date")
        assert item.stream.unit in UNIT_SECONDS, item.stream.unit
        assert isinstance(item.counts, np.ndarray) and item.counts.shape == (NSLOTS,)
        assert item.counts.dtype == np.int64 and (item.counts >= 0).all(), item.counts
        if isinstance(item, Interval):
            assert np.isfinite(item.start) and np.isfinite(item.end) and item.end > item.start, (item.start, item.end)
            assert np.isfinite(item.duration) and item.duration > 0
            if item.time is not None:
                assert item.time.shape == (NSLOTS,) and np.isfinite(item.time).all() and (item.time >= 0).all()
            previous = last_end.get(item.stream)
            assert previous is None or item.start >= previous - 1e-6, (previous, item.start, item.stream.label)
            last_end[item.stream] = item.end
        else:
            assert item.timestamp is None or np.isfinite(item.timestamp)
            if item.sums is not None:
                assert item.sums.shape == (NSLOTS,) and np.isfinite(item.sums).all()
    return out


def read_checked(fmt: type[TextFormat], lines: Sequence[str], **options: Any) -> list[Interval | Notice]:
    """Read `lines` with `fmt`, check the raw items, diff the snapshots and check the intervals."""
    items = check_items(fmt(**options).read(list(lines), "t.txt"))
    return check_items(Differ(clock=clock(), name="t.txt").run(items))


def read_bytes_checked(data: bytes, forced: str | None) -> list[Interval | Notice]:
    """Arbitrary bytes through `read_input` (UTF-8 replacement, line caps, sniffing or a forced format)."""
    items = check_items(read_input("-", REGISTRY, forced, stdin=io.BytesIO(data)))
    return check_items(Differ(clock=clock(), name="<stdin>").run(items))


def totals(items: Iterable[Any], label: str | None = None) -> np.ndarray:
    """Summed counts of the Intervals (of one stream label, when given)."""
    total = np.zeros(NSLOTS, dtype=np.int64)
    for item in items:
        if isinstance(item, Interval) and (label is None or item.stream.label == label):
            total += item.counts
    return total


def intervals_of(items: Iterable[Any]) -> list[Interval]:
    """Only the Intervals."""
    return [i for i in items if isinstance(i, Interval)]


def as_stdin(text: str) -> io.BytesIO:
    """`text` as the bytes of a pipe."""
    return io.BytesIO(text.encode("utf-8", "surrogatepass"))


def as_vector(counts: dict[int, int]) -> np.ndarray:
    """A 64-slot count vector from {slot: count}."""
    out = np.zeros(NSLOTS, dtype=np.int64)
    for slot, count in counts.items():
        out[slot] += count
    return out


def assert_backwards_times_refused_and_no_print_lost(items: Sequence[Any],
                                                     prints: Sequence[tuple[int, dict[int, int]]]) -> None:
    """Every time line earlier than one before it is refused (a map printed twice in one group also moves the
    clock on, so a later line may be refused too), and no print's counts are lost either way."""
    seconds = [s for s, _ in prints]
    backwards = sum(1 for k, s in enumerate(seconds) if k and s < max(seconds[:k]))
    assert sum("timestamp goes backwards" in i.message for i in items if isinstance(i, Notice)) >= backwards
    assert int(totals(items).sum()) == sum(sum(p.values()) for _, p in prints)
