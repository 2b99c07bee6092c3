"""The JobBook's records as a run's state in Redis (plastic.store), written in the background.

This recorder stores what the book decided and decides nothing: every record (plastic.core.
jobbook_records) becomes an event on the run's stream (`Store.append_event(run, kind, fields)`, plus
``at``), and these also write the run's records:

| record | Redis |
|---|---|
| JobQueued (issued) | a task (id: the Toil job id) in QUEUED; spec: name, tool, step, vcpus, ram_mib, preempt, instance_type, job_store_id |
| TaskStateChanged | the task moves ``from_state`` -> ``to_state`` (compare-and-set; none when from_state is None: a previous leader's task), setting ``details``, appending the ended attempt, and a runtime sample of the tool when given; its stream entry is the store's own ``transition`` |
| AgentUpdated (agent) | upsert_agent: cluster, preemptible, hostname, resources {vcpus, ram_mib}, fields instance_type, address |
| AgentStateChanged | the agent moves (ACTIVE -> DRAINING with notice_at / terminate_at, -> GONE) |
| FrameworkRegistered (registered) | the run's framework id |

Times: the book's clock is not the wall clock, so this recorder stamps epoch seconds when a step
arrives (the Framework feeds steps as events happen): an attempt that ran ``ran_s`` ended now and
started ``ran_s`` before; an attempt whose agent had a terminate notice (``notice_age_s``) gets the
``notice_at`` stamped on the agent's record.  A write Redis
refuses (a compare-and-set that lost after an earlier write was dropped during an outage) is logged
by the writer, never forced.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from plastic.core.book.records import (
    AgentStateChanged,
    AgentUpdated,
    FrameworkRegistered,
    JobQueued,
    Record,
    TaskStateChanged,
)
from plastic.framework.store_writer import StoreWriter, Write
from plastic.store import AttemptRecord, Store

log = logging.getLogger(__name__)


def preempt_json(text: Any) -> bool | int | None:
    """The issued record's preempt ("true" / "false" / "N") as the policy's JSON value."""
    if isinstance(text, bool | int) or text is None:
        return text
    word = str(text).strip().lower()
    if word in ("true", "false"):
        return word == "true"
    try:
        return int(word)
    except ValueError:
        return None


class StoreRecorder:
    """A Recorder (plastic.framework.recorder) writing one run's state through a StoreWriter."""

    def __init__(self, store: Store, run_id: str, *, writer: StoreWriter | None = None,
                 clock: Callable[[], float] = time.time):
        self.store = store
        self.run_id = run_id
        self.writer = writer if writer is not None else StoreWriter(store)
        self.clock = clock
        self.notice_at: dict[str, float] = {}  # agent id -> the notice_at stamped on its record

    # ------------------------------------------------------------ Recorder

    def begin(self, config: Mapping[str, Any]) -> None:
        pass

    def step(self, event: Any, now: float, records: Sequence[Record], commands: Sequence[Any],
             machine: str = "book") -> None:
        at = self.clock()
        writes: list[Write] = []
        for out in records:
            try:
                writes += self._writes(out, at)
            except Exception:  # a malformed record must not stop the framework
                log.exception("run %s: could not turn the record %r into store writes", self.run_id, out)
        if writes:
            self.writer.submit(writes)

    def flush(self, timeout_s: float = 10.0) -> bool:
        return self.writer.flush(timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        self.writer.close(timeout_s)

    # ------------------------------------------------------------ records -> writes

    def _writes(self, record: Record, at: float) -> list[Write]:
        match record:
            case TaskStateChanged():
                return self._task_moved(record, at)
            case AgentStateChanged():
                return self._agent_moved(record, at)
        event = {k: v for k, v in record.fields.items() if v is not None}
        event["at"] = at
        writes = [Write(f"{record.kind} event", "append_event", (self.run_id, record.kind, event))]
        match record:
            case JobQueued():
                writes.append(self._task_added(record))
            case AgentUpdated():
                writes.append(self._agent_seen(record))
            case FrameworkRegistered() if record.framework_id:
                writes.append(Write("framework id", "save_framework_id", (self.run_id, record.framework_id)))
        return writes

    def _task_added(self, r: JobQueued) -> Write:
        spec = {"name": r.name, "tool": r.tool, "step": r.step, "vcpus": r.vcpus, "ram_mib": r.ram_mib,
                "preempt": preempt_json(r.preempt), "instance_type": r.instance_type or None}
        if r.job_store_id:
            spec["job_store_id"] = r.job_store_id
        return Write(f"task {r.job_id} added", "add_tasks", (self.run_id, {r.job_id: spec}))

    def _task_moved(self, r: TaskStateChanged, at: float) -> list[Write]:
        attempt = None
        if r.attempt is not None:
            a = r.attempt
            extra = {k: v for k, v in {"cluster": a.cluster, "wall_time_s": a.wall_time_s,
                                       "counted_as": a.counted_as}.items() if v is not None}
            if a.usage is not None:  # what its processes used (plastic's executor)
                extra.update(cpu_s=a.usage.cpu_s, max_rss_mib=a.usage.max_rss_mib, usage_wall_s=a.usage.wall_s)
            attempt = AttemptRecord(number=a.number, outcome=a.outcome, agent=a.agent_id, started_at=at - a.ran_s,
                                    ended_at=at, reason=a.reason, exit_code=a.exit_code, mesos_task_id=a.mesos_task_id,
                                    notice_at=None if a.notice_age_s is None
                                    else self.notice_at.get(a.agent_id or "", at - a.notice_age_s), extra=extra)
        fields = {k: v for k, v in r.details.items() if v is not None or k == "agent"}
        writes = [Write(f"task {r.job_id} {r.from_state or '*'} -> {r.to_state} ({r.reason})", "transition_task",
                        (self.run_id, r.job_id, r.to_state),
                        {"expected": r.from_state, "fields": fields, "attempt": attempt})]
        if r.runtime_s is not None and r.tool:
            writes.append(Write(f"runtime of {r.tool}", "record_runtime", (r.tool, float(r.runtime_s))))
        return writes

    def _agent_seen(self, r: AgentUpdated) -> Write:
        if r.back:
            log.warning("run %s agent %s is back after it was lost; its record stays GONE (terminal)",
                        self.run_id, r.agent_id)
        extra = {"instance_type": r.instance_type or None, "address": r.address}
        return Write(f"agent {r.agent_id} seen", "upsert_agent", (r.agent_id,), {
            "cluster": r.cluster or None, "preemptible": bool(r.preemptible),
            "hostname": r.address.rsplit(":", 1)[0] if r.address else None,
            "resources": {"vcpus": r.vcpus, "ram_mib": r.ram_mib},
            "fields": {k: v for k, v in extra.items() if v is not None},
            "run_id": self.run_id})

    def _agent_moved(self, r: AgentStateChanged, at: float) -> list[Write]:
        fields: dict[str, Any] = {}
        if r.window_s is not None:
            fields = {"notice_at": at, "terminate_at": at + r.window_s}
            self.notice_at[r.agent_id] = at
        return [Write(f"agent {r.agent_id} {r.from_state} -> {r.to_state} ({r.reason})", "transition_agent",
                      (r.agent_id, r.to_state), {"expected": r.from_state, "run_id": self.run_id, "fields": fields})]
