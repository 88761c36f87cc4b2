"""Lazily compiled regular expressions."""

from __future__ import annotations

import re

import pytest

from latencymap.core.patterns import lazy_pattern


def test_a_pattern_is_compiled_at_its_first_use_and_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[tuple[object, int]] = []
    real = re.compile

    def counting(pattern: str, flags: int = 0) -> re.Pattern[str]:
        compiled.append((pattern, flags))
        return real(pattern, flags)

    monkeypatch.setattr(re, "compile", counting)
    words = lazy_pattern(r"[a-z]+", re.IGNORECASE)
    assert compiled == []
    first = words()
    assert words() is first and compiled == [(r"[a-z]+", re.IGNORECASE)]
    assert first.fullmatch("AbC") and not first.fullmatch("a1")
    raw = lazy_pattern(rb"^\s*\{")
    assert raw().match(b" {") and not raw().match(b"x{")
