from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
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
        claims = fmt.claims.__func__ is not plugins.TextFormat.claims.__func__
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


class _TallyFormat(plugins.TextFormat):
    """A third party's format: `tally, N` lines, whose reader passes over every other line (as most do)."""

    name = "tally"
    summary = "tally lines"
    markers = (plugins.DataMarker("tally line", "t", "tally,", r"^tally, [0-9]+$"),)

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return bool(head) and head[0].startswith("tally,")

    def read(self, lines: Iterable[str], name: str) -> Iterator[plugins.Item]:
        return iter(())


def test_a_third_party_formats_markers_are_looked_for_in_other_formats_inputs(tmp_path: Path) -> None:
    """Another format's data among an input's lines is said, also of a format a plugin adds (its class's `markers`),
    and a shipped format's markers are known without importing it."""
    from latencymap.core.model import Notice
    from latencymap.flow.pipeline import input_flow

    registry = load_registry()
    assert not registry.formats.waiting("tally") and "tally" not in registry.formats.names()
    registry.formats["tally"] = _TallyFormat
    assert registry.formats.markers("tally") == _TallyFormat.markers
    assert [m.unit for m in registry.formats.markers("bcc")] == ["histogram", "-j line"]
    assert registry.formats.waiting("bcc") is not None  # still not imported
    joined = tmp_path / "joined.txt"
    joined.write_text("".join(f"<begin record>\ntimestamp, microsec, {k}000000, t\nlabel, x\n1, {3 * k}\n"
                              "<end record>\n" for k in (1, 2)) + "tally, 4\ntally, 5\n")
    notes = [i.message for i in input_flow([str(joined)], registry) if isinstance(i, Notice)]
    assert any("from line 11, 2 tally lines of another format, tally (tally lines)" in n for n in notes), notes


class _SlowEntryPoint:
    """An entry point whose load takes a while (as importing a format does) and counts its calls."""

    def __init__(self, name: str, obj: object, delay: float = 0.02) -> None:
        self.name, self.value, self.obj, self.delay = name, f"tests.slow:{name}", obj, delay
        self.loads = 0
        self._count = threading.Lock()

    def load(self) -> object:
        with self._count:
            self.loads += 1
        time.sleep(self.delay)  # another thread looks the plugin up meanwhile
        if isinstance(self.obj, BaseException):
            raise self.obj
        return self.obj


def _hammer(threads: int, work: Callable[[int], object]) -> list[object]:
    """What `work(i)` gave (or raised) in each thread i of `threads` started together at a barrier."""
    barrier = threading.Barrier(threads)
    out: list[object] = [None] * threads

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = work(i)
        except Exception as err:
            out[i] = err

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(30)
    return out


class _Fmt(plugins.TextFormat):
    name = "slowfmt"
    summary = "slow"

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return False

    def read(self, lines: Iterable[str], name: str) -> Iterator[plugins.Item]:
        return iter(())

    @classmethod
    def claims(cls, path: Path) -> bool:
        return False


def _table_with(*eps: _SlowEntryPoint) -> tuple[plugins.FormatTable, dict[str, str]]:
    table, errors = plugins.FormatTable(), {}
    for ep in eps:
        table.defer(ep, plugins.TextFormat, errors, "slow", plugins.FormatFacts(ep.name, "slow", claims_paths=True))
    return table, errors


@pytest.mark.parametrize("lookup", ["getitem", "contains", "claimants", "names"])
def test_plugins_looked_up_from_many_threads_at_once_load_once_and_are_found_by_every_thread(lookup: str) -> None:
    # replay identified its input in two threads at once: one had taken 'raw' out of the waiting plugins and not
    # yet put it among the loaded ones when the other looked it up (KeyError: 'raw', exit 1 instead of 2).
    ep = _SlowEntryPoint("slowfmt", _Fmt)
    table, errors = _table_with(ep)
    work: dict[str, Callable[[int], object]] = {
        "getitem": lambda i: table["slowfmt"],
        "contains": lambda i: "slowfmt" in table,
        "claimants": lambda i: list(table.claimants()),
        "names": lambda i: table["slowfmt"] if i % 2 else table.names(),
    }
    results = _hammer(16, work[lookup])
    expected = {"getitem": _Fmt, "contains": True, "claimants": [_Fmt]}
    for got in results:
        assert not isinstance(got, BaseException), repr(got)
        if lookup == "names":
            assert got in (_Fmt, ["slowfmt"])
        else:
            assert got == expected[lookup]
    assert ep.loads == 1
    assert not errors and table.names() == ["slowfmt"] and table.waiting("slowfmt") is None


def test_a_plugin_failing_to_load_from_many_threads_at_once_is_tried_once_and_reported_once() -> None:
    bad = _SlowEntryPoint("broken", ImportError("no module named nope"))
    good = _SlowEntryPoint("slowfmt", _Fmt)
    table, errors = _table_with(bad, good)
    results = _hammer(16, lambda i: [f.name for f in table.by_priority()])
    assert results == [["slowfmt"]] * 16
    assert bad.loads == 1 and good.loads == 1
    assert errors == {"broken": "ImportError: no module named nope"}
    assert "broken" not in table and table.names() == ["slowfmt"]


def test_the_registry_identifies_inputs_from_many_threads_at_once(tmp_path: Path) -> None:
    # The real registry, every shipped format loaded lazily by 8 threads sniffing at once.
    registry = load_registry()
    results = _hammer(8, lambda i: sorted(f.name for f in registry.formats.by_priority()))
    assert results == [sorted(f.name for f in plugins.SHIPPED_FORMATS.values())] * 8
    assert not registry.errors, registry.errors


class _LinesFormat(_Fmt):
    """A format that gives a Notice per line it is handed: what its `read` sees."""

    name = "lines"
    summary = "lines"

    def read(self, lines: Iterable[str], name: str) -> Iterator[plugins.Item]:
        from latencymap.core.model import Notice

        return (Notice(line, skipped=0) for line in lines)


def test_a_formats_lines_end_at_newlines_only() -> None:
    """`read_text` cut its pieces with `str.splitlines`, which also ends a line at `\\f`, `\\x1c`, U+2028, ...: a
    label holding one split its line in two."""
    text = "a\fb\vc\x1cd\x1de\x1ef\x85g\u2028h\u2029i\nnext\r\nlast"
    assert [n.message for n in _LinesFormat().read_text(["x\n", text], "t")] == [
        "x\n", "a\fb\vc\x1cd\x1de\x1ef\x85g\u2028h\u2029i\n", "next\r\n", "last"]
