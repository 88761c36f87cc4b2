"""`source | latencymap`: keep reading data from the pipe while the TUI takes the terminal on fd 0."""

from __future__ import annotations

import os
from collections.abc import Callable

from latencymap.flow import inputs

TTY = "/dev/tty"


def take_terminal(tty_path: str = TTY) -> Callable[[], None] | None:
    """If fd 0 is not a terminal, hand a dup of it to the readers and open the terminal onto fd 0.

    Returns a function that undoes the swap, or None when there is no terminal to take.
    Call it before the flow's first `next()`: inputs open stdin lazily.
    """
    try:
        if os.isatty(0):
            return lambda: None
    except OSError:
        pass
    try:
        tty = os.open(tty_path, os.O_RDWR | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    saved = os.dup(0)
    data = os.fdopen(os.dup(0), "rb")
    os.dup2(tty, 0)
    os.close(tty)
    inputs.set_stdin_data(data)

    def restore() -> None:
        inputs.set_stdin_data(None)
        os.dup2(saved, 0)
        os.close(saved)

    return restore
