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


def test_shipped_sources_table_names_each_source_class_as_its_entry_point() -> None:
    from latencymap.cli.main import BUILTIN  # noqa: F401  (the CLI's own imports do not change the table)

    declared = {ep.value: ep.name for ep in plugins.entry_points(plugins.ENTRY_POINT_GROUP)}
    for value, (name, summary) in plugins.SHIPPED_SOURCES.items():
        assert declared.get(value) == name, f"{value} is not the entry point {name!r} in pyproject.toml"
        obj = plugins._EntryPoint(name, value).load()
        assert issubclass(obj, plugins.Source) and obj.name == name
        assert obj.summary == summary, f"the summary of {name} in SHIPPED_SOURCES is not the class's"


def test_shipped_sources_load_only_when_named() -> None:
    code = ("import sys; from latencymap.plugins import load_registry; r = load_registry(); "
            "assert 'stream.txt' not in r.sources; "
            "assert not any(m.startswith(('latencymap.sources.bpf.', 'latencymap.sources.oracle.', "
            "'latencymap.sources.listen', 'latencymap.sources.prometheus.')) for m in sys.modules), "
            "sorted(sys.modules); "
            "assert 'bpf' in r.sources and 'latencymap.sources.bpf.source' in sys.modules; "
            "assert sorted(r.sources.names()) == ['bpf', 'listen', 'oracle', 'prometheus', 'scrape', 'spark']; "
            "assert r.sources.summary('oracle').startswith('Oracle wait-event'); "
            "assert 'latencymap.sources.oracle.source' not in sys.modules; "
            "assert sorted(r.sources) == ['bpf', 'listen', 'oracle', 'prometheus', 'scrape', 'spark']; "
            "assert 'pylatencymap' in r.formats and not r.errors, r.errors")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_shipped_source_that_fails_to_load_is_left_out_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "latencymap.sources.does_not_exist:BpfSource"
    eps = [EntryPoint("bpf", value, plugins.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(plugins, "entry_points", lambda group: eps)
    monkeypatch.setitem(plugins.SHIPPED_SOURCES, value, ("bpf", "BPF"))
    registry = load_registry()
    assert "bpf" not in registry.sources
    assert list(registry.sources) == []
    assert "ModuleNotFoundError" in registry.errors["bpf"]
