"""Whether a command needs a profile session at all: asked before the profiler's modules are imported."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def profile_wanted(kw: dict[str, Any], inputs: Sequence[str] = ()) -> bool:
    """True when `--profile PID` was given, or the TUI may show samples recorded in the inputs, or `--record` is to
    carry them."""
    return kw.get("profile_pid") is not None or (bool(inputs) and (profile_shown(kw) or bool(kw.get("record_path"))))


def profile_shown(kw: dict[str, Any]) -> bool:
    """True unless the view is plain, drawn once or emitted (only the TUI shows recorded samples)."""
    return not (kw.get("plain") or kw.get("once") or kw.get("emit"))
