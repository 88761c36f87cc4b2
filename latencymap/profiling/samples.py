"""One stack sample and the frame strings it holds: `function (file:line)`, root first."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from latencymap.core.sanitize import redact_command
from latencymap.profiling import DEFAULT_RATE


@dataclass(frozen=True, slots=True)
class Sample:
    """The stack of one thread at one instant (epoch seconds); `weight` is the time it stands for (1/rate)."""

    time: float
    pid: int
    tid: int
    stack: tuple[str, ...]
    weight: float = 1 / DEFAULT_RATE


#: py-spy's `--threads` frame (no file): `thread (<native id>)`, or `thread (<id>): <name>`; hex ids are pthread ids.
_THREAD_FRAME = re.compile(r"thread \((\d+|0[xX][0-9a-fA-F]+)\)(?:: .*)? \(\)", re.S)
#: py-spy's `--subprocesses` frames (no file), root first: `process <pid>:"<command line>"`.
_PROCESS_FRAME = re.compile(r'process \d+:"')
_PROCESS_COMMAND = re.compile(r'(process \d+:")(.*)(" \(\))', re.S)


def clean_frame(frame: str) -> str:
    """The frame as samples keep it: a `process` frame's command line without its secrets (`redact_command`)."""
    if not frame.startswith("process "):
        return frame
    match = _PROCESS_COMMAND.fullmatch(frame)
    return frame if match is None else f"{match[1]}{redact_command(match[2])}{match[3]}"


def thread_frame(stack: tuple[str, ...]) -> int | None:
    """Index of the `--threads` frame in a stack (after the `process` frames), None when it has none."""
    for at, frame in enumerate(stack):
        if _THREAD_FRAME.fullmatch(frame):
            return at
        if not _PROCESS_FRAME.match(frame):
            return None
    return None


def native_tid(stack: tuple[str, ...]) -> int | None:
    """The native thread id that py-spy's `--threads` frame names, None without one (or with a pthread id)."""
    at = thread_frame(stack)
    if at is None:
        return None
    match = _THREAD_FRAME.fullmatch(stack[at])
    assert match is not None
    return int(match.group(1)) if match.group(1).isdigit() else None


def without_thread(stack: tuple[str, ...]) -> tuple[str, ...]:
    """The stack less py-spy's `--threads` frame: samples keep the frames of the program alone."""
    at = thread_frame(stack)
    return stack if at is None else stack[:at] + stack[at + 1:]


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
