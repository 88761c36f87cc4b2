"""Textual's driver with its output to the terminal guarded: a terminal gone without a hang-up signal (SIGHUP blocked,
or a session leader that does not pass it on) ends the app instead of hanging it; `terminal_hung_up` tells it while
the app writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any

from textual.driver import Driver

from latencymap.core.tty import hung_up


class GuardedOutput:
    """The terminal's output, as Textual's output thread writes it: the first write or flush that fails (EIO: the
    terminal is gone) calls `gone`, and what comes after is dropped, so that the thread goes on emptying its queue."""

    def __init__(self, file: IO[str], gone: Callable[[], None]) -> None:
        self._file = file
        self._gone = gone
        self.failed = False

    def write(self, text: str) -> int:
        if not self.failed:
            try:
                return self._file.write(text)
            except (OSError, ValueError):  # ValueError: the file closed
                self._fail()
        return len(text)

    def flush(self) -> None:
        if not self.failed:
            try:
                self._file.flush()
            except (OSError, ValueError):
                self._fail()

    def _fail(self) -> None:
        self.failed = True
        self._gone()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


def guarded_driver(driver: type[Driver], gone: Callable[[], None]) -> type[Driver]:
    """`driver`, its output guarded (`GuardedOutput`, calling `gone` once it fails).

    Textual's drivers (Linux, Windows) write from a thread into their private `_file`, through a bounded queue: a
    write that fails there ends the thread, the queue fills, and the app's next write blocks for ever, deaf to
    signals (their handlers run in the main thread, between its bytecodes). A driver without a `_file` (another
    Textual) is left as it is."""

    class GuardedDriver(driver):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            file = getattr(self, "_file", None)
            if file is not None and callable(getattr(file, "write", None)):
                self._file = GuardedOutput(file, gone)

    return GuardedDriver


def terminal_hung_up(driver: Driver | None) -> bool:
    """Whether the terminal a driver reads keys from hung up. An app that writes nothing new (a finished input, a
    help screen open) has no write to fail when its terminal goes, and Textual's input thread takes the end of the
    terminal's input for a pipe's and reads on, for ever. A driver that reads no terminal (headless) is never."""
    fd = getattr(driver, "fileno", None)
    return isinstance(fd, int) and getattr(driver, "input_tty", False) is True and hung_up(fd)
