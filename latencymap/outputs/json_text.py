"""`json.dumps(doc)`, byte for byte, with the big number matrices of a report written by orjson when it is there.

`json.dumps` spends most of a report's time writing floats (`float.__repr__`, one at a time). orjson writes the
same shortest round-trip digits ~10x faster in another layout: `,` without a space, exponents without a leading
zero (`1e-7`), and positional notation down to 1e-5 (`0.000016`) where `repr` switches to exponents below 1e-4
(`1.6e-05`). Those differences are put back (in a NumPy array, the numbers below 1e-4 are simply written by
`repr`); a matrix of whole numbers (events per second over one-second columns) is written faster still, as
orjson's integers with `.0` after each; a matrix orjson cannot write as `json.dumps` would (strings, NaN or
infinities, integers past 64 bits) is written by `json.dumps` itself.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

#: Lists of rows at least this long go through orjson; shorter ones are not worth a placeholder.
MIN_ROWS = 64
#: Whole numbers below this `repr` writes as their digits and `.0` (`1e+16` from there).
WHOLE_MAX = 1e16
#: A number orjson wrote positionally in [1e-5, 1e-4), which `repr` writes with an exponent.
_SMALL = rb"0\.0000(\d+)"  # a literal start: searched fast (a look-behind would try every byte)
#: The placeholder of the `i`th rows' text in the document `json.dumps` writes, and that text in it.
_TOKEN = "\x00latencymap-rows-{}\x00"
_PLACEHOLDER = re.compile(r'"\\u0000latencymap-rows-([0-9]+)\\u0000"')


def _small(match: re.Match[bytes]) -> bytes:
    start = match.start()
    if start and match.string[start - 1] in b"0123456789.e":  # inside a longer number, e.g. 10.00001
        return match.group()
    digits = match.group(1)
    return digits[:1] + (b"." + digits[1:] if len(digits) > 1 else b"") + b"e-05"


def number_rows(rows: list[Any] | np.ndarray) -> str | None:
    """`json.dumps(rows)` for a list of numbers or of lists of numbers (or `json.dumps(rows.tolist())` for a float
    array), through orjson; None when that cannot be exact."""
    try:
        import orjson
    except ImportError:
        return None
    if isinstance(rows, np.ndarray):
        if rows.dtype != np.float64 or not np.isfinite(rows).all():
            return None
        whole = _whole_text(rows, orjson)
        if whole is not None:
            return whole.decode("ascii")
        return _array_text(rows, orjson).replace(b",", b", ").decode("ascii")
    try:
        out = orjson.dumps(rows)
    except (TypeError, orjson.JSONEncodeError):  # integers past 64 bits, objects
        return None
    if b'"' in out or b"null" in out or b"{" in out:  # strings, None/NaN/inf (orjson writes null), objects
        return None
    for digit in b"6789":  # orjson writes exponents from 1e-6 down; repr pads one digit to two
        short = b"e-" + bytes((digit,))
        if short in out:
            out = out.replace(short + b",", short[:2] + b"0" + short[2:] + b",").replace(
                short + b"]", short[:2] + b"0" + short[2:] + b"]")
    if b"0.0000" in out:
        out = re.sub(_SMALL, _small, out)
    return out.replace(b",", b", ").decode("ascii")


def _whole_text(a: np.ndarray, orjson: Any) -> bytes | None:
    """`json.dumps` of a finite float matrix of whole numbers from 0 below `WHOLE_MAX` (events per second over
    one-second columns), written from orjson's text of them as integers (several times faster than as floats) with
    `.0` after each, as `repr` writes them; None for any other array."""
    if a.ndim != 2 or not a.size or np.signbit(a).any() or a.max() >= WHOLE_MAX:  # -0.0 is no integer's text
        return None
    ints = a.astype(np.int64, order="C")  # orjson writes C-contiguous arrays only
    if not (ints == a).all():
        return None
    text = orjson.dumps(ints, option=orjson.OPT_SERIALIZE_NUMPY)
    # `,` ends a number, or a row (`],`): `.0, ` after every one, then put back `.0], [` where a row ended (`].0, [`)
    return (text[:-2] + b".0]]").replace(b",", b".0, ").replace(b"].0, [", b".0], [")


def _array_text(a: np.ndarray, orjson: Any) -> bytes:
    """orjson's text of a finite float array, with the numbers it writes unlike `repr` (0 < |x| < 1e-4) written as
    `repr` writes them: orjson writes them as `null` once made NaN, and the text is cut there."""
    small = (np.abs(a) < 1e-4) & (a != 0)
    if not small.any():
        return orjson.dumps(np.ascontiguousarray(a), option=orjson.OPT_SERIALIZE_NUMPY)
    marked = np.array(a, dtype=np.float64, order="C")
    marked[small] = np.nan
    text = orjson.dumps(marked, option=orjson.OPT_SERIALIZE_NUMPY)
    # the `n` of each `null` is the only one in the text: found in bulk, and the pieces between are views of it
    cut = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == ord("n")).tolist()
    view = memoryview(text)
    pieces = [view[start:stop] for start, stop in zip([0, *(at + 4 for at in cut)], [*cut, len(text)], strict=True)]
    texts = _repr_texts(a[small], orjson)  # in the same (row-major) order as the text
    joined: list[bytes | memoryview] = [b""] * (len(pieces) + len(texts))
    joined[::2], joined[1::2] = pieces, texts
    return b"".join(joined)


def _repr_texts(values: np.ndarray, orjson: Any) -> list[bytes]:
    """`repr` of each of `values` (0 < |x| < 1e-4), from orjson's text of them all: the same digits, laid out as
    `repr` lays them out (`1.6e-05` for orjson's `0.000016`, `1e-07` for its `1e-7`)."""
    text = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1] + b","
    # `0.0000` then the digits (no exponent's mantissa, from 1 to 10, holds it) becomes a NUL before them
    chars = np.frombuffer(text.replace(b"0.0000", b"\x00"), dtype=np.uint8)
    cut = np.flatnonzero(chars == 0)
    commas = np.flatnonzero(chars == ord(","))
    ends = commas[np.searchsorted(commas, cut)]
    point = cut[ends > cut + 2] + 2  # after the first digit, when more follow
    exponents = np.flatnonzero(chars == ord("e"))
    short = exponents[chars[exponents + 3] == ord(",")] + 2  # `e-7,`: before its digit
    at = np.concatenate([point, short, np.repeat(ends, 4)])
    add = np.concatenate([np.full(len(point), ord("."), dtype=np.uint8), np.full(len(short), ord("0"), dtype=np.uint8),
                          np.tile(np.frombuffer(b"e-05", dtype=np.uint8), len(ends))])
    chars = np.insert(chars, at, add)
    chars = chars[chars != 0]
    text = chars.tobytes()
    if not _repr_layout(chars, len(values)):
        return [repr(v).encode() for v in values.tolist()]  # a layout not foreseen: `repr` itself
    return text.split(b",")[:-1]


def _repr_layout(chars: np.ndarray, n: int) -> bool:
    """Whether `chars` are `n` numbers each followed by a comma, laid out as `repr` lays out 0 < |x| < 1e-4: `-`, one
    digit from 1, other digits after a point (not ending in 0), `e-` and two digits or three."""
    commas = np.flatnonzero(chars == ord(","))
    exponents = np.flatnonzero(chars == ord("e"))
    if len(commas) != n or len(exponents) != n or not n:
        return n == 0 and len(chars) == 0
    starts = np.concatenate(([0], commas[:-1] + 1))
    starts += chars[starts] == ord("-")
    first, second, before = chars[starts], chars[starts + 1], chars[exponents - 1]
    digits = commas - exponents - 2
    return bool(((first >= ord("1")) & (first <= ord("9")) & ((second == ord(".")) | (second == ord("e")))).all()
                and (chars[exponents + 1] == ord("-")).all() and ((before != ord("0")) & (before != ord("."))).all()
                and ((digits >= 2) & (digits <= 3)).all())


def _plain(obj: Any) -> Any:
    """`obj` with its NumPy arrays as lists."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def dumps(doc: Any) -> str:
    """`json.dumps(doc)`: the same text, faster where `doc` holds long lists of number rows. NumPy float arrays in
    `doc` are written as their `tolist()` would be.

    The rows are written apart and held by placeholders in the document `json.dumps` writes; one scan of that text
    finds them all, and one join writes the document (time and memory linear in its size, whatever the number of
    streams: about two copies of the document at the peak, the rows' texts and the result)."""
    parts: list[str] = []

    def held(text: str) -> str:
        """A placeholder that `text` replaces in the written document."""
        parts.append(text)
        return _TOKEN.format(len(parts) - 1)

    def swap(obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            text = number_rows(obj)
            return swap(obj.tolist()) if text is None else held(text)
        if isinstance(obj, dict):
            return {k: swap(v) for k, v in obj.items()}
        if isinstance(obj, list):
            if len(obj) >= MIN_ROWS and type(obj[0]) in (list, float, int):
                text = number_rows(obj)
                if text is not None:
                    return held(text)
            return [swap(v) for v in obj]
        return obj

    swapped = swap(doc)
    text = json.dumps(swapped)
    if not parts:
        return text
    del swapped
    pieces = _PLACEHOLDER.split(text)  # [text, index, text, index, ..., text]: the one scan of the document
    del text
    # Every placeholder is found (each is a whole JSON string); a string of the document that holds the placeholder
    # text is found too, and makes more (or repeated) indexes than placeholders: then no shortcuts.
    if pieces[1::2] != [str(i) for i in range(len(parts))]:
        return json.dumps(_plain(doc))
    pieces[1::2] = parts
    parts.clear()
    return "".join(pieces)
