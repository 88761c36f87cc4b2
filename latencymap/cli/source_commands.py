"""One subcommand per installed source plugin (`latencymap bpf`, `latencymap spark`, ...)."""

from __future__ import annotations

from typing import Any

import click

from latencymap.cli.common import EXIT_FAIL, guarded, source_epilog, tell
from latencymap.cli.options import VIEW_NAMES, view_options
from latencymap.cli.running import built, prepare, show, source_flow
from latencymap.plugins import Source


def source_command(src: type[Source]) -> click.Command:
    """A subcommand for one source plugin: its own options plus the view options."""

    def callback(**kw: Any) -> None:
        view_kw = {k: kw.pop(k) for k in list(kw) if k in VIEW_NAMES}

        def body() -> int:
            reason = src.unavailable()
            if reason:
                tell(reason, f"latencymap {src.name}")
                return EXIT_FAIL
            source = built(src, kw, view_kw)
            from latencymap.profiling.session import profile_session

            with profile_session(view_kw) as profile:
                flow = prepare(source_flow(source), {**view_kw, **kw},
                               source=src.name, profile=profile)
                return show(flow, {**view_kw, "screen_delay": 0.0}, profile, analysis=getattr(source, "analysis", None),
                            straggler_stream=getattr(source, "straggler_stream", None))

        guarded(body)

    cmd_class = ModeCommand if src.modes else click.Command
    cmd = cmd_class(src.name, callback=view_options(callback), help=src.summary, epilog=source_epilog(src.examples))
    cmd.params = [*src.params(), *getattr(callback, "__click_params__", [])[::-1]]
    if isinstance(cmd, ModeCommand):
        cmd.source = src
    return cmd


class ModeCommand(click.Command):
    """A source command whose argument picks a mode: `<name> <mode> --help` shows that mode's usage and options."""

    source: type[Source]

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        mode = next((a for a in args if a in self.source.modes), None)
        if mode is not None and any(a in ctx.help_option_names for a in args):
            click.echo(self.mode_help(ctx, mode), color=ctx.color)
            ctx.exit()
        return super().parse_args(ctx, args)

    def mode_help(self, ctx: click.Context, mode: str) -> str:
        """The help of `<name> <mode>`: its summary, the options that apply to it, and the view options."""
        summary, names = self.source.modes[mode]
        own = {p.name for p in self.source.params()}
        params: list[click.Parameter] = [p for p in self.params
                                         if isinstance(p, click.Option) and (p.name not in own or p.name in names)]
        examples = tuple(e for e in self.source.examples if f" {self.name} {mode}" in f" {e}")
        sub = click.Command(mode, params=params, help=summary, epilog=source_epilog(examples))
        with click.Context(sub, info_name=f"{ctx.info_name} {mode}", parent=ctx.parent,
                           help_option_names=ctx.help_option_names, terminal_width=ctx.terminal_width,
                           max_content_width=ctx.max_content_width) as sub_ctx:
            return sub.get_help(sub_ctx)
