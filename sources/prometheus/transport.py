"""HTTP GET for the Prometheus sources (standard library only), with credentials kept out of every message.

Basic auth may be given in the URL (`http://user:pass@host/`): it is sent as an Authorization header and cut
out of the URL everywhere else. A bearer token comes from the environment variable
`LATENCYMAP_PROMETHEUS_TOKEN`, never from the command line. Credentials go to the origin (scheme, host, port) asked
only: a redirect to another one is followed without them, as curl and requests do. Messages name the URL without
credentials and say what was expected instead of what came back (`latencymap.sources.http_client`, which the Spark
REST source uses too).
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from latencymap import __version__
from latencymap.core.lines import text_lines
from latencymap.core.sanitize import clean_text
from latencymap.sources.http_client import EndpointError, basic_auth, open_url, public_url

if TYPE_CHECKING:
    import urllib.error
    import urllib.request

TOKEN_ENV = "LATENCYMAP_PROMETHEUS_TOKEN"
MAX_BODY = 64 * 1024 * 1024
BACKOFF_MAX = 30.0
@dataclass(frozen=True, slots=True)
class Response:
    """A successful answer."""

    body: bytes
    content_type: str


def backoff(base: float, failures: int) -> float:
    """Seconds to wait after the n-th failure in a row: `base`, doubling, at most 30 s (or `base` if longer)."""
    return min(base * 2 ** min(failures - 1, 20), max(base, BACKOFF_MAX))


def retry_message(error: str, failures: int, delay: float) -> str:
    """What a live source says when an attempt failed and it will try again."""
    again = f" ({failures} failures in a row)" if failures > 1 else ""
    return f"{error}{again}; asking again in {delay:.3g}s"


def split_credentials(url: str) -> tuple[str, dict[str, str]]:
    """(URL without user:password, headers carrying them and the environment's bearer token)."""
    url, headers = basic_auth(url)
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return url, headers


def check_url(url: str) -> None:
    """ValueError unless `url` is an http(s) URL with a host."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"expected an http:// or https:// URL, got {public_url(url)!r}")


def _reason(err: BaseException) -> str:
    import socket
    import urllib.error

    if isinstance(err, urllib.error.URLError) and not isinstance(err, urllib.error.HTTPError):
        err = err.reason if isinstance(err.reason, BaseException) else OSError(str(err.reason))
    if isinstance(err, (TimeoutError, socket.timeout)):
        return "timed out"
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror.lower()
    return clean_text(str(err) or type(err).__name__, 120)


def http_get(url: str, accept: str, timeout: float, expected: str, shown: str | None = None) -> Response:
    """GET `url`; EndpointError naming `shown` (default: the public URL) and `expected` unless it answers 2xx.

    A 4xx answer (but 408 and 429) is not transient: asking again will not help.
    """
    target, headers = split_credentials(url)
    shown = shown or public_url(url)
    import urllib.error  # these (with http.client, email and ssl) load when a source fetches, not with the plugin
    import urllib.request

    request = urllib.request.Request(target, headers={"Accept": accept, "User-Agent": f"latencymap/{__version__}",
                                                      **headers})
    try:
        with open_url(request, timeout) as resp:
            body = resp.read(MAX_BODY + 1)
            content_type = resp.headers.get("Content-Type", "")
    except EndpointError as err:
        raise EndpointError(f"{shown}: {err}; expected {expected}", err.transient) from None
    except urllib.error.HTTPError as err:
        detail = _error_body(err)
        transient = err.code >= 500 or err.code in (408, 429)
        raise EndpointError(f"{shown}: answered HTTP {err.code} {clean_text(err.reason or '', 60)}{detail}; "
                            f"expected {expected}", transient) from None
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise EndpointError(f"{shown}: {_reason(err)}; expected {expected}") from None
    if len(body) > MAX_BODY:
        raise EndpointError(f"{shown}: answer larger than {MAX_BODY >> 20} MiB; expected {expected}")
    if looks_like_html(body, content_type):
        raise EndpointError(f"{shown}: answered an HTML page ({clean_text(content_type, 60) or 'no Content-Type'}); "
                            f"expected {expected}")
    return Response(body, content_type)


def _error_body(err: urllib.error.HTTPError) -> str:
    try:
        text = err.read(2048).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    if not text or looks_like_html(text.encode(), err.headers.get("Content-Type", "")):
        return ""
    first = text_lines(text)[0].rstrip("\r\n")  # cut at line ends only: U+2028 and `\x1c` are shown as `?`
    return f" ({clean_text(first, 160)})"


def looks_like_html(body: bytes, content_type: str) -> bool:
    """True for a web page (a login form, a proxy's error page) where data was expected."""
    if "html" in content_type.lower():
        return True
    head = body[:256].lstrip().lower()
    return head.startswith((b"<!doctype", b"<html", b"<head", b"<body"))
