"""Chrometrace parsing on a real py-spy 0.4.3 capture (fixtures/profile, see capture.py there)."""

from __future__ import annotations

import itertools
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from profiling_support import FIXTURE

from latencymap.profiling.chrometrace import ChrometraceError, load_events, parse_chrometrace, samples_of, spans
from latencymap.profiling.pyspy import Chunk, PySpyError, error_summary
from latencymap.profiling.samples import function_of, split_frame

TRACE = (FIXTURE / "phases.chrometrace.json").read_bytes()
META = json.loads((FIXTURE / "phases.meta.json").read_text())


def _threads(samples):
    by: dict[int, list] = {}
    for s in samples:
        by.setdefault(s.tid, []).append(s)
    return by


def test_fixture_layout_is_what_the_parser_expects() -> None:
    events = load_events(TRACE)
    assert isinstance(events, list) and events
    assert {e["ph"] for e in events} <= {"B", "E", "M"}
    assert all({"name", "pid", "tid", "ts", "args"} <= e.keys() for e in events)
    assert all("filename" in e["args"] and "line" in e["args"] for e in events)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)


def test_spans_rebuild_each_threads_stack_root_first() -> None:
    got = list(spans(load_events(TRACE)))
    main = [s for s in got if s.stack[-1].startswith(("fast_phase", "slow_phase"))]
    sleeper = [s for s in got if s.stack[-1].startswith("idle_wait")]
    assert main and sleeper and len(main) + len(sleeper) == len(got)
    assert {s.tid for s in main}.isdisjoint({s.tid for s in sleeper})
    assert [split_frame(f)[0] for f in main[0].stack] == ["<module>", "main", main[0].stack[-1].split(" ")[0]]
    assert split_frame(main[0].stack[-1])[1].endswith("fixtures/profile/target.py")
    assert [split_frame(f)[0] for f in sleeper[0].stack][-2:] == ["Thread.run", "idle_wait"]
    leaves = [split_frame(s.stack[-1])[0] for s in main]
    assert all(a != b for a, b in itertools.pairwise(leaves)), "consecutive spans alternate phases"
    for a, b in itertools.pairwise(main):
        assert a.end_us == b.start_us  # a stack holds until the next change


def test_samples_follow_the_nominal_rate_over_each_threads_recorded_time() -> None:
    """One sample per 1/rate of recorded time; py-spy's own count is higher (catch-up ticks right after attaching)."""
    events = load_events(TRACE)
    samples = parse_chrometrace(TRACE, META["launched"], META["rate"])
    assert [s.time for s in samples] == sorted(s.time for s in samples)
    threads = _threads(samples)
    assert len(threads) == 2
    for tid, thread in threads.items():
        ts = [e["ts"] for e in events if e["tid"] == tid]
        assert abs(len(thread) - (max(ts) - min(ts)) / 1e6 * META["rate"]) <= 3
        gaps = [b.time - a.time for a, b in itertools.pairwise(thread)]
        assert max(gaps) < 3 / META["rate"] and min(gaps) > 0
        assert all(s.weight == pytest.approx(1 / META["rate"]) for s in thread)
    assert 0.85 * META["pyspy_samples"] <= len(samples) <= META["pyspy_samples"]


def test_phase_switches_land_within_a_sample_period_of_the_logged_switches(tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    shutil.copy(FIXTURE / "phases.chrometrace.json", out)
    chunk = Chunk([], out, tmp_path / "err", META["rate"], 1, launched=META["launched"], exited=META["exited"],
                  returncode=0)
    result = chunk.result()
    assert 0 <= result.offset_error < 0.02
    assert META["launched"] <= result.origin <= META["exited"]
    main = [s for s in result.samples if "phase" in s.stack[-1]]
    firsts = [b for a, b in itertools.pairwise(main) if a.stack[-1] != b.stack[-1]]
    logged = dict((t, name) for name, t in META["phases"])
    assert len(firsts) >= 3
    period = 1 / META["rate"]
    for s in firsts:
        t = min(logged, key=lambda t: abs(t - s.time))
        assert s.stack[-1].startswith(logged[t])
        assert -result.offset_error - 0.002 <= s.time - t <= 2 * period + result.offset_error


def test_a_function_counts_once_without_line_numbers() -> None:
    samples = parse_chrometrace(TRACE, 0.0, META["rate"])
    functions = Counter(function_of(s.stack[-1]) for s in samples)
    assert {f.split(" ")[0] for f in functions} == {"fast_phase", "slow_phase", "idle_wait"}


def test_thread_name_events_and_trace_event_objects_are_accepted() -> None:
    events = load_events(TRACE)
    meta = {"args": {"filename": "", "line": None, "name": "1: main"}, "cat": "py-spy", "name": "thread_name",
            "ph": "M", "pid": 1, "tid": 0, "ts": 0}
    wrapped = json.dumps({"traceEvents": [meta, *events]})
    assert parse_chrometrace(wrapped, 0.0, 100) == parse_chrometrace(TRACE, 0.0, 100)


def test_frames_without_line_numbers() -> None:
    events = [{"args": {"filename": "/a.py", "line": None}, "name": "f", "ph": "B", "pid": 1, "tid": 2, "ts": 0},
              {"args": {"filename": "/a.py", "line": None}, "name": "f", "ph": "E", "pid": 1, "tid": 2, "ts": 30000}]
    samples = samples_of(spans(events), 100.0, 100)
    assert [s.stack for s in samples] == [("f (/a.py)",)] * 3
    assert [round(s.time, 6) for s in samples] == [100.0, 100.01, 100.02]


@pytest.mark.parametrize("data", [b"not json", b'{"a": 1}', b"[1, 2]", b'[{"ph": "B", "name": "f"}]',
                                  pytest.param(b"[" * 5000 + b"]" * 5000, id="nested-too-deeply")])  # RecursionError
def test_malformed_traces_raise(data: bytes) -> None:
    with pytest.raises(ChrometraceError):
        parse_chrometrace(data, 0.0, 100)


def test_failed_chunk_reports_pyspys_error_and_the_ptrace_remedy(tmp_path: Path) -> None:
    stderr = ("Error: Failed to get process executable name. Check that the process is running.\n\nCaused by:\n"
              "    0: Permission denied (os error 13)\n    1: Permission denied (os error 13)\n\n"
              "Stack backtrace:\n   0: <E as anyhow::context::ext::StdError>::ext_context\n")
    message = error_summary(stderr, 7)
    assert message.startswith("py-spy cannot profile PID 7: Failed to get process executable name")
    assert "Permission denied" in message and "CAP_SYS_PTRACE" in message
    (tmp_path / "err").write_text(stderr)
    chunk = Chunk([], tmp_path / "missing.json", tmp_path / "err", 100, 7, returncode=1)
    with pytest.raises(PySpyError, match="Permission denied"):
        chunk.result()


def test_a_pyspy_that_said_nothing_is_reported_by_how_it_ended() -> None:
    assert error_summary("", 7, -9) == "py-spy cannot profile PID 7: py-spy was killed by SIGKILL before it said why"
    assert error_summary("py-spy> Sampling process 100 times a second\n", 7, 3) == (
        "py-spy cannot profile PID 7: py-spy exited with status 3 and wrote no samples")
    assert error_summary("Error: Failed to find python version", 7, 1).endswith(": Failed to find python version")


def test_stacks_that_change_faster_than_the_rate_get_no_extra_samples() -> None:
    """Ten 2 ms spans at 100 Hz are 20 ms of recording: two samples, not one per span."""
    events = []
    for k in range(10):
        name = "f" if k % 2 else "g"
        if k:
            events.append({"args": {"filename": "/a.py", "line": 1}, "name": "g" if k % 2 else "f", "ph": "E",
                           "pid": 1, "tid": 2, "ts": k * 2000})
        events.append({"args": {"filename": "/a.py", "line": 1}, "name": name, "ph": "B", "pid": 1, "tid": 2,
                       "ts": k * 2000})
    events.append({"args": {"filename": "/a.py", "line": 1}, "name": "f", "ph": "E", "pid": 1, "tid": 2, "ts": 20000})
    samples = samples_of(spans(events), 100.0, 100)
    assert [round(s.time, 6) for s in samples] == [100.0, 100.01]


def pyspy_chrometrace(traces: list[tuple[int, int, int, tuple[str, ...]]], end_us: int) -> list[dict]:
    """The events py-spy 0.4.3 writes for `traces` of (ts, pid, tid, frames root first): its state is per tid only.

    Like its Chrometrace.increment: the frames that left the tid's previous trace end (leaf first) and the new
    ones begin (root first), all with the pid of the trace sampled now; on writing, the last trace of every
    tid ends.
    """
    events: list[dict] = []
    previous: dict[int, tuple[int, tuple[str, ...]]] = {}

    def event(name: str, phase: str, pid: int, tid: int, ts: int) -> dict:
        return {"args": {"filename": "/w.py", "line": 1}, "cat": "py-spy", "name": name, "ph": phase, "pid": pid,
                "tid": tid, "ts": ts}

    for ts, pid, tid, frames in traces:
        before = previous.get(tid, (pid, ()))[1]
        common = next((k for k, (a, b) in enumerate(zip(before, frames, strict=False)) if a != b),
                      min(len(before), len(frames)))
        events += [event(name, "E", pid, tid, ts) for name in reversed(before[common:])]
        events += [event(name, "B", pid, tid, ts) for name in frames[common:]]
        previous[tid] = (pid, frames)
    for tid, (pid, frames) in previous.items():
        events += [event(name, "E", pid, tid, end_us) for name in reversed(frames)]
    return events


def test_forked_processes_that_share_a_thread_id_keep_their_own_stacks() -> None:
    """A parent and two forked children, sampled in turn each 10 ms under one tid (py-spy --subprocesses)."""
    stacks = {7: ("process 7", "<module>", "parent_work"),
              8: ("process 7", "process 8", "<module>", "child_work", "leaf_a"),
              9: ("process 7", "process 9", "<module>", "child_work", "leaf_b")}
    traces = []
    for tick in range(100):
        for k, pid in enumerate((7, 8, 9)):
            frames = stacks[pid] if tick % 4 or pid == 7 else stacks[pid][:-1]  # children sometimes between leaves
            traces.append((tick * 10_000 + 5 * k, pid, 1, frames))
    samples = parse_chrometrace(json.dumps(pyspy_chrometrace(traces, 1_000_000)), 0.0, 100)
    by_pid: dict[int, Counter] = {}
    for s in samples:
        by_pid.setdefault(s.pid, Counter())[s.stack[-1].split(" ")[0]] += 1
    assert by_pid == {7: {"parent_work": 100}, 8: {"leaf_a": 75, "child_work": 25},
                      9: {"leaf_b": 75, "child_work": 25}}
    assert max(len(s.stack) for s in samples) == 5


def test_process_frames_lose_the_secrets_of_their_command_lines() -> None:
    """py-spy's `--subprocesses` root frame holds the whole command line; samples keep it without its secrets."""
    command = "python x.py --password=hunter2 --db postgresql://bob:s3cret@db/t --hf-token hf_SECRETTOKEN"
    events = [{"args": {"filename": "", "line": 0}, "name": f'process 7:"{command}"', "ph": "B", "pid": 7, "tid": 1,
               "ts": 0},
              {"args": {"filename": "/x.py", "line": 3}, "name": "main", "ph": "B", "pid": 7, "tid": 1, "ts": 0},
              {"args": {"filename": "/x.py", "line": 3}, "name": "main", "ph": "E", "pid": 7, "tid": 1, "ts": 50_000},
              {"args": {"filename": "", "line": 0}, "name": f'process 7:"{command}"', "ph": "E", "pid": 7, "tid": 1,
               "ts": 50_000}]
    samples = parse_chrometrace(json.dumps(events), 0.0, 100)
    assert len(samples) == 5
    assert {s.stack for s in samples} == {
        ('process 7:"python x.py --password=*** --db postgresql://db/t --hf-token ***" ()', "main (/x.py:3)")}


def test_the_threads_frame_is_left_out_of_the_samples() -> None:
    """`--threads` roots each stack in `thread (<native id>)`: the liveness polls use it, the samples do not keep it."""
    def ev(name: str, ph: str, ts: int, filename: str = "") -> dict:
        return {"args": {"filename": filename, "line": 3 if filename else 0}, "name": name, "ph": ph, "pid": 7,
                "tid": 99, "ts": ts}

    events = [ev("thread (123): MainThread", "B", 0), ev("main", "B", 0, "/x.py"), ev("main", "E", 30_000, "/x.py"),
              ev("thread (123): MainThread", "E", 50_000)]
    samples = parse_chrometrace(json.dumps(events), 0.0, 100)
    assert [s.stack for s in samples] == [("main (/x.py:3)",)] * 3  # the thread frame alone: no sample
