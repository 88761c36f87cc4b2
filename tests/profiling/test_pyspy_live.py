"""Real py-spy on real targets that stress the chrometrace parser: stacks that change faster than py-spy samples,
and forked children that share their parent's thread ids (torch DataLoader workers on Linux)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from profiling_support import HERE, needs_pyspy

from latencymap.profiling.chrometrace import load_events
from latencymap.profiling.persist import MAX_PAYLOAD, payloads
from latencymap.profiling.pyspy import Chunk, ChunkResult, locate_pyspy, record_argv
from latencymap.profiling.samples import Sample

pytestmark = [needs_pyspy, pytest.mark.slow]


@contextmanager
def target(script: str, *args: str) -> Iterator[list[int]]:
    """A target script in its own session, ready; the PIDs its `ready` line names (itself first); all killed after."""
    proc = subprocess.Popen([sys.executable, str(HERE / script), *args], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        words = proc.stdout.readline().split()
        assert words[:1] == ["ready"]
        yield [proc.pid, *(int(w) for w in words[1:])]
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def record(tmp_path: Path, pid: int, *, rate: int, seconds: int,
           subprocesses: bool = False) -> tuple[ChunkResult, list[dict[str, Any]]]:
    """One `py-spy record` chunk of `pid`: its samples and the chrometrace events they came from."""
    exe = locate_pyspy()
    assert exe is not None
    out = tmp_path / "trace.json"
    argv = record_argv(exe, pid, str(out), duration=seconds, rate=rate, subprocesses=subprocesses)
    chunk = Chunk(argv, out, tmp_path / "pyspy.err", rate, pid)
    chunk.start()
    assert chunk.done.wait(seconds + 30)
    result = chunk.result()
    return result, [e for e in load_events(out.read_bytes()) if e.get("ph") in ("B", "E")]


def by_pid(samples: list[Sample]) -> dict[int, list[Sample]]:
    out: dict[int, list[Sample]] = {}
    for s in samples:
        out.setdefault(s.pid, []).append(s)
    return out


def leaves(samples: list[Sample]) -> Counter[str]:
    return Counter(s.stack[-1].split(" ")[0] for s in samples)


def test_a_thread_gets_one_sample_per_period_however_often_its_stack_changes(tmp_path: Path) -> None:
    rate = 100
    for _ in range(3):  # on a loaded machine the target may be descheduled past several samples: record again
        with target("flicker_child.py", "0.002") as (pid,):
            result, events = record(tmp_path, pid, rate=rate, seconds=2)
        changes = len({e["ts"] for e in events})
        if changes > 80:
            break
    assert changes > 80, "the stack changed at most samples"
    (tid,) = {s.tid for s in result.samples}
    ts = [e["ts"] for e in events if e["tid"] == tid]
    recorded = (max(ts) - min(ts)) / 1e6
    assert abs(len(result.samples) - recorded * rate) <= 1, (len(result.samples), recorded)
    functions = leaves(result.samples)
    assert set(functions) <= {"tick", "tock", "main"}  # main: between the calls
    assert functions["tick"] + functions["tock"] > 0.9 * len(result.samples)


def test_forked_children_sharing_the_parents_thread_ids_get_their_own_samples(tmp_path: Path) -> None:
    rate = 100
    with target("fork_child.py") as (parent, child_a, child_b):
        result, events = record(tmp_path, parent, rate=rate, seconds=2, subprocesses=True)
    assert len({e["tid"] for e in events}) == 1, "the children run on the parent's thread id"
    assert len({e["pid"] for e in events}) == 3
    pids = by_pid(result.samples)
    assert set(pids) == {parent, child_a, child_b}
    assert set(leaves(pids[parent])) == {"parent_work"}
    assert set(leaves(pids[child_a])) <= {"leaf_a", "child_work"} and leaves(pids[child_a])["leaf_a"] > 100
    assert set(leaves(pids[child_b])) <= {"leaf_b", "child_work"} and leaves(pids[child_b])["leaf_b"] > 100
    end = max(e["ts"] for e in events)
    for pid, samples in pids.items():
        assert max(len(s.stack) for s in samples) <= 6  # process frames, <module>, main, worker, leaf
        recorded = (end - min(e["ts"] for e in events if e["pid"] == pid)) / 1e6
        assert abs(len(samples) - recorded * rate) <= 1, (pid, len(samples), recorded)
    assert all(len(line) <= MAX_PAYLOAD for line in payloads(result.samples))


def test_secrets_on_the_profiled_command_line_reach_no_sample(tmp_path: Path) -> None:
    """`--subprocesses` roots each stack in `process <pid>:"<command line>"`, secrets and all, as py-spy writes it."""
    secrets = ("--password=hunter2", "--db", "postgresql://bob:s3cret@db/t", "--hf-token", "hf_SECRETTOKEN",
               "--api-key", "-dashSECRET", "DB_PASSWORD=two wordSECRET", "--auth-token", "-v")
    with target("fork_child.py", *secrets) as (parent, *_):
        result, events = record(tmp_path, parent, rate=100, seconds=1, subprocesses=True)
    assert any("hunter2" in e["name"] and "two wordSECRET" in e["name"] for e in events), (
        "py-spy wrote the command line as it is, its words joined by blanks")
    roots = {s.stack[0] for s in result.samples}
    assert roots and all(root.startswith("process ") for root in roots)
    text = "\n".join(payloads(result.samples))
    for secret in ("hunter2", "s3cret", "hf_SECRETTOKEN", "dashSECRET", "wordSECRET"):
        assert secret not in text
    assert all('--password=*** --db postgresql://db/t --hf-token *** --api-key *** DB_PASSWORD=*** --auth-token -v"'
               in root for root in roots)
