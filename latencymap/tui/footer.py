"""The footer of every screen: its keys, the least needed left out where the terminal is too narrow for all of them,
so `? Help` (which lists every key) and the keys used most are never cut off the end of the line."""

from __future__ import annotations

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer

#: Actions by need, the most needed first, in groups that go together (the marks of the difference map and its key):
#: where not every key fits, those not listed here go first (the command palette's before any), then these from the
#: end of the list.
NEED = (("help",), ("close",), ("pop_screen",), ("cancel",), ("quit",), ("save",), ("pause",), ("open",), ("stream",),
        ("order",), ("filter",), ("mark", "difference"), ("log",), ("show",), ("percentiles",), ("inspector",))
PALETTE = "command_palette"


def action_name(action: str) -> str:
    """`stream(1)` → `stream`, `app.save` → `save`."""
    return action.split("(", 1)[0].rsplit(".", 1)[-1]


def need(action: str) -> tuple[int, str]:
    """How much a key is needed in the footer (`NEED`: the command palette least, then keys not listed), and the
    group it goes with."""
    name = action_name(action)
    if name == PALETTE:
        return -2, name
    return next(((len(NEED) - k, group[0]) for k, group in enumerate(NEED) if name in group), (-1, name))


def left_out(keys: list[tuple[str, int]], width: int) -> set[str]:
    """The actions of `keys` ((action, cells) in the footer's order) to leave out for the rest to fit in `width`
    cells: the least needed first (a group at once), of equal need the later first; never `help`."""
    used = sum(cells for _, cells in keys)
    out: set[str] = set()
    for k in sorted(range(len(keys)), key=lambda k: (need(keys[k][0])[0], -k)):
        went = need(keys[k][0])
        if used <= width or went[1] == "help":
            break
        for action, cells in keys:
            if action not in out and need(action) == went:
                out.add(action)
                used -= cells
    return out


class KeyFooter(Footer):
    """Textual's footer, fitted to the width: the keys that do not fit are left out whole, the least needed first
    (`left_out`), instead of the line being cut wherever it reaches the edge; fitted again when the width changes."""

    def __init__(self) -> None:
        super().__init__()
        self._fitted = 0

    def compose(self) -> ComposeResult:
        width = self.app.size.width  # the footer spans its screen
        self._fitted = width
        hidden = left_out(self._keys(), width) if self._bindings_ready else set()
        for widget in super().compose():
            if getattr(widget, "action", None) not in hidden:
                yield widget

    def _keys(self) -> list[tuple[str, int]]:
        """(action, cells) of each key the footer shows, in its order: `key description` with its padding, the command
        palette's with its border too."""
        keys: dict[str, int] = {}
        active = self.screen.active_bindings
        for _, binding, _, _ in active.values():
            if binding.show and binding.action not in keys:
                keys[binding.action] = self._cells(binding)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and \
                self.app.COMMAND_PALETTE_BINDING in active:
            keys[PALETTE] = self._cells(active[self.app.COMMAND_PALETTE_BINDING].binding) + 2
        return list(keys.items())

    def _cells(self, binding: Binding) -> int:
        """Cells of a key in the footer: ` key description ` (the key alone where it has no description)."""
        shown = cell_len(self.app.get_key_display(binding))
        return shown + cell_len(binding.description) + 3 if binding.description else shown

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._fitted and self._bindings_ready:
            self.call_after_refresh(self.recompose)
