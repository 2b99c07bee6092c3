"""plastic's executor on the compose cluster's Apache Mesos 1.11 agents: the same scenarios as against the
local cluster (tests/local/test_executor_flow.py; where they disagree, the local cluster is wrong), then
the executor's transcript held to the one recorded from these agents (tests/local/data/executor-1.11)."""

from __future__ import annotations

import pytest

from tests.local.executor_scenarios import (  # noqa: F401  (collected here, against real agents)
    test_a_failed_task_says_its_exit_and_its_last_line_of_standard_error,
    test_a_killed_task_ends_killed,
    test_a_task_reports_what_it_used,
    test_an_idle_executor_leaves_and_its_share_comes_back,
    test_another_frameworks_idle_executor_leaves_room_for_a_whole_agent_task,
    test_tasks_share_one_executor_on_an_agent_which_offers_then_name,
)
from tests.local.rawmesos import scheduler  # noqa: F401  (fixture)

IN_AGENTS = "exec /opt/plastic/bin/python -m plastic.executor"  # the agent image's plastic


@pytest.fixture(scope="module")
def executor_command() -> str:
    return IN_AGENTS
