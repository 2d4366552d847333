"""Authentication plugins: a user the server identifies with ed25519 (MariaDB's auth_ed25519) runs
a whole scenario, its setup through asyncmy and its users on the C executor, where libmariadb
handles the plugin; and a wrong password is an error for humans, not a hang."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_dsl.core.dsn import Dsn
from bench_dsl.server.connect import connect, ensure_database
from tests.conftest import run_bench

SCENARIO = """scenario "ed25519" {
  target env("BENCH_ED_DSN")
  setup {
    sql "CREATE TABLE IF NOT EXISTS auth_kv (id INT PRIMARY KEY, v INT NOT NULL)"
    fill auth_kv rows 100 { id = sequence(1)  v = uniform(0, 9) }
  }
  workload custom {
    transaction read { let id = uniform(1, 100)  query "SELECT v FROM auth_kv WHERE id = :id" }
  }
  users 2
  warmup 0s
  duration 2s
}
"""


@pytest.fixture(scope="module")
def ed_user(server: tuple[Dsn, object]) -> tuple[Dsn, str]:
    import asyncio

    dsn = server[0]

    async def create() -> None:
        await ensure_database(dsn)
        conn = await connect(dsn, None)
        try:
            async with conn.cursor() as cur:
                await cur.execute("SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'ed25519'")
                if not (await cur.fetchone())[0]:
                    await cur.execute("INSTALL SONAME 'auth_ed25519'")
                await cur.execute("DROP USER IF EXISTS 'bench_ed'@'%'")
                await cur.execute("CREATE USER 'bench_ed'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('ed-Secret-42')")
                await cur.execute(f"GRANT ALL ON `{dsn.database}`.* TO 'bench_ed'@'%'")
        finally:
            conn.close()

    asyncio.run(create())
    return dsn, f"mysql://bench_ed:ed-Secret-42@127.0.0.1:{dsn.port}/{dsn.database}"


def test_an_ed25519_user_runs_a_scenario_on_the_c_executor(ed_user: tuple[Dsn, str], tmp_path: Path) -> None:
    src = tmp_path / "ed.bench"
    src.write_text(SCENARIO)
    out = tmp_path / "ed.json"
    r = run_bench("run", str(src), "--headless", "--json", str(out), env={"BENCH_ED_DSN": ed_user[1]})
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["executor"] == "libmariadb" and doc["summary"]["count"] > 100 and doc["summary"]["errors"] == 0
    assert "ed-Secret-42" not in out.read_text() + r.stdout + r.stderr


def test_a_wrong_password_is_an_error_for_humans(ed_user: tuple[Dsn, str], tmp_path: Path) -> None:
    src = tmp_path / "ed.bench"
    src.write_text(SCENARIO)
    r = run_bench("run", str(src), "--headless", "--json", str(tmp_path / "r.json"),  # not in the repository's results/
                  env={"BENCH_ED_DSN": ed_user[1].replace("ed-Secret-42", "nope-Wrong")})
    assert r.returncode == 4, r.stderr
    assert "Traceback" not in r.stderr and "Access denied" in r.stderr and "nope-Wrong" not in r.stderr
