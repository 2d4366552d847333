"""TLS of a target's connections: the ssl.SSLContext of its address's ssl-mode (what the mysql
client's modes mean, in Python's terms), and why a connection failed when TLS is the cause. The
libmariadb executor reads the same Dsn fields and must mean the same (docs/tls.md)."""

from __future__ import annotations

import re
import ssl
from collections.abc import Awaitable, Callable
from functools import lru_cache

from bench_dsl.core.dsn import Dsn
from bench_dsl.core.errors import TargetError, error_reason


@lru_cache(maxsize=8)
def ssl_context(dsn: Dsn) -> ssl.SSLContext | None:
    """The TLS of the address's ssl-mode, as the mysql client means it: None (no TLS) for none,
    DISABLED and PREFERRED; REQUIRED encrypts and checks nothing; VERIFY_CA checks the server's
    certificate against ssl-ca; VERIFY_IDENTITY also that it names the host connected to. ssl-cert
    and ssl-key are the client's certificate. One context per address, shared by its connections
    (hundreds of users need not read the files hundreds of times). Raises TargetError when a file
    cannot be used, naming the option."""
    if not dsn.tls:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # TLS 1.2 at least, as Python's defaults
    ctx.check_hostname = dsn.ssl_mode == "VERIFY_IDENTITY"
    if dsn.ssl_mode == "REQUIRED":
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.verify_mode = ssl.CERT_REQUIRED
        try:
            ctx.load_verify_locations(cafile=dsn.ssl_ca)
        except (ssl.SSLError, OSError) as exc:
            raise TargetError(f"ssl-ca={dsn.ssl_ca}: not a CA certificate in PEM format that can be read "
                              f"({_ssl_reason(exc)})") from None
    if dsn.ssl_cert and dsn.ssl_key:
        asked: list[bool] = []

        def no_passphrase() -> str:
            # without it OpenSSL would ask on the terminal, in the middle of a run's screen
            asked.append(True)
            return ""

        try:
            ctx.load_cert_chain(dsn.ssl_cert, dsn.ssl_key, password=no_passphrase)
        except (ssl.SSLError, OSError) as exc:
            if asked:
                raise TargetError(f"ssl-key={dsn.ssl_key} is protected by a passphrase: give the key unencrypted "
                                  "(openssl pkey -in KEY -out PLAIN), as the mysql client needs it") from None
            raise TargetError(f"ssl-cert={dsn.ssl_cert} and ssl-key={dsn.ssl_key}: not a certificate and its "
                              f"private key in PEM format ({_ssl_reason(exc)})") from None
    return ctx


def _ssl_reason(exc: BaseException) -> str:
    return getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)


# MySQL's refusal of a connection without TLS under require_secure_transport=ON; MariaDB says 1045
# "Access denied" instead, the same as for a wrong password (told apart in explain_failure)
ER_SECURE_TRANSPORT_REQUIRED = 3159
ER_ACCESS_DENIED = 1045
TLS_HINT = ("add ?ssl-mode=REQUIRED to the address (or ssl-mode=VERIFY_CA&ssl-ca=PATH to also check the server's "
            "certificate)")


async def explain_failure(dsn: Dsn, exc: BaseException, admitted_over_tls: Callable[[Dsn], Awaitable[bool]]) -> str:
    """Why a connection to `dsn` failed, as a person reads it, with what to do about TLS when TLS is
    the cause: a server that takes TLS connections only, a certificate the CA given did not sign, a
    certificate for another host name. `admitted_over_tls` tries the account once over TLS: the
    server's own words cannot tell "TLS only" from a wrong password on MariaDB."""
    verify = _verify_error(exc)
    if verify is not None:
        if "mismatch" in verify.lower() or "doesn't match" in verify.lower():
            return (f"the server's certificate is not for {dsn.host} ({verify}): ssl-mode=VERIFY_IDENTITY checks "
                    "the name connected to against the certificate; connect by a name it holds, or use "
                    "ssl-mode=VERIFY_CA to check the CA only")
        return (f"the server's certificate is not signed by the CA in ssl-ca={dsn.ssl_ca} ({verify}): give the CA "
                "that signed the server's certificate (the server's ssl_ca), or ssl-mode=REQUIRED to encrypt "
                "without checking it")
    code = _code(exc)
    hint = TLS_HINT if dsn.ssl_mode is None else f"ssl-mode={dsn.ssl_mode} connects without TLS: {TLS_HINT}"
    if not dsn.tls and code == ER_SECURE_TRANSPORT_REQUIRED:
        return f"{error_reason(exc)}: the server takes TLS connections only: {hint}"
    if not dsn.tls and code == ER_ACCESS_DENIED and dsn.socket is None and await admitted_over_tls(dsn):
        return (f"{error_reason(exc)}: the server refuses this account without TLS and admits it with TLS "
                f"(require_secure_transport=ON, or the account's REQUIRE SSL): {hint}")
    if dsn.tls and (any(isinstance(e, ssl.SSLError) for e in _chain(exc)) or "[SSL" in _text(exc)):
        return (f"{error_reason(exc)}: the TLS handshake failed: the server may have no TLS (its "
                "SHOW VARIABLES LIKE 'have_ssl' must say YES)")
    return error_reason(exc)


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in out:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def _text(exc: BaseException) -> str:
    return " ".join(str(a) for a in getattr(exc, "args", ()))


def _verify_error(exc: BaseException) -> str | None:
    """The certificate check's own words when that is what failed (asyncmy wraps it in a 2003 whose
    text holds them), else None."""
    for e in _chain(exc):
        if isinstance(e, ssl.SSLCertVerificationError):
            return str(e.verify_message or e.reason or e)
    m = re.search(r"certificate verify failed: ([^(]*)", _text(exc))
    if m:
        return m.group(1).strip()
    return None


def _code(exc: BaseException) -> int | None:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None
