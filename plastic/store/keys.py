"""Every Redis key plastic uses, in one place, under one prefix.

`Keys(prefix)` is the only code that spells a key; everything else asks it.  The
prefix defaults to ``plastic:``; tests give each test its own prefix so that many
tests share one server without seeing each other's data.

With ``P`` the prefix, ``R`` a run id, ``T`` a task id, ``A`` an agent id, ``S`` a state
name and ``N`` a tool (or step) name:

| key                  | type       | holds                                                                   |
|----------------------|------------|-------------------------------------------------------------------------|
| `P runs`             | sorted set | every run id, scored by creation time (Redis server clock, seconds)     |
| `P runs:state:S`     | set        | ids of the runs in state S (one set per RunState)                       |
| `P run:R`            | hash       | run record: id, state, created_at, updated_at, state_at, caller fields  |
| `P run:R:framework`  | string     | the Mesos framework id of the run (re-subscribe after a crash)          |
| `P run:R:events`     | stream     | the run's event log (XADD ... MAXLEN ~ events_maxlen)                    |
| `P run:R:tasks`      | sorted set | the run's task ids, scored by the order they were added                 |
| `P run:R:state:S`    | set        | ids of the run's tasks in state S (one set per TaskState)               |
| `P run:R:task:T`     | hash       | task record: id, run, spec (JSON), state, attempts (count), agent,      |
|                      |            | created_at, updated_at, state_at, caller fields                         |
| `P run:R:attempts:T` | list       | the task's ended attempts, oldest first, one JSON object each           |
| `P agents`           | set        | every agent id ever seen                                                |
| `P agents:state:S`   | set        | ids of the agents in state S (one set per AgentState)                   |
| `P agent:A`          | hash       | agent record: id, state, cluster, preemptible (0/1), attributes (JSON), |
|                      |            | hostname, resources (JSON), notice_at, timestamps, caller fields        |
| `P events`           | stream     | events that belong to no run (agents seen without a run)                |
| `P runtime:N`        | list       | recent runtimes of tool N in seconds, newest first, capped (LTRIM)      |
| `P submissions`      | list       | JSON submissions for `plastic serve` (LPUSH in, BRPOP out: FIFO)        |
| `P run:R:shipped`    | hash       | a submission's shipped files (name -> base64), until the service has them |
| `P run:R:archive`    | string     | an ended served run's directory, gzipped tar in base64 (plastic.service.archive) |
| `P notices`          | stream     | spot notices from every source (IMDS watchers, the SQS poller), once each |
| `P notice:K:N`       | string     | "published" marker of notice kind K for target N (SET NX, expires)      |

Only the run id sits in the middle of keys (``run:R:...``), so run ids are restricted to
``[A-Za-z0-9._-]`` and can never make two templates meet; task, agent and tool names are
always the last component and may hold any character (``:`` included).

The store addresses one Redis server (or a primary with replicas), not Redis Cluster: the
Lua scripts build the per-state set keys from a prefix they are given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_PREFIX = "plastic:"

RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is safe inside a key, else raise ValueError."""
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.match(run_id):
        raise ValueError(
            f"invalid run id {run_id!r}: use 1-128 characters of A-Z a-z 0-9 . _ - (not starting with . _ -)"
        )
    return run_id


@dataclass(frozen=True)
class Keys:
    """Key templates under one prefix (see the module docstring for the table)."""

    prefix: str = DEFAULT_PREFIX

    # runs
    def runs(self) -> str:
        return f"{self.prefix}runs"

    def run_state_prefix(self) -> str:
        return f"{self.prefix}runs:state:"

    def run_state(self, state: str) -> str:
        return f"{self.run_state_prefix()}{state}"

    def run(self, run_id: str) -> str:
        return f"{self.prefix}run:{check_run_id(run_id)}"

    def framework_id(self, run_id: str) -> str:
        return f"{self.run(run_id)}:framework"

    def incarnation(self, run_id: str) -> str:
        return f"{self.run(run_id)}:incarnation"

    def events(self, run_id: str | None) -> str:
        """The run's event stream; with None the stream of events that belong to no run."""
        return f"{self.prefix}events" if run_id is None else f"{self.run(run_id)}:events"

    # tasks
    def run_tasks(self, run_id: str) -> str:
        return f"{self.run(run_id)}:tasks"

    def task_state_prefix(self, run_id: str) -> str:
        return f"{self.run(run_id)}:state:"

    def task_state(self, run_id: str, state: str) -> str:
        return f"{self.task_state_prefix(run_id)}{state}"

    def task_prefix(self, run_id: str) -> str:
        return f"{self.run(run_id)}:task:"

    def task(self, run_id: str, task_id: str) -> str:
        return f"{self.task_prefix(run_id)}{task_id}"

    def task_attempts(self, run_id: str, task_id: str) -> str:
        return f"{self.run(run_id)}:attempts:{task_id}"

    # agents
    def agents(self) -> str:
        return f"{self.prefix}agents"

    def agent_state_prefix(self) -> str:
        return f"{self.prefix}agents:state:"

    def agent_state(self, state: str) -> str:
        return f"{self.agent_state_prefix()}{state}"

    def agent(self, agent_id: str) -> str:
        return f"{self.prefix}agent:{agent_id}"

    # service
    def runtime(self, tool: str) -> str:
        return f"{self.prefix}runtime:{tool}"

    def submissions(self) -> str:
        return f"{self.prefix}submissions"

    def shipped(self, run_id: str) -> str:
        return f"{self.prefix}run:{check_run_id(run_id)}:shipped"

    def archive(self, run_id: str) -> str:
        return f"{self.prefix}run:{check_run_id(run_id)}:archive"

    # notices
    def notices(self) -> str:
        return f"{self.prefix}notices"

    def notice_marker(self, kind: str, target: str) -> str:
        return f"{self.prefix}notice:{kind}:{target}"
