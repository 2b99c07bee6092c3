"""The Framework's records as a run's state in Redis (plastic.store), written in the background.

Every record becomes an event on the run's stream (`Store.append_event(run, kind, fields)`, plus
``at``: see plastic.framework.recorder for the kinds and fields).  Some also change records:

| record | Redis |
|---|---|
| issued | a task (id: the Toil job id) in QUEUED; spec: name, tool, step, vcpus, ram_mib, preempt, instance_type |
| placed | task -> LAUNCHING (attempts + 1); fields agent, cluster, preemptible, mesos_task |
| running | task -> RUNNING |
| kill, drain_kill | task -> KILLING; field kill_cause (leader / notice) |
| ended | task -> FINISHED / FAILED / KILLED, or LOST for lost_for_good; the attempt (if it was launched) with its outcome; fields outcome, exit_code, wall_time_s; on FINISHED the runtime of the tool |
| requeue | task -> LOST with the ended attempt (preempted / lost), then -> QUEUED; fields preemptions, losses |
| agent | upsert_agent: cluster, preemptible, hostname, resources {vcpus, ram_mib}, fields instance_type, address |
| notice (terminate) | agent -> DRAINING; fields notice_at, terminate_at (epoch seconds) |
| agent_lost | agent -> GONE |
| registered | the run's framework id |
| orphan_ended, orphan_unknown | a task of a previous leader (plastic run --resume) -> FINISHED / FAILED / KILLED; field outcome ("adopted, task_finished" for an adopted one that finished) |

A mirror of each task's and agent's state checks every move against plastic.core.lifecycle
before it is queued: a move the table refuses is logged as an error and not written (the
framework goes on).  Each task move is also a compare-and-set in Redis (``expected`` = the
mirror's state), so a record that drifted (an earlier write dropped during an outage) is refused
by Redis and logged instead of being overwritten.  Times are this machine's epoch seconds taken
when the record arrives (the Framework feeds records as events happen).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from plastic.core.jobbook import split_task_id
from plastic.core.lifecycle import AgentState, TaskState, allowed
from plastic.framework.store_writer import StoreWriter, Write
from plastic.store import Attempt, Outcome, Store

log = logging.getLogger(__name__)

_ENDED_OUTCOME = {"finished": Outcome.FINISHED, "failed": Outcome.FAILED, "killed": Outcome.KILLED,
                  "lost_for_good": Outcome.LOST}
_ENDED_STATE = {"finished": TaskState.FINISHED, "failed": TaskState.FAILED, "killed": TaskState.KILLED,
                "lost_for_good": TaskState.LOST}
_REQUEUE_OUTCOME = {"preempted": Outcome.PREEMPTED, "lost": Outcome.LOST, "dropped": Outcome.LOST}


@dataclass(slots=True)
class _Task:
    state: TaskState
    tool: str | None
    attempt: int | None = None
    mesos_task_id: str | None = None
    agent: str | None = None
    cluster: str | None = None
    launched_at: float | None = None
    started_at: float | None = None


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


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


class StoreRecorder:
    """A Recorder (plastic.framework.recorder) writing one run's state through a StoreWriter."""

    def __init__(self, store: Store, run_id: str, *, writer: StoreWriter | None = None,
                 clock: Callable[[], float] = time.time):
        self.store = store
        self.run_id = run_id
        self.writer = writer if writer is not None else StoreWriter(store)
        self.clock = clock
        self.tasks: dict[str, _Task] = {}
        self.agents: dict[str, AgentState] = {}
        self.notices: dict[str, float] = {}  # agent id -> when its terminate notice came (epoch)
        self.rejected = 0  # moves the lifecycle table refused (logged, not written)
        self._lock = threading.Lock()

    # ------------------------------------------------------------ Recorder

    def record(self, kind: str, fields: Mapping[str, object]) -> None:
        now = self.clock()
        event = {k: v for k, v in fields.items() if v is not None and k != "at"}
        event["at"] = now
        writes = [Write(f"{kind} event", "append_event", (self.run_id, kind, event))]
        handler = getattr(self, f"_on_{kind}", None)
        with self._lock:
            if handler is not None:
                try:
                    writes += handler(fields, now)
                except Exception:  # a malformed record must not stop the framework
                    log.exception("run %s: could not turn the %s record %r into store writes",
                                  self.run_id, kind, dict(fields))
        self.writer.submit(writes)

    def flush(self, timeout_s: float = 10.0) -> bool:
        return self.writer.flush(timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        self.writer.close(timeout_s)

    # ------------------------------------------------------------ moves, checked against the table

    def _move(self, job_id: str, wanted: TaskState, why: str, **kw: Any) -> list[Write]:
        task = self.tasks.get(job_id)
        if task is None:
            log.error("run %s task %s: %s for a task never issued; not recorded", self.run_id, job_id, why)
            self.rejected += 1
            return []
        if not allowed("task", task.state, wanted):
            log.error("run %s task %s: %s -> %s (%s) is not allowed by the task lifecycle; not recorded",
                      self.run_id, job_id, task.state, wanted, why)
            self.rejected += 1
            return []
        previous, task.state = task.state, wanted
        return [Write(f"task {job_id} {previous} -> {wanted} ({why})", "transition_task",
                      (self.run_id, job_id, wanted), {"expected": previous, **kw})]

    def _move_agent(self, agent_id: str, wanted: AgentState, why: str, **kw: Any) -> list[Write]:
        state = self.agents.get(agent_id)
        if state is None:
            log.warning("run %s agent %s: %s for an agent never recorded; not recorded", self.run_id, agent_id, why)
            return []
        if state == wanted:
            return []
        if not allowed("agent", state, wanted):
            log.error("run %s agent %s: %s -> %s (%s) is not allowed by the agent lifecycle; not recorded",
                      self.run_id, agent_id, state, wanted, why)
            self.rejected += 1
            return []
        self.agents[agent_id] = wanted
        return [Write(f"agent {agent_id} {state} -> {wanted} ({why})", "transition_agent", (agent_id, wanted),
                      {"expected": state, "run_id": self.run_id, **kw})]

    def _attempt(self, task: _Task, outcome: Outcome, now: float, *, reason: str | None = None,
                 exit_code: int | None = None, extra: Mapping[str, Any] | None = None) -> Attempt | None:
        if task.attempt is None:
            return None
        attempt = Attempt(number=task.attempt, outcome=outcome, agent=task.agent,
                          started_at=task.started_at if task.started_at is not None else task.launched_at,
                          ended_at=now, reason=reason, exit_code=exit_code, mesos_task_id=task.mesos_task_id,
                          notice_at=self.notices.get(task.agent or ""),
                          extra={k: v for k, v in {"cluster": task.cluster, **(extra or {})}.items()
                                 if v is not None})
        task.attempt = task.mesos_task_id = task.agent = task.cluster = None
        task.launched_at = task.started_at = None
        return attempt

    # ------------------------------------------------------------ tasks

    def _on_issued(self, f: Mapping[str, Any], now: float) -> list[Write]:
        job_id = str(f["job_id"])
        if job_id in self.tasks:
            log.warning("run %s task %s issued twice; the second is not recorded", self.run_id, job_id)
            return []
        spec = {"name": f.get("name"), "tool": f.get("tool"), "step": f.get("step"), "vcpus": f.get("vcpus"),
                "ram_mib": f.get("ram_mib"), "preempt": preempt_json(f.get("preempt")),
                "instance_type": f.get("instance_type") or None}
        if f.get("job_store_id"):
            spec["job_store_id"] = str(f["job_store_id"])
        self.tasks[job_id] = _Task(TaskState.QUEUED, _text(f.get("tool")))
        return [Write(f"task {job_id} added", "add_tasks", (self.run_id, {job_id: spec}))]

    def _on_placed(self, f: Mapping[str, Any], now: float) -> list[Write]:
        job_id = str(f["job_id"])
        fields = {"agent": _text(f.get("agent_id")), "cluster": _text(f.get("cluster")),
                  "preemptible": f.get("preemptible"), "mesos_task": _text(f.get("task"))}
        writes = self._move(job_id, TaskState.LAUNCHING, "placed",
                            fields={k: v for k, v in fields.items() if v is not None})
        if writes:
            task = self.tasks[job_id]
            parsed = split_task_id(str(f.get("task") or ""))
            task.attempt = parsed[1] if parsed else 1
            task.mesos_task_id = fields["mesos_task"]
            task.agent = fields["agent"]
            task.cluster = fields["cluster"]
            task.launched_at, task.started_at = now, None
        return writes

    def _on_running(self, f: Mapping[str, Any], now: float) -> list[Write]:
        job_id = str(f["job_id"])
        writes = self._move(job_id, TaskState.RUNNING, "running")
        if writes:
            self.tasks[job_id].started_at = now
        return writes

    def _killing(self, f: Mapping[str, Any], cause: str) -> list[Write]:
        job_id = str(f["job_id"])
        task = self.tasks.get(job_id)
        if task is not None and task.state is TaskState.KILLING:
            return []  # a second kill of a task already being killed
        return self._move(job_id, TaskState.KILLING, f"kill ({cause})", fields={"kill_cause": cause})

    def _on_kill(self, f: Mapping[str, Any], now: float) -> list[Write]:
        return self._killing(f, str(f.get("cause") or "leader"))

    def _on_drain_kill(self, f: Mapping[str, Any], now: float) -> list[Write]:
        return self._killing(f, "notice")

    def _on_ended(self, f: Mapping[str, Any], now: float) -> list[Write]:
        job_id = str(f["job_id"])
        outcome = str(f.get("outcome"))
        if outcome == "lost_for_good":
            wanted = TaskState.LOST
        elif f.get("state"):
            wanted = TaskState(str(f["state"]))
        else:
            wanted = _ENDED_STATE[outcome]
        task = self.tasks.get(job_id)
        wall = f.get("wall_time_s")
        attempt = None
        if task is not None and allowed("task", task.state, wanted):
            reason = "; ".join(str(x) for x in (f.get("reason"), f.get("message")) if x)
            attempt = self._attempt(task, _ENDED_OUTCOME.get(outcome, Outcome.FAILED), now, reason=reason or None,
                                    exit_code=f.get("exit_code"), extra={"wall_time_s": wall})
        fields = {"outcome": outcome, "exit_code": f.get("exit_code"), "wall_time_s": wall}
        writes = self._move(job_id, wanted, f"ended {outcome}", attempt=attempt,
                            fields={k: v for k, v in fields.items() if v is not None})
        if writes and outcome == "finished" and attempt is not None and task.tool and wall:
            writes.append(Write(f"runtime of {task.tool}", "record_runtime", (task.tool, float(wall))))
        return writes

    def _on_requeue(self, f: Mapping[str, Any], now: float) -> list[Write]:
        job_id = str(f["job_id"])
        task = self.tasks.get(job_id)
        attempt = None
        if task is not None and allowed("task", task.state, TaskState.LOST):
            reason = ": ".join(str(x) for x in (f.get("cause"), f.get("detail")) if x)
            attempt = self._attempt(task, _REQUEUE_OUTCOME.get(str(f.get("counted_as")), Outcome.LOST), now,
                                    reason=reason or None, extra={"counted_as": f.get("counted_as")})
        writes = self._move(job_id, TaskState.LOST, f"requeue ({f.get('counted_as')})", attempt=attempt,
                            fields={"agent": None, "preemptions": f.get("preemptions", 0),
                                    "losses": f.get("losses", 0)})
        if writes:
            writes += self._move(job_id, TaskState.QUEUED, "requeue")
        return writes

    # ------------------------------------------------------------ agents and the run

    def _on_agent(self, f: Mapping[str, Any], now: float) -> list[Write]:
        agent_id = str(f["agent_id"])
        if self.agents.get(agent_id) is AgentState.GONE:
            log.warning("run %s agent %s is back after it was lost; its record stays GONE (terminal)",
                        self.run_id, agent_id)
        self.agents.setdefault(agent_id, AgentState.ACTIVE)
        address = _text(f.get("address"))
        resources = {k: f[k] for k in ("vcpus", "ram_mib") if f.get(k) is not None}
        extra = {"instance_type": f.get("instance_type") or None, "address": address}
        return [Write(f"agent {agent_id} seen", "upsert_agent", (agent_id,), {
            "cluster": _text(f.get("cluster")) or None,
            "preemptible": None if f.get("preemptible") is None else bool(f["preemptible"]),
            "hostname": address.rsplit(":", 1)[0] if address else None,
            "resources": resources or None,
            "fields": {k: v for k, v in extra.items() if v is not None},
            "run_id": self.run_id})]

    def _on_notice(self, f: Mapping[str, Any], now: float) -> list[Write]:
        if str(f.get("notice_kind") or "terminate") != "terminate":
            return []
        agent_id = str(f["agent_id"])
        self.notices[agent_id] = now
        fields: dict[str, Any] = {"notice_at": now}
        if f.get("window_s") is not None:
            fields["terminate_at"] = now + float(f["window_s"])
        return self._move_agent(agent_id, AgentState.DRAINING, "notice", fields=fields)

    def _on_agent_lost(self, f: Mapping[str, Any], now: float) -> list[Write]:
        if f.get("duplicate"):
            return []
        return self._move_agent(str(f["agent_id"]), AgentState.GONE, "agent lost")

    def _orphan(self, task: str, state: TaskState, why: str) -> list[Write]:
        parsed = split_task_id(task)
        if parsed is None or parsed[0] in self.tasks:
            return []
        return [Write(f"task {parsed[0]} of a previous leader -> {state} ({why})", "transition_task",
                      (self.run_id, parsed[0], state), {"fields": {"outcome": why}})]

    def _on_orphan_ended(self, f: Mapping[str, Any], now: float) -> list[Write]:
        state = {"TASK_FINISHED": TaskState.FINISHED, "TASK_FAILED": TaskState.FAILED,
                 "TASK_ERROR": TaskState.FAILED}.get(str(f.get("state")), TaskState.KILLED)
        why = "adopted" if f.get("adopted") else "orphan"
        reason = f" ({f['reason']})" if f.get("reason") else ""
        return self._orphan(str(f.get("task") or ""), state, f"{why} {str(f.get('state')).lower()}{reason}")

    def _on_orphan_unknown(self, f: Mapping[str, Any], now: float) -> list[Write]:
        return self._orphan(str(f.get("task") or ""), TaskState.KILLED, "orphan unknown to the master")

    def _on_registered(self, f: Mapping[str, Any], now: float) -> list[Write]:
        framework_id = f.get("framework_id")
        if not framework_id:
            return []
        return [Write("framework id", "save_framework_id", (self.run_id, str(framework_id)))]
