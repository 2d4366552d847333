"""The address's TLS and compression options: read as the mysql client reads its own, refused with
a message that names the option, shown with everything but the password. No server needed."""

from __future__ import annotations

import pickle
import random
import re
import ssl
import time
import timeit
from pathlib import Path
from urllib.parse import quote

import pytest

from bench_dsl.core.dsn import SSL_MODES, Dsn, parse_dsn, redact
from bench_dsl.core.errors import TargetError
from bench_dsl.core.tls import ssl_context

SECRET = "Pw-Sekr3t"


@pytest.fixture
def pem(tmp_path: Path) -> dict[str, str]:
    """Files that exist where the options point (their content matters only to ssl_context)."""
    out = {}
    for name in ("ca", "cert", "key"):
        p = tmp_path / f"{name}.pem"
        p.write_text("not really PEM\n")
        out[name] = str(p)
    return out


def addr(**options: str) -> str:
    query = "&".join(f"{k}={quote(v, safe='/')}" for k, v in options.items())
    return f"mysql://u:{SECRET}@db.example:3307/shop" + (f"?{query}" if query else "")


def refused(text: str) -> str:
    with pytest.raises(ValueError) as err:
        parse_dsn(text)
    message = str(err.value)
    assert SECRET not in message
    return message


def test_no_options_is_todays_address() -> None:
    d = parse_dsn(f"mysql://u:{SECRET}@h/db")
    assert (d.ssl_mode, d.ssl_ca, d.ssl_cert, d.ssl_key, d.compress) == (None, None, None, None, False)
    assert not d.tls and d.notes() == []


@pytest.mark.parametrize("written", ["REQUIRED", "required", "Required", " required "])
def test_the_mode_is_case_insensitive_and_kept_upper_case(written: str) -> None:
    assert parse_dsn(addr(**{"ssl-mode": written})).ssl_mode == "REQUIRED"


@pytest.mark.parametrize("mode", SSL_MODES)
def test_every_mode_of_the_mysql_client_is_known(mode: str, pem: dict[str, str]) -> None:
    ca = {"ssl-ca": pem["ca"]} if mode.startswith("VERIFY") else {}
    d = parse_dsn(addr(**{"ssl-mode": mode.lower()}, **ca))
    assert d.ssl_mode == mode
    assert d.tls == (mode in ("REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"))


def test_verify_ca_with_its_files(pem: dict[str, str]) -> None:
    d = parse_dsn(addr(**{"ssl-mode": "VERIFY_CA", "ssl-ca": pem["ca"], "ssl-cert": pem["cert"],
                          "ssl-key": pem["key"]}))
    assert (d.ssl_mode, d.ssl_ca, d.ssl_cert, d.ssl_key) == ("VERIFY_CA", pem["ca"], pem["cert"], pem["key"])
    assert (d.host, d.port, d.user, d.password, d.database) == ("db.example", 3307, "u", SECRET, "shop")


def test_underscores_are_the_same_option_as_in_an_option_file(pem: dict[str, str]) -> None:
    d = parse_dsn(addr(ssl_mode="verify_identity", ssl_ca=pem["ca"]))
    assert (d.ssl_mode, d.ssl_ca) == ("VERIFY_IDENTITY", pem["ca"])


def test_a_relative_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the workers and the C executor read the files from wherever they run
    (tmp_path / "ca.pem").write_text("x")
    monkeypatch.chdir(tmp_path)
    assert parse_dsn(addr(**{"ssl-mode": "VERIFY_CA", "ssl-ca": "ca.pem"})).ssl_ca == str(tmp_path / "ca.pem")


def test_a_plus_in_a_path_is_a_plus(tmp_path: Path) -> None:
    (tmp_path / "a+b.pem").write_text("x")
    d = parse_dsn(addr(**{"ssl-mode": "VERIFY_CA"}) + f"&ssl-ca={tmp_path}/a+b.pem")
    assert d.ssl_ca == str(tmp_path / "a+b.pem")


@pytest.mark.parametrize(("written", "value"), [("1", True), ("true", True), ("ON", True), ("0", False),
                                                 ("false", False), ("off", False)])
def test_compress(written: str, value: bool) -> None:
    assert parse_dsn(addr(compress=written)).compress is value


def test_compress_says_what_asyncmy_cannot_do() -> None:
    (note,) = parse_dsn(addr(compress="1")).notes()
    assert "C executor compress" in note and "asyncmy cannot compress" in note


def test_the_socket_still_works() -> None:
    d = parse_dsn(f"mysql://root:{SECRET}@localhost/db?socket=/run/mysqld/mysqld.sock")
    assert d.socket == "/run/mysqld/mysqld.sock" and d.connect_args()["unix_socket"] == d.socket
    assert parse_dsn("mysql://root@/db?socket=/tmp/s.sock").socket == "/tmp/s.sock"  # no host at all


# refused, each with a message that names the option and what to write ---------------------------

def test_an_unknown_option_lists_the_known_ones() -> None:
    m = refused(addr(colour="blue"))
    assert "unknown option colour" in m
    for known in ("socket", "ssl-mode", "ssl-ca", "ssl-cert", "ssl-key", "compress"):
        assert known in m


@pytest.mark.parametrize(("written", "meant"), [
    ({"sslmode": "require"}, "ssl-mode=REQUIRED"), ({"ssl": "true"}, "ssl-mode=REQUIRED"),
    ({"tls": "1"}, "ssl-mode=REQUIRED"), ({"ssl-verify-server-cert": "1"}, "ssl-mode=VERIFY_IDENTITY"),
    ({"ssl-mod": "REQUIRED"}, "ssl-mode"), ({"sslrootcert": "/x"}, "ssl-ca"),
])
def test_other_tools_spellings_get_a_suggestion(written: dict[str, str], meant: str) -> None:
    assert f"did you mean {meant}?" in refused(addr(**written))


def test_an_unknown_mode_lists_the_modes() -> None:
    m = refused(addr(**{"ssl-mode": "strict"}))
    assert "ssl-mode=strict" in m and "DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY" in m


def test_an_option_given_twice_is_refused() -> None:
    assert "ssl-mode is given twice" in refused(addr(**{"ssl-mode": "REQUIRED"}) + "&ssl_mode=DISABLED")


@pytest.mark.parametrize(("given", "missing"), [("ssl-cert", "ssl-key"), ("ssl-key", "ssl-cert")])
def test_a_certificate_needs_its_key_and_a_key_its_certificate(given: str, missing: str,
                                                              pem: dict[str, str]) -> None:
    m = refused(addr(**{"ssl-mode": "REQUIRED", given: pem["cert"]}))
    assert f"{given} without {missing}" in m


@pytest.mark.parametrize("mode", ["VERIFY_CA", "VERIFY_IDENTITY"])
def test_verifying_needs_a_ca_as_the_mysql_client_does(mode: str) -> None:
    # mysql: "CA certificate is required if ssl-mode is VERIFY_CA or VERIFY_IDENTITY"
    m = refused(addr(**{"ssl-mode": mode}))
    assert f"ssl-mode={mode}" in m and "ssl-ca=PATH" in m and "ca-certificates.crt" in m


def test_a_ca_without_a_mode_asks_which(pem: dict[str, str]) -> None:
    m = refused(addr(**{"ssl-ca": pem["ca"]}))
    assert "ssl-ca without ssl-mode" in m and "VERIFY_CA" in m


@pytest.mark.parametrize("option", ["ssl-ca", "ssl-cert", "ssl-key"])
def test_a_file_that_does_not_exist_is_named_by_its_option(option: str, pem: dict[str, str], tmp_path: Path) -> None:
    files = {"ssl-ca": pem["ca"], "ssl-cert": pem["cert"], "ssl-key": pem["key"]}
    files[option] = str(tmp_path / "gone.pem")
    m = refused(addr(**{"ssl-mode": "VERIFY_CA"}, **files))
    assert f"{option}={tmp_path / 'gone.pem'}" in m and "does not exist" in m


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    assert "is not a file" in refused(addr(**{"ssl-mode": "VERIFY_CA", "ssl-ca": str(tmp_path)}))


def test_an_empty_path_is_refused() -> None:
    assert "ssl-ca is empty" in refused(addr(**{"ssl-mode": "VERIFY_CA", "ssl-ca": ""}))


def test_compress_takes_a_boolean() -> None:
    assert "compress=1 or compress=0" in refused(addr(compress="fast"))


# accepted and ignored, as the mysql client does -------------------------------------------------

def test_disabled_ignores_a_ca_even_one_that_is_not_there() -> None:
    d = parse_dsn(addr(**{"ssl-mode": "DISABLED", "ssl-ca": "/nowhere/ca.pem"}))
    assert not d.tls and ssl_context(d) is None
    assert any("ignored" in n for n in d.notes())


def test_required_with_a_ca_does_not_verify_and_says_so(pem: dict[str, str]) -> None:
    d = parse_dsn(addr(**{"ssl-mode": "REQUIRED", "ssl-ca": pem["ca"]}))
    assert any("not verified" in n for n in d.notes())


def test_preferred_is_plain_and_says_so() -> None:
    d = parse_dsn(addr(**{"ssl-mode": "PREFERRED"}))
    assert not d.tls and ssl_context(d) is None and any("without TLS" in n for n in d.notes())


# shown ---------------------------------------------------------------------------------------------

def test_redacted_keeps_the_tls_options_and_hides_the_password(pem: dict[str, str]) -> None:
    d = parse_dsn(addr(**{"ssl-mode": "verify_ca", "ssl-ca": pem["ca"], "ssl-cert": pem["cert"],
                          "ssl-key": pem["key"]}, compress="true"))
    shown = d.redacted()
    assert SECRET not in shown and "u:***@" in shown
    assert f"ssl-mode=VERIFY_CA&ssl-ca={pem['ca']}&ssl-cert={pem['cert']}&ssl-key={pem['key']}&compress=1" in shown
    assert "not really PEM" not in shown  # a path, never a file's content
    assert parse_dsn(shown.replace("u:***@", f"u:{SECRET}@")) == d  # what is shown reads back the same


def test_redacted_of_a_socket_reads_back() -> None:
    d = parse_dsn(f"mysql://root:{SECRET}@localhost/db?socket=/tmp/a+b.sock")
    assert d.redacted() == "mysql://root:***@localhost/db?socket=/tmp/a+b.sock"


def test_a_dsn_with_tls_survives_the_trip_to_a_worker(pem: dict[str, str]) -> None:
    d = parse_dsn(addr(**{"ssl-mode": "VERIFY_CA", "ssl-ca": pem["ca"]}, compress="1"))
    assert pickle.loads(pickle.dumps(d)) == d


def test_the_fields_the_libmariadb_executor_reads() -> None:
    # names and defaults agreed with the executor's author (issue #20): keep them
    d = Dsn("h", 3306, "u", "", "db")
    assert (d.ssl_mode, d.ssl_ca, d.ssl_cert, d.ssl_key, d.compress) == (None, None, None, None, False)


# the TLS of a mode (no handshake here: tests/engine/test_tls.py makes real ones) ------------------------

def test_each_mode_verifies_what_the_mysql_client_does(tmp_path: Path) -> None:
    from tests.tls import make_certificates

    certs = make_certificates(str(tmp_path))
    try:
        def ctx(**options: str) -> ssl.SSLContext:
            c = ssl_context(parse_dsn(addr(**options)))
            assert c is not None
            return c

        required = ctx(**{"ssl-mode": "REQUIRED"})
        assert (required.verify_mode, required.check_hostname) == (ssl.CERT_NONE, False)
        verify_ca = ctx(**{"ssl-mode": "VERIFY_CA", "ssl-ca": str(certs.ca)})
        assert (verify_ca.verify_mode, verify_ca.check_hostname) == (ssl.CERT_REQUIRED, False)
        identity = ctx(**{"ssl-mode": "VERIFY_IDENTITY", "ssl-ca": str(certs.ca)})
        assert (identity.verify_mode, identity.check_hostname) == (ssl.CERT_REQUIRED, True)
        ctx(**{"ssl-mode": "REQUIRED", "ssl-cert": str(certs.client_cert), "ssl-key": str(certs.client_key)})
    finally:
        certs.remove()


def test_a_file_that_is_not_pem_is_a_target_error_naming_it(pem: dict[str, str]) -> None:
    with pytest.raises(TargetError, match=r"ssl-ca=.*ca\.pem: not a CA certificate"):
        ssl_context(parse_dsn(addr(**{"ssl-mode": "VERIFY_CA", "ssl-ca": pem["ca"]})))
    with pytest.raises(TargetError, match=r"ssl-cert=.*cert\.pem and ssl-key=.*key\.pem"):
        ssl_context(parse_dsn(addr(**{"ssl-mode": "REQUIRED", "ssl-cert": pem["cert"], "ssl-key": pem["key"]})))


def test_a_key_with_a_passphrase_is_refused_without_asking(tmp_path: Path) -> None:
    import subprocess

    key = tmp_path / "locked.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-aes256", "-pass", "pass:x", "-out", str(key)],
                   check=True, capture_output=True)
    from tests.tls import make_certificates

    certs = make_certificates(str(tmp_path))
    try:
        with pytest.raises(TargetError, match="passphrase"):
            ssl_context(parse_dsn(addr(**{"ssl-mode": "REQUIRED", "ssl-cert": str(certs.client_cert),
                                          "ssl-key": str(key)})))
    finally:
        certs.remove()


@pytest.mark.parametrize(("words", "says"), [
    ("IP address mismatch, certificate is not valid for '10.0.0.1'.", "not for db.example"),
    ("Hostname mismatch, certificate is not valid for 'db.example'.", "not for db.example"),
    ("self-signed certificate in certificate chain", "not signed by the CA in ssl-ca="),
])
def test_a_failed_certificate_check_is_explained(words: str, says: str, pem: dict[str, str]) -> None:
    """asyncmy reports a failed check as a 2003 whose text holds OpenSSL's words (the real handshakes
    are in tests/engine/test_tls.py; a name mismatch needs a second address for the server, made here)."""
    import asyncio

    import asyncmy

    from bench_dsl.server.connect import connect_failure

    d = parse_dsn(addr(**{"ssl-mode": "VERIFY_IDENTITY", "ssl-ca": pem["ca"]}))
    exc = asyncmy.errors.OperationalError(2003, "Can't connect to MySQL server on 'db.example' ([SSL: "
                                          f"CERTIFICATE_VERIFY_FAILED] certificate verify failed: {words} (_ssl.c:1006))")
    message = asyncio.run(connect_failure(d, exc))
    assert says in message and words.rstrip(".") in message


# redact as a single regex read it: the reference for what it hides (quadratic over long runs of letters
# and digits, so only ever given short texts here)
_PLAIN_REDACTION = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*:/{1,2})([^:/?#@\s\"']*):([^\s\"']*)@")


def test_redact_hides_what_the_plain_regex_hides() -> None:
    rng = random.Random(28)
    alphabet = "aZ19+.-:/@?# \"'\tx"
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(32)))
        if rng.random() < 0.3:
            text = rng.choice(["mysql://u:p@h ", "x mariadb://u:p@ss@h/db", "1a://b:c@"]) + text
        assert redact(text) == _PLAIN_REDACTION.sub(lambda m: f"{m[1]}{m[2]}:***@", text), text


@pytest.mark.parametrize("unit", ["a", "1a", "a://u:"])
def test_redact_is_linear_in_its_text(unit: str) -> None:
    """A 60 KB name in an error took seconds to redact: the regex tried each position of a run of
    letters and digits that did not end in an address (issue 28). Ten times the text takes about ten
    times as long, not a hundred (measured against itself, with a wide margin, in this thread's CPU
    seconds: the wall clock's counted the time other processes took the core, 59 times as long seen
    on a busy machine)."""
    def cost(n: int) -> float:
        text = unit * (n // len(unit)) + "://u@h"  # no password: no match, from wherever it starts
        number = 40_000 // n
        return min(timeit.repeat(lambda: redact(text), number=number, repeat=5, timer=time.thread_time)) / number

    short = unit * 3 + "://u:p@h"
    assert redact(short) == _PLAIN_REDACTION.sub(lambda m: f"{m[1]}{m[2]}:***@", short) != short
    small, large = cost(2_000), cost(20_000)
    assert large < 30 * small, (small, large)


def test_the_suites_own_address_is_shown_without_its_password() -> None:
    """A failing test's report shows its arguments and its comparisons: the session server's
    address among them, never its password (tests/conftest.py)."""
    from tests.conftest import SecretUrl, pytest_assertrepr_compare

    url = SecretUrl("mysql://root:s3cret-pw@127.0.0.1:3306/benchdsl")
    assert "s3cret" not in repr(url) and url == "mysql://root:s3cret-pw@127.0.0.1:3306/benchdsl"
    explained = pytest_assertrepr_compare("==", str(url), "x")
    assert explained is not None and "s3cret" not in " ".join(explained)
    assert pytest_assertrepr_compare("==", "a", "b") is None
