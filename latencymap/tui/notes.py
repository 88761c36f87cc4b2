"""What reading said (records skipped with their file and line, what it assumed, where a `--duration` stopped it), as
the TUI says it: a line in the footer's place as each message comes (`NoteToasts`: the first few, then a count; a
`NoteLine`), a count on the status line, the messages screen (`w`), and stderr once the app is gone (`said_after`),
as the plain view says them.

The messages are said in the footer's place, not in toasts: on a small terminal the maps span the screen and a toast
of a message hid a third of them for seconds (15 lines of 40 cells at 80x24), the newest columns first; the footer
only lists keys (`?` has them all). Each message is there `LINE_S`, or `BUSY_LINE_S` while others wait; the header
keeps the count, and `w` lists them whole (opening it clears the line)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from latencymap.core.accumulator import MAX_MESSAGES, Accumulator
from latencymap.core.model import Notice, Status
from latencymap.core.sanitize import clean_text
from latencymap.core.units import plural
from latencymap.tui.fit import Field
from latencymap.tui.footer import KeyFooter
from latencymap.tui.keys import HelpScreen
from latencymap.tui.note_line import NoteLine

#: The key that opens the messages screen, as the status line names it.
KEY = "w"
#: At most this many single messages are said in TOAST_WINDOW_S; the messages past them are counted, and the count
#: said once, at most once a window (a stream of thousands of bad lines is a few lines said).
TOASTS = 3
TOAST_WINDOW_S = 10.0
#: The characters of a message shown (the report's notes' limit).
MESSAGE_CHARS = 600

Say = Callable[[str, bool], None]


class NoteToasts:
    """What reading says, as it comes: each message while there are few, a count of them in a flood (`say`: the
    message, and whether it is a warning: records skipped)."""

    def __init__(self, say: Say) -> None:
        self._say = say
        self._shown: deque[float] = deque()  # when the single messages of the window were shown
        self._held = 0  # messages not shown, to be counted
        self._counted_at: float | None = None

    def said(self, notices: Iterable[Notice], now: float | None = None) -> None:
        """Say `notices` (just read), or count them; say the count held back once its window has passed (called
        every tick, with no notice too)."""
        now = time.monotonic() if now is None else now
        while self._shown and now - self._shown[0] >= TOAST_WINDOW_S:
            self._shown.popleft()
        for notice in notices:
            if self._held or len(self._shown) >= TOASTS:
                self._held += 1
                continue
            self._shown.append(now)
            self._say(clean_text(notice.message, MESSAGE_CHARS), bool(notice.skipped))
        if self._held and (self._counted_at is None or now - self._counted_at >= TOAST_WINDOW_S):
            self._say(f"{plural(self._held, 'more message')}: {KEY} lists what was said", True)
            self._held = 0
            self._counted_at = now


def notes_field(said: int, rank: int) -> list[Field]:
    """The status line's count of messages and the key that lists them (none before the first)."""
    if not said:
        return []
    return [Field(f"  {plural(said, 'note')} ({KEY})", "bold yellow", rank)]


def notes_lines(acc: Accumulator) -> tuple[str, list[str], str]:
    """The messages screen's heading, the messages kept (cleaned), and what was left out ("" when nothing)."""
    left_out = acc.messages_said - len(acc.messages)
    listed = f" (the first {len(acc.messages)} listed)" if left_out else ""
    skipped = plural(acc.skipped, "record")
    heading = f"What reading said: {plural(acc.messages_said, 'message')}{listed}, {skipped} skipped"
    more = f"… and {left_out:,} more (the first {MAX_MESSAGES} are kept; --plain says every one)" if left_out else ""
    return heading, [clean_text(m, MESSAGE_CHARS) for m in acc.messages], more


class NotesScreen(HelpScreen):
    """Every message reading said, in order, numbered; follows new ones while open (Esc, q or w closes it; s saves
    it as the app's `s` saves a screen). Its note line says only where `s` saved: what reading says while it is open
    is listed there."""

    DEFAULT_CSS = """
    NotesScreen > VerticalScroll { width: 120; }
    NotesScreen #notes-heading { text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding(KEY, "close", "Close", show=False)]

    def __init__(self, acc: Accumulator) -> None:
        super().__init__()
        self.acc = acc
        self._listed = -1  # messages listed (the list changes only while fewer than MAX_MESSAGES are kept)
        self._said = -1
        self._ready = False  # composed: the app's tick may come between `w` and the screen's widgets

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="notes-heading", classes="title", markup=False)
            yield Static(id="notes-list")
            yield Static(id="notes-more", markup=False)
        yield KeyFooter()
        yield NoteLine()

    def on_mount(self) -> None:
        self._ready = True
        self.update()

    def update(self) -> None:
        """Show what was said since the last update (nothing to do when nothing was, or before the screen's widgets
        are there)."""
        if not self._ready or self.acc.messages_said == self._said:
            return
        self._said = self.acc.messages_said
        heading, messages, more = notes_lines(self.acc)
        self.query_one("#notes-heading", Static).update(heading)
        if len(messages) != self._listed:
            self._listed = len(messages)
            table = Table(box=None, show_header=False, padding=(0, 1), expand=False)
            table.add_column(style="dim", justify="right", no_wrap=True)
            table.add_column(overflow="fold")
            for k, message in enumerate(messages, 1):
                table.add_row(str(k), Text(message))
            self.query_one("#notes-list", Static).update(table if messages else "(none)")
        self.query_one("#notes-more", Static).update(more)

    def plain_lines(self) -> list[str]:
        """The screen as text, for the saved plain-text frame."""
        heading, messages, more = notes_lines(self.acc)
        return [heading, *(f"{k:>4} {m}" for k, m in enumerate(messages, 1)), *([more] if more else [])]


def said_after(acc: Accumulator, late: list[Notice]) -> list[Notice]:
    """What reading said, to be said on stderr once the app is gone, in order: the messages kept, how many more there
    were, then the messages said as the source ended (`late`, after the app was asked to stop) that were not kept."""
    kept = set(acc.messages)
    unkept = [n for n in late if not isinstance(n, Status) and n.message not in kept]
    out = [Notice(m, skipped=0) for m in acc.messages]
    left_out = acc.messages_said - len(acc.messages) - len(unkept)
    if left_out > 0:
        out.append(Notice(f"... and {plural(left_out, 'more message')} (the view kept the first "
                          f"{MAX_MESSAGES}; --plain says every one)", skipped=0))
    return out + unkept
