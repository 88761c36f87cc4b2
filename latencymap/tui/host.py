"""What the TUI's controllers (profile panel, replay keys) may ask of the app that hosts them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from latencymap.core.accumulator import StreamHistory
from latencymap.tui.state import ViewState


class MapHost(Protocol):
    """The app as its controllers see it: the view state, the shown stream and map width, repaint and messages."""

    view: ViewState

    def current(self) -> StreamHistory | None:
        """The stream on screen, or None before any data."""

    def map_cells(self) -> int:
        """How many cells wide the heat maps are."""

    def refresh_view(self, *, force: bool = False, status_only: bool = False) -> None:
        """Repaint what changed."""

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Say `message` on the note line, in the footer's place (`MapActions.notify`)."""

    def push_screen(self, screen: Any, callback: Callable[[Any], None] | None = None) -> Any:
        """Open a modal screen; `callback` gets its answer."""
