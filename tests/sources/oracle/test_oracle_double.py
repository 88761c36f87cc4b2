"""A DB-API connection double replaying real gv$event_histogram output, plus tests of the SQL helpers."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from latencymap.core.buckets import ORACLE_OVERFLOW, slot_of_bucket_value
from latencymap.core.model import empty_counts
from latencymap.sources.oracle.sql import (
    MICRO,
    MILLI,
    histogram_query,
    sample_of_rows,
    view_for_version,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "fixtures" / "pylatencymap" / "example_latency_data.txt"
EVENT = "db file sequential read"
Row = tuple[int, str, int, int]


def example_blocks() -> list[list[list[tuple[int, int]]]]:
    """Per record (= one sample), the `(bucket_ms, count)` blocks: the first is inst 1, the second inst 2."""
    records: list[list[list[tuple[int, int]]]] = []
    blocks: list[list[tuple[int, int]]] | None = None
    for line in EXAMPLE.read_text().splitlines():
        text = line.strip().lower()
        if text == "<begin record>":
            blocks = [[]]
        elif text == "<end record>" and blocks is not None:
            records.append(blocks)
            blocks = None
        elif blocks is not None and re.fullmatch(r"\d+\s*,\s*\d+", text):
            value, count = (int(x) for x in text.split(","))
            if blocks[-1] and value <= blocks[-1][-1][0]:
                blocks.append([])
            blocks[-1].append((value, count))
    return records


def by_instance(records: list[list[list[tuple[int, int]]]]) -> list[list[list[tuple[int, int]]]]:
    """Blocks in instance order: gv$ output is unordered, so a block belongs to the instance it continues."""
    out = [records[0]]
    for blocks in records[1:]:
        prev = out[-1]
        if not all(c >= p for block, before in zip(blocks, prev, strict=True)
                   for (_, c), (_, p) in zip(block, before, strict=True)):
            blocks = blocks[::-1]
        out.append(blocks)
    return out


def example_rows(event: str = EVENT, overflow: bool = False) -> list[list[Row]]:
    """The example as query rows `(inst_id, event, bucket, wait_count)`, one list per sample."""
    samples = []
    for blocks in by_instance(example_blocks()):
        rows = [(inst, event, value, count) for inst, block in enumerate(blocks, 1) for value, count in block]
        if overflow:
            rows += [(1, event, ORACLE_OVERFLOW, 5 + len(samples)), (2, event, ORACLE_OVERFLOW, 9)]
        samples.append(rows)
    return samples


def slot_counts(rows: list[Row], inst: int | None = None) -> np.ndarray:
    """Independent per-slot sum of rows (upper-bound buckets), optionally of one instance."""
    out = empty_counts()
    for i, _, value, count in rows:
        if (inst is None or i == inst) and value != ORACLE_OVERFLOW:
            out[value.bit_length() - 1] += count  # bucket v = 2**k holds [2**(k-1), 2**k): slot k
    return out


class Exhausted(BaseException):
    """The double has replayed every sample (a BaseException, so the source cannot swallow it)."""


class OraError:
    """What python-oracledb puts in `DatabaseError.args[0]`."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.full_code = message.split(":", 1)[0]
        self.is_session_dead = False

    def __str__(self) -> str:
        return self.message


class DatabaseError(Exception):
    """A DB-API DatabaseError carrying an ORA/DPY message like python-oracledb's."""

    def __init__(self, message: str) -> None:
        super().__init__(OraError(message))


@dataclass
class FakeDb:
    """Replays `steps` (rows or an exception per query) and scripted connect failures; records every call."""

    steps: list[list[Row] | BaseException]
    version: str = "19.3.0.0.0"
    #: One entry per connect call: an exception to raise, or None to succeed; empty: succeed.
    connect_script: list[BaseException | None] = field(default_factory=list)
    missing_views: set[str] = field(default_factory=set)
    executed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    connects: list[dict[str, Any]] = field(default_factory=list)
    closed: int = 0
    on_execute: Callable[[], None] | None = None

    def connect(self, **kwargs: Any) -> FakeConnection:
        self.connects.append(kwargs)
        outcome = self.connect_script.pop(0) if self.connect_script else None
        if outcome is not None:
            raise outcome
        return FakeConnection(self)


class FakeConnection:
    def __init__(self, db: FakeDb) -> None:
        self.db = db
        self.version = db.version
        self.call_timeout = 0

    def cursor(self) -> FakeCursor:
        return FakeCursor(self.db)

    def close(self) -> None:
        self.db.closed += 1


class FakeCursor:
    def __init__(self, db: FakeDb) -> None:
        self.db = db
        self.rows: list[Row] = []

    def execute(self, sql: str, binds: dict[str, Any]) -> None:
        if not self.db.steps:
            raise Exhausted
        self.db.executed.append((sql, dict(binds)))
        if self.db.on_execute:
            self.db.on_execute()
        view = re.search(r"FROM (\S+)", sql, re.I).group(1).upper()  # type: ignore[union-attr]
        if view in self.db.missing_views:
            raise DatabaseError("ORA-00942: table or view does not exist")
        step = self.db.steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        events = {v for k, v in binds.items() if k.startswith("event")}
        insts = {v for k, v in binds.items() if k.startswith("inst")}
        self.rows = [r for r in step if r[1] in events and (not insts or r[0] in insts)]

    def fetchall(self) -> list[Row]:
        return list(self.rows)

    def close(self) -> None:
        pass


class FakeClock:
    """Wall clock (the instance, called) and monotonic clock (`monotonic`), both advanced only by `sleep`; records the
    sleeps. A test steps the wall clock alone (an NTP step) by changing `now`."""

    def __init__(self, start: float = 1_377_527_211.0) -> None:
        self.now = start
        self.elapsed = 5_000.0  # since boot: unrelated to the wall clock
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.elapsed

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        self.elapsed += seconds


def test_example_has_72_samples_of_two_instances_whose_counters_never_drop():
    blocks = example_blocks()
    assert len(blocks) == 72
    assert all(len(b) == 2 and len(b[0]) == len(b[1]) == 13 for b in blocks)
    assert blocks[9][0][0][1] < blocks[8][0][0][1]  # the raw output lists instance 2 first here
    ordered = by_instance(blocks)
    for prev, cur in itertools.pairwise(ordered):
        assert all(c >= p for b, a in zip(cur, prev, strict=True) for (_, c), (_, p) in zip(b, a, strict=True))


def test_query_text_and_binds_are_exact():
    q = histogram_query(MICRO, ["db file sequential read", "log file sync"], [2, 1])
    assert q.sql == ("SELECT inst_id, event, wait_time_micro, wait_count\n"
                     "  FROM gv$event_histogram_micro\n"
                     " WHERE event IN (:event1, :event2)\n"
                     "   AND inst_id IN (:inst1, :inst2)\n"
                     " ORDER BY inst_id, event, wait_time_micro")
    assert q.binds == {"event1": "db file sequential read", "event2": "log file sync", "inst1": 2, "inst2": 1}


def test_hostile_event_name_is_only_a_bind_value():
    name = "x'); DELETE FROM t; -- \"q\""
    q = histogram_query(MILLI, [name])
    assert name not in q.sql and "'" not in q.sql and ";" not in q.sql
    assert q.binds == {"event1": name}


@pytest.mark.parametrize(("version", "view"), [("19.3.0.0.0", MICRO), ("12.1.0.2.0", MICRO), ("12.1.0.1.0", MILLI),
                                               ("11.2.0.4.0", MILLI), (None, MICRO)])
def test_view_for_version(version, view):
    assert view_for_version(version) is view


def test_rows_to_slots_keep_overflow_apart_and_use_upper_bounds():
    rows = example_rows(overflow=True)[0]
    sample = sample_of_rows(rows)
    assert set(sample.counts) == {(EVENT, 1), (EVENT, 2)} and sample.overflow == {(EVENT, 1): 5, (EVENT, 2): 9}
    for inst in (1, 2):
        np.testing.assert_array_equal(sample.counts[(EVENT, inst)], slot_counts(rows, inst))
    assert slot_of_bucket_value(1, "oracle") == 0  # Oracle's "1" bucket is [0, 1)
    assert sample.counts[(EVENT, 1)][0] == 4129312 and sample.counts[(EVENT, 1)][1] == 4875183


def test_non_power_of_two_bucket_is_counted_as_bad():
    sample = sample_of_rows([(1, EVENT, 3, 10), (1, EVENT, 4, 2)])
    assert sample.bad_buckets == 1 and sample.counts[(EVENT, 1)].sum() == 2
