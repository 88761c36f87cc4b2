"""The bpftrace backend: a generated script run as `bpftrace -f json`, cumulative maps printed each tick.

The script computes each event's log2 slot itself (`SLOT`, 64-bit) and keeps `@lm_cnt[group, op, slot] = count()`
and `@lm_sum[group, op, slot] = sum(ns)`: counts and exact times land in the same slot. (bpftrace's own `hist()`
is not used: before 0.20 it counts every value of 2^31 or more in its `[2G, 4G)` row, and `-f json` prints that
row as `{"min": -2147483648, "max": 0}`.) The maps are never cleared; both are printed, then a `lm_tick` marker
with the time the interval probe fired, every interval.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass

from latencymap.plugins import SourceError, process_end
from latencymap.sources.bpftrace_json import keyed, parse_line

from .collect import Reading
from .spec import BpfError, TraceSpec

READY, TICK = "lm_ready", "lm_tick"
NOISE = ("RLIMIT_MEMLOCK",)

SLOT = """
    $v = $d; $s = 0;
    if ($v > 0) {
        $s = 1;
        if ($v >= 4294967296) { $v = $v >> 32; $s = $s + 32; }
        if ($v >= 65536) { $v = $v >> 16; $s = $s + 16; }
        if ($v >= 256) { $v = $v >> 8; $s = $s + 8; }
        if ($v >= 16) { $v = $v >> 4; $s = $s + 4; }
        if ($v >= 4) { $v = $v >> 2; $s = $s + 2; }
        if ($v >= 2) { $s = $s + 1; }
    }
    @lm_cnt[$g, $op, $s] = count();
    @lm_sum[$g, $op, $s] = sum($d);
"""

FOOTER = """
BEGIN {{ printf("{ready}\\n"); }}
interval:ms:{ms} {{ print(@lm_cnt); print(@lm_sum); printf("{tick} %lld\\n", nsecs); }}
"""


#: In-flight requests per (disk, sector) that block mode can tell apart (see `block_script`): at most this many CPUs
#: get slots of their own, SLOTS_PER_MACHINE between them; on more CPUs they share SHARED_SLOTS.
OWN_SLOTS_CPUS = 8
SLOTS_PER_MACHINE = 16
SHARED_SLOTS = 8
#: The key of a request: its disk and sector + 1. A flush is issued at sector 0 (the tracepoint shows 0 for "no
#: sector") and completes at sector -1 (it shows the raw position): sector + 1 makes the completion 0, and the
#: issue of a request with no data whose rwbs starts with F (a flush) is given 0 too.
BLOCK_KEY = ("$dev = args->dev; $k = args->sector + 1; "
             "if (args->nr_sector == 0 && strncmp(args->rwbs, \"F\", 1) == 0) { $k = (uint64)0; }")


@dataclass(frozen=True)
class Slots:
    """How the starts of one sector's requests in flight are kept: `count` slots, `per_cpu` of them each CPU's own
    (0: shared by all CPUs)."""

    count: int
    per_cpu: int
    cpus: int

    @classmethod
    def here(cls, cpus: int | None = None) -> Slots:
        cpus = cpus or os.cpu_count() or 1
        if cpus <= OWN_SLOTS_CPUS:
            per_cpu = SLOTS_PER_MACHINE // cpus
            return cls(per_cpu * cpus, per_cpu, cpus)
        return cls(SHARED_SLOTS, 0, cpus)

    def mine(self, n: int) -> str:
        """`$j`: this CPU's `n`-th slot (its own ones, or the shared ones counted from a slot of its own)."""
        if self.per_cpu:
            return f"$j = (uint64)((cpu % {self.cpus}) * {self.per_cpu} + {n});"
        return f"$j = (uint64)((cpu + {n}) % {self.count});"

    def push(self, req: str) -> str:
        """Statements storing `nsecs` in a free slot of `req`: one of this CPU's own, which no other CPU writes
        (bpftrace has no atomic claim), or on a machine with many CPUs the first free one from a slot of its own."""
        out = ["$done = 0;"]
        for n in range(self.per_cpu or self.count):
            out.append(f"{self.mine(n)} if ($done == 0) {{ if (!@lm_start[{req}, $j]) "
                       f"{{ @lm_start[{req}, $j] = nsecs; $done = 1; }} }}")
        return "\n    ".join(out)

    def pick(self, req: str, newest: bool = False) -> str:
        """Statements setting `$i` to a slot of `req` holding a start and `$t` to that start (`$i` is `count` when
        none does): this CPU's own slots first, then all from the last one down, so that two CPUs completing
        requests of one sector at once take different starts; with `newest`, the latest start."""
        out = [f"$i = (uint64){self.count}; $t = nsecs;"]
        take = f"($i == {self.count} || $x > $t)" if newest else f"$i == {self.count}"
        order = [] if newest else [self.mine(n) for n in range(self.per_cpu or self.count)]
        if newest or self.per_cpu:
            order += [f"$j = (uint64){self.count - 1 - n};" for n in range(self.count)]
        for slot in order:
            out.append(f"{slot} $x = @lm_start[{req}, $j]; if ($x && {take}) {{ $i = $j; $t = $x; }}")
        return "\n    ".join(out)


def block_script(spec: TraceSpec) -> str:
    """bpftrace program for block I/O latency (issue, or insert with --queued, to complete).

    bpftrace's tracepoints (this version has no raw tracepoints) show a request's disk and sector, not the
    request: requests are keyed by (disk, sector + 1, slot) (see `Slots`). Each request in flight for one sector
    keeps its own start; a completion takes one of them, so requests for one sector are paired in no set order
    (counts and total time exact, each one's latency not). bpftrace updates maps without atomics: on up to
    OWN_SLOTS_CPUS CPUs each CPU stores starts in slots of its own, and two CPUs completing at once scan in
    opposite orders; on more CPUs, two requests for one sector issued at the same instant can still collide.
    The bcc backend pairs by the request itself.
    """
    req = "$dev, $k"  # args->dev copied once: bpftrace 0.17 emits ctx reads the verifier refuses after map calls
    slots = Slots.here()
    only = f"args->dev == {spec.disk_dev}" if spec.disk_dev is not None else ""
    starts = []
    if spec.queued:
        # Inserted requests are counted from insert; a request issued without an insert, from issue.
        starts.append(f"tracepoint:block:block_rq_insert {_pred(only)} {{\n    {BLOCK_KEY}\n    {slots.push(req)}\n"
                      f"    @lm_queued[{req}] = @lm_queued[{req}] + 1;\n}}")
        starts.append(f"tracepoint:block:block_rq_issue {_pred(only)} {{\n    {BLOCK_KEY}\n"
                      f"    if (@lm_queued[{req}] > 1) {{ @lm_queued[{req}] = @lm_queued[{req}] - 1; }}\n"
                      f"    else if (@lm_queued[{req}] == 1) {{ delete(@lm_queued[{req}]); }}\n"
                      f"    else {{ {slots.push(req)} }}\n}}")
        # A request merged into another never completes itself: forget the latest insert for its sector.
        starts.append(f"tracepoint:block:block_rq_merge {_pred(only)} {{\n    {BLOCK_KEY}\n"
                      f"    {slots.pick(req, newest=True)}\n"
                      f"    if ($i < {slots.count}) {{ delete(@lm_start[{req}, $i]); }}\n"
                      f"    if (@lm_queued[{req}] > 1) {{ @lm_queued[{req}] = @lm_queued[{req}] - 1; }}\n"
                      f"    else {{ delete(@lm_queued[{req}]); }}\n}}")
    else:
        starts.append(f"tracepoint:block:block_rq_issue {_pred(only)} {{\n    {BLOCK_KEY}\n    {slots.push(req)}\n}}")
    group = "(uint64)$dev" if spec.per_disk else "0"
    op = "$rwbs" if spec.split_rw else "0"
    rwbs = " $rwbs = args->rwbs;" if spec.split_rw else ""
    body = (f"tracepoint:block:block_rq_complete {_pred(only)} {{\n"
            f"    $dev = args->dev; $k = args->sector + 1;{rwbs}\n    {slots.pick(req)}\n"
            f"    if ($i < {slots.count}) {{\n"
            f"    delete(@lm_start[{req}, $i]);\n"
            f"    $d = nsecs - $t;\n"
            f"    $g = {group}; $op = {op};\n{SLOT}    }}\n}}\n")
    return "\n".join(starts) + "\n" + body + FOOTER.format(ready=READY, tick=TICK, ms=interval_ms(spec))


def syscall_script(spec: TraceSpec) -> str:
    """bpftrace program for syscall latency (enter to exit of the same thread and syscall)."""
    if spec.pid is not None:
        only = f"pid == {int(spec.pid)}"
    elif spec.comm:
        only = f'comm == "{spec.comm}"'
    else:
        only = ""
    parts = []
    for name, i in spec.probes():
        parts.append(f"tracepoint:syscalls:sys_enter_{name} {_pred(only)} "
                     f"{{ @lm_start[tid] = nsecs; @lm_call[tid] = {i + 1}; }}")
        parts.append(f"tracepoint:syscalls:sys_exit_{name} /@lm_call[tid] == {i + 1}/ {{\n"
                     "    $d = nsecs - @lm_start[tid]; delete(@lm_start[tid]); delete(@lm_call[tid]);\n"
                     f"    $g = {i}; $op = 0;\n{SLOT}}}")
    return "\n".join(parts) + "\n" + FOOTER.format(ready=READY, tick=TICK, ms=interval_ms(spec))


def script(spec: TraceSpec) -> str:
    """The bpftrace program for a spec."""
    return block_script(spec) if spec.mode == "block" else syscall_script(spec)


def _pred(expr: str) -> str:
    return f"/{expr}/" if expr else ""


def interval_ms(spec: TraceSpec) -> int:
    """The whole milliseconds of bpftrace's interval probe for `spec.interval`."""
    return max(1, round(spec.interval * 1000))


def rwbs_op(rwbs: str) -> int:
    """--split rw class of a request's rwbs flags: 1 read, 2 write, 3 other (flush, discard, ...)."""
    for ch in rwbs:
        if ch == "R":
            return 1
        if ch == "W":
            return 2
    return 3


def _op(text: str, split_rw: bool) -> int:
    return rwbs_op(text) if split_rw else int(text)


def reading_from(counts: object, sums: object, at: float, split_rw: bool = False) -> Reading:
    """A Reading from the printed `@lm_cnt` and `@lm_sum` maps (as parsed from JSON), both keyed `group,op,slot`."""
    reading = Reading(at)
    for key, value in keyed(counts).items():
        group, op, slot = _split_slot_key(key)
        reading.add((int(group), _op(op, split_rw)), int(slot), count=int(value))
    for key, value in keyed(sums).items():
        group, op, slot = _split_slot_key(key)
        reading.add((int(group), _op(op, split_rw)), int(slot), sum_ns=int(value))
    return reading


def _split_slot_key(key: str) -> list[str]:
    group, rest = key.split(",", 1)
    op, slot = rest.rsplit(",", 1)
    return [group, op, slot]


def tick_time(marker: str) -> float:
    """When a `lm_tick NSECS` marker's interval probe fired, as a Unix time (NSECS: the kernel's monotonic clock,
    which is Python's `time.monotonic`); a marker without it, the time now.

    Not the time the line is read here: bpftrace prints the maps whatever this process is doing, and a reading read a
    second late (a consumer busy drawing, a loaded machine) would be dated a second late, with the readings printed
    meanwhile read back to back: columns of no length holding the events of whole intervals.
    """
    fired = marker.split(" ")[1:]
    if len(fired) == 1 and fired[0].isdigit():
        return time.time() - time.monotonic() + int(fired[0]) * 1e-9
    return time.time()


def parse_stream(lines: Iterator[str], split_rw: bool = False) -> Generator[tuple[str, Reading | None], None, None]:
    """(`ready`, None) once attached, then (`tick`, Reading) per interval, from bpftrace JSON lines."""
    counts: object = {}
    sums: object = {}
    for line in lines:
        event = parse_line(line)
        if event is None:
            continue
        if event.kind == "printf" and isinstance(event.data, str):
            marker = event.data.strip()
            if marker == READY:
                yield "ready", None
            elif marker.split(" ")[0] == TICK:
                yield "tick", reading_from(counts, sums, tick_time(marker), split_rw)
                counts, sums = {}, {}
        elif event.kind == "map" and event.name == "@lm_cnt":
            counts = event.data
        elif event.kind == "map" and event.name == "@lm_sum":
            sums = event.data


class BpftraceRun:
    """A running `bpftrace -f json` process; iterate `events()`, then `close()`."""

    def __init__(self, spec: TraceSpec) -> None:
        exe = shutil.which("bpftrace")
        if exe is None:
            raise BpfError("bpftrace is not installed: `apt-get install bpftrace`")
        self.spec = spec
        self.ticks = 0
        self.stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in close())
        env = dict(os.environ, BPFTRACE_MAP_KEYS_MAX="65536")
        self.proc = subprocess.Popen([exe, "-f", "json", "-e", script(spec)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1, env=env)

    def events(self) -> Generator[tuple[str, Reading | None], None, None]:
        """Parsed ready/tick events until bpftrace ends; SourceError (how it ended, its stderr) when it does."""
        assert self.proc.stdout is not None
        for event in parse_stream(iter(self.proc.stdout.readline, ""), self.spec.split_rw):
            self.ticks += event[0] == "tick"
            yield event
        code = self.proc.wait()
        raise SourceError(f"bpftrace (pid {self.proc.pid}) {process_end(code)} after {self.ticks} readings: "
                          f"{self.error_text() or 'no message on its stderr'}")

    def error_text(self) -> str:
        """bpftrace's stderr without its harmless noise."""
        self.stderr.seek(0)
        lines = [ln.strip() for ln in self.stderr.read().splitlines()]
        return " | ".join(ln for ln in lines if ln and not any(n in ln for n in NOISE))[-2000:]

    def close(self) -> None:
        """Stop bpftrace (SIGINT, then SIGKILL after 5 s) and release its pipes."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        with contextlib.suppress(OSError):
            if self.proc.stdout is not None:
                self.proc.stdout.close()
        self.stderr.close()
