"""Key bindings and the help screen."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from latencymap.tui.footer import KeyFooter
from latencymap.tui.note_line import NoteLine
from latencymap.tui.profile_panel import PROFILE_HELP
from latencymap.tui.replay_keys import REPLAY_HELP

BINDINGS: list[Binding] = [
    Binding("q", "quit", "Quit"),
    Binding("ctrl+c", "interrupt", "Interrupt", show=False, priority=True),
    Binding("space", "pause", "Pause"),
    Binding("left", "cursor(-1)", "←", show=False),
    Binding("right", "cursor(1)", "→", show=False),
    Binding("home", "home", "Oldest", show=False),
    Binding("end", "end", "Newest", show=False),
    Binding("pageup", "page(-1)", "Page back", show=False),
    Binding("pagedown", "page(1)", "Page forward", show=False),
    Binding("plus,equals_sign", "zoom(-1)", "Zoom in", show=False),
    Binding("minus,underscore", "zoom(1)", "Zoom out", show=False),
    Binding("left_square_bracket", "shift(-1)", "Buckets down", show=False),
    Binding("right_square_bracket", "shift(1)", "Buckets up", show=False),
    Binding("r", "fit", "Fit rows", show=False),
    Binding("e", "finding(1)", "Finding", show=False),
    Binding("E", "finding(-1)", "Previous finding", show=False),
    Binding("t", "straggler(1)", "Straggler", show=False),
    Binding("T", "straggler(-1)", "Previous straggler", show=False),
    Binding("escape", "overview", "Overview", show=False),
    Binding("l", "log", "Lin/log"),
    Binding("f", "show('frequency')", "Freq"),
    Binding("i", "show('intensity')", "Intens"),
    Binding("p", "percentiles", "Pctl"),
    Binding("v", "inspector", "Inspector"),
    Binding("tab", "stream(1)", "Stream", priority=True),
    Binding("shift+tab", "stream(-1)", "Stream", show=False, priority=True),
    Binding("s", "save", "Save"),
    Binding("w", "notes", "Notes", show=False),
    Binding("question_mark", "help", "Help"),
]

HELP: list[tuple[str, str]] = [
    ("space", "pause / resume the display (data keeps being read)"),
    ("← →", "move the column cursor (the inspector follows it)"),
    ("Home / End", "oldest column / newest column, following live data"),
    ("PgUp / PgDn", "scroll one screen back / forward through the history"),
    ("+ / −", "time zoom: fewer / more columns merged into one cell"),
    ("[ / ]", "pin the rows and shift them down / up one bucket"),
    ("r", "rows fit the data again (the default; re-fitted as the data moves)"),
    ("l", "linear / logarithmic colour scale"),
    ("f / i", "frequency map only / intensity map only (again: both)"),
    ("p", "show / hide the p50/p99 strip (shown by default when the screen is tall enough)"),
    ("v", "show / hide the inspector (shown by default from 96 columns; compact below 120)"),
    ("e / E", "next / previous finding, shown whole: the cursor goes to its columns"),
    ("t / T", "next / previous straggler task (Spark): the cursor goes to the column it finished in"),
    ("tab", "next stream in the overview's list, its filter and order (shift+tab: previous)"),
    ("Esc", "overview of every stream (several streams)"),
    ("overview", "↑↓ select, Enter open, o sort order, / filter, a b mark, d difference map A − B"),
    ("s", "save an SVG screenshot and a plain-text frame in the current directory; the bottom line names them, or "
          "says why it could not"),
    ("w", "what reading said: every message in order (records skipped, with their file and line; what it assumed; "
          "where --duration stopped it; the history limit dropping columns, a failed analysis); the header counts "
          "them (3 notes (w)), each is said on the bottom line in the footer's place as it comes (w clears it), and "
          "q says them on stderr"),
    ("click", "select a column and a latency bucket"),
    *PROFILE_HELP,
    *REPLAY_HELP,
    ("?", "this help (↑ ↓ PgUp PgDn scroll it; Esc, q or ? closes it)"),
    ("q", "quit (exit code 0); with --record, a live OTLP receiver first takes in what it answered (q again: now)"),
    ("Ctrl-C", "interrupt: quit with exit code 130, as SIGINT to the process does"),
]

#: The help screen's title.
TITLE = "latencymap keys"


class HelpScreen(ModalScreen[None]):
    """Every key, one line each; scrolls when the terminal is small. Its own footer lists the keys that work on it
    (the map screen's, under it, would offer keys a modal screen does not pass on); `s` saves it as the app's `s`
    saves a screen."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 84; max-width: 100%; height: auto; max-height: 100%; border: thick $primary;
                                  background: $surface; padding: 1 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close"),
        Binding("s", "app.save", "Save"),
        Binding("up", "scroll('up')", "Up", show=False),
        Binding("down", "scroll('down')", "Down", show=False),
        Binding("pageup", "scroll('page_up')", "Page up", show=False),
        Binding("pagedown", "scroll('page_down')", "Page down", show=False),
        Binding("home", "scroll('home')", "Top", show=False),
        Binding("end", "scroll('end')", "Bottom", show=False),
    ]

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2), expand=False)
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        for key, what in HELP:
            table.add_row(key, what)
        with VerticalScroll():
            yield Static(TITLE, classes="title")
            yield Static(table)
        yield KeyFooter()
        yield NoteLine()

    def plain_lines(self) -> list[str]:
        """The screen as text, for the saved plain-text frame."""
        width = max(len(key) for key, _ in HELP)
        return [TITLE, *(f"  {key:<{width}}  {what}" for key, what in HELP)]

    def action_close(self) -> None:
        self.dismiss()

    def action_scroll(self, where: str) -> None:
        """Scroll the list of keys."""
        getattr(self.query_one(VerticalScroll), f"scroll_{where}")(animate=False)
