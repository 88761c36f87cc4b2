"""What sources/oracle/sqlplus.sql prints, worked out without SQL*Plus or a database.

No Oracle client or server can be installed here, so the script is run by hand, the way SQL*Plus and PL/SQL
would run it: `&N` substitution, the bind-variable block, the spool that repeats the sample block, and the
sample block's `dbms_output.put_line` calls in program order (the fetch loop once per histogram row). Only the
expression forms the script uses are understood (`||`, literals, binds, `to_char`, `to_number`, `replace`,
`lower`, `case when … then … else … end`); anything else raises, so a change to the script's output code is
either understood here or fails the test.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

TOKEN = re.compile(r"\s*(q'\[.*?\]'|'(?:[^']|'')*'|\|\||[(),=]|:?[A-Za-z_][\w$]*|\d+(?:\.\d+)?)", re.S)


def substitute(script: str, args: dict[int, str]) -> str:
    """SQL*Plus `&N` substitution (verify off, so nothing else changes)."""
    return re.sub(r"&(\d)", lambda m: args[int(m.group(1))], script)


def _to_char(value: Any, fmt: str) -> str:
    if isinstance(value, datetime) and fmt == "DD-MON-YY HH.MI.SS.FF6 PM TZH:TZM":
        offset = value.strftime("%z")
        return value.strftime("%d-%b-%y %I.%M.%S.%f %p ").upper() + f"{offset[:3]}:{offset[3:]}"
    if re.fullmatch(r"FM9+", fmt) and float(value).is_integer() and len(str(int(value))) <= len(fmt) - 2:
        return str(int(value))
    raise ValueError(f"to_char format not understood here: {fmt!r}")


def _text(value: Any) -> str:
    """Oracle's implicit number-to-text conversion for the integers the script prints."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        assert float(value).is_integer(), value
        return str(int(value))
    return str(value)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "to_char": _to_char,
    "to_number": lambda text, *fmt: float(text),
    "replace": lambda text, old, new: _text(text).replace(old, new),
    "lower": lambda text: _text(text).lower(),
}


class Expression:
    """A PL/SQL expression of the forms listed in the module docstring, evaluated against `env`."""

    def __init__(self, source: str) -> None:
        self.tokens: list[str] = []
        at = 0
        while source[at:].strip():
            found = TOKEN.match(source, at)
            assert found is not None, f"cannot read {source[at:]!r}"
            self.tokens.append(found.group(1))
            at = found.end()
        self.pos = 0

    def value(self, env: dict[str, Any]) -> Any:
        self.pos, self.env = 0, env
        out = self._concat()
        assert self.pos == len(self.tokens), f"left over: {self.tokens[self.pos:]}"
        return out

    def _next(self) -> str:
        self.pos += 1
        return self.tokens[self.pos - 1]

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _concat(self) -> Any:
        parts = [self._term()]
        while self._peek() == "||":
            self._next()
            parts.append(self._term())
        return parts[0] if len(parts) == 1 else "".join(map(_text, parts))

    def _term(self) -> Any:
        tok = self._next()
        if tok.startswith("q'["):
            return tok[3:-2]
        if tok.startswith("'"):
            return tok[1:-1].replace("''", "'")
        if re.fullmatch(r"\d+(\.\d+)?", tok):
            return float(tok)
        if tok.lower() == "case":
            return self._case()
        if self._peek() == "(":
            self._next()
            args = [self._concat()]
            while self._next() == ",":
                args.append(self._concat())
            return FUNCTIONS[tok.lower()](*args)
        return self.env[tok.lower()]

    def _case(self) -> Any:
        assert self._next().lower() == "when"
        left = self._concat()
        assert self._next() == "="
        right = self._concat()
        assert self._next().lower() == "then"
        yes = self._concat()
        assert self._next().lower() == "else"
        no = self._concat()
        assert self._next().lower() == "end"
        return yes if left == right else no


@dataclass
class Run:
    """What one run of the script does: its bind values, the dynamic SQL it opens, and what it prints."""

    binds: dict[str, Any]
    samples: int
    query: str
    output: str


def run(script: str, args: dict[int, str], sample_times: Iterable[datetime],
        rows: Callable[[int], list[tuple[float, float]]]) -> Run:
    """The script run with `args`: sample k at `sample_times[k]` fetches `rows(k)` (bucket, waits) from the view."""
    text = substitute(script, args)
    binds: dict[str, Any] = {}
    for name, expr in re.findall(r"^\s*(:\w+)\s*:=\s*(.+?);\s*$", text.split("declare")[0], re.M):
        binds[name] = Expression(expr).value(binds)
    (limit,) = re.findall(r"select '/' from dual connect by level < (.+?);", text)
    samples = 1 + max(0, int(Expression(limit).value(binds)) - 1)  # the block, then one "/" per spooled row
    block = text[text.index("declare"):]
    branch = re.search(r"if (.+?) then\s+query := (.+?);\s+else\s+query := (.+?);\s+end if;", block, re.S)
    assert branch is not None
    cond, milli, micro = branch.groups()
    left, right = cond.split("=")
    query = Expression(milli if Expression(left).value(binds) == Expression(right).value(binds) else micro).value({})
    body = block[block.index("begin"):]
    loop = re.search(r"\bloop\b(.*?)\bend loop;", body, re.S)
    assert loop is not None and "fetch histogram into bucket, waits;" in loop.group(1)
    calls = [(m.start() > loop.start() and m.end() < loop.end(), m.group(1))
             for m in re.finditer(r"dbms_output\.put_line\((.+?)\);\n", body, re.S)]
    out = []
    for k, now in zip(range(samples), sample_times, strict=False):
        epoch_us = round(now.timestamp() * 1e6)
        env = {**binds, "now": now, "epoch_us": epoch_us}
        for in_loop, expr in calls:
            if not in_loop:
                out.append(_text(Expression(expr).value(env)))
                continue
            for bucket, waits in rows(k):
                out.append(_text(Expression(expr).value({**env, "bucket": bucket, "waits": waits})))
    return Run(binds, samples, query, "\n".join(out) + "\n")
