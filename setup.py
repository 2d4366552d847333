"""What pyproject.toml cannot say: the C executor (bench_dsl/native/src/, one extension module built
from several units) built against libmariadb, with the flags `mariadb_config` gives (Debian:
libmariadb-dev). Without it the package still builds and installs, and every statement goes through
asyncmy (bench_dsl/native/__init__.py warns at run time)."""

import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup


def _mariadb_flags() -> tuple[list[str], list[str]] | None:
    # MARIADB_CONFIG names the tool (a libmariadb elsewhere); set empty, it builds without the executor
    named = os.environ.get("MARIADB_CONFIG")
    tool = (shutil.which(named) if named else None) if named is not None else \
        shutil.which("mariadb_config") or shutil.which("mysql_config")
    if tool is None:
        return None
    try:
        cflags = subprocess.run([tool, "--cflags"], capture_output=True, text=True, check=True).stdout
        libs = subprocess.run([tool, "--libs"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(cflags), shlex.split(libs)


# The C executor's units (src/module.c says what each owns) and its private headers: the headers are
# `depends`, so that a change to one rebuilds the module and the sdist carries them.
NATIVE = "bench_dsl/native/src"
SOURCES = [f"{NATIVE}/{name}.c" for name in ("module", "hdr", "counts", "counts_type", "draws", "program", "schedule",
                                              "schedule_type", "connection", "statements", "user", "load", "tpcc", "testing")]
HEADERS = [f"{NATIVE}/{name}.h" for name in ("native", "hdr", "counts", "rng", "draws", "program", "schedule", "user",
                                              "testing")]

flags = _mariadb_flags()
if flags is None:
    print("bench-dsl: mariadb_config not found (apt install libmariadb-dev): building without the fast "
          "executor; statements will go through asyncmy", file=sys.stderr)
    extensions = []
else:
    extensions = [Extension("bench_dsl.native._native", SOURCES, depends=HEADERS, extra_compile_args=flags[0],
                            extra_link_args=flags[1], libraries=["z"])]

setup(ext_modules=extensions)
