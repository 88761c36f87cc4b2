"""The report's JSON writer gives `json.dumps`'s text byte for byte, with or without orjson."""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.outputs import json_text
from latencymap.outputs.json_text import MIN_ROWS, dumps, number_rows

FINITE = st.floats(allow_nan=False, allow_infinity=False)
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(FINITE, min_size=1, max_size=30), min_size=1, max_size=40))
def test_rows_of_floats_are_written_as_json_dumps_writes_them(rows: list[list[float]]) -> None:
    assert number_rows(rows) == json.dumps(rows)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(FINITE, st.integers(-(2**63), 2**64 - 1), st.booleans()), min_size=1, max_size=200))
def test_flat_lists_of_numbers_too(values: list[float | int | bool]) -> None:
    assert number_rows(values) == json.dumps(values)


def test_every_decade_and_the_edges_of_repr_notation() -> None:
    rng = np.random.default_rng(2026)
    mantissa = rng.random(200_000) * 10
    exponent = rng.integers(-324, 309, 200_000).astype(float)
    with np.errstate(over="ignore", under="ignore"):
        values = mantissa * 10.0**exponent
    values = values[np.isfinite(values)]
    values[::3] *= -1
    edges = [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1e-5, -1e-5, 1.5e-5, 9.999999999999999e-05, 1e-4, 1e-6,
             1e-7, 1e-9, 1e-10, 1e15, 9999999999999998.0, 1e16, 1.7976931348623157e308, 10.00001, 100.00001]
    values = np.concatenate([values, edges, rng.random(50_000) * 1e-4, rng.random(50_000) * 1e-6]).tolist()
    rows = [values[i: i + 22] for i in range(0, len(values), 22)]
    assert number_rows(rows) == json.dumps(rows)


@given(st.lists(st.lists(ANY_FLOAT, min_size=1, max_size=5), min_size=MIN_ROWS, max_size=MIN_ROWS + 5),
       st.text(max_size=20))
@settings(max_examples=100, deadline=None)
def test_documents_with_nan_strings_and_nesting_are_written_exactly(rows: list[list[float]], label: str) -> None:
    doc = {"streams": [{"label": label, "frequency": rows, "columns": [1.5] * MIN_ROWS,
                        "episodes": [{"start": 1.0, "why": label}] * MIN_ROWS}], "n": math.pi}
    assert dumps(doc) == json.dumps(doc)


def test_a_document_holding_the_placeholder_text_is_still_written_exactly() -> None:
    rows = [[1e-5, 2.0]] * MIN_ROWS
    doc = {"a": rows, "b": "\x00latencymap-rows-0\x00", "c": rows}
    assert dumps(doc) == json.dumps(doc)


def test_values_orjson_cannot_write_exactly_fall_back() -> None:
    assert number_rows([[2**70, 1.0]] * MIN_ROWS) is None  # past 64 bits
    assert number_rows([[float("nan"), 1.0]] * MIN_ROWS) is None  # orjson would write null
    assert number_rows([["x", 1.0]] * MIN_ROWS) is None


def test_without_orjson_the_standard_writer_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "orjson", None)  # import orjson now raises ImportError
    rows = [[1e-5, 2.0]] * MIN_ROWS
    assert json_text.number_rows(rows) is None
    assert dumps({"a": rows}) == json.dumps({"a": rows})


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(ANY_FLOAT, min_size=3, max_size=3), min_size=1, max_size=MIN_ROWS + 5))
def test_numpy_arrays_are_written_as_their_lists_would_be(rows: list[list[float]]) -> None:
    arr = np.array(rows, dtype=np.float64)
    doc = {"frequency": arr, "intensity": arr[:, :0], "label": "x", "column": arr[:, 0]}
    assert dumps(doc) == json.dumps({"frequency": arr.tolist(), "intensity": [[] for _ in rows], "label": "x",
                                     "column": arr[:, 0].tolist()})


def test_arrays_in_every_decade_are_written_as_their_lists_would_be() -> None:
    rng = np.random.default_rng(2027)
    with np.errstate(over="ignore", under="ignore"):
        values = rng.random(120_000) * 10 * 10.0 ** rng.integers(-324, 309, 120_000).astype(float)
    values = values[np.isfinite(values)]
    values[::3] *= -1
    values = np.concatenate([values, [0.0, -0.0, 5e-324, 1e-5, -1e-5, 9.999999999999999e-05, 1e-4, 1e-6, 1e16,
                                      10.00001, 0.00012], rng.random(30_000) * 1e-4])
    arr = values[: len(values) // 11 * 11].reshape(-1, 11)
    assert number_rows(arr) == json.dumps(arr.tolist())


def test_numbers_below_1e_4_in_arrays_are_laid_out_from_orjsons_digits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The numbers orjson lays out unlike `repr` (0 < |x| < 1e-4, thousands of them in an intensity map) take
    orjson's digits in `repr`'s layout, in bulk: `repr` writes none of them; a layout not foreseen falls back to it."""
    rng = np.random.default_rng(11)
    values = np.concatenate([rng.random(20_000) * 10.0 ** rng.integers(-12, -3, 20_000), [5e-324, 1e-5, 2e-7]])
    values[::2] *= -1
    arr = values[: len(values) // 7 * 7].reshape(-1, 7)
    calls: list[float] = []

    def counted(value: float) -> str:
        calls.append(value)
        return repr(value)

    monkeypatch.setattr(json_text, "repr", counted, raising=False)
    assert number_rows(arr) == json.dumps(arr.tolist())
    assert not calls
    monkeypatch.setattr(json_text, "_repr_layout", lambda chars, n: False)  # unforeseen: `repr` writes each one
    assert number_rows(arr) == json.dumps(arr.tolist()) and len(calls) == np.count_nonzero(np.abs(arr) < 1e-4)


def test_matrices_of_whole_numbers_are_written_from_orjsons_integers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A frequency map over one-second columns holds whole numbers (events per second): orjson writes them as integers
    many times faster than as floats, and `.0` after each gives `json.dumps`'s text, up to the largest whole number
    `repr` writes in digits; -0.0, 1e16 and fractions are written as floats."""
    rng = np.random.default_rng(5)
    whole = rng.integers(0, 10**6, (300, 26)).astype(np.float64)
    whole[0, :4] = [0.0, 1e15, 9999999999999998.0, 2.0**53 + 2]
    for arr in (whole, whole[:, :1], whole[:1], whole[:, 3:7].copy()):
        monkeypatch.setattr(json_text, "_array_text", None)  # the floats' writer: not used
        assert number_rows(arr) == json.dumps(arr.tolist())
    monkeypatch.undo()
    for value in (-0.0, 1e16, 0.5, -3.0, 1e300):
        arr = whole.copy()
        arr[7, 5] = value
        assert number_rows(arr) == json.dumps(arr.tolist())
    assert number_rows(whole[:0]) == "[]" and number_rows(whole[:, :0]) == json.dumps(whole[:, :0].tolist())


#: Numbers at the edges of the whole-number writer: `repr`'s switch to exponents, 2**53, halves, -0.0.
EDGES = [0.0, -0.0, 1.0, 0.5, 1e15 + 0.5, 123456789012345.0, 2.0**53, 2.0**53 + 2, 9999999999999998.0, 1e16, 1.5e16,
         1e22, 2.0**63, 1e-5, 5e-324]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.data(), st.one_of(st.none(), FINITE))
def test_float_matrices_in_any_layout_are_written_as_their_lists_would_be(n: int, m: int, data: st.DataObject,
                                                                         other: float | None) -> None:
    """Whole numbers or not (`other`: any float among them), a matrix that is no C-contiguous array (a transposed
    one, a Fortran-ordered one, every other row) is written as its list would be."""
    whole = st.one_of(st.integers(0, 10**6).map(float), st.sampled_from(EDGES))
    arr = np.array(data.draw(st.lists(whole, min_size=n * m, max_size=n * m)), dtype=np.float64).reshape(n, m)
    if other is not None:
        arr[data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, m - 1))] = other
    for layout in (arr, np.asfortranarray(arr), arr.T, np.repeat(arr, 2, axis=0)[::2]):
        assert number_rows(layout) == json.dumps(layout.tolist())
        assert dumps({"m": layout}) == json.dumps({"m": layout.tolist()})


def _report_like(streams: int) -> dict:
    """A report's shape: per stream, two matrices of rows (two placeholders) among small fields."""
    rng = np.random.default_rng(streams)
    return {"streams": [{"stream": {"label": f"s{i}"}, "columns": MIN_ROWS,
                         "frequency": rng.random((MIN_ROWS, 3)), "intensity": rng.random((MIN_ROWS, 3)) * 1e-5,
                         "errors": {"skipped_records": 0, "messages": []}} for i in range(streams)],
            "errors": {"skipped_records": 0, "messages": []}}


class _CountingPattern:
    """`json_text._PLACEHOLDER`, counting the searches made with it and the characters they scan."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.calls, self.scanned = pattern, 0, 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.pattern, name)

        def counted(text: str, *args: Any) -> Any:
            self.calls += 1
            self.scanned += len(text)
            return method(text, *args)
        return counted


def _scanned_per_stream(streams: int, monkeypatch: pytest.MonkeyPatch) -> tuple[float, int]:
    """What `dumps` of a report of `streams` streams reads, per stream: the characters of every str or bytes whose
    method it calls (`text.count(key)`, `text.split(key)`, ...) plus those the placeholder search scans; and how
    many searches it made."""
    counting = _CountingPattern(json_text._PLACEHOLDER)
    monkeypatch.setattr(json_text, "_PLACEHOLDER", counting)
    doc = _report_like(streams)
    scanned = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal scanned
        if event == "c_call" and isinstance(getattr(arg, "__self__", None), (str, bytes)):
            scanned += len(arg.__self__)

    sys.setprofile(profile)
    try:
        text = dumps(doc)
    finally:
        sys.setprofile(None)
    assert text == json.dumps(json_text._plain(doc))
    return (scanned + counting.scanned) / streams, counting.calls


def test_the_work_per_stream_stays_flat_and_the_document_is_scanned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #23 (fleet hunt #5): each placeholder (two per stream) used to cost a count, a split and a join of the
    whole document, so 1000 streams took 8 min 40 s. Counted, not timed: the characters read per stream are the
    same for 10 streams as for 1000, and the text `json.dumps` writes is searched once."""
    few, searches = _scanned_per_stream(10, monkeypatch)
    assert searches == 1
    many, searches = _scanned_per_stream(1000, monkeypatch)
    assert searches == 1  # one scan, whatever the number of placeholders
    assert many < few * 1.2  # was ~100x: the whole document read per placeholder


def test_a_big_document_is_not_held_in_several_copies() -> None:
    """The peak of what `dumps` allocates is the rows' texts and the document written, about twice the document
    (the old writer held the text, its two halves and their join beside the rows: four times)."""
    import tracemalloc

    doc = _report_like(1000)
    tracemalloc.start()
    try:
        text = dumps(doc)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2.5 * len(text)
