"""How the map screen shares a terminal: the inspector's width, the percentile strip, the rows each map may have."""

from __future__ import annotations

from latencymap.tui.heatmap import CHROME_LINES

#: The inspector's width, full and compact (the border and padding included).
INSPECTOR_W = 48
COMPACT_W = 32
#: Terminals this wide show the full inspector; from `COMPACT_FROM` the compact one; narrower ones none unless asked.
FULL_FROM = 120
COMPACT_FROM = 96
#: Lines the screen takes besides the body: the status bar's two and the footer.
CHROME_H = 3
#: The percentile strip shows on its own only while the maps keep at least this many rows each with it.
STRIP_MIN_ROWS = 5
#: Bodies this tall keep `findings.MAX_LINES` lines for the findings under the maps; shorter ones one (more show
#: when the maps leave room).
TALL = 30
#: The fewest rows a map is given, whatever the height.
MIN_ROWS = 3


def inspector_width(width: int, wanted: bool | None) -> int:
    """The inspector's width in a terminal `width` wide; 0: hidden. `wanted`: the user's choice (None: by width)."""
    if wanted is False:
        return 0
    if width >= FULL_FROM:
        return INSPECTOR_W
    return COMPACT_W if width >= COMPACT_FROM or wanted else 0


def rows_per_map(height: int, maps: int, other: int, marked: bool) -> int:
    """Rows each of `maps` maps may have in a body `height` high that also holds `other` lines of panels."""
    return max(MIN_ROWS, (height - other) // max(1, maps) - CHROME_LINES - int(marked))
