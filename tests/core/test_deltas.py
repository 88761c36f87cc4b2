from __future__ import annotations

import numpy as np

from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, IntervalRun, Notice, Snapshot, SnapshotRun, StreamId
from latencymap.flow.inputs import read_input
from latencymap.plugins import load_registry

S = StreamId("s", "bpf", "microsec")


def snap(ts: float | None, values: list[int], sums: list[float] | None = None) -> Snapshot:
    counts = np.zeros(64, dtype=np.int64)
    counts[: len(values)] = values
    s = None
    if sums is not None:
        s = np.zeros(64)
        s[: len(sums)] = sums
    return Snapshot(S, ts, counts, s)


def test_first_snapshot_is_baseline_then_deltas() -> None:
    d = Differ()
    assert d.push(snap(1.0, [5, 5])) is None
    iv = d.push(snap(3.0, [7, 9]))
    assert isinstance(iv, Interval)
    assert (iv.start, iv.end) == (1.0, 3.0)
    assert iv.counts[:2].tolist() == [2, 4]
    assert not iv.reset


def test_counter_going_down_is_a_reset_never_negative() -> None:
    d = Differ()
    d.push(snap(1.0, [100, 50]))
    iv = d.push(snap(2.0, [3, 60]))
    assert isinstance(iv, Interval) and iv.reset
    assert iv.counts[:2].tolist() == [3, 10]
    assert (iv.counts >= 0).all()


def test_a_restart_the_source_says_counts_every_counter_anew_though_some_went_up() -> None:
    """A program started again (bpftrace's banner mid-input): its first print holds exactly the events since, a reset,
    also in the buckets that happen to hold more than before it and the ones its print left unread (0: empty)."""
    d = Differ()
    d.push(snap(1.0, [100, 50, 7]))
    again = snap(2.0, [3, 60, 0], [0.1, 0.2, 0.0])
    again.restart, again.present = True, np.arange(64) != 2
    iv = d.push(again)
    assert isinstance(iv, Interval) and iv.reset
    assert iv.counts[:3].tolist() == [3, 60, 0] and iv.time is not None and iv.time[:2].tolist() == [0.1, 0.2]
    after = d.push(snap(3.0, [4, 61, 1]))
    assert isinstance(after, Interval) and not after.reset and after.counts[:3].tolist() == [1, 1, 1]


def test_missing_timestamp_uses_arrival_time() -> None:
    times = iter([10.0, 12.5])
    d = Differ(clock=lambda: next(times))
    d.push(snap(None, [1]))
    iv = d.push(snap(None, [4]))
    assert isinstance(iv, Interval) and (iv.start, iv.end) == (10.0, 12.5)


def test_timestamp_not_increasing_skips_with_warning_and_keeps_baseline() -> None:
    d = Differ(name="f.txt")
    d.push(snap(5.0, [1]))
    note = d.push(snap(5.0, [3]))
    assert isinstance(note, Notice) and "does not increase" in note.message and "f.txt" in note.message
    assert d.push_items(snap(4.0, [3])) == []  # said once its fate is known: skipped, or another run's baseline
    note, iv = d.push_items(snap(6.0, [4]))
    assert isinstance(note, Notice) and "timestamp 4.000000 does not increase" in note.message and note.skipped == 1
    assert isinstance(iv, Interval) and iv.counts[0] == 3 and iv.start == 5.0
    d.push(snap(5.5, [5]))
    assert [n.message for n in d.baselines_only()] == \
        ["f.txt: timestamp 5.500000 does not increase (previous 6.000000); record skipped"]  # the input ended


def test_a_capture_joined_to_itself_skips_no_record() -> None:
    """`cat capture capture`: the second copy's first record is its run's baseline, not a record skipped (it was
    counted as one: 'Skipped records: 1', and --strict failed, where every record was used)."""
    d = Differ(name="twice.txt")
    copy = [snap(1.0, [1]), snap(2.0, [3]), snap(3.0, [6])]
    again = [snap(s.timestamp, s.counts[:1].tolist()) for s in copy]
    items = [item for s in [*copy, *again] for item in d.push_items(s)]
    items += d.baselines_only()
    assert [int(i.counts[0]) for i in items if isinstance(i, Interval)] == [2, 3, 2, 3]
    (note,) = [i for i in items if isinstance(i, Notice)]
    assert note.skipped == 0 and "another run" in note.message, note.message


def test_sums_are_diffed_too() -> None:
    d = Differ()
    d.push(snap(1.0, [1, 1], [0.5, 1.0]))
    iv = d.push(snap(2.0, [2, 3], [0.75, 4.0]))
    assert isinstance(iv, Interval) and iv.time is not None
    assert np.allclose(iv.time[:2], [0.25, 3.0])


def test_streams_are_diffed_separately() -> None:
    d = Differ()
    other = StreamId("t", "bpf", "microsec")
    d.push(snap(1.0, [1]))
    assert d.push(Snapshot(other, 1.5, np.ones(64, dtype=np.int64))) is None
    iv = d.push(snap(2.0, [4]))
    assert isinstance(iv, Interval) and iv.counts[0] == 3


def _partial(ts: float, values: dict[int, int]) -> Snapshot:
    """A snapshot that lists only some buckets (a restarted Oracle instance lists only those hit since)."""
    counts = np.zeros(64, dtype=np.int64)
    present = np.zeros(64, dtype=bool)
    for slot, value in values.items():
        counts[slot], present[slot] = value, True
    return Snapshot(S, ts, counts, present=present)


def test_restart_counts_the_new_record_and_restarts_the_baseline() -> None:
    d = Differ()
    d.push(_partial(1.0, {0: 100, 1: 50, 2: 7}))
    iv = d.push(_partial(2.0, {0: 3, 1: 4}))  # every counter that was non-zero went down (bucket 2 not hit yet)
    assert isinstance(iv, Interval) and iv.reset
    assert iv.counts[:3].tolist() == [3, 4, 0]
    iv = d.push(_partial(3.0, {0: 5, 1: 6, 2: 9}))  # bucket 2 counts from 0 since the restart, not from 7
    assert isinstance(iv, Interval) and not iv.reset
    assert iv.counts[:3].tolist() == [2, 2, 9]


def test_partial_reset_is_per_bucket() -> None:
    d = Differ()
    d.push(_partial(1.0, {0: 100, 1: 50}))
    iv = d.push(_partial(2.0, {0: 3, 1: 60}))  # one counter went down, one went on: no restart
    assert isinstance(iv, Interval) and iv.reset
    assert iv.counts[:2].tolist() == [3, 10]
    iv = d.push(_partial(3.0, {0: 4}))  # a bucket missing from a record keeps its last value
    assert isinstance(iv, Interval) and not iv.reset and iv.counts[:2].tolist() == [1, 0]


IO = StreamId("io", "bpf", "microsec")
LONE = "f.txt: 'io': 1 record, the baseline of cumulative counters; a column needs a second record"


def _notes(items: list) -> list[str]:
    """The notes that skip nothing (a record skipped for its timestamp is another notice)."""
    return [i.message for i in items if isinstance(i, Notice) and not i.skipped]


def test_a_stream_that_gave_only_its_baseline_is_named_when_the_input_ends() -> None:
    """One record of a stream makes no column, but it was read: the end of the input says so (a report of it said
    only "No data.")."""
    lone = Snapshot(IO, 2.0, np.zeros(64, dtype=np.int64))
    out = list(Differ(name="f.txt").run([snap(1.0, [5]), lone, snap(2.0, [7])]))
    assert [type(i) for i in out] == [Interval, Notice]
    assert _notes(out) == [LONE]
    assert _notes(list(Differ(name="f.txt").run([snap(1.0, [5]), snap(2.0, [7])]))) == []


def test_records_none_later_than_the_baseline_are_counted_in_the_note() -> None:
    out = list(Differ(name="f.txt").run([snap(5.0, [1]), snap(5.0, [2]), snap(4.0, [3])]))
    assert not [i for i in out if isinstance(i, Interval)]
    assert _notes(out) == ["f.txt: 's': 3 records, none later than the first (the baseline of cumulative "
                               "counters); a column needs a record with a later timestamp"]


def test_a_run_diffed_in_bulk_names_its_lone_baseline_too() -> None:
    counts = np.zeros((4, 64), dtype=np.int64)
    counts[:, 0] = [1, 3, 2, 6]
    run = SnapshotRun([S, S, IO, S], np.array([1, 2, 2, 3], dtype=np.int64) * 1_000_000, counts,
                      np.ones((4, 64), dtype=bool), [""] * 4, [1, 2, 3, 4])
    out = list(Differ(name="f.txt").run_columns([run]))
    assert sum(len(i) for i in out if isinstance(i, IntervalRun)) == 2
    assert _notes(out) == [LONE]


def test_a_streams_first_interval_keeps_its_baselines_date() -> None:
    """The baseline record gives no interval: its date text rides on the first one (`--compat` writes it back),
    one snapshot at a time and in runs diffed in bulk (a stream whose baseline came in an earlier run too)."""
    def dated(ts: float, date: str) -> Snapshot:
        s = snap(ts, [int(ts)])
        s.date = date
        return s

    one = list(Differ().run([dated(1.0, "first"), dated(2.0, "second"), dated(3.0, "third")]))
    assert [(i.date, i.start_date) for i in one if isinstance(i, Interval)] == [("second", "first"), ("third", "")]
    counts = np.zeros((5, 64), dtype=np.int64)
    counts[:, 0] = [1, 1, 2, 3, 4]
    run = SnapshotRun([S, IO, S, S, IO], np.array([1, 1, 2, 3, 3], dtype=np.int64) * 1_000_000, counts,
                      np.ones((5, 64), dtype=bool), ["s1", "io1", "s2", "s3", "io3"], [1, 2, 3, 4, 5])
    differ = Differ()
    (bulk,) = [i for i in differ.run_columns([run]) if isinstance(i, IntervalRun)]
    assert [(iv.stream, iv.date, iv.start_date) for iv in bulk.intervals()] == [
        (S, "s2", "s1"), (S, "s3", ""), (IO, "io3", "io1")]
    assert bulk.head(1).start_dates == {0: "s1"}
    lone = SnapshotRun([IO], np.array([1], dtype=np.int64) * 1_000_000, counts[:1], np.ones((1, 64), dtype=bool),
                       ["a1"], [1])
    later = SnapshotRun([IO, IO], np.array([2, 3], dtype=np.int64) * 1_000_000, counts[1:3],
                        np.ones((2, 64), dtype=bool), ["a2", "a3"], [2, 3])
    differ = Differ()
    got = [iv for item in differ.run_columns([lone, later]) if isinstance(item, IntervalRun)
           for iv in item.intervals()]
    assert [(iv.date, iv.start_date) for iv in got] == [("a2", "a1"), ("a3", "")]


EPOCH_NOTE = "timestamp 0 (the epoch: no time yet"
T0 = 1_377_520_821  # the first dated record of PyLatencyMap's 10046 connector on its sample trace


def _columns(items: list) -> list[Interval]:
    return [iv for item in items if isinstance(item, Interval | IntervalRun)
            for iv in (item.intervals() if isinstance(item, IntervalRun) else [item])]


def test_a_baseline_at_the_epoch_before_dated_records_has_no_time() -> None:
    """PyLatencyMap's 10046 connector writes its first record at timestamp 0: the column up to the next record has
    no known start. It keeps its events but takes the next column's length, not 43 years; the note names the line.
    One snapshot at a time, in runs diffed in bulk, and split across runs."""
    def at(ts: float, n: int, line: int) -> Snapshot:
        s = snap(ts, [n])
        s.line, s.micros = line, int(ts * 1_000_000)
        return s

    snaps = [at(0, 1, 1), at(T0, 141, 8), at(T0 + 3, 400, 20), at(T0 + 6, 500, 30)]
    counts = np.zeros((4, 64), dtype=np.int64)
    counts[:, 0] = [1, 141, 400, 500]
    micros = np.array([0, T0, T0 + 3, T0 + 6], dtype=np.int64) * 1_000_000
    run = SnapshotRun([S] * 4, micros, counts, np.ones((4, 64), dtype=bool), [""] * 4, [1, 8, 20, 30])
    halves = [SnapshotRun([S] * k, micros[a:a + k], counts[a:a + k], np.ones((k, 64), dtype=bool), [""] * k,
                          [1, 8, 20, 30][a:a + k]) for a, k in ((0, 1), (1, 1), (2, 2))]
    for out in (list(Differ(name="c.txt").run(snaps)), list(Differ(name="c.txt").run_columns([run])),
                list(Differ(name="c.txt").run_columns(halves))):
        cols = _columns(out)
        assert [(iv.start, iv.end, iv.duration, int(iv.counts[0])) for iv in cols] == [
            (T0 - 3, T0, 3.0, 140), (T0, T0 + 3, 3.0, 259), (T0 + 3, T0 + 6, 3.0, 100)]
        (note,) = _notes(out)
        assert note.startswith(f"c.txt: line 1: 's': {EPOCH_NOTE}") and "the 140 events up to the next record " \
            "(line 8) are given the length of the column after it (3 s)" in note


def test_a_baseline_at_the_epoch_and_one_record_make_no_column_and_say_why() -> None:
    out = list(Differ(name="c.txt").run([snap(0, [1]), snap(T0, [141])]))
    assert not _columns(out)
    (note,) = _notes(out)
    assert EPOCH_NOTE in note and "the 140 events between them have no known start" in note


def test_a_time_of_day_baseline_at_midnight_is_a_time() -> None:
    """Timestamp 0 followed by times of day (PyLatencyMap's Oracle scripts: microseconds since midnight) is
    midnight, a real time."""
    out = list(Differ().run([snap(0, [1]), snap(3.0, [5]), snap(6.0, [9])]))
    assert [(iv.start, iv.end) for iv in _columns(out)] == [(0, 3.0), (3.0, 6.0)] and not _notes(out)


def test_pylatencymaps_10046_connector_output_gives_its_trace_rate(fixtures) -> None:  # type: ignore[no-untyped-def]
    """The connector's real output (fixtures/pylatencymap/NOTICE says how it was made from the shipped trace): 28,693
    events from 1377520818 (the first column given the next one's 3 s) to its last record, about 162/s as the
    trace read directly gives, not 2e-5/s over 15,944 days."""
    path = str(fixtures / "pylatencymap" / "10046_connector_output.txt")
    for runs in (False, True):
        out = list(Differ(name=path).run_columns(read_input(path, load_registry(), runs=runs)))
        cols = _columns(out)
        events = sum(int(iv.counts.sum()) for iv in cols)
        span = cols[-1].end - cols[0].start
        assert (len(cols), events, cols[0].start, int(cols[0].counts.sum())) == (59, 28_693, T0 - 3, 140)
        assert sum(iv.duration for iv in cols) == span == 177.0 and 160 < events / span < 165
        (note,) = [n for n in _notes(out) if EPOCH_NOTE in n]
        assert note.startswith(f"{path}: line 1: ")


def test_a_run_shown_apart_measures_what_its_stream_does() -> None:
    """A capture joined to itself (`cat a a`): its second run goes back into the first's time, lower counters, and
    is shown apart under another name. What a note passed on said the stream measures (`Notice.measures`) is said of
    that run too, in the note that shows it apart."""
    said = Notice("a: logged by jHiccup", skipped=0, measures=(S, "jhiccup"))
    out = list(Differ(name="a").run([said, *(snap(t, [n]) for t, n in ((1.0, 1), (2.0, 5), (3.0, 9)) * 2)]))
    apart = {i.stream for i in out if isinstance(i, Interval)} - {S}
    assert len(apart) == 1
    measures = [n.measures for n in out if isinstance(n, Notice) and n.measures is not None]
    assert measures == [(S, "jhiccup"), (apart.pop(), "jhiccup")]


def test_a_recording_of_a_clock_step_back_reads_again_as_the_one_stream_it_was(tmp_path) -> None:
    """The columns after a step back of the clock were recorded in the past: `report` of the recording showed them
    apart as another run, where the view of the input kept one stream (with a span of -59.7min)."""
    import json

    from click.testing import CliRunner

    from latencymap.cli.main import main

    text = ""
    for k in range(20):
        micros = 1_700_000_000_000_000 + k * 1_000_000 - (3_600_000_000 if k >= 10 else 0)
        text += (f"<begin record>\ntimestamp, microsec, {micros}, d\nlabel, io\ndatasource, systemtap\n"
                 f"latencyunit, microsec\n64, {100 * k}\n1024, {k}\n<end record>\n")
    src, rec = tmp_path / "step.txt", tmp_path / "step.rec"
    src.write_text(text)
    ran = CliRunner().invoke(main, ["--plain", "--once", "--record", str(rec), str(src)])
    assert ran.exit_code == 0, ran.output
    reports = [json.loads(CliRunner().invoke(main, ["report", "--format", "json", str(p)]).output) for p in (src, rec)]
    for report in reports:
        (stream,) = report["streams"]
        assert stream["stream"]["label"] == "io" and stream["columns"] == 18
        assert stream["total"]["events"] == 18 * 101
        assert stream["end"] - stream["start"] == 18.0
