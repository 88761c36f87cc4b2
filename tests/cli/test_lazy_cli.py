"""Commands are imported when they run; `--version`, `--help` and `report` stay clear of the views, TUI and profiler."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from importlib.metadata import entry_points as metadata_entry_points
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from latencymap.cli.common import registry
from latencymap.cli.main import BUILTIN, main
from latencymap.plugins import ENTRY_POINT_GROUP, entry_points

#: Loaded by no command that only reads and reports.
NOT_FOR_REPORT = ("latencymap.tui", "latencymap.views", "latencymap.profiling.session", "latencymap.profiling.pyspy",
                  "latencymap.outputs.exports", "latencymap.outputs.compare", "latencymap.flow.recording",
                  "latencymap.cli.view", "latencymap.cli.replay", "latencymap.cli.diff", "textual", "rich", "pyarrow",
                  "urllib.request", "ssl", "numpy.ma.")  # numpy.ma: np.median imports it (20 ms)


def loaded_after(*args: str) -> set[str]:
    """Modules loaded by `latencymap ARGS` in a fresh interpreter."""
    code = ("import sys\nfrom latencymap.cli.main import main\n"
            "try:\n    main(sys.argv[1:], prog_name='latencymap')\nexcept SystemExit:\n    pass\n"
            "print('\\n'.join(sys.modules), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    return set(r.stderr.split())


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_the_table_gives_each_builtin_commands_own_help(name: str) -> None:
    module, attr, help_text = BUILTIN[name]
    command: click.Command = getattr(importlib.import_module(module), attr)
    assert command.name == name
    assert " ".join((command.help or "").split()) == help_text


def test_help_lists_builtins_and_every_source_as_their_commands_would() -> None:
    out = CliRunner().invoke(main, ["--help"], terminal_width=100).output
    listed = [line.split()[0] for line in out.split("Commands:")[1].split("Examples:")[0].splitlines() if line.strip()]
    assert listed == sorted(set(BUILTIN) | set(registry().sources))
    group = click.Group(commands={n: main.get_command(click.Context(main), n) for n in listed})  # type: ignore[misc]
    reference = CliRunner().invoke(click.Group("latencymap", commands=group.commands), ["--help"],
                                   terminal_width=100).output
    assert out.split("Commands:")[1].split("Examples:")[0].strip() == reference.split("Commands:")[1].strip()


@pytest.mark.slow
def test_version_help_and_report_import_only_what_they_run(example_data: Path) -> None:
    version = loaded_after("--version")
    assert not {m for m in version if m.startswith(("latencymap.sources", "latencymap.analysis", "latencymap.cli.r"))}
    for args in (["--help"], ["report", "--format", "json", str(example_data)], ["report", str(example_data)]):
        loaded = loaded_after(*args)
        assert "latencymap.cli.main" in loaded
        wrong = sorted(m for m in loaded if m.startswith(NOT_FOR_REPORT))
        assert not wrong, (args, wrong)
    assert "latencymap.outputs.report" in loaded and "latencymap.outputs.gates" not in loaded
    gated = loaded_after("report", "--fail-if", "p99 > 1s", str(example_data))
    assert "latencymap.outputs.gates" in gated


@pytest.mark.slow
def test_a_report_of_one_stream_loads_no_peer_comparison_or_spelling_aid(example_data: Path) -> None:
    """Peers are two streams or more, and difflib only guesses what a mistyped option meant: a report of one stream
    loads neither; nor the epoch start-up analysis (training loops' streams only), nor the kept columns' source
    buckets (streams that carry their source's buckets only)."""
    loaded = loaded_after("report", "--format", "json", str(example_data))
    assert "latencymap.outputs.report" in loaded
    assert not {"latencymap.analysis.peers", "difflib", "latencymap.analysis.epochs",
                "latencymap.core.kept_sources"} & loaded


@pytest.mark.slow
def test_a_report_of_a_text_file_loads_no_reader_of_other_inputs(example_data: Path) -> None:
    """Spark's event-log readers (a text file is no event log by its first byte), the zstd frame reader, and the
    modules of rare paths (a shell-quoted hint, a flow cut at a duration) wait for an input that needs them; JSON
    for the JSON report."""
    unneeded = {"latencymap.sources.spark.codecs", "latencymap.sources.spark.eventlog", "latencymap.flow.zstd_frames",
                "shlex", "queue"}
    for args, also in ((["--format", "json"], set()), ([], {"json", "latencymap.outputs.json_text"})):
        loaded = loaded_after("report", *args, str(example_data))
        assert "latencymap.sources.spark.format" in loaded  # asked whether it claims the path
        assert not (unneeded | also) & loaded, (args, sorted((unneeded | also) & loaded))


@pytest.mark.slow
def test_a_plain_view_loads_no_profiler_or_metrics_server_unless_asked(example_data: Path) -> None:
    plain = loaded_after("--plain", "--once", str(example_data))
    assert "latencymap.views.plain" in plain
    unasked = ("latencymap.profiling.session", "latencymap.outputs.metrics", "http.server")
    assert not plain & set(unasked), sorted(plain & set(unasked))
    served = loaded_after("--plain", "--once", "--serve-metrics", "0", str(example_data))
    assert "latencymap.outputs.metrics" in served and "latencymap.profiling.session" not in served


def test_commands_still_run_through_the_lazy_group(example_data: Path) -> None:
    r = CliRunner().invoke(main, ["report", "--format", "json", str(example_data)])
    assert r.exit_code == 0 and json.loads(r.output)["streams"]
    r = CliRunner().invoke(main, ["--plain", "--once", str(example_data)])
    assert r.exit_code == 0 and "Frequency" in r.output
    r = CliRunner().invoke(main, ["spark", "--help"])
    assert r.exit_code == 0 and "PATH" in r.output
    r = CliRunner().invoke(main, ["nosuchcommand-or-file"])
    assert r.exit_code == 2 and "nosuchcommand-or-file" in r.output


@pytest.mark.parametrize("group", [ENTRY_POINT_GROUP, "console_scripts", "pytest11"])
def test_entry_points_read_directly_match_importlib_metadata(group: str) -> None:
    ours = sorted((e.name, e.value) for e in entry_points(group))
    theirs = sorted((e.name, e.value) for e in metadata_entry_points(group=group))
    assert ours == theirs and (group != ENTRY_POINT_GROUP or ours)
    for ep in entry_points(ENTRY_POINT_GROUP):
        assert ep.load() is next(e for e in metadata_entry_points(group=ENTRY_POINT_GROUP) if e.name == ep.name).load()


@pytest.mark.slow
def test_history_budget_on_the_command_line_drops_the_oldest_and_says_so(tmp_path: Path) -> None:
    from latencymap.core.model import StreamId
    from latencymap.protocol import format_record

    rng = np.random.default_rng(4)
    stream = StreamId("wide", "bpf", "microsec")
    path = tmp_path / "wide.txt"
    with path.open("w") as fh:
        for i in range(12_000):
            counts = np.zeros(64, dtype=np.int64)
            counts[2:60] = rng.integers(0, 1 << 30, 58)  # incompressible: about 250 bytes a column
            fh.write(format_record(stream, 1e9 + i + 1, counts, None, start=1e9 + i, per_interval=True))
    r = subprocess.run([sys.executable, "-m", "latencymap", "--plain", "--once", "--history", "1M", str(path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("memory budget (1 MiB, --history) is full") == 1
    assert "Columns: 12000" in r.stdout  # columns seen, kept or not
    bad = subprocess.run([sys.executable, "-m", "latencymap", "--plain", "--once", "--history", "lots", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "neither a memory size" in bad.stderr


def test_a_plugin_that_failed_to_load_is_named_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from latencymap import plugins
    from latencymap.cli import main as main_module

    broken = plugins.Registry(errors={"bpf": "ModuleNotFoundError: No module named 'bcc'"})
    monkeypatch.setattr(main_module, "registry", lambda: broken)
    monkeypatch.delitem(main.commands, "bpf", raising=False)  # a test before may have built the real one
    ran = CliRunner().invoke(main, ["bpf", "--help"])
    assert ran.exit_code == 2
    assert "the plugin 'bpf' failed to load: ModuleNotFoundError: No module named 'bcc'" in ran.output
    helped = CliRunner().invoke(main, ["--help"])
    assert helped.exit_code == 0
    assert "Plugins that failed to load" in helped.output and "No module named 'bcc'" in helped.output
