"""The exposition parser (text format 0.0.4 and OpenMetrics 1.0), classic histograms out of it, and the differ."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from latencymap.sources.prometheus.exposition import parse_exposition
from latencymap.sources.prometheus.series import (
    Reading,
    diff_readings,
    histogram_readings,
    labels_key,
    parse_matcher,
    selector,
)

TEXT = r"""# HELP rpc_seconds RPC latency with a \\ backslash and a \n newline.
# TYPE rpc_seconds histogram
rpc_seconds_bucket{le="0.5",path="C:\\dir",q="say \"hi\"\nbye"} 3 1700000000123
  rpc_seconds_bucket { le = "+Inf" , path="C:\\dir",q="say \"hi\"\nbye" , }	7
rpc_seconds_sum{path="C:\\dir",q="say \"hi\"\nbye"} 2.5e0
rpc_seconds_count{path="C:\\dir",q="say \"hi\"\nbye"} 7

# a plain comment
up NaN
temperature -Inf -1000
"""

OPENMETRICS = """# TYPE rpc histogram
# UNIT rpc milliseconds
# HELP rpc RPC latency.
rpc_bucket{le="1.0",note="a # that is {not} an exemplar"} 2 # {trace_id="abc",span="x y"} 0.7 1700000000.5
rpc_bucket{le="+Inf",note="a # that is {not} an exemplar"} 5 1700000001.25 # {trace_id="def"} 9.5
rpc_sum{note="a # that is {not} an exemplar"} 21.0
rpc_count{note="a # that is {not} an exemplar"} 5
rpc_created{note="a # that is {not} an exemplar"} 1.7e9
# EOF
"""


def test_text_format_escapes_blanks_and_timestamps() -> None:
    page = parse_exposition(TEXT)
    assert page.errors == [] and not page.openmetrics
    assert page.types == {"rpc_seconds": "histogram"}
    assert page.helps["rpc_seconds"] == "RPC latency with a \\ backslash and a \n newline."
    first, inf = page.samples[0], page.samples[1]
    assert first.labels == {"le": "0.5", "path": "C:\\dir", "q": 'say "hi"\nbye'}
    assert first.timestamp == pytest.approx(1700000000.123) and first.value == 3
    assert inf.labels == {**first.labels, "le": "+Inf"} and inf.value == 7 and inf.timestamp is None
    up, temperature = page.samples[-2], page.samples[-1]
    assert math.isnan(up.value) and temperature.value == -math.inf and temperature.timestamp == -1.0
    assert [s.line for s in page.samples] == [3, 4, 5, 6, 9, 10]


def test_openmetrics_units_exemplars_timestamps_and_eof() -> None:
    page = parse_exposition(OPENMETRICS, openmetrics=True)
    assert page.errors == [] and page.eof
    assert page.units == {"rpc": "milliseconds"}
    bucket, inf = page.samples[0], page.samples[1]
    assert bucket.labels["note"] == "a # that is {not} an exemplar"
    assert bucket.exemplar is not None and bucket.exemplar.labels == {"trace_id": "abc", "span": "x y"}
    assert bucket.exemplar.value == 0.7 and bucket.exemplar.timestamp == 1700000000.5
    assert inf.timestamp == 1700000001.25 and inf.exemplar is not None and inf.exemplar.timestamp is None
    readings, problems = histogram_readings(page.samples, "rpc")
    assert problems == []
    (reading,) = readings.values()
    assert reading.bounds == (1.0, math.inf) and reading.cumulative.tolist() == [2, 5] and reading.total == 21.0


def test_bad_lines_are_named_and_the_rest_is_kept() -> None:
    text = 'ok_total 1\nbroken{le="1" 2\nvalue_missing{a="b"}\nunderscore 1_000\nok2 3 notatime\nfine 4\n'
    page = parse_exposition(text)
    assert [s.name for s in page.samples] == ["ok_total", "fine"]
    assert page.bad_lines == 4
    assert page.errors[0].startswith("line 2: expected ',' or '}'")
    assert page.errors[1].startswith("line 3: expected '<value> [timestamp]'")
    assert "line 4: expected a number" in page.errors[2]
    assert "line 5: expected a timestamp in integer milliseconds" in page.errors[3]


def test_openmetrics_is_strict_about_eof() -> None:
    cut = parse_exposition(OPENMETRICS.replace("# EOF\n", ""), openmetrics=True)
    assert not cut.eof and len(cut.samples) == 5
    after = parse_exposition(OPENMETRICS + "late 1\n", openmetrics=True)
    assert after.eof and after.errors == ["line 10: text after '# EOF'"]
    text_exemplar = parse_exposition('x_bucket{le="1"} 1 # {a="b"} 1\n')
    assert text_exemplar.samples == [] and "exemplar" in text_exemplar.errors[0]


def _registry(label_value: str) -> CollectorRegistry:
    registry = CollectorRegistry()
    h = Histogram("lat_seconds", "Latency.", ["who"], registry=registry, buckets=[0.01, 0.1, 1.0])
    child = h.labels(label_value)
    for v in (0.005, 0.05, 0.05, 0.5, 5.0):
        child.observe(v, exemplar={"trace_id": "t1"} if v == 0.5 else None)
    return registry


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=20))
def test_label_values_round_trip_through_prometheus_client(value: str) -> None:
    registry = _registry(value)
    for page in (parse_exposition(generate_latest(registry).decode()),
                 parse_exposition(generate_openmetrics(registry).decode(), openmetrics=True)):
        assert page.errors == []
        readings, problems = histogram_readings(page.samples, "lat_seconds")
        assert problems == [] and list(readings) == [(("who", value),)]
        reading = readings[(("who", value),)]
        assert reading.bounds == (0.01, 0.1, 1.0, math.inf)
        assert reading.cumulative.tolist() == [1, 3, 4, 5]
        assert reading.total == pytest.approx(5.605)


def test_prometheus_client_exemplar_is_read() -> None:
    page = parse_exposition(generate_openmetrics(_registry("a")).decode(), openmetrics=True)
    exemplars = [s.exemplar for s in page.samples if s.exemplar is not None]
    assert len(exemplars) == 1 and exemplars[0].labels == {"trace_id": "t1"} and exemplars[0].value == 0.5


def test_readings_refuse_what_is_no_histogram() -> None:
    text = """h_bucket{le="1",a="x"} 5
h_bucket{le="2",a="x"} 3
h_count{a="x"} 3
h_bucket{le="1",a="y"} 1
h_bucket{le="2",a="y"} 4
h_count{a="y"} 6
h_bucket{le="1",a="z"} 1
h_bucket{le="+Inf",a="z"} 2
h_count{a="z"} 3
h_bucket{le="oops",a="w"} 1
"""
    readings, problems = histogram_readings(parse_exposition(text).samples, "h")
    assert list(readings) == [(("a", "y"),)]
    assert readings[(("a", "y"),)].bounds == (1.0, 2.0, math.inf)  # no +Inf bucket: _count stands for it
    assert readings[(("a", "y"),)].cumulative.tolist() == [1, 4, 6]
    assert any('h{a="x"}: bucket counts decrease with le' in p for p in problems)
    assert any('h{a="z"}: _count 3 differs from the le="+Inf" bucket 2' in p for p in problems)
    assert any('h{a="w"}: line 10: bucket without a numeric le label' in p for p in problems)


def test_matchers_follow_promql() -> None:
    labels = {"method": "GET", "path": "/api/users"}
    assert parse_matcher("method=GET").matches(labels)
    assert not parse_matcher("method!=GET").matches(labels)
    assert parse_matcher("path=~/api/.*").matches(labels)
    assert not parse_matcher("path=~api").matches(labels)  # anchored, as in PromQL
    assert parse_matcher("path!~/admin.*").matches(labels)
    assert parse_matcher("code=").matches(labels)  # a missing label is the empty string
    with pytest.raises(ValueError, match="LABEL=VALUE"):
        parse_matcher("no-operator")
    with pytest.raises(ValueError, match="bad regular expression"):
        parse_matcher("a=~(")
    m = parse_matcher('q=say "hi"\\now')
    assert selector("x", [m, parse_matcher("b!~c.*")]) == 'x{q="say \\"hi\\"\\\\now",b!~"c.*"}'


def _reading(cumulative: list[int], total: float) -> Reading:
    return Reading((0.1, 1.0, math.inf), np.asarray(cumulative, dtype=np.int64), total)


def test_differ_counts_the_increase_and_takes_a_reset_as_a_restart() -> None:
    first, second = _reading([1, 4, 5], 2.0), _reading([3, 9, 12], 6.5)
    counts, spent, reset = diff_readings(first, second)  # type: ignore[misc]
    assert counts.tolist() == [2, 3, 2] and spent == 4.5 and not reset
    restarted = _reading([0, 2, 2], 0.8)  # the process restarted: 2 observations since
    counts, spent, reset = diff_readings(second, restarted)  # type: ignore[misc]
    assert counts.tolist() == [0, 2, 0] and spent == 0.8 and reset
    only_inf_down = _reading([3, 9, 11], 7.0)  # one counter down is enough to call it a reset
    counts, _, reset = diff_readings(second, only_inf_down)  # type: ignore[misc]
    assert reset and counts.tolist() == [3, 6, 2]


def test_a_bucket_of_its_own_that_went_down_is_a_reset_though_no_cumulative_counter_did() -> None:
    """Per bucket 1, 4, 0 then 3, 2, 2: every `le` counter went up or stayed (1 -> 3, 5 -> 5, 5 -> 7), yet the second
    bucket lost 2 events, which a running process cannot: it restarted (7 events since, as client_golang's text
    page, without `_created`, shows a process that came back busy). Each bucket clipped at 0 counted 4 events where
    `_count` rose by 2 and the restart held 7."""
    before, after = _reading([1, 5, 5], 2.0), _reading([3, 5, 7], 0.9)
    counts, spent, reset = diff_readings(before, after)  # type: ignore[misc]
    assert reset and counts.tolist() == [3, 2, 2] and spent == 0.9


def test_a_plus_inf_bucket_read_apart_from_the_others_that_lags_them_is_no_reset() -> None:
    """Micrometer writes `+Inf` as its `_count`, read apart from the finite buckets (before them for a timer): an event
    recorded in between is in a finite bucket, not yet in `+Inf`, whose own count then reads 1 lower (0 then -1 here)
    though every counter rose. That is no restart (it counted the whole run again in one column): the finite buckets'
    own counts rose, and `+Inf`'s own dip is no event."""
    before, after = _reading([2, 5, 5], 2.0), _reading([3, 8, 7], 2.9)
    counts, spent, reset = diff_readings(before, after)  # type: ignore[misc]
    assert not reset and counts.tolist() == [1, 2, 0] and spent == pytest.approx(0.9)


def test_differ_across_new_bounds_counts_a_restart_and_cannot_diff_counts_that_went_on() -> None:
    before = _reading([3, 9, 12], 6.5)
    redeployed = Reading((0.05, 0.2, math.inf), np.asarray([1, 4, 4]), 0.4)  # _count 12 -> 4: restarted
    counts, spent, reset = diff_readings(before, redeployed)  # type: ignore[misc]
    assert reset and counts.tolist() == [1, 3, 0] and spent == 0.4
    assert diff_readings(before, Reading((0.05, 0.2, math.inf), np.asarray([5, 14, 15]), 7.0)) is None


def test_labels_key_drops_le_and_sorts() -> None:
    assert labels_key({"le": "1", "b": "2", "a": "1"}) == (("a", "1"), ("b", "2"))


def test_a_byte_order_mark_is_dropped_and_lines_skipped_unread_are_still_named_when_garbage() -> None:
    text = '\ufeffh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 3\n<html>oops\nother_metric{a="b"} 1\nh_count 3\n'
    page = parse_exposition(text, keep=lambda line: "h_" in line)
    assert [s.name for s in page.samples] == ["h_bucket", "h_bucket", "h_count"]  # line 1 kept
    assert page.errors == ["line 3: expected a sample line, got '<html>oops'"]  # other_metric: skipped, no error
    readings, _ = histogram_readings(page.samples, "h")
    assert readings[()].cumulative.tolist() == [2, 3]


def test_tokens_exemplars_and_blank_lines_are_cut_at_spaces_and_tabs_only() -> None:
    """`str.split()` and `str.strip()` also took `\\x1c`-`\\x1f`, `\\x85` and U+2028 for blanks: an exemplar's
    `0.5\\x1c1.7e9` was read as a value and a time, a line of `\\x85` as an empty one, `histogram\\x1f` as a type."""
    text = '# TYPE a histogram\x1f\na_bucket{le="1"} 2 # {t="x"} 0.5\x1c1.7e9\n\x85\na_count\t3 \n# EOF\n'
    page = parse_exposition(text, openmetrics=True)
    assert page.types == {"a": "histogram\x1f"}
    assert [(s.name, s.value) for s in page.samples] == [("a_count", 3)]
    assert page.errors == ["line 2: expected a number, got '0.5?1.7e9'", "line 3: expected a metric name, got '?'"]
