"""One subcommand per installed source plugin (`latencymap bpf`, `latencymap spark`, ...)."""

from __future__ import annotations

from typing import Any

import click

from latencymap.cli.common import EXIT_FAIL, guarded, guarded_source, source_epilog, tell
from latencymap.cli.options import VIEW_NAMES, view_options
from latencymap.cli.running import prepare, show
from latencymap.flow.pipeline import diffed
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
            limits = {k: view_kw.get(k) for k in ("count", "duration")}
            source = src(**kw, **(limits if src.own_limits else {}))
            if src.own_limits:  # it stops at a whole round itself
                view_kw.update(count=None, duration=None)
            from latencymap.profiling.session import profile_session

            with profile_session(view_kw) as profile:
                flow = prepare(diffed(guarded_source(source.items(), src.name), src.name), {**view_kw, **kw},
                               source=src.name, profile=profile)
                return show(flow, {**view_kw, "screen_delay": 0.0}, profile, analysis=getattr(source, "analysis", None))

        guarded(body)

    cmd = click.Command(src.name, callback=view_options(callback), help=src.summary,
                        epilog=source_epilog(src.examples))
    cmd.params = [*src.params(), *getattr(callback, "__click_params__", [])[::-1]]
    return cmd
