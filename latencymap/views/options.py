"""What every view is told: PyLatencyMap's display options, the palettes, whether colour is wanted."""

from __future__ import annotations

import os
from dataclasses import dataclass

from latencymap.core.model import StreamId
from latencymap.core.units import unit_seconds
from latencymap.views.frame import AUTO, AUTO_MAX

BLUES = (15, 51, 45, 39, 33, 27, 21)
REDS = (15, 226, 220, 214, 208, 202, 196)
#: Cell characters without colour (NO_COLOR, saved `.txt` frames): one per level, lightest to darkest, each one cell
#: wide in common monospace fonts.
SHADES = (" ", "·", ":", "░", "▒", "▓", "█")


@dataclass(slots=True)
class ViewOptions:
    """PyLatencyMap's display options, shared by the plain frames, the TUI and static reports.

    `intensity_maxval` is in the stream's latency unit per second, as PyLatencyMap's (`(millisec/sec)` for its
    millisec records): `intensity_scale` gives it in the seconds per second the intensity maps show.
    """

    num_records: int = 90
    min_bucket: int = AUTO
    max_bucket: int = AUTO_MAX
    frequency_maxval: float = -1
    intensity_maxval: float = -1
    color: bool = True

    def intensity_scale(self, stream: StreamId) -> float:
        """The pinned intensity scale for `stream` in s/s (`intensity_maxval` in its unit per second); <= 0: none."""
        if self.intensity_maxval <= 0:
            return self.intensity_maxval
        try:
            return self.intensity_maxval * unit_seconds(stream.unit)
        except ValueError:  # a unit latencymap does not know: taken as seconds
            return self.intensity_maxval


def color_enabled() -> bool:
    """False under NO_COLOR (any value) or a dumb terminal."""
    return "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
