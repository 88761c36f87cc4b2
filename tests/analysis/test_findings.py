"""Findings' wording: human units at every scale, and causes in the terms of each datasource's events."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from diagnosis_support import paused

from latencymap.analysis.diagnosis import diagnose
from latencymap.analysis.findings import WHY, Scope, dur, since, span, with_cause
from latencymap.cli.main import main
from latencymap.core.buckets import bin_values, bounds_seconds

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
