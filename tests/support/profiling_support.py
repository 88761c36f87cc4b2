"""Shared helpers for the profiling tests: synthetic samples, the fixture, real child processes."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skips_support import NOT_ROOT, requires, skip_because

from latencymap.profiling.pyspy import locate_pyspy
from latencymap.profiling.samples import Sample

HERE = Path(__file__).resolve().parents[1] / "profiling"
FIXTURE = HERE.parents[1] / "fixtures" / "profile"
SCHEMA = json.loads((HERE / "speedscope.schema.json").read_text())
CHILD = HERE / "phase_child.py"
STREAM = HERE / "record_stream.py"

needs_pyspy = requires(locate_pyspy() is None, "py-spy", "pip install -e '.[dev]' (or the [profile] extra)")


def in_pid_namespace(argv: list[str]) -> list[str]:
    """`argv` run as PID 1 of a PID namespace of its own, as in a container (`unshare -p -f --mount-proc`); the test
    is skipped where this machine lets no namespace be made (as root, one is)."""
    probe = subprocess.run(["unshare", "-p", "-f", "--mount-proc", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        skip_because(NOT_ROOT, "PID namespace", f"unshare -p cannot create one here: {probe.stderr.strip()}")
    return ["unshare", "-p", "-f", "--mount-proc", *argv]


def only_child(pid: int, timeout: float = 10.0) -> int:
    """The one child of process `pid` (`unshare -f`'s program), waited for."""
    deadline = time.monotonic() + timeout
    while True:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
            kids = [int(word) for word in fh.read().split()]
        if kids or time.monotonic() > deadline:
            (kid,) = kids
            return kid
        time.sleep(0.01)


def frame(name: str, line: int = 1, path: str = "/app/work.py") -> str:
    return f"{name} ({path}:{line})"


def phase_samples(start: float, seconds: float, function: str, rate: int = 100, tid: int = 1) -> list[Sample]:
    """Samples of one thread in `function` under <module> › main, `rate` per second."""
    stack = (frame("<module>", 40), frame("main", 30), frame(function, 10))
    return [Sample(start + k / rate, 100, tid, stack, 1 / rate) for k in range(round(seconds * rate))]


def phases_log(path: Path) -> list[tuple[str, float]]:
    """(function, epoch start) of every phase the child logged, `end` included."""
    return [(name, float(t)) for name, t in (line.split() for line in path.read_text().splitlines() if line.strip())]


def phase_of(phases: list[tuple[str, float]], t0: float, t1: float, margin: float = 0.05) -> str | None:
    """The phase that covers [t0 - margin, t1 + margin] entirely, or None when [t0, t1) spans a switch."""
    for (name, start), (_, stop) in itertools.pairwise(phases):
        if start <= t0 - margin and t1 + margin <= stop:
            return name
    return None


def next_switch(log: Path, timeout: float = 30.0) -> float:
    """Wait for the child's next phase switch; its epoch."""
    seen = log.read_text().count("\n") if log.exists() else 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        if text.count("\n") > seen:
            return float(text.splitlines()[seen].split()[1])
        time.sleep(0.01)
    raise TimeoutError("the phase child logged no switch")


@contextmanager
def phase_child(log: Path, seconds: float = 1.0, cycles: int = 1000) -> Iterator[subprocess.Popen]:
    """The phase child, started and ready; killed on the way out."""
    proc = subprocess.Popen([sys.executable, str(CHILD), str(log), str(seconds), str(cycles)],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def profiled_stream(tmp: Path, records: int, *stream_args: str) -> tuple[Path, Path, subprocess.CompletedProcess]:
    """A real view with `--profile` on a phase child, recording to `tmp/rec.zst`, fed `records` records by
    record_stream.py (half a second apart, a quarter second after the phase switches: every other column lies inside
    one phase; `stream_args` after its start time): the recording, the phases' log and the view's result."""
    rec, log = tmp / "rec.zst", tmp / "phases.log"
    with phase_child(log, seconds=1.0) as child:
        view = subprocess.Popen([sys.executable, "-m", "latencymap", "--plain", "--once", "--record", str(rec),
                                 "--profile", str(child.pid), "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not rec.exists() and view.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the recording exists once latencymap has started: then the stream starts
        start = next_switch(log) + 2.25
        subprocess.run([sys.executable, str(STREAM), str(records), "0.5", repr(start), *stream_args],
                       stdout=view.stdin, check=True, timeout=60)
        out, err = view.communicate(timeout=60)
    return rec, log, subprocess.CompletedProcess(view.args, view.returncode, out, err)
