"""What to trace, decided once from the CLI options: mode, filters, and how stream keys become labels.

Both backends key their in-kernel maps by `(group, op, slot)`: `group` is the syscall's index in
`syscalls` (syscall mode) or the kernel dev_t of the disk (block mode with `--per-disk`, else 0);
`op` is 0, or with `--split rw` 1 = read, 2 = write, 3 = other (flush, discard, ...).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from latencymap.core.errors import InputError, SourceError
from latencymap.core.model import StreamId

UNIT = "nanosec"
DEFAULT_SYSCALLS = ("read", "pread64", "write", "fsync")
#: The shortest --interval, in seconds (see `TraceSpec.from_options`).
MIN_INTERVAL = 0.01
#: The newer syscalls a runtime issues for an older one's job: CPython's os.preadv/os.pwritev call glibc's
#: preadv2()/pwritev2(), which issue `preadv2`/`pwritev2`. Tracing the older one counts both, unless both are listed.
VARIANTS = {"preadv": ("preadv2",), "pwritev": ("pwritev2",)}
OPS = {0: "", 1: "read", 2: "write", 3: "other"}
TRACEFS_DIRS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
_NAME = re.compile(r"^[A-Za-z0-9_]+$")


class BpfError(InputError):
    """The BPF options do not fit together or name what is not here (exit code 2); the message says why."""


class BpfUnavailable(SourceError):
    """No BPF backend can trace here (exit code 1); the message gives every backend's reason and remedy."""


def tracefs_root() -> str | None:
    """The mounted tracefs directory (one that lists events), or None."""
    for root in TRACEFS_DIRS:
        if os.path.isdir(os.path.join(root, "events")):
            return root
    return None


def dev_of_disk(name: str, sysfs: str = "/sys") -> int:
    """Kernel dev_t (major << 20 | minor, as block tracepoints report it) of a disk name like `vda`."""
    path = os.path.join(sysfs, "class", "block", name, "dev")
    try:
        with open(path) as f:
            major, minor = (int(x) for x in f.read().strip().split(":"))
    except (OSError, ValueError):
        known = ", ".join(sorted(os.listdir(os.path.join(sysfs, "block")))) if os.path.isdir(
            os.path.join(sysfs, "block")) else "none found"
        raise BpfError(f"unknown disk {name!r} (disks here: {known})") from None
    return (major << 20) | minor


def disk_of_dev(dev: int, sysfs: str = "/sys") -> str:
    """A disk's name from its kernel dev_t, or `major:minor` when sysfs does not know it."""
    major, minor = dev >> 20, dev & 0xFFFFF
    try:
        with open(os.path.join(sysfs, "dev", "block", f"{major}:{minor}", "uevent")) as f:
            for line in f:
                if line.startswith("DEVNAME="):
                    return line.strip().split("=", 1)[1]
    except OSError:
        pass
    return f"{major}:{minor}"


@dataclass
class TraceSpec:
    """The validated tracing request shared by the bcc and bpftrace backends."""

    mode: str
    interval: float = 1.0
    disk: str | None = None
    disk_dev: int | None = None
    queued: bool = False
    per_disk: bool = False
    split_rw: bool = False
    syscalls: tuple[str, ...] = DEFAULT_SYSCALLS
    pid: int | None = None
    comm: str | None = None
    variants: dict[int, tuple[str, ...]] = field(default_factory=dict)
    _labels: dict[tuple[int, int], str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> TraceSpec:
        """Validate the CLI options; BpfError with the reason when they do not fit together."""
        mode = options.get("mode") or "block"
        if mode not in ("block", "syscall"):
            raise BpfError(f"unknown mode {mode!r}: use `bpf block` or `bpf syscall`")
        interval = float(options.get("interval") or 1.0)
        if interval <= 0:
            raise BpfError("--interval must be > 0 seconds")
        if interval < MIN_INTERVAL:
            raise BpfError(f"--interval {interval:g}: the shortest column is {MIN_INTERVAL:g} s (bpftrace's interval "
                           "probe counts whole milliseconds, and bcc reads its maps once per column: thousands of "
                           "reads a second cost more CPU than the I/O traced)")
        spec = cls(mode=mode, interval=interval)
        if mode == "block":
            for opt in ("pid", "comm"):
                if options.get(opt) is not None:
                    raise BpfError(f"--{opt} applies to `bpf syscall` only (block I/O completes in interrupts)")
            if options.get("syscalls") is not None:
                raise BpfError("--syscalls applies to `bpf syscall` only")
            spec.disk = options.get("disk")
            spec.disk_dev = dev_of_disk(spec.disk) if spec.disk else None
            spec.queued = bool(options.get("queued"))
            spec.per_disk = bool(options.get("per_disk"))
            split = options.get("split")
            if split not in (None, "", "rw"):
                raise BpfError(f"--split {split!r}: only `rw` is supported")
            spec.split_rw = split == "rw"
            return spec
        for opt in ("disk", "split"):
            if options.get(opt):
                raise BpfError(f"--{opt} applies to `bpf block` only")
        for opt in ("queued", "per_disk"):
            if options.get(opt):
                raise BpfError(f"--{opt.replace('_', '-')} applies to `bpf block` only")
        spec.syscalls = parse_syscalls(options.get("syscalls"))
        spec.variants = variants_of(spec.syscalls)
        spec.pid, spec.comm = options.get("pid"), options.get("comm")
        if spec.pid is not None and spec.comm is not None:
            raise BpfError("use either --pid or --comm, not both")
        if spec.pid is not None:
            check_pid(int(spec.pid))
        if spec.comm is not None and (not spec.comm or len(spec.comm.encode()) > 15):
            raise BpfError("--comm must be 1 to 15 bytes (the kernel's task name length)")
        if spec.comm is not None and any(ch in spec.comm for ch in '"\\\n'):
            raise BpfError("--comm may not contain quotes, backslashes or newlines")
        return spec

    def fixed_streams(self) -> list[tuple[int, int]]:
        """Stream keys known before any event arrives (their baseline is the attach time)."""
        ops = [1, 2, 3] if self.split_rw else [0]
        if self.mode == "syscall":
            return [(i, 0) for i in range(len(self.syscalls))]
        if self.per_disk:
            return []
        return [(0, op) for op in ops]

    def probes(self) -> list[tuple[str, int]]:
        """Syscall mode: (syscall whose enter/exit tracepoints to attach, the group it counts in)."""
        return [(name, i) for i, listed in enumerate(self.syscalls) for name in (listed, *self.variants.get(i, ()))]

    def stream(self, group: int, op: int) -> StreamId:
        """The stream of a map key `(group, op)`."""
        key = (group, op)
        label = self._labels.get(key)
        if label is None:
            label = self._make_label(group, op)
            self._labels[key] = label
        return StreamId(label=label, datasource="bpf", unit=UNIT)

    def _make_label(self, group: int, op: int) -> str:
        if self.mode == "syscall":
            name = "+".join((self.syscalls[group], *self.variants.get(group, ()))) if 0 <= group < len(
                self.syscalls) else f"#{group}"
            who = f" pid {self.pid}" if self.pid is not None else f" comm {self.comm}" if self.comm else ""
            return f"syscall {name}{who}"
        parts = ["block I/O" + (" queued" if self.queued else "")]
        if self.per_disk:
            parts.append(disk_of_dev(group))
        elif self.disk:
            parts.append(self.disk)
        if OPS.get(op):
            parts.append(OPS[op])
        return " ".join(parts)


def check_pid(pid: int, proc: str = "/proc") -> None:
    """BpfError unless `pid` is a live process (not one of its threads: BPF filters on the process id)."""
    if pid <= 0:
        raise BpfError(f"--pid {pid}: a process id is a positive number")
    try:
        with open(os.path.join(proc, str(pid), "status")) as f:
            tgid = next((int(line.split()[1]) for line in f if line.startswith("Tgid:")), pid)
    except FileNotFoundError:
        raise BpfError(f"--pid {pid}: no such process (it must run when tracing starts)") from None
    except (OSError, ValueError):
        return  # exists, unreadable here: let the trace decide
    if tgid != pid:
        raise BpfError(f"--pid {pid} is a thread of process {tgid}: --pid takes the process id (--pid {tgid})")


def variants_of(names: tuple[str, ...]) -> dict[int, tuple[str, ...]]:
    """The VARIANTS each listed syscall also counts: those not listed themselves and with a tracepoint here."""
    root = tracefs_root()
    events = os.path.join(root, "events", "syscalls") if root else None
    out = {}
    for i, name in enumerate(names):
        extra = tuple(v for v in VARIANTS.get(name, ()) if v not in names
                      and (events is None or os.path.isdir(os.path.join(events, f"sys_enter_{v}"))))
        if extra:
            out[i] = extra
    return out


def parse_syscalls(text: str | None) -> tuple[str, ...]:
    """`read,pread64` -> names, checked for shape and against tracefs when it is mounted."""
    if not text:
        return DEFAULT_SYSCALLS
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise BpfError("--syscalls needs at least one name, e.g. --syscalls read,pread64")
    bad = [n for n in names if not _NAME.match(n)]
    if bad:
        raise BpfError(f"--syscalls: not a syscall name: {', '.join(bad)}")
    root = tracefs_root()
    if root is not None:
        events = os.path.join(root, "events", "syscalls")
        missing = [n for n in names if not os.path.isdir(os.path.join(events, f"sys_enter_{n}"))]
        if missing and os.path.isdir(events):
            raise BpfError(f"--syscalls: no tracepoint syscalls:sys_enter_<name> for {', '.join(missing)} "
                           f"(see {events})")
    return names
