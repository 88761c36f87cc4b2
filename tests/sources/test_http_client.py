"""The Prometheus sources' HTTP GET: credentials go only to the origin asked, whatever a redirect names."""

from __future__ import annotations

import pytest
from prometheus_support import Redirect, Scripted

from latencymap.sources.http_client import EndpointError, origin
from latencymap.sources.prometheus.transport import TOKEN_ENV, http_get

BASIC = "Basic YWxpY2U6czNjcmV0UFc="  # alice:s3cretPW


def with_user(url: str) -> str:
    return url.replace("http://", "http://alice:s3cretPW@", 1)


@pytest.fixture(params=["basic", "bearer"])
def credentials(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[str, object]:
    """(how to put them on a URL, the Authorization header they make): URL user info or the environment's token."""
    if request.param == "bearer":
        monkeypatch.setenv(TOKEN_ENV, "TOK3N-XYZ")
        return "bearer", "Bearer TOK3N-XYZ"
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    return "basic", BASIC


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_a_redirect_to_another_host_or_port_is_followed_without_credentials(credentials, host: str) -> None:
    """urllib sent the Authorization header on to whatever host a 302 named (curl and requests drop it)."""
    how, header = credentials
    target = Scripted([(200, "text/plain", "ok\n")])
    redirect = Redirect(to=f"http://{host}:{target.port}")
    try:
        url = redirect.url + "/metrics"
        assert http_get(with_user(url) if how == "basic" else url, "*/*", 5, "ok").body == b"ok\n"
        assert redirect.requests[0]["Authorization"] == header
        assert len(target.requests) == 1 and "Authorization" not in target.requests[0]
    finally:
        redirect.close()
        target.close()


def test_a_redirect_within_the_origin_keeps_the_credentials(credentials) -> None:
    how, header = credentials
    server = Redirect()
    try:
        url = server.url + "/metrics"
        assert http_get(with_user(url) if how == "basic" else url, "*/*", 5, "ok").body == b"ok\n"
        assert [r["Authorization"] for r in server.requests] == [header, header]
    finally:
        server.close()


def test_a_refusal_after_a_credential_free_redirect_says_why() -> None:
    target = Scripted([(401, "text/plain", "unauthorized")])
    redirect = Redirect(to=f"http://localhost:{target.port}")
    try:
        with pytest.raises(EndpointError) as caught:
            http_get(with_user(redirect.url + "/metrics"), "*/*", 5, "a page")
    finally:
        redirect.close()
        target.close()
    message = str(caught.value)
    assert not caught.value.transient and "alice" not in message and "s3cret" not in message
    assert message == (f"{redirect.url}/metrics: answered HTTP 401 Unauthorized at http://localhost:{target.port}"
                       "/metrics, where a redirect led: credentials are not sent on to another scheme, host or port "
                       "(give that URL instead); expected a page")


def test_origin_is_scheme_host_and_port() -> None:
    assert origin("http://H.example/x") == origin("http://user:pw@h.example:80/y?q=1") == ("http", "h.example", 80)
    assert origin("https://h.example/") == ("https", "h.example", 443) != origin("http://h.example:443/")
    assert origin("http://[::1]:9090/") == ("http", "::1", 9090)
