"""PyLatencyMap's options abbreviated as its argparse takes them (`--num` for `--num_records`), and only those."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from pylatencymap_support import need_pylatencymap

from latencymap.cli import replay as replay_module
from latencymap.cli import view as view_module
from latencymap.cli.common import registry
from latencymap.cli.main import main
from latencymap.cli.options import PYLATENCYMAP_OPTIONS, pylatencymap_abbreviations
from latencymap.cli.source_commands import source_command

AMBIGUOUS = "Ambiguous option '--m': it could be --min_bucket or --max_bucket."
DEFAULTS = {"num_records": 90, "min_bucket": -1, "max_bucket": 64, "frequency_maxval": -1, "intensity_maxval": -1,
            "screen_delay": 0.1, "debug_level": 0}


class Parsed(Exception):
    """Raised by the command's first call, carrying the options it was given."""


def parsed(monkeypatch: pytest.MonkeyPatch, *args: str) -> dict[str, Any]:
    """The parameters `latencymap ARGS` gives its command (view or replay), which then stops."""

    def stop(*_: Any) -> None:
        raise Parsed(dict(click.get_current_context().params))

    monkeypatch.setattr(view_module, "no_terminal_input", stop)
    monkeypatch.setattr(replay_module, "time_window", stop)
    result = CliRunner().invoke(main, list(args))
    assert isinstance(result.exception, Parsed), result.output
    params: dict[str, Any] = result.exception.args[0]
    return params


def usage_error(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), prog_name="latencymap")
    assert result.exit_code == 2, result.output
    return result.output


@pytest.mark.parametrize(("args", "name", "value"), [
    (["--num", "7"], "num_records", 7), (["--num=7"], "num_records", 7), (["--n", "7"], "num_records", 7),
    (["--num_rec", "7"], "num_records", 7), (["--num-rec", "7"], "num_records", 7),
    (["--mi", "3"], "min_bucket", 3), (["--min=3"], "min_bucket", 3), (["--ma", "10"], "max_bucket", 10),
    (["--max", "10"], "max_bucket", 10), (["--max_b", "10"], "max_bucket", 10),
    (["--f", "40"], "frequency_maxval", 40.0), (["--frequency_m", "40"], "frequency_maxval", 40.0),
    (["--i", "2"], "intensity_maxval", 2.0), (["--in", "2"], "intensity_maxval", 2.0),
    (["--s", "0"], "screen_delay", 0.0), (["--screen", "0.5"], "screen_delay", 0.5),
    (["--d", "1"], "debug_level", 1), (["--debug=2"], "debug_level", 2),
])
def test_view_takes_pylatencymaps_abbreviations(monkeypatch: pytest.MonkeyPatch, example_data: Path,
                                                args: list[str], name: str, value: object) -> None:
    got = parsed(monkeypatch, "--plain", *args, str(example_data))
    assert got[name] == value
    assert {k: v for k, v in got.items() if k in DEFAULTS and k != name} == {k: v for k, v in DEFAULTS.items()
                                                                            if k != name}
    assert got["inputs"] == (str(example_data),)


def test_several_abbreviations_and_the_last_one_wins(monkeypatch: pytest.MonkeyPatch, example_data: Path) -> None:
    got = parsed(monkeypatch, "--nu", "30", str(example_data), "--frequency_max=5", "--num", "40", "-d1")
    assert (got["num_records"], got["frequency_maxval"], got["debug_level"]) == (40, 5.0, 1)


@pytest.mark.parametrize("args", [["--m", "5"], ["--m=5"], ["--m"], ["--m", "--plain"]])
def test_an_ambiguous_abbreviation_is_a_usage_error_naming_the_options(example_data: Path, args: list[str]) -> None:
    out = usage_error(*args, str(example_data))
    assert out.startswith("Usage: latencymap view [OPTIONS] [INPUT]...")
    assert out.strip().endswith(f"Error: {AMBIGUOUS}")


def test_replay_abbreviates_them_too_but_its_own_max_is_its_own(monkeypatch: pytest.MonkeyPatch,
                                                                 example_data: Path) -> None:
    got = parsed(monkeypatch, "replay", "--max", "--ma", "12", "--num", "9", str(example_data))
    assert (got["as_fast"], got["max_bucket"], got["num_records"]) == (True, 12, 9)
    assert usage_error("replay", "--m", "3", str(example_data)).strip().endswith(AMBIGUOUS)


@pytest.mark.parametrize("args", [["--stri"], ["--dur", "5"], ["--pla"], ["--h"], ["--num_records_x", "5"]])
def test_latencymaps_own_options_are_not_abbreviated(example_data: Path, args: list[str]) -> None:
    assert f"No such option '{args[0]}'" in usage_error(*args, str(example_data))


def test_values_and_what_follows_a_double_dash_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    got = parsed(monkeypatch, "--record", "--nu", "--", "--num")
    assert got["record_path"] == "--nu" and got["inputs"] == ("--num",) and got["num_records"] == 90
    got = parsed(monkeypatch, "-n", "--m", "-n5")  # `-n` takes `--m` as its value (not a number: later)
    assert got["num_records"] == 5


def test_source_commands_take_them(example_data: Path) -> None:
    command = source_command(registry().sources.get("scrape"))  # type: ignore[arg-type]
    args = ["--num", "5", "http://x/metrics", "--frequency_m=3", "--interval", "1"]
    assert pylatencymap_abbreviations(command, args) == ["--num_records", "5", "http://x/metrics",
                                                         "--frequency_maxval=3", "--interval", "1"]
    with pytest.raises(click.UsageError, match=r"could be --min_bucket or --max_bucket"):
        pylatencymap_abbreviations(command, ["--m", "1"])


def test_a_misplaced_abbreviated_option_is_said_to_go_after_the_subcommand(example_data: Path) -> None:
    out = usage_error("--num", "5", "report", str(example_data))
    assert f"options go after the subcommand: latencymap report --num 5 {example_data}" in out


def test_help_is_unchanged_by_them() -> None:
    out = CliRunner().invoke(main, ["view", "--help"], terminal_width=200).output
    assert "-n, --num_records, --num-records INTEGER RANGE" in out and "--num " not in out and "--num," not in out


_PYLATENCYMAP_PARSE = """
import contextlib, io, json, sys
import LatencyMap as L
out = []
for args in json.loads(sys.argv[1]):
    L.g_params = p = L.GlobalParameters()
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            p.parse_cli(args)
    except SystemExit as stop:
        out.append([stop.code, err.getvalue()])
        continue
    out.append([p.num_latency_records, p.min_latency_bkt, p.max_latency_bkt, p.frequency_maxval,
                p.intensity_maxval, p.screen_delay, p.debug_level])
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_same_abbreviations_as_real_pylatencymap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                     example_data: Path) -> None:
    """Every prefix of every PyLatencyMap option, given to PyLatencyMap 1.3's own parser and to ours: the same
    values, or both a usage error (exit 2) saying the prefix is ambiguous."""
    target = need_pylatencymap()
    lines = [[f"{option[:end]}=3"] for option in PYLATENCYMAP_OPTIONS for end in range(3, len(option) + 1)]
    lines += [[option[:end], "5"] for option in PYLATENCYMAP_OPTIONS for end in (3, 4, 6)]
    lines = [list(args) for args in dict.fromkeys(map(tuple, lines))]
    theirs = subprocess.run([sys.executable, "-c", _PYLATENCYMAP_PARSE, json.dumps(lines)], capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(target)}, cwd=tmp_path, timeout=60)
    assert theirs.returncode == 0, theirs.stderr
    errors = 0
    for args, want in zip(lines, json.loads(theirs.stdout), strict=True):
        if len(want) == 2:  # argparse's exit code and message
            assert want[0] == 2 and "could match --min_bucket, --max_bucket" in want[1], args
            assert usage_error(*args, str(example_data)).strip().endswith(AMBIGUOUS), args
            errors += 1
            continue
        ours = parsed(monkeypatch, *args, str(example_data))
        assert [ours[k] for k in DEFAULTS] == want, args
    assert errors == 2  # `--m=3` and `--m 5`
