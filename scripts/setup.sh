#!/usr/bin/env bash
# Installs what `make run` and `make test` need on a fresh Debian machine:
# a MariaDB server from Debian's packages (when no mysqld/mariadbd is found), sysbench for the
# benchmark's test, tmux for the terminal tests, chromium for the HTML report's test, Prometheus'
# node_exporter for the host monitor's test, openssl for the TLS test's certificates, a C compiler,
# Python's headers and libmariadb's for the C executor when missing, and the Python dependencies in
# ./.venv.
# Safe to run again: it only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

need_apt=()
if ! command -v mariadbd >/dev/null 2>&1 && ! command -v mysqld >/dev/null 2>&1 \
   && [ ! -x /usr/sbin/mariadbd ] && [ ! -x /usr/sbin/mysqld ]; then
  need_apt+=(mariadb-server)
fi
if ! command -v sysbench >/dev/null 2>&1; then
  need_apt+=(sysbench)  # the reference client of the benchmark, whose quick run is a test
fi
if ! command -v tmux >/dev/null 2>&1; then
  need_apt+=(tmux)  # the terminal UI's end-to-end test reads a real terminal's screen
fi
if ! command -v prometheus-node-exporter >/dev/null 2>&1 && [ ! -x /usr/bin/prometheus-node-exporter ]; then
  need_apt+=(prometheus-node-exporter)  # monitor's test scrapes a real exporter, started by the test
fi
if ! command -v chromium >/dev/null 2>&1; then
  need_apt+=(chromium)  # the report's test opens the HTML report in a real headless browser
fi
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  need_apt+=(python3-venv)
fi
if ! command -v openssl >/dev/null 2>&1; then
  need_apt+=(openssl)  # the TLS test makes a CA and a server certificate
fi
# the C executor (bench_dsl/native/src/) is compiled against libmariadb when the package is installed
if ! command -v mariadb_config >/dev/null 2>&1; then
  need_apt+=(libmariadb-dev)
fi
if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
  need_apt+=(gcc libc6-dev)
fi
if ! python3 -c 'import os, sysconfig; raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' >/dev/null 2>&1; then
  need_apt+=(python3-dev)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]} from Debian's packages" >&2
  $SUDO apt-get update -qq
  # The package's post-install may try to start a system service; we never use it.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >&2
fi

stamp=.venv/.installed
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# an editable install compiles the C core once: install again when it changes. uv installs the ~60
# packages (Ray's among them) in parallel: 17 s against pip's 50 s here, a third of `make test`'s
# set-up on a fresh clone. --compile-bytecode as pip does: PYTHONDONTWRITEBYTECODE would otherwise
# have every process compile what it imports.
# (any of its units or headers newer than the stamp, or one added or removed: the directory's own time)
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
   || [ -n "$(find bench_dsl/native/src -newer "$stamp" -print -quit)" ]; then
  .venv/bin/python -m pip install -q 'uv>=0.13' >&2
  .venv/bin/uv pip install -q --python .venv/bin/python --compile-bytecode -e '.[test,ray]' >&2
  touch "$stamp"
fi
# Compiled once here, each module is not compiled again by every process a run starts (the coordinator
# and each worker: 0.2 s of CPU apiece) where PYTHONDONTWRITEBYTECODE keeps Python from caching it.
# Incremental: only what changed since is compiled again.
.venv/bin/python -m compileall -q bench_dsl tui bench >/dev/null
