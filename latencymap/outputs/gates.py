"""Latency gates for CI: `--fail-if 'p99 > 20ms'` expressions, parsed by hand (never eval'd).

Grammar (keywords and metric names are case-insensitive)::

    gate       := or_expr
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | "(" or_expr ")" | comparison | "bimodal"
    comparison := metric op value
    op         := "<" | "<=" | ">" | ">=" | "==" | "!="
    value      := NUMBER [unit | "%"]          unit: ns us µs ms s min h day(s)

Metrics, computed over a stream's whole history:

- `p50 p90 p99 p999 mean` (durations) and `time` (total time waited): compared with a duration
  that carries its unit (`20ms`, `1.5 s`, `42.8min`, `7.73h`, `116 days`: as the report writes them); a bare `0` is
  allowed. A percentile whose rank falls in an open top bucket, its values not known (the report's `≥`, `open`), is
  only at least that bucket's low (the log2 rows' top: 2^62 of the stream's unit), or the largest finite bound of a
  source's own buckets (a Prometheus or OpenTelemetry histogram's `+Inf` bucket, when no largest value seen ends it).
  A gate then holds or not when every value from that bound up says the same (`p99 > 20ms` on `≥53,376 days`);
  otherwise it cannot tell (`p99 > 150ms` on `≥100ms`), and fails (see below).
- `events` (count), `rate` (events per second; not known for raw values read without timestamps), `bands` (number of
  latency bands): plain numbers.
- `tail.time_share`, `tail.events_share`: a fraction from 0 to 1 (`0.05`) or a percentage (`5%`; a bare number past
  1 is refused, with the percentage it may mean), of the slowest events that spend half of the time
  (`latencymap.analysis.tail`: whole buckets, then the slowest part of the next, log-uniform inside it, so that a
  small change of the input moves it little): `tail.events_share < 5%` fails when under 5% of the events spend half
  of the time; `tail.time_share` is that half, 50% by construction: no gate. Undefined (comparisons false) when the
  stream has no time, as percentiles are: an empty stream has no heavy tail.
- `bimodal`: true/false; alone it is a gate, compared it is 1/0.

Numbers within one part in 10^9 of the threshold compare equal (`REL_TOL`), so that whether `p99 >= 100us` holds does
not depend on the unit it is written in (`0.1ms`) nor on the one the source wrote (100 µs is 9.999999999999999e-05 s
in floats); `events` compare exactly.

The expression says when to fail: `--fail-if 'p99 > 20ms'` fails when p99 is above 20 ms. Every
gate is checked on every stream, and each (gate, stream) that holds is one failure line, which names the stream by
its label (with its datasource, and unit, where other streams share them) and gives each metric's value in the unit
of its threshold with the digits that tell it from the threshold (`time = 4502.37ms`, `events = 20,001`). A gate a
stream cannot tell (a percentile that is a lower bound only, a rate not known) fails too, its line saying `cannot
tell` and why: failing is safer in CI than passing unseen. A stream with no events has undefined percentiles and
mean: comparisons on them are false (use `events == 0` to fail on an empty stream). With no stream at all, every
gate fails.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from decimal import Decimal
from numbers import Integral
from typing import Any

from latencymap.analysis.summary import stream_diagnosis
from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.buckets import percentile_duration
from latencymap.core.model import StreamId
from latencymap.core.percentiles import PERCENTILE_NAMES, PERCENTILES
from latencymap.core.sanitize import clean_text
from latencymap.core.source_totals import SourceTotals
from latencymap.core.units import format_number, normalize_unit, seconds_per
from latencymap.outputs.report import stream_total

DURATION_METRICS = ("p50", "p90", "p99", "p999", "mean", "time")
NUMBER_METRICS = ("events", "rate", "bands")
SHARE_METRICS = ("tail.time_share", "tail.events_share")
BOOL_METRICS = ("bimodal",)
METRICS = DURATION_METRICS + NUMBER_METRICS + SHARE_METRICS + BOOL_METRICS
OPS = ("<", "<=", ">", ">=", "==", "!=")
#: Two numbers this close (relative) compare equal: a threshold's unit, and the unit a source wrote its values in,
#: change a float product by an ulp or two (100 us read 9.999999999999999e-05 s, and 0.1 ms 0.0001 s).
REL_TOL = 1e-9
#: A gate's duration units past seconds, as the report writes long durations (`42.8min`, `7.73h`, `116 days`).
_LONG_UNITS = {"min": 60.0, "h": 3600.0, "day": 86400.0, "days": 86400.0}
UNIT_NAMES = "ns, us, µs, ms, s, min, h, days"
#: A stream unit as a failure line names it.
UNIT_TEXT = {"sec": "s", "millisec": "ms", "microsec": "µs", "nanosec": "ns"}
_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
                    r"|(?P<word>[A-Za-zµμ_][A-Za-z0-9µμ_.]*)|(?P<op><=|>=|==|!=|<|>|=)|(?P<punct>[()%]))")


def duration_unit(name: str) -> float | None:
    """Seconds in a gate's duration unit (any spelling `seconds_per` takes, or min, h, day, days); None: not one."""
    return seconds_per(name) or _LONG_UNITS.get(name.lower())


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
    #: The unit the threshold was written in (`ms` for `msec` too, `%`; empty: none) and how many of the metric's units
    #: one is.
    unit: str = ""
    scale: float = 1.0


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
        value, unit, scale = self.value(name)
        return Compare(name, op.text, value, unit, scale)

    def value(self, metric: str) -> tuple[float, str, float]:
        """A threshold: (its value in the metric's terms: seconds, a fraction, a number; its unit; that unit's
        scale)."""
        tok = self.take()
        if tok.kind != "num":
            raise self.fail(tok, "a number" + (" with a unit (e.g. 20ms)" if metric in DURATION_METRICS else ""))
        number: float = int(tok.text) if tok.text.isdigit() else float(tok.text)  # `events` compare exactly
        suffix = self.peek()
        scale = duration_unit(suffix.text) if suffix.kind == "word" else None
        if scale is not None:
            self.take()
            if metric not in DURATION_METRICS:
                raise GateError(self.text, suffix.pos, f"{metric} is not a duration; drop the unit {suffix.text!r}")
            unit = suffix.text.lower() if suffix.text.lower() in _LONG_UNITS else UNIT_TEXT[normalize_unit(suffix.text)]
            return number * scale, unit, scale
        if suffix.kind == "word" and suffix.text.lower() not in ("and", "or"):
            raise self.fail(suffix, f"a unit ({UNIT_NAMES})")
        if suffix.kind == "punct" and suffix.text == "%":
            self.take()
            if metric not in SHARE_METRICS:
                raise GateError(self.text, suffix.pos, f"{metric} is not a share; '%' is only for tail.* metrics")
            if number > 100:
                raise GateError(self.text, tok.pos, f"{metric} is a share of at most 100%, not {tok.text}%")
            return number / 100.0, "%", 0.01
        if metric in DURATION_METRICS and number != 0:
            raise GateError(self.text, suffix.pos, f"expected a unit ({UNIT_NAMES}) after {tok.text!r}")
        if metric in SHARE_METRICS and number > 1:
            raise GateError(self.text, tok.pos, f"{metric} is a share from 0 to 1 (or 0% to 100%); did you mean "
                                                f"'{tok.text}%'")
        return number, "", 1.0


@dataclass(frozen=True)
class Gate:
    """One parsed `--fail-if` expression."""

    text: str
    node: Node

    def compares(self) -> list[Compare]:
        """The comparisons of the expression, in order."""
        return [n for n in self._nodes() if isinstance(n, Compare)]

    def _nodes(self) -> list[Node]:
        out: list[Node] = []
        stack: list[Node] = [self.node]
        while stack:
            n = stack.pop(0)
            out.append(n)
            if isinstance(n, Not):
                stack.insert(0, n.arg)
            elif isinstance(n, BoolOp):
                stack[0:0] = list(n.args)
        return out

    def metrics(self) -> list[str]:
        """Metric names the expression uses, in order, without repeats."""
        return list(dict.fromkeys(n.metric for n in self._nodes() if isinstance(n, (Compare, Flag))))


def parse_gate(text: str) -> Gate:
    """Parse one expression; raises GateError with position and what was expected."""
    if not text.strip():
        raise GateError(text, 0, "expected a gate expression, found nothing")
    return Gate(text, _Parser(text).parse())


@dataclass
class Metrics:
    """Every gate metric of one stream, as the report prints them; `at_least`: those that are a lower bound only (a
    percentile in an open top bucket, the report's `open`); `unknown`: those the stream cannot tell (`rate` of
    values read without timestamps), each with why."""

    values: dict[str, float]
    at_least: set[str]
    unknown: dict[str, str]


def stream_metrics(hist: StreamHistory, source: SourceTotals | None = None, untimed: bool = False) -> Metrics:
    """Every gate metric of one stream's whole history: the numbers the report prints (a rebinned stream's
    percentiles from its own buckets, its time from the source's sum: `source`); `untimed`: its columns carry no time
    of their own (raw values read without timestamps), so its rate is not known."""
    t = hist.totals()
    diag = stream_diagnosis(hist, source)
    total = stream_total(t, source, hist.stream.unit, hist.n)
    at_least = {PERCENTILE_NAMES[q] for q in PERCENTILES if f"{PERCENTILE_NAMES[q]}_s" in total.get("open", ())}
    values: dict[str, float] = {PERCENTILE_NAMES[q]: _value(total[f"{PERCENTILE_NAMES[q]}_s"]) for q in PERCENTILES}
    values.update({
        "mean": _value(total["mean_s"]), "time": total["time_s"], "events": t.events,
        "rate": t.events / t.duration_s if t.duration_s and not untimed else math.nan,
        "bands": float(len(diag.bands)), "bimodal": float(diag.bimodal),
        "tail.time_share": diag.tail.time_share if diag.tail else math.nan,
        "tail.events_share": diag.tail.events_share if diag.tail else math.nan,
    })
    unknown = {"rate": "no timestamps"} if untimed and t.events else {}
    return Metrics(values, at_least, unknown)


def _value(v: float | None) -> float:
    """A report number as a gate compares it (the report's null is NaN)."""
    return math.nan if v is None else float(v)


def _order(value: float, threshold: float) -> int:
    """-1, 0 or 1: `value` below, at or above `threshold`; equal within `REL_TOL` unless the value is a count (as
    Python compares an integer with a float: exactly, past 2^53 too)."""
    if isinstance(value, Integral):
        value = int(value)
    elif math.isclose(value, threshold, rel_tol=REL_TOL):
        return 0
    return int(value > threshold) - int(value < threshold)


#: Each comparison's outcome by `_order` (-1, 0, 1) of the value against the threshold.
_OUTCOMES = {"<": (True, False, False), "<=": (True, True, False), ">": (False, False, True),
             ">=": (False, True, True), "==": (False, True, False), "!=": (True, False, True)}


def compare(op: str, value: float, threshold: float, at_least: bool = False) -> bool | None:
    """Whether `value op threshold` holds; for a value that is only a lower bound (`at_least`), None where the
    values it may be (itself or more) do not all say the same."""
    order = _order(value, threshold)
    holds = _OUTCOMES[op][order + 1]
    if not at_least or all(_OUTCOMES[op][later + 1] == holds for later in range(order, 2)):
        return holds
    return None


def evaluate(node: Node, metrics: Metrics | dict[str, float]) -> bool | None:
    """True when the expression holds (the gate fails), None when the stream cannot tell (Kleene's `and`, `or`,
    `not`); an undefined metric (NaN: no events) compares false, an unknown one (`Metrics.unknown`) cannot tell."""
    m = metrics if isinstance(metrics, Metrics) else Metrics(metrics, set(), {})
    if isinstance(node, Compare):
        if node.metric in m.unknown:
            return None
        v = m.values[node.metric]
        return False if math.isnan(v) else compare(node.op, v, node.value, node.metric in m.at_least)
    if isinstance(node, Flag):
        return bool(m.values[node.metric])
    if isinstance(node, Not):
        arg = evaluate(node.arg, m)
        return None if arg is None else not arg
    results = [evaluate(a, m) for a in node.args]
    decided = (node.op == "or") if any(r is (node.op == "or") for r in results) else None
    if decided is not None:
        return decided
    return None if None in results else node.op == "and"


def show(metric: str, value: float, at_least: bool = False, against: Collection[Compare] = ()) -> str:
    """A metric value for a failure line (`at_least`: a lower bound only, `≥value`): in the unit of the thresholds
    it is compared with (`against`), with the digits that tell it from each of them where it differs."""
    if math.isnan(value):
        return "-"  # undefined: no events (or no time)
    if metric in BOOL_METRICS:
        return "true" if value else "false"
    if metric == "events":
        return f"{int(value):,}"
    written = [c for c in against if c.metric == metric and c.unit]
    if metric in SHARE_METRICS:
        return _digits(value, 0.01, "%", against)
    if metric in DURATION_METRICS:
        if at_least or not written:
            return percentile_duration(value, at_least, long_units=True)
        unit = written[0]
        return ("≥" if at_least else "") + _digits(value, unit.scale, unit.unit, against)
    return _digits(value, 1.0, "", against) if against else format_number(value, 4)


def _digits(value: float, scale: float, unit: str, against: Collection[Compare]) -> str:
    """`value` in `unit` (`scale` of the metric's units each) with 3 significant digits, or as many more as it takes
    for the text to stay on the same side of each threshold in `against` as the value is."""
    for digits in range(3, 18):
        text = f"{value / scale:.{digits}g}"
        shown = float(text) * scale
        if all(_order(shown, c.value) == _order(value, c.value) for c in against):
            break
    if "e" in text and abs(value) >= scale:  # 2e+04: 20000; 3.47e-09 stays so
        text = format(Decimal(text), "f")
    return f"{text}{' ' if unit in _LONG_UNITS and unit.startswith('day') else ''}{unit}"


def stream_names(streams: Collection[StreamId]) -> dict[StreamId, str]:
    """How a failure line names each stream: its label, with its datasource where another stream has the label, and
    its unit too where another has both."""
    labels = Counter(s.label for s in streams)
    sources = Counter((s.label, s.datasource) for s in streams)
    out: dict[StreamId, str] = {}
    for s in streams:
        name = repr(clean_text(s.label) or "(no label)")
        if labels[s.label] > 1:
            unit = f", {UNIT_TEXT.get(s.unit, s.unit)}" if sources[(s.label, s.datasource)] > 1 else ""
            name += f" ({clean_text(s.datasource)}{unit})"
        out[s] = name
    return out


def check_gates(acc: Accumulator, gates: list[Gate], untimed: Collection[StreamId] = ()) -> list[str]:
    """One line per (gate, stream) that fails, or cannot tell (a lower bound of a percentile on the wrong side of
    its threshold, a rate not known: failing is safer in CI than passing unseen); empty when every gate holds.
    `untimed`: the streams whose columns carry no time of their own (no rate)."""
    if not gates:
        return []
    if not acc.streams:
        return [f"gate failed: {g.text!r}: no stream to check (no data)" for g in gates]
    failures: list[str] = []
    names = stream_names(list(acc.streams))
    for stream, hist in acc.streams.items():  # each read a chunk of columns at a time: no dense matrix of a long stream
        m = stream_metrics(hist, acc.kept_source(hist), stream in untimed)
        for gate in gates:
            result = evaluate(gate.node, m)
            if result is False:
                continue
            against = gate.compares()
            shown = ", ".join(_shown(metric, m, against, result is None) for metric in gate.metrics())
            if result is None:
                shown = f"cannot tell: {shown}"
            failures.append(f"gate failed: {gate.text!r} on stream {names[stream]}: {shown}")
    return failures


def _shown(metric: str, m: Metrics, against: list[Compare], unsure: bool) -> str:
    """`metric = value` for a failure line, saying why where the value is a bound only or not known."""
    if metric in m.unknown:
        return f"{metric} not known ({m.unknown[metric]})"
    text = f"{metric} = {show(metric, m.values[metric], metric in m.at_least, against)}"
    return text + " (a lower bound only: in the open top bucket)" if metric in m.at_least and unsure else text


def gates_to_json(gates: list[Gate]) -> list[dict[str, Any]]:
    """The expressions as given (for reports that want to list them)."""
    return [{"expression": g.text, "metrics": g.metrics()} for g in gates]
