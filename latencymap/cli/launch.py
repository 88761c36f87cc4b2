"""The `latencymap` console script: process-wide settings, then the command line."""

from __future__ import annotations

import atexit
import os
import sys
import threading

#: glibc's mallopt parameters: blocks up to this size come from the heap, not from a fresh mmap each time ...
_M_MMAP_THRESHOLD, _MMAP_THRESHOLD = -3, 32 << 20
#: ... and freed memory is given back to the kernel only when this much is free at the top of the heap.
_M_TRIM_THRESHOLD, _TRIM_THRESHOLD = -1, 256 << 20

#: latencymap does no linear algebra, yet NumPy's OpenBLAS starts a spinning thread per core when it loads:
#: about 0.1 s of CPU time on every start of a 2-core machine, more with more cores.
_BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def main() -> None:
    """Run the CLI with OpenBLAS on one thread unless the user chose otherwise; children see the user's setting."""
    ours = _BLAS_THREADS not in os.environ
    if ours:
        os.environ[_BLAS_THREADS] = "1"
    try:
        from latencymap.cli.main import main as cli_main
    finally:
        if ours:
            os.environ.pop(_BLAS_THREADS, None)  # read once, when NumPy loaded OpenBLAS
    try:
        cli_main()
    except SystemExit as done:
        if isinstance(done.code, int | None) and nothing_left():
            os._exit(done.code or 0)
        raise


def nothing_left() -> bool:
    """Whether the process may end without the interpreter's teardown, which frees every module and array one by one
    (10-20 ms after a report): only the main thread runs, no exit handler is registered, and stdout and stderr
    flush. Files are closed where they are written, never left to the teardown."""
    if threading.active_count() != 1 or getattr(atexit, "_ncallbacks", lambda: 1)() != 0:
        return False
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken pipe: the normal exit says so as it always did
        return False
    return True


def keep_freed_memory() -> bool:
    """Let a command that reads a whole input and ends (`report`, `diff`) reuse the memory it frees.

    glibc serves blocks over 128 KB by mmap and gives freed memory back above 128 KB, so each chunk's buffers are
    faulted in afresh: about 5,000 page faults and 10 ms of a 170 ms report of 5,000 records. Keeping it costs
    nothing in a process that ends; the TUI, which runs for hours, keeps glibc's defaults. True when set (glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # NumPy has loaded it already

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
