"""Whether a terminal hung up: its other side closed (the window, ssh, the terminal emulator), asked without reading."""

from __future__ import annotations

import os
import select
import stat


def hung_up(fd: int) -> bool:
    """Whether the terminal on `fd` hung up (its other side closed), asked without reading a key; never on a system
    without `poll` (Windows)."""
    if not hasattr(select, "poll"):
        return False
    watch = select.poll()
    watch.register(fd, 0)  # no event asked: only a hang-up or an error is said
    return any(events & (select.POLLHUP | select.POLLERR) for _, events in watch.poll(0))


def terminal_gone(fd: int) -> bool:
    """Whether `fd` is a terminal that hung up: a write to it failing is the terminal's end, not an output error."""
    try:  # not `isatty`: a terminal that hung up no longer answers it
        return stat.S_ISCHR(os.fstat(fd).st_mode) and hung_up(fd)
    except (OSError, ValueError):
        return False
