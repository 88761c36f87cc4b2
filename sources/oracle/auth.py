"""Credentials for the Oracle source: never from argv; from the environment, a prompt, or external auth."""

from __future__ import annotations

import getpass
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import NoReturn, TextIO

from latencymap.core.sanitize import clean_text, dsn_credentials, secret_parameters

from .errors import OracleError, shown_dsn

PASSWORD_ENV = "LATENCYMAP_ORACLE_PASSWORD"
#: `--dsn` from the environment: a connect string whose parameters hold a secret (`wallet_password=`) goes here.
DSN_ENV = "LATENCYMAP_ORACLE_DSN"
#: `user/password` as --user (blanks included); `/` alone is not refused.
_USER_PASSWORD = re.compile(r"/\s*\S")


class Secret:
    """A password that never shows itself in repr, str, logs or tracebacks."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The password, for the driver only."""
        return self._value

    def __repr__(self) -> str:
        return "Secret(***)"

    __str__ = __repr__

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Secret cannot be pickled")


def check_no_inline_password(dsn: str, user: str | None) -> None:
    """Refuse `scott/tiger@db` style arguments, quoted or with blanks (`dsn_credentials`): argv is visible to every
    local user, and a refused DSN never reaches a recording or a message."""
    for option, carries in (("--dsn", dsn_credentials(dsn or "") is not None),
                            ("--user", bool(_USER_PASSWORD.search(user or "")))):
        if carries:
            raise OracleError(f"{option} must not carry a password (argv is visible in the process list): "
                              f"remove it, and set {PASSWORD_ENV} or type it at the prompt")


def check_no_secret_parameters(dsn: str) -> None:
    """Refuse a `--dsn` given in argv whose parameters carry a secret (`?wallet_password=...`, `&token=...`): argv is
    visible to every local user; the environment (`DSN_ENV`) is not."""
    names = secret_parameters(dsn or "")
    if names:
        shown = ", ".join(f"{clean_text(name, 40)}=" for name in dict.fromkeys(names))
        raise OracleError(f"--dsn must not carry {shown} on the command line (argv is visible in the process list): "
                          f"set the connect string in {DSN_ENV} instead and leave --dsn out; the database password "
                          f"goes in {PASSWORD_ENV} or at the prompt")


def resolve_password(user: str | None, dsn: str, *, external_auth: bool,
                     environ: Mapping[str, str] | None = None, stdin: TextIO | None = None,
                     prompt: Callable[[str], str] = getpass.getpass) -> Secret | None:
    """The password: None with external auth, else the environment variable, else a prompt on a terminal."""
    if external_auth:
        return None
    environ = os.environ if environ is None else environ
    value = environ.get(PASSWORD_ENV)
    if value:
        return Secret(value)
    stdin = sys.stdin if stdin is None else stdin
    try:
        interactive = stdin is not None and stdin.isatty()
    except (ValueError, OSError):
        interactive = False
    if interactive:
        try:
            typed = prompt(f"Oracle password for {clean_text(f'{user}@{shown_dsn(dsn)}')}: ")
        except (EOFError, KeyboardInterrupt):
            typed = ""
        if typed:
            return Secret(typed)
        raise OracleError("no password typed; set it in " + PASSWORD_ENV + " or use --external-auth")
    raise OracleError(f"no password: set {PASSWORD_ENV}, run on a terminal to be prompted, "
                      "or use --external-auth (wallet or OS authentication)")
