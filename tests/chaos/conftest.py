"""Chaos tests: `plastic run` on a 50+ task workflow while spot agents are interrupted or killed.

Every test starts a real `plastic run` (local cluster, embedded Redis, agent-watch processes, Toil)
and makes trouble from outside, through the local master's endpoints or the run's Redis.  Each run
is bounded (about 40-80 s on two cores); deselect them all with -m 'not chaos'.
"""

from __future__ import annotations

import pytest

from tests.chaos.harness import DATA, ITEMS, write_job

SECONDS = 2  # each scattered task sleeps this long
PLAN = DATA / "plan.json"


def pytest_configure(config):
    config.addinivalue_line("markers", "chaos: spot interruptions, lost agents and notice floods during a real "
                                       "`plastic run` (about 40-80 s each; deselect with -m 'not chaos')")


@pytest.fixture(scope="session")
def chaos_job(tmp_path_factory):
    return write_job(tmp_path_factory.mktemp("chaos-job") / "job.yml", ITEMS, SECONDS)


@pytest.fixture(scope="session")
def chaos_plan():
    """One on-demand c5.large (core, 2 vCPUs) and three spot m5.large (burst, 2 vCPUs each): what
    `plastic plan square-sum.cwl JOB --budget-per-hour 0.2` gives for 50 or 60 items, kept as a file
    so the tests do not depend on the planner."""
    import json

    plan = json.loads(PLAN.read_text())
    assert sorted((n["cluster"], n["market"]) for n in plan["nodes"]) == \
        [("burst", "spot")] * 3 + [("core", "on-demand")], plan["nodes"]
    return PLAN
