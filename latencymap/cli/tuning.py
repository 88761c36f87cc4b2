"""Process-wide tuning of the collector and the allocator, for commands that start, read and end."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: glibc's mallopt parameters: blocks up to this size come from the heap, not from a fresh mmap each time ...
_M_MMAP_THRESHOLD, _MMAP_THRESHOLD = -3, 32 << 20
#: ... and freed memory is given back to the kernel only when this much is free at the top of the heap.
_M_TRIM_THRESHOLD, _TRIM_THRESHOLD = -1, 256 << 20


@contextmanager
def no_collection() -> Iterator[None]:
    """Within: no garbage collection, and what was made there is frozen out of later collections.

    Imports make long-lived objects (modules, classes, functions), tens of thousands of them: the collector's
    passes over them (about 50 in a `report`'s imports, 6 ms of its start) find nothing to free. `launch.main`
    unfreezes them before a normal exit, so the interpreter's teardown runs as it would have."""
    if not gc.isenabled():  # nested, or the user's choice: leave it as it is
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


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
