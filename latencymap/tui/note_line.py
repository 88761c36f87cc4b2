"""The note line: what reading said, one message at a time, on the bottom line in the footer's place (`notes`); and
what the app tells there first (`s`: the files saved, or why not; `e` with no finding; a replay's speed; the history
limit dropping columns), rather than in a toast: toasts covered the maps and their legends for seconds at 80x24."""

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
#: The style of the head of what the app itself tells (`NoteLines.tell`), by whether it is a warning (or an error).
TOLD_STYLES = {False: "bold black on green", True: "bold white on red"}
#: The folders of a path that begins a message (`/data/run3/in.txt: line 9: …`): the line names the file only, so
#: that more of what was said fits (`w` lists it whole).
FOLDERS = re.compile(r"^(?:[^\s:/]*/)+(?=[^\s/:]+:)")


#: What the line shows: its head, the head's style, and the message.
Shown = tuple[str, str, str]


def reading_note(note: tuple[str, bool]) -> Shown:
    """A message reading said (and whether it is a warning), as the line shows it: its file named without folders."""
    message, warning = note
    return HEAD, HEAD_STYLES[warning], FOLDERS.sub("", message)


def told_note(message: str, title: str, warning: bool = False) -> Shown:
    """What the app tells, as the line shows it: headed by its title (what told it), red for a warning."""
    return f" {title or 'latencymap'} ", TOLD_STYLES[warning], message


class NoteLine(Widget):
    """A message on the bottom line in the footer's place (`NoteLines` shows and hides it)."""

    DEFAULT_CSS = "NoteLine { dock: bottom; height: 1; display: none; background: $boost; }"

    def __init__(self) -> None:
        super().__init__()
        self.note: Shown = (HEAD, HEAD_STYLES[False], "")

    def show(self, note: Shown) -> None:
        """Say `note` (its head, the head's style, the message)."""
        if note != self.note:
            self.note = note
            self.refresh()

    def render(self) -> Text:
        head, style, message = self.note
        text = Text.assemble((head, style), " ", message, no_wrap=True, overflow="ellipsis", end="")
        text.truncate(max(1, self.size.width), overflow="ellipsis")
        return text


class NoteLines:
    """The messages to say on the note line of the screen shown, in turn (`NoteToasts` says them here); what the app
    tells (`tell`) goes first."""

    def __init__(self) -> None:
        self.waiting: deque[tuple[str, bool]] = deque(maxlen=WAITING)
        self.current: tuple[str, bool] | None = None
        self._since = 0.0
        #: What the app told (`tell`), oldest first, each with the time it is shown until: the newest is shown; one
        #: told for longer (`stopping`) comes back once those told after it have gone. Reading's messages wait.
        self.told: list[tuple[Shown, float]] = []
        self._drawn: tuple[Screen[object] | None, Shown | None] = (None, None)

    def say(self, message: str, warning: bool) -> None:
        """Say `message` once the ones before it have been said."""
        self.waiting.append((message, warning))

    def tell(self, message: str, title: str = "", warning: bool = False, seconds: float = LINE_S,
             now: float | None = None) -> None:
        """Say `message` now, for `seconds`, headed by `title`, whatever reading's messages wait (the one on the line
        waits again, first): what a key did (`s`: saved where, or why not), what the app has to say (`MapActions.
        notify`), said where the footer was so that no toast covers the maps."""
        now = time.monotonic() if now is None else now
        if self.current is not None:
            self.waiting.appendleft(self.current)
            self.current = None
        self.told = [*(t for t in self.told if t[1] > now), (told_note(message, title, warning), now + seconds)]
        del self.told[:-WAITING]

    def clear(self) -> None:
        """Say nothing more of what reading said so far (the messages screen lists it); what was told stays."""
        self.waiting.clear()
        self.current = None

    def due(self, now: float) -> tuple[str, bool] | None:
        """What the line says at `now` (None: nothing: the footer is shown)."""
        if self.current is not None and now - self._since >= (BUSY_LINE_S if self.waiting else LINE_S):
            self.current = None
        if self.current is None and self.waiting:
            self.current, self._since = self.waiting.popleft(), now
        return self.current

    def shown(self, now: float) -> Shown | None:
        """What the line shows at `now`: the newest of what was told still due, else reading's message due (None: the
        footer)."""
        self.told = [t for t in self.told if t[1] > now]
        if self.told:
            return self.told[-1][0]
        note = self.due(now)
        return None if note is None else reading_note(note)

    def show_on(self, screen: Screen[object], now: float | None = None) -> None:
        """Say what is due on `screen`'s note line, in its footer's place (its footer again once nothing is)."""
        note = self.shown(time.monotonic() if now is None else now)
        if self._drawn == (screen, note):
            return
        self._drawn = (screen, note)
        for line in screen.query(NoteLine):
            if note is not None:
                line.show(note)
            line.display = note is not None
        for footer in screen.query(Footer):
            footer.display = note is None
