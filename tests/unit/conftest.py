"""A unit test needs no server: asking for one here fails, so that a test that does lands in
tests/engine or tests/e2e, where the suite's server is started for it."""

from __future__ import annotations

from typing import NoReturn

import pytest


@pytest.fixture(scope="session")
def server() -> NoReturn:
    pytest.fail("a unit test asked for the server: move it to tests/engine or tests/e2e")
