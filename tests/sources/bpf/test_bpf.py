"""BPF source against the real kernel, with both backends: exact syscall counts, direct-I/O block latency.

Skipped only where BPF cannot exist (not root / no CAP_BPF, kernel without BTF). The block test does direct I/O on
the disk under /var/tmp, or on a loop device where there is none. Elsewhere a missing
tool or mount fails with its remedy: run `.ci/install-system.sh` as root first.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from bpf_support import completions_witness, not_handed
from process_support import bpf_unavailable, children_named, loop_device

from latencymap.core.buckets import bounds_seconds
from latencymap.core.model import Interval, Notice
from latencymap.sources.bpf import preconditions
from latencymap.sources.bpf.source import BpfSource

SKIP = bpf_unavailable()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SKIP is not None, reason=SKIP or "")]
BACKENDS = ["bcc", "bpftrace"]
TIMEOUT = 60.0

CHILD = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
n = int(sys.argv[2])
sys.stdout.write("ready\\n"); sys.stdout.flush()
sys.stdin.readline()
for i in range(n):
    os.pread(fd, 64, (i * 64) % 4096)
sys.stdout.write("done\\n"); sys.stdout.flush()
sys.stdin.readline()
"""


@pytest.fixture(autouse=True)
def _tools_ready() -> None:
    problem = preconditions.tracefs_problem()
    assert problem is None, f"{problem} (or run .ci/install-system.sh)"


@contextmanager
def _stepped_child(script: str, *args: str) -> Iterator[tuple[subprocess.Popen[str], Callable[[], None]]]:
    """A Python child running `script` that says `ready`, does its work when told (`go`) and says `done`: the child,
    and the call that starts its work and waits for it."""
    child = subprocess.Popen([sys.executable, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        stdin, stdout = child.stdin, child.stdout

        def work() -> None:
            stdin.write("go\n")
            stdin.flush()
            assert stdout.readline().strip() == "done"

        yield child, work
    finally:
        if child.stdin:
            child.stdin.close()
        child.wait(timeout=10)


def _collect(src: BpfSource, start_work: Callable[[], None], timeout: float = TIMEOUT,
             background: bool = False, notices: list[str] | None = None) -> list[Interval]:
    """Run the source; call `start_work()` once attached (it returns when the work is done), then
    keep going until one interval lies wholly after the work, so every event has been read. With `background`
    the work runs in a thread while the source is read (work that takes longer than a few intervals). The notices'
    messages go to `notices`."""
    out: list[Interval] = []
    done_at: float | None = None
    worker: threading.Thread | None = None
    failed: list[BaseException] = []

    def work() -> None:
        try:
            start_work()
        except BaseException as err:
            failed.append(err)

    deadline = time.time() + timeout
    gen: Iterator = src.items()
    try:
        for item in gen:
            if isinstance(item, Notice) and notices is not None:
                notices.append(item.message)
            if isinstance(item, Notice) and "tracing" in item.message:
                if background:
                    worker = threading.Thread(target=work)
                    worker.start()
                else:
                    start_work()
                    done_at = time.time()
            elif isinstance(item, Interval):
                out.append(item)
                if worker is not None and done_at is None and not worker.is_alive():
                    done_at = time.time()
                if done_at is not None and item.start > done_at:
                    break
            assert time.time() < deadline, "no interval after the work finished"
    finally:
        gen.close()
        if worker is not None:
            worker.join()
    assert not failed, failed
    assert worker is not None or done_at is not None, "the source never said it was tracing"
    return out


def _totals(intervals: list[Interval], label: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    chosen = [iv for iv in intervals if label is None or iv.stream.label == label]
    counts = np.sum([iv.counts for iv in chosen], axis=0)
    spent = np.sum([iv.time for iv in chosen], axis=0)
    return counts, spent


def _skipped(notices: list[str]) -> int:
    """Runs of the BPF programs the kernel said it skipped (its recursion protection), as the notices give them."""
    return sum(int(m.group(1)) for m in (re.search(r"the kernel skipped (\d+) run", n) for n in notices) if m)


def _check_exact_sums(counts: np.ndarray, spent: np.ndarray) -> None:
    """Each slot's mean (exact time / count) lies inside the slot: sums and counts use one bucketing."""
    low, high = bounds_seconds("bpf", "nanosec")
    for slot in np.flatnonzero(counts):
        mean = spent[slot] / counts[slot]
        assert low[slot] - 1e-12 <= mean < high[slot] + 1e-12, (slot, mean)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pread64_count_is_exact(backend: str, tmp_path: Path) -> None:
    n = 2477
    data = tmp_path / "data"
    data.write_bytes(os.urandom(4096))
    with _stepped_child(CHILD, str(data), str(n)) as (child, work):
        src = BpfSource(mode="syscall", syscalls="pread64,fsync", pid=child.pid, backend=backend, interval=0.25)
        intervals = _collect(src, work)
    assert src.chosen == backend
    labels = {iv.stream.label for iv in intervals}
    assert labels == {f"syscall pread64 pid {child.pid}", f"syscall fsync pid {child.pid}"}
    counts, spent = _totals(intervals, f"syscall pread64 pid {child.pid}")
    assert int(counts.sum()) == n
    assert int(_totals(intervals, f"syscall fsync pid {child.pid}")[0].sum()) == 0
    _check_exact_sums(counts, spent)
    for iv in intervals:
        assert iv.stream.unit == "nanosec" and iv.stream.datasource == "bpf" and iv.counts.dtype == np.int64


@pytest.mark.parametrize("backend", BACKENDS)
def test_readings_printed_while_the_reader_is_busy_keep_their_times(backend: str, tmp_path: Path) -> None:
    """The reader is busy for four intervals, then the child reads (a loaded machine, a consumer drawing): bpftrace
    prints its readings meanwhile, and each keeps the time its probe fired. Dated when read instead, they came back
    to back after the work: the first column starting after it was one printed before it, and the reader stopped
    with none of the calls counted (the direct-I/O test's work takes this long on a loaded machine)."""
    n = 500
    data = tmp_path / "data"
    data.write_bytes(os.urandom(4096))
    with _stepped_child(CHILD, str(data), str(n)) as (child, work):
        def busy_then_work() -> None:
            time.sleep(1.0)
            work()

        src = BpfSource(mode="syscall", syscalls="pread64", pid=child.pid, backend=backend, interval=0.25)
        intervals = _collect(src, busy_then_work)
    assert int(_totals(intervals)[0].sum()) == n
    if backend == "bpftrace":  # bcc reads its maps when asked: a busy reader gets long, then short, real columns
        lengths = [iv.end - iv.start for iv in intervals[1:]]
        assert all(abs(length - 0.25) < 0.1 for length in lengths), lengths


LONG_SLEEPS = """
import sys, time
sys.stdout.write("ready\\n"); sys.stdout.flush()
sys.stdin.readline()
for seconds in sys.argv[1:]:
    time.sleep(float(seconds))
sys.stdout.write("done\\n"); sys.stdout.flush()
sys.stdin.readline()
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_calls_of_2_to_the_31_ns_and_more_keep_count_and_time_in_their_own_bucket(backend: str) -> None:
    """One sleep in [2^31, 2^32) ns and one in [2^32, 2^33): each counted, with its time, in its own bucket (bpftrace
    0.17's hist() puts both in [2G, 4G), and its JSON prints that row with bounds that overflow: latencymap failed)."""
    with _stepped_child(LONG_SLEEPS, "2.3", "4.5") as (child, work):
        src = BpfSource(mode="syscall", syscalls="clock_nanosleep", pid=child.pid, backend=backend, interval=0.5)
        intervals = _collect(src, work, background=True)
    assert src.chosen == backend
    counts, spent = _totals(intervals)
    assert {int(s): int(counts[s]) for s in np.flatnonzero(counts)} == {32: 1, 33: 1}
    assert spent[32] == pytest.approx(2.3, abs=0.05) and spent[33] == pytest.approx(4.5, abs=0.05)
    _check_exact_sums(counts, spent)


#: Set to 1 to run the block test on a loop device even where /var/tmp lies on a disk.
FORCE_LOOP = "LATENCYMAP_TEST_LOOP"


def _block_dir() -> tuple[str, str] | None:
    """A writable directory on a real block device and that device's disk name."""
    for path in ("/var/tmp", tempfile.gettempdir(), str(Path(__file__).resolve().parent)):
        dev = os.stat(path).st_dev
        sys_dir = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
        if not sys_dir.exists() or not os.access(path, os.W_OK):
            continue
        disk = sys_dir.resolve()
        if (disk / "partition").exists():
            disk = disk.parent
        return path, disk.name
    return None


@pytest.fixture
def block_target() -> Iterator[tuple[str, str]]:
    """(a path to do 4 KiB direct I/O on, its disk's name): a file on the disk under /var/tmp, else a loop device."""
    found = None if os.environ.get(FORCE_LOOP) == "1" else _block_dir()
    if found is None:
        with loop_device(BLOCKS) as device:
            yield device, Path(device).name
        return
    fd, name = tempfile.mkstemp(prefix="latencymap-bpf-", dir=found[0])
    os.close(fd)
    try:
        yield name, found[1]
    finally:
        os.unlink(name)


BLOCKS = 400


@pytest.mark.parametrize("backend", BACKENDS)
def test_direct_io_block_latency(backend: str, block_target: tuple[str, str]) -> None:
    """Every direct I/O is counted but for those the kernel said it skipped, or completed without running any BPF
    program on (a witness program beside the source tells: tests/support/bpf_support.py)."""
    name, disk = block_target
    blocks = BLOCKS

    def work() -> None:
        subprocess.run(["dd", "if=/dev/zero", f"of={name}", "bs=4k", f"count={blocks}", "oflag=direct",
                        "conv=fsync", "status=none"], check=True)
        subprocess.run(["dd", f"if={name}", "of=/dev/null", "bs=4k", f"count={blocks}", "iflag=direct",
                        "status=none"], check=True)

    src = BpfSource(mode="block", disk=disk, split="rw", backend=backend, interval=0.25)
    notices: list[str] = []
    with completions_witness(disk) as since:
        intervals = _collect(src, work, notices=notices)
        seen = since()
    writes, write_time = _totals(intervals, f"block I/O {disk} write")
    reads, read_time = _totals(intervals, f"block I/O {disk} read")
    # Owed: each I/O of the work, but for completions the kernel never handed to BPF, and runs it said it skipped (a
    # BPF program of another tool on the same CPU).
    skipped = _skipped(notices)
    for counted, op in ((reads, "read"), (writes, "write")):
        assert int(counted.sum()) + skipped >= blocks - not_handed(seen, op), (op, int(counted.sum()), seen, notices)
    low, high = bounds_seconds("bpf", "nanosec")
    for counts, spent in ((writes, write_time), (reads, read_time)):
        _check_exact_sums(counts, spent)
        median_slot = int(np.searchsorted(np.cumsum(counts), counts.sum() / 2))
        # A 4 KiB direct I/O on any disk completes between 1 µs and 100 ms.
        assert low[median_slot] >= 1e-6 and high[median_slot] <= 0.2, (median_slot, low[median_slot])
        mean = spent.sum() / counts.sum()
        assert 1e-6 <= mean <= 0.1


def test_auto_falls_back_to_bpftrace_when_bcc_cannot_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "headers"
    (broken / "include" / "linux").mkdir(parents=True)
    (broken / "include" / "generated").mkdir()
    (broken / "include" / "linux" / "kconfig.h").write_text("#error not a real kernel tree\n")
    monkeypatch.setenv("BCC_KERNEL_SOURCE", str(broken))
    src = BpfSource(mode="block", interval=0.2, count=1)
    items = list(src.items())
    messages = [item.message for item in items if isinstance(item, Notice)]
    assert "bcc could not compile" in messages[0] and messages[0].endswith("trying bpftrace")
    assert src.chosen == "bpftrace" and any(isinstance(item, Interval) for item in items)


@pytest.mark.parametrize("backend", BACKENDS)
def test_closing_right_after_attach_detaches(backend: str) -> None:
    gen = BpfSource(mode="block", backend=backend).items()
    first = next(gen)
    assert isinstance(first, Notice) and backend in first.message
    if backend == "bpftrace":
        assert children_named(os.getpid(), "bpftrace")
    gen.close()
    assert children_named(os.getpid(), "bpftrace") == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_duration_gives_as_many_columns_with_either_backend(backend: str) -> None:
    """`--duration 2 --interval 0.25`: 8 columns covering 2 s, whichever backend (bpftrace's timer starts a few ms
    before it says it attached, which made it 9; on a loaded machine it started more than half an interval after,
    which made it 7). The first column runs from the attach to the first reading: they cover 2 s to within that
    offset, less than an interval."""
    out = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", "bpf", "syscall",
                          "--backend", backend, "--syscalls", "clock_nanosleep", "--duration", "2", "--interval",
                          "0.25"], capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr
    (stream,) = json.loads(out.stdout)["streams"]
    assert stream["columns"] == 8 and stream["end"] - stream["start"] == pytest.approx(2.0, abs=0.25)
