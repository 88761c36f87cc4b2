"""Stream names: long labels cut in the middle, distinct labels (or keyed streams) never given one name."""

from __future__ import annotations

import re

from latencymap.core.sanitize import StreamNames, clean_reprs, clean_text, redact_command


def test_long_labels_alike_but_at_their_end_keep_their_ends_and_the_same_label_its_name() -> None:
    names = StreamNames(40)
    labels = [f"/cluster/{'x' * 50}/disk{k}/read" for k in range(3)]
    got = [names.name(label) for label in labels]
    assert len(set(got)) == 3 and all(len(n) == 40 and n.count("…") == 1 for n in got)
    assert [n[-11:] for n in got] == [f"/disk{k}/read" for k in range(3)]
    assert [names.name(label) for label in labels] == got and names.name("short") == "short"


def test_cuts_alike_get_a_number_and_keys_tell_equal_labels_apart() -> None:
    names = StreamNames(40)
    a, b = "x" * 20 + "a" + "y" * 40, "x" * 20 + "b" + "y" * 40  # they differ where the cut drops
    assert names.name(a) == f"{'x' * 15}…{'y' * 24}" and names.name(b) == f"{'x' * 14}…{'y' * 21} (2)"
    assert names.name(a) == f"{'x' * 15}…{'y' * 24}"  # the same label, the same name
    assert names.name(names.name(a)) == f"{'x' * 14}…{'y' * 21} (3)"  # a label written as a's name is not a
    keyed = StreamNames()
    first, second, third = (keyed.name("svc", "ms", key=k) for k in ((None,), ("svc",), ("svc\x07",)))
    assert (first, second, third) == ("svc", "svc (2)", "svc (3)")
    assert keyed.name("svc", "ms", key=("svc",)) == "svc (2)" and keyed.name("svc", "ns", key=("svc",)) == "svc"


def test_a_value_quoted_as_python_writes_it_shows_its_controls_as_question_marks() -> None:
    """click and `{value!r}` quote an option's value with escapes (`'x\\x1b[2J'`): shown by the one rule, `?`."""
    value = "ms\u202e\x1b[2J"
    said = f"unknown unit {value!r}; unexpected character {value[2]!r} at position 3; not {'ms'!r}"
    assert clean_reprs(said, ["report", value, "plain"]) == (
        "unknown unit 'ms??[2J'; unexpected character '?' at position 3; not 'ms'")
    assert clean_reprs(said, ["report"]) == said  # only what came in is touched


def test_a_command_line_keeps_its_shape_and_loses_its_secrets() -> None:
    command = ("python x.py --password=hunter2 --db postgresql://bob:s3cret@db/t --hf-token hf_SECRETTOKEN "
               "--token-file /run/tok API_KEY=zz --monitor http://h/?token=abc&a=1 --key  k2 -v --auth-token --verbose")
    assert redact_command(command) == (
        "python x.py --password=*** --db postgresql://db/t --hf-token *** --token-file /run/tok API_KEY=*** "
        "--monitor http://h/?token=***&a=1 --key  *** -v --auth-token --verbose")
    assert redact_command("python train.py --epochs 3 data/x=1.csv") == "python train.py --epochs 3 data/x=1.csv"


#: Options and variables that only hold a secret word, or end in a word that says where a secret is: kept as given.
NOT_SECRETS = ["--tokenizer gpt2", "--max-tokens 2048", "max_tokens=4096", "--key-column id", "--num-keys 100",
               "--cache-key-prefix abc", "--passes 3", "--keyframes 10", "--pass-through /data", "--monkey 3",
               "--api-key-env OPENAI_API_KEY", "--secret-name db-creds", "--tokens 5", "--keys a,b", "maxTokens=9",
               "--token-file /run/tok", "--password-file /run/pw", "--no-auth x.py", "token_auth=OCI_TOKEN"]
#: Names whose last word (or, for the long words, its end) says the value is a secret: the value hidden.
SECRETS = ["--db-password", "--hf-token", "--api-key", "API_KEY=", "--password=", "--secret", "PGPASSWORD=",
           "MYSQL_PWD=", "--hfToken", "--accessKey", "--SSLKey", "AWS_SECRET_ACCESS_KEY=", "--client.secret",
           "--credentials", "--auth", "--apikey", "--pass", "--openaiapikey"]


def test_a_command_line_hides_values_named_a_secret_and_no_other() -> None:
    """py-spy's `process` frames once showed `--max-tokens ***`, `--key-column ***`, `--monkey ***`: a name holding a
    secret word anywhere was taken for a secret. The name's last word decides."""
    for option in NOT_SECRETS:
        command = f"python train.py {option} --lr 0.1"
        assert redact_command(command) == command
    for name in SECRETS:
        sep = "" if name.endswith("=") else " "
        assert redact_command(f"python train.py {name}{sep}hunter2 --lr 0.1") == (
            f"python train.py {name}{sep}*** --lr 0.1"), name
    assert redact_command("python x.py --db postgresql://bob:s3cret@db/t?sslpassword=p2&max_tokens=5") == (
        "python x.py --db postgresql://db/t?sslpassword=***&max_tokens=5")


#: Command lines as py-spy shows them (argv joined by blanks, so a quoted value's words come apart): every word
#: holding `Zq9` is (part of) a secret.
LEAKS = [
    "--password Zq9two Zq9words", '--password="Zq9a Zq9b"', "--password=Zq9a Zq9b Zq9c.txt", "--pwd Zq9",
    "--header Authorization: Bearer Zq9abc", "-H Authorization:Bearer Zq9", "--header=Proxy-Authorization: Basic Zq9==",
    '-d {"Authorization": "Token Zq9"}', "--header X-Api-Key: Zq9", "MYSQL_PWD=Zq9", "DBPASS=Zq9", "--dbpass Zq9",
    "--auth bob:Zq9", "--basic-auth bob:Zq9", "--basic-auth=bob:Zq9", "--user bob:Zq9", "-u bob:Zq9",
    "--hf-token-value Zq9", "--db-password Zq9", "--use_auth_token Zq9", "--token Zq9==", "--password Zq9 a=b",
    "--api-key=Zq9 Zq9", "db.password=Zq9", "--url https://h/o?X-Amz-Signature=Zq9&X-Amz-Security-Token=Zq9",
    "--db postgresql://bob:Zq9@db/t", "mycli -u root -p Zq9 db", "mysql -pZq9 db", "-m mycli --password Zq9",
    "/usr/bin/mycli -pZq9", "--private-key Zq9", "--cookie session=Zq9",
    "--password -Zq9xyz123", "--token -Zq9", "--token=-Zq9abc", "--hf-token -Zq9 -v", "-H Authorization: -Zq9",
    "mycli -p -Zq9 db", "DB_PASSWORD=Zq9two Zq9words", "db.password=Zq9two Zq9words", "--password Zq9 Zq9 a=b",
]
#: Options that look like a secret's but are not: shown as given (with what follows them).
SHOWN = [
    *NOT_SECRETS,
    "--pass-through /data x.csv", "--secretkeyfile /run/k", "--max-new-tokens 32", "--token-budget 512",
    "--no-password run.py", "--user bob", "-u root", "-u x.py", "--auth-type basic", "-p 8080", "-p no:cacheprovider",
    "-pno:cacheprovider", "--header Content-Type: text/plain", "--password-stdin registry.io", "--key-id AKIA1",
    "--num-tokens 3", "--cookies-from-browser firefox", "--bypass-cache yes", "--tokenizer-name gpt2 a=b",
    "--auth-token -v", "--auth-token --verbose x.py", "--use-auth-token --max-tokens=5", "--auth-token -- x.py",
]


def test_a_quoted_secret_an_authorization_header_and_user_password_pairs_are_hidden_whole() -> None:
    """py-spy's recording of `target.py --password "two words" --pwd hunter2 --header "Authorization: Bearer abc123"
    MYSQL_PWD=hunter3` showed the second word, the header's credentials and `user:password` after an auth option:
    a secret option's value runs to the next option or NAME=value, a header named a secret hides its value."""
    for secret in LEAKS:
        shown = redact_command(f"python x.py {secret} --lr 0.1")
        assert "Zq9" not in shown and shown.endswith(" --lr 0.1"), (secret, shown)
    assert redact_command(
        'python target.py --password two words --pwd hunter2 --header Authorization: Bearer abc123 '
        'MYSQL_PWD=hunter3') == "python target.py --password *** --pwd *** --header Authorization: *** MYSQL_PWD=***"
    assert redact_command('x --password="a b" --basic-auth bob:pw -H Authorization:Bearer t k=v') == (
        "x --password=*** --basic-auth bob:*** -H Authorization:*** k=v")
    assert redact_command("mysql -ppw -h db") == "mysql -p*** -h db"


def test_a_secret_value_starting_with_a_dash_is_hidden_and_an_option_after_a_secret_flag_is_not() -> None:
    """`--password -xyz123` was shown whole: a value ended at any word starting with `-`. A secret option given
    without `=` takes the next word as its value (as getopt and click do) unless that word is a long option or one
    short one (`--auth-token --verbose`, `-v`: a flag); after the value's first word, as after `NAME=value`, the
    words that follow are taken for the value's (py-spy joined them) up to the next option or `NAME=value`."""
    assert redact_command("x --password -xyz123 --auth-token -v --pwd -1 --lr 0.1") == (
        "x --password *** --auth-token -v --pwd *** --lr 0.1")
    assert redact_command("x DB_PASSWORD=two words --db-password one two=2 -v --key -k2 -vv") == (
        "x DB_PASSWORD=*** --db-password *** two=2 -v --key *** -vv")


def test_a_password_flag_that_asks_for_the_password_takes_no_value_and_the_options_after_it_are_shown() -> None:
    """Hiding a value that starts with `-` hid `-uroot -hdb shop` of `mysql --password -uroot -hdb shop`: the MySQL
    and PostgreSQL clients' bare `--password` (and a MySQL client's bare `-p`) and `--ask-vault-pass` ask for the
    password, and the word after them is none. Their glued values, and the other programs' values, stay hidden."""
    for command in ("mysql -uroot --password -hdb shop", "mysql -p -hdb shop", "/usr/bin/psql --password -Ubob shop",
                    "pg_dump --password -Fc shop", "ansible-playbook site.yml --ask-vault-pass -vvv",
                    "ansible-playbook --ask-become-pass site.yml"):
        assert redact_command(command) == command
    assert redact_command("mysql --password=pw -hdb shop -ppw") == "mysql --password=*** -hdb shop -p***"
    assert redact_command("mycli --password -xyz123 shop") == "mycli --password ***"
    assert redact_command("ansible-playbook --vault-pass -xyz123 site.yml") == "ansible-playbook --vault-pass ***"


def test_options_that_only_look_like_secrets_and_what_follows_them_are_shown() -> None:
    """A secret word before a word that says where, how many or what kind (`--key-column`, `--secret-name`,
    `--token-budget`), a short one glued or before another word (`--monkey`, `--pass-through`), a flag saying no
    (`--no-password`), a user without a password and `-p` outside the MySQL clients (a port, a plugin) stay."""
    for option in SHOWN:
        command = f"python train.py {option} --lr 0.1"
        assert redact_command(command) == command


def test_cleaned_text_holds_no_line_break_of_any_kind_and_nothing_xml_forbids() -> None:
    """U+2028 and U+2029 reached the screen and every output unchanged, and U+FFFE, U+FFFF and lone surrogates made
    an SVG report invalid XML (a surrogate: a UnicodeEncodeError). Every code point, as `clean_text` gives it."""
    every = "".join(map(chr, range(0x110000)))
    shown = clean_text(every, len(every))
    assert len(shown) == len(every)
    breaks = "".join(c for c in map(chr, range(0x3000)) if len(f"a{c}b".splitlines()) == 2)  # where Python ends lines
    assert [f"{ord(m[0]):x}" for m in re.finditer(f"[{breaks}]", shown)] == []
    not_xml = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"  # outside XML 1.0's Char production
    assert [f"{ord(m[0]):x}" for m in re.finditer(not_xml, shown)] == []
    questioned = {k for k, c in enumerate(shown) if c == "?" and every[k] != "?"}
    assert questioned == {*range(0x09), *range(0x0a, 0x20), *range(0x7f, 0xa0), 0x2028, 0x2029, *range(0x202a, 0x202f),
                          *range(0x2066, 0x206a), *range(0xd800, 0xe000), 0xfffe, 0xffff}
