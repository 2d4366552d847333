#!/usr/bin/env bash
# `make bench` needs sysbench 1.0 as the reference client: install it from Debian's packages when
# it is missing (it only does what is missing, so it is safe to run again).
set -euo pipefail
if command -v sysbench >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "bench: installing sysbench from Debian's packages" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends sysbench >&2
