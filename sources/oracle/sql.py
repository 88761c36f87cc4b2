"""SQL for the Oracle source: the histogram query (bind variables only) and rows to per-slot counts.

User values (event names, instance numbers) reach the server only as bind values. The only text put
into the SQL is chosen from the fixed `VIEWS` table below and the bind placeholders' own names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from latencymap.core.buckets import NSLOTS, slot_of_bucket_value
from latencymap.core.model import empty_counts
from latencymap.core.sanitize import clean_text
from latencymap.sources.printed_histograms import add_count


@dataclass(frozen=True)
class HistogramView:
    """One of Oracle's wait-event histogram views and the unit of its bucket column."""

    name: str
    bucket_column: str
    unit: str


MICRO = HistogramView("GV$EVENT_HISTOGRAM_MICRO", "WAIT_TIME_MICRO", "microsec")
MILLI = HistogramView("GV$EVENT_HISTOGRAM", "WAIT_TIME_MILLI", "millisec")
VIEWS = {"micro": MICRO, "milli": MILLI}
#: The first release with GV$EVENT_HISTOGRAM_MICRO.
MICRO_SINCE = (12, 1, 0, 2)


@dataclass(frozen=True)
class Query:
    """SQL text and its bind values, as handed to `cursor.execute(sql, binds)`."""

    sql: str
    binds: dict[str, str | int]


def histogram_query(view: HistogramView, events: Sequence[str], instances: Sequence[int] = ()) -> Query:
    """The per-sample query: one row per (instance, event, bucket) of the chosen events and instances."""
    if not events:
        raise ValueError("at least one event is needed")
    binds: dict[str, str | int] = {f"event{i}": name for i, name in enumerate(events, 1)}
    lines = [
        f"SELECT inst_id, event, {view.bucket_column.lower()}, wait_count",
        f"  FROM {view.name.lower()}",
        f" WHERE event IN ({', '.join(':' + key for key in binds)})",
    ]
    if instances:
        inst_binds = {f"inst{i}": int(n) for i, n in enumerate(instances, 1)}
        lines.append(f"   AND inst_id IN ({', '.join(':' + key for key in inst_binds)})")
        binds.update(inst_binds)
    lines.append(f" ORDER BY inst_id, event, {view.bucket_column.lower()}")
    return Query("\n".join(lines), binds)


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """`19.3.0.0.0` → (19, 3, 0, 0, 0); None when unknown."""
    if not text:
        return None
    parts = re.findall(r"\d+", str(text))
    return tuple(int(p) for p in parts) if parts else None


def view_for_version(version: str | None) -> HistogramView:
    """The microsecond view from 12.1.0.2 on (or when the version is unknown), else the millisecond one."""
    parsed = parse_version(version)
    if parsed is not None and parsed[: len(MICRO_SINCE)] < MICRO_SINCE:
        return MILLI
    return MICRO


@dataclass
class Sample:
    """One query's result: cumulative counts per (event, instance), and rows that could not be used.

    `problems` names each unusable row by `(event, instance, what)`, its count left out (the same rows give the
    same problems from sample to sample, whatever their counts); `unread` holds, per (event, instance), the slots
    whose count was unusable: they are not known this sample (not zero); `overflow` the cumulative count of
    Oracle's overflow bucket, per (event, instance) that has one (it is left out of `counts`).
    """

    counts: dict[tuple[str, int], np.ndarray]
    bad_buckets: int = 0
    problems: frozenset[tuple[str, int, str]] = frozenset()
    unread: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    overflow: dict[tuple[str, int], int] = field(default_factory=dict)

    def present(self, key: tuple[str, int]) -> np.ndarray | None:
        """The slots of `key` whose counts were read (None: all of them), for `Snapshot.present`."""
        slots = self.unread.get(key)
        if not slots:
            return None
        present = np.ones(NSLOTS, dtype=bool)
        present[slots] = False
        return present


def sample_of_rows(rows: Iterable[Sequence[object]]) -> Sample:
    """Rows `(inst_id, event, bucket_upper_bound, wait_count)` → per-slot cumulative counts.

    Bucket values are upper bounds (`[v/2, v)`, `[0, 1)` for 1); Oracle's overflow bucket is counted apart, in
    `overflow`; a row whose bucket value is not a power of two, or whose count is no integer, is negative or would
    take its bucket past 2**62, is counted in `bad_buckets`, named in `problems` and skipped (a bad count's slot is
    in `unread`).
    Duplicate keys add up. An instance id that is not a number is no data error but a wrong view or driver: it
    raises.
    """
    counts: dict[tuple[str, int], np.ndarray] = {}
    problems: set[tuple[str, int, str]] = set()
    unread: dict[tuple[str, int], list[int]] = {}
    overflow: dict[tuple[str, int], int] = {}
    bad = 0
    for inst_id, event, bucket, wait_count in rows:
        key = (str(event), int(inst_id))  # type: ignore[call-overload]
        arr = counts.get(key)
        if arr is None:
            arr = counts[key] = empty_counts()
        try:
            slot = slot_of_bucket_value(int(bucket), "oracle")  # type: ignore[call-overload]
        except (TypeError, ValueError, OverflowError):
            bad += 1
            problems.add((*key, f"bucket {_shown(bucket)} is not a power of 2"))
            continue
        try:
            count = int(wait_count or 0)  # type: ignore[call-overload]
        except (TypeError, ValueError, OverflowError):
            count = -1
        if slot is None:
            if count > 0:  # Oracle's overflow bucket: no slot
                overflow[key] = overflow.get(key, 0) + count
        elif not add_count(arr, slot, count):
            bad += 1
            problems.add((*key, f"bucket {_shown(bucket)} has an unusable count"))
            unread.setdefault(key, []).append(slot)
    return Sample(counts, bad, frozenset(problems), unread, overflow)


def _shown(value: object) -> str:
    """A row's value as a notice names it: short, no control characters."""
    return clean_text(str(value), 24)
