"""One stack sample and the frame strings it holds: `function (file:line)`, root first."""

from __future__ import annotations

import os
from dataclasses import dataclass

from latencymap.profiling import DEFAULT_RATE


@dataclass(frozen=True, slots=True)
class Sample:
    """The stack of one thread at one instant (epoch seconds); `weight` is the time it stands for (1/rate)."""

    time: float
    pid: int
    tid: int
    stack: tuple[str, ...]
    weight: float = 1 / DEFAULT_RATE


#: latencymap's own thread in a profiled program (the flusher of latencymap.instrument): (function, file ending).
OWN_THREAD = ("_flush_on_time", "latencymap/instrument_flush.py")


def own_thread(stack: tuple[str, ...]) -> bool:
    """Whether the stack is latencymap's own flusher thread's, which a profile of the program leaves out."""
    for frame in stack:
        name, path, _ = split_frame(frame)
        if name == OWN_THREAD[0] and path.replace("\\", "/").endswith(OWN_THREAD[1]):
            return True
    return False


def frame_name(function: str, filename: str, line: int | None) -> str:
    """`function (file:line)`, or `function (file)` without a line number."""
    return f"{function} ({filename}:{line})" if line else f"{function} ({filename})"


def split_frame(frame: str) -> tuple[str, str, int | None]:
    """(function, file, line) of a frame string; a string not in frame form is all function."""
    name, sep, rest = frame.partition(" (")
    if not sep or not rest.endswith(")"):
        return frame, "", None
    loc = rest[:-1]
    path, colon, line = loc.rpartition(":")
    if colon and line.isdigit():
        return name, path, int(line)
    return name, loc, None


def function_of(frame: str) -> str:
    """The frame without its line number: the key that per-function counts use."""
    name, path, _ = split_frame(frame)
    return f"{name} ({path})" if path else name


def short_frame(frame: str) -> str:
    """A frame for narrow displays: the file's base name only."""
    name, path, line = split_frame(frame)
    if not path:
        return name
    return frame_name(name, os.path.basename(path), line)
