"""Neutralise text from input before any view shows it, and keep credentials out of what is written."""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from typing import Any

from latencymap.core.patterns import lazy_pattern

# C0 and C1 controls and DEL, the line and paragraph separators, Unicode bidi overrides, and what no XML document may
# hold (surrogates, U+FFFE, U+FFFF: an SVG report would not parse); tab becomes a space.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]")
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
    """A short, quoted, safe excerpt of an input line for an error message: blanks and line ends cut off its ends,
    not the character that made it wrong (`\\x1c`, U+2028: shown as `?`)."""
    return repr(clean_text(text.strip(" \t\r\n"), limit))


#: A word that says the value of a name holding it is a secret, wherever it stands (`--hf-token`, `DB_PASSWORD`,
#: `--hf-token-value`, `X-Api-Key`, `?wallet_password=`), also glued to what comes before it (`PGPASSWORD`,
#: `--authtoken`, `--openaiapikey`), unless the name's last word is one of `_NOT_THE_SECRET`.
_SECRET_WORD = lazy_pattern(
    r"[a-z0-9]*(?:passw(?:or)?d|passphrase|secret|token|(?:api|secret|access|private)key|credentials?|authorization"
    r"|cookie|signature)", re.I)
#: A short word that says so only last in a name (`--pass`, `MYSQL_PWD`, `DBPASS`, `--ssl-key`, `--auth`, `sig=`):
#: before another word it means something else (`--pass-through`, `--key-column`, `--auth-type`, `--api-key-env`).
_SECRET_LAST = lazy_pattern(r"[a-z0-9]*(?:pass|pwd)|key|auth|sig", re.I)
#: Last words that say a name is about where a secret is, how big or how many, or what kind (`--token-file`,
#: `--secret-name`, `--max-tokens`, `--token-budget`, `token_auth=`, `--password-stdin`): its value is no secret.
_NOT_THE_SECRET = frozenset({
    "file", "files", "path", "paths", "dir", "directory", "folder", "location", "loc", "env", "var", "variable", "name",
    "id", "ids", "url", "uri", "endpoint", "host", "prefix", "suffix", "column", "col", "field", "header", "count",
    "num", "number", "size", "len", "length", "limit", "max", "min", "budget", "ttl", "expiry", "timeout", "lifetime",
    "type", "kind", "mode", "method", "scheme", "auth", "provider", "format", "command", "cmd", "store", "ref", "arn",
    "stdin", "prompt"})
#: First words that make a name a flag saying no (`--no-password`, `--skip-auth`) or that it is asked for
#: (`--ask-vault-pass`): no value follows it.
_NEGATION = frozenset({"no", "skip", "disable", "without", "ignore", "ask"})
#: Where the words of a name meet: any other character, or a change of case (`hfToken`, `SSLKey`).
_WORD_BREAK = lazy_pattern(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
#: `[scheme:]//` opening a URL-style address (Easy Connect's `tcp://`, `//host`, http URLs), after leading blanks.
_URL_START = lazy_pattern(r"\s*(?:[A-Za-z][A-Za-z0-9+.-]*:)?//")
#: Easy Connect's `host:port/` (or a list of `host:port`) at the start, after `/@` or `user@` (no password): no
#: unquoted user name has a `:`, so the `/` and any `@` after it belong to the service and its `?name=value` parameters.
_EASY_CONNECT = lazy_pattern(r'(?:(?:/|[^"/:@]*)@)?[^"/@]*:\d+/')
#: The `@` before a descriptor: `user/password@(DESCRIPTION=...)`.
_AT_DESCRIPTOR = lazy_pattern(r"@\s*\(")
#: A URL's userinfo (`scheme://user:password@`, `//token@` at the start), blanks included: cut from every value a
#: header shows (group 1 is what stays).
_URL_USERINFO = lazy_pattern(r"((?:^\s*|[A-Za-z][A-Za-z0-9+.-]*:)//)[^/@]*@")
#: A `?name=value` or `&name=value` parameter: (name, value).
_PARAM = lazy_pattern(r"(?<=[?&])([^=&#\s]*)=([^&#\s]*)")


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
    url = _URL_START().match(dsn)
    start = url.end() if url else 0
    at = _credential_at(dsn[start:])
    if at < 0:
        return None
    head = "".join(dsn[start:start + at].split())
    if head == "/" or ("/" not in head and ":" not in head) or _EASY_CONNECT().match(head):
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
            if _AT_DESCRIPTOR().match(text, i):
                first = i
    return first if first >= 0 and not broken and depth == 0 else last


def strip_credentials(text: str) -> str:
    """`text` without a connect string's credential part (`dsn_credentials`) and without any URL's userinfo."""
    span = dsn_credentials(text)
    if span is not None:
        text = text[: span[0]] + text[span[1]:]
    return _URL_USERINFO().sub(r"\1", text)


def redact_address(text: str) -> str:
    """A connect string or URL as headers and messages show it: the credential part cut out (`strip_credentials`)
    and the value of every `?name=value` parameter that `secret_name` names a secret (`wallet_password=`, `token=`)
    replaced by ***."""
    return _PARAM().sub(lambda m: f"{m[1]}=***" if secret_name(m[1]) else m[0], strip_credentials(text))


_OPTION_NAME = lazy_pattern(r"-{0,2}[A-Za-z_][\w.-]*")


def secret_name(name: str) -> bool:
    """Whether a name (an option, a variable, a parameter, a header) says its value is a secret: its last word is a
    `_SECRET_WORD` or `_SECRET_LAST` (but not `auth` after another word, which names a way to authenticate:
    `token_auth=OCI_TOKEN`, `--basic-auth`), or another of its words is a `_SECRET_WORD` and the last one is not in
    `_NOT_THE_SECRET`; a name that starts with a `_NEGATION` is a flag."""
    words = [word.lower() for word in _WORD_BREAK().split(name) if word]
    if not words or (len(words) > 1 and words[0] in _NEGATION):
        return False
    last = words[-1]
    if _SECRET_WORD().fullmatch(last) or (_SECRET_LAST().fullmatch(last) and (len(words) == 1 or last != "auth")):
        return True
    return last not in _NOT_THE_SECRET and any(_SECRET_WORD().fullmatch(word) for word in words[:-1])


def _secret_option(name: str) -> bool:
    """Whether a word is an option or variable name (`--hf-token`, `DB_PASSWORD`) that says its value is a secret."""
    return _OPTION_NAME().fullmatch(name) is not None and secret_name(name)


#: An option whose value may be `user:password` (curl's `-u`/`--user`, `--basic-auth`, `--proxy-auth`).
_USER_OPTION = lazy_pattern(r"-u|-{0,2}(?:[A-Za-z][\w.-]*[-_.])?(?:user|auth)", re.I)
#: `user:password` (group 1 is what stays), not a URL's `scheme://`.
_USER_PASSWORD = lazy_pattern(r"([^:/@\s]*:)(?!//)(.+)", re.S)
#: `Name:` or `"Name":` opening a header or a JSON member, at the start of a word, after a character that cannot be
#: in a name, or after curl's `-H`: the name is group 1, its value starts after the match.
_HEADER = lazy_pattern(r"(?:(?<![\w-])|(?<=^-H))([A-Za-z][\w-]*)\"?:\s*")
#: `NAME=value`: the next argument, after a secret value whose words py-spy joined (`abc==` is base64, no NAME=value).
_ASSIGNMENT = lazy_pattern(r"[A-Za-z_][\w.-]*=[^=]")
#: A word that is an option even where a secret option's value is due: a long option (`--verbose`, `--lr=0.1`, `--`)
#: or one short one (`-v`). Any other word there is the value, one starting with `-` too (`--password -xyz123`):
#: getopt and click take the next word as the value whatever it starts with (argparse stops the program instead).
_OPTION_WORD = lazy_pattern(r"--(?:[A-Za-z][\w.-]*(?:=.*)?)?|-[A-Za-z]", re.S)
#: The MySQL clients: their `-p` and `--password` take the password only glued (`-ppw`, `--password=pw`).
_MYSQL = frozenset({"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mariadb",
                    "mariadb-dump"})
#: Programs whose `-p` takes the password (glued for the MySQL clients; separate for mycli and sshpass).
_P_IS_PASSWORD = _MYSQL | {"mycli", "sshpass"}
#: Programs whose bare `--password` (and a MySQL client's bare `-p`) asks for the password: the next word is not it
#: (`mysql --password -uroot db`, `psql --password -Ubob db`).
_ASKS_PASSWORD = _MYSQL | {"psql", "pg_dump", "pg_dumpall", "pg_restore", "pg_basebackup", "createdb", "dropdb",
                           "createuser", "dropuser", "vacuumdb", "reindexdb", "clusterdb", "pgbench"}


def redact_command(command: str) -> str:
    """A command line as recordings keep it: the value of every secret-looking option, variable or header
    (`--password=x`, `--hf-token x`, `API_KEY=x`, `Authorization: Bearer x`) replaced by one *** that runs to the
    next option or `NAME=value` (py-spy joins argv with blanks: a quoted value's words come apart, and whether a word
    after `API_KEY=x` was its own argument cannot be told), its first word even when it starts with `-` unless it is
    `_OPTION_WORD` (`--password -xyz123`, but `--auth-token --verbose` is a flag), the password of
    `user:password` after a user or auth option (`--basic-auth bob:***`) and of a MySQL client's `-p`, and each
    word's credentials and secret parameters cut out as `redact_address` cuts them (`postgresql://bob:pw@db/t`)."""
    out: list[str] = []
    hiding = hidden = False  # within a secret value; its *** already written
    user = p_password = asks = False  # the word before was a user option; the program takes a password after -p;
    # it asks for the password after a bare --password or -p
    for word in command.split(" "):
        if hiding and (not (word.startswith("-") or _ASSIGNMENT().match(word)) if hidden
                       else _OPTION_WORD().fullmatch(word) is None):
            if not hidden:
                out.append("***" if word else word)
                hidden = bool(word)
            continue
        hiding = hidden = False
        name, eq, value = word.partition("=")
        pair = _USER_PASSWORD().fullmatch(value if eq else word)
        header = next((m for m in _HEADER().finditer(word) if secret_name(m[1])), None)
        if eq and _secret_option(name):
            word, hiding, hidden = f"{name}=***", True, True
        elif pair and (user or (eq and _USER_OPTION().fullmatch(name))):
            word, hiding, hidden = f"{name}{eq}{pair[1]}***" if eq else f"{pair[1]}***", True, True
        elif header is not None:
            hidden = header.end() < len(word)
            word, hiding = word[:header.end()] + "***" * hidden, True
        elif p_password and word.startswith("-p") and not word.startswith("--"):
            word, hiding, hidden = word[:2] + "***" * (len(word) > 2), len(word) > 2 or not asks, len(word) > 2
        elif word.startswith("-") and not eq and _secret_option(word):
            hiding = not (asks and word == "--password")
        else:
            word = redact_address(word)
        user = not eq and _USER_OPTION().fullmatch(word) is not None
        program = word.rpartition("/")[2].removesuffix(".py")
        p_password, asks = p_password or program in _P_IS_PASSWORD, asks or program in _ASKS_PASSWORD
        out.append(word)
    return " ".join(out)


def secret_parameters(text: str) -> list[str]:
    """The names of the `?name=value` parameters of `text` that carry a secret (a password, a token, a key): those
    `redact_address` hides (`secret_name`); the ones that name where or how one is found (`wallet_location=`,
    `token_auth=OCI_TOKEN`) are not among them."""
    return [match[1] for match in _PARAM().finditer(text) if secret_name(match[1])]


def safe_options(options: dict[str, Any]) -> dict[str, Any]:
    """Command options fit for a header: secrets dropped, credentials cut out of DSNs/URLs (and URL query values)."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if secret_name(key):
            continue
        if isinstance(value, str):
            value = redact_address(value)
        elif isinstance(value, tuple):
            value = list(value)
        if isinstance(value, (str, int, float, bool, list)) or value is None:
            out[key] = value
    return out
