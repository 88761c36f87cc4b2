"""The bpftrace backend: a generated script run as `bpftrace -f json`, cumulative maps printed each tick.

The script keeps `@lm_hist[group, op] = hist(ns)` for counts and `@lm_sum[group, op, slot] = sum(ns)`
for exact time per slot (the slot computed in the script with the same log2 rule as `hist()`),
never clears them, and prints both plus a `lm_tick` marker every interval.
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

from latencymap.plugins import SourceError, process_end
from latencymap.sources.bpftrace_json import hist_counts, keyed, parse_line, split_key

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
    @lm_hist[$g, $op] = hist($d);
    @lm_sum[$g, $op, $s] = sum($d);
"""

FOOTER = """
BEGIN {{ printf("{ready}\\n"); }}
interval:ms:{ms} {{ print(@lm_hist); print(@lm_sum); printf("{tick}\\n"); }}
"""


def block_script(spec: TraceSpec) -> str:
    """bpftrace program for block I/O latency (issue, or insert with --queued, to complete)."""
    req = "args->dev, args->sector"
    only = f"args->dev == {spec.disk_dev}" if spec.disk_dev is not None else ""
    starts = []
    if spec.queued:
        starts.append(f"tracepoint:block:block_rq_insert {_pred(only)} {{ @lm_start[{req}] = nsecs; }}")
        issue_pred = _pred(" && ".join(p for p in (only, f"!@lm_start[{req}]") if p))
    else:
        issue_pred = _pred(only)
    starts.append(f"tracepoint:block:block_rq_issue {issue_pred} {{ @lm_start[{req}] = nsecs; }}")
    group = "(uint64)args->dev" if spec.per_disk else "0"
    op = "args->rwbs" if spec.split_rw else "0"
    body = (f"tracepoint:block:block_rq_complete /@lm_start[{req}]/ {{\n"
            f"    $d = nsecs - @lm_start[{req}]; delete(@lm_start[{req}]);\n"
            f"    $g = {group}; $op = {op};\n{SLOT}}}\n")
    return "\n".join(starts) + "\n" + body + FOOTER.format(ready=READY, tick=TICK, ms=_ms(spec))


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
    return "\n".join(parts) + "\n" + FOOTER.format(ready=READY, tick=TICK, ms=_ms(spec))


def script(spec: TraceSpec) -> str:
    """The bpftrace program for a spec."""
    return block_script(spec) if spec.mode == "block" else syscall_script(spec)


def _pred(expr: str) -> str:
    return f"/{expr}/" if expr else ""


def _ms(spec: TraceSpec) -> int:
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


def reading_from(hist: object, sums: object, at: float, split_rw: bool = False) -> Reading:
    """A Reading from the printed `@lm_hist` and `@lm_sum` data (as parsed from JSON)."""
    reading = Reading(at)
    for key, rows in keyed(hist).items():
        group, op = split_key(key, 2)
        counts, _negative = hist_counts(rows)
        for nonzero in counts.nonzero()[0]:
            reading.add((int(group), _op(op, split_rw)), int(nonzero), count=int(counts[nonzero]))
    for key, value in keyed(sums).items():
        group, op, slot = _split_sum_key(key)
        reading.add((int(group), _op(op, split_rw)), int(slot), sum_ns=int(value))
    return reading


def _split_sum_key(key: str) -> list[str]:
    group, rest = key.split(",", 1)
    op, slot = rest.rsplit(",", 1)
    return [group, op, slot]


def parse_stream(lines: Iterator[str], split_rw: bool = False) -> Generator[tuple[str, Reading | None], None, None]:
    """(`ready`, None) once attached, then (`tick`, Reading) per interval, from bpftrace JSON lines."""
    hist: object = {}
    sums: object = {}
    for line in lines:
        event = parse_line(line)
        if event is None:
            continue
        if event.kind == "printf" and isinstance(event.data, str):
            marker = event.data.strip()
            if marker == READY:
                yield "ready", None
            elif marker == TICK:
                yield "tick", reading_from(hist, sums, time.time(), split_rw)
                hist, sums = {}, {}
        elif event.kind == "hist" and event.name == "@lm_hist":
            hist = event.data
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
