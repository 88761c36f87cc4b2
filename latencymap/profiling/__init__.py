"""Profiling: py-spy samples of a target's Python stacks, attached to heat-map columns by time."""

from __future__ import annotations

#: Stack samples per second unless `--profile-rate` says otherwise (here, so the CLI's options need no more).
DEFAULT_RATE = 100
