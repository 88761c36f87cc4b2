"""Neutralise text from input before any view shows it, and keep credentials out of what is written."""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from typing import Any

# C0 and C1 controls and DEL, plus Unicode bidi overrides; tab becomes a space.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
MAX_TEXT = 200


def clean_text(text: str, limit: int = MAX_TEXT) -> str:
    """`text` with control and escape characters shown as `?`, tabs as spaces, at most `limit` chars."""
    text = _CONTROL.sub("?", text.replace("\t", " "))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def clean_label(text: str) -> str:
    """A stream label from input as `clean_text` shows it, but not cut: what tells streams apart is all kept
    (`StreamNames` cuts it for showing)."""
    return _CONTROL.sub("?", text.replace("\t", " "))


def cut_label(text: str, limit: int = MAX_TEXT) -> str:
    """`text` in at most `limit` characters, cut in the middle as `cut_middle` cuts it (2/5 head, 3/5 tail): the end
    of a label, where streams differ (`…/disk1/read`, `[key]`), stays visible, and cutting it again to a narrower
    width (any view's `cut_middle`) keeps one ellipsis."""
    if len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 5
    return f"{text[:head]}…{text[len(text) - (limit - 1 - head):]}"


class StreamNames:
    """Stream names for the labels of one input, at most `limit` characters each: a long label is cut in the
    middle (`cut_label`), and a cut name that another label already has becomes `NAME (2)`, `NAME (3)`, ...
    instead of merging two streams. `scope` is what else tells streams apart (datasource and unit): only labels
    of the same scope compete for a name. `key` is for inputs whose distinct streams can have one label (tags that
    differ only in control characters, untagged lines named as a tag): each (label, key) is its own stream. An
    input gives a key with every label or with none."""

    def __init__(self, limit: int = MAX_TEXT) -> None:
        self.limit = limit
        self._names: dict[tuple[str, Hashable, object], str] = {}  # (label, key, scope) -> its name, when remembered
        self._owners: dict[tuple[str, object], tuple[str, Hashable]] = {}  # (name, scope) -> whose: (label, key)

    def name(self, label: str, scope: object = None, key: Hashable = None) -> str:
        """The name of `label` (already cleaned): itself when short and no other stream's name took it."""
        known = self._names.get((label, key, scope))
        if known is not None:
            return known
        whose = (label, key)
        if len(label) <= self.limit and (label, scope) not in self._owners:
            if key is None and "…" not in label:
                return label  # other short labels never meet a cut name, and need no remembering
            self._owners[(label, scope)] = whose  # a cut label's name could be this (every cut has a `…`), or a key's
        name, k = cut_label(label, self.limit), 1
        while self._owners.setdefault((name, scope), whose) != whose:
            k += 1
            suffix = f" ({k})"
            name = cut_label(label, self.limit - len(suffix)) + suffix
        self._names[(label, key, scope)] = name
        return name


def clean_reprs(text: str, values: Iterable[str]) -> str:
    """`text` with the Python repr of each of `values` that holds a control character (`'x\\x1b[2J'`, as click and
    `{value!r}` write an option's value), and of each such character alone, written as `clean_text` shows text
    (`'x?[2J'`): one rule, `?`, for whatever came from outside."""
    for value in values:
        if _CONTROL.search(value) is None:
            continue
        for part in (value, *dict.fromkeys(_CONTROL.findall(value))):
            text = text.replace(repr(part), f"'{clean_label(part)}'")
    return text


#: A message line on stderr: long enough for a path and its reason, or a summary naming several inputs.
MAX_MESSAGE = 4000


def clean_message(text: str, limit: int = MAX_MESSAGE) -> str:
    """A message for the terminal (stderr), each of its lines through `clean_text`: paths, labels and whatever
    else came from input cannot move the cursor, clear the screen, set the title or reorder the text, while the
    message's own line breaks stay."""
    return "\n".join(clean_text(line, limit) for line in str(text).split("\n"))


def cell_width(text: str) -> int:
    """Terminal cells `text` takes: wide (East Asian) characters two, combining marks none, others one."""
    if text.isascii():
        return len(text)
    import unicodedata  # only for text that needs it

    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def cut_middle(text: str, width: int) -> str:
    """`text` in at most `width` terminal cells, cut in the middle: stream names that differ only at the end (label
    sets, the input a stream was set apart for) stay apart."""
    if cell_width(text) <= width:
        return text
    head = within_cells(text, (width - 1) * 2 // 5)
    tail = within_cells(text[::-1], width - 1 - cell_width(head))[::-1]
    return f"{head}…{tail}"


def within_cells(text: str, cells: int) -> str:
    """The longest start of `text` that takes at most `cells` terminal cells."""
    if text.isascii():
        return text[:cells]
    used = 0
    for k, c in enumerate(text):
        used += cell_width(c)
        if used > cells:
            return text[:k]
    return text


def excerpt(text: str, limit: int = 60) -> str:
    """A short, quoted, safe excerpt of an input line for an error message."""
    return repr(clean_text(text.strip(), limit))


#: A word that, last in a name (`--hf-token`, `DB_PASSWORD`, `apiKey`, `?wallet_password=`), says its value is a
#: secret; the long ones also glued to what comes before them (`PGPASSWORD`, `--authtoken`). A name that holds one
#: elsewhere (`--max-tokens`, `--key-column`, `--monkey`, `--pass-through`, `--api-key-env`) is no secret's.
_SECRET_WORD = re.compile(
    r"[a-z0-9]*(?:passw(?:or)?d|passphrase|secret|token|(?:api|secret|access)key|credentials?)|pass|pwd|key|auth", re.I)
#: Where the words of a name meet: any other character, or a change of case (`hfToken`, `SSLKey`).
_WORD_BREAK = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
#: `[scheme:]//` opening a URL-style address (Easy Connect's `tcp://`, `//host`, http URLs), after leading blanks.
_URL_START = re.compile(r"\s*(?:[A-Za-z][A-Za-z0-9+.-]*:)?//")
#: Easy Connect's `host:port/` (or a list of `host:port`) at the start, after `/@` or `user@` (no password): no
#: unquoted user name has a `:`, so the `/` and any `@` after it belong to the service and its `?name=value` parameters.
_EASY_CONNECT = re.compile(r'(?:(?:/|[^"/:@]*)@)?[^"/@]*:\d+/')
#: The `@` before a descriptor: `user/password@(DESCRIPTION=...)`.
_AT_DESCRIPTOR = re.compile(r"@\s*\(")
#: A URL's userinfo (`scheme://user:password@`, `//token@` at the start), blanks included: cut from every value a
#: header shows (group 1 is what stays).
_URL_USERINFO = re.compile(r"((?:^\s*|[A-Za-z][A-Za-z0-9+.-]*:)//)[^/@]*@")
#: A `?name=value` or `&name=value` parameter: (name, value).
_PARAM = re.compile(r"(?<=[?&])([^=&#\s]*)=([^&#\s]*)")


def dsn_credentials(dsn: str) -> tuple[int, int] | None:
    """The span of the credential part of an Oracle connect string, through its `@`; None when it has none.

    A credential part is `user/password@` (SQL*Plus and python-oracledb) or `[scheme:]//user:password@`, with quotes,
    blanks, tabs or line breaks anywhere in it and leading blanks included (they are counted in the span). The `@`
    that ends it is the one opening a descriptor that runs to the end (`@(DESCRIPTION=...)`), else the last one; an
    `@` inside double quotes (a quoted password) does not count while the quotes pair up. None for a descriptor,
    a tnsnames alias, Easy Connect `[//]host[:port]/service[?params]` (a `/` or `@` after `host:port/` is the
    service's or a parameter's), `user@...` (no password) and `/@alias` (external authentication).
    """
    if dsn.lstrip().startswith("("):
        return None
    url = _URL_START.match(dsn)
    start = url.end() if url else 0
    at = _credential_at(dsn[start:])
    if at < 0:
        return None
    head = "".join(dsn[start:start + at].split())
    if head == "/" or ("/" not in head and ":" not in head) or _EASY_CONNECT.match(head):
        return None
    return (start if url else 0, start + at + 1)


def _credential_at(text: str) -> int:
    """Index in `text` of the `@` that would end a credential part (see `dsn_credentials`), -1 when none: the first
    `@(` when a descriptor with balanced parentheses runs from it to the end, else the last `@`. An `@` or a
    parenthesis inside double quotes does not count, unless the quotes do not pair up."""
    paired = text.count('"') % 2 == 0
    inside, last, first, depth, broken = False, -1, -1, 0, False
    for i, c in enumerate(text):
        if c == '"' and paired:
            inside = not inside
        elif inside:
            continue
        elif first >= 0:  # after the first `@(`: a descriptor must run to the end
            last = i if c == "@" else last
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                broken |= depth < 0
            elif depth == 0 and not c.isspace():
                broken = True
        elif c == "@":
            last = i
            if _AT_DESCRIPTOR.match(text, i):
                first = i
    return first if first >= 0 and not broken and depth == 0 else last


def strip_credentials(text: str) -> str:
    """`text` without a connect string's credential part (`dsn_credentials`) and without any URL's userinfo."""
    span = dsn_credentials(text)
    if span is not None:
        text = text[: span[0]] + text[span[1]:]
    return _URL_USERINFO.sub(r"\1", text)


def redact_address(text: str) -> str:
    """A connect string or URL as headers and messages show it: the credential part cut out (`strip_credentials`)
    and the value of every `?name=value` parameter that `_secret_name` names a secret (`wallet_password=`, `token=`)
    replaced by ***."""
    return _PARAM.sub(lambda m: f"{m[1]}=***" if _secret_name(m[1]) else m[0], strip_credentials(text))


_OPTION_NAME = re.compile(r"-{0,2}[A-Za-z_][\w.-]*")


def _secret_name(name: str) -> bool:
    """Whether a name (an option, a variable, a parameter) says its value is a secret: its last word is a
    `_SECRET_WORD`, but not `auth` after another word, which names a way to authenticate (`token_auth=OCI_TOKEN`,
    `--external-auth`, `--no-auth`). Where or how one is found (`--token-file`, `wallet_location=`) is no secret."""
    words = [word for word in _WORD_BREAK.split(name) if word]
    if not words or _SECRET_WORD.fullmatch(words[-1]) is None:
        return False
    return len(words) == 1 or words[-1].lower() != "auth"


def _secret_option(name: str) -> bool:
    """Whether a word is an option or variable name (`--hf-token`, `DB_PASSWORD`) that says its value is a secret."""
    return _OPTION_NAME.fullmatch(name) is not None and _secret_name(name)


def redact_command(command: str) -> str:
    """A command line as recordings keep it: the value of every secret-looking option or variable (`--password=x`,
    `--hf-token x`, `API_KEY=x`) replaced by *** and each word's credentials and secret parameters cut out as
    `redact_address` cuts them (`postgresql://bob:pw@db/t`)."""
    out: list[str] = []
    hide = False
    for word in command.split(" "):
        name, eq, _ = word.partition("=")
        if hide and word and not word.startswith("-"):
            word = "***"
        elif eq and _secret_option(name):
            word = f"{name}=***"
        else:
            word = redact_address(word)
        hide = (hide and not word) or (word.startswith("-") and not eq and _secret_option(word))
        out.append(word)
    return " ".join(out)


def secret_parameters(text: str) -> list[str]:
    """The names of the `?name=value` parameters of `text` that carry a secret (a password, a token, a key): those
    `redact_address` hides (`_secret_name`); the ones that name where or how one is found (`wallet_location=`,
    `token_auth=OCI_TOKEN`) are not among them."""
    return [match[1] for match in _PARAM.finditer(text) if _secret_name(match[1])]


def safe_options(options: dict[str, Any]) -> dict[str, Any]:
    """Command options fit for a header: secrets dropped, credentials cut out of DSNs/URLs (and URL query values)."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if _secret_name(key):
            continue
        if isinstance(value, str):
            value = redact_address(value)
        elif isinstance(value, tuple):
            value = list(value)
        if isinstance(value, (str, int, float, bool, list)) or value is None:
            out[key] = value
    return out
