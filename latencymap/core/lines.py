"""Input text cut into lines, at line ends only."""

from __future__ import annotations

import io


def text_lines(text: str) -> list[str]:
    """The lines of `text`, each with its end: cut after `\\n`, `\\r\\n` or a lone `\\r` only, as Python reads files.

    `str.splitlines` also cuts at `\\f`, `\\v`, `\\x1c`-`\\x1e`, `\\x85`, U+2028 and U+2029, which a label may hold
    (a process named `a\\fb`): such a character is part of its line here.
    """
    if "\r" not in text:
        lines = text.splitlines(True)
        if len(lines) == text.count("\n") + (text[-1:] not in ("", "\n")):
            return lines  # it cut at newlines only: the common case, at `splitlines`'s speed
    return io.StringIO(text, newline="").readlines()
