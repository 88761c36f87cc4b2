"""Decoding only the fields needed from a Spark TaskEnd line, against msgspec's whole-line decode (issue 23 item 5).

Run: .venv/bin/python bench/bench_spark_fields.py [--number 20000]

Times, per line, on the bench's generated TaskEnd line (bench_spark.py: a real Spark 4.3 ShuffleMapTask line,
3.6 KB) and on a TaskEnd line of fixtures/spark/plain, what `latencymap spark` does and the ways of reading fewer
bytes that were tried:

- whole line: the msgspec decoder latencymap uses (a Struct of the needed fields; the rest skipped, but checked
  as JSON), to a SparkTask;
- msgspec's floor: the same line decoded into a Struct with no fields (skipping and checking only);
- cut: the line without its middle (Task Info's accumulables and Task Executor Metrics, ~2.1 KB): the bytes before
  `,"Accumulables":[`, a `}`, and the last `,"Task Metrics":{` to the end, decoded by msgspec as one object;
  once with the cut made (the locating, `rfind` and copies counted) and once decoding the prepared bytes only;
- bytes only: every needed key found with `bytes.find` from the last position, in Spark's order, each value
  parsed strictly (digits, `true`/`false`, a string without escapes), no JSON parser. Without the nesting checks
  a real one needs: a lower bound of its cost.

Every reader's SparkTask is checked against the whole-line decoder's. Best of 5 rounds (readers take turns); µs per
line and the ratio to the whole-line decode (below 1: faster). Needs msgspec and orjson. No assertions about speed;
no network.
"""

from __future__ import annotations

import argparse
import json
import timeit
from collections.abc import Callable
from functools import partial
from typing import Any

import msgspec
from bench_common import machine
from bench_spark import FIXTURE, event_lines

from latencymap.sources.spark.parse import SparkTask, _msgspec_decoder, task_of
from latencymap.sources.spark.taskend_struct import NO_METRICS, Metrics

ACCUMULABLES = b',"Accumulables":['
TASK_METRICS = b',"Task Metrics":{'
INT, FLOAT, TEXT, FLAG = range(4)
#: (key, kind) in the order Spark writes them; the SparkTask argument each fills is its position here.
FIELDS = [(b'"Stage ID":', INT), (b'"Stage Attempt ID":', INT), (b'"Reason":', TEXT), (b'"Task ID":', INT),
          (b'"Index":', INT), (b'"Attempt":', INT), (b'"Launch Time":', INT), (b'"Executor ID":', TEXT),
          (b'"Host":', TEXT), (b'"Speculative":', FLAG), (b'"Getting Result Time":', INT),
          (b'"Finish Time":', INT), (b'"Failed":', FLAG), (b'"Killed":', FLAG),
          (b'"Executor Deserialize Time":', FLOAT), (b'"Executor Run Time":', FLOAT),
          (b'"Executor CPU Time":', FLOAT), (b'"JVM GC Time":', FLOAT), (b'"Result Serialization Time":', FLOAT),
          (b'"Fetch Wait Time":', FLOAT), (b'"Shuffle Write Time":', FLOAT)]
#: SparkTask's arguments in FIELDS order.
ORDER = [0, 1, 12, 2, 3, 4, 5, 7, 8, 11, 13, 6, 9, 10, 17, 14, 15, 16, 18, 19, 20]


def bytes_only(line: bytes) -> SparkTask:
    """The needed values found and parsed with bytes operations only (ValueError where one is not as expected)."""
    find, pos = line.find, 0
    values: list[Any] = []
    for key, kind in FIELDS:
        at = find(key, pos)
        if at < 0 or line[at - 1] not in b"{,":
            raise ValueError(key)
        pos = at + len(key)
        if kind == TEXT:
            if line[pos] != 0x22:
                raise ValueError(key)
            end = find(b'"', pos + 1)
            raw = line[pos + 1:end]
            if b"\\" in raw:
                raise ValueError(key)
            values.append(raw.decode())
            pos = end + 1
        elif kind == FLAG:
            if line.startswith(b"true", pos):
                values.append(True)
                pos += 4
            elif line.startswith(b"false", pos):
                values.append(False)
                pos += 5
            else:
                raise ValueError(key)
        else:
            end = find(b",", pos)  # in Spark's order a comma follows every number read
            token = line[pos:end]
            if not token.isdigit() or (token[0] == 0x30 and len(token) > 1):
                raise ValueError(key)
            values.append(int(token) if kind == INT else float(token))
            pos = end
    args: list[Any] = [None] * len(values)
    for k, v in zip(ORDER, values, strict=True):
        args[k] = v
    return SparkTask(*args)


# taskend_struct's Info and Reason with every field required: the cut must not lose one unnoticed.
class Info(msgspec.Struct, kw_only=True, gc=False):
    task_id: int = msgspec.field(name="Task ID")
    index: int = msgspec.field(name="Index")
    attempt: int = msgspec.field(name="Attempt")
    launch: int = msgspec.field(name="Launch Time")
    finish: int = msgspec.field(name="Finish Time")
    executor: str = msgspec.field(name="Executor ID")
    host: str = msgspec.field(name="Host")
    getting: int = msgspec.field(name="Getting Result Time")
    failed: bool = msgspec.field(name="Failed")
    killed: bool = msgspec.field(name="Killed")
    speculative: bool = msgspec.field(name="Speculative")


class Reason(msgspec.Struct, gc=False):
    reason: str = msgspec.field(name="Reason")


class Cut(msgspec.Struct, kw_only=True, gc=False):
    """A TaskEnd without its middle: every field before the cut required."""

    stage: int = msgspec.field(name="Stage ID")
    stage_attempt: int = msgspec.field(name="Stage Attempt ID")
    end_reason: Reason = msgspec.field(name="Task End Reason")
    info: Info = msgspec.field(name="Task Info")
    metrics: Metrics = msgspec.field(name="Task Metrics")


def cut_decoder() -> tuple[Callable[[bytes], SparkTask], Callable[[bytes], bytes], Callable[[bytes], SparkTask]]:
    """(decode a line with its middle cut out, make that cut, decode an already cut line)."""
    decode = msgspec.json.Decoder(Cut).decode

    def cut(line: bytes) -> bytes:
        at = line.find(b"[") - len(ACCUMULABLES) + 1
        if at <= 0 or not line.startswith(ACCUMULABLES, at):
            raise ValueError("no accumulables")
        metrics = line.rfind(TASK_METRICS, at)
        if metrics < 0 or line.find(b"[", at + len(ACCUMULABLES), metrics) >= 0:
            raise ValueError("no Task Metrics")
        return line[:at] + b"}" + line[metrics:]

    def task(cut_line: bytes) -> SparkTask:
        return task_of(decode(cut_line), NO_METRICS)

    return lambda line: task(cut(line)), cut, task


def interleaved(fns: list[Callable[[], object]], number: int, repeat: int = 5) -> list[float]:
    """Best µs per call of each, the readers taking turns round after round (a change of load hits all alike)."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            best[k] = min(best[k], timeit.timeit(fn, number=number) / number * 1e6)
    return best


def main() -> None:
    """Time each reader on both lines and print µs per line and ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--number", type=int, default=20_000, help="calls per repeat")
    args = p.parse_args()
    import orjson

    print(f"machine: {machine()}")
    whole = _msgspec_decoder()
    assert whole is not None
    floor: Callable[[bytes], object] = msgspec.json.Decoder(type("Nothing", (msgspec.Struct,), {})).decode
    with_cut, make_cut, decode_cut = cut_decoder()
    generated = next(line for line in event_lines(1) if '"SparkListenerTaskEnd"' in line).encode()
    fixture = next(line for line in FIXTURE.read_bytes().splitlines() if b'"SparkListenerTaskEnd"' in line)
    for name, line in (("bench's generated TaskEnd line", generated), ("fixture TaskEnd line", fixture)):
        expected = whole(line)
        prepared = make_cut(line)
        assert with_cut(line) == expected == bytes_only(line) == decode_cut(prepared), name
        json.loads(line)  # a JSON line
        print(f"{name}: {len(line):,} bytes ({len(prepared):,} after the cut)")
        readers: list[tuple[str, Callable[[], object]]] = [
            ("whole line (latencymap)", partial(whole, line)), ("msgspec's floor, no fields", partial(floor, line)),
            ("cut, made and decoded", partial(with_cut, line)), ("cut, decoding only", partial(decode_cut, prepared)),
            ("bytes only, no JSON parser", partial(bytes_only, line)),
            ("orjson.loads (a dict)", partial(orjson.loads, line))]
        took = interleaved([fn for _, fn in readers], args.number)
        for (what, _), t in zip(readers, took, strict=True):
            print(f"  {what:28s} {t:6.2f} µs  {t / took[0]:4.2f}x the whole-line decode")


if __name__ == "__main__":
    main()
