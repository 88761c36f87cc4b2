"""`--dsn` with a credential part is refused in every spelling, and no header or message ever shows one.

Easy Connect strings and descriptors carry `/` (and sometimes `@`) legitimately: they must pass untouched.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties_support import QUICK
from test_oracle import PASSWORD, invoke, wire_cli
from test_oracle_double import DatabaseError, FakeDb, example_rows

from latencymap.core.sanitize import (
    dsn_credentials,
    redact_address,
    safe_options,
    secret_parameters,
    strip_credentials,
)
from latencymap.sources.oracle.auth import DSN_ENV, check_no_inline_password, check_no_secret_parameters
from latencymap.sources.oracle.errors import OracleError, shown_dsn

MARK = "Zq9"  # in every generated password, never in a connect string
DESCRIPTOR = ('(DESCRIPTION=(ADDRESS=(PROTOCOL=TCPS)(HOST=db.example.com)(PORT=2484))'
              '(CONNECT_DATA=(SERVICE_NAME=orclpdb1))(SECURITY=(MY_WALLET_DIRECTORY=/opt/oracle/wallet)'
              '(SSL_SERVER_CERT_DN="CN=db,O=Example,EMAILADDRESS=dba@example.com")))')
CONNECT_STRINGS = [
    "dbhost:1521/ORCLPDB1", "dbhost/ORCLPDB1", "prod", "prod.world", "//dbhost:1521/ORCLPDB1", "tcp://dbhost:1521/ORCL",
    "tcps://db.example.com:2484/orclpdb1?wallet_location=/opt/oracle/wallet&ssl_server_cert_dn=\"CN=db,E=a@b.c\"",
    "dbhost:1521/ORCL?ssl_server_cert_dn=CN=db,E=a@b.c", "[::1]:1521/ORCL", "h1:1521,h2:1522/ORCL",
    "dbhost:1521/ORCL:dedicated/ORCL1", "ldap://ldap.example.com:389/orcl,cn=OracleContext,dc=example,dc=com",
    DESCRIPTOR, DESCRIPTOR.replace("(", " ( "),
]


@pytest.mark.parametrize("dsn", [*CONNECT_STRINGS, *(f"  {c}\t" for c in CONNECT_STRINGS),
                                 *(f"/@{c}" for c in CONNECT_STRINGS), *(f"scott@{c}" for c in CONNECT_STRINGS),
                                 "/ @ " + DESCRIPTOR])
def test_connect_strings_without_a_password_pass_untouched(dsn: str) -> None:
    assert dsn_credentials(dsn) is None
    check_no_inline_password(dsn, "scott")
    assert strip_credentials(dsn) == dsn


REFUSED = [
    "scott/S3cr3tPw@dbhost:1521/ORCL",
    'scott/"S3cr3tPw x"@dbhost:1521/ORCL',  # a quoted password with a blank, as SQL*Plus takes it
    " scott/S3cr3tPw@dbhost:1521/ORCL",
    "scott/S3cr3tPw\t@dbhost:1521/ORCL",
    "scott/S3cr3tPw@ dbhost:1521/ORCL",
    "scott / S3cr3tPw @ dbhost:1521/ORCL",
    "scott/\nS3cr3tPw\n@dbhost",
    'scott/"S3cr@tPw"@dbhost:1521/ORCL',
    "scott/S3cr@tPw@dbhost:1521/ORCL",  # python-oracledb splits at the last @
    "scott/S3cr3tPw@" + DESCRIPTOR,
    "scott/S3cr3tPw @ " + DESCRIPTOR,
    "scott/S3(cr3tPw@" + DESCRIPTOR,
    "scott/S3cr@(3tPw@dbhost",
    "scott/S3cr3tPw@//dbhost:1521/ORCL",
    "scott/S3cr3tPw@dbhost:1521/ORCL?ssl_server_cert_dn=\"CN=a@b\"",
    '"sc ott"/S3cr3tPw@dbhost', "scott[hr]/S3cr3tPw@dbhost", "/S3cr3tPw@dbhost", "scott:S3cr3tPw@dbhost",
    "tcp://scott:S3cr3tPw@dbhost:1521/ORCL", "//scott:S3cr 3tPw@dbhost/ORCL",
]


@pytest.mark.parametrize("dsn", REFUSED)
def test_every_spelling_of_a_credential_part_is_refused_and_scrubbed(dsn: str) -> None:
    assert dsn_credentials(dsn) is not None
    with pytest.raises(OracleError, match="--dsn must not carry a password"):
        check_no_inline_password(dsn, "scott")
    for shown in (strip_credentials(dsn), shown_dsn(dsn), json.dumps(safe_options({"dsn": dsn}))):
        assert "S3cr" not in shown and "3tPw" not in shown


@pytest.mark.parametrize("dsn", ['scott/"S3cr3tPw x"@dbhost:1521/ORCL', " scott/S3cr3tPw@dbhost:1521/ORCL",
                                 "scott/S3cr3tPw\t@dbhost:1521/ORCL"])
@pytest.mark.parametrize("connect_fails", [False, True])
def test_cli_refuses_them_before_any_connect_recording_or_message(monkeypatch, tmp_path, dsn, connect_fails):
    holder = wire_cli(monkeypatch)
    holder["db"] = db = FakeDb(example_rows()[:3], version="11.2",
                               connect_script=[DatabaseError("ORA-12541: TNS:no listener")] if connect_fails else [])
    rec = tmp_path / "rec.txt"
    res = invoke("oracle", "--dsn", dsn, "--user", "scott", "--plain", "--once", "--count", "2", "--record", str(rec))
    assert res.exit_code == 1 and "--dsn must not carry a password" in res.stderr
    assert "S3cr3tPw" not in res.output and not db.connects
    assert not rec.exists() or "S3cr3tPw" not in rec.read_text()


def test_connect_error_shows_the_connect_string_without_credentials(monkeypatch):
    holder = wire_cli(monkeypatch)
    holder["db"] = FakeDb([], connect_script=[DatabaseError("ORA-12541: TNS:no listener")])
    res = invoke("oracle", "--dsn", "\tdbhost:1521/ORCLPDB1 ", "--user", "scott", "--plain", "--once")
    assert res.exit_code == 1 and "cannot connect to dbhost:1521/ORCLPDB1: ORA-12541" in res.stderr
    assert shown_dsn("scott/tiger@dbhost:1521/ORCL") == "dbhost:1521/ORCL"
    assert PASSWORD not in res.output


# -- generated: any user, password, blanks and connect string ------------------------------------------------------

BLANK = st.sampled_from(["", "", " ", "\t", "  ", "\n", "\u00a0"])
USER = st.one_of(st.from_regex(r"[A-Za-z][A-Za-z0-9_$#]{0,8}", fullmatch=True),
                 st.text(st.characters(blacklist_characters='"\x00', codec="utf-8"), min_size=1, max_size=8)
                 .map(lambda u: f'"{u}"'),
                 st.just("scott[hr]"))
PASSWORD_PART = st.text(st.sampled_from(list("aZ09 \t\"@/():;,.?=&!#$%[]")), max_size=6)
PASSWORDS = st.tuples(PASSWORD_PART, PASSWORD_PART, st.booleans()).map(
    lambda t: f'"{(t[0] + MARK + t[1]).replace(chr(34), "")}"' if t[2] else t[0] + MARK + t[1])


@QUICK
@given(st.tuples(BLANK, USER, BLANK, BLANK, PASSWORDS, BLANK, BLANK, st.sampled_from(CONNECT_STRINGS), BLANK))
def test_generated_credential_parts_are_refused_and_never_shown(parts: tuple[str, ...]) -> None:
    b0, user, b1, b2, password, b3, b4, connect, b5 = parts
    dsn = f"{b0}{user}{b1}/{b2}{password}{b3}@{b4}{connect}{b5}"
    assert dsn_credentials(dsn) is not None, dsn
    with pytest.raises(OracleError):
        check_no_inline_password(dsn, None)
    for shown in (strip_credentials(dsn), shown_dsn(dsn), json.dumps(safe_options({"dsn": dsn}))):
        assert MARK not in shown, (dsn, shown)


@QUICK
@given(st.tuples(BLANK, BLANK, st.text(st.sampled_from(list("aZ09 \t@:;,.?=&!#$%[]")), max_size=8)))
def test_generated_url_userinfo_with_a_password_is_refused_and_never_shown(parts: tuple[str, str, str]) -> None:
    b0, b1, rest = parts
    dsn = f"{b0}tcps://scott:{rest}{MARK}{rest}@{b1}db.example.com:2484/orclpdb1"
    assert dsn_credentials(dsn) is not None, dsn
    assert MARK not in strip_credentials(dsn) and MARK not in json.dumps(safe_options({"url": dsn}))


HOST = st.sampled_from(["dbhost", "db.example.com", "[::1]", "10.0.0.7", "h1:1521,h2"])
PARAM_VALUE = st.one_of(st.sampled_from(["/opt/oracle/wallet", "20", "on"]),
                        st.text(st.sampled_from(list("aZ09 @/=,.")), max_size=10).map(lambda v: f'"{v}"'))


@QUICK
@given(st.tuples(BLANK, st.sampled_from(["", "//", "tcp://", "tcps://"]), HOST, st.sampled_from(["", ":1521"]),
                 st.sampled_from(["", "/ORCLPDB1", "/ORCL:dedicated/ORCL1"]),
                 st.lists(st.tuples(st.sampled_from(["wallet_location", "ssl_server_cert_dn", "retry_count"]),
                                    PARAM_VALUE), max_size=3),
                 st.sampled_from(["", "/@", "scott@"]), BLANK))
def test_generated_easy_connect_strings_pass_untouched(parts: tuple) -> None:
    b0, scheme, host, port, service, params, prefix, b1 = parts
    query = "&".join(f"{k}={v}" for k, v in params)
    dsn = f"{b0}{prefix}{scheme}{host}{port}{service}{'?' + query if query and service else ''}{b1}"
    assert dsn_credentials(dsn) is None, dsn
    check_no_inline_password(dsn, "scott")
    if "scott@" not in dsn or not scheme:
        assert strip_credentials(dsn) == dsn


@QUICK
@given(st.tuples(BLANK, st.sampled_from(["", "/@", "/ @ ", "scott@"]),
                 st.lists(st.tuples(st.sampled_from(["HOST", "MY_WALLET_DIRECTORY", "SSL_SERVER_CERT_DN"]),
                                    PARAM_VALUE), max_size=4), BLANK))
def test_generated_descriptors_pass_untouched(parts: tuple) -> None:
    b0, prefix, pairs, b1 = parts
    inner = "".join(f"({k}={v})" for k, v in pairs)
    dsn = f"{b0}{prefix}(DESCRIPTION=(ADDRESS=(PROTOCOL=TCP)(HOST=h)(PORT=1521)){inner}" \
          f"(CONNECT_DATA=(SERVICE_NAME=s))){b1}"
    assert dsn_credentials(dsn) is None, dsn
    check_no_inline_password(dsn, "scott")
    assert strip_credentials(dsn) == dsn


# -- secret Easy Connect parameters -------------------------------------------------------------------------------

SECRET_PARAMS = ["tcps://dbhost:2484/ORCLPDB1?wallet_location=/w&wallet_password=WalletPw9",
                 "dbhost:1521/ORCLPDB1?token=WalletPw9", "dbhost:1521/ORCLPDB1?retry_count=3&ACCESS_TOKEN=WalletPw9"]


@pytest.mark.parametrize("dsn", SECRET_PARAMS)
def test_secret_parameters_show_as_in_a_recording_everywhere(dsn: str) -> None:
    assert shown_dsn(dsn) == redact_address(dsn) == safe_options({"dsn": dsn})["dsn"]
    assert "WalletPw9" not in shown_dsn(dsn) and "=***" in shown_dsn(dsn)
    assert "wallet_location=/w" in shown_dsn(SECRET_PARAMS[0])


@pytest.mark.parametrize("dsn", SECRET_PARAMS)
def test_secret_parameters_in_argv_are_refused_and_taken_from_the_environment(monkeypatch, tmp_path, dsn):
    holder = wire_cli(monkeypatch)
    holder["db"] = db = FakeDb(example_rows()[:3], version="11.2")
    rec = tmp_path / "rec.txt"
    res = invoke("oracle", "--dsn", dsn, "--user", "scott", "--plain", "--once", "--count", "2", "--record", str(rec))
    assert res.exit_code == 1 and not db.connects and not rec.exists()
    (line,) = res.stderr.splitlines()
    assert line.startswith("latencymap oracle: --dsn must not carry ") and "on the command line" in line
    assert f"set the connect string in {DSN_ENV}" in line and "WalletPw9" not in line
    res = invoke("oracle", "--user", "scott", "--plain", "--once", "--count", "2", "--record", str(rec),
                 env={DSN_ENV: dsn})
    assert res.exit_code == 0, res.stderr
    assert db.connects[0]["dsn"] == dsn and "WalletPw9" not in rec.read_text() + res.output


def test_parameters_that_say_where_or_how_are_no_secret() -> None:
    dsn = "tcps://h:2484/S?wallet_location=/w&token_auth=OCI_TOKEN&token_location=/t&ssl_server_dn_match=on"
    assert secret_parameters(dsn) == []
    check_no_secret_parameters(dsn)
    assert secret_parameters("h:1/S?wallet_password=x&Token=y&auth=z&pyo.password=p") == [
        "wallet_password", "Token", "auth", "pyo.password"]


def test_a_connect_error_with_a_secret_parameter_from_the_environment_hides_it(monkeypatch):
    holder = wire_cli(monkeypatch)
    holder["db"] = FakeDb([], connect_script=[DatabaseError("ORA-12541: TNS:no listener")])
    res = invoke("oracle", "--user", "scott", "--plain", "--once", env={DSN_ENV: SECRET_PARAMS[0]})
    assert res.exit_code == 1 and "WalletPw9" not in res.output
    assert "cannot connect to tcps://dbhost:2484/ORCLPDB1?wallet_location=/w&wallet_password=***: ORA-12541" \
        in res.stderr
