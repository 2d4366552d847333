"""mysql:// addresses: the one parser, the one redaction, and identifier quoting. Passwords never
leave this module in clear: every message it makes shows an address redacted.

TLS and compression options take the mysql command-line client's names and meanings
(`--ssl-mode`, `--ssl-ca`, `--ssl-cert`, `--ssl-key`, `--compress`), so that an address a person
already uses with `mysql` reads the same here (docs/tls.md)."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

SCHEMES = ("mysql", "mariadb")
# what a database name may hold here: MySQL would take more inside backticks, but a name that needs
# them (a slash, a dot, a backtick, a NUL, a trailing space) is far likelier a mistake or an attack
_DATABASE = re.compile(r"[\w$-]{1,64}")

# --ssl-mode of the mysql client, weakest first. PREFERRED connects without TLS here (see docs/tls.md):
# a load test measures one known set-up, never whichever the server happened to offer.
SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
TLS_MODES = frozenset({"REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"})  # the modes that encrypt
VERIFYING_MODES = frozenset({"VERIFY_CA", "VERIFY_IDENTITY"})
OPTIONS = ("socket", "ssl-mode", "ssl-ca", "ssl-cert", "ssl-key", "compress")
_FILE_OPTIONS = ("ssl-ca", "ssl-cert", "ssl-key")
# what people write from other tools' habits, and what they mean here
_ALIASES = {
    "ssl": "ssl-mode=REQUIRED", "tls": "ssl-mode=REQUIRED", "sslmode": "ssl-mode=REQUIRED",
    "ssl-verify-server-cert": "ssl-mode=VERIFY_IDENTITY", "sslca": "ssl-ca", "ssl-capath": "ssl-ca=FILE",
    "sslcert": "ssl-cert", "sslkey": "ssl-key", "sslrootcert": "ssl-ca", "compression": "compress=1",
}
_BOOLEANS = {"1": True, "true": True, "on": True, "yes": True, "0": False, "false": False, "off": False, "no": False}
# One place to show what a verification mode asks for when the CA is missing.
_CA_HINT = ("give the CA that signed the server's certificate with ssl-ca=PATH (for a certificate from a "
            "public CA, the system's bundle: ssl-ca=/etc/ssl/certs/ca-certificates.crt), or "
            "ssl-mode=REQUIRED to encrypt without checking the certificate")


# What a server says it is, as every connection can ask it (any account may read these): its host's
# name, the port it listens on and its data directory tell apart two servers on one host or on many,
# and read the same through TCP and through the server's socket.
IDENTITY_SQL = "SELECT @@hostname, @@port, @@datadir"


@dataclass(frozen=True, slots=True)
class ServerIdentity:
    """A server as it names itself (IDENTITY_SQL): what every connection of a run must find at the
    other end, and what a server's saved settings are filed under."""

    hostname: str
    port: int
    datadir: str

    @classmethod
    def from_row(cls, row: Sequence[object]) -> ServerIdentity:
        hostname, port, datadir = row
        return cls(str(hostname), int(str(port)), str(datadir))

    def text(self) -> str:
        """IDENTITY_SQL's row as the C executor reads it: its values as text, tab-separated."""
        return f"{self.hostname}\t{self.port}\t{self.datadir}"

    def __str__(self) -> str:
        return f"{self.hostname}:{self.port} (data in {self.datadir})"

    @classmethod
    def shown(cls, text: str) -> str:
        """An answer to IDENTITY_SQL as text() writes it, worded as str() words an identity."""
        try:
            return str(cls.from_row(text.split("\t")))
        except ValueError:  # not three values, or no port: another kind of server, shown as it answered
            return text.replace("\t", " ")


@dataclass(frozen=True, slots=True)
class Dsn:
    host: str
    port: int
    user: str
    password: str
    database: str
    socket: str | None = None
    # ssl-mode, upper case as the mysql client spells it; None when the address gives none
    ssl_mode: str | None = None
    # absolute paths (a relative one is read from the directory bench-dsl was started in)
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    compress: bool = False
    # the server this address must lead to, once the run has met it: every connection made with the
    # address checks it (server/connect.py, the C executor), so that a user can never measure another
    # server than the one the run names, whatever the transport chose (issue 38)
    reaches: ServerIdentity | None = None

    @property
    def tls(self) -> bool:
        """Whether connections to this address are encrypted."""
        return self.ssl_mode in TLS_MODES

    def redacted(self) -> str:
        """The address as it may be shown: everything but the password. The TLS options stay (a
        key file's path is no secret; its content never leaves the file)."""
        auth = self.user + (":***" if self.password else "")
        where = f"{self.host}:{self.port}" if self.socket is None else "localhost"
        options = [("socket", self.socket), ("ssl-mode", self.ssl_mode), ("ssl-ca", self.ssl_ca),
                   ("ssl-cert", self.ssl_cert), ("ssl-key", self.ssl_key), ("compress", "1" if self.compress else None)]
        query = "&".join(f"{k}={quote(v, safe='/._-+~')}" for k, v in options if v is not None)
        return f"mysql://{auth}@{where}/{self.database}" + (f"?{query}" if query else "")

    def connect_args(self) -> dict[str, object]:
        """The arguments of asyncmy.connect where to go and as whom; TLS is server.ssl_context()'s."""
        args: dict[str, object] = {"user": self.user, "password": self.password}
        if self.socket:
            args["unix_socket"] = self.socket
        else:
            args["host"] = self.host
            args["port"] = self.port
        return args

    def notes(self) -> list[str]:
        """What the address asks for that a run will not do as a person may expect: said as
        warnings when a run starts (the options are valid, so they are not errors)."""
        out = []
        if self.ssl_mode in ("DISABLED", "PREFERRED") and (self.ssl_ca or self.ssl_cert):
            out.append(f"ssl-mode={self.ssl_mode}: ssl-ca, ssl-cert and ssl-key are ignored, connections are not "
                       "encrypted")
        if self.ssl_mode == "PREFERRED":
            out.append("ssl-mode=PREFERRED connects without TLS (a run measures one known set-up); "
                       "ssl-mode=REQUIRED encrypts")
        if self.ssl_mode == "REQUIRED" and self.ssl_ca:
            out.append("ssl-mode=REQUIRED: the server's certificate is not verified, ssl-ca is not used "
                       "(ssl-mode=VERIFY_CA checks it against ssl-ca), as with the mysql client")
        if self.compress:
            out.append("compress=1: the users of the C executor compress; bench-dsl's connections through "
                       "asyncmy (set-up, loading, BENCH_RAWEXEC=0) do not: asyncmy "
                       "cannot compress")
        return out


def parse_dsn(text: str) -> Dsn:
    """mysql://user:password@host:port/database[?options]; mariadb:// is the same. Options: socket=PATH,
    ssl-mode=DISABLED|PREFERRED|REQUIRED|VERIFY_CA|VERIFY_IDENTITY, ssl-ca=PATH, ssl-cert=PATH,
    ssl-key=PATH, compress=1|0. Raises ValueError with a message that shows the address redacted."""
    shown = redact(text)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", text)
    if scheme is None:
        raise ValueError(f"{shown!r} is not a mysql:// address")
    if scheme.group(1).lower() not in SCHEMES:
        raise ValueError(f"a {scheme.group(1)}:// address: only mysql:// and mariadb:// are supported")
    if not text[scheme.end():].startswith("//"):
        # mysql:/u:pw@h/db would read as a path: the password taken for the database's name
        raise ValueError(f"{shown!r}: write two slashes after {scheme.group(1)}:")
    if "#" in text:
        # '#' starts a fragment: whatever follows would silently not be part of the address
        raise ValueError(f"{shown!r}: a '#' in an address must be written %23 (in a password too)")
    try:
        u = urlsplit(text)
        port = u.port
    except ValueError:  # urllib's message quotes what it read as the port: it may be part of a password
        raise ValueError(f"{shown!r}: the port must be a number from 1 to 65535") from None
    q = _options(u.query, shown)
    if not u.netloc or (u.hostname is None and "socket" not in q):
        raise ValueError(f"{shown!r} has no host")
    path = (u.path or "/").lstrip("/")
    database = unquote(path) or "benchdsl"
    if not _DATABASE.fullmatch(database):
        raise ValueError(f"{shown!r}: the database name must be 1 to 64 letters, digits, _, $ or -")
    mode = _ssl_mode(q.get("ssl-mode"), shown)
    files = _tls_files(q, mode, shown)
    compress = q.get("compress")
    if compress is not None and compress.lower() not in _BOOLEANS:
        raise ValueError(f"{shown!r}: compress={compress}: write compress=1 or compress=0")
    return Dsn(
        host=u.hostname or "127.0.0.1",
        port=port or 3306,
        user=unquote(u.username or "root"),
        password=unquote(u.password or ""),
        database=database,
        socket=q.get("socket"),
        ssl_mode=mode,
        compress=_BOOLEANS[compress.lower()] if compress is not None else False,
        ssl_ca=files.get("ssl_ca"), ssl_cert=files.get("ssl_cert"), ssl_key=files.get("ssl_key"),
    )


def _options(query: str, shown: str) -> dict[str, str]:
    """The query's options by their canonical name (ssl_mode is ssl-mode, as in an option file).
    Read by hand, not parse_qs: a '+' in a file's path is a '+', and an option given twice is an error,
    not a silent choice of one."""
    out: dict[str, str] = {}
    for part in query.split("&") if query else ():
        raw, _, value = part.partition("=")
        name = unquote(raw).strip().replace("_", "-")
        if not name:
            continue  # '?&x=1' or a trailing '&'
        if name not in OPTIONS:
            known = f"known: {', '.join(OPTIONS)}"
            if name.lower() in _ALIASES:
                hint = f"; did you mean {_ALIASES[name.lower()]}?"
            else:
                close = difflib.get_close_matches(name.lower(), OPTIONS, n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
            raise ValueError(f"{shown!r}: unknown option {name} ({known}){hint}")
        if name in out:
            raise ValueError(f"{shown!r}: {name} is given twice")
        out[name] = unquote(value)
    return out


def _ssl_mode(value: str | None, shown: str) -> str | None:
    if value is None:
        return None
    mode = value.strip().upper().replace("-", "_")
    if mode not in SSL_MODES:
        close = difflib.get_close_matches(mode, SSL_MODES, n=1)
        raise ValueError(f"{shown!r}: ssl-mode={value}: " + (f"did you mean ssl-mode={close[0]}? " if close else "")
                         + f"the modes are {', '.join(SSL_MODES)} (as the mysql client's --ssl-mode)")
    return mode


def _tls_files(q: dict[str, str], mode: str | None, shown: str) -> dict[str, str | None]:
    """ssl-ca, ssl-cert and ssl-key as absolute paths of files that exist, and checked against the
    mode: found out when the file is checked, not when the first user connects."""
    given = [o for o in _FILE_OPTIONS if o in q]
    for o in given:
        if not q[o].strip():
            raise ValueError(f"{shown!r}: {o} is empty: give the path of a PEM file")
    if ("ssl-cert" in q) != ("ssl-key" in q):
        have, missing = ("ssl-cert", "ssl-key") if "ssl-cert" in q else ("ssl-key", "ssl-cert")
        raise ValueError(f"{shown!r}: {have} without {missing}: a client certificate needs its private key "
                         "(ssl-cert=PATH&ssl-key=PATH, both or neither)")
    if mode is None and given:
        # the mysql client would fall back to PREFERRED; here that would drop a CA given to be checked
        what = "ssl-ca" if "ssl-ca" in q else "ssl-cert"
        raise ValueError(f"{shown!r}: {what} without ssl-mode: say what to check: ssl-mode=VERIFY_CA (the "
                         "server's certificate against ssl-ca), VERIFY_IDENTITY (and its name) or REQUIRED "
                         "(encryption only)")
    if mode in VERIFYING_MODES and "ssl-ca" not in q:
        # as the mysql client: "CA certificate is required if ssl-mode is VERIFY_CA or VERIFY_IDENTITY"
        raise ValueError(f"{shown!r}: ssl-mode={mode} verifies the server's certificate against a CA, and none "
                         f"is given: {_CA_HINT}")
    out: dict[str, str | None] = {}
    for o in _FILE_OPTIONS:
        if o not in q:
            continue
        path = os.path.abspath(os.path.expanduser(q[o]))
        # DISABLED and PREFERRED do not read them, as the mysql client does not: not checked
        if mode in TLS_MODES and not os.path.isfile(path):
            why = "is not a file" if os.path.exists(path) else "does not exist"
            raise ValueError(f"{shown!r}: {o}={q[o]}: {path} {why}")
        out[o.replace("-", "_")] = path
    return out


def quote_identifier(name: str) -> str:
    """A name as MySQL reads it inside backticks, whatever it holds."""
    if "\x00" in name:
        raise ValueError("a name cannot hold a NUL character")
    return "`" + name.replace("`", "``") + "`"


# Any scheme, any case: the password runs to the last '@' of the address, as urlsplit reads it ("p@ss"
# in mysql://u:p@ss@host/db), and past characters that do not belong in it ('#', '?'), so that a
# malformed address is hidden as well as a good one. Erring on the side of hiding too much.
# An address never spans whitespace or a quote, so each run of other characters is read alone, only
# up to its last '@' (nothing past it can be a password). The scheme starts a run of scheme characters
# (at its first letter) and its quantifiers do not backtrack: redaction stays linear in the text, where
# a plain regex over a long run of letters and digits tried every position of it (issue 28).
_ADDRESS_RUN = re.compile(r"[^\s\"']+")
_PASSWORD = re.compile(r"(?<![A-Za-z0-9+.-])([0-9+.-]*+[A-Za-z][A-Za-z0-9+.-]*+:/{1,2})([^:/?#@\s\"']*+):[^\s\"']*@")


def redact(text: str) -> str:
    """Any scheme://user:password@ in a text, with the password replaced by ***."""
    if "@" not in text or ":/" not in text:
        return text
    return _ADDRESS_RUN.sub(_redact_run, text)


def _redact_run(run: re.Match[str]) -> str:
    text = run.group()
    last = text.rfind("@")
    if last < 0 or ":/" not in text:
        return text
    return _PASSWORD.sub(lambda m: f"{m.group(1)}{m.group(2)}:***@", text[:last + 1]) + text[last + 1:]
