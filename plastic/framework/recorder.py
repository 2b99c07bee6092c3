"""Where the Framework's records go: a JSON-lines file, the run's Redis stream and records, or both.

The JobBook (plastic.core.jobbook) says what happened as `Record(kind, fields)` commands; the
Framework adds a few details only it knows (marked *shell* below) and hands every record to each
`Recorder` it was given, in order, under its lock.  A recorder must never block: the Redis one
(plastic.framework.store_recorder) only queues writes for a background thread.

Event kinds and their fields (every event also gets ``at``, seconds since the epoch, when it goes
to Redis; fields whose value is None are left out there):

| kind | fields |
|---|---|
| issued | job_id, vcpus, ram_mib, preempt ("true"/"false"/"N"), instance_type, tool; *shell*: name, step |
| placed | job_id, task (Mesos task id `<job>.<attempt>`), agent_id, cluster, preemptible, instance_type, offer_id, why, preemptions |
| running | job_id, task, agent_id |
| kill | job_id, task, cause ("leader") |
| drain_kill | job_id, task, agent_id, estimate_s |
| let_finish | job_id, agent_id, estimate_s |
| ended | job_id, outcome (finished/failed/killed/lost_for_good), state (FINISHED/FAILED/KILLED), exit_code, attempt, agent_id, cluster, preemptible, wall_time_s, reason, message |
| requeue | job_id, old_task, new_task, agent_id, cause, counted_as (preempted/lost/dropped), preemptions, losses, detail |
| escalation | job_id, preemptions, budget |
| unplaceable | job_id, reason, kept_queued |
| placeable_again | job_id |
| agent | agent_id, preemptible, cluster, instance_type, vcpus, ram_mib, back; *shell*: address ("ip:port") |
| agent_lost | agent_id, jobs, duplicate |
| notice | agent_id, notice_kind (terminate/rebalance), terminate_at (book clock), window_s, jobs; rebalance: reaction |
| duplicate_notice | agent_id, notice_kind |
| idle_agent | agent_id, idle_s, cluster (a burst agent idle past the threshold: a candidate for release) |
| starving | job_id, vcpus, ram_mib, waited_s (no live agent could ever hold the job) |
| declined | offer_ids, refuse_seconds |
| declined_ignored | offer_ids (*shell*: offers of ignored nodes) |
| rescinded | offer_id |
| kill_ignored | job_id, why |
| duplicate_issue, duplicate_status, stale_status, unknown_task, unknown_state | what was seen |
| reconnected | live |
| registered | framework_id (*shell*, on every SUBSCRIBED) |
| resumed | known (the previous leader's live task ids), adopt_s, framework_removed |
| orphan_adopted | task, agent_id, state, remaining_estimate_s (None: no estimate) |
| orphan_kill | task, agent_id, state, reason (no_fit / adopt_window / notice / retry) |
| orphan_check | task, agent_id, state (an end that does not say whether the work was done), reason, job_store_id |
| orphan_ended | task, agent_id, state (TASK_*), adopted, reason (framework_removed / job_store: the job store holds its work) |
| orphan_unknown | task, agent_id |

Besides these, the Redis stream holds the store's own entries: ``transition`` (kind task/agent,
id, from, to, at, plus the task's extra fields), ``tasks_added``, ``agent_added``, ``run_created``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)


class Recorder(Protocol):
    def record(self, kind: str, fields: Mapping[str, object]) -> None:
        """Take one record; must return at once (called under the Framework's lock)."""

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is pending (waiting at most ``timeout_s``) and release everything."""


class JsonLinesRecorder:
    """One JSON object per line: ``{"t": epoch seconds, "kind": ..., **fields}``, flushed at once."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def record(self, kind: str, fields: Mapping[str, object]) -> None:
        line = json.dumps({"t": time.time(), "kind": kind, **fields}, default=str)
        with self._lock:
            if self._file is None:
                return
            self._file.write(line + "\n")
            self._file.flush()

    def close(self, timeout_s: float = 10.0) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class LogRecorder:
    """Records as DEBUG log lines (what the Framework does when it has no other recorder)."""

    def record(self, kind: str, fields: Mapping[str, object]) -> None:
        log.debug("%s %s", kind, dict(fields))

    def close(self, timeout_s: float = 10.0) -> None:
        pass
