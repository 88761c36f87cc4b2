from __future__ import annotations

import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from latencymap import plugins
from latencymap.plugins import load_registry


def in_a_fresh_process(code: str) -> str:
    """Run `code` in a new interpreter (nothing imported yet); its stdout. Fails with its stderr."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_shipped_formats_are_discovered_through_entry_points() -> None:
    registry = load_registry()
    assert "pylatencymap" in registry.formats
    assert sorted(registry.formats) == sorted(f.name for f in plugins.SHIPPED_FORMATS.values())  # each one loads
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
    in_a_fresh_process(code)


def test_a_shipped_source_that_fails_to_load_is_left_out_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "latencymap.sources.does_not_exist:BpfSource"
    eps = [EntryPoint("bpf", value, plugins.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(plugins, "entry_points", lambda group: eps)
    monkeypatch.setitem(plugins.SHIPPED_SOURCES, value, ("bpf", "BPF"))
    registry = load_registry()
    assert "bpf" not in registry.sources
    assert list(registry.sources) == []
    assert "ModuleNotFoundError" in registry.errors["bpf"]


def test_shipped_formats_table_holds_what_each_format_class_says() -> None:
    declared = {ep.value: ep.name for ep in plugins.entry_points(plugins.ENTRY_POINT_GROUP)}
    for value, facts in plugins.SHIPPED_FORMATS.items():
        name = facts.name
        assert declared.get(value) == name, f"{value} is not the entry point {name!r} in pyproject.toml"
        fmt = plugins._EntryPoint(name, value).load()
        assert issubclass(fmt, plugins.TextFormat) and fmt.name == name
        assert fmt.summary == facts.summary, f"the summary of {name} in SHIPPED_FORMATS is not the class's"
        assert fmt.priority == facts.priority, name
        assert getattr(fmt, "max_line", None) == facts.max_line, name
        claims = fmt.claims.__func__ is not plugins.TextFormat.claims.__func__  # type: ignore[attr-defined]
        assert claims == facts.claims_paths, name
        assert [p.name for p in fmt.params()] == list(facts.options), name


def test_a_shipped_formats_options_are_offered_without_importing_it() -> None:
    code = ("import sys; from latencymap.plugins import load_registry; r = load_registry(); "
            "names = [p.name for p in r.format_params()]; "
            "assert names == ['interval', 'unit', 'cumulative', 'event', 'datasource', 'time_unit'], names; "
            "assert len(r.formats.names()) == 10; "
            "assert r.formats.summary('bcc').startswith('bcc print_log2_hist'); "
            "assert r.formats.max_line(1) == 16 * 1024 * 1024; "
            "loaded = sorted(m for m in sys.modules if m.startswith('latencymap.sources.')); "
            "assert loaded == ['latencymap.sources.format_options'], loaded")
    in_a_fresh_process(code)


def test_reading_records_imports_only_the_formats_sniffing_reaches(tmp_path: Path) -> None:
    """Formats are tried from the highest priority down, each imported when reached: PyLatencyMap records are
    claimed at priority 10 (after HdrHistogram, registered first), and only Spark's format is asked for paths."""
    (tmp_path / "records.txt").write_text("".join(f"<begin record>\ntimestamp, microsec, {k}000000, t\nlabel, x\n"
                                                  f"1, {3 * k}\n<end record>\n" for k in (1, 2)))
    code = ("import sys; from latencymap.plugins import load_registry; "
            "from latencymap.flow.pipeline import input_flow; "
            f"items = list(input_flow([{str(tmp_path / 'records.txt')!r}], load_registry())); assert items; "
            "loaded = sorted(m for m in sys.modules if m.startswith('latencymap.sources.') and m.count('.') == 2); "
            "print(' '.join(loaded))")
    assert in_a_fresh_process(code).split() == ["latencymap.sources.format_options", "latencymap.sources.hdrhistogram",
                                   "latencymap.sources.pylatencymap", "latencymap.sources.spark"]


def test_formats_are_tried_in_priority_order_ties_as_registered() -> None:
    registry = load_registry()
    lazily = [f.name for f in registry.formats.by_priority()]
    classes = [registry.formats[name] for name in registry.formats.names()]  # loads them all, in entry-point order
    assert lazily == [f.name for f in sorted(classes, key=lambda f: -f.priority)]
    assert [f.name for f in load_registry().formats.by_priority(floor=0)] == [n for n in lazily if n != "raw"]
    assert [f.name for f in load_registry().formats.claimants()] == ["spark-eventlog"]


def test_a_shipped_format_that_fails_to_load_is_left_out_of_sniffing(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "latencymap.sources.does_not_exist:BccTextFormat"
    eps = [EntryPoint("bcc", value, plugins.ENTRY_POINT_GROUP),
           EntryPoint("pylatencymap", "latencymap.sources.pylatencymap:PyLatencyMapFormat", plugins.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(plugins, "entry_points", lambda group: eps)
    monkeypatch.setitem(plugins.SHIPPED_FORMATS, value, plugins.FormatFacts("bcc", "bcc text", 50,
                                                                           options=("interval",)))
    registry = load_registry()
    assert registry.formats.names() == ["bcc", "pylatencymap"] and not registry.errors  # nothing loaded yet
    assert [p.name for p in registry.format_params()] == ["interval", "datasource"]
    assert [f.name for f in registry.formats.by_priority()] == ["pylatencymap"]
    assert "ModuleNotFoundError" in registry.errors["bcc"]
    assert registry.formats.names() == ["pylatencymap"]
