"""`latencymap bpf block|syscall`: the BPF source, choosing between the bcc and bpftrace backends.

Fallback order with `--backend auto`: bcc first (in-process, exact per-slot sums, no subprocess),
then bpftrace (no kernel headers needed). A backend whose preconditions fail is skipped with its
reason; one that fails to compile or attach is reported in a Notice and the next is tried; when
none works, one error lists every backend's reason. Both attach tracepoints only (this kind of
kernel has no kprobes or fentry).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import click

from latencymap.core.model import Notice
from latencymap.plugins import Item, Source, SourceError

from . import preconditions
from .bpftrace_backend import interval_ms as bpftrace_ms
from .collect import Reading, intervals, watched
from .spec import DEFAULT_SYSCALLS, MIN_INTERVAL, BpfError, BpfUnavailable, TraceSpec

BACKENDS = ("bcc", "bpftrace")
BPFTRACE_PAIRING = ("bpf: bpftrace pairs block requests by disk and sector (its tracepoints do not show the request): "
                    "requests in flight for one sector are each counted, but paired in no set order, so their "
                    "latencies may be swapped (the total time is exact); the bcc backend pairs each request exactly")


class BpfSource(Source):
    """Block I/O or syscall latency histograms from in-kernel BPF programs."""

    name: ClassVar[str] = "bpf"
    examples: ClassVar[tuple[str, ...]] = (
        "latencymap bpf block --split rw",
        "latencymap bpf block --disk vda --queued --record io.zst",
        "latencymap bpf syscall --syscalls pread64,preadv,fsync --pid 1234",
        "latencymap bpf block --backend bpftrace --count 10 --plain --once",
    )
    summary: ClassVar[str] = "Block I/O or syscall latency from the kernel via BPF tracepoints (bcc or bpftrace)."
    modes: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {
        "block": ("Block I/O latency from the kernel: issue (or insert, with --queued) to completion of each request.",
                  ("backend", "interval", "disk", "queued", "per_disk", "split")),
        "syscall": ("Syscall latency from the kernel: entry to exit of each call, one stream per syscall.",
                    ("backend", "interval", "syscalls", "pid", "comm")),
    }
    own_limits: ClassVar[bool] = True  # --count readings, --duration past the attach: whole readings, idle or not

    @classmethod
    def params(cls) -> list[click.Parameter]:
        return [
            click.Argument(["mode"], type=click.Choice(["block", "syscall"])),
            click.Option(["--backend"], type=click.Choice(["auto", *BACKENDS]), default="auto", show_default=True,
                         help="BPF front end; auto tries bcc, then bpftrace."),
            click.Option(["--interval"], type=click.FloatRange(min=MIN_INTERVAL), default=1.0, show_default=True,
                         metavar="S",
                         help=f"Seconds per time column (at least {MIN_INTERVAL:g})."),
            click.Option(["--disk"], metavar="NAME", help="block: only this disk (e.g. vda, nvme0n1)."),
            click.Option(["--queued"], is_flag=True, help="block: include time queued in the OS (from insert)."),
            click.Option(["--per-disk", "per_disk"], is_flag=True, help="block: one stream per disk."),
            click.Option(["--split"], type=click.Choice(["rw"]), default=None,
                         help="block: separate streams for reads, writes and others."),
            click.Option(["--syscalls"], default=None, metavar="LIST",
                         help=f"syscall: comma-separated syscall names, one stream each [default: "
                              f"{','.join(DEFAULT_SYSCALLS)}]."),
            click.Option(["--pid"], type=int, default=None, metavar="P", help="syscall: only this process."),
            click.Option(["--comm"], default=None, metavar="NAME", help="syscall: only tasks with this name."),
        ]

    @classmethod
    def unavailable(cls) -> str | None:
        problem = preconditions.system_problem()
        if problem:
            return problem
        reasons = backend_problems()
        if all(reasons.values()):
            return no_backend_message(reasons)
        return None

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.spec = TraceSpec.from_options(options)
        self.backend = options.get("backend") or "auto"
        self.chosen: str | None = None

    def describe(self) -> dict[str, Any]:
        spec = self.spec
        out: dict[str, Any] = {"source": self.name, "mode": spec.mode, "backend": self.chosen or self.backend,
                               "interval": spec.interval}
        if spec.mode == "block":
            out.update(disk=spec.disk, queued=spec.queued, per_disk=spec.per_disk, split_rw=spec.split_rw)
        else:
            out.update(syscalls=list(spec.syscalls), pid=spec.pid, comm=spec.comm)
        return out

    def items(self) -> Iterator[Item]:
        problem = preconditions.system_problem()
        if problem:
            raise BpfUnavailable(f"bpf: {problem}")
        wanted = BACKENDS if self.backend == "auto" else (self.backend,)
        reasons = {name: problem for name, problem in backend_problems().items() if name in wanted}
        for name in wanted:
            if reasons[name]:
                if name != wanted[-1]:
                    yield Notice(f"bpf: {name}: {reasons[name]}; trying {wanted[wanted.index(name) + 1]}", skipped=0)
                continue
            try:
                readings, attached_at, close = start_backend(name, self.spec)
            except BpfError as err:
                reasons[name] = str(err)
                if name != wanted[-1]:
                    yield Notice(f"bpf: {err}; trying {wanted[wanted.index(name) + 1]}", skipped=0)
                continue
            self.chosen = name
            try:
                yield Notice(f"bpf: tracing {self.spec.mode} latency with {name}", skipped=0)
                if name == "bpftrace" and self.spec.mode == "block":
                    yield Notice(BPFTRACE_PAIRING, skipped=0)
                if name == "bpftrace" and abs(bpftrace_ms(self.spec) / 1000 - self.spec.interval) > 1e-9:
                    yield Notice(f"bpf: bpftrace's interval probe counts whole milliseconds: columns of "
                                 f"{bpftrace_ms(self.spec)} ms, not {self.spec.interval * 1000:g}", skipped=0)
                for i, extra in self.spec.variants.items():
                    listed = self.spec.syscalls[i]
                    yield Notice(f"bpf: {listed} also counts {', '.join(extra)} (CPython's os.{listed} and glibc's "
                                 f"{extra[0]}() issue it); list both in --syscalls to see them apart", skipped=0)
                interval = bpftrace_ms(self.spec) / 1000 if name == "bpftrace" else self.spec.interval
                readings = limited(readings, attached_at, self.options.get("count"), self.options.get("duration"),
                                   interval)
                yield from intervals(self.spec, readings, attached_at)
            finally:
                close()
            return
        raise BpfUnavailable(f"bpf: {no_backend_message(reasons)}")


def backend_problems() -> dict[str, str | None]:
    """Each backend's missing precondition (None when it can be tried)."""
    return {"bcc": preconditions.bcc_problem(), "bpftrace": preconditions.bpftrace_problem()}


def no_backend_message(reasons: dict[str, str | None]) -> str:
    """The one message given when no backend works, with every backend's reason."""
    detail = "; ".join(f"{name}: {why}" for name, why in reasons.items() if why)
    return f"no BPF backend works here (tried {', '.join(reasons)}, in this order) — {detail}"


def start_backend(name: str, spec: TraceSpec) -> tuple[Iterator[Reading], float, Any]:
    """Load and attach one backend: (readings, attach time, close function). BpfError on failure."""
    if name == "bcc":
        from . import bcc_backend

        bpf = bcc_backend.load(spec)
        attached_at = time.time()
        gen = watched(bcc_backend.readings(bpf, spec, attached_at), os.getpid())

        def close_bcc() -> None:
            gen.close()
            bcc_backend.detach(bpf)

        return gen, attached_at, close_bcc
    from .bpftrace_backend import BpftraceRun

    run = BpftraceRun(spec)
    events = run.events()
    try:
        next(events)  # the first event is `ready`, printed once every probe is attached
    except (BpfError, SourceError, StopIteration) as err:
        run.close()
        raise BpfError(f"bpftrace could not attach the {spec.mode} program: {run_error(err)}") from None
    attached_at = time.time()
    # A tick dated before `ready` was read here (this process was not scheduled for an interval) is left out: the maps
    # are cumulative, so the next reading holds its events.
    readings = watched((reading for kind, reading in events
                        if kind == "tick" and reading is not None and reading.timestamp > attached_at), run.proc.pid)

    def close() -> None:
        events.close()
        run.close()

    return readings, attached_at, close


def run_error(err: BaseException) -> str:
    """Text of a startup failure."""
    return str(err) or type(err).__name__


def limited(readings: Iterator[Reading], attached_at: float, count: int | None, duration: float | None,
            interval: float = 1.0) -> Iterator[Reading]:
    """Stop after `count` readings or once a reading is `duration` seconds past the attach time.

    Readings come on a schedule of whole `interval`s after the attach (bcc's reads; bpftrace's timer, which starts
    before or after bpftrace says it attached: by a few ms, by more than half an interval on a loaded machine): a
    reading is past `duration` when its place on the schedule (its number times the interval) or its time since the
    attach is, so that a reading short of its place still ends the run, one late by more than half an interval does
    not end it a reading early, and both backends give `duration / interval` columns.
    """
    for n, reading in enumerate(readings, start=1):
        yield reading
        if count is not None and n >= count:
            return
        if duration is not None:
            elapsed = reading.timestamp - attached_at
            if max(elapsed, n * interval) >= duration - 1e-9:
                return
