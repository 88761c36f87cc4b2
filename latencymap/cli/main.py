"""The `latencymap` group: `view` by default, the built-in commands, and one subcommand per source plugin."""

from __future__ import annotations

import click

from latencymap import __version__
from latencymap.cli.common import EXAMPLES, REGISTRY
from latencymap.cli.diff import diff
from latencymap.cli.profile_export import profile_export
from latencymap.cli.replay import replay
from latencymap.cli.report import report
from latencymap.cli.source_commands import source_command
from latencymap.cli.view import view


class DefaultGroup(click.Group):
    """Runs `view` when the first argument is not a subcommand, so `latencymap FILE` works."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["view", *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="latencymap")
def main() -> None:
    """Latency heat maps over time: frequency (how often) and intensity (how much time).

    Reads PyLatencyMap records (and every format below) from files or stdin, or runs a
    live source. With no subcommand, shows INPUT (default stdin) in the TUI, or as plain ANSI
    frames when stdout is not a terminal or with --plain.
    """


for _command in (view, replay, report, diff, profile_export):
    main.add_command(_command)
for _src in REGISTRY.sources.values():
    if _src.name not in main.commands:
        main.add_command(source_command(_src))
