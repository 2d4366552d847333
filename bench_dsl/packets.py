"""The client's side of the MySQL protocol that the raw executor writes: commands as packets
(COM_QUERY for BEGIN, COMMIT and ROLLBACK), and executions of server-side prepared statements
(COM_STMT_EXECUTE) with integer, float, text, blob and NULL parameters."""

from __future__ import annotations

import struct
from typing import Any

COM_QUERY = 0x03
COM_STMT_EXECUTE = 0x17

_HEADER = struct.Struct("<I").pack  # 3-byte payload length, sequence id 0 in the high byte
_Q = struct.Struct("<q").pack
_D = struct.Struct("<d").pack
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1
MAX_PAYLOAD = 0xFFFFFF  # a longer payload continues in another packet


def command(cmd: int, body: bytes) -> bytes:
    """A client command as one packet (sequence 0)."""
    if 1 + len(body) >= MAX_PAYLOAD:
        raise ValueError("command too large for one packet")
    return _HEADER(1 + len(body)) + bytes((cmd,)) + body


def query(sql: str) -> bytes:
    return command(COM_QUERY, sql.encode())


BEGIN = query("BEGIN")
COMMIT = query("COMMIT")
ROLLBACK = query("ROLLBACK")


def _lenenc(n: int) -> bytes:
    if n < 251:
        return bytes((n,))
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


class Statement:
    """Encodes executions of one server-side prepared statement with `params` parameters. Values
    are sent with their own types: int as a signed 64-bit integer, float as a double, None as
    NULL, bytes as a blob, anything else as its text."""

    def __init__(self, statement_id: int, params: int) -> None:
        self.params = params
        # statement id, no cursor, one iteration; then the NULL bitmap, and types with every execute
        self._prefix = bytes((COM_STMT_EXECUTE,)) + struct.pack("<IBI", statement_id, 0, 1)
        self._bitmap = (params + 7) // 8
        # every parameter an integer (point selects, ranges, updates by key): one header, one pack
        ints = self._prefix + bytes(self._bitmap) + b"\x01" + b"\x08\x00" * params
        self._ints_head = _HEADER(len(ints) + 8 * params) + ints
        self._ints = struct.Struct(f"<{params}q").pack
        self._one_head = self._ints_head if params == 1 else None

    @property
    def int_head(self) -> bytes:
        """The packet up to its value, for a statement whose only parameter is a 64-bit integer."""
        if self._one_head is None:
            raise ValueError("not a one-parameter statement")
        return self._one_head

    @classmethod
    def of(cls, prepared: Any) -> Statement:
        """The encoder of a statement asyncmy prepared (`Connection.prepare`)."""
        return cls(prepared._statement_id, prepared.parameter_count)

    def one(self, value: int) -> bytes:
        """The packet for a statement whose only parameter is an integer (the hot case)."""
        head = self._one_head
        if head is not None and type(value) is int:
            try:
                return head + _Q(value)
            except struct.error:  # beyond 64 bits: sent as text
                pass
        return self.packet(value)

    def template(self, *sample: object) -> bytes:
        """The packet up to its values, for executions whose values have the types and lengths of
        `sample` (ints, and strings whose encoded length stays below 251): appending the values'
        encodings (8 bytes an int; a length byte and the bytes a string) makes the packet, as
        `packet` would encode it. For packets built elsewhere (the C core's Oltp)."""
        if not all(type(v) is int or (type(v) is str and len(v.encode()) < 251) for v in sample):
            raise ValueError("a template's values are ints and short strings")
        data = sum(8 if type(v) is int else 1 + len(str(v).encode()) for v in sample)
        full = self.packet(*sample)
        return full[:len(full) - data]

    def packet(self, *values: object) -> bytes:
        if len(values) != self.params:
            raise ValueError(f"{self.params} parameter(s) expected, got {len(values)}")
        if not values:
            return _HEADER(len(self._prefix)) + self._prefix
        for v in values:
            if type(v) is not int or not _INT_MIN <= v <= _INT_MAX:
                break
        else:
            return self._ints_head + self._ints(*values)
        nulls = bytearray(self._bitmap)
        types: list[bytes] = []
        data: list[bytes] = []
        for j, v in enumerate(values):
            if v is None:
                nulls[j >> 3] |= 1 << (j & 7)
                types.append(b"\x06\x00")
            elif isinstance(v, int) and _INT_MIN <= v <= _INT_MAX:
                types.append(b"\x08\x00")
                data.append(_Q(v))
            elif isinstance(v, float):
                types.append(b"\x05\x00")
                data.append(_D(v))
            else:
                b = bytes(v) if isinstance(v, (bytes, bytearray)) else str(v).encode()
                types.append(b"\xfc\x00" if isinstance(v, (bytes, bytearray)) else b"\xfd\x00")
                data.append(_lenenc(len(b)))
                data.append(b)
        body = b"".join((self._prefix, nulls, b"\x01", *types, *data))
        if len(body) >= MAX_PAYLOAD:
            raise ValueError("statement parameters too large for one packet")
        return _HEADER(len(body)) + body
