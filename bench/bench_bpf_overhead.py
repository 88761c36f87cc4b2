"""Overhead of the BPF block-I/O program on a direct-I/O dd loop, as a ratio to the untraced run.

Run as root (after `.ci/install-system.sh`): `python bench/bench_bpf_overhead.py [--blocks N] [--rounds R]`.
Each round times the same `dd oflag=direct` write and `iflag=direct` read of N 4 KiB blocks,
untraced, then under each available backend; the median per configuration is compared with the
untraced median measured in the same run. Prints numbers only; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator

from latencymap.sources.bpf import preconditions
from latencymap.sources.bpf.spec import TraceSpec


def dd_loop(path: str, blocks: int) -> float:
    """Seconds for one direct-I/O write then read of `blocks` 4 KiB blocks."""
    t0 = time.perf_counter()
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=4k", f"count={blocks}", "oflag=direct", "status=none"],
                   check=True)
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=4k", "iflag=direct", "status=none"], check=True)
    return time.perf_counter() - t0


@contextlib.contextmanager
def traced_by(backend: str, spec: TraceSpec) -> Iterator[None]:
    """The block program attached (and its maps read every interval, as the source does) while inside."""
    if backend == "none":
        yield
        return
    if backend == "bcc":
        from latencymap.sources.bpf import bcc_backend

        bpf = bcc_backend.load(spec)
        try:
            yield
            bcc_backend.read(bpf, time.time())
        finally:
            bpf.cleanup()
        return
    from latencymap.sources.bpf.bpftrace_backend import BpftraceRun

    run = BpftraceRun(spec)
    events = run.events()
    try:
        next(events)
        yield
    finally:
        events.close()
        run.close()


def available_backends() -> list[str]:
    """Backends whose preconditions hold here."""
    out = []
    if preconditions.bcc_problem() is None:
        out.append("bcc")
    if preconditions.bpftrace_problem() is None:
        out.append("bpftrace")
    return out


def measure(configs: list[str], run: Callable[[], float], rounds: int, spec: TraceSpec) -> dict[str, list[float]]:
    """Interleaved rounds so drift in the disk's speed hits every configuration alike."""
    times: dict[str, list[float]] = {c: [] for c in configs}
    for _ in range(rounds):
        for config in configs:
            with traced_by(config, spec):
                times[config].append(run())
    return times


def main() -> None:
    """Parse arguments, measure, print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", default="/var/tmp", help="a directory on a real block device")
    args = parser.parse_args()
    problem = preconditions.system_problem()
    if problem:
        raise SystemExit(f"bench_bpf_overhead: {problem}")
    fd, path = tempfile.mkstemp(prefix="latencymap-bench-", dir=args.dir)
    os.close(fd)
    spec = TraceSpec.from_options({"mode": "block", "interval": 1.0})
    try:
        dd_loop(path, args.blocks)  # warm-up: allocate the file's blocks
        configs = ["none", *available_backends()]
        times = measure(configs, lambda: dd_loop(path, args.blocks), args.rounds, spec)
    finally:
        os.unlink(path)
    base = statistics.median(times["none"])
    ios = 2 * args.blocks
    print(f"direct-I/O dd: {ios} requests of 4 KiB per run, {args.rounds} rounds, medians")
    print(f"{'config':<10} {'seconds':>9} {'µs/request':>11} {'ratio':>7}")
    for config in configs:
        med = statistics.median(times[config])
        print(f"{config:<10} {med:>9.4f} {med / ios * 1e6:>11.2f} {med / base:>7.3f}")


if __name__ == "__main__":
    main()
