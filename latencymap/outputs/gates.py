"""Latency gates for CI: `--fail-if 'p99 > 20ms'` expressions, parsed by hand (never eval'd).

Grammar (keywords and metric names are case-insensitive)::

    gate       := or_expr
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | "(" or_expr ")" | comparison | "bimodal"
    comparison := metric op value
    op         := "<" | "<=" | ">" | ">=" | "==" | "!="
    value      := NUMBER [unit | "%"]          unit: ns us µs ms s

Metrics, computed over a stream's whole history:

- `p50 p90 p99 p999 mean` (durations) and `time` (total time waited): compared with a duration
  that carries its unit (`20ms`, `1.5 s`); a bare `0` is allowed. A percentile in the open top bucket whose
  values are not known is only at least that bucket's low (the report's `≥`): it compares as that bound, which
  is past any threshold a gate would name (2^62 of the stream's unit), and a failure line writes it `≥`.
- `events` (count), `rate` (events per second), `bands` (number of latency bands): plain numbers.
- `tail.time_share`, `tail.events_share`: a fraction (`0.5`) or a percentage (`50%`), of the slowest
  buckets that hold half of the time (`latencymap.analysis.tail`): `tail.events_share < 5%` fails when
  under 5% of the events spend half of the time; `tail.time_share` is >= 50% by construction, so
  `tail.time_share > 50%` fails on healthy streams. Undefined (comparisons false) when the stream has
  no time, as percentiles are: an empty stream has no heavy tail.
- `bimodal`: true/false; alone it is a gate, compared it is 1/0.

The expression says when to fail: `--fail-if 'p99 > 20ms'` fails when p99 is above 20 ms. Every
gate is checked on every stream, and each (gate, stream) that holds is one failure line. A stream
with no events has undefined percentiles and mean: comparisons on them are false (use
`events == 0` to fail on an empty stream). With no stream at all, every gate fails.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from latencymap.analysis.summary import stream_diagnosis
from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.buckets import percentile_duration
from latencymap.core.percentiles import PERCENTILE_NAMES, PERCENTILES
from latencymap.core.sanitize import clean_text
from latencymap.core.source_totals import SourceTotals
from latencymap.core.units import format_number, seconds_per
from latencymap.outputs.report import stream_total

DURATION_METRICS = ("p50", "p90", "p99", "p999", "mean", "time")
NUMBER_METRICS = ("events", "rate", "bands")
SHARE_METRICS = ("tail.time_share", "tail.events_share")
BOOL_METRICS = ("bimodal",)
METRICS = DURATION_METRICS + NUMBER_METRICS + SHARE_METRICS + BOOL_METRICS
OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}
_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
                    r"|(?P<word>[A-Za-zµμ_][A-Za-z0-9µμ_.]*)|(?P<op><=|>=|==|!=|<|>|=)|(?P<punct>[()%]))")


class GateError(ValueError):
    """A malformed gate expression: says where and what was expected."""

    def __init__(self, text: str, pos: int, message: str) -> None:
        self.text, self.pos = text, pos
        super().__init__(f"{message} at position {pos + 1} in {text!r}")


@dataclass(frozen=True)
class Token:
    kind: str  # num, word, op, punct, end
    text: str
    pos: int


def tokenize(text: str) -> list[Token]:
    """Tokens of a gate expression, each with its 0-based position."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.lastgroup is None:
            bad = pos + len(text[pos:]) - len(text[pos:].lstrip())
            raise GateError(text, bad, f"unexpected character {text[bad]!r}")
        kind = m.lastgroup
        tokens.append(Token(kind, m.group(kind), m.start(kind)))
        pos = m.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


@dataclass(frozen=True)
class Compare:
    metric: str
    op: str
    value: float


@dataclass(frozen=True)
class Flag:
    metric: str


@dataclass(frozen=True)
class Not:
    arg: Node


@dataclass(frozen=True)
class BoolOp:
    op: str  # and / or
    args: tuple[Node, ...]


Node = Compare | Flag | Not | BoolOp


class _Parser:
    """Recursive descent over the token list."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def fail(self, tok: Token, expected: str) -> GateError:
        found = "end of expression" if tok.kind == "end" else repr(tok.text)
        return GateError(self.text, tok.pos, f"expected {expected}, found {found}")

    def keyword(self, word: str) -> bool:
        tok = self.peek()
        if tok.kind == "word" and tok.text.lower() == word:
            self.i += 1
            return True
        return False

    def parse(self) -> Node:
        node = self.or_expr()
        if self.peek().kind != "end":
            raise self.fail(self.peek(), "'and', 'or' or the end of the expression")
        return node

    def or_expr(self) -> Node:
        args = [self.and_expr()]
        while self.keyword("or"):
            args.append(self.and_expr())
        return args[0] if len(args) == 1 else BoolOp("or", tuple(args))

    def and_expr(self) -> Node:
        args = [self.not_expr()]
        while self.keyword("and"):
            args.append(self.not_expr())
        return args[0] if len(args) == 1 else BoolOp("and", tuple(args))

    def not_expr(self) -> Node:
        if self.keyword("not"):
            return Not(self.not_expr())
        tok = self.peek()
        if tok.kind == "punct" and tok.text == "(":
            self.take()
            node = self.or_expr()
            close = self.take()
            if close.text != ")":
                raise self.fail(close, "')'")
            return node
        return self.comparison()

    def comparison(self) -> Node:
        tok = self.take()
        name = tok.text.lower()
        if tok.kind != "word" or name not in METRICS:
            raise self.fail(tok, f"a metric ({', '.join(METRICS)})")
        op = self.peek()
        if op.kind != "op":
            if name in BOOL_METRICS:
                return Flag(name)
            raise self.fail(op, f"a comparison (< <= > >= == !=) after {tok.text!r}")
        self.take()
        if op.text == "=":
            raise GateError(self.text, op.pos, "'=' is not a comparison; did you mean '=='")
        return Compare(name, op.text, self.value(name))

    def value(self, metric: str) -> float:
        tok = self.take()
        if tok.kind != "num":
            raise self.fail(tok, "a number" + (" with a unit (e.g. 20ms)" if metric in DURATION_METRICS else ""))
        number: float = int(tok.text) if tok.text.isdigit() else float(tok.text)  # `events` compare exactly
        suffix = self.peek()
        scale = seconds_per(suffix.text) if suffix.kind == "word" else None
        if scale is not None:
            self.take()
            if metric not in DURATION_METRICS:
                raise GateError(self.text, suffix.pos, f"{metric} is not a duration; drop the unit {suffix.text!r}")
            return number * scale
        if suffix.kind == "word" and suffix.text.lower() not in ("and", "or"):
            raise self.fail(suffix, "a unit (ns, us, µs, ms, s)")
        if suffix.kind == "punct" and suffix.text == "%":
            self.take()
            if metric not in SHARE_METRICS:
                raise GateError(self.text, suffix.pos, f"{metric} is not a share; '%' is only for tail.* metrics")
            return number / 100.0
        if metric in DURATION_METRICS and number != 0:
            raise GateError(self.text, suffix.pos, f"expected a unit (ns, us, µs, ms, s) after {tok.text!r}")
        return number


@dataclass(frozen=True)
class Gate:
    """One parsed `--fail-if` expression."""

    text: str
    node: Node

    def metrics(self) -> list[str]:
        """Metric names the expression uses, in order, without repeats."""
        out: list[str] = []
        stack: list[Node] = [self.node]
        while stack:
            n = stack.pop(0)
            if isinstance(n, (Compare, Flag)):
                if n.metric not in out:
                    out.append(n.metric)
            elif isinstance(n, Not):
                stack.insert(0, n.arg)
            else:
                stack[0:0] = list(n.args)
        return out


def parse_gate(text: str) -> Gate:
    """Parse one expression; raises GateError with position and what was expected."""
    if not text.strip():
        raise GateError(text, 0, "expected a gate expression, found nothing")
    return Gate(text, _Parser(text).parse())


def stream_metrics(hist: StreamHistory, source: SourceTotals | None = None) -> tuple[dict[str, float], set[str]]:
    """Every gate metric of one stream's whole history: the numbers the report prints (a rebinned stream's
    percentiles from its own buckets, its time from the source's sum: `source`); and the metrics that are a lower
    bound only (a percentile in the open top bucket, as the report's `open`), which compare as that bound."""
    t = hist.totals()
    diag = stream_diagnosis(hist)
    total = stream_total(t, source, hist.stream.unit, hist.n)
    at_least = {PERCENTILE_NAMES[q] for q in PERCENTILES if f"{PERCENTILE_NAMES[q]}_s" in total.get("open", ())}
    values: dict[str, float] = {PERCENTILE_NAMES[q]: _value(total[f"{PERCENTILE_NAMES[q]}_s"]) for q in PERCENTILES}
    values.update({
        "mean": _value(total["mean_s"]), "time": total["time_s"], "events": t.events,
        "rate": t.events / t.duration_s if t.duration_s else math.nan,
        "bands": float(len(diag.bands)), "bimodal": float(diag.bimodal),
        "tail.time_share": diag.tail.time_share if diag.tail else math.nan,
        "tail.events_share": diag.tail.events_share if diag.tail else math.nan,
    })
    return values, at_least


def _value(v: float | None) -> float:
    """A report number as a gate compares it (the report's null is NaN)."""
    return math.nan if v is None else float(v)


def evaluate(node: Node, values: dict[str, float]) -> bool:
    """True when the expression holds (the gate fails); NaN compares false."""
    if isinstance(node, Compare):
        v = values[node.metric]
        return not math.isnan(v) and OPS[node.op](v, node.value)
    if isinstance(node, Flag):
        return bool(values[node.metric])
    if isinstance(node, Not):
        return not evaluate(node.arg, values)
    results = (evaluate(a, values) for a in node.args)
    return all(results) if node.op == "and" else any(results)


def show(metric: str, value: float, at_least: bool = False) -> str:
    """A metric value for a failure line (`at_least`: a lower bound only, `≥value`)."""
    if math.isnan(value):
        return "-"  # undefined: no events (or no time)
    if metric in DURATION_METRICS:
        return percentile_duration(value, at_least, long_units=True)
    if metric in SHARE_METRICS:
        return f"{100 * value:.1f}%"
    if metric in BOOL_METRICS:
        return "true" if value else "false"
    return format_number(value, 4)


def check_gates(acc: Accumulator, gates: list[Gate]) -> list[str]:
    """One line per (gate, stream) that fails; empty when every gate holds."""
    if not gates:
        return []
    if not acc.streams:
        return [f"gate failed: {g.text!r}: no stream to check (no data)" for g in gates]
    failures: list[str] = []
    for hist in acc.streams.values():  # each read a chunk of columns at a time: no dense matrix of a long stream
        values, at_least = stream_metrics(hist, acc.sources.get(hist.stream))
        name = clean_text(hist.stream.label) or "(no label)"
        for gate in gates:
            if evaluate(gate.node, values):
                shown = ", ".join(f"{m} = {show(m, values[m], m in at_least)}" for m in gate.metrics())
                failures.append(f"gate failed: {gate.text!r} on stream {name!r}: {shown}")
    return failures


def gates_to_json(gates: list[Gate]) -> list[dict[str, Any]]:
    """The expressions as given (for reports that want to list them)."""
    return [{"expression": g.text, "metrics": g.metrics()} for g in gates]
