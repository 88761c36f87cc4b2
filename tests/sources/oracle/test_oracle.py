"""The Oracle source against a DB-API double replaying real gv$event_histogram output (no server needed)."""

from __future__ import annotations

import io
import itertools
import json
import math
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from skips_support import NOT_LINUX, reason
from sqlplus_support import run, substitute
from test_oracle_double import (
    EVENT,
    DatabaseError,
    Exhausted,
    FakeClock,
    FakeDb,
    example_rows,
    slot_counts,
)

import latencymap.cli.main as cli
import latencymap.sources.oracle.source as oracle
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.units import format_number
from latencymap.sources.oracle.auth import PASSWORD_ENV
from latencymap.sources.oracle.errors import OracleError
from latencymap.sources.oracle.source import OracleSource
from latencymap.sources.oracle.sql import VIEWS

PASSWORD = "Tr0ub4dor&3-not-in-argv"
DSN = "dbhost:1521/ORCLPDB1"
MILLI_SQL = ("SELECT inst_id, event, wait_time_milli, wait_count\n"
             "  FROM gv$event_histogram\n"
             " WHERE event IN (:event1)\n"
             " ORDER BY inst_id, event, wait_time_milli")
MICRO_SQL = MILLI_SQL.replace("wait_time_milli", "wait_time_micro").replace("histogram\n", "histogram_micro\n")
LOST = "DPY-4011: the database or network closed the connection\nHelp: https://example/dpy-4011\nORA-03113: end-of-file"


def make_source(db: FakeDb, clock: FakeClock, **opts: Any) -> OracleSource:
    options = {"dsn": DSN, "user": "scott", "events": (EVENT,), "interval": 3.0, "instances": (),
               "per_instance": False, "thick": False, "external_auth": False, "histogram": "auto", **opts}
    return OracleSource(connect_fn=db.connect, sleep=clock.sleep, clock=clock, monotonic=clock.monotonic,
                        environ={PASSWORD_ENV: PASSWORD}, stdin=io.StringIO(), **options)


def collect(source: OracleSource) -> list[Interval | Notice]:
    out: list[Any] = []
    try:
        for item in source.items():
            out.append(item)
    except Exhausted:
        pass
    return out


def intervals(items: list[Any], gap: bool | None = None) -> list[Interval]:
    return [i for i in items if isinstance(i, Interval) and (gap is None or i.gap == gap)]


def test_sql_text_and_binds_reach_the_driver_exactly():
    db = FakeDb(example_rows()[:4], version="11.2.0.4.0")
    collect(make_source(db, FakeClock()))
    assert db.executed == [(MILLI_SQL, {"event1": EVENT})] * 4
    assert db.connects[0]["password"].reveal() == PASSWORD and db.connects[0]["user"] == "scott"


def test_intervals_are_the_independent_deltas_summed_over_instances():
    rows = example_rows(overflow=True)
    db, clock = FakeDb(list(rows), version="11.2.0.4.0"), FakeClock()
    start = clock.now
    items = collect(make_source(db, clock))
    ivs = intervals(items)
    assert len(ivs) == len(rows) - 1 == 71
    assert {iv.stream for iv in ivs} == {StreamId(EVENT, "oracle", "millisec")}
    for k, iv in enumerate(ivs, 1):
        np.testing.assert_array_equal(iv.counts, slot_counts(rows[k]) - slot_counts(rows[k - 1]))
        assert (iv.start, iv.end) == (start + 3.0 * (k - 1), start + 3.0 * k)
        assert not iv.reset and not iv.gap
    (note,) = [i for i in items if isinstance(i, Notice)]  # the overflow rows' (see below)
    assert "overflow bucket 4294967295" in note.message


def test_the_overflow_bucket_is_said_once_per_event_with_its_count_and_what_the_run_added(cli_db):
    """Rows of bucket 4294967295 (waits past the largest bucket) were left out without a word: they are said once
    per event when first read, with their count, and a limited run ends with how much it grew."""
    rows = [[*r, (1, "log file sync", 4, 3), (1, "log file sync", 4294967295, 2)] for r in example_rows(overflow=True)]
    items = collect(make_source(FakeDb(list(rows), version="11.2"), FakeClock(), events=(EVENT, "log file sync")))
    notes = [i.message for i in items if isinstance(i, Notice)]
    overflow = ("Oracle's overflow bucket 4294967295 (waits past its largest bucket: no finite range) is left out of "
                "the map and totals: its cumulative count is")
    assert notes == [f"oracle: 'db file sequential read': {overflow} 14 (inst 1: 5, inst 2: 9); waits that reach it "
                     "later are left out too",
                     f"oracle: 'log file sync': {overflow} 2; waits that reach it later are left out too"]
    assert items.index(next(i for i in items if isinstance(i, Notice))) == 0  # said at the first poll
    cli_db["db"] = FakeDb(list(rows), version="11.2")
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once", "--count", "71", "--event", EVENT)
    assert res.exit_code == 0, res.output
    assert res.stderr.count("overflow bucket") == 2, res.stderr
    assert f"{overflow} 14 (inst 1: 5, inst 2: 9)" in res.stderr
    assert ("'db file sequential read': Oracle's overflow bucket 4294967295 (waits past its largest bucket: no finite "
            "range) is left out of the map and totals: its cumulative count went from 14 (first read) to 85 (last "
            "read): 71 waits past the largest bucket in this run") in res.stderr
    assert "skipped records: 0" in res.stdout


def test_an_overflow_bucket_first_filled_during_the_run_counts_from_0(cli_db):
    """Oracle lists no row for an empty bucket: a first poll without the overflow row means 0 there, so its 2 waits
    of polls 1 and 2 came in the run (an instance first polled with the row: that count is from before the run)."""
    def poll(k: int) -> list[tuple[int, str, int, int]]:
        late = [(1, EVENT, 4294967295, 2)] if k >= 1 else []
        return [(1, EVENT, 1, 100 + 10 * k), *late, (2, EVENT, 1, 50 + k), (2, EVENT, 4294967295, 7 + k)]

    cli_db["db"] = FakeDb([poll(k) for k in range(3)], version="11.2")
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once", "--count", "2", "--per-instance")
    assert res.exit_code == 0, res.output
    left_out = ("Oracle's overflow bucket 4294967295 (waits past its largest bucket: no finite range) is left out of "
                "the map and totals")
    assert res.stderr.count("overflow bucket") == 4, res.stderr
    assert f"'{EVENT} inst 1': {left_out}: its cumulative count is 2, all of them in this run; waits" in res.stderr
    assert f"'{EVENT} inst 2': {left_out}: its cumulative count is 7; waits" in res.stderr
    assert (f"'{EVENT} inst 1': {left_out}: its cumulative count went from 0 (first read) to 2 (last read): 2 waits "
            "past the largest bucket in this run") in res.stderr
    assert (f"'{EVENT} inst 2': {left_out}: its cumulative count went from 7 (first read) to 9 (last read): 2 waits "
            "past the largest bucket in this run") in res.stderr
    cli_db["db"] = FakeDb([poll(k) for k in range(3)], version="11.2")
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once", "--count", "2")
    assert f"'{EVENT}': {left_out}: its cumulative count is 7; waits" in res.stderr  # inst 1's row is not yet in
    assert "went from 7 (first read) to 11 (last read): 4 waits past the largest bucket in this run" in res.stderr


def test_microsecond_view_on_12_1_0_2_and_later():
    db = FakeDb(example_rows()[:3], version="19.22.0.0.0")
    ivs = intervals(collect(make_source(db, FakeClock())))
    assert [sql for sql, _ in db.executed] == [MICRO_SQL] * 3
    assert ivs[0].stream.unit == "microsec"


def test_falls_back_to_the_millisecond_view_on_ora_00942():
    db = FakeDb(example_rows()[:3], version="19.3.0.0.0", missing_views={"GV$EVENT_HISTOGRAM_MICRO"})
    items = collect(make_source(db, FakeClock()))
    assert [sql for sql, _ in db.executed] == [MICRO_SQL, MILLI_SQL, MILLI_SQL, MILLI_SQL]
    notes = [i.message for i in items if isinstance(i, Notice)]
    assert len(notes) == 1 and "ORA-00942" in notes[0] and "GV$EVENT_HISTOGRAM " in notes[0] + " "
    assert {iv.stream.unit for iv in intervals(items)} == {"millisec"}


def test_no_view_readable_is_one_line_with_the_grants():
    db = FakeDb(example_rows()[:3], missing_views={"GV$EVENT_HISTOGRAM_MICRO", "GV$EVENT_HISTOGRAM"})
    with pytest.raises(OracleError) as err:
        collect(make_source(db, FakeClock()))
    msg = err.value.format_message()
    assert "\n" not in msg and "ORA-00942" in msg
    assert "GRANT SELECT ON SYS.GV_$EVENT_HISTOGRAM_MICRO TO SCOTT" in msg and "SELECT_CATALOG_ROLE" in msg


def test_per_instance_streams_and_instance_filter():
    rows = example_rows()[:5]
    ivs = intervals(collect(make_source(FakeDb(list(rows), version="11.2"), FakeClock(), per_instance=True)))
    for inst in (1, 2):
        mine = [iv for iv in ivs if iv.stream.label == f"{EVENT} inst {inst}"]
        assert len(mine) == 4
        expected = slot_counts(rows[4], inst) - slot_counts(rows[0], inst)
        np.testing.assert_array_equal(sum(iv.counts for iv in mine), expected)

    db = FakeDb(list(rows), version="11.2")
    ivs = intervals(collect(make_source(db, FakeClock(), instances=(2,))))
    assert db.executed[0] == (MILLI_SQL.replace("\n ORDER", "\n   AND inst_id IN (:inst1)\n ORDER"),
                              {"event1": EVENT, "inst1": 2})
    assert {iv.stream.label for iv in ivs} == {f"{EVENT} inst 2"}
    np.testing.assert_array_equal(sum(iv.counts for iv in ivs), slot_counts(rows[4], 2) - slot_counts(rows[0], 2))


def test_several_events_give_several_streams():
    a, b = example_rows()[:4], example_rows("log file sync")[10:14]
    db = FakeDb([x + y for x, y in zip(a, b, strict=True)], version="11.2")
    ivs = intervals(collect(make_source(db, FakeClock(), events=(EVENT, "log file sync"))))
    assert db.executed[0][1] == {"event1": EVENT, "event2": "log file sync"}
    by_label = {label: sum(iv.counts for iv in ivs if iv.stream.label == label) for label in (EVENT, "log file sync")}
    np.testing.assert_array_equal(by_label[EVENT], slot_counts(a[3]) - slot_counts(a[0]))
    np.testing.assert_array_equal(by_label["log file sync"], slot_counts(b[3]) - slot_counts(b[0]))


def test_event_with_quotes_and_semicolons_is_only_a_bind_value():
    name = "db file'; DROP TABLE x; --\"read\""
    db = FakeDb(example_rows()[:2], version="11.2")
    items = collect(make_source(db, FakeClock(), events=(name,), count=1))
    assert db.executed == [(MILLI_SQL, {"event1": name})] * 2
    assert any(isinstance(i, Notice) and "no histogram rows" in i.message for i in items)


def test_instance_restart_is_diffed_per_instance_before_summing():
    rows = example_rows()[:10]
    restarted = [list(r) for r in rows]
    before = {(i, v): c for i, _, v, c in rows[5] if i == 2}
    for k in range(6, 10):  # instance 2 restarts between samples 5 and 6: its counters start again from zero
        restarted[k] = [(i, e, v, c - before[(i, v)] if i == 2 else c) for i, e, v, c in rows[k]]
    ivs = intervals(collect(make_source(FakeDb(restarted, version="11.2"), FakeClock())))
    assert [iv.reset for iv in ivs] == [False] * 5 + [True] + [False] * 3
    assert all((iv.counts >= 0).all() for iv in ivs)
    np.testing.assert_array_equal(sum(iv.counts for iv in ivs), slot_counts(rows[9]) - slot_counts(rows[0]))


def test_reconnects_with_backoff_and_marks_the_outage_as_gap_columns():
    rows = example_rows()
    db, clock = FakeDb([*rows[:5], DatabaseError(LOST), *rows[5:10]], version="11.2"), FakeClock()
    db.connect_script = [None, DatabaseError("DPY-6005: cannot connect to database"),
                         DatabaseError("ORA-12541: TNS:no listener"), DatabaseError("ORA-01033: initialization")]
    start = clock.now
    items = collect(make_source(db, clock))
    assert clock.sleeps[:9] == [3.0] * 5 + [1.0, 2.0, 4.0, 8.0]
    assert len(db.connects) == 5 and db.closed >= 1
    gaps = intervals(items, gap=True)
    last_good, baseline = start + 12.0, start + 15.0 + 15.0  # the loss is seen at +15; 1+2+4+8 s of backoff
    assert gaps[0].start == last_good and gaps[-1].end == baseline and len(gaps) == 6
    assert all(g.counts.sum() == 0 for g in gaps)
    assert all(a.end == b.start for a, b in itertools.pairwise(gaps))
    ok = intervals(items, gap=False)
    assert len(ok) == 4 + 4 and ok[4].start == baseline
    expected = slot_counts(rows[4]) - slot_counts(rows[0]) + slot_counts(rows[9]) - slot_counts(rows[5])
    np.testing.assert_array_equal(sum(iv.counts for iv in ok), expected)
    notes = [i.message for i in items if isinstance(i, Notice)]
    assert "connection lost (DPY-4011" in notes[0] and "reconnected after 4 attempts" in notes[1]


def test_backoff_doubles_up_to_a_cap():
    db = FakeDb([*example_rows()[:2], DatabaseError("ORA-03135: connection lost contact")], version="11.2")
    clock = FakeClock()
    db.connect_script = [None, *[DatabaseError("ORA-12514: TNS:listener does not know of service")] * 8]
    collect(make_source(db, clock))
    assert clock.sleeps[2:11] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]


def test_reconnect_stops_on_an_error_retrying_cannot_fix():
    db = FakeDb([*example_rows()[:2], DatabaseError("ORA-03114: not connected to ORACLE")], version="11.2")
    db.connect_script = [None, DatabaseError("ORA-01017: invalid username/password; logon denied")]
    with pytest.raises(OracleError, match=r"reconnecting to .*ORA-01017.*check --user"):
        collect(make_source(db, FakeClock()))


def steady_db(n: int, clock: FakeClock, step: float = 0.0, before: int = 4) -> FakeDb:
    """n polls of a database doing a steady 100 waits a second (1-2 ms), polled every 3 s; the wall clock `clock`
    steps by `step` seconds (an NTP step) just before query `before`."""
    db = FakeDb([[(1, EVENT, 2, 300 * k)] for k in range(n)], version="11.2")

    def on_execute() -> None:
        if len(db.executed) == before:
            clock.now += step

    db.on_execute = on_execute
    return db


@pytest.mark.parametrize(("step", "said"), [(-30.0, "back by 30s"), (30.0, "forward by 30s"), (-2.0, "back by 2s"),
                                            (0.5, None)])
def test_a_wall_clock_step_keeps_every_column_its_true_length_and_rate(step, said):
    """Columns were cut at wall-clock times: a step back of 30 s made the column after it a 6 s one (and the source
    slept 33 s at once), a step forward a 33 s one, and their rates wrong. Each column is 3 s of 300 waits, end to
    end, timed from the wall clock at the start; a step is said once, a jitter under a second not at all."""
    clock = FakeClock()
    start = clock.now
    items = collect(make_source(steady_db(10, clock, step), clock))
    assert [(iv.start, iv.end, int(iv.counts.sum())) for iv in intervals(items)] == \
        [(start + 3.0 * k, start + 3.0 * (k + 1), 300) for k in range(9)]
    assert set(clock.sleeps) == {3.0}
    notes = [i.message for i in items if isinstance(i, Notice)]
    if said is None:
        assert notes == []
    else:
        assert len(notes) == 1 and f"the system clock stepped {said}" in notes[0]


@pytest.mark.parametrize("step", [-30.0, 30.0])
def test_duration_is_timed_by_a_clock_that_does_not_step(step):
    """`--duration 15` ran 15 s of wall clock: 10 columns more after a step back of 30 s, none after a forward one."""
    clock = FakeClock()
    items = collect(make_source(steady_db(30, clock, step), clock, duration=15.0))
    assert len(intervals(items)) == 5 and sum(clock.sleeps) == 15.0


@pytest.mark.skipif(not hasattr(time, "CLOCK_BOOTTIME"),
                    reason=reason(NOT_LINUX, "CLOCK_BOOTTIME", "a Linux clock that counts a suspend"))
def test_columns_are_timed_by_a_clock_that_goes_on_while_the_machine_sleeps():
    """Python's monotonic clock stops while the machine sleeps (a suspended laptop, a paused VM) while the database
    counts on: an hour's waits came in one 3 s column (12.1k/s for a steady 100/s), said as a clock step. The boot
    clock counts the sleep."""
    assert oracle.default_monotonic is oracle._since_boot
    assert abs(oracle.default_monotonic() - time.clock_gettime(time.CLOCK_BOOTTIME)) < 1.0


# -- through the CLI -------------------------------------------------------------------------------------------


def wire_cli(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`latencymap oracle` wired to a double: set `holder["db"]` before invoking."""
    holder: dict[str, Any] = {}
    clock = FakeClock()
    monkeypatch.setitem(cli.main.commands, "oracle", cli.source_command(OracleSource))
    monkeypatch.setattr(oracle, "driver_problem", lambda: None)
    monkeypatch.setattr(oracle, "connect", lambda **kw: holder["db"].connect(**kw))
    monkeypatch.setattr(oracle, "default_sleep", clock.sleep)
    monkeypatch.setattr(oracle, "default_clock", clock)
    monkeypatch.setattr(oracle, "default_monotonic", clock.monotonic)
    holder["clock"] = clock
    return holder


@pytest.fixture
def cli_db(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return wire_cli(monkeypatch)


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    runner = CliRunner()
    return runner.invoke(cli.main, list(args), env={PASSWORD_ENV: PASSWORD, **(env or {})}, catch_exceptions=False)


def test_report_totals_through_the_cli_equal_independent_sums(cli_db, tmp_path, example_data):
    rows = example_rows(overflow=True)
    cli_db["db"] = FakeDb(list(rows), version="11.2.0.4.0")
    rec = tmp_path / "oracle.rec"
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once", "--count", "71", "--record", str(rec))
    assert res.exit_code == 0, res.output
    report = json.loads(invoke("report", "--format", "json", str(rec)).stdout)
    (stream,) = report["streams"]
    delta = slot_counts(rows[71]) - slot_counts(rows[0])
    assert stream["stream"] == {"label": EVENT, "datasource": "oracle", "unit": "millisec"}
    assert stream["columns"] == 71 and stream["total"]["events"] == int(delta.sum())
    upper_ms = 2.0 ** np.arange(delta.size)  # slot k holds [2**(k-1), 2**k) ms
    assert stream["total"]["time_s"] == pytest.approx(float((delta * 0.75 * upper_ms).sum()) / 1000, rel=1e-9)
    pylatencymap = json.loads(invoke("report", "--format", "json", str(example_data)).stdout)["streams"][0]
    assert pylatencymap["total"]["events"] == stream["total"]["events"]


def test_gap_columns_are_marked_in_the_recording(cli_db, tmp_path):
    rows = example_rows()
    cli_db["db"] = FakeDb([*rows[:3], DatabaseError(LOST), *rows[3:6]], version="11.2",
                          connect_script=[None, DatabaseError("DPY-6005: cannot connect to database")])
    rec = tmp_path / "gap.rec"
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once", "--count", "6", "--record", str(rec))
    assert res.exit_code == 0, res.output
    text = rec.read_text()
    assert text.count("flags, gap") == 2  # last good sample at +6 s, loss seen at +9 s, 1 + 2 s of backoff: 6 s
    assert text.count("<begin record>") == 6
    assert "connection lost" in res.stderr and "reconnected after 2 attempts" in res.stderr


@pytest.mark.parametrize(("where", "message", "remedy"), [
    ("connect", "ORA-01017: invalid username/password; logon denied", "check --user and the password"),
    ("connect", "ORA-12541: TNS:no listener", "start it (lsnrctl start)"),
    ("connect", "ORA-12514: TNS:listener does not currently know of service", "lsnrctl services"),
    ("connect", "DPY-6005: cannot connect to database (CONNECTION_ID=x).\n[Errno 111] Connection refused",
     "that the listener runs"),
    ("connect", "ORA-28000: the account is locked", "ALTER USER SCOTT ACCOUNT UNLOCK"),
    ("connect", "ORA-01045: user SCOTT lacks CREATE SESSION privilege", "GRANT CREATE SESSION TO SCOTT"),
    ("connect", "DPI-1047: Cannot locate a 64-bit Oracle Client library", "drop --thick"),
    ("connect", "DPY-3015: password verifier type 0x939 is not supported", "add --thick"),
    ("query", "ORA-01031: insufficient privileges", "GRANT SELECT_CATALOG_ROLE TO SCOTT"),
])
def test_ora_errors_are_one_line_with_the_remedy_and_exit_1(cli_db, where, message, remedy):
    db = FakeDb([DatabaseError(message)] if where == "query" else [], version="11.2")
    if where == "connect":
        db.connect_script = [DatabaseError(message)]
    cli_db["db"] = db
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once")
    assert res.exit_code == 1
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("latencymap oracle: ") and "Traceback" not in res.output
    assert message.split(":")[0] in lines[0] and remedy in lines[0]
    assert PASSWORD not in res.output


def test_missing_driver_is_one_line_with_the_install_command(monkeypatch):
    monkeypatch.setattr(oracle.importlib.util, "find_spec", lambda name: None)
    assert "pip install 'latencymap[oracle]'" in (OracleSource.unavailable() or "")


@pytest.mark.parametrize("kind", ["micro", "MILLI"])
def test_sqlplus_script_prints_records_latencymap_reads_back_exactly(kind: str) -> None:
    script = (Path(oracle.__file__).parent / "sqlplus.sql").read_text()
    event = 'db file, "scattered" read\'s'  # a comma (the protocol's separator) and both quotes
    view = VIEWS[kind.lower()]
    times = [datetime(2026, 3, 1, 12, 0, 3 * k, 250_000, tzinfo=timezone(timedelta(hours=2))) for k in range(4)]
    buckets = (1, 2, 4, 8, 16, 32)  # upper bounds, in the view's unit

    def rows(k: int) -> list[tuple[float, float]]:  # cumulative waits, summed over instances
        return [(b, 1000 * b + (k * k + 1) * (7 - i)) for i, b in enumerate(buckets)]

    got = run(script, {1: event, 2: "3", 3: "4", 4: kind}, times, rows)
    assert got.binds == {":event": event, ":pause": 3.0, ":view_kind": kind.lower()}
    assert got.samples == 4
    column = view.bucket_column.lower()
    assert got.query == (f"select {column}, sum(wait_count) from {view.name.lower()} where event = :ev "
                         f"group by {column} order by 1")
    # The event name is substituted once, into the literal assigned to :event; the query takes it only as a bind.
    text = substitute(script, {1: event, 2: "3", 3: "4", 4: kind})
    assert text.count(event) == 1 and f":event := q'[{event}]';" in text and "using :event" in text
    # SQL*Plus prints a blank line after each block's output (feedback is off: no 'PL/SQL procedure ...').
    printed = got.output.replace("<end record>\n", "<end record>\n\n")
    result = CliRunner().invoke(cli.main, ["report", "--format", "json", "-"], input=printed)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    streams = doc["streams"]
    assert len(streams) == 1, (result.stderr[-1000:], printed[:600])
    (stream,) = streams
    assert stream["stream"] == {"label": event.replace(",", ";"), "datasource": "oracle", "unit": view.unit}
    assert stream["columns"] == 3 and doc["errors"] == {"skipped_records": 0, "messages": []}
    assert (stream["start"], stream["end"]) == (times[0].timestamp(), times[-1].timestamp())
    scale = 1e-6 if view.unit == "microsec" else 1e-3
    assert [(b["low"], b["high"]) for b in stream["buckets"]] == pytest.approx([((v > 1) * v / 2 * scale, v * scale)
                                                                                for v in buckets], rel=1e-12)
    for col in range(3):  # oracle bucket v is [v/2, v), 1 is [0, 1); counts are the waits added between samples
        added = [new - old for (_, old), (_, new) in zip(rows(col), rows(col + 1), strict=True)]
        assert stream["frequency"][col] == pytest.approx([n / 3.0 for n in added], rel=1e-12)


# -- a restarted instance, unusable rows, a PDB not yet open ------------------------------------------------------


def restart_samples() -> list[list[tuple[int, str, int, int]]]:
    """Instance 2 is absent for one sample and comes back restarted: bucket 1 fell (1,000,000 → 100), a rarely hit
    bucket grew past its old value (5 → 10) and an empty one now holds 3: 113 waits since the restart."""
    before, after = {1: 1_000_000, 2: 5, 4: 0}, {1: 100, 2: 10, 4: 3}

    def inst1(k: int) -> list[tuple[int, str, int, int]]:
        return [(1, EVENT, b, 1000 + 10 * k) for b in (1, 2, 4)]

    return [inst1(0) + [(2, EVENT, b, v) for b, v in before.items()],
            inst1(1) + [(2, EVENT, b, v) for b, v in before.items()],
            inst1(2),
            inst1(3) + [(2, EVENT, b, v) for b, v in after.items()],
            inst1(4) + [(2, EVENT, b, v) for b, v in after.items()]]


@pytest.mark.parametrize("per_instance", [True, False])
def test_a_restarted_instance_counts_all_its_new_values(per_instance):
    samples = restart_samples()
    items = collect(make_source(FakeDb(list(samples), version="11.2"), FakeClock(), per_instance=per_instance))
    by_stream: dict[str, list[Interval]] = {}
    for iv in intervals(items):
        by_stream.setdefault(iv.stream.label, []).append(iv)
    since_restart = slot_counts(samples[3], inst=2)
    assert since_restart.sum() == 113
    if per_instance:
        inst2 = by_stream[f"{EVENT} inst 2"]
        assert [iv.reset for iv in inst2] == [False, False, True, False]  # absent at sample 2: an empty column
        assert [int(iv.counts.sum()) for iv in inst2] == [0, 0, 113, 0]
        np.testing.assert_array_equal(inst2[2].counts, since_restart)
        assert [int(iv.counts.sum()) for iv in by_stream[f"{EVENT} inst 1"]] == [30, 30, 30, 30]
    else:
        ivs = by_stream[EVENT]
        assert [iv.reset for iv in ivs] == [False, False, True, False]
        np.testing.assert_array_equal(ivs[2].counts, since_restart + slot_counts(samples[3], 1)
                                      - slot_counts(samples[2], 1))


@pytest.mark.parametrize("per_instance", [False, True])
def test_a_restart_seen_in_one_event_counts_all_new_values_of_the_instances_other_events(per_instance):
    """Instance 2 restarts between polls 1 and 2: its `E` falls (110 → 3), so its `F` (6 → 20, up) also counts all
    20 waits since the restart, flagged reset; instance 1 goes on as diffed (hand count: F = 1 + 20 = 21)."""
    samples = [[(1, "E", 1, 1000), (1, "F", 1, 5), (2, "E", 1, 100), (2, "F", 1, 5)],
               [(1, "E", 1, 1010), (1, "F", 1, 6), (2, "E", 1, 110), (2, "F", 1, 6)],
               [(1, "E", 1, 1020), (1, "F", 1, 7), (2, "E", 1, 3), (2, "F", 1, 20)]]
    items = collect(make_source(FakeDb(samples, version="11.2"), FakeClock(), events=("E", "F"),
                                per_instance=per_instance))
    got = {(iv.stream.label, iv.start): (int(iv.counts.sum()), iv.reset) for iv in intervals(items)}
    t0, t1 = FakeClock().now, FakeClock().now + 3.0
    if per_instance:
        assert got == {("E inst 1", t0): (10, False), ("E inst 1", t1): (10, False),
                       ("F inst 1", t0): (1, False), ("F inst 1", t1): (1, False),
                       ("E inst 2", t0): (10, False), ("E inst 2", t1): (3, True),
                       ("F inst 2", t0): (1, False), ("F inst 2", t1): (20, True)}
    else:
        assert got == {("E", t0): (20, False), ("E", t1): (10 + 3, True),
                       ("F", t0): (2, False), ("F", t1): (1 + 20, True)}


def test_an_event_with_no_row_after_its_instances_restart_counts_from_0_when_it_comes_back():
    """`G` waited 6 times before instance 2 restarted, has no row at the restart (no wait since), then 8: all 8 are
    new (not 8 - 6), though 8 is past its old count."""
    samples = [[(2, "E", 1, 100), (2, "G", 1, 5)], [(2, "E", 1, 110), (2, "G", 1, 6)], [(2, "E", 1, 3)],
               [(2, "E", 1, 4), (2, "G", 1, 8)]]
    items = collect(make_source(FakeDb(samples, version="11.2"), FakeClock(), events=("E", "G")))
    assert [(int(iv.counts.sum()), iv.reset) for iv in intervals(items) if iv.stream.label == "G"] == \
        [(1, False), (0, False), (8, False)]


def test_an_unusable_count_keeps_its_bucket_and_fakes_no_restart():
    good = [[(1, EVENT, b, 100 * k + b) for b in (1, 2, 4)] for k in range(4)]
    samples = [good[0], [r if r[2] != 2 else (1, EVENT, 2, -7) for r in good[1]], good[2], good[3]]
    items = collect(make_source(FakeDb(list(samples), version="11.2"), FakeClock()))
    ivs = intervals(items)
    assert [iv.reset for iv in ivs] == [False, False, False]
    slot2 = slot_counts([(1, EVENT, 2, 1)]).argmax()
    assert [int(iv.counts[slot2]) for iv in ivs] == [0, 200, 100]  # unknown at sample 1: its growth comes at 2
    np.testing.assert_array_equal(sum(iv.counts for iv in ivs), slot_counts(good[3]) - slot_counts(good[0]))


def test_unusable_rows_are_said_once_until_they_change_and_skip_no_record(cli_db):
    def sample(k: int, bad: list[tuple[int, str, int, int]]) -> list[tuple[int, str, int, int]]:
        return [(1, EVENT, 1, 100 * k), (1, EVENT, 2, 50 * k), *bad]

    bucket3 = [(1, EVENT, 3, 7)]
    steps = [sample(k, bucket3) for k in range(6)] + [sample(k, [*bucket3, (2, EVENT, 8, -1)]) for k in (6, 7)]
    items = collect(make_source(FakeDb(steps, version="11.2"), FakeClock()))
    notes = [i for i in items if isinstance(i, Notice)]
    assert len(notes) == 2 and all(n.skipped == 0 for n in notes)
    assert "1 unusable row" in notes[0].message and "bucket 3 is not a power of 2" in notes[0].message
    assert "2 unusable rows" in notes[1].message and "inst 2: bucket 8 has an unusable count" in notes[1].message
    assert [int(iv.counts.sum()) for iv in intervals(items)][:5] == [150] * 5
    cli_db["db"] = FakeDb([sample(k, bucket3) for k in range(6)], version="11.2")
    res = invoke("oracle", "--dsn", DSN, "--user", "scott", "--plain", "--once", "--count", "5")
    assert res.exit_code == 0 and res.stderr.count("unusable row") == 1
    assert "skipped records: 0" in res.stdout


def test_a_pdb_not_yet_open_is_retried_like_a_database_not_available():
    db = FakeDb([*example_rows()[:2], DatabaseError("ORA-01092: ORACLE instance terminated. Disconnection forced"),
                 *example_rows()[2:5]], version="11.2")
    db.connect_script = [None, DatabaseError("ORA-01034: ORACLE not available"),
                         DatabaseError("ORA-01109: database not open")]
    items = collect(make_source(db, FakeClock()))
    notes = [i.message for i in items if isinstance(i, Notice)]
    assert "reconnected after 3 attempts" in notes[-1] and len(db.connects) == 4
    assert intervals(items, gap=True) and len(intervals(items, gap=False)) == 1 + 2


# -- an event's first waits after monitoring started ------------------------------------------------------------

SYNC = "log file sync"


def first_waits_samples(n: int = 6) -> list[list[tuple[int, str, int, int]]]:
    """Both instances wait on EVENT from the start; `log file sync` has no row until its first waits, 5 on instance
    1 between samples 2 and 3 (Oracle lists no row for an event that never waited), then 4 an interval; instance 2
    first waits on it (3 waits) between samples 4 and 5."""
    out = []
    for k in range(n):
        rows = [(1, EVENT, 1, 100 + 10 * k), (2, EVENT, 1, 50 + 5 * k)]
        if k >= 3:
            rows.append((1, SYNC, 2, 5 + 4 * (k - 3)))
        if k >= 5:
            rows.append((2, SYNC, 4, 3))
        out.append(rows)
    return out


@pytest.mark.parametrize("per_instance", [False, True])
def test_an_events_first_rows_after_the_first_poll_are_that_intervals_waits(per_instance):
    clock = FakeClock()
    start = clock.now
    items = collect(make_source(FakeDb(first_waits_samples(), version="11.2"), clock, events=(EVENT, SYNC),
                                per_instance=per_instance))
    by_label: dict[str, list[Interval]] = {}
    for iv in intervals(items):
        by_label.setdefault(iv.stream.label, []).append(iv)
    if per_instance:  # before its first rows it did not wait: empty columns from the first poll on
        inst1, inst2 = by_label[f"{SYNC} inst 1"], by_label[f"{SYNC} inst 2"]
        assert [int(iv.counts.sum()) for iv in inst1] == [0, 0, 5, 4, 4]
        assert inst1[2].start == start + 6.0 and inst1[2].counts[1] == 5  # bucket 2 ms: slot 1
        assert [int(iv.counts.sum()) for iv in inst2] == [0, 0, 0, 0, 3] and inst2[4].counts[2] == 3
    else:
        sync = by_label[SYNC]
        assert [int(iv.counts.sum()) for iv in sync] == [0, 0, 5, 4, 4 + 3]
        assert (sync[2].start, sync[2].end) == (start + 6.0, start + 9.0)
    assert all([(iv.start, iv.end) for iv in ivs] == [(iv.start, iv.end) for iv in by_label[EVENT if not per_instance
                else f"{EVENT} inst 1"]] for ivs in by_label.values())
    assert not any(iv.reset for iv in intervals(items))
    assert not [i for i in items if isinstance(i, Notice)]  # the event was named right: nothing said


@pytest.mark.parametrize("per_instance", [True, False])
def test_an_instances_first_poll_stays_its_baseline(per_instance):
    samples, read = first_waits_samples(), "direct path read"
    late = [rows if k < 2 else [*rows, (3, EVENT, 1, 1000 + k), (3, read, 1, 70 + k)] for k, rows in enumerate(samples)]
    items = collect(make_source(FakeDb(late, version="11.2"), FakeClock(), events=(EVENT, read),
                                per_instance=per_instance))
    sums = {label: [int(iv.counts.sum()) for iv in intervals(items) if iv.stream.label == label]
            for label in {iv.stream.label for iv in intervals(items)}}
    if per_instance:  # its waits before it was polled are not counted, nor are they said to be none
        assert sums[f"{EVENT} inst 3"] == sums[f"{read} inst 3"] == [1, 1, 1]
    else:  # not waited on the instances watched from the first poll, and instance 3's first rows are its baseline
        assert sums[read] == [0, 0, 1, 1, 1] and sums[EVENT] == [15, 15, 16, 16, 16]


def test_the_first_poll_after_a_reconnect_is_a_baseline_again():
    samples = first_waits_samples()
    steps: list[Any] = [*samples[:2], DatabaseError(LOST), *samples[3:]]
    items = collect(make_source(FakeDb(steps, version="11.2"), FakeClock(), events=(EVENT, SYNC)))
    sync = [iv for iv in intervals(items) if iv.stream.label == SYNC]
    # its first rows came on the poll after the reconnect: that poll is a baseline (the outage hides when its waits
    # were); before the outage it did not wait (an empty column), the outage is gap columns as for EVENT
    assert [(int(iv.counts.sum()), iv.gap) for iv in sync] == [(0, False), (0, True), (4, False), (4 + 3, False)]
    event = [iv for iv in intervals(items) if iv.stream.label == EVENT]
    assert [(iv.start, iv.end, iv.gap) for iv in sync] == [(iv.start, iv.end, iv.gap) for iv in event]


def test_an_event_without_rows_is_said_after_a_minute_of_polls_not_at_the_start():
    samples = [[(1, EVENT, 1, 100 + k)] for k in range(30)]
    items = collect(make_source(FakeDb(samples, version="11.2"), FakeClock(), events=(EVENT, "Log File Sync")))
    notes = [(k, i.message) for k, i in enumerate(items) if isinstance(i, Notice)]
    ivs_before = [i for i in items[: notes[0][0]] if isinstance(i, Interval)] if notes else []
    assert len(notes) == 1 and len(ivs_before) == 20  # 60 s at 3 s an interval: after the 21st poll
    message = notes[0][1]
    assert "no histogram rows for event 'Log File Sync'" in message and "in 21 polls (60s)" in message
    assert "has not waited there since the instance started" in message and "case-sensitive" in message


def test_an_event_without_rows_is_said_at_the_end_of_a_limited_run_and_not_when_it_came():
    samples = first_waits_samples()
    items = collect(make_source(FakeDb(samples, version="11.2"), FakeClock(), events=(EVENT, SYNC, "nope"),
                                count=5))
    assert len(intervals(items)) == 5 + 5  # SYNC's too, empty before its first waits
    notes = [i.message for i in items if isinstance(i, Notice)]
    assert len(notes) == 1 and "'nope'" in notes[0] and "in 6 polls (15s)" in notes[0]
    assert isinstance(items[-1], Notice)


def test_report_of_an_event_whose_first_waits_come_mid_run(cli_db):
    cli_db["db"] = FakeDb(first_waits_samples(), version="11.2")
    res = invoke("report", "--format", "json", "oracle", "--dsn", DSN, "--user", "scott", "--event", EVENT,
                 "--event", SYNC, "--count", "5")
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    sync = next(s for s in doc["streams"] if s["stream"]["label"] == SYNC)
    assert sync["total"]["events"] == 5 + 4 + 4 + 3
    assert "no histogram rows" not in res.stderr


def late_event_samples(n: int = 6, first: int = 3) -> list[list[tuple[int, str, int, int]]]:
    """n polls of the captured gv$event_histogram rows (EVENT, two RAC instances), and `log file sync`, first waiting
    on instance 1 between polls `first - 1` and `first` and on instance 2 one poll later. Its rows are captured counts
    too, less those of the record before its first waits (record 20 on instance 1, 7 on the nearly idle instance 2),
    only the buckets hit (Oracle lists an event once it has waited)."""
    captured, sync = example_rows(), example_rows(SYNC)

    def since(inst: int, base: int, k: int) -> list[tuple[int, str, int, int]]:
        before = {v: c for i, _, v, c in sync[base] if i == inst}
        return [(i, e, v, c - before[v]) for i, e, v, c in sync[k] if i == inst and c > before[v]]

    return [captured[k] + (since(1, 20, 21 + k - first) if k >= first else [])
            + (since(2, 7, 8 + k - first - 1) if k > first else []) for k in range(n)]


def late_counts(rows: list[tuple[int, str, int, int]], inst: int | None = None) -> np.ndarray:
    """`log file sync`'s cumulative counts in one poll's rows (of one instance)."""
    return slot_counts([r for r in rows if r[1] == SYNC], inst)


@pytest.mark.parametrize("per_instance", [False, True])
def test_an_event_first_seen_at_poll_3_of_6_is_watched_from_the_first_poll(cli_db, per_instance):
    """Its rate is over the 15 s the instance was watched, not over the 9 s since its first column; its columns are
    the other stream's, empty until its first waits."""
    samples = late_event_samples()
    cli_db["db"] = FakeDb(list(samples), version="11.2")
    start = FakeClock().now
    args = ["oracle", "--dsn", DSN, "--user", "scott", "--event", EVENT, "--event", SYNC, "--count", "5"]
    res = invoke("report", "--format", "json", *args, *["--per-instance"] * per_instance)
    assert res.exit_code == 0, res.stderr
    streams = {s["stream"]["label"]: s for s in json.loads(res.stdout)["streams"]}
    for inst, first in ((1, 2), (2, 3)) if per_instance else ((None, 2),):  # the column of its first waits
        since = [late_counts(rows, inst) for rows in samples]  # zero before its first rows: it had not waited
        columns = [since[k + 1] - since[k] for k in range(5)]
        assert not any(c.any() for c in columns[:first]) and columns[first].any()
        name = SYNC if inst is None else f"{SYNC} inst {inst}"
        sync, event = streams[name], streams[name.replace(SYNC, EVENT)]
        assert (sync["columns"], sync["start"], sync["end"]) == (event["columns"], event["start"], event["end"]) \
            == (5, start, start + 15.0)
        assert sync["total"]["events"] == int(since[5].sum())
        slots = [round(math.log2(b["high"] * 1e3)) for b in sync["buckets"]]  # bucket v ms: [v/2, v), slot log2(v)
        assert sync["frequency"] == [pytest.approx((c[slots] / 3.0).tolist(), rel=1e-12) for c in columns]
        assert not [f for f in sync["findings"] if f["kind"] == "silence"] and sync["gaps"] == sync["resets"] == []
    total = int(late_counts(samples[5]).sum())
    cli_db["db"] = FakeDb(list(samples), version="11.2")
    text = invoke("report", *args).stdout
    assert f"5 intervals over 15s: {total:,} events ({format_number(total / 15.0)}/s)" in text


def test_the_empty_columns_before_an_events_first_waits_are_said_as_the_work_starting_not_a_stall(cli_db):
    """First waits at poll 10 of 40: its 9 empty columns are a silence at the range's start (it did not wait: the
    capture began before that work), and nothing else; the stream watched all along has none."""
    cli_db["db"] = FakeDb(late_event_samples(40, first=10), version="11.2")
    res = invoke("report", "--format", "json", "oracle", "--dsn", DSN, "--user", "scott", "--event", EVENT,
                 "--event", SYNC, "--count", "39")
    assert res.exit_code == 0, res.stderr
    streams = {s["stream"]["label"]: s for s in json.loads(res.stdout)["streams"]}
    sync, event = streams[SYNC], streams[EVENT]
    assert sync["columns"] == event["columns"] == 39 and sync["frequency"][9] != [0.0] * len(sync["buckets"])
    (silence,) = [f for f in sync["findings"] if f["kind"] == "silence"]
    assert (silence["where"]["first_col"], silence["where"]["last_col"]) == (0, 8)
    assert silence["why"].startswith("the capture began before the work did")
    assert not [e for e in sync["episodes"] + event["episodes"] if e["kind"] == "stall"]
    assert sync["gaps"] == sync["resets"] == [] and not [f for f in event["findings"] if f["kind"] == "silence"]


def test_oracles_first_bucket_spans_from_0_in_rows_tables_and_json(example_data, tmp_path):
    """Oracle's `1` bucket is "< 1 ms" (no smaller bucket): `[0, 1ms)`, labelled so; its intensity stays PyLatencyMap's
    0.75 ms a wait, and a PyLatencyMap record of it still says 1."""
    plain = invoke("--plain", "--once", "--datasource", "oracle", str(example_data)).stdout
    rows = [line.split()[0] for line in plain.splitlines() if line.startswith("  ") and line.split()]
    assert "<1ms" in rows and "500µs" not in plain
    doc = json.loads(invoke("report", "--format", "json", "--datasource", "oracle", str(example_data)).stdout)
    first = doc["streams"][0]["buckets"][0]
    assert (first["low"], first["high"]) == (0.0, pytest.approx(1e-3))
    text = invoke("report", "--datasource", "oracle", str(example_data)).stdout
    assert re.search(r"^\s+0–1ms\s+156,979\s", text, re.M), text
    rec = tmp_path / "compat.txt"
    invoke("--plain", "--once", "--record", str(rec), "--compat", "--datasource", "oracle", str(example_data))
    compat = rec.read_text()
    assert "\n1, " in compat and "\n0, " not in compat


def test_report_rates_stay_true_through_a_wall_clock_step_back(cli_db):
    """The defect as a user met it: `report oracle --count 8` with the clock stepped back 30 s at the 4th poll gave
    columns of 3, 3, 6, 3... s and a rate of 600/s in one; each is 100/s, and stderr says the step once."""
    start = cli_db["clock"].now
    cli_db["db"] = steady_db(12, cli_db["clock"], -30.0)
    res = invoke("report", "--format", "json", "oracle", "--dsn", DSN, "--user", "scott", "--count", "8")
    assert res.exit_code == 0, res.stderr
    (stream,) = json.loads(res.stdout)["streams"]
    assert (stream["columns"], stream["start"], stream["end"]) == (8, start, start + 24.0)
    assert [sum(column) for column in stream["frequency"]] == [pytest.approx(100.0)] * 8
    assert res.stderr.count("the system clock stepped back by 30s") == 1
