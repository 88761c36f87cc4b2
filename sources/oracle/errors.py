"""Oracle and python-oracledb errors → one line with the remedy; which errors mean "reconnect"."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import click

from latencymap.core.lines import text_lines
from latencymap.core.sanitize import redact_address

_CODE = re.compile(r"\b(ORA|DPY|DPI|TNS)-(\d{4,5})\b")

#: The session or the network went away: reconnect with backoff.
LOST = frozenset({
    "ORA-00028", "ORA-01012", "ORA-01089", "ORA-01092", "ORA-03113", "ORA-03114", "ORA-03135",
    "ORA-12537", "ORA-12547", "ORA-12570", "ORA-25408", "DPY-1001", "DPY-4011",
})
#: Worth retrying while reconnecting (the database or listener may be restarting).
TRANSIENT = LOST | frozenset({
    "ORA-01033", "ORA-01034", "ORA-01109", "ORA-27101", "ORA-12170", "ORA-12505", "ORA-12514", "ORA-12516", "ORA-12518",
    "ORA-12519", "ORA-12520", "ORA-12521", "ORA-12526", "ORA-12527", "ORA-12528", "ORA-12541", "ORA-12543",
    "DPY-4005", "DPY-6000", "DPY-6001", "DPY-6003", "DPY-6005",
})
#: The histogram view is not there (older release) or not visible (privilege): try the other view.
VIEW_MISSING = frozenset({"ORA-00942", "ORA-00904", "ORA-04043"})

_GRANTS = ("GRANT SELECT ON SYS.GV_$EVENT_HISTOGRAM_MICRO TO {user}; GRANT SELECT ON SYS.GV_$EVENT_HISTOGRAM TO "
           "{user} (or GRANT SELECT_CATALOG_ROLE TO {user}), as a DBA")
_NETWORK = "check host, port and service in --dsn, that the listener runs (lsnrctl status) and that no firewall blocks"
REMEDIES: dict[str, str] = {
    "ORA-01017": "check --user and the password (LATENCYMAP_ORACLE_PASSWORD or the prompt), "
                 "or the wallet entry with --external-auth",
    "ORA-01005": "give a password: LATENCYMAP_ORACLE_PASSWORD, the prompt, or --external-auth",
    "ORA-28000": "the account is locked: ALTER USER {user} ACCOUNT UNLOCK, as a DBA",
    "ORA-28001": "the password has expired: change it with SQL*Plus (PASSWORD command), then retry",
    "ORA-01045": "GRANT CREATE SESSION TO {user}, as a DBA",
    "ORA-01031": _GRANTS,
    "ORA-00942": _GRANTS,
    "ORA-12541": "no listener at that address: start it (lsnrctl start), or check host and port in --dsn",
    "ORA-12514": "the listener does not know that service: check the service name in --dsn (lsnrctl services)",
    "ORA-12505": "the listener does not know that SID: use host:port/service_name in --dsn",
    "ORA-12154": "unknown alias: use host:port/service_name in --dsn, or set TNS_ADMIN to the tnsnames.ora folder",
    "ORA-12170": "connect timeout: " + _NETWORK,
    "ORA-01033": "the database is starting or stopping: wait for it to open",
    "ORA-01034": "the database is not available: start it (or check ORACLE_SID / the service)",
    "ORA-01109": "the database (or the PDB of that service) is mounted but not open: wait for it to open, or open "
                 "it (ALTER PLUGGABLE DATABASE ... OPEN, as a DBA)",
    "ORA-03113": "the connection dropped: check that the database is up, then retry",
    "ORA-03114": "not connected: check that the database is up, then retry",
    "ORA-03135": "the connection lost contact: check the network and that the database is up",
    "DPY-4011": "the database or network closed the connection: check that the database is up",
    "DPY-4026": "tnsnames.ora not found: set TNS_ADMIN, or use host:port/service_name in --dsn",
    "DPY-4027": "no TNS_ADMIN configured: set it, or use host:port/service_name in --dsn",
    "DPY-4000": "unknown alias: use host:port/service_name in --dsn, or set TNS_ADMIN to the tnsnames.ora folder",
    "DPY-4001": "give a password: LATENCYMAP_ORACLE_PASSWORD, the prompt, or --external-auth",
    "DPY-3010": "this database release needs thick mode: add --thick (Oracle Instant Client installed)",
    "DPY-3015": "this account's password verifier needs thick mode: add --thick, or reset the password",
    "DPY-6000": "the listener refused the connection: " + _NETWORK,
    "DPY-6001": "the listener does not know that service: check the service name in --dsn (lsnrctl services)",
    "DPY-6003": "the listener does not know that SID: use host:port/service_name in --dsn",
    "DPY-6005": "cannot reach the database: " + _NETWORK,
    "DPI-1047": "Oracle Client libraries not found: install Oracle Instant Client and set LD_LIBRARY_PATH, "
                "or drop --thick (thin mode needs no client)",
    "DPI-1072": "the Oracle Client library is too old: install Oracle Instant Client 19 or later",
}


class OracleError(click.ClickException):
    """The Oracle source cannot start or go on: one line with the remedy, exit code 1, no traceback."""

    exit_code = 1

    def show(self, file: object | None = None) -> None:
        click.echo(f"latencymap oracle: {self.format_message()}", err=True)


def error_codes(err: BaseException) -> list[str]:
    """Every ORA-/DPY-/DPI-/TNS- code an error carries, most specific (driver's own) first."""
    texts: list[str] = []
    for arg in getattr(err, "args", ()):
        full = getattr(arg, "full_code", None)
        if full:
            texts.append(str(full))
        texts.append(str(getattr(arg, "message", arg)))
    texts.append(str(err))
    seen: list[str] = []
    for text in texts:
        for prefix, digits in _CODE.findall(text):
            code = f"{prefix}-{digits}"
            if code not in seen:
                seen.append(code)
    return seen


def is_lost(err: BaseException) -> bool:
    """True when the error means the connection is gone (so reconnect)."""
    if any(getattr(arg, "is_session_dead", False) for arg in getattr(err, "args", ())):
        return True
    return any(code in LOST for code in error_codes(err))


def is_transient(err: BaseException) -> bool:
    """True when a failed reconnect is worth trying again later."""
    return is_lost(err) or any(code in TRANSIENT for code in error_codes(err))


def is_view_missing(err: BaseException) -> bool:
    """True for ORA-00942 and friends on the histogram query."""
    return any(code in VIEW_MISSING for code in error_codes(err))


def first_line(err: BaseException, secrets: Iterable[Any] = ()) -> str:
    """The error's first line (the driver's text), secrets redacted: before it is cut into lines (at line ends only,
    `text_lines`), so that a secret holding a line break or U+2028 is hidden whole, not cut and half shown."""
    arg = err.args[0] if getattr(err, "args", None) else err
    text = redact(str(getattr(arg, "message", arg)), secrets) or type(err).__name__
    lines = [line.strip() for line in text_lines(text) if line.strip()]
    line = lines[0] if lines else type(err).__name__
    return line + "".join(f" {extra}" for extra in lines[1:] if extra.startswith("[Errno"))  # e.g. connection refused


def redact(text: str, secrets: Iterable[Any]) -> str:
    """`text` (the driver's words, or a connect string) with every non-empty secret (a str, or a Secret) replaced by
    *** where it stands as a token of its own, not inside a longer word: a password `e` leaves `connect` alone.

    Only text from outside goes through here, never latencymap's own words (what failed, the remedy): replacing the
    password there would mangle them and, for a password that is a common word, tell it.
    """
    for secret in secrets:
        value = secret.reveal() if hasattr(secret, "reveal") else str(secret)
        if value:
            before = r"(?<!\w)" if re.match(r"\w", value[0]) else ""
            after = r"(?!\w)" if re.match(r"\w", value[-1]) else ""
            text = re.sub(before + re.escape(value) + after, "***", text)
    return text


def shown_dsn(dsn: str, secrets: Iterable[Any] = ()) -> str:
    """The connect string as messages show it, as a recording's header does (`redact_address`: the credential part
    cut out, secret parameters' values hidden), with the secrets redacted."""
    return redact(redact_address(dsn), secrets).strip()


def describe_error(err: BaseException, *, user: str | None, doing: str, secrets: Iterable[Any] = ()) -> str:
    """One line: what failed (`doing`, latencymap's words: a connect string in it goes through `shown_dsn` first),
    the driver's words (redacted), and the remedy for the first code we know."""
    line = first_line(err, secrets)
    codes = error_codes(err)
    remedy = next((REMEDIES[c] for c in codes if c in REMEDIES), None)
    if remedy is None and isinstance(err, OSError):
        remedy = _NETWORK
    who = (user or "<user>").strip() or "<user>"
    out = f"{doing}: {line}"
    if remedy:
        out += " — " + remedy.replace("{user}", who.upper())
    return " ".join(out.split())
