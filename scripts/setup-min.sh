#!/usr/bin/env bash
# A second virtualenv, .venv-min, with every dependency at exactly the lower bound pyproject.toml
# declares, so that `make test-min` proves the bounds (`make test` gets the newest allowed versions).
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=.venv-min/.installed
if [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ] && [ ! setup.py -nt "$stamp" ] \
   && [ -z "$(find bench_dsl/native/src -newer "$stamp" -print -quit)" ]; then
  exit 0
fi
if [ ! -x .venv-min/bin/python ]; then
  python3 -m venv .venv-min
fi
# pyproject's "name>=X" (runtime and test extras) becomes "name==X"; markers are kept
python3 - > .venv-min/constraints.txt <<'PY'
import re
import tomllib

with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)["project"]
for dep in project["dependencies"] + [d for ds in project.get("optional-dependencies", {}).values() for d in ds]:
    spec, _, marker = dep.partition(";")
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([^,\s]+)\s*", spec)
    if not m:
        raise SystemExit(f"setup-min: no plain lower bound in {dep!r}")
    print(f"{m.group(1)}=={m.group(2)}" + (f"; {marker.strip()}" if marker else ""))
PY
.venv-min/bin/python -m pip install -q 'uv>=0.13' >&2  # as scripts/setup.sh installs .venv
.venv-min/bin/uv pip install -q --python .venv-min/bin/python --compile-bytecode -c .venv-min/constraints.txt -e '.[test,ray]' >&2
touch "$stamp"
