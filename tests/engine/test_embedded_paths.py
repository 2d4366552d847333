"""A throwaway server in a directory too deep for a Unix socket's path (server.dir on a long mount
path): its files stay there, its socket goes in a short private directory, and both are removed."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
from pathlib import Path

import asyncmy

from bench_dsl.server.embedded import SOCKET_PATH_MAX, EmbeddedServer


def test_a_server_in_a_deep_directory_starts_with_its_socket_elsewhere() -> None:
    top = Path(tempfile.mkdtemp(prefix="bd-deep-"))
    deep = top / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    assert len(os.fsencode(deep / "bench-dsl-server-xxxxxxxx" / "mysqld.sock")) > SOCKET_PATH_MAX
    srv = EmbeddedServer(parent=str(deep))
    try:
        dsn = asyncio.run(srv.start())
        assert srv.basedir is not None and srv.basedir.parent == deep and (srv.basedir / "data").is_dir()
        assert srv.socket_dir is not None and (srv.socket_dir / "mysqld.sock").exists()
        assert stat.S_IMODE(srv.socket_dir.stat().st_mode) == 0o700  # no other local user reaches it

        async def ask() -> int:
            conn = await asyncmy.connect(**dsn.connect_args())
            try:
                async with conn.cursor() as cur:
                    await cur.execute("SELECT 1")
                    return int((await cur.fetchone())[0])
            finally:
                conn.close()

        assert asyncio.run(ask()) == 1
        sockets = srv.socket_dir
    finally:
        srv.stop()
        shutil.rmtree(top, ignore_errors=True)
    assert not sockets.exists()
