"""The README's commands as a newcomer types them."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import click
import pytest

from latencymap.analysis import synthetic
from latencymap.cli.common import VIEW_EXAMPLES
from latencymap.cli.main import BUILTIN, main
from latencymap.cli.report import report_source_options

ROOT = Path(__file__).resolve().parents[1]


def test_the_first_command_draws_the_oracle_sample_as_oracle_data() -> None:
    """Its last step (the first picture a newcomer sees) read PyLatencyMap's Oracle sample as bpf: every row one
    octave too slow, and a warning to pass `--datasource oracle` as the first thing on stderr."""
    first = re.search(r"```bash\n(.*)\n", (ROOT / "README.md").read_text()).group(1)
    draw = shlex.split(first.split(" && ")[-1])
    assert draw[0] == ".venv/bin/latencymap"
    r = subprocess.run([str(ROOT / draw[0]), *draw[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "datasource: oracle" in r.stdout
    # the truth: 1,237,243 Oracle waits whose mean, at 0.75 of each bucket's upper bound, is 11.25 ms (22.5 as bpf)
    assert re.search(r"Overall: 5\.77k events/s  mean 11\.3ms ", r.stdout), r.stdout[-600:]


#: A fence's language for which its lines are commands to check (a bare fence may hold commands or output).
SHELL = ("bash", "sh", "")


class Example(NamedTuple):
    """A `latencymap` command of the README: its arguments, and the file piped into it with `cat FILE |`."""

    args: list[str]
    stdin: str | None = None


def commands_in(text: str) -> tuple[list[Example], str]:
    """Every `latencymap` command of shell text, split as the shell splits it: commands joined across `\\` line ends
    and quotes left open (a bpftrace program), cut at pipes, `;`, `&&` and redirections; and what is left with a
    quote never closed (in a block of output, not commands, its lines from there)."""
    commands, pending = [], ""
    for line in text.splitlines():
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        pending += line + "\n"
        lexer = shlex.shlex(pending, posix=True, punctuation_chars=True)
        lexer.whitespace_split, lexer.commenters = True, "#"
        try:
            tokens = list(lexer)
        except ValueError:  # a quote open: the command goes on
            continue
        pending = ""
        segment: list[str] = []
        before: list[str] = []
        for token in [*tokens, ";"]:
            if set(token) <= set("();<>|&"):
                if segment and segment[0].rpartition("/")[2] == "latencymap":
                    commands.append(Example(segment[1:], before[1] if len(before) == 2 and before[0] == "cat"
                                            else None))
                before, segment = (segment if token == "|" else []), []
            else:
                segment.append(token)
    return commands, pending


def readme_commands() -> list[Example]:
    """Every `latencymap` command in the README's shell blocks (`commands_in`)."""
    commands = []
    for lang, block in re.findall(r"^```(\w*)\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S):
        if lang in SHELL:
            found, left = commands_in(block)
            assert lang == "" or not left.strip(), f"a command never ends: {left[:200]!r}"
            commands += found
    return commands


def help_examples() -> list[Example]:
    """The commands that `latencymap --help` and `view --help` give as examples."""
    return commands_in("\n".join(VIEW_EXAMPLES))[0]


def test_the_readme_commands_are_found() -> None:
    commands = readme_commands()
    assert Example(["--plain", "--once", "--datasource", "oracle", "fixtures/pylatencymap/example_latency_data.txt"]) \
        in commands
    assert Example(["report", "--format", "json", "FILE"]) in commands  # its redirection cut off
    assert Example([]) in commands  # `some_source | latencymap`
    assert Example(["prometheus", "--url", "http://localhost:9090", "--metric", "http_request_duration_seconds",
                    "--match", "job=api", "--start", "-1h", "--step", "30"]) in commands  # across a `\\` line end
    assert any(e.stdin == "fixtures/pylatencymap/example_latency_data.txt" for e in commands)
    assert len(commands) > 60


@pytest.mark.parametrize("args", [e.args for e in readme_commands()], ids=shlex.join)
def test_every_readme_command_parses_with_the_cli_options(args: list[str], monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Each example's options exist, take the values given and sit where the command takes them (`report SOURCE`'s
    own too); nothing runs."""
    invoked: list[click.Context] = []
    monkeypatch.setattr(click.Command, "invoke", lambda self, ctx: invoked.append(ctx))
    assert main.main(args, prog_name="latencymap", standalone_mode=False) in (None, 0)
    if invoked and invoked[-1].command.name == "report":
        with invoked[-1] as ctx:
            report_source_options(list(ctx.params["inputs"]))
    capsys.readouterr()


def on_fixtures(e: Example) -> bool:
    """Whether the example reads only shipped fixtures (and writes no file but a recording)."""
    named = [a for a in (*e.args, e.stdin or "") if a.startswith("fixtures/")]
    return bool(named) and not {"-o", "--output"} & set(e.args)


@pytest.mark.parametrize("e", [e for e in [*readme_commands(), *help_examples()] if on_fixtures(e)],
                         ids=lambda e: (f"cat {e.stdin} | " if e.stdin else "") + shlex.join(e.args))
def test_every_readme_command_on_fixtures_runs_quietly(e: Example, tmp_path: Path) -> None:
    """It succeeds with nothing on stderr: a warning there (the Oracle sample read as bpf, which puts every row one
    octave too slow) is what a newcomer who copies it meets first. The `--help` examples too."""
    def here(arg: str) -> str:
        return str(ROOT / arg) if arg.startswith("fixtures/") else arg

    stdin = (ROOT / e.stdin).read_text() if e.stdin else ""
    r = latencymap(*map(here, e.args), cwd=tmp_path, stdin=stdin)
    assert r.returncode == 0 and r.stderr == "", r.stderr[-2000:]
    assert r.stdout or list(tmp_path.iterdir())


def latencymap(*args: str, cwd: Path = ROOT, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`latencymap ARGS` run as a newcomer runs it, without colours."""
    return subprocess.run([sys.executable, "-m", "latencymap", *args], input=stdin, cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})


def quoted(first: str) -> list[str]:
    """The lines of the README's bare block (quoted output) that begins with `first`, each less its `...` cut."""
    block = re.search(rf"^```\n({re.escape(first)}.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
    assert block is not None, first
    return [line.strip().removesuffix("...").rstrip() for line in block.group(1).splitlines()
            if line.strip() not in ("", "...")]


def says(text: str, lines: list[str]) -> list[str]:
    """Those of `lines` with which no line of `text` begins."""
    said = [line.strip() for line in text.splitlines()]
    return [line for line in lines if not any(s.startswith(line) for s in said)]


def test_the_findings_example_is_what_the_report_says(tmp_path: Path) -> None:
    """Its `~1 ms` waits, every 10th `~80 ms`, and two 1.5 s stalls: `synthetic.dataloader`, in ns, 1 s columns."""
    s = synthetic.dataloader(0)
    path = tmp_path / "dataloader.txt"
    path.write_text("".join(f"{t:.6f} {v * 1e9:.0f}\n" for t, v in zip(s.times, s.latencies, strict=True)))
    r = latencymap("report", "--unit", "ns", "--interval", "1", str(path))
    assert r.returncode == 0, r.stderr
    assert says(r.stdout, quoted("bimodal:")) == [], r.stdout


def test_the_peers_example_is_ranks12s_report() -> None:
    r = latencymap("report", "fixtures/training/ranks12.txt")
    assert r.returncode == 0, r.stderr
    assert says(r.stdout, quoted("peers ")) == [], r.stdout


@pytest.mark.parametrize("name", [*BUILTIN, "bpf", "listen", "oracle", "prometheus", "scrape", "spark"])
def test_the_readme_names_every_option_of_every_command(name: str) -> None:
    """Each option in one of its spellings (`--num_records` for `--num-records`, `-o` for `--output`)."""
    readme = (ROOT / "README.md").read_text()
    missing = [param.opts[0] for param in main.commands[name].params if isinstance(param, click.Option)
               and not any(re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", readme)
                           for opt in (*param.opts, *param.secondary_opts) if opt not in ("-h", "--help"))]
    assert missing == [], f"latencymap {name}: options the README does not name"
