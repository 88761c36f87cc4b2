"""Child processes of the tests: finding them (bpftrace, the Spark JVM), and whether BPF can run here."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from skips_support import NO_BTF, NOT_LINUX, NOT_ROOT, reason, skip_missing

from latencymap.core.model import Interval, Notice


def children_named(parent: int, comm: str) -> list[int]:
    """Live processes called `comm` whose parent is `parent`."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if name == comm and int(rest[1]) == parent and rest[0] != "Z":
            out.append(int(entry.name))
    return out


#: `python -c _LIMITED RLIMIT_X CAP ARGV...`: exec ARGV with resource RLIMIT_X capped at CAP. Not `preexec_fn`: that
#: runs Python in a fork of the threaded test process (gRPC's threads aborted such a child in CI).
_LIMITED = ("import os, resource, sys; cap = int(sys.argv[2]); "
            "resource.setrlimit(getattr(resource, sys.argv[1]), (cap, cap)); os.execv(sys.argv[3], sys.argv[3:])")


def run_limited(limit: str, cap: int, command: Sequence[str], env: Mapping[str, str] | None = None,
                timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run `command` (its program an absolute path) with resource `limit` (`RLIMIT_NOFILE`) capped at `cap`; text
    mode, `kw` to subprocess.run. The child writes no bytecode (see `run_file_size_limited`)."""
    return subprocess.run([sys.executable, "-c", _LIMITED, limit, str(cap), *command], text=True, timeout=timeout,
                          env={**(os.environ if env is None else env), "PYTHONDONTWRITEBYTECODE": "1"}, **kw)


def run_file_size_limited(cap: int, command: Sequence[str], env: Mapping[str, str] | None = None,
                          **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run `command` with every file it writes capped at `cap` bytes, as on a full disk (a write past it fails with
    EFBIG: Python ignores SIGXFSZ). Without bytecode: a .pyc is one write that Python 3.11 does not check, so
    importlib would keep one cut at the cap, and every later import of that module (in any process) would fail."""
    return run_limited("RLIMIT_FSIZE", cap, command, env, **kw)


def bpf_unavailable() -> str | None:
    """Why BPF tracing cannot run on this machine (a skip reason no install can change); None when it can."""
    from latencymap.sources.bpf import preconditions

    if not sys.platform.startswith("linux"):
        return reason(NOT_LINUX, "BPF", f"BPF tracing is Linux only (this is {sys.platform})")
    problem = preconditions.privilege_problem()
    if problem:
        return reason(NOT_ROOT, "root or CAP_BPF+CAP_PERFMON", problem)
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return reason(NO_BTF, "/sys/kernel/btf/vmlinux", "this kernel has no BTF: BPF tracing is not available")
    return None


@contextmanager
def loop_device(blocks: int, direct_io: bool = False) -> Iterator[str]:
    """A loop device (root) over a file in /var/tmp holding `blocks` 4 KiB blocks, detached on the way out;
    `direct_io`: over the file with O_DIRECT (real disk latencies, requests that overlap; its first block is data)."""
    fd, backing = tempfile.mkstemp(prefix="latencymap-loop-", dir="/var/tmp")
    if direct_io:
        os.write(fd, os.urandom(4096))
    os.ftruncate(fd, blocks * 4096)
    if direct_io:
        os.fsync(fd)
    os.close(fd)
    try:
        made = subprocess.run(["losetup", "--find", "--show", *(["--direct-io=on"] if direct_io else []), backing],
                              capture_output=True, text=True, check=False)
        if made.returncode != 0:
            skip_missing("loop device", f"`losetup --find` failed: {made.stderr.strip()}")
        device = made.stdout.strip()
        try:
            yield device
        finally:
            subprocess.run(["losetup", "--detach", device], check=False)
    finally:
        os.unlink(backing)


#: Empty intervals in a row (of any stream) after the work that end a trace: two readings of every stream.
QUIET_INTERVALS = 8


def traced(src: Any, work: Callable[[], None], timeout: float = 90.0) -> tuple[dict[str, int], list[str]]:
    """Run the BPF source `src`; when it says it is tracing, do `work()`; count each stream's events until the trace
    is quiet after it (`QUIET_INTERVALS` empty intervals in a row starting half a second or more after the work:
    readings printed while the work ran can arrive late under load): events per stream, and the notices."""
    counts: dict[str, int] = {}
    notices: list[str] = []
    done_at: float | None = None
    quiet = 0
    deadline = time.time() + timeout
    gen = src.items()
    try:
        for item in gen:
            if isinstance(item, Notice):
                notices.append(item.message)
                if "tracing" in item.message and done_at is None:
                    work()
                    done_at = time.time()
            elif isinstance(item, Interval):
                counts[item.stream.label] = counts.get(item.stream.label, 0) + int(item.counts.sum())
                after = done_at is not None and item.start > done_at + 0.5 and not item.counts.any()
                quiet = quiet + 1 if after else 0
                if quiet >= QUIET_INTERVALS:
                    break
            assert time.time() < deadline, "no interval after the work finished"
    finally:
        gen.close()
    return counts, notices
