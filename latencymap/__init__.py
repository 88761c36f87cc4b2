"""latencymap: latency heat maps (frequency and intensity) over time, in the terminal."""

from __future__ import annotations

__version__ = "0.1.0"
