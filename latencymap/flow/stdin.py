"""`source | latencymap`: keep reading data from the pipe while the TUI takes the terminal on fd 0."""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable
from typing import TextIO

from latencymap.flow import inputs

TTY = "/dev/tty"
#: Seconds `wait_for_pipe` waits in silence before it says what it waits for.
QUIET_WAIT_S = 1.0
WAITING = ("latencymap: waiting for the first record from the pipe before taking the terminal (the producer may ask "
           "for a password first); Ctrl-C stops")


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


def wait_for_pipe(fd: int = 0, quiet_s: float = QUIET_WAIT_S, err: TextIO | None = None,
                  most: float | None = None) -> None:
    """Return once fd `fd` (a pipe, not a terminal) has bytes to read or has ended, or after `most` seconds (a
    run's `--duration`: a silent pipe does not hold it); nothing is read from it.

    Until then the terminal stays the user's: what writes into the pipe may ask on it first (SQL*Plus prompts for
    the password). Past `quiet_s` seconds it says once, on stderr, what it waits for.
    """
    try:
        if os.isatty(fd) or select.select([fd], [], [], quiet_s if most is None else min(quiet_s, most))[0]:
            return
    except (OSError, ValueError):  # not a descriptor select can wait on: nothing to wait for
        return
    if most is not None and most <= quiet_s:
        return
    err = err or sys.stderr
    print(WAITING, file=err, flush=True)
    select.select([fd], [], [], *([] if most is None else [most - quiet_s]))
