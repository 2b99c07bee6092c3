"""Framework: owns a MesosSchedulerDriver and a JobBook, and makes no decisions itself.

Driver callbacks (on the driver's callback thread) and calls from the Toil leader (on its thread)
become JobBook events; every event is applied under one lock, and the commands the book returns
are carried out right away, still under that lock, so commands reach the driver in the order the
book produced them (driver calls only queue work and return futures, so nothing blocks there).

    resourceOffers -> OffersReceived     statusUpdate -> StatusReceived    slaveLost -> AgentLost
    reregistered   -> Reconnected        offerRescinded -> OfferRescinded  a timer    -> Tick

    LaunchTasks -> driver.launchTasks    DeclineOffers -> driver.declineOffer
    KillTask -> driver.killTask          Acknowledge -> driver.acknowledgeStatusUpdate
    ReviveOffers / SuppressOffers -> reviveOffers / suppressOffers               Reconcile -> reconcileTasks
    JobEnded -> on_ended (a queue by default)    ReportUnplaceable -> a warning, kept for scheduling_status()
    Record -> every recorder (plastic.framework.recorder: JSON lines with record_path, the run in Redis
              through plastic.framework.store_recorder), else a DEBUG log line

Spot notices come in through `notice()` (plastic.framework.notices follows them in Redis): the
target (``agent:<id>``, or ``instance:<i-...>`` mapped through the agents' ``instance_id``
attribute) becomes NoticeReceived with the epoch deadline turned into the book's clock.

Records get a few details only the shell knows: `issued` the task's name and step, `agent` the
agent's address, and the shell adds `registered` (framework id) and `declined_ignored` records.
Recorders are closed (flushed, bounded) by stop().
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plastic.core.jobbook import ENDED, JobBook
from plastic.core.jobbook_health import status_lines
from plastic.core.jobbook_messages import (
    Acknowledge,
    AgentLost,
    AgentSeen,
    Command,
    DeclineOffers,
    Event,
    JobEnded,
    JobGone,
    JobIssued,
    KillRequested,
    KillTask,
    KnownTask,
    LaunchTasks,
    NoticeKind,
    NoticeReceived,
    OfferRescinded,
    OffersReceived,
    OrphanChecked,
    Reconcile,
    Reconnected,
    Record,
    ReportUnplaceable,
    Resumed,
    ReviveOffers,
    StatusReceived,
    SuppressOffers,
    Tick,
)
from plastic.core.lifecycle import TaskState
from plastic.core.model import Preempt, Resources
from plastic.core.placement import AgentInfo, Offer
from plastic.framework.recorder import JsonLinesRecorder, LogRecorder, Recorder
from plastic.mesos.driver import MesosSchedulerDriver
from plastic.mesos.errors import MesosFrameworkError
from plastic.mesos.scheduler import Scheduler

log = logging.getLogger(__name__)

TRUE_WORDS = frozenset({"true", "1", "yes"})


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """What a task runs: a shell command with its environment (the adapter adds nothing to either),
    and the name and workflow step it is recorded under."""

    command: str
    environment: Mapping[str, str] = field(default_factory=dict)
    name: str = ""
    step: str | None = None
    job_store_id: str | None = None  # Toil's jobStoreID of the job (stable across leader restarts)


# ------------------------------------------------------------------ pure conversions


def _value(obj: Any) -> str | None:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        v = obj.get("value")
        return None if v is None else str(v)
    return str(obj)


def _attributes(attrs: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for a in attrs or ():
        kind = a.get("type", "TEXT")
        if kind == "TEXT" or "text" in a:
            out[a["name"]] = str((a.get("text") or {}).get("value", ""))
        elif kind == "SCALAR" or "scalar" in a:
            v = float((a.get("scalar") or {}).get("value", 0.0))
            out[a["name"]] = str(int(v)) if v.is_integer() else str(v)
    return out


def _scalars(resources: Iterable[Mapping[str, Any]] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in resources or ():
        if r.get("type", "SCALAR") == "SCALAR" and "scalar" in r:
            out[r["name"]] = out.get(r["name"], 0.0) + float(r["scalar"]["value"])
    return out


def resources_of(resources: Iterable[Mapping[str, Any]] | None) -> Resources:
    """Mesos resources -> whole vCPUs and MiB, floored (what can really be packed)."""
    s = _scalars(resources)
    return Resources(int(math.floor(s.get("cpus", 0.0) + 1e-9)), int(math.floor(s.get("mem", 0.0) + 1e-9)))


def agent_from_offer(offer: Mapping[str, Any], capacity: Resources | None = None) -> AgentInfo:
    """AgentInfo from an offer (or an agent_info): attributes preemptible (true/True/1), cluster,
    instance_type; capacity is the caller's if known, else what the offer holds."""
    attrs = _attributes(offer.get("attributes"))
    agent_id = _value(offer.get("agent_id")) or _value(offer.get("id")) or ""
    return AgentInfo(agent_id=agent_id, capacity=capacity or resources_of(offer.get("resources")),
                     preemptible=attrs.get("preemptible", "false").strip().lower() in TRUE_WORDS,
                     cluster=attrs.get("cluster", ""), instance_type=attrs.get("instance_type", ""))


def instance_id_of(offer: Mapping[str, Any]) -> str | None:
    """The agent's `instance_id` attribute (an EC2 instance id), if it advertises one."""
    return _attributes(offer.get("attributes")).get("instance_id") or None


def status_event(status: Mapping[str, Any]) -> StatusReceived:
    return StatusReceived(mesos_task_id=_value(status.get("task_id")) or "", state=str(status.get("state", "")),
                          reason=status.get("reason"), message=status.get("message"),
                          agent_id=_value(status.get("agent_id")), uuid=status.get("uuid") or None)


def demand_of(cores: float, memory_bytes: float) -> Resources:
    """Toil requirements (fractional cores, bytes) -> whole vCPUs (at least 1) and MiB, rounded up."""
    return Resources(max(1, math.ceil(cores - 1e-9)), max(1, math.ceil(memory_bytes / 2**20)))


def _address(offer: Mapping[str, Any]) -> str | None:
    addr = ((offer.get("url") or {}).get("address")) or {}
    host = addr.get("ip") or addr.get("hostname") or offer.get("hostname")
    port = addr.get("port")
    if host and port:
        return f"{host}:{port}"
    return host


# ------------------------------------------------------------------ the shell


class Framework(Scheduler):
    """The Mesos side of the Toil plugin (see the module docstring)."""

    def __init__(
        self,
        master: str,
        *,
        name: str = "plastic",
        failover_timeout_s: float | None = None,
        book: JobBook | None = None,
        on_ended: Callable[[JobEnded], None] | None = None,
        record_path: str | Path | None = None,
        tick_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        driver_factory: Callable[..., Any] = MesosSchedulerDriver,
        role: str | None = None,
        recorders: Sequence[Recorder] = (),
        record_flush_s: float = 10.0,
        framework_id: str | None = None,
        job_gone: Callable[[str], bool] | None = None,
        job_committed: Callable[[str], bool] | None = None,
    ):
        self.lock = threading.RLock()
        # Asked, under the lock, about every requeued job: True when the job store already holds its
        # work (an attempt committed it before it was killed or lost), so it must not run again.
        self.job_gone = job_gone
        # Asked about an orphan whose end was inconclusive (record orphan_check), with the Toil
        # jobStoreID of its job: True when the job store holds the job's work.
        self.job_committed = job_committed
        self.changed = threading.Condition(self.lock)  # notified after every event
        self.book = book if book is not None else JobBook()
        self.clock = clock
        self.wall_clock = wall_clock
        self.ended: queue.Queue[JobEnded] = queue.Queue()
        self.on_ended = on_ended or self.ended.put
        self.specs: dict[str, TaskSpec] = {}
        self.capacity: dict[str, Resources] = {}
        self.addresses: dict[str, str] = {}  # agent id -> "ip:port"
        self.instances: dict[str, str] = {}  # instance id (the agent's instance_id attribute) -> agent id
        self.ignored: set[str] = set()  # agent ids that take no new work
        self.unplaceable: dict[str, str] = {}
        self.offer_resources: dict[str, dict[str, Mapping[str, Any]]] = {}  # offer id -> name -> resource
        self.statuses: dict[str, Mapping[str, Any]] = {}  # uuid -> the status as received (for the ack)
        self.registered_event = threading.Event()
        self.last_error: str | None = None
        self.failed_event = threading.Event()  # the driver gave up (error callback)
        self.framework_id: str | None = None
        self.tick_s = tick_s
        self.recorders: list[Recorder] = [JsonLinesRecorder(record_path)] if record_path else []
        self.recorders += list(recorders)
        if not self.recorders:
            self.recorders.append(LogRecorder())
        self.record_flush_s = record_flush_s
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        info: dict[str, Any] = {"name": name, "capabilities": []}
        if framework_id:  # take over a framework of a previous incarnation (a failover)
            info["id"] = {"value": framework_id}
        if role:
            info["roles"] = [role]
            info["capabilities"] = [{"type": "MULTI_ROLE"}]
        self.failover_timeout_s = failover_timeout_s
        self._driver_factory, self._master, self._info = driver_factory, master, info
        self.driver = driver_factory(self, info, master, failover_timeout_s=failover_timeout_s)

    # ------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 30.0) -> None:
        """Subscribe; raises MesosFrameworkError at once when the master refuses (an ERROR event, as
        for a framework id it has removed), TimeoutError when it does not answer in time."""
        self.driver.start()
        deadline = time.monotonic() + timeout
        while not self.registered_event.wait(0.1):
            if self.failed_event.is_set():
                self.driver.abort()
                raise MesosFrameworkError(f"the Mesos master refused the subscription: {self.last_error}",
                                          call_type="SUBSCRIBE")
            if time.monotonic() >= deadline:
                self.driver.abort()
                raise TimeoutError(f"no SUBSCRIBED from the Mesos master within {timeout:.0f} s "
                                   f"({self.last_error or 'no error reported'})")
        self._ticker = threading.Thread(target=self._tick_loop, name="plastic-tick", daemon=True)
        self._ticker.start()

    def start_anew(self, timeout: float = 30.0) -> None:
        """Subscribe as a new framework, after the master refused the framework id given (it had
        removed that framework: its failover timeout ran out)."""
        info = {k: v for k, v in self._info.items() if k != "id"}
        self.failed_event.clear()
        self.last_error = None
        self.driver = self._driver_factory(self, info, self._master, failover_timeout_s=self.failover_timeout_s)
        self.start(timeout)

    def stop(self, *, kill_tasks: bool = True, failover: bool = False) -> None:
        self._stop.set()
        if kill_tasks:
            with self.lock:
                live = [j for j in self.book.live() if j.state is not TaskState.KILLING]
            for job in live:
                self.kill(job.job_id, wait_s=0)
        try:
            self.driver.stop(failover=failover)
        finally:
            if self._ticker is not None:
                self._ticker.join(timeout=self.tick_s + 1)
            self.close_recorders()

    def close_recorders(self) -> None:
        """Flush and close every recorder (each waits at most record_flush_s)."""
        with self.lock:
            recorders, self.recorders = self.recorders, []
        for r in recorders:
            try:
                r.close(self.record_flush_s)
            except Exception:
                log.exception("could not close recorder %r", r)

    def _tick_loop(self) -> None:
        while not self._stop.wait(self.tick_s):
            try:
                self.apply(Tick())
            except Exception:  # the ticker must survive anything
                log.exception("tick failed")

    # ------------------------------------------------------------ the one way in

    def apply(self, event: Event) -> list[Command]:
        with self.lock:
            commands = self.book.handle(event, self.clock())
            for command in commands:
                try:
                    self._execute(command)
                except Exception:
                    log.exception("could not carry out %r", command)
            for command in commands:
                if isinstance(command, Record) and command.kind == "orphan_check":
                    commands = commands + self.apply(OrphanChecked(
                        str(command.fields.get("task")),
                        self._ask_job_store(self.job_committed, str(command.fields.get("job_store_id")))))
            if self.job_gone is not None:
                # Still under the lock: no offer can launch a requeued job before this check.
                for command in commands:
                    if isinstance(command, Record) and command.kind == "requeue":
                        job_id = str(command.fields.get("job_id"))
                        if self._ask_job_store(self.job_gone, job_id):
                            commands = commands + self.apply(JobGone(job_id))
            self.changed.notify_all()
        return commands

    @staticmethod
    def _ask_job_store(question: Callable[[str], bool] | None, key: str) -> bool:
        """The shell's answer about job ``key``; False when there is none or asking failed (logged)."""
        if question is None:
            return False
        try:
            return bool(question(key))
        except Exception:
            log.exception("could not ask the job store about %s", key)
            return False

    # ------------------------------------------------------------ calls from the Toil side

    def issue(self, job_id: str, spec: TaskSpec, demand: Resources, preempt: Preempt, *,
              instance_type: str | None = None, tool: str | None = None) -> None:
        with self.lock:
            self.specs[job_id] = spec
            self.apply(JobIssued(job_id, demand, preempt, instance_type, tool))

    def kill(self, job_id: str, wait_s: float = 30.0) -> bool:
        """KillRequested, then wait (bounded) until the book has ended the job.  True when it has."""
        deadline = time.monotonic() + wait_s
        with self.lock:
            self.apply(KillRequested(job_id))
            while True:
                job = self.book.jobs.get(job_id)
                if job is None or job.state in ENDED:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(min(left, 1.0))

    def resume(self, known: Iterable[KnownTask], *, framework_removed: bool = False) -> None:
        """A new leader incarnation: the previous one's tasks (``known`` from the run's records, the
        rest from implicit reconciliation) become orphans, adopted or killed (plastic.core.orphans)."""
        self.apply(Resumed(tuple(known), framework_removed=framework_removed))

    def wait_orphans(self, timeout_s: float, *, settle_s: float = 2.0) -> int:
        """Wait until every orphan has ended (at least settle_s, for the implicit reconciliation's
        answers to arrive; at most timeout_s).  Returns how many are left."""
        start = time.monotonic()
        deadline = start + timeout_s
        with self.lock:
            while True:
                left = self.book.orphans_left()
                now = time.monotonic()
                if (left == 0 and now - start >= settle_s) or now >= deadline:
                    return left
                self.changed.wait(min(deadline - now, 0.25))

    def running(self) -> dict[str, float]:
        """Job id -> seconds since its current attempt started running."""
        now = self.clock()
        out: dict[str, float] = {}
        with self.lock:
            for job in self.book.jobs.values():
                if job.state in (TaskState.STARTING, TaskState.RUNNING):
                    cur = job.current
                    start = (cur.started_at or cur.launched_at) if cur else now
                    out[job.job_id] = max(now - start, 0.0)
        return out

    def agents(self) -> dict[str, AgentInfo]:
        with self.lock:
            return {a: info for a, info in self.book.agents.items() if a not in self.book.gone}

    def agent_ids_at(self, address: str) -> list[str]:
        """Agent ids matching an address: "ip:port", a bare host (every agent on it) or an agent id."""
        with self.lock:
            ids = [a for a in self.book.agents if a == address or self.addresses.get(a) == address]
            if not ids:
                ids = [a for a, addr in self.addresses.items() if addr.rsplit(":", 1)[0] == address]
        return ids

    def address_of(self, agent_id: str) -> str:
        return self.addresses.get(agent_id, agent_id)

    def ignore(self, address: str) -> None:
        with self.lock:
            self.ignored.update(self.agent_ids_at(address))

    def unignore(self, address: str) -> None:
        with self.lock:
            self.ignored.difference_update(self.agent_ids_at(address))

    def scheduling_status(self) -> str | None:
        with self.lock:
            lines = [f"job {j}: {r}" for j, r in sorted(self.unplaceable.items())]
            lines += status_lines(self.book, self.clock())
            return "; ".join(lines) if lines else None

    # ------------------------------------------------------------ spot notices

    def agent_for(self, target: str) -> str | None:
        """The known, live agent a notice target names (``agent:<id>``, ``instance:<i-...>``), else None."""
        kind, _, name = target.partition(":")
        with self.lock:
            if kind == "agent":
                agent_id = name
            elif kind == "instance":
                agent_id = self.instances.get(name)
            else:
                return None
            if agent_id is None or agent_id not in self.book.agents or agent_id in self.book.gone:
                return None
            return agent_id

    def book_time(self, epoch_s: float) -> float:
        """An epoch time (a notice's deadline) on the book's clock."""
        return self.clock() + (epoch_s - self.wall_clock())

    def notice(self, agent_id: str, kind: NoticeKind, at_epoch_s: float) -> list[Command]:
        """A terminate notice (at: the deadline) or a rebalance recommendation (at: when it was made)."""
        with self.lock:
            return self.apply(NoticeReceived(agent_id, self.book_time(at_epoch_s), kind))

    # ------------------------------------------------------------ commands

    def _execute(self, command: Command) -> None:
        d = self.driver
        match command:
            case LaunchTasks():
                d.launchTasks({"value": command.offer_id}, [self._task_info(command, t) for t in command.tasks])
                self.offer_resources.pop(command.offer_id, None)
            case DeclineOffers():
                d.declineOffer([{"value": o} for o in command.offer_ids], {"refuse_seconds": command.refuse_seconds})
                for o in command.offer_ids:
                    self.offer_resources.pop(o, None)
            case KillTask():
                d.killTask({"value": command.mesos_task_id},
                           {"value": command.agent_id} if command.agent_id else None)
            case Acknowledge():
                status = self.statuses.pop(command.uuid, None) or {
                    "task_id": {"value": command.mesos_task_id}, "uuid": command.uuid,
                    **({"agent_id": {"value": command.agent_id}} if command.agent_id else {})}
                d.acknowledgeStatusUpdate(status)
            case ReviveOffers():
                d.reviveOffers()
            case SuppressOffers():
                d.suppressOffers()
            case Reconcile():
                d.reconcileTasks([{"task_id": {"value": t}, **({"agent_id": {"value": a}} if a else {})}
                                  for t, a in command.tasks])
            case JobEnded():
                self.specs.pop(command.job_id, None)
                self.unplaceable.pop(command.job_id, None)
                self.on_ended(command)
            case Record():
                self._record(command.kind, command.fields)
            case ReportUnplaceable():
                self.unplaceable[command.job_id] = command.reason
                log.warning("job %s cannot be placed: %s", command.job_id, command.reason)
            case _:
                log.error("unknown command %r", command)

    def _task_info(self, launch: LaunchTasks, task: Any) -> dict[str, Any]:
        spec = self.specs.get(task.job_id) or TaskSpec("false")
        offered = self.offer_resources.get(launch.offer_id, {})

        def scalar(name: str, amount: float) -> dict[str, Any]:
            r: dict[str, Any] = {"name": name, "type": "SCALAR", "scalar": {"value": float(amount)}}
            src = offered.get(name)
            if src is not None:  # keep the offer's role / allocation info
                for key in ("role", "allocation_info", "reservations"):
                    if key in src:
                        r[key] = src[key]
            return r

        return {
            "name": spec.name or f"toil-{task.job_id}",
            "task_id": {"value": task.mesos_task_id},
            "agent_id": {"value": task.agent_id},
            "resources": [scalar("cpus", task.demand.vcpus), scalar("mem", task.demand.ram_mib)],
            "command": {"value": spec.command, "shell": True,
                        "environment": {"variables": [{"name": k, "value": str(v)}
                                                      for k, v in spec.environment.items()]}},
            "labels": {"labels": [{"key": "plastic_job", "value": task.job_id},
                                  {"key": "plastic_attempt", "value": str(task.attempt)}]
                       + ([{"key": "plastic_job_store_id", "value": spec.job_store_id}] if spec.job_store_id else [])},
        }

    def _record(self, kind: str, fields: Mapping[str, object]) -> None:
        if kind == "issued":
            spec = self.specs.get(str(fields.get("job_id")))
            if spec is not None:
                fields = {**fields, "name": spec.name, "step": spec.step}
                if spec.job_store_id:
                    fields["job_store_id"] = spec.job_store_id
        elif kind == "agent":
            address = self.addresses.get(str(fields.get("agent_id")))
            if address:
                fields = {**fields, "address": address}
        for r in self.recorders:
            try:
                r.record(kind, fields)
            except Exception:  # a recorder must never stop scheduling
                log.exception("recorder %r failed on a %s record", r, kind)

    # ------------------------------------------------------------ driver callbacks

    def registered(self, driver: Any, framework_id: Mapping[str, Any], master_info: Mapping[str, Any]) -> None:
        self.framework_id = _value(framework_id)
        log.info("registered as framework %s", self.framework_id)
        with self.lock:
            self._record("registered", {"framework_id": self.framework_id})
        self._load_agents(driver)
        if self.registered_event.is_set():
            self.apply(Reconnected())  # a new framework id: reconcile what we think is live
        self.registered_event.set()

    def reregistered(self, driver: Any, master_info: Mapping[str, Any]) -> None:
        log.info("re-registered as framework %s", self.framework_id)
        self.apply(Reconnected())

    def disconnected(self, driver: Any) -> None:
        log.warning("disconnected from the Mesos master; the driver reconnects")

    def error(self, driver: Any, message: str) -> None:  # type: ignore[override]
        log.error("Mesos driver error: %s", message)
        self.last_error = message
        self.failed_event.set()

    def resourceOffers(self, driver: Any, offers: list[dict[str, Any]]) -> None:
        usable: list[Offer] = []
        ignored: list[str] = []
        with self.lock:
            for o in offers:
                offer_id = _value(o.get("id")) or ""
                agent_id = _value(o.get("agent_id")) or ""
                available = resources_of(o.get("resources"))
                known = self.capacity.get(agent_id)
                cap = available if known is None else Resources(max(known.vcpus, available.vcpus),
                                                                max(known.ram_mib, available.ram_mib))
                self.capacity[agent_id] = cap
                addr = _address(o)
                if addr:
                    self.addresses[agent_id] = addr
                instance = instance_id_of(o)
                if instance:
                    self.instances[instance] = agent_id
                if agent_id in self.ignored:
                    ignored.append(offer_id)
                    continue
                self.offer_resources[offer_id] = {r["name"]: r for r in o.get("resources") or ()}
                usable.append(Offer(offer_id, agent_from_offer(o, cap), available))
            if ignored:
                driver.declineOffer([{"value": i} for i in ignored], {"refuse_seconds": 5.0})
                self._record("declined_ignored", {"offer_ids": ignored})
            if usable:
                self.apply(OffersReceived(tuple(usable)))

    def offerRescinded(self, driver: Any, offer_id: Mapping[str, Any]) -> None:
        with self.lock:
            oid = _value(offer_id) or ""
            self.offer_resources.pop(oid, None)
            self.apply(OfferRescinded(oid))

    def statusUpdate(self, driver: Any, status: dict[str, Any]) -> None:
        ev = status_event(status)
        with self.lock:
            if ev.uuid:
                self.statuses[ev.uuid] = status
            self.apply(ev)

    def slaveLost(self, driver: Any, agent_id: Mapping[str, Any]) -> None:
        self.apply(AgentLost(_value(agent_id) or ""))

    # ------------------------------------------------------------ agents known before any offer

    def _load_agents(self, driver: Any) -> None:
        """Feed AgentSeen for the master's agents (GET_AGENTS), so the book knows the whole cluster
        (capacities) before the first offer; best effort."""
        try:
            answer = driver.operator.get_agents() or {}
        except Exception as exc:  # an operator API the master does not have, a network hiccup...
            log.info("GET_AGENTS failed (%s); agents are learnt from offers", exc)
            return
        for a in (answer.get("get_agents") or {}).get("agents") or ():
            if a.get("active") is False:
                continue
            info = a.get("agent_info") or {}
            total = a.get("total_resources") or info.get("resources")
            agent = agent_from_offer({"agent_id": info.get("id"), "attributes": info.get("attributes"),
                                      "resources": total})
            if not agent.agent_id:
                continue
            with self.lock:
                self.capacity[agent.agent_id] = agent.capacity
                port = info.get("port")
                host = info.get("hostname")
                if host and port:
                    self.addresses.setdefault(agent.agent_id, f"{host}:{port}")
                instance = instance_id_of(info)
                if instance:
                    self.instances[instance] = agent.agent_id
                self.apply(AgentSeen(agent))

