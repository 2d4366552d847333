"""The UI in a real terminal: `bench run` in a tmux pane of 120x40 against the test server, the screen
read with capture-pane: the figures change as the run goes, the hold key works, the verdict appears
and q leaves with the run's exit status and its results written."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ..conftest import BENCH, ROOT

# waits on a real terminal's screens, each for up to WAIT_S: a busy machine slows them, never fails them
pytestmark = [pytest.mark.slow]

SCENARIO = """
scenario "ui in a terminal" {
  target env("BENCH_DSN")
  workload sysbench oltp_point_select { tables = 1  table_size = 2000 }
  warmup 1s
  ramp step { start 1 users  step x2  settle 1s  hold 3s  max 4 users }
  stop when { p99 > 10s  error_rate > 50% }
  report every 1s
}
"""

WAIT_S = 90.0  # for each thing to show up on a busy machine; a healthy run takes a few seconds


class Tmux:
    """A private tmux server (its own socket), so a person's sessions are never touched."""

    def __init__(self, tmp: Path) -> None:
        # one server a test: the one before may still be going away (kill-server does not wait), and
        # a new session on a server that is exiting failed (exit status 1) under a loaded machine
        self.socket = f"bench-dsl-test-{os.getpid()}-{secrets.token_hex(4)}"
        self.tmp = tmp

    def __call__(self, *args: str) -> str:
        # The environment of os.environ, given explicitly: GNU readline, once loaded in this process
        # without a terminal, sets COLUMNS=80 LINES=24 in the C environment that children inherit by
        # default, and the app in the pane would believe them rather than its 120x40 terminal. The
        # server started by the first command keeps this environment for its panes: the server's
        # address (BENCH_DSN) reaches bench from there, never through a command line (`ps` shows
        # those to every user, and a failed command's report would print its password).
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        r = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30, env=env)
        if r.returncode != 0:
            raise AssertionError(f"tmux {args[0]} failed (exit status {r.returncode}): {r.stderr.strip()}")
        return r.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "ui")

    def wait_for(self, what: str, ok: Callable[[str], bool]) -> str:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            text = self.screen()
            if ok(text):
                return text
            time.sleep(0.2)
        size = self("display", "-p", "-t", "ui", "#{window_width}x#{window_height}").strip()
        raise AssertionError(f"{what} never appeared; the screen ({size}) was:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    # never skipped: a missing tmux is a broken set-up, which scripts/setup.sh mends
    assert shutil.which("tmux") is not None, "tmux is not installed: run scripts/setup.sh (make test does)"
    t = Tmux(tmp_path)
    try:
        yield t
    finally:
        t.kill()


def figures(screen: str) -> tuple[str, ...]:
    """The values under the labels users / tps / tpm ... of the figures row."""
    lines = screen.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.split()[:3] == ["users", "tps", "tpm"]:
            return tuple(lines[i + 1].split())
    return ()


def test_the_screen_of_a_real_run(tmux: Tmux, dsn_url: str, tmp_path: Path) -> None:
    f = tmp_path / "ui.bench"
    f.write_text(SCENARIO)
    out, rc = tmp_path / "ui.json", tmp_path / "rc"
    command = (f"cd {ROOT} && {sys.executable} -m bench_dsl.cli.main run {f} --json {out}; "
               f"echo $? > {rc}; sleep 120")
    tmux("new-session", "-d", "-s", "ui", "-x", "120", "-y", "40", command)

    first = tmux.wait_for("the first figures", lambda s: "step 1/3 hold" in s and figures(s)[:1] == ("1",))
    assert "ui in a terminal" in first and ("on MariaDB" in first or "on MySQL" in first)
    tmux.wait_for("figures that change", lambda s: figures(s) != figures(first) and figures(s) != ())

    tmux("send-keys", "-t", "ui", "h")
    tmux.wait_for("the hold", lambda s: "HOLDING" in s)
    tmux("send-keys", "-t", "ui", "h")
    tmux.wait_for("the hold released", lambda s: "hold released" in s and "HOLDING" not in s)

    done = tmux.wait_for("the verdict", lambda s: "press q or Enter to leave" in s)
    assert "No stop condition fired: 4 users met every condition" in done
    assert f"results {out}" in done
    assert "FIRED" not in done and any(dot in done for dot in "⠤⠒⠉⣀")  # the charts were drawn
    assert not rc.exists()  # the verdict stays until a key

    tmux("send-keys", "-t", "ui", "q")
    deadline = time.monotonic() + WAIT_S
    while not rc.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert rc.read_text().strip() == "0"
    doc = json.loads(out.read_text())
    assert doc["status"] == "completed" and [s["users"] for s in doc["steps"]] == [1, 2, 4]
    after = tmux.screen()
    assert "no stop condition fired: 4 users met every condition" in after  # printed on leaving


def test_closing_the_terminal_at_the_verdict_ends_bench(tmux: Tmux, dsn_url: str, tmp_path: Path) -> None:
    """The screen waits for a key after the verdict; a closed terminal (tmux window, ssh session)
    must end it, not leave it running as an orphan."""
    import psutil

    f = tmp_path / "closed.bench"
    f.write_text(SCENARIO.replace("max 4 users", "max 1 users"))
    out = tmp_path / "closed.json"
    command = f"cd {ROOT} && {sys.executable} -m bench_dsl.cli.main run {f} --json {out}"
    tmux("new-session", "-d", "-s", "ui", "-x", "120", "-y", "40", command)
    tmux.wait_for("the verdict", lambda s: "press q or Enter to leave" in s)
    bench = [p for p in psutil.process_iter(["cmdline"]) if str(f) in " ".join(p.info["cmdline"] or [])]
    assert bench
    tmux("kill-session", "-t", "ui")  # the terminal goes: SIGHUP to what runs in it
    # an orphan waits for a key for ever, or hangs in Textual's output queue (bench_dsl/tui/hangup_driver.py, where
    # one of 8 runs under load hung before); leaving takes 2-3 s on a loaded machine
    _, alive = psutil.wait_procs(bench, timeout=60)
    for p in alive:  # an orphan must not outlive the test that found it
        p.kill()
    assert not alive, "bench outlived its terminal"
    assert json.loads(out.read_text())["status"] == "completed"


# The terminal's session leader, as a shell is: it starts bench in the foreground and writes down
# its exit status where a closed terminal cannot take it away. `forwarded`: a hangup reaches bench
# (as an interactive shell passes it on to its jobs); `ignored`: bench inherits a SIGHUP ignored
# (`trap '' HUP` in the shell that starts it), and the leader passes nothing on: only the terminal
# tells. (The kernel signals a hangup to the session leader alone.)
LEADER = """
import os, signal, subprocess, sys
mode, pid_file, rc_file, *command = sys.argv[1:]
signal.signal(signal.SIGHUP, signal.SIG_IGN)
child = signal.SIG_IGN if mode == "ignored" else signal.SIG_DFL
bench = subprocess.Popen(command, preexec_fn=lambda: signal.signal(signal.SIGHUP, child))
with open(pid_file + ".tmp", "w") as f:
    f.write(str(bench.pid))
os.rename(pid_file + ".tmp", pid_file)
if mode == "forwarded":
    signal.signal(signal.SIGHUP, lambda *_: bench.send_signal(signal.SIGHUP))
rc = bench.wait()
with open(rc_file + ".tmp", "w") as f:
    f.write(str(rc))
os.rename(rc_file + ".tmp", rc_file)
"""


def _closed_terminal(tmux: Tmux, dsn_url: str, tmp_path: Path, mode: str, scenario: str,
                     close_at: Callable[[str], bool]) -> tuple[int, dict[str, object]]:
    """bench run in a pane led by LEADER (mode), the session killed once the screen shows `close_at`:
    bench's exit status and its result."""
    f, out, pid, rc = tmp_path / "closed.bench", tmp_path / "closed.json", tmp_path / "pid", tmp_path / "rc"
    f.write_text(scenario)
    (tmp_path / "leader.py").write_text(LEADER)
    # several arguments: tmux runs the leader itself, no shell between it and the terminal
    tmux("new-session", "-d", "-s", "ui", "-x", "120", "-y", "40", "-c", str(ROOT),
         sys.executable, str(tmp_path / "leader.py"), mode, str(pid), str(rc),
         *BENCH, "run", str(f), "--json", str(out))
    tmux.wait_for("the moment to close the terminal", close_at)
    tmux("kill-session", "-t", "ui")
    deadline = time.monotonic() + WAIT_S  # leaving takes a few seconds on a loaded machine
    while not rc.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if not rc.exists():  # an orphan must not outlive the test that found it
        os.kill(int(pid.read_text()), 9)
        raise AssertionError("bench outlived its terminal")
    return int(rc.read_text()), json.loads(out.read_text())


@pytest.mark.parametrize("mode", ["forwarded", "ignored"])
def test_a_terminal_closed_at_the_verdict_ends_bench_with_the_results_status(
        tmux: Tmux, dsn_url: str, tmp_path: Path, mode: str) -> None:
    """Without a hangup, only the terminal says it is gone: bench waited at the verdict for ever."""
    code, doc = _closed_terminal(tmux, dsn_url, tmp_path, mode, SCENARIO.replace("max 4 users", "max 1 users"),
                                 lambda s: "press q or Enter to leave" in s)
    assert doc["status"] == "completed"
    assert code == doc["exit_code"] == 0


def test_a_terminal_closed_during_the_run_ends_bench_with_the_results_status(
        tmux: Tmux, dsn_url: str, tmp_path: Path) -> None:
    """The hangup stops the run, which says 129; bench exited 1, failing to print on the gone terminal."""
    code, doc = _closed_terminal(tmux, dsn_url, tmp_path, "forwarded",
                                 SCENARIO.replace("max 4 users", "max 1 users").replace("hold 3s", "hold 300s"),
                                 lambda s: "step 1/1 hold" in s)
    assert doc["status"] == "interrupted"
    assert code == doc["exit_code"] == 129


def test_a_terminal_closed_and_no_hangup_lets_the_run_end_then_bench_leaves(
        tmux: Tmux, dsn_url: str, tmp_path: Path) -> None:
    """A hangup ignored keeps the run going to its end; with nobody to press a key, bench leaves then."""
    code, doc = _closed_terminal(tmux, dsn_url, tmp_path, "ignored", SCENARIO.replace("max 4 users", "max 1 users"),
                                 lambda s: "step 1/1" in s)
    assert doc["status"] == "completed"
    assert code == doc["exit_code"] == 0
