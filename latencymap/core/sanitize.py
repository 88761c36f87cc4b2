"""Neutralise text from input before any view shows it, and keep credentials out of what is written."""

from __future__ import annotations

import re
from typing import Any

# C0 and C1 controls and DEL, plus Unicode bidi overrides; tab becomes a space.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
MAX_TEXT = 200


def clean_text(text: str, limit: int = MAX_TEXT) -> str:
    """`text` with control and escape characters shown as `?`, tabs as spaces, at most `limit` chars."""
    text = _CONTROL.sub("?", text.replace("\t", " "))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def cell_width(text: str) -> int:
    """Terminal cells `text` takes: wide (East Asian) characters two, combining marks none, others one."""
    if text.isascii():
        return len(text)
    import unicodedata  # only for text that needs it

    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def cut_middle(text: str, width: int) -> str:
    """`text` in at most `width` terminal cells, cut in the middle: stream names that differ only at the end (label
    sets, the input a stream was set apart for) stay apart."""
    if cell_width(text) <= width:
        return text
    head = _within(text, (width - 1) * 2 // 5)
    tail = _within(text[::-1], width - 1 - cell_width(head))[::-1]
    return f"{head}…{tail}"


def _within(text: str, cells: int) -> str:
    """The longest start of `text` that takes at most `cells` terminal cells."""
    if text.isascii():
        return text[:cells]
    used = 0
    for k, c in enumerate(text):
        used += cell_width(c)
        if used > cells:
            return text[:k]
    return text


def excerpt(text: str, limit: int = 60) -> str:
    """A short, quoted, safe excerpt of an input line for an error message."""
    return repr(clean_text(text.strip(), limit))


_SECRET_KEY = re.compile(r"pass|secret|token|credential|key", re.I)
_DSN_CREDENTIALS = re.compile(r"(?<=//)[^/@\s]*@|^(?![a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+/[^@\s]*@")
_SECRET_PARAM = re.compile(r"(?<=[?&])([^=&#\s]*(?:pass|secret|token|key|auth|credential)[^=&#\s]*=)[^&#\s]*", re.I)


def safe_options(options: dict[str, Any]) -> dict[str, Any]:
    """Command options fit for a header: secrets dropped, credentials cut out of DSNs/URLs (and URL query values)."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if _SECRET_KEY.search(key):
            continue
        if isinstance(value, str):
            value = _SECRET_PARAM.sub(r"\1***", _DSN_CREDENTIALS.sub("", value))
        elif isinstance(value, tuple):
            value = list(value)
        if isinstance(value, (str, int, float, bool, list)) or value is None:
            out[key] = value
    return out
