"""A terminal's hang-up, asked without reading a key; a file or a pipe is never a terminal gone."""

from __future__ import annotations

import os
from pathlib import Path

from latencymap.core.tty import hung_up, terminal_gone


def test_a_terminal_whose_other_side_closed_is_hung_up_and_an_open_one_is_not() -> None:
    """Read without taking a key: the TUI asks it while it writes nothing (a finished input, a help screen open)."""
    master, slave = os.openpty()
    try:
        assert not hung_up(slave) and not terminal_gone(slave)
        os.write(master, b"q")  # a key waiting is no hang-up, and stays there to be read
        assert not hung_up(slave)
        os.close(master)
        assert hung_up(slave) and terminal_gone(slave)
    finally:
        os.close(slave)


def test_a_file_or_a_pipe_whose_reader_left_is_no_terminal_gone(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # a pipe whose reader left says POLLERR: a broken pipe, not a hang-up
    try:
        assert not terminal_gone(write)
    finally:
        os.close(write)
    with open(tmp_path / "out", "w") as fh:
        assert not terminal_gone(fh.fileno())
    assert not terminal_gone(9999)  # not open
