from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from latencymap import plugins
from latencymap.plugins import load_registry


def test_shipped_formats_are_discovered_through_entry_points() -> None:
    registry = load_registry()
    assert "pylatencymap" in registry.formats
    assert not registry.errors, registry.errors


def test_one_broken_plugin_does_not_hide_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    eps = [
        EntryPoint("broken", "latencymap.sources.does_not_exist:Nope", plugins.ENTRY_POINT_GROUP),
        EntryPoint("notaplugin", "latencymap.core.units:format_duration", plugins.ENTRY_POINT_GROUP),
        EntryPoint("pylatencymap", "latencymap.sources.pylatencymap:PyLatencyMapFormat", plugins.ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr(plugins, "entry_points", lambda group: eps)
    registry = load_registry()
    assert list(registry.formats) == ["pylatencymap"]
    assert "ModuleNotFoundError" in registry.errors["broken"]
    assert "neither a Source nor a TextFormat" in registry.errors["notaplugin"]
