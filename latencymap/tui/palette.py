"""Colour levels as cached rich Styles: truecolor gradients, the 256-colour palette, or shade characters."""

from __future__ import annotations

from functools import lru_cache

from rich.color import Color
from rich.style import Style

from latencymap.views.frame import LEVELS
from latencymap.views.options import BLUES, REDS, SHADES

#: Truecolor ramps per map kind, level 1 (few) to LEVELS (most).
RAMPS: dict[str, tuple[tuple[int, int, int], tuple[int, int, int]]] = {
    "frequency": ((170, 235, 255), (10, 30, 200)),
    "intensity": ((255, 245, 120), (210, 20, 20)),
}
MODES = ("truecolor", "256", "mono")


def detect_mode(color_system: str | None, no_color: bool, enabled: bool = True) -> str:
    """`mono` under NO_COLOR, a monochrome terminal or --no colour; else truecolor or 256."""
    if no_color or not enabled or color_system in (None, "standard", "windows"):
        return "mono"
    return "truecolor" if color_system == "truecolor" else "256"


def _ramp(kind: str, level: int) -> Color:
    (r0, g0, b0), (r1, g1, b1) = RAMPS[kind]
    t = (level - 1) / max(1, LEVELS - 1)
    return Color.from_rgb(r0 + (r1 - r0) * t, g0 + (g1 - g0) * t, b0 + (b1 - b0) * t)


@lru_cache(maxsize=256)
def cell_style(mode: str, kind: str, level: int, cursor: bool = False) -> Style:
    """The style of one heat map cell (cached: a frame reuses a handful of Style objects)."""
    if mode == "mono" or level == 0:
        return Style(reverse=True) if cursor else Style()
    bg = _ramp(kind, level) if mode == "truecolor" else Color.from_ansi((BLUES if kind == "frequency" else REDS)[level])
    return Style(bgcolor=bg, color="white" if cursor else None, bold=cursor)


def cell_char(mode: str, level: int) -> str:
    """Character drawn in a cell: a space on a coloured background, or a shade in mono."""
    return SHADES[level] if mode == "mono" else " "


CURSOR_CHAR = "│"
