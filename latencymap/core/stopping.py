"""A run that a signal (SIGTERM, SIGHUP, SIGINT) asks to stop, and sources that can end it as their input's end would.

The CLI's signal handler asks `noted(signum)` first, and raises only when it is False. A signal is only noted (a plain
attribute write: the handler takes no lock and raises nothing) when it is the first to ask the run to stop, and either
the command's end has begun (its end-of-command hooks run: they are not cut short), or the command reads its flow to
the end (`reads_to_end`) and a source running ends itself when asked (`ends_itself`): that source polls `asked()`,
takes in what it had acknowledged, and ends; the command then ends as that signal ends it; or such a command has
read its flow to the end (`read_through`): what it writes of it (a report) is written whole. A second signal is raised
at once, in the end-of-command hooks too (a hook that waits on what cannot come is cut short); a signal that ended
the command counts as the first. The TUI asks `noted` from its own handlers (it raises nothing in its event loop):
a first signal only noted keeps it up until the source has ended; and its `q` asks such a source to end without a
signal (`stop_sources`) when a recording is to keep what the source acknowledged."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

#: How long a source that ends itself takes in what it had acknowledged, at most, before it ends anyway.
DRAIN_S = 5.0


class _State:
    asked: int | None = None  # the first signal that asked the run to stop without being raised
    ending = False  # the command's end has begun: a signal is only noted
    whole = False  # the command reads its flow to the end, then ends
    read = False  # the command has read its flow to the end: it writes what it read
    stop = False  # the command asked the sources that end themselves to end (`stop_sources`)


_STATE = _State()
#: A token per source running that ends itself when asked (a list: appended and removed without a lock).
_SOURCES: list[object] = []


def begin() -> None:
    """A command starts: no signal asked it to stop yet (a process may run several commands: tests do)."""
    _STATE.asked, _STATE.ending, _STATE.whole, _STATE.read, _STATE.stop = None, False, False, False, False


def reads_to_end() -> None:
    """The command reads its flow to the end and then ends (a report, the plain view), or does once a signal asks
    it to stop (the TUI): a source that ends itself when asked ends the command."""
    _STATE.whole = True


def read_through() -> None:
    """The command (one that reads to the end) has read its flow to the end: what it writes of it is written whole
    unless a second signal comes."""
    _STATE.read = True


def ending(signum: int | None = None) -> None:
    """The command's end has begun: from here the first signal is only noted. `signum`: the signal that ended the
    command (raised, not noted), which counts as the first."""
    _STATE.ending = True
    if _STATE.asked is None:
        _STATE.asked = signum


@contextmanager
def ends_itself() -> Iterator[None]:
    """While the block runs, a source runs that polls `asked()` and ends itself when a stop is asked."""
    token = object()
    _SOURCES.append(token)
    try:
        yield
    finally:
        _SOURCES.remove(token)


def noted(signum: int) -> bool:
    """Whether signal `signum` is only noted (see the module's docstring); the signal handler's question."""
    if _STATE.asked is not None or not (_STATE.ending or (_STATE.whole and (bool(_SOURCES) or _STATE.read))):
        return False
    _STATE.asked = signum
    return True


def asked() -> int | None:
    """The signal that asked the run to stop and was only noted; None when none did."""
    return _STATE.asked


def stop_sources() -> None:
    """The command asks the sources that end themselves to end, as a first signal only noted does (the TUI's `q`
    with a recording: what they acknowledged is recorded)."""
    _STATE.stop = True


def to_stop() -> bool:
    """Whether a source that ends itself is to end: a signal only noted, or the command (`stop_sources`), asked."""
    return _STATE.asked is not None or _STATE.stop


def source_ends_itself() -> bool:
    """Whether a source that ends itself when asked runs now."""
    return bool(_SOURCES)
