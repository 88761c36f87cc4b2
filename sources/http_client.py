"""HTTP GET for the sources that ask a server (standard library only), with credentials kept to their origin.

Basic auth may be given in the URL (`http://user:pass@host/`): it is sent as an Authorization header and cut out of
the URL everywhere else (`basic_auth`, `public_url`). Credentials go to the origin (scheme, host, port) asked only:
a redirect to another one is followed without them, as curl and requests do (`open_url`). Used by the Prometheus
sources and the Spark REST source.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING

from latencymap.core.sanitize import clean_text, secret_name

if TYPE_CHECKING:
    import http.client
    import urllib.request

#: Request headers that carry credentials: never sent on to another origin a redirect names.
CREDENTIAL_HEADERS = ("Authorization", "Cookie")
_DEFAULT_PORTS = {"http": 80, "https": 443}



class EndpointError(OSError):
    """An endpoint that did not answer as expected; `transient` when asking again may help."""

    def __init__(self, message: str, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient


def public_url(url: str) -> str:
    """`url` fit for messages and recordings: no user:password, secret-looking query values replaced by ***."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return clean_text(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = urllib.parse.urlencode(
        [(k, "***" if secret_name(k) else v) for k, v in urllib.parse.parse_qsl(parts.query, True)],
        safe="*/:")
    return clean_text(urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)), 300)


def basic_auth(url: str) -> tuple[str, dict[str, str]]:
    """(URL without user:password, the Authorization header carrying them: none when the URL has none)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, {}
    import base64

    pair = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
    url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))
    return url, {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the port made explicit: where credentials given for it may go."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def open_url(request: urllib.request.Request, timeout: float) -> http.client.HTTPResponse:
    """`urlopen(request)`, except that a redirect to another origin drops the credential headers.

    Refused with a credential-free redirect, an answer of 401 or 403 raises EndpointError (not transient) saying
    so instead of urllib's HTTPError.
    """
    import urllib.error
    import urllib.request

    withheld: list[str] = []

    class SameOriginCredentials(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: urllib.request.Request, fp: object, code: int, msg: str,
                             headers: object, newurl: str) -> urllib.request.Request | None:
            new = super().redirect_request(req, fp, code, msg, headers, newurl)  # type: ignore[arg-type]
            if new is not None and origin(newurl) != origin(req.full_url):
                if any(new.has_header(name) for name in CREDENTIAL_HEADERS):
                    withheld.append(public_url(newurl))
                for name in CREDENTIAL_HEADERS:
                    new.remove_header(name)
            return new

    try:
        response: http.client.HTTPResponse = urllib.request.build_opener(SameOriginCredentials).open(
            request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if withheld and err.code in (401, 403):
            err.close()
            where = public_url(err.filename or withheld[-1])
            raise EndpointError(f"answered HTTP {err.code} {clean_text(err.reason or '', 60)} at {where}, where a "
                                "redirect led: credentials are not sent on to another scheme, host or port (give "
                                "that URL instead)", transient=False) from None
        raise
    return response
