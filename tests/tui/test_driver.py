"""The TUI's driver output guard: a terminal whose output fails is said once, and Textual's output thread goes on."""

from __future__ import annotations

import asyncio
import errno
import io
import threading

from textual.driver import Driver
from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread

from latencymap.tui.driver import GuardedOutput, guarded_driver


class GoneTerminal(io.StringIO):
    """A terminal that took `room` writes, then is gone: every write and flush fails with EIO."""

    def __init__(self, room: int = 0) -> None:
        super().__init__()
        self.room, self.tries = room, 0

    def write(self, text: str) -> int:
        self.tries += 1
        if self.tries > self.room:
            raise OSError(errno.EIO, "Input/output error")
        return super().write(text)

    def flush(self) -> None:
        if self.tries > self.room:
            raise OSError(errno.EIO, "Input/output error")


def test_the_first_failure_says_the_terminal_is_gone_once_and_what_follows_is_dropped() -> None:
    terminal, gone = GoneTerminal(room=1), []
    out = GuardedOutput(terminal, lambda: gone.append(True))
    assert out.write("shown") == 5
    assert out.write("lost") == 4
    out.flush()
    out.write("lost too")
    assert (terminal.getvalue(), gone, terminal.tries) == ("shown", [True], 2)
    assert not out.isatty()  # the rest is the terminal's own


def test_textuals_output_thread_takes_every_write_once_the_terminal_is_gone() -> None:
    """Unguarded, the thread dies of the first EIO, and the write after MAX_QUEUED_WRITES more blocks for ever."""
    gone: list[bool] = []
    writer = WriterThread(GuardedOutput(GoneTerminal(), lambda: gone.append(True)))  # type: ignore[arg-type]
    writer.start()

    def write_and_stop() -> None:
        for n in range(MAX_QUEUED_WRITES * 4):
            writer.write(f"frame {n}")
        writer.stop()

    app = threading.Thread(target=write_and_stop, daemon=True)
    app.start()
    app.join(10)
    assert not app.is_alive() and not writer.is_alive()
    assert gone == [True]


class Plain(Driver):
    """A driver that writes itself: nothing to guard."""

    def start_application_mode(self) -> None: ...

    def disable_input(self) -> None: ...

    def stop_application_mode(self) -> None: ...

    def write(self, data: str) -> None: ...


class Threaded(Plain):
    """A driver that writes through `_file`, as Textual's Linux and Windows drivers do."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._file = io.StringIO()


def test_a_driver_writing_through_a_file_gets_it_guarded_and_another_is_left_as_it_is() -> None:
    gone: list[bool] = []

    async def made(driver: type[Driver]) -> Driver:  # a driver is made in the app's event loop
        return guarded_driver(driver, lambda: gone.append(True))(None, debug=False, mouse=False, size=None)

    threaded, plain = (asyncio.run(made(driver)) for driver in (Threaded, Plain))
    assert isinstance(getattr(threaded, "_file", None), GuardedOutput)
    assert not hasattr(plain, "_file")
    assert gone == []
