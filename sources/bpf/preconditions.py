"""Checks made before any BPF program loads, each failing with its exact remedy."""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
from collections.abc import Callable, Mapping

from .spec import tracefs_root

CAP_SYS_ADMIN = 21
CAP_PERFMON = 38
CAP_BPF = 39
#: Where `.ci/install-system.sh` unpacks kernel headers (override with LATENCYMAP_KHEADERS).
KHEADERS_DEFAULT = "/opt/latencymap-kheaders"
#: Headers built into the kernel (CONFIG_IKHEADERS), which bcc can unpack itself.
KHEADERS_BUILTIN = "/sys/kernel/kheaders.tar.xz"
INSTALL_HINT = "on Debian/Ubuntu as root: .ci/install-system.sh from the latencymap repository"


def effective_caps(status_path: str = "/proc/self/status") -> int | None:
    """The CapEff bit mask of this process, or None when unreadable."""
    try:
        with open(status_path) as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return None


def privilege_problem(caps: int | None = None, euid: int | None = None) -> str | None:
    """Why this process may not load BPF programs (naming the capabilities it lacks), or None."""
    caps = effective_caps() if caps is None else caps
    euid = os.geteuid() if euid is None else euid
    who = "root" if euid == 0 else "not root"
    if caps is not None:
        bits = {bit for bit in (CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF) if caps >> bit & 1}
        if CAP_SYS_ADMIN in bits or {CAP_BPF, CAP_PERFMON} <= bits:
            return None
        pair = {CAP_BPF: "CAP_BPF", CAP_PERFMON: "CAP_PERFMON"}
        held = [name for bit, name in pair.items() if bit in bits]
        lacking = [name for bit, name in pair.items() if bit not in bits]
        who += f"; has {held[0]} but not {lacking[0]}, nor CAP_SYS_ADMIN" if held else \
            "; has none of CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON"
    elif euid == 0:
        return None
    return (f"loading BPF programs needs root or CAP_BPF+CAP_PERFMON ({who}): run with sudo, or "
            "`sudo setcap cap_bpf,cap_perfmon+ep` on the Python that runs latencymap")


def tracefs_problem(root: str | None = None) -> str | None:
    """Why tracepoints cannot be attached (tracefs not mounted), or None."""
    if (root or tracefs_root()) is not None:
        return None
    return ("tracefs is not mounted (tracepoints need it): as root run "
            "`mount -t tracefs tracefs /sys/kernel/tracing`")


def kernel_headers_dir(env: Mapping[str, str] | None = None) -> str | None:
    """A kernel headers tree bcc can compile against: $BCC_KERNEL_SOURCE, the latencymap one, or /lib/modules."""
    env = os.environ if env is None else env
    candidates = [env.get("BCC_KERNEL_SOURCE", "")]
    candidates.append(os.path.join(env.get("LATENCYMAP_KHEADERS", KHEADERS_DEFAULT), "current"))
    candidates.append(f"/lib/modules/{platform.release()}/build")
    for path in candidates:
        if path and headers_complete(path):
            return path
    return None


def headers_complete(path: str) -> bool:
    """True when `path` holds both the generic headers and the generated config headers."""
    return (os.path.isfile(os.path.join(path, "include", "linux", "kconfig.h"))
            and os.path.isdir(os.path.join(path, "include", "generated")))


def bcc_problem(find_spec: Callable[[str], object] = importlib.util.find_spec,
                env: Mapping[str, str] | None = None) -> str | None:
    """Why the bcc backend cannot work here (module missing, wrong module, headers missing), or None."""
    spec = find_spec("bcc")
    if spec is None:
        return ("the bcc Python module is missing: install python3-bpfcc (apt) and make it importable "
                f"from this Python ({INSTALL_HINT} links it into .venv); never `pip install bcc`, "
                "an unrelated package")
    origin = getattr(spec, "origin", None) or ""
    if origin and not os.path.isfile(os.path.join(os.path.dirname(origin), "table.py")):
        return (f"the module `bcc` found at {origin} is not the BPF Compiler Collection (PyPI's `bcc` is "
                "unrelated): `pip uninstall bcc`, then link python3-bpfcc's module in")
    env = os.environ if env is None else env
    given = env.get("BCC_KERNEL_SOURCE")
    if given and not headers_complete(given):
        return (f"BCC_KERNEL_SOURCE={given} is not a complete kernel headers tree (needs "
                "include/linux/kconfig.h and include/generated): point it at one directory holding "
                "the -common and -amd64 header packages unpacked together")
    if kernel_headers_dir(env) is None and not os.path.exists(KHEADERS_BUILTIN):
        return (f"bcc needs kernel headers and none are found for {platform.release()} "
                f"(/lib/modules/<release>/build, {KHEADERS_DEFAULT}/current, $BCC_KERNEL_SOURCE): "
                "install linux-headers for this kernel, or unpack the nearest Debian headers "
                f"({INSTALL_HINT}) and set BCC_KERNEL_SOURCE to that tree")
    return None


def bpftrace_problem(which: Callable[[str], str | None] = shutil.which) -> str | None:
    """Why the bpftrace backend cannot work here, or None."""
    if which("bpftrace") is None:
        return "bpftrace is not installed: `apt-get install bpftrace` (no kernel headers needed)"
    return None


def system_problem() -> str | None:
    """What stops every backend (privileges, tracefs), or None."""
    return privilege_problem() or tracefs_problem()
