"""What the bench scripts share: the machine their figures come from."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path


def arguments(doc: str | None, allowed: tuple[str, ...] = (), *, many: bool = False) -> list[str]:
    """The script's arguments, each one of `allowed` (at most one unless `many`): `-h`/`--help` prints the script's
    docstring `doc` and exits 0, anything else exits 2 naming what it takes, before any benchmark runs."""
    args = sys.argv[1:]
    if any(arg in ("-h", "--help") for arg in args):
        print(doc or "")
        raise SystemExit(0)
    wrong = [arg for arg in args if arg not in allowed]
    if wrong or (len(args) > 1 and not many):
        takes = f"{'any of' if many else 'one of'} {', '.join(allowed)}" if allowed else "no arguments"
        print(f"{Path(sys.argv[0]).name}: unexpected {' '.join(wrong or args)!r}: it takes {takes} (--help)",
              file=sys.stderr)
        raise SystemExit(2)
    return args


def machine() -> str:
    """CPU model, cores, RAM and Python version, for the figures' context."""
    model = "unknown CPU"
    mem_gib = 0.0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = int(line.split()[1]) / 1024**2
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{model}, {os.cpu_count()} cores, {mem_gib:.0f} GiB RAM, Python {platform.python_version()} "
            f"({sys.executable}); load average {load:.1f} at start")



def compile_package(checkout: Path | None = None) -> str:
    """Write latencymap's bytecode (`__pycache__`), as `pip install` does, so fresh processes do not compile
    (of the package imported, or of another `checkout` of the repository).

    An editable install only writes bytecode when a module is first imported, and not at all under
    PYTHONDONTWRITEBYTECODE (set on some machines here): every run then compiles ~60 modules from source
    (~70 ms), which no installed user pays and which the baselines, installed by pip, do not pay either.
    """
    import compileall

    if checkout is None:
        import latencymap

        package, what = Path(latencymap.__file__).parent, "latencymap"
    else:
        package, what = checkout / "latencymap", str(checkout)
    # latencymap/sources is a link into ../sources, which compileall does not follow
    ok = all([compileall.compile_dir(str(root), quiet=1) for root in (package, (package / "sources").resolve())])
    return f"bytecode: written for {what} and its sources (as pip install does){'' if ok else ', with errors'}"
