"""Where a command's output goes: a file, or stdout."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from latencymap.core.errors import OutputError


def check_output(output: str | None) -> None:
    """Refuse an output file that cannot be created, before any input is read: a long run is not lost at its end."""
    if not output:
        return
    path = Path(output)
    parent = path.parent
    if path.is_dir():
        raise OutputError(f"{output}: is a directory (expected a file to write the output to)")
    if not parent.is_dir():
        raise OutputError(f"{output}: cannot create it: no directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise OutputError(f"{output}: cannot create it: permission denied")


def write_text(text: str, output: str | None) -> None:
    """`text` into the file `output` (UTF-8), or onto stdout when there is none."""
    if not output:
        sys.stdout.write(text)
        return
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as err:
        raise OutputError(f"{output}: cannot write the output: {err.strerror}", exit_code=1) from None
