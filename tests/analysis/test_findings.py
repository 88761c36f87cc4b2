"""Findings' wording: human units at every scale, and causes in the terms of each datasource's events."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from diagnosis_support import paused

from latencymap.analysis.diagnosis import diagnose
from latencymap.analysis.findings import WHY, Scope, dur, since, span, why, with_cause
from latencymap.analysis.summary import stream_diagnosis
from latencymap.analysis.thresholds import Thresholds
from latencymap.cli.main import main
from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import bin_values, bounds_seconds
from latencymap.core.model import Interval, StreamId

LOW, HIGH = bounds_seconds("bpf", "nanosec")
SPARK_LOG = Path(__file__).resolve().parents[2] / "fixtures" / "spark" / "plain" / "local-1795225623494"
TRACE_10046 = Path(__file__).resolve().parents[2] / "fixtures" / "pylatencymap" / "test_10046_tracefile.trc"


def test_times_since_the_start_stay_in_seconds_below_1000_then_use_minutes_hours_days() -> None:
    assert [since(x) for x in (0.0, 2.011, 40.0, 999.0)] == ["0s", "2.011s", "40s", "999s"]
    assert since(18_000.0) == "5h" and since(3 * 86_400.0) == "3 days"
    when = Scope(0, 10, 0.0, 1e6, 0.0, 10.0, 1.0).when(3, 3, 172_800.0, 172_801.0)
    assert when == "col 3 (t+2 days–t+2 days)" and "e+" not in when


def test_durations_past_a_minute_read_in_minutes_hours_days_never_bare_seconds() -> None:
    assert dur(1e7) == "116 days" and span(537.0, 17_592_186.0) == "8.95min–204 days"
    assert dur(0.000131) == "131µs" and dur(2.05) == "2.05s"


def spark_like_run(straggler: float = 4.03e9) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Task durations binned by their end as the real rolling log of `job.py` was (3,144 tasks, 1 s columns): ~38 tasks
    a second of ~55 ms; the two warm-up tasks of stage 0 (3.6 s) end in col 0, a skewed partition (3.18 s) in col 7, a
    4.03 s `straggler` (ns; 0: none) in col 13 after no task ended in cols 11–12 (its siblings were done), and a stage
    of ~220 ms tasks in cols 30–34."""
    rng = np.random.default_rng(0)
    counts, times = [], []
    for j in range(60):
        values = rng.lognormal(np.log(220e6 if 30 <= j < 35 else 55e6), 0.2, 0 if j in (11, 12) else 38)
        values = np.r_[values, {0: [3.6e9, 3.58e9], 7: [3.18e9], 13: [straggler] if straggler else []}.get(j, [])]
        c, s = bin_values(values)
        counts.append(c)
        times.append(s * 1e-9)
    starts = 1_795_776_791.0 + np.arange(60.0)
    return np.array(counts), np.array(times), starts, starts + 1.0


#: What each datasource's findings must say (a phrase per kind) and must not (the generic causes wrong for it).
WORDS = {
    "spark": ({"stall": "a straggler (a skewed partition", "silence": "a task still running (a straggler",
               "move": "a new stage began"},
              ("GC", "a change of device", "the work, the source or its path stopped", "requests")),
    "training": ({"stall": "a checkpoint save, an eval pass", "silence": "ran untimed work (an eval pass",
                  "move": "another phase of the run"},
                 ("a lock, the network", "a change of device, load or configuration", "the source or its path")),
    "bpf": ({"stall": "(GC, a checkpoint, I/O, a lock, the network)",
             "silence": "the work, the source or its path stopped",
             "move": "a change of device, load or configuration"}, ()),
}


@pytest.mark.parametrize("datasource", list(WORDS))
def test_every_finding_kind_names_the_causes_its_datasource_s_events_have(datasource: str) -> None:
    """Spark's warm-up, skew and straggler tasks are no GC pause, its next stage no change of device, and a straggler
    running while no task ended no stop of the work; a training loop's stalls are checkpoints and eval passes."""
    counts, times, starts, ends = spark_like_run()
    d = diagnose(counts, times, LOW, HIGH, starts, ends, datasource=datasource)
    expected, wrong = WORDS[datasource]
    # The straggler's 4 s ran through cols 11–12: its stall says them (no silence too). Spark's slow tasks ending are
    # its stalls; elsewhere the stream completed its usual 38/s through the 3.6 s and 3.18 s waits of cols 0 and 7:
    # nothing was held up, no stall.
    ended = [("stall", 0), ("stall", 7)] if datasource == "spark" else []
    assert [(f.kind, f.first_col) for f in d.findings] == [*ended, ("stall", 13), ("move", 30)]
    # Without it, nothing says why no task ended there: the silence does.
    bare, bare_t, _, _ = spark_like_run(straggler=0)
    unsaid = diagnose(bare, bare_t, LOW, HIGH, starts, ends, datasource=datasource)
    assert [(f.kind, f.first_col) for f in unsaid.findings] == [*ended, ("silence", 11), ("move", 30)]
    for f in d.findings + unsaid.findings:
        assert expected[f.kind] in f.why, (f.kind, f.why)
        assert not any(w in f.why for w in wrong), (f.kind, f.why)
    (silence,) = [f for f in unsaid.findings if f.kind == "silence"]
    got = "no task ended" if datasource == "spark" else "no events"  # a Spark task is logged when it ends
    assert silence.what.startswith(f"silence cols 11–12 (t+11s–t+13s): {got} in 2s where the usual 38/s would give")


@pytest.mark.parametrize(("datasource", "causes"), [
    ("", "something held many requests up at once (a GC pause"),
    ("spark", "the slow tasks ended in a few columns, one stage's stragglers or skewed partitions"),
    ("training", "the loop was held up (a checkpoint save, an eval pass")])
def test_bursts_are_explained_in_their_datasource_s_terms(datasource: str, causes: str) -> None:
    counts, times, starts, ends = paused([30, 60, 90])
    (band,) = [f for f in diagnose(counts, times, LOW, HIGH, starts, ends, datasource=datasource).findings
               if f.kind == "band"]
    assert band.why.startswith("bursts, not a steady population") and causes in band.why


def test_a_spark_finding_about_slow_tasks_names_the_cause_its_source_knows_instead_of_the_usual_ones() -> None:
    """The 4.03 s straggler's stall (col 13) and the warm-up stalls: `with_cause` words the known cause in Spark's
    terms; a finding that guesses no cause of slow tasks (the move) and a datasource without such words keep theirs."""
    counts, times, starts, ends = spark_like_run()
    d = diagnose(counts, times, LOW, HIGH, starts, ends, datasource="spark")
    stall = next(f for f in d.findings if f.kind == "stall" and f.first_col == 13)
    move = next(f for f in d.findings if f.kind == "move")
    assert stall.key == "stall" and move.key == ""
    told = with_cause(stall, "it is a straggler on executor 3, slow in its stage", "spark")
    assert told.why == ("tasks far slower than every usual band ended then, not a pause of the work: it is a straggler "
                        "on executor 3, slow in its stage")
    assert told.what == stall.what and told.to_json()["where"] == stall.to_json()["where"]
    assert stall.why == WHY["spark"]["stall"]  # the diagnosis' own finding is not changed
    assert with_cause(move, "anything", "spark") is move
    generic = diagnose(counts, times, LOW, HIGH, starts, ends, datasource="bpf")
    assert all(with_cause(f, "anything", "bpf") is f for f in generic.findings)


def test_a_finding_holds_the_events_of_its_latency_range_that_ended_in_its_time() -> None:
    counts, times, starts, ends = spark_like_run()
    d = diagnose(counts, times, LOW, HIGH, starts, ends, datasource="spark")
    stall = next(f for f in d.findings if f.kind == "stall" and f.first_col == 13)
    assert stall.low_s is not None and stall.high_s is not None and stall.start is not None and stall.end is not None
    assert stall.low_s <= 4.03 <= stall.high_s and stall.start == starts[13] and stall.end == ends[13]
    assert stall.holds(4.03, starts[13] + 0.5) and stall.holds(stall.high_s, stall.end)
    assert not stall.holds(4.03, ends[14] - 0.5)  # another column's
    assert not stall.holds(stall.low_s / 2, starts[13] + 0.5)  # a faster task of its column


def test_two_straggler_tasks_of_a_real_spark_stage_are_named_as_stragglers_not_a_pause() -> None:
    """Stage 2 of the real fixture log: 30 tasks of 0.3 s and partitions 5 and 21 of 2.5 s."""
    r = CliRunner().invoke(main, ["report", "spark", str(SPARK_LOG), "--stage", "2"])
    assert r.exit_code == 0, r.output
    head = r.output.splitlines()[3]
    assert head.startswith("   bimodal: 94% of events in 256ms–512ms, 2 events in 2.05s–4.1s own 33% of the time — ")
    assert "one or two tasks far slower than the rest" in head and "a straggler (a skewed partition" in head
    assert "a stall, a retry, a timeout, a pause" not in head


@pytest.mark.parametrize(("label", "said"), [
    ("spark app task duration", "of task time"),
    ("spark app stage 3 task run", "of run time"),
    ("spark app task cpu", "of CPU time"),
    ("spark app task gc [other.log]", "of GC time"),  # a run shown apart
    ("spark app task fetch-wait (2)", "waited"),  # a cut name another stream had
    ("spark task gc job task scheduler-delay", "of scheduler delay"),  # the metric ends the label
    ("spark app", "of task time"),  # none named (another tool's): the source's default, duration
])
def test_a_spark_streams_total_is_worded_by_the_task_metric_its_label_names(label: str, said: str) -> None:
    """`--metric gc` sums GC time, `run` the executors' run time: only a wait metric's sum is time waited."""
    assert why("waited", "spark", label) == said


def test_a_total_is_time_waited_for_other_datasources_whatever_their_label() -> None:
    assert why("waited", "bpf", "app task gc") == why("waited", "", "spark app task run") == "waited"


def test_a_real_spark_logs_summary_says_its_gc_metric_sums_gc_time_not_time_waited() -> None:
    r = CliRunner().invoke(main, ["report", "spark", str(SPARK_LOG), "--metric", "gc"])
    assert r.exit_code == 0, r.output
    head = r.output.splitlines()[1]
    assert head.endswith(" of GC time (exact)") and "waited" not in head, head


def test_a_real_spark_logs_tail_holds_the_time_its_metric_sums_not_the_waiting() -> None:
    """`--metric deserialize` of the real log: "a few slow events hold half of the waiting", of tasks' deserialize
    time, which no task waited."""
    r = CliRunner().invoke(main, ["report", "spark", str(SPARK_LOG), "--metric", "deserialize"])
    assert r.exit_code == 0, r.output
    (tail,) = [line for line in r.output.splitlines() if line.startswith("   tail dominates:")]
    assert tail.endswith(" — a few slow tasks hold half of the deserialize time: cutting them saves more than "
                         "speeding up the rest"), tail
    assert "wait" not in tail, tail


@pytest.mark.parametrize(("label", "total", "mean", "began"), [
    ("spark app task gc", "7.18s of GC time = ", "their mean GC time (3.59s)", ""),
    ("spark app stage 2 task cpu", "7.18s of CPU time = ", "their mean CPU time (3.59s)", ""),
    ("spark app task duration", "7.18s of task time = ", "their mean task time (3.59s)", "the task ending in col 0"),
    ("spark app task run", "7.18s of run time = ", "their mean run time (3.59s)", "the task's run ending in col 0"),
    ("spark app", "7.18s of task time = ", "their mean task time (3.59s)", "the task ending in col 0"),
    ("spark app task fetch-wait", "7.18s waited = ", "their mean wait (3.59s)", ""),  # a wait: time waited
])
def test_a_spark_stall_says_its_time_in_the_words_of_the_metric_its_label_names(label: str, total: str,
                                                                                 mean: str, began: str) -> None:
    """The real rolling log's shape (`spark_like_run`: its two 3.6 s warm-up tasks end in col 0) mapped by another
    metric: the stall said "7.18s waited = 4% of all the time ...; their mean wait (3.59s)" of GC or CPU time, and "the
    GC time ending in col 0 began 2.59s–4.29s before it", which only a task's duration or run can say: GC time, CPU
    time or a fetch wait does not end when the task does."""
    counts, times, starts, ends = spark_like_run()
    d = diagnose(counts, times, LOW, HIGH, starts, ends, datasource="spark", label=label)
    (stall,) = [f.what for f in d.findings if f.kind == "stall" and f.first_col == 0]
    assert total in stall and mean in stall, stall
    assert ("waited" in stall) == ("fetch-wait" in label), stall
    assert (f"; {began} began " in stall) if began else " began " not in stall, stall


def test_a_band_and_an_episode_in_the_open_top_bucket_are_written_as_the_bucket_table_writes_it() -> None:
    """A PyLatencyMap-like stream (ns, counts only) whose slow band sits in the top bucket, which is open (it counts
    every longer value too): the diagnosis wrote it `53,376 days–106,752 days`, a closed range the bucket table does
    not claim; now `≥53,376 days`, as the table writes it. Ranges below the top stay closed."""
    counts = np.zeros((10, len(LOW)))
    counts[:, 11] = 1000  # [1024, 2048) ns
    counts[4:7, -1] = 50  # the top bucket, [2**62, 2**63) ns and past it
    d = diagnose(counts, None, LOW, HIGH, np.arange(10.0), np.arange(10.0) + 1)
    lines = d.summary_lines()
    assert lines[0].startswith("bimodal: 99% of events in 1.02µs–2.05µs, 1% in ≥53,376 days own 100% of the time")
    assert any("a band appeared at ≥53,376 days with" in line for line in lines), lines
    assert "106,752 days" not in "\n".join(lines)
    assert span(LOW[11], HIGH[11], 11) == "1.02µs–2.05µs" and span(LOW[-1], HIGH[-1], len(LOW) - 1) == "≥53,376 days"


def test_a_surge_whose_other_events_slowed_down_says_so_and_not_that_they_went_on_as_usual() -> None:
    """A real 10046 trace: bursts of fast single-block reads while the slow reads ran at 66%, 76%, 87% of their usual
    rate. The line said 'the rest at 66% of its usual rate' and, in the same breath, 'while the rest went on as
    usual'."""
    r = CliRunner().invoke(main, ["report", str(TRACE_10046)])
    assert r.exit_code == 0, r.output
    surges = [line for line in r.output.splitlines() if "more events/s in" in line]
    assert len([line for line in surges if "% of its usual rate" in line]) >= 3
    for line in surges:
        assert "went on as usual" not in line, line


def test_the_bands_of_an_oracle_wait_event_are_explained_as_waits_not_as_requests() -> None:
    """`db file sequential read` waits of a real 10046 trace: a quarter of them 8× faster. A wait is short when a cache
    below the database served the read, not through an 'early error' or an 'empty result' (a query's words)."""
    r = CliRunner().invoke(main, ["report", str(TRACE_10046)])
    assert r.exit_code == 0, r.output
    modes = r.output.splitlines()[3]
    assert modes.startswith("   bimodal: 26% of events in 256µs–2.05ms, 74% in 2.05ms–32.8ms — "), modes
    assert "what lets waits of the faster band finish" in modes and "the OS's cache" in modes
    assert "early errors" not in modes and "empty results" not in modes


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _report_lines(*args: str) -> list[str]:
    r = CliRunner().invoke(main, ["report", *args])
    assert r.exit_code == 0, r.output
    return r.output.splitlines()


def test_a_band_line_names_what_the_main_band_s_two_shares_are() -> None:
    """`(main band 4µs–64µs: 82%, 0.07%)` left the reader to guess which share was which."""
    lines = _report_lines(str(FIXTURES / "bcc" / "biolatency_usecs_jD.txt"))
    bands = [line for line in lines if line.startswith("   band ")]
    assert len(bands) == 2 and all("(main band 4µs–64µs: 82% of events, 0.07% of the time)" in b for b in bands), bands


def test_a_slower_band_of_little_time_beside_one_holding_most_of_it_is_said_as_minor() -> None:
    """biolatency's 64µs–16.4ms band holds 2% of the time, its 65.5ms–2.1s band 98%: what sends events to the first
    is not 'the cause to find'; the band holding the time is the one to look at."""
    lines = _report_lines(str(FIXTURES / "bcc" / "biolatency_usecs_jD.txt"))
    minor = next(line for line in lines if line.startswith("   band 64µs–16.4ms:"))
    heavy = next(line for line in lines if line.startswith("   band 65.5ms–2.1s:"))
    assert "a minor one: 2% of the time against 98% in 65.5ms–2.1s, the band to look at first" in minor, minor
    assert "is the cause to find" not in minor and "(a cache miss, a retry, another device or path)" in minor
    assert heavy.endswith("is the cause to find") and "minor" not in heavy


def three_bands(columns: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: 1,000 events of ~0.8 µs, 200 of ~12 µs (0.5% of the time), 40 of ~12 ms (99% of it)."""
    counts = np.zeros((columns, len(LOW)))
    counts[:, 10], counts[:, 14], counts[:, 24] = 1000, 200, 40
    starts = np.arange(float(columns))
    return counts, starts, starts + 1


def test_the_minor_band_rule_reads_its_threshold() -> None:
    counts, starts, ends = three_bands()
    d = diagnose(counts, None, LOW, HIGH, starts, ends)
    middle, slow = (f for f in d.findings if f.kind == "band")
    assert "a minor one" in middle.why and "in 8.39ms–16.8ms, the band to look at first" in middle.why
    assert "minor" not in slow.why
    strict = diagnose(counts, None, LOW, HIGH, starts, ends, thresholds=Thresholds(minor_band_time_share=0.001))
    assert all("minor" not in f.why and f.why.endswith("is the cause to find") for f in strict.findings)


def early_band(first: int, columns: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """500 events a column of ~24 µs, and in cols `first`..`first`+1 600 more of ~1.5 µs."""
    counts = np.zeros((columns, len(LOW)))
    counts[:, 15] = 500
    counts[first:first + 2, 11] = 600
    starts = np.arange(float(columns))
    return counts, starts, starts + 1


def test_a_band_only_in_the_first_columns_of_a_recording_is_said_as_start_up() -> None:
    """jHiccup's first 10 s (JVM warm-up) were said as an incident: 'a band appeared ... something started or
    changed at that time'. In the first quarter of the run, from its first column, it is the start-up."""
    (start,) = [f for f in diagnose(*early_band(0)[:1], None, LOW, HIGH, *early_band(0)[1:]).findings
                if f.kind == "appear"]
    assert start.what.startswith("start-up cols 0–1 (t+0s–t+2s): a band at 1.02µs–2.05µs with "), start.what
    assert start.why.startswith("only at the stream's start, not an incident in the run: warm-up")
    (later,) = [f for f in diagnose(*early_band(9)[:1], None, LOW, HIGH, *early_band(9)[1:]).findings
                if f.kind == "appear"]
    assert later.what.startswith("episode cols 9–10 (t+9s–t+11s): a band appeared at 1.02µs–2.05µs with ")
    assert later.why == WHY[""]["appear"]
    # two columns of six are a third of the run: no start-up, an episode
    counts, starts, ends = early_band(0, columns=6)
    (short,) = [f for f in diagnose(counts, None, LOW, HIGH, starts, ends).findings if f.kind == "appear"]
    assert short.what.startswith("episode cols 0–1")
    wide = diagnose(counts, None, LOW, HIGH, starts, ends, thresholds=Thresholds(startup_share=0.4))
    assert next(f for f in wide.findings if f.kind == "appear").what.startswith("start-up cols 0–1")


@pytest.mark.parametrize(("datasource", "words"), [
    ("spark", "the application or the stage starting"), ("training", "the loop's first steps")])
def test_a_start_up_band_is_explained_in_its_datasource_s_terms(datasource: str, words: str) -> None:
    counts, starts, ends = early_band(0)
    (start,) = [f for f in diagnose(counts, None, LOW, HIGH, starts, ends, datasource=datasource).findings
                if f.kind == "appear"]
    assert start.what.startswith("start-up cols 0–1") and words in start.why, start.why


def test_a_latency_move_in_the_first_columns_is_start_up_too() -> None:
    counts = np.zeros((20, len(LOW)))
    counts[:, 15] = 500
    counts[:2, 15], counts[:2, 17] = 0, 500  # the whole distribution 2 octaves up, then back
    starts = np.arange(20.0)
    (move,) = [f for f in diagnose(counts, None, LOW, HIGH, starts, starts + 1).findings if f.kind == "move"]
    assert move.what.startswith("start-up cols 0–1 (t+0s–t+2s): latency moved "), move.what


def usual_mix(first: int, surge: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """20 columns of 500 events of ~24 µs and 500 of ~48 µs; in cols `first`..`first`+1 800 and 200 (the mix of the
    usual bands shifted), or (`surge`) 1,000 more of ~24 µs on top of them."""
    counts = np.zeros((20, len(LOW)))
    counts[:, 15], counts[:, 16] = 500, 500
    if surge:
        counts[first:first + 2, 15] = 1500
    else:
        counts[first:first + 2, 15], counts[first:first + 2, 16] = 800, 200
    starts = np.arange(20.0)
    return counts, starts, starts + 1


def test_a_mix_of_the_usual_bands_only_in_the_first_columns_is_start_up_but_a_surge_there_is_not() -> None:
    """A reshape from the first column within the first quarter is the start-up, said without 'shifted ... now' (there
    was no before); later it is an episode. A surge (more work of one kind on top of the usual load) is the run's own
    work wherever it comes (the 10046 trace's surge at cols 1–2 is one of five alike through the run)."""
    counts, starts, ends = usual_mix(0)
    (start,) = [f for f in diagnose(counts, None, LOW, HIGH, starts, ends).findings if f.kind == "reshape"]
    assert start.what == ("start-up cols 0–1 (t+0s–t+2s): 80% of events (usually 50%) and 67% of the time (usually "
                          "33%) in 16.4µs–32.8µs"), start.what
    assert start.why == WHY[""]["startup"]
    counts, starts, ends = usual_mix(9)
    (later,) = [f for f in diagnose(counts, None, LOW, HIGH, starts, ends).findings if f.kind == "reshape"]
    assert later.what.startswith("episode cols 9–10 (t+9s–t+11s): shares shifted toward 16.4µs–32.8µs, now 80% of ")
    assert later.why == WHY[""]["reshape"]
    counts, starts, ends = usual_mix(0, surge=True)
    (surge,) = [f for f in diagnose(counts, None, LOW, HIGH, starts, ends).findings if f.kind == "surge"]
    assert surge.what.startswith("episode cols 0–1 (t+0s–t+2s): 1k more events/s in 16.4µs–32.8µs") \
        and surge.why == WHY[""]["surge"], surge.line()


def test_the_fast_disk_s_slower_mix_in_its_first_two_full_columns_is_its_start_up() -> None:
    """block_fast_disk's cols 0–1 hold ~7.1k I/Os each (the usual rate: full columns, not a cut first one), 65–71% of
    them in the slower 4 KiB band (32.8–65.5 µs) against 34% over the run and at most 60% in any later column: the
    mix settles after the first two seconds. It was said as an incident ('the mix between the usual bands changed
    at that time')."""
    lines = _report_lines(str(FIXTURES / "bpftrace" / "block_fast_disk.zst"))
    (line,) = [line for line in lines if "cols 0–1" in line]
    assert line.startswith("   start-up cols 0–1 (t+0s–t+2.011s): 71% of events (usually 34%) and 58% of the time "
                           "(usually 34%) in 32.8µs–262µs — only at the stream's start, not an incident in the "
                           "run: "), line


def test_jhiccup_s_warm_up_band_is_said_as_start_up() -> None:
    lines = _report_lines(str(FIXTURES / "hdrhistogram" / "hiccup.140623.1028.10646.hlog"))
    (line,) = [line for line in lines if "cols 0–1" in line]
    assert line.startswith("   start-up cols 0–1 (t+0s–t+10s): a band at 8.19µs–32.8µs with 56% of events "), line
    assert "something started or changed" not in line


def bimodal_waits(faster: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """1,000 waits a column of ~0.8 µs and 100 of ~12 µs (`faster`: 100 of ~0.8 µs and 1,000 of ~12 µs)."""
    counts = np.zeros((10, len(LOW)))
    counts[:, 10], counts[:, 14] = (100, 1000) if faster else (1000, 100)
    starts = np.arange(10.0)
    return counts, starts, starts + 1


#: Oracle wait events by class: a phrase the slow and the fast band's why must hold, and the read words they must not.
ORACLE_EVENTS = {
    "db file sequential read": ("reads that went to disk", "reads served by the storage array's or the OS's cache"),
    "10046 trace data for event: db file scattered read": ("reads that went to disk", "served by the storage"),
    "log file sync": ("a slow redo log write", "group commit"),
    "log file parallel write inst 2": ("a slow redo log write", "group commit"),
    "SQL*Net message from client": ("the client", "back to back"),
    "enq: TX - row lock contention": ("holding the lock", "released soon"),
    "latch: cache buffers chains": ("holding the lock or latch", "released soon"),
    "direct path write temp": ("writes queued", "write cache"),
    "some event nobody knows": ("the resource waited for", "the resource found free"),
    # a class's words are whole words of the event's name: a block is no lock, a thread no read
    "cell single block physical read": ("reads that went to disk", "served by the storage"),
    "gc cr block 2-way": ("the resource waited for", "the resource found free"),
    "os thread startup": ("the resource waited for", "the resource found free"),
    # the archiver's reads of the redo log: reads, not commits
    "log file sequential read": ("reads that went to disk", "served by the storage"),
}


@pytest.mark.parametrize("datasource", ["oracle", "oracle10046"])
@pytest.mark.parametrize("label", list(ORACLE_EVENTS))
def test_an_oracle_wait_event_s_bands_name_the_causes_of_its_wait_class(datasource: str, label: str) -> None:
    """`log file sync` waits are commits, `SQL*Net message from client` the client's time, `enq: TX` a lock: not
    'reads that went to disk', which only a read event's slow waits are."""
    slow, fast = ORACLE_EVENTS[label]
    for faster, phrase in ((False, slow), (True, fast)):
        counts, starts, ends = bimodal_waits(faster)
        (band,) = [f for f in diagnose(counts, None, LOW, HIGH, starts, ends, datasource=datasource,
                                       label=label).findings if f.kind == "band"]
        assert phrase in band.why and "waits" in band.why, (label, band.why)
        if "read" not in label:
            assert not re.search(r"\bread", band.why), (label, band.why)


def capped_history(columns: int, band_at: int, cap: int) -> StreamHistory:
    """`early_band`'s columns (a band in cols `band_at`..`band_at`+1), in a history that keeps the newest `cap`."""
    counts, starts, ends = early_band(band_at, columns)
    hist = StreamHistory(StreamId("capped", "bpf", "nanosec"), cap)
    hist.extend([Interval(hist.stream, float(s), float(e), c.astype(np.int64))
                 for s, e, c in zip(starts, ends, counts, strict=True)])
    return hist


def test_a_band_in_the_first_columns_kept_after_older_ones_were_dropped_is_no_start_up() -> None:
    """`--history 40` of 60 columns keeps cols 20–59: a band at cols 20–21, mid-run, was said as the recording's
    start-up ('not an incident in the run')."""
    hist = capped_history(60, 20, 40)
    assert hist.dropped == 20
    (found,) = [f for f in stream_diagnosis(hist).findings if f.kind == "appear"]
    assert found.what.startswith("episode cols 0–1 ") and found.why == WHY[""]["appear"], found.what
    (start,) = [f for f in stream_diagnosis(capped_history(40, 0, 40)).findings if f.kind == "appear"]
    assert start.what.startswith("start-up cols 0–1 ")


#: A jHiccup log's findings (`measures="jhiccup"`): a phrase each kind's why must hold; what the generic words say of
#: requests (a cache miss, a burst of cache hits, a device) is wrong for a thread that only sleeps and wakes late.
HICCUP_WORDS = {"stall": "a GC pause or safepoint", "silence": "the process (or its host or VM) was paused",
                "move": "the host's load"}
GENERIC_ONLY = ("cache miss", "cache hits", "another device", "requests", "a checkpoint", "the network")


def test_a_jhiccup_log_s_findings_name_the_platform_s_causes_not_a_request_s() -> None:
    """A jHiccup log measures the platform's hiccups (how late a thread that sleeps 1 ms woke): a slow band, a stall
    or a move is GC, a safepoint, the OS or the host, never a cache miss, another device or a burst of cache hits."""
    counts, times, starts, ends = spark_like_run()
    bare, bare_t, _, _ = spark_like_run(straggler=0)
    found = [*diagnose(counts, times, LOW, HIGH, starts, ends, datasource="hdrhistogram", measures="jhiccup").findings,
             *diagnose(bare, bare_t, LOW, HIGH, starts, ends, datasource="hdrhistogram", measures="jhiccup").findings]
    assert {f.kind for f in found} == {"stall", "move", "silence"}
    for direction in (False, True):
        waits, w_starts, w_ends = bimodal_waits(faster=direction)
        found += diagnose(waits, None, LOW, HIGH, w_starts, w_ends, datasource="hdrhistogram",
                          measures="jhiccup").findings
    slow, fast = (f for f in found if f.kind == "band")
    assert "what sends hiccups to the slower band" in slow.why, slow.why
    assert "(GC pauses, JVM safepoints, OS scheduling or CPU starvation" in slow.why, slow.why
    assert "what lets hiccups of the faster band" in fast.why and "quiet" in fast.why, fast.why
    pause, pause_t, p_starts, p_ends = paused([30, 60, 90])
    found += diagnose(pause, pause_t, LOW, HIGH, p_starts, p_ends, datasource="hdrhistogram",
                      measures="jhiccup").findings
    (bursts,) = [f for f in found if f.bursts]
    assert "the platform held the thread up" in bursts.why, bursts.why
    early, e_starts, e_ends = early_band(0)
    found += diagnose(early, None, LOW, HIGH, e_starts, e_ends, datasource="hdrhistogram", measures="jhiccup").findings
    (start,) = [f for f in found if f.what.startswith("start-up")]
    assert "the JVM starting" in start.why, start.why
    for f in found:
        assert HICCUP_WORDS.get(f.kind, "") in f.why, (f.kind, f.why)
        assert not any(w in f.why for w in GENERIC_ONLY), (f.kind, f.why)
    # the datasource alone keeps the generic words: an HdrHistogram log of requests' latencies is no jHiccup log
    plain = diagnose(*bimodal_waits()[:1], None, LOW, HIGH, *bimodal_waits()[1:], datasource="hdrhistogram").findings
    assert "(a cache miss, a retry, another device or path)" in plain[0].why


@pytest.mark.parametrize("name", ["jHiccup-2.0.7S.logV2.hlog", "hiccup.140623.1028.10646.hlog"])
def test_the_reports_of_jhiccup_logs_name_the_platform_s_causes(name: str, tmp_path: Path) -> None:
    """Both jHiccup fixtures say so in their header (`#[Logged with jHiccup version ...]`): their bursts and start-up
    are GC, safepoints, the OS or the host and the JVM starting, not requests held up or cold caches; a recording of
    one keeps it (the reader's note)."""
    path = FIXTURES / "hdrhistogram" / name
    record = tmp_path / "hiccup.rec"
    r = CliRunner().invoke(main, ["--plain", "--once", "--record", str(record), str(path)])
    assert r.exit_code == 0, r.output
    for lines in (_report_lines(str(path)), _report_lines(str(record))):
        said = [line for line in lines if " — " in line]
        assert said and not any(w in line for line in said for w in GENERIC_ONLY), said
        if name.startswith("jHiccup"):
            (bursts,) = [line for line in said if line.startswith("   band 4.19ms–1.07s:")]
            assert "at those times the platform held the thread up (a GC pause or safepoint" in bursts, bursts
        else:
            (start,) = [line for line in said if line.startswith("   start-up cols 0–1")]
            assert "the JVM starting" in start and "cold caches" not in start, start
        assert any("logged by jHiccup" in line for line in lines), lines
        # jHiccup fills a pause with the samples it hid: their sum is no time waited (22.6min in 38s)
        assert " of hiccups (exact), as jHiccup sums them: " in lines[1] and "waited" not in lines[1], lines[1]


def test_a_band_that_is_the_start_up_says_so_instead_of_asking_for_a_cause() -> None:
    """40 columns whose latency is 2 octaves higher in cols 0–1 only: the start-up line said 'not an incident in the
    run' while the band beside it asked what sends events to the slower band (a cache miss, ...): that is the
    start-up. A band of the same events later in the run is still a population whose cause is to find."""
    counts = np.zeros((40, len(LOW)))
    counts[:, 15] = 500
    counts[:2, 15], counts[:2, 17] = 0, 500
    starts = np.arange(40.0)
    d = diagnose(counts, None, LOW, HIGH, starts, starts + 1)
    (band,) = [f for f in d.findings if f.kind == "band"]
    (start,) = [f for f in d.findings if f.what.startswith("start-up cols 0–1")]
    assert band.why.startswith("the stream's start-up at cols 0–1 (t+0s–t+2s), not a population of the run"), \
        band.why
    assert "is the cause to find" not in band.why and "cache miss" not in band.why and not band.key
    assert d.summary_lines()[0].endswith(f" — {band.why}")  # a pair's band why ends the modes line
    assert start.why == WHY[""]["startup"]
    later = np.roll(counts, 20, axis=0)  # the same two columns mid-run: an episode, and a band with a cause
    (mid,) = [f for f in diagnose(later, None, LOW, HIGH, starts, starts + 1).findings if f.kind == "band"]
    assert mid.why.endswith("is the cause to find") and mid.key == "slow pair", mid.why


def test_a_start_up_band_with_events_later_in_the_run_says_those_are_still_to_explain() -> None:
    """A band 90% in the start-up is said as the start-up; its other events came in the run (a GC pause at col 20
    of a jHiccup log, the same size as the JVM's start-up hiccups): 'not a cause to find in the steady state' hid
    them, where no other finding names that column."""
    counts = np.zeros((40, len(LOW)))
    counts[:, 15] = 500
    counts[:2, 15], counts[:2, 17] = 0, 500
    counts[20, 17] = 100
    starts = np.arange(40.0)
    d = diagnose(counts, None, LOW, HIGH, starts, starts + 1, datasource="hdrhistogram", measures="jhiccup")
    assert not [f for f in d.findings if f.first_col is not None and f.first_col <= 20 <= f.last_col
                and f.kind != "band"]
    (band,) = [f for f in d.findings if f.kind == "band"]
    assert band.why.startswith("the stream's start-up at cols 0–1 (t+0s–t+2s) holds 91% of them, not a population "
                               "of the run: what sent hiccups there is the start-up's; the other 100 came after it, "
                               "in the run: what sent them there is the cause to find"), band.why
    assert "steady state" not in band.why


def test_a_jhiccup_start_up_of_shorter_hiccups_is_not_put_down_to_gc_and_jit_alone() -> None:
    """hiccup.140623's start-up is a band of shorter hiccups (8–33 µs, against 33–66 µs after it): class loading,
    JIT and the first GCs hold the thread up longer, never shorter; CPUs kept busy (out of their idle states) wake
    it sooner."""
    counts, starts, ends = early_band(0)  # cols 0–1 hold a band far below the usual one
    (start,) = [f for f in diagnose(counts, None, LOW, HIGH, starts, ends, datasource="hdrhistogram",
                                    measures="jhiccup").findings if f.what.startswith("start-up")]
    assert "the first GCs: longer hiccups; CPUs kept busy, out of their idle states: shorter ones)" in start.why, \
        start.why


@pytest.mark.parametrize("datasource", ["spark", "training", ""])
def test_a_measure_this_version_has_no_words_for_keeps_the_datasource_s(datasource: str) -> None:
    """A recording by a newer latencymap may say its stream measures something this one has no `WHY` entry for
    (the reader takes any lowercase word): its findings were worded by nothing, the generic words, not its
    datasource's (a Spark log's tasks as requests held up)."""
    counts, times, starts, ends = spark_like_run()
    plain = diagnose(counts, times, LOW, HIGH, starts, ends, datasource=datasource).findings
    newer = diagnose(counts, times, LOW, HIGH, starts, ends, datasource=datasource, measures="gcpauses").findings
    assert [f.why for f in newer] == [f.why for f in plain]


def test_a_minor_slower_band_whose_cause_the_log_knows_still_says_it_is_minor() -> None:
    """Spark: a slower band of 0.5% of the time beside one of 99.5%, its tasks stragglers whose cause the log gives:
    `with_cause` wrote "a slower population than the main band: all 3 are stragglers ...", dropping that the band is
    minor and that the one holding the time is the band to look at first."""
    counts, starts, ends = three_bands()
    middle, slow = (f for f in diagnose(counts, None, LOW, HIGH, starts, ends, datasource="spark").findings
                    if f.kind == "band")
    cause = "all 3 are stragglers on executor 1, slow in their stage (see Stragglers and Stages)"
    told = with_cause(middle, cause, "spark")
    lead = "a slower population than the main band, but a minor one: 0.5% of the time against 99% in 8.39ms–16.8ms"
    assert middle.why.startswith(f"{lead}, the band to look at first; "), middle.why
    assert told.why == f"{lead}, the band to look at first; {cause}", told.why
    assert with_cause(slow, cause, "spark").why == WHY["spark"]["slow known"].format(cause=cause)
    assert with_cause(middle, cause, "bpf") is middle  # no words for a known cause there


def test_a_jhiccup_log_s_band_that_appears_or_mix_that_changes_names_the_platform_s_causes() -> None:
    """A band of hiccups that appeared mid-run, and the hiccups' mix shifting toward the slower band for four columns,
    kept the generic words ("something started or changed at that time", "the mix between the usual bands changed")
    where a jHiccup log's other findings name what pauses the platform (GC, safepoints, the OS, the host)."""
    early, starts, ends = early_band(9)
    mix = np.zeros((30, len(LOW)))
    mix[:, 10], mix[:, 14] = 1000, 300
    mix[12:16, 10], mix[12:16, 14] = 700, 600
    m_starts = np.arange(30.0)
    found = [*diagnose(early, None, LOW, HIGH, starts, ends, datasource="hdrhistogram", measures="jhiccup").findings,
             *diagnose(mix, None, LOW, HIGH, m_starts, m_starts + 1, datasource="hdrhistogram",
                       measures="jhiccup").findings]
    (appear,) = [f for f in found if f.kind == "appear"]
    (reshape,) = [f for f in found if f.kind == "reshape"]
    for f in (appear, reshape):
        assert f.why not in (WHY[""]["appear"], WHY[""]["reshape"]), f.why
        assert "GC" in f.why and "safepoint" in f.why and "steal time" in f.why, f.why
        assert not any(w in f.why for w in GENERIC_ONLY), f.why
    assert "hiccups of a size" in appear.why and "hiccup sizes" in reshape.why


def test_a_dominant_tail_says_half_of_the_time_as_what_defines_it_not_as_most_of_it() -> None:
    """The real 38 s block trace: "tail dominates: 5% of events (≥ 62.4µs) take 50% of the time — a few slow events
    hold most of the waiting". The tail is by definition the slowest events that hold half of the time: 50% is no
    measure of this stream, and half is not most."""
    lines = _report_lines(str(FIXTURES / "bpftrace" / "block_fast_disk.zst"))
    (tail,) = [line for line in lines if line.startswith("   tail dominates:")]
    assert tail.startswith("   tail dominates: 5% of events (≥ 62.4µs) take half of the time — "), tail
    assert "most" not in tail and "50%" not in tail, tail
    assert tail.endswith(" — a few slow events hold half of the waiting: cutting them saves more than speeding up the "
                         "rest"), tail
    assert not [ds for ds in WHY for key in ("tail", "tail known") if "most of" in WHY[ds].get(key, "")]
