from __future__ import annotations

import json

import pytest

from latencymap.core.json_input import TOO_DEEP, json_input


def test_json_nested_too_deeply_is_a_value_error_as_any_undecodable_input() -> None:
    """json.loads raises RecursionError for 2,000 levels of `[` (a line of 4 KB); readers catch ValueError."""
    deep = "[" * 2000 + "]" * 2000
    with pytest.raises(RecursionError):
        json.loads(deep)
    for data in (deep, deep.encode()):
        with pytest.raises(ValueError, match=TOO_DEEP):
            json_input(data)
    with pytest.raises(json.JSONDecodeError):
        json_input("{")
    with pytest.raises(UnicodeDecodeError):
        json_input(b"\xff\xfe\xfa")
    assert json_input(b'{"a": [1]}') == {"a": [1]}
