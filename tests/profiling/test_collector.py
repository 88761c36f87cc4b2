"""The live collector on real processes with real py-spy: chunks, dedup, timing, and every failure path."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from profiling_support import in_pid_namespace, needs_pyspy, only_child, phase_child, phase_of, phases_log
from skips_support import requires_binary, requires_root

from latencymap.profiling.collector import Collector
from latencymap.profiling.pyspy import PYSPY_ENV, PySpyError, locate_pyspy
from latencymap.profiling.samples import Sample, function_of
from latencymap.profiling.store import ProfileStore


class Sink:
    """Collects the callbacks' batches and messages."""

    def __init__(self) -> None:
        self.batches: list[list[Sample]] = []
        self.messages: list[str] = []
        self.store = ProfileStore()
        self.event = threading.Event()

    def samples(self, batch: list[Sample]) -> None:
        self.batches.append(batch)
        self.store.add(batch)

    def message(self, text: str) -> None:
        self.messages.append(text)
        self.event.set()


def collector(pid: int, sink: Sink, **kw) -> Collector:
    return Collector(pid, on_samples=sink.samples, on_message=sink.message, **kw)


@needs_pyspy
@pytest.mark.slow
def test_overlapping_chunks_report_each_instant_once_and_attribute_each_phase(tmp_path: Path) -> None:
    log = tmp_path / "phases.log"
    sink = Sink()
    with phase_child(log, seconds=1.0) as child:
        col = collector(child.pid, sink, rate=100)
        col.start()
        time.sleep(5.5)
        col.stop()
    assert not col.running and sink.messages == []
    assert col.chunks >= 3 and len(sink.batches) >= 3
    assert 0 <= col.max_offset_error < 0.25  # py-spy's start and exit, timed: 30 ms idle, 135 ms seen on a loaded CI
    for a, b in zip(sink.batches, sink.batches[1:], strict=False):
        assert b[0].time >= a[-1].time  # batches follow each other: overlaps were cut
    phases = phases_log(log)
    first, last = sink.store.span()
    assert holes(sink.store.samples(first, last + 1), 5 / 100) == []
    t = first
    while t + 0.5 <= last:
        n = sink.store.count(t, t + 0.5)
        assert 35 <= n <= 65, f"{n} samples in 0.5 s at 100 Hz around {t - first:.2f} s"
        t += 0.5
    windows = [(start + 0.1, stop - 0.1) for (_, start), (_, stop) in itertools.pairwise(phases)
               if first <= start and stop <= last]
    assert len(windows) >= 3
    for t0, t1 in windows:
        expected = phase_of(phases, t0, t1)
        top = sink.store.functions(t0, t1)[0]
        assert top.function.split(" ")[0] == expected and top.self >= 0.95 * sink.store.count(t0, t1)
    samples = sink.store.samples(first, last + 1)
    for name, switch in phases[1:]:
        if first + 0.1 < switch < last - 0.1:
            arrived = next(s.time for s in samples if s.time >= switch - 0.05 and
                           function_of(s.stack[-1]).startswith(name))
            assert -0.03 <= arrived - switch <= 0.1, (name, arrived - switch)


SHORT_PYSPY = """#!{python}
import signal, subprocess, sys
args = sys.argv[1:]
proc = subprocess.Popen([{pyspy!r}, *args])
signal.signal(signal.SIGINT, lambda *_: proc.send_signal(signal.SIGINT))
try:
    proc.wait(0.8 * float(args[args.index("--duration") + 1]))
except subprocess.TimeoutExpired:
    proc.send_signal(signal.SIGINT)
sys.exit(proc.wait())
"""


def holes(samples: list[Sample], longer_than: float) -> list[tuple[float, float]]:
    """(seconds after the first sample, length) of every gap between a thread's samples longer than `longer_than`."""
    first = samples[0].time
    out = []
    for tid in {s.tid for s in samples}:
        times = [s.time for s in samples if s.tid == tid]
        out += [(round(a - first, 3), round(b - a, 3)) for a, b in itertools.pairwise(times) if b - a > longer_than]
    return out


@needs_pyspy
@pytest.mark.slow
def test_no_hole_between_chunks_when_pyspy_stops_short_of_its_duration(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """py-spy's --duration counts samples taken at random (exponential) intervals: `--duration 2` ran 1.6–2.3 s.

    The py-spy here stops (SIGINT, so it still writes its file) at 80% of its --duration, as the real one can.
    """
    wrapper = tmp_path / "py-spy-short"
    wrapper.write_text(SHORT_PYSPY.format(python=sys.executable, pyspy=locate_pyspy()))
    wrapper.chmod(0o755)
    monkeypatch.setenv("LATENCYMAP_PY_SPY", str(wrapper))
    rate = 50
    sink = Sink()
    with phase_child(tmp_path / "log", seconds=1.0) as child:
        col = collector(child.pid, sink, rate=rate)
        col.start()
        time.sleep(6.5)
        col.stop()
    assert sink.messages == [] and col.chunks >= 4
    span = sink.store.span()
    assert span is not None
    samples = sink.store.samples(span[0], span[1] + 1)
    assert holes(samples, 5 / rate) == []  # a chunk boundary: 2 periods and the chunks' origin errors at most
    assert abs(len(samples) - (span[1] - span[0]) * rate) <= 2 * col.chunks


@needs_pyspy
@pytest.mark.slow
def test_a_target_that_exits_stops_profiling_with_a_message(tmp_path: Path) -> None:
    sink = Sink()
    with phase_child(tmp_path / "log", seconds=0.4, cycles=2) as child:
        col = collector(child.pid, sink)
        col.start()
        assert sink.event.wait(15)
        col.stop()
    assert any("exited" in m for m in sink.messages)
    assert len(sink.store) > 20 and not col.running


@needs_pyspy
def test_a_stop_before_pyspy_began_sampling_is_no_error(tmp_path: Path) -> None:
    """A file read in a tenth of a second stops profiling while py-spy is still starting: SIGINT kills it then."""
    sink = Sink()
    with phase_child(tmp_path / "log", seconds=0.5) as child:
        for delay in (0.0, 0.002, 0.005, 0.01):
            col = collector(child.pid, sink)
            col.start()
            time.sleep(delay)
            col.stop()
            assert not col.running
    assert sink.messages == []


@needs_pyspy
@pytest.mark.slow
def test_a_pyspy_that_never_begins_sampling_is_said_not_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A py-spy stuck before it says anything (here: one that never does) is taken as sampling after a second; the
    next chunk's hand-over then stops it with SIGINT, which kills it. That is no stop of ours before it sampled: it
    is said, and profiling stops (a stop only while profiling stops is quiet)."""
    stuck = tmp_path / "py-spy"
    stuck.write_text("#!/bin/sh\nexec sleep 1000\n")
    stuck.chmod(0o755)
    monkeypatch.setenv(PYSPY_ENV, str(stuck))
    sink = Sink()
    with phase_child(tmp_path / "log", seconds=0.5) as child:
        col = collector(child.pid, sink)
        col.start()
        said = sink.event.wait(15)
        col.stop()
    assert said and sink.messages == [f"py-spy cannot profile PID {child.pid}: py-spy was killed by SIGINT before it "
                                      "said why"]
    assert not col.running


@needs_pyspy
@pytest.mark.slow
def test_a_process_that_is_not_python_gets_pyspys_reason() -> None:
    sink = Sink()
    proc = subprocess.Popen(["sleep", "30"])
    try:
        col = collector(proc.pid, sink)
        col.start()
        assert sink.event.wait(15)
        col.stop()
    finally:
        proc.kill()
        proc.wait()
    assert sink.messages[0].startswith(f"py-spy cannot profile PID {proc.pid}:")
    assert "python" in sink.messages[0].lower() and not col.running and len(sink.store) == 0


@needs_pyspy
@pytest.mark.slow
@requires_root()
@requires_binary("setpriv", remedy="apt-get install util-linux")
def test_ptrace_denied_says_what_permission_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrapper = tmp_path / "py-spy-as-nobody"
    wrapper.write_text(f'#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups {locate_pyspy()} "$@"\n')
    wrapper.chmod(0o755)
    tmp_path.chmod(0o755)
    monkeypatch.setenv("LATENCYMAP_PY_SPY", str(wrapper))
    sink = Sink()
    with phase_child(tmp_path / "log", seconds=1.0) as child:
        col = collector(child.pid, sink)
        col.start()
        assert sink.event.wait(15)
        col.stop()
    assert "permission denied" in sink.messages[0] and "CAP_SYS_PTRACE" in sink.messages[0]
    assert len(sink.store) == 0


def test_missing_pyspy_and_missing_pid_fail_before_any_thread(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    sink = Sink()
    monkeypatch.setenv("LATENCYMAP_PY_SPY", str(tmp_path / "no-such-py-spy"))
    with pytest.raises(PySpyError, match=r"py-spy not found .*pip install 'latencymap\[profile\]'"):
        collector(os.getpid(), sink).start()
    monkeypatch.delenv("LATENCYMAP_PY_SPY")
    if locate_pyspy() is not None:
        proc = subprocess.Popen(["true"])
        proc.wait()
        with pytest.raises(PySpyError, match=f"no process with PID {proc.pid}"):
            collector(proc.pid, sink).start()
    assert sink.batches == [] and sink.messages == []


def profile_ending_worker(tmp_path: Path, mode: str, *, namespace: bool = False) -> tuple[list[Sample], float, float]:
    """The samples of `ending_child.py MODE` (with `namespace`, as PID 1 of a PID namespace of its own), profiled at
    100 Hz from its start to 2.5 s after its worker ended, and the worker's (start, end) by its own clock."""
    log = tmp_path / f"worker-{mode}-{namespace}.log"
    sink = Sink()
    argv = [sys.executable, str(Path(__file__).with_name("ending_child.py")), mode, str(log)]
    proc = subprocess.Popen(in_pid_namespace(argv) if namespace else argv, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().split() == ["ready"]
        col = collector(only_child(proc.pid) if namespace else proc.pid, sink, rate=100, subprocesses=mode == "fork")
        col.start()
        deadline = time.monotonic() + 30
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(2.5)  # the chunk that saw the end runs on, as it did when the end was missed
        col.stop()
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    assert sink.messages == []
    start, end = map(float, log.read_text().split())
    return [s for batch in sink.batches for s in batch], start, end


def assert_worker_clipped(samples: list[Sample], start: float, end: float) -> None:
    """The worker's samples are its busy time's, none after its end."""
    busy = sorted(s.time for s in samples if s.stack[-1].startswith("ending_busy "))
    truth = (end - start) * 100
    assert busy and busy[-1] <= end + 0.06, (busy[-1] - end, len(busy), truth)
    # a fork is found late (py-spy looks for children now and then); the end used to add 1-1.5 s
    assert 0.5 * truth <= len(busy) <= 1.4 * truth, (len(busy), truth, [round(t - start, 3) for t in busy])


@needs_pyspy
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["thread", "fork"])
def test_a_worker_that_ended_gets_no_samples_after_its_end(tmp_path: Path, mode: str) -> None:
    """py-spy never says that a thread or process ended: its last stack used to fill the rest of the chunk (a 0.5 s
    spin got 1.5-2 s of samples; DataLoader workers of one epoch stayed busy in the next). Truth: its own clock."""
    assert_worker_clipped(*profile_ending_worker(tmp_path, mode))


def main_thread_samples(samples: list[Sample]) -> int:
    """How many samples are of ending_child.py's main thread (sleeping in `main`)."""
    return sum(1 for s in samples if s.stack[-1].startswith("main ("))


@needs_pyspy
@pytest.mark.slow
@requires_root()
@requires_binary("unshare", remedy="apt-get install util-linux")
def test_a_program_in_another_pid_namespace_keeps_its_samples_and_loses_an_ended_threads(tmp_path: Path) -> None:
    """In a container py-spy names threads by their ids there (`thread (1)`), /proc/<pid>/task by ours: every thread
    was taken to have ended at the first poll (3 threads spinning 8 s kept 256 samples of ~2,400). Truth: the main
    thread's samples in the same run outside a namespace, and the ended worker's own clock."""
    here = profile_ending_worker(tmp_path, "thread")
    there = profile_ending_worker(tmp_path, "thread", namespace=True)
    main_here, main_there = main_thread_samples(here[0]), main_thread_samples(there[0])
    assert main_here > 250 and abs(main_there - main_here) <= 0.1 * main_here, (main_there, main_here)
    assert_worker_clipped(*there)  # its id there was mapped to ours: its end is seen, not merely never clipped
