"""What a run says of its server once it is up (the `Started` event, the result's "server"): its
address (no password), version, variables, the settings applied and how, where cpu(server) comes
from, TLS, and the identity every connection was checked against. Types only, no driver: the
events and the displays load it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench_dsl.core.dsn import ServerIdentity


@dataclass(frozen=True, slots=True)
class AppliedSetting:
    name: str
    requested: str
    before: str | None
    after: str | None
    applied: bool
    note: str

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "requested": self.requested, "before": self.before, "after": self.after,
                "applied": self.applied, "note": self.note}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> AppliedSetting:
        return cls(str(d.get("name", "")), str(d.get("requested", "")), d.get("before"), d.get("after"),
                   bool(d.get("applied")), str(d.get("note", "")))


@dataclass(frozen=True, slots=True)
class ServerInfo:
    target: str  # its address, password removed
    embedded: bool  # a throwaway server bench-dsl started
    version: str
    pid_visible: bool  # its process is on this machine and seen (cpu(server) is read from it)
    variables: dict[str, str]  # SHOW GLOBAL VARIABLES, by name
    settings: tuple[AppliedSetting, ...] = ()
    directory: str | None = None  # the throwaway server's
    replicas: tuple[str, ...] = ()  # addresses, passwords removed
    cpu_source: str | None = None  # "process", "node_exporter" (monitor), or None: not read
    monitor: str | None = None
    tls: dict[str, Any] = field(default_factory=dict)  # mode, cipher, version
    identity: ServerIdentity | None = None  # what every connection of the run reached

    def to_json(self) -> dict[str, Any]:
        ident = self.identity
        return {"target": self.target, "embedded": self.embedded, "version": self.version,
                "pid_visible": self.pid_visible, "variables": self.variables,
                "settings": [s.to_json() for s in self.settings], "directory": self.directory,
                "replicas": list(self.replicas), "cpu_source": self.cpu_source, "monitor": self.monitor,
                # a result read back without them (one hand-made, one of before TLS was said) has none
                **({"tls": self.tls} if self.tls else {}),
                **({"identity": {"hostname": ident.hostname, "port": ident.port, "datadir": ident.datadir}}
                   if ident is not None else {})}

    @classmethod
    def from_json(cls, d: Any) -> ServerInfo | None:
        """A result's "server" (None where it has none: a run that never reached one)."""
        if not isinstance(d, dict) or "target" not in d:
            return None
        ident = d.get("identity")
        return cls(str(d["target"]), bool(d.get("embedded")), str(d.get("version") or ""), bool(d.get("pid_visible")),
                   dict(d.get("variables") or {}),
                   tuple(AppliedSetting.from_json(s) for s in d.get("settings") or [] if isinstance(s, dict)),
                   d.get("directory"), tuple(d.get("replicas") or ()), d.get("cpu_source"), d.get("monitor"),
                   dict(d.get("tls") or {}),
                   ServerIdentity(str(ident["hostname"]), int(ident["port"]), str(ident["datadir"]))
                   if isinstance(ident, dict) else None)
