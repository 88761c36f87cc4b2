"""Where a command's text output goes: a file, or stdout."""

from __future__ import annotations

import sys


def write_text(text: str, output: str | None) -> None:
    """`text` into the file `output` (UTF-8), or onto stdout when there is none."""
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
