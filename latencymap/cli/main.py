"""The `latencymap` group: `view` by default, the built-in commands, and one subcommand per source plugin.

Commands are imported when they run: the group knows their names and one-line help from `BUILTIN` (a test holds
it to the commands' own docstrings), and a source's from its plugin class, so `--version`, `--help` and
`report` load only what they use.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from latencymap import __version__
from latencymap.cli.common import EXAMPLES, meant_options, registry
from latencymap.cli.tuning import no_collection
from latencymap.core.sanitize import clean_message, clean_reprs

#: Built-in commands: name -> (module, attribute, help as the command's docstring gives it).
BUILTIN: dict[str, tuple[str, str, str]] = {
    "view": ("latencymap.cli.view", "view", "Show INPUT files (or stdin) as heat maps."),
    "replay": ("latencymap.cli.replay", "replay", "Replay a recording (or any input) at its original pace. The format "
               "options (`--unit`, `--interval`, `--datasource`, ...) read an input that is not a recording; a "
               "recording carries how it was read."),
    "report": ("latencymap.cli.report", "report", "Analyse whole INPUTs (default stdin), or a source run to its end "
               "(`report spark LOG`), with no UI."),
    "diff": ("latencymap.cli.diff", "diff", "Compare two inputs: per-bucket share changes, percentile deltas, bands "
             "that appeared or vanished. The format options (`--datasource oracle`, `--event NAME`, ...) apply to "
             "both inputs."),
    "profile-export": ("latencymap.cli.profile_export", "profile_export", "Export the profile samples a recording "
                       "holds (recorded with --profile PID), without the TUI."),
}


def _load(name: str) -> click.Command | None:
    """The command `name`: a built-in imported now, or a source plugin's subcommand built now; None if unknown."""
    if name in BUILTIN:
        module, attr, _ = BUILTIN[name]
        with no_collection():
            command: click.Command = getattr(importlib.import_module(module), attr)
        return command
    src = registry().sources.get(name)
    if src is None:
        if name in registry().errors:
            raise click.UsageError(f"the plugin {name!r} failed to load: {registry().errors[name]}")
        return None
    from latencymap.cli.source_commands import source_command

    return source_command(src)


class _Commands(dict[str, click.Command]):
    """The group's commands: those not yet used are loaded when looked up (`main.commands["report"]`)."""

    def __missing__(self, name: str) -> click.Command:
        command = _load(name)
        if command is None:
            raise KeyError(name)
        self[name] = command
        return command


#: Where the group's context keeps the command line it was given (`_clean_errors`).
_ARGS = "latencymap.args"
#: Set in the context's (shared) meta when `view` runs as the default command (`latencymap --plain FILE`).
_DEFAULT_VIEW = "latencymap.default_view"


@contextmanager
def _clean_errors(args: list[str]) -> Iterator[None]:
    """click's own errors (a bad option value, no such option, a path that does not exist) with what came from the
    command line `args` cleaned, as every other message on stderr is: a file name with escape sequences stays text,
    and a value quoted as Python writes it (`'x\\x1b'`) shows its control characters as `?` too."""
    try:
        yield
    except click.ClickException as err:
        if isinstance(err, click.NoSuchOption) and err.ctx is not None:  # click's guess knows neither case nor
            # prefixes: `--Version` read "Did you mean '--duration'?"
            setattr(err, "possibilities", meant_options(err.option_name, _options(err.ctx)))  # noqa: B010 (Final)
        values = [*args, *(arg.split("=", 1)[1] for arg in args if arg.startswith("-") and "=" in arg)]
        message = clean_message(clean_reprs(err.message, values))
        setattr(err, "message", message)  # noqa: B010 (`message` is Final to type checkers)
        raise


def _options(ctx: click.Context) -> list[str]:
    """The options of `ctx`'s command; with the group's (`--version`) where it is `view` run as the default command,
    where they are given the same way (`latencymap --version`)."""
    names = [name for param in ctx.command.get_params(ctx) if isinstance(param, click.Option)
             for name in (*param.opts, *param.secondary_opts)]
    if ctx.meta.get(_DEFAULT_VIEW) and ctx.parent is not None:
        names += _options(ctx.parent)
    return names


def _misplaced_options(args: list[str], commands: set[str]) -> str | None:
    """The command line in the right order when options come before a subcommand (`latencymap --strict report
    FILE`, where `report` would be read as an input file of the default `view`); None when they do not. A first
    argument that is a file or a directory that exists is an input, whatever its name."""
    if (not args or not args[0].startswith("-") or args[0] in ("-", "--", "--help", "-h", "--version")
            or not commands.intersection(args)):
        return None
    view = _load("view")
    assert view is not None
    from latencymap.cli.options import pylatencymap_abbreviations

    try:
        full = pylatencymap_abbreviations(view, args)  # `--num 5` takes a value as `--num_records 5` does
    except click.UsageError:
        full = args
    takes_value = {name for p in view.params if isinstance(p, click.Option) and not (p.is_flag or p.count)
                   for name in p.opts}
    at = 0
    while at < len(args) and args[at].startswith("-") and args[at] not in ("-", "--"):
        at += 2 if full[at] in takes_value else 1
    if at >= len(args) or args[at] not in commands or os.path.exists(args[at]):
        return None
    import shlex

    return shlex.join(["latencymap", args[at], *args[:at], *args[at + 1:]])


class LazyGroup(click.Group):
    """Built-in commands imported on use, a subcommand per source plugin; runs `view` when the first argument is
    not a command, so `latencymap FILE` works."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands(self.commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(BUILTIN) | set(self.commands)
        names |= set(registry().sources.names())
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        try:
            return self.commands[cmd_name]
        except KeyError:
            return None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list, from the table and the plugins' summaries (no command is imported for it)."""
        names = self.list_commands(ctx)
        sources = registry().sources
        listed = set(sources.names())
        helps = {name: BUILTIN[name][2] if name in BUILTIN else sources.summary(name) if name in listed
                 else self.commands[name].help or "" for name in names}
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, click.Command(name, help=helps[name]).get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
        broken = registry().errors
        if broken:
            with formatter.section("Plugins that failed to load"):
                formatter.write_dl(sorted(broken.items()))

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        with _clean_errors(list(args)):
            ctx = super().make_context(info_name, list(args), parent, **extra)
        ctx.meta[_ARGS] = list(args)
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        with _clean_errors(ctx.meta.get(_ARGS, [])):
            return super().invoke(ctx)

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """The command, and its arguments with PyLatencyMap's abbreviated options written in full (`--num 60`)."""
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not ctx.resilient_parsing:  # completing a command line: as it is typed
            from latencymap.cli.options import pylatencymap_abbreviations

            rest = pylatencymap_abbreviations(command, rest, click.Context(command, info_name=name, parent=ctx))
        return name, command, rest

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        commands = {*BUILTIN, *registry().sources.names()}
        right = _misplaced_options(args, commands)
        if right is not None:
            raise click.UsageError(f"options go after the subcommand: {right}", ctx)
        if not args or (args[0] not in BUILTIN and args[0] not in ("--help", "-h", "--version")
                        and args[0] not in self.commands and args[0] not in registry().sources
                        and args[0] not in registry().errors):
            args = ["view", *args]
            ctx.meta[_DEFAULT_VIEW] = True
        return super().parse_args(ctx, args)


@click.group(cls=LazyGroup, epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="latencymap")
def main() -> None:
    """Latency heat maps over time: frequency (how often) and intensity (how much time).

    Reads PyLatencyMap records (and every format below) from files or stdin, or runs a
    live source. With no subcommand, shows INPUT (default stdin) in the TUI, or as plain ANSI
    frames when stdout is not a terminal or with --plain.
    """


def __getattr__(name: str) -> Any:
    """`source_command` (a subcommand for a Source class), imported when asked for, as the commands are."""
    if name == "source_command":
        from latencymap.cli.source_commands import source_command

        return source_command
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
