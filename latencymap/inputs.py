"""Open an input (file or stdin), pick its text format, and read it into items."""

from __future__ import annotations

import io
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from latencymap.plugins import Item, Registry, TextFormat

SNIFF_LINES = 200
#: Longer lines are cut: a hostile or broken input cannot exhaust memory one line at a time.
MAX_LINE = 64 * 1024


class InputError(Exception):
    """An input that cannot be opened or whose format is unknown."""


def open_text(path: str, stdin: IO[bytes] | None = None) -> tuple[IO[str], str]:
    """A text stream (UTF-8, invalid bytes replaced) and its display name; `-` is stdin."""
    if path in ("-", ""):
        binary = stdin if stdin is not None else sys.stdin.buffer
        return io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline=None), "<stdin>"
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{path}: is a directory (expected a file of histograms)")
    try:
        binary = p.open("rb")
    except OSError as err:
        raise InputError(f"{path}: {err.strerror}") from None
    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline=None), path


def capped_lines(stream: IO[str]) -> Iterator[str]:
    """Lines of `stream`, each at most MAX_LINE characters (the rest of a long line is dropped)."""
    while True:
        line = stream.readline(MAX_LINE)
        if not line:
            return
        if len(line) == MAX_LINE and not line.endswith("\n"):
            while True:  # drop the rest of the over-long line
                rest = stream.readline(MAX_LINE)
                if not rest or rest.endswith("\n"):
                    break
        yield line


def choose_format(registry: Registry, head: list[str], name: str, forced: str | None) -> type[TextFormat]:
    """The format named by `forced`, else the highest-priority one whose sniff accepts `head`."""
    if forced:
        try:
            return registry.formats[forced]
        except KeyError:
            raise InputError(f"unknown format {forced!r}; supported: {', '.join(sorted(registry.formats))}") from None
    for fmt in sorted(registry.formats.values(), key=lambda f: -f.priority):
        try:
            if fmt.sniff(head):
                return fmt
        except Exception:
            continue
    listing = "\n".join(f"  {n:14s} {f.summary}" for n, f in sorted(registry.formats.items()))
    raise InputError(f"{name}: unrecognised input format. Supported formats (--format NAME):\n{listing}")


def read_input(
    path: str,
    registry: Registry,
    forced_format: str | None = None,
    options: dict[str, Any] | None = None,
    stdin: IO[bytes] | None = None,
) -> Iterator[Item]:
    """Items of one input. Raises InputError before yielding when it cannot be opened or identified."""
    stream, name = open_text(path, stdin)
    lines = capped_lines(stream)
    head = list(itertools.islice(lines, SNIFF_LINES))
    fmt = choose_format(registry, head, name, forced_format)
    reader = fmt(**(options or {}))

    def generate() -> Iterator[Item]:
        try:
            yield from reader.read(itertools.chain(head, lines), name)
        finally:
            stream.close()

    return generate()
