"""Input text is cut into lines at line ends only."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from latencymap.core.lines import text_lines

#: What `str.splitlines` also takes for a line end: each may be in a label (a process named `a\fb`).
NOT_LINE_ENDS = "\f\v\x1c\x1d\x1e\x85\u2028\u2029"


def test_only_newlines_end_a_line() -> None:
    text = "".join(f"label{c}x\n" for c in NOT_LINE_ENDS) + "last"
    assert text_lines(text) == [f"label{c}x\n" for c in NOT_LINE_ENDS] + ["last"]
    assert text_lines("a\u2028b") == ["a\u2028b"] and text_lines("\f") == ["\f"] and text_lines("\f\n") == ["\f\n"]


def test_crlf_and_a_lone_cr_end_a_line_as_python_reads_files() -> None:
    assert text_lines("a\r\nb\rc\nd\r") == ["a\r\n", "b\r", "c\n", "d\r"]
    assert text_lines("a\fb\r\n") == ["a\fb\r\n"]
    assert text_lines("") == [] and text_lines("\n\n") == ["\n", "\n"]


@given(st.lists(st.sampled_from(["a", " ", "\n", "\r", "\r\n", *NOT_LINE_ENDS]), max_size=40).map("".join))
def test_lines_end_where_a_hand_written_cut_ends_them(text: str) -> None:
    """Each line up to and with its `\\r\\n`, `\\r` or `\\n`; the rest, when there is any, last."""
    assert text_lines(text) == re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", text)
    assert "".join(text_lines(text)) == text
