"""mysql:// addresses: the one parser, the one redaction, and identifier quoting. Passwords never
leave this module in clear: every message it makes shows an address redacted."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

SCHEMES = ("mysql", "mariadb")
# what a database name may hold here: MySQL would take more inside backticks, but a name that needs
# them (a slash, a dot, a backtick, a NUL, a trailing space) is far likelier a mistake or an attack
_DATABASE = re.compile(r"[\w$-]{1,64}")


@dataclass(frozen=True, slots=True)
class Dsn:
    host: str
    port: int
    user: str
    password: str
    database: str
    socket: str | None = None

    def redacted(self) -> str:
        auth = self.user + (":***" if self.password else "")
        where = f"{self.host}:{self.port}" if self.socket is None else f"localhost?socket={self.socket}"
        return f"mysql://{auth}@{where}/{self.database}"

    def connect_args(self) -> dict[str, object]:
        args: dict[str, object] = {"user": self.user, "password": self.password}
        if self.socket:
            args["unix_socket"] = self.socket
        else:
            args["host"] = self.host
            args["port"] = self.port
        return args


def parse_dsn(text: str) -> Dsn:
    """mysql://user:password@host:port/database[?socket=PATH]; mariadb:// is the same. Raises
    ValueError with a message that shows the address redacted."""
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
    if not u.netloc or (u.hostname is None and "socket" not in u.query):
        raise ValueError(f"{shown!r} has no host")
    q = parse_qs(u.query, keep_blank_values=True)
    unknown = sorted(set(q) - {"socket"})
    if unknown:
        raise ValueError(f"{shown!r}: unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                         "(known: socket)")
    path = (u.path or "/").lstrip("/")
    database = unquote(path) or "benchdsl"
    if not _DATABASE.fullmatch(database):
        raise ValueError(f"{shown!r}: the database name must be 1 to 64 letters, digits, _, $ or -")
    return Dsn(
        host=u.hostname or "127.0.0.1",
        port=port or 3306,
        user=unquote(u.username or "root"),
        password=unquote(u.password or ""),
        database=database,
        socket=q["socket"][0] if "socket" in q else None,
    )


def quote_identifier(name: str) -> str:
    """A name as MySQL reads it inside backticks, whatever it holds."""
    if "\x00" in name:
        raise ValueError("a name cannot hold a NUL character")
    return "`" + name.replace("`", "``") + "`"


# Any scheme, any case: the password runs to the last '@' of the address, as urlsplit reads it ("p@ss"
# in mysql://u:p@ss@host/db), and past characters that do not belong in it ('#', '?'), so that a
# malformed address is hidden as well as a good one. Erring on the side of hiding too much.
_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*:/{1,2})([^:/?#@\s\"']*):([^\s\"']*)@")


def redact(text: str) -> str:
    """Any scheme://user:password@ in a text, with the password replaced by ***."""
    return _PASSWORD.sub(lambda m: f"{m.group(1)}{m.group(2)}:***@", text)
