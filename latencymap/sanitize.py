"""Neutralise text from input before any view shows it."""

from __future__ import annotations

import re

# C0 and C1 controls and DEL, plus Unicode bidi overrides; tab becomes a space.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
MAX_TEXT = 200


def clean_text(text: str, limit: int = MAX_TEXT) -> str:
    """`text` with control and escape characters shown as `?`, tabs as spaces, at most `limit` chars."""
    text = _CONTROL.sub("?", text.replace("\t", " "))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def excerpt(text: str, limit: int = 60) -> str:
    """A short, quoted, safe excerpt of an input line for an error message."""
    return repr(clean_text(text.strip(), limit))
