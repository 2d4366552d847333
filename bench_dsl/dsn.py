"""mysql:// addresses: parsing and redaction. Passwords never leave this module in clear."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit


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
    u = urlsplit(text)
    if u.scheme not in ("mysql", "mariadb"):
        raise ValueError(f"not a mysql:// address: {redact(text)}")
    q = parse_qs(u.query)
    return Dsn(
        host=u.hostname or "127.0.0.1",
        port=u.port or 3306,
        user=unquote(u.username or "root"),
        password=unquote(u.password or ""),
        database=(u.path or "/").lstrip("/") or "benchdsl",
        socket=q["socket"][0] if "socket" in q else None,
    )


# the password runs to the authority's last '@', as urlsplit reads it: "p@ss" in mysql://u:p@ss@host/db
_PASSWORD = re.compile(r"(mysql|mariadb)://([^:/?#@\s]*):([^/?#\s]*)@")


def redact(text: str) -> str:
    """Any mysql://user:password@ in a text, with the password replaced by ***."""
    return _PASSWORD.sub(lambda m: f"{m.group(1)}://{m.group(2)}:***@", text)
