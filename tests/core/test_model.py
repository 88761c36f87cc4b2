"""The run helpers of core/model: rows grouped by stream."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from latencymap.core.model import StreamId, rows_by_stream

STREAMS = [StreamId("a"), StreamId("b"), StreamId("c", "oracle", "microsec")]


def test_interleaved_stretches_of_one_stream_join_one_group() -> None:
    a, b, _ = STREAMS
    groups = rows_by_stream([a, a, b, a, StreamId("a"), b])  # an equal StreamId that is another object joins too
    assert groups == {a: [0, 1, 3, 4], b: [2, 5]}
    assert list(groups) == [a, b]


@given(st.lists(st.sampled_from(range(len(STREAMS))), max_size=40), st.booleans())
def test_groups_match_a_plain_grouping(picks: list[int], copies: bool) -> None:
    streams = [StreamId(*vars_of(STREAMS[i])) if copies else STREAMS[i] for i in picks]
    expected: dict[StreamId, list[int]] = {}
    for row, stream in enumerate(streams):
        expected.setdefault(stream, []).append(row)
    assert rows_by_stream(streams) == expected


def vars_of(stream: StreamId) -> tuple[str, str, str]:
    """A StreamId's fields, to build an equal one that is another object."""
    return stream.label, stream.datasource, stream.unit
