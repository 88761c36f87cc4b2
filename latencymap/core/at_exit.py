"""What a command finishes however it ends (done, `q`, Ctrl-C, SIGTERM, SIGHUP, `--count` or `--duration`, an error):
the CLI's `guarded` runs these as the command ends, from the main thread, even while the flow's thread is blocked in
its source or was stopped before its input's end: recordings are finished, and what a source says only at its
input's end (a count of points skipped) is said."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable

from latencymap.core.errors import note_said
from latencymap.core.model import Notice
from latencymap.core.sanitize import clean_message

_AT_EXIT: list[Callable[[], None]] = []


def close_at_exit(close: Callable[[], None]) -> None:
    """Have `close` called as the command ends, however it ends."""
    _AT_EXIT.append(close)


def forget_at_exit(close: Callable[[], None]) -> None:
    """`close` no longer called as the command ends (it was done already)."""
    with contextlib.suppress(ValueError):
        _AT_EXIT.remove(close)


def say_at_exit(notices: Callable[[], Iterable[Notice]]) -> Callable[[], None]:
    """Have the notices `notices()` gives then said on stderr as the command ends, as the commands say a notice: what
    a source says at its input's end, when the run ends before it. The function registered (`forget_at_exit` it when
    the source reached its end and said them itself)."""

    def say() -> None:
        for notice in notices():
            with contextlib.suppress(OSError):  # stderr is gone (the terminal hung up): the other hooks still run
                say_notice(notice)

    close_at_exit(say)
    return say


def say_notice(notice: Notice) -> None:
    """Say a notice on stderr as the commands say one as it comes (`latencymap: ...`, each line through
    `clean_text`), remembered as said (a failure it says is not said again)."""
    note_said(notice.message)
    print(f"latencymap: {clean_message(notice.message)}", file=sys.stderr, flush=True)


def run_at_exit() -> None:
    """Call what was registered, the last first, each once."""
    while _AT_EXIT:
        _AT_EXIT.pop()()
