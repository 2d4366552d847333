#!/usr/bin/env bash
# The unit and engine floors run ROUNDS times while HOGS busy loops keep every core busy: a test that
# depends on the wall clock or on how busy the machine is fails here first (issue 40, 7). Each round's
# summary line goes to stdout; a failed round keeps its log in $OUT. Exit 1 if any round failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-20} HOGS=${HOGS:-4} OUT=${OUT:-$(mktemp -d /tmp/soak.XXXXXX)}
mkdir -p "$OUT"
hogs=()
for _ in $(seq "$HOGS"); do
  ( while :; do :; done ) &
  hogs+=("$!")
done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
failed=0
for i in $(seq "$ROUNDS"); do
  log="$OUT/round-$i.log"
  if .venv/bin/python -m pytest -q -n 4 --dist loadfile -p no:cacheprovider tests/unit tests/engine > "$log" 2>&1; then
    echo "round $i: $(tail -1 "$log")"
    rm -f "$log"
  else
    echo "round $i FAILED: $(grep -E '^FAILED|^ERROR' "$log" | head -5 | tr '\n' ' ') (log: $log)"
    failed=1
  fi
done
exit "$failed"
