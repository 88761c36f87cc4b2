"""What every view is told: PyLatencyMap's display options, the palettes, whether colour is wanted."""

from __future__ import annotations

import os
from dataclasses import dataclass

from latencymap.views.frame import AUTO, AUTO_MAX

BLUES = (15, 51, 45, 39, 33, 27, 21)
REDS = (15, 226, 220, 214, 208, 202, 196)
SHADES = (" ", "░", "░", "▒", "▒", "▓", "█")


@dataclass(slots=True)
class ViewOptions:
    """PyLatencyMap's display options, shared by the plain frames, the TUI and static reports."""

    num_records: int = 90
    min_bucket: int = AUTO
    max_bucket: int = AUTO_MAX
    frequency_maxval: float = -1
    intensity_maxval: float = -1
    color: bool = True


def color_enabled() -> bool:
    """False under NO_COLOR (any value) or a dumb terminal."""
    return "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
