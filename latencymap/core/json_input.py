"""JSON decoded from input (files, lines, HTTP bodies): every way it fails is a ValueError, which readers catch.

`json.loads` raises RecursionError, not ValueError, for a document nested deeper than the interpreter's recursion
limit (2,000 levels of `[` do it, well within a line's length): a reader catching ValueError would crash on it
and lose what it had read.
"""

from __future__ import annotations

from typing import Any

TOO_DEEP = "nested too deeply to decode"


def json_input(data: str | bytes | bytearray) -> Any:
    """`json.loads(data)`, with a document nested too deeply raising ValueError(TOO_DEEP)."""
    import json  # most inputs hold no JSON: ~1 ms of every start

    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
