"""A parser for the Prometheus text exposition format (0.0.4) and OpenMetrics 1.0 text.

Both: `# HELP`/`# TYPE` lines (OpenMetrics adds `# UNIT` and ends with `# EOF`), then one sample a line:
`name{label="value",...} value [timestamp]`. Label values escape `\\\\`, `\\"` and `\\n`. The text format
allows any run of blanks between tokens and takes timestamps in milliseconds; OpenMetrics takes timestamps in
seconds and allows an exemplar after the sample (` # {trace_id="..."} 0.12 [timestamp]`). A UTF-8 byte order mark
opening the page is dropped. A line that cannot be read is skipped and described in `errors` (so is one that a
prefilter skips unread but that does not even open with a metric name); the rest of the page is kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from latencymap.core.sanitize import excerpt

OPENMETRICS_TYPE = "application/openmetrics-text"
#: What a scrape asks for: OpenMetrics first, the classic text format otherwise.
ACCEPT = f"{OPENMETRICS_TYPE};version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
MAX_ERRORS = 20

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
#: How a sample line opens: a metric name, then its labels or a blank (what a skipped line is checked for).
_OPENING = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*[{ \t]")
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\\n]|\\.)*)"[ \t]*')
_ESCAPE = re.compile(r"\\(.)")
_COMMENT = re.compile(r"#[ \t]+(HELP|TYPE|UNIT)[ \t]+([a-zA-Z_:][a-zA-Z0-9_:]*)(?:[ \t]+(.*))?$")
_NUMBER = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[iI]nf|NaN|nan)")
_UNESCAPE = {"\\": "\\", '"': '"', "n": "\n"}
#: A token after the labels: what lies between blanks (spaces and tabs). Not `str.split()`, which also cuts at
#: `\x1c`-`\x1f`, `\x85`, U+2028 and other Unicode blanks: `up 1\x1c5` would be the value 1 at 5 ms.
_TOKEN = re.compile(r"[^ \t]+")


class ExpositionError(ValueError):
    """One line that is not exposition; the message names the line."""


@dataclass(frozen=True, slots=True)
class Exemplar:
    """An OpenMetrics exemplar: the labels of one observation (a trace id), its value and time."""

    labels: dict[str, str]
    value: float
    timestamp: float | None = None


@dataclass(slots=True)
class Sample:
    """One sample line: `timestamp` in epoch seconds (None when the line has none)."""

    name: str
    labels: dict[str, str]
    value: float
    timestamp: float | None = None
    exemplar: Exemplar | None = None
    line: int = 0


@dataclass(slots=True)
class Exposition:
    """A parsed page: samples in order, metadata per metric family, and the lines that could not be read."""

    openmetrics: bool
    samples: list[Sample] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    helps: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    bad_lines: int = 0
    lines: int = 0
    eof: bool = False

    def complaint(self, line: int, message: str) -> None:
        """Count a bad line, keeping the first few messages."""
        self.bad_lines += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(f"line {line}: {message}")


def is_openmetrics(content_type: str) -> bool:
    """True when a Content-Type header announces OpenMetrics text."""
    return content_type.split(";", 1)[0].strip().lower() == OPENMETRICS_TYPE


def unescape(text: str) -> str:
    """A label value or HELP text with its `\\\\`, `\\"` and `\\n` escapes resolved (others kept as they are)."""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(lambda m: _UNESCAPE.get(m.group(1), m.group(0)), text)


def parse_number(text: str) -> float:
    """A sample value: Go float syntax, `+Inf`, `-Inf`, `NaN`."""
    if not _NUMBER.fullmatch(text):
        raise ExpositionError(f"expected a number, got {excerpt(text)}")
    return float(text)


def parse_labels(line: str, pos: int) -> tuple[dict[str, str], int]:
    """The label set opening at `line[pos] == '{'`, and the position just after its `}`."""
    labels: dict[str, str] = {}
    pos += 1
    while True:
        while pos < len(line) and line[pos] in " \t":
            pos += 1
        if pos < len(line) and line[pos] == "}":
            return labels, pos + 1
        m = _LABEL.match(line, pos)
        if m is None:
            raise ExpositionError(f'expected label="value" at column {pos + 1}, got {excerpt(line[pos:])}')
        name = m.group(1)
        if name in labels:
            raise ExpositionError(f"label {name!r} appears twice")
        labels[name] = unescape(m.group(2))
        pos = m.end()
        if pos < len(line) and line[pos] == ",":
            pos += 1
        elif pos >= len(line) or line[pos] != "}":
            raise ExpositionError(f"expected ',' or '}}' after label {name!r}, got {excerpt(line[pos:])}")


def _timestamp(text: str, openmetrics: bool) -> float:
    if openmetrics:
        value = parse_number(text)
        if not math.isfinite(value):
            raise ExpositionError(f"expected a timestamp in seconds, got {excerpt(text)}")
        return value
    if not re.fullmatch(r"-?\d+", text):
        raise ExpositionError(f"expected a timestamp in integer milliseconds, got {excerpt(text)}")
    return int(text) / 1000.0


def _exemplar(text: str, openmetrics: bool) -> Exemplar:
    text = text.strip(" \t")
    if not openmetrics or not text.startswith("{"):
        raise ExpositionError(f"expected an exemplar '{{labels}} value [timestamp]', got {excerpt(text)}")
    labels, pos = parse_labels(text, 0)
    fields = _TOKEN.findall(text, pos)
    if len(fields) not in (1, 2):
        raise ExpositionError(f"expected an exemplar value and an optional timestamp, got {excerpt(text[pos:])}")
    stamp = _timestamp(fields[1], True) if len(fields) == 2 else None
    return Exemplar(labels, parse_number(fields[0]), stamp)


def parse_sample(line: str, openmetrics: bool, number: int = 0) -> Sample:
    """One sample line (no leading blanks, no `#`)."""
    m = _NAME.match(line)
    if m is None:
        raise ExpositionError(f"expected a metric name, got {excerpt(line)}")
    name, pos = m.group(0), m.end()
    while pos < len(line) and line[pos] in " \t":
        pos += 1
    labels: dict[str, str] = {}
    if pos < len(line) and line[pos] == "{":
        labels, pos = parse_labels(line, pos)
    rest, hash_, tail = line[pos:].partition("#")
    fields = _TOKEN.findall(rest)
    if not fields or len(fields) > 2:
        raise ExpositionError(f"expected '<value> [timestamp]' after the name and labels, got {excerpt(line[pos:])}")
    value = parse_number(fields[0])
    stamp = _timestamp(fields[1], openmetrics) if len(fields) == 2 else None
    exemplar = _exemplar(tail, openmetrics) if hash_ else None
    return Sample(name, labels, value, stamp, exemplar, number)


def _metadata(page: Exposition, line: str, number: int) -> None:
    m = _COMMENT.match(line)
    if m is None:
        if page.openmetrics and line.startswith("# ") and line.split(" ", 2)[1] in ("HELP", "TYPE", "UNIT"):
            page.complaint(number, f"malformed metadata line {excerpt(line)}")
        return  # any other comment is a comment
    kind, family, text = m.group(1), m.group(2), (m.group(3) or "").strip(" \t")
    if kind == "TYPE":
        page.types[family] = text.lower()
    elif kind == "UNIT":
        page.units[family] = text
    else:
        page.helps[family] = unescape(text)


def parse_exposition(text: str, openmetrics: bool = False, keep: Callable[[str], bool] | None = None) -> Exposition:
    """Parse a page. `keep(line)` False (line without leading blanks) skips a line unread: a cheap prefilter (a
    skipped line that does not open as a sample does is still named in `errors`)."""
    page = Exposition(openmetrics)
    lines = text.removeprefix("\ufeff").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    page.lines = len(lines)
    for number, raw in enumerate(lines, 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if page.eof:
            page.complaint(number, "text after '# EOF'")
            break
        if not openmetrics:
            line = line.lstrip(" \t")
        if line.startswith("#"):
            if line == "# EOF":
                page.eof = True
            elif keep is None or keep(line):
                _metadata(page, line, number)
            continue
        if not line.strip(" \t"):
            if openmetrics:
                page.complaint(number, "empty line (OpenMetrics allows none)")
            continue
        if keep is not None and not keep(line):
            if _OPENING.match(line) is None:
                page.complaint(number, f"expected a sample line, got {excerpt(line)}")
            continue
        try:
            page.samples.append(parse_sample(line, openmetrics, number))
        except ExpositionError as err:
            page.complaint(number, str(err))
    return page
