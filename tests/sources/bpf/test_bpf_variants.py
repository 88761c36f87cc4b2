"""Real BPF: `preadv`/`pwritev` count the `2` variants libc and Python issue, bcc compiles `preadv2` programs, and
"no BPF backend works here" exits 1 on every path, as the README says.

Skipped only where BPF cannot exist (not root / no CAP_BPF, kernel without BTF); run `.ci/install-system.sh` first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from process_support import bpf_unavailable, traced

from latencymap.sources.bpf import preconditions
from latencymap.sources.bpf.source import BpfSource

SKIP = bpf_unavailable()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SKIP is not None, reason=SKIP or "")]
BACKENDS = ["bcc", "bpftrace"]
N = 1733

CHILD = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
n = int(sys.argv[2])
buf = bytearray(64)
sys.stdout.write("ready\\n"); sys.stdout.flush()
sys.stdin.readline()
for i in range(n):
    os.preadv(fd, [buf], (i * 64) % 4096)   # glibc's preadv2 (CPython calls it when it exists)
for i in range(n // 2):
    os.pwritev(fd, [buf], (i * 64) % 4096)
sys.stdout.write("done\\n"); sys.stdout.flush()
sys.stdin.readline()
"""


@pytest.fixture(autouse=True)
def _tools_ready() -> None:
    problem = preconditions.tracefs_problem()
    assert problem is None, f"{problem} (or run .ci/install-system.sh)"


def _trace(tmp_path: Path, backend: str, syscalls: str) -> tuple[dict[str, int], int, list[str]]:
    """Per-stream event counts while a child does N os.preadv and N/2 os.pwritev; the child's pid; notices."""
    data = tmp_path / "data"
    data.write_bytes(os.urandom(4096))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(data), str(N)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    counts, notices = _drive(child, lambda: BpfSource(mode="syscall", syscalls=syscalls, pid=child.pid,
                                                      backend=backend, interval=0.25), backend)
    return counts, child.pid, notices


def _drive(child: subprocess.Popen[str], make: Callable[[], BpfSource],
           backend: str) -> tuple[dict[str, int], list[str]]:
    """Trace `child` (which says "ready", waits for "go", does its calls and says "done") with the source `make`
    builds once the child is ready: per-stream event counts until the trace is quiet after "done"; notices."""
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        src = make()

        def work() -> None:
            assert child.stdout is not None and child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "done"

        counts, notices = traced(src, work)
        assert src.chosen == backend
    finally:
        if child.stdin:
            child.stdin.close()
        child.wait(timeout=10)
    return counts, notices


@pytest.mark.parametrize("backend", BACKENDS)
def test_preadv_counts_the_preadv2_that_os_preadv_issues(backend: str, tmp_path: Path) -> None:
    counts, pid, notices = _trace(tmp_path, backend, "pread64,preadv,pwritev")
    assert counts == {f"syscall pread64 pid {pid}": 0, f"syscall preadv+preadv2 pid {pid}": N,
                      f"syscall pwritev+pwritev2 pid {pid}": N // 2}
    assert any("preadv also counts preadv2" in m for m in notices), notices


@pytest.mark.parametrize("backend", BACKENDS)
def test_listed_variants_stay_apart(backend: str, tmp_path: Path) -> None:
    counts, pid, _ = _trace(tmp_path, backend, "preadv,preadv2,pwritev2")
    assert counts == {f"syscall preadv pid {pid}": 0, f"syscall preadv2 pid {pid}": N,
                      f"syscall pwritev2 pid {pid}": N // 2}


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencymap", "bpf", *args, "--plain", "--once", "--count", "1"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, **env})


def _broken_headers(tmp_path: Path) -> str:
    broken = tmp_path / "headers"
    (broken / "include" / "linux").mkdir(parents=True)
    (broken / "include" / "generated").mkdir()
    (broken / "include" / "linux" / "kconfig.h").write_text("#error not a real kernel tree\n")
    return str(broken)


def test_no_backend_exits_1_when_the_forced_backend_fails_to_compile(tmp_path: Path) -> None:
    r = _cli("block", "--backend", "bcc", env={"BCC_KERNEL_SOURCE": _broken_headers(tmp_path)})
    assert r.returncode == 1, r.stderr
    assert "no BPF backend works here" in r.stderr and "bcc could not compile" in r.stderr
    assert "Traceback" not in r.stderr


def test_no_backend_exits_1_when_the_forced_backend_is_missing(tmp_path: Path) -> None:
    r = _cli("block", "--backend", "bpftrace", env={"PATH": str(tmp_path)})
    assert r.returncode == 1, r.stderr
    assert "no BPF backend works here" in r.stderr and "bpftrace is not installed" in r.stderr


def test_no_backend_exits_1_when_none_is_installed(tmp_path: Path) -> None:
    r = _cli("block", env={"PATH": str(tmp_path), "BCC_KERNEL_SOURCE": str(tmp_path / "none")})
    assert r.returncode == 1, r.stderr
    assert "no BPF backend works here" in r.stderr


#: A process named `scé` (bytes 73 63 c3 a9: two of them >= 128) doing `n` pread64 calls.
NAMED_CHILD = """
import os, sys
with open("/proc/self/comm", "wb") as f:
    f.write("scé".encode())
fd = os.open(sys.argv[1], os.O_RDONLY)
n = int(sys.argv[2])
sys.stdout.write("ready\\n"); sys.stdout.flush()
sys.stdin.readline()
for i in range(n):
    os.pread(fd, 64, 0)
sys.stdout.write("done\\n"); sys.stdout.flush()
sys.stdin.readline()
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_comm_with_non_ascii_bytes_matches(backend: str, tmp_path: Path) -> None:
    """bcc compared a signed `char` with the byte value, so a name with a byte >= 128 matched nothing."""
    n = 321
    data = tmp_path / "data"
    data.write_bytes(os.urandom(4096))
    child = subprocess.Popen([sys.executable, "-c", NAMED_CHILD, str(data), str(n)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    counts, _ = _drive(child, lambda: BpfSource(mode="syscall", syscalls="pread64", comm="scé", backend=backend,
                                                interval=0.25), backend)
    counted = sum(counts.values())
    assert counted == n
