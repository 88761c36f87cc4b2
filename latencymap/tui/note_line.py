"""The note line: what reading said, one message at a time, on the bottom line in the footer's place (`notes`)."""

from __future__ import annotations

import re
import time
from collections import deque

from rich.text import Text
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

#: How long a message stays on the note line; only this long while others wait (a flood's few a window, then their
#: count, follow one another about as fast as they come).
LINE_S = 6.0
BUSY_LINE_S = 2.5
#: At most this many messages wait their turn on the line (more are listed by `w` only).
WAITING = 8
#: How the note line heads a message, and its style by whether it skipped records.
HEAD = " reading (w) "
HEAD_STYLES = {True: "bold black on yellow", False: "bold black on green"}
#: The folders of a path that begins a message (`/data/run3/in.txt: line 9: …`): the line names the file only, so
#: that more of what was said fits (`w` lists it whole).
FOLDERS = re.compile(r"^(?:[^\s:/]*/)+(?=[^\s/:]+:)")


class NoteLine(Widget):
    """A message reading said, on the bottom line in the footer's place (`NoteLines` shows and hides it)."""

    DEFAULT_CSS = "NoteLine { dock: bottom; height: 1; display: none; background: $boost; }"

    def __init__(self) -> None:
        super().__init__()
        self.note: tuple[str, bool] = ("", False)

    def show(self, note: tuple[str, bool]) -> None:
        """Say `note` (a message, and whether it is a warning)."""
        if note != self.note:
            self.note = note
            self.refresh()

    def render(self) -> Text:
        message, warning = self.note
        text = Text.assemble((HEAD, HEAD_STYLES[warning]), " ", FOLDERS.sub("", message), no_wrap=True,
                             overflow="ellipsis", end="")
        text.truncate(max(1, self.size.width), overflow="ellipsis")
        return text


class NoteLines:
    """The messages to say on the note line of the screen shown, in turn (`NoteToasts` says them here)."""

    def __init__(self) -> None:
        self.waiting: deque[tuple[str, bool]] = deque(maxlen=WAITING)
        self.current: tuple[str, bool] | None = None
        self._since = 0.0
        self._drawn: tuple[Screen[object] | None, tuple[str, bool] | None] = (None, None)

    def say(self, message: str, warning: bool) -> None:
        """Say `message` once the ones before it have been said."""
        self.waiting.append((message, warning))

    def clear(self) -> None:
        """Say nothing more of what came so far (the messages screen lists it)."""
        self.waiting.clear()
        self.current = None

    def due(self, now: float) -> tuple[str, bool] | None:
        """What the line says at `now` (None: nothing: the footer is shown)."""
        if self.current is not None and now - self._since >= (BUSY_LINE_S if self.waiting else LINE_S):
            self.current = None
        if self.current is None and self.waiting:
            self.current, self._since = self.waiting.popleft(), now
        return self.current

    def show_on(self, screen: Screen[object], now: float | None = None) -> None:
        """Say what is due on `screen`'s note line, in its footer's place (its footer again once nothing is)."""
        note = self.due(time.monotonic() if now is None else now)
        if self._drawn == (screen, note):
            return
        self._drawn = (screen, note)
        for line in screen.query(NoteLine):
            if note is not None:
                line.show(note)
            line.display = note is not None
        for footer in screen.query(Footer):
            footer.display = note is None
