"""Where a command's output goes: a file, or stdout."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def writing(output: str) -> Iterator[None]:
    """A failure to write `output` as one OutputError line (exit code 1), not a traceback."""
    try:
        yield
    except OSError as err:
        raise OutputError(f"{output}: cannot write the output: {err.strerror or err}", exit_code=1) from None


def write_text(text: str, output: str | None) -> None:
    """`text` into the file `output` (UTF-8), or onto stdout when there is none."""
    if not output:
        sys.stdout.write(text)
        return
    with writing(output), open(output, "w", encoding="utf-8") as fh:
        fh.write(text)
