"""What pyproject.toml cannot yet say without an experimental setuptools feature: the raw
executor's C core (bench_dsl/_rawcore.c; bench_dsl/native.py says why it exists)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("bench_dsl._rawcore", ["bench_dsl/_rawcore.c"])])
