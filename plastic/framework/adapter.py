"""Framework: owns a MesosSchedulerDriver and a JobBook, and makes no decisions itself.

Driver callbacks (on the driver's callback thread) and calls from the Toil leader (on its thread)
become JobBook events (plastic.core.book.events; Mesos JSON is converted by plastic.mesos.offers);
every event is applied under one lock, each recorder gets the step (the event and all the book
returned), and the commands are carried out right away, still under that lock, so they reach the
driver in the order the book produced them (driver calls only queue work and return futures).

    resourceOffers -> OffersReceived     statusUpdate -> StatusReceived    slaveLost -> AgentLost
    registered     -> Registered (and Reconnected when it is not the first)
    reregistered   -> Reconnected        offerRescinded -> OfferRescinded  a timer    -> Tick
    ignore/unignore (Toil) -> AgentsIgnored                 notice() (Redis) -> NoticeReceived

    LaunchTasks -> driver.launchTasks    DeclineOffers -> driver.declineOffer
    KillTask -> driver.killTask          Acknowledge -> driver.acknowledgeStatusUpdate
    ReviveOffers / SuppressOffers -> reviveOffers / suppressOffers               Reconcile -> reconcileTasks
    ReportJobEnd -> on_ended (a queue by default)   ReportUnplaceable -> a warning, kept for scheduling_status()
    CheckJobStore -> ask the job store on the questions thread, answer JobStoreChecked
    LoadRuntimeHistory -> read the tool's history on the questions thread, answer RuntimeHistoryLoaded

Questions (the job store, Redis) are answered off the lock, on one background thread, and the answer
comes back as an event: the book holds what depends on it (a requeued job is not placed before the
job store's answer).  Without a way to answer, the answer is "no" (work not done, no history) at once.

A launch whose job has no command here (a bug: its TaskCommand was dropped) is not sent: the book is
told the task failed with TASK_ERROR and the reason, and Toil retries the job.  Recorders are closed
(flushed, bounded) by stop().

Its parts: the driver callbacks (plastic.framework.mesos_callbacks), the launches and the offers they
use (plastic.framework.launcher), the one-call commands (plastic.framework.driver_commands), the
questions' thread (plastic.framework.questions), the recorders (plastic.framework.recorder).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from plastic.core.book import commands as cmd
from plastic.core.book import events as evt
from plastic.core.book.decisions import Decisions
from plastic.core.book.jobbook import JobBook
from plastic.core.book.jobs import ENDED
from plastic.core.book.lifecycle import TaskState
from plastic.core.book.placement import AgentInfo
from plastic.core.book.records import JobEnded, Record
from plastic.core.model import Preempt, Resources
from plastic.framework.driver_commands import send
from plastic.framework.launcher import Launcher, TaskCommand
from plastic.framework.mesos_callbacks import MesosCallbacks
from plastic.framework.questions import HistoryAnswer, JobStoreAnswer, Questions
from plastic.framework.recorder import JsonLinesRecorder, LogRecorder, Recorder
from plastic.framework.task_info import (
    EXECUTOR_ID,
    ExecutorKind,
    TaskInfoBuilder,
    executor_kind_from_env,
)
from plastic.mesos.credential import Credential
from plastic.mesos.driver import MesosSchedulerDriver
from plastic.mesos.driver_errors import MesosFrameworkError

log = logging.getLogger(__name__)


def framework_info(name: str, framework_id: str | None, role: str | None) -> dict[str, Any]:
    """The FrameworkInfo plastic subscribes with."""
    # checkpoint: an agent that restarts recovers its tasks, and plastic's executor waits for it meanwhile
    info: dict[str, Any] = {"name": name, "capabilities": [], "checkpoint": True}
    if framework_id:  # take over a framework of a previous incarnation (a failover)
        info["id"] = {"value": framework_id}
    if role:
        info["roles"] = [role]
        info["capabilities"] = [{"type": "MULTI_ROLE"}]
    return info


class Framework(MesosCallbacks):
    """The Mesos side of the Toil plugin (see the module docstring)."""

    def __init__(
        self,
        master: str,
        *,
        name: str = "plastic",
        failover_timeout_s: float | None = None,
        book: JobBook | None = None,
        on_ended: Callable[[cmd.ReportJobEnd], None] | None = None,
        record_path: str | Path | None = None,
        tick_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        driver_factory: Callable[..., Any] = MesosSchedulerDriver,
        role: str | None = None,
        recorders: Sequence[Recorder] = (),
        record_flush_s: float = 10.0,
        framework_id: str | None = None,
        job_store: JobStoreAnswer | None = None,
        runtime_history: HistoryAnswer | None = None,
        credential: Credential | None = None,
        executor: ExecutorKind | None = None,
        executor_command: str | None = None,
    ):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)  # notified after every event
        self.book = book if book is not None else JobBook()
        self.clock = clock
        self.wall_clock = wall_clock
        self.ended: queue.Queue[cmd.ReportJobEnd] = queue.Queue()
        self.on_ended = on_ended or self.ended.put
        self.on_issued: list[Callable[[], None]] = []  # called (off the lock) after each job issued
        self.on_attempt_ended: list[Callable[[], None]] = []  # called (off the lock) after an attempt ended
        self.unplaceable: dict[str, str] = {}
        self.executor_agents: set[str] = set()  # agents where plastic's executor ran a task of this framework
        self.launcher = Launcher(TaskInfoBuilder(executor or executor_kind_from_env(), executor_command))
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
        for r in self.recorders:
            r.begin(self.book.config())
        self.record_flush_s = record_flush_s
        self.questions = Questions(self.apply, job_store, runtime_history)
        self._pending: list[Any] = []  # events to apply after the current one (answers given at once)
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        info = framework_info(name, framework_id, role)
        self.failover_timeout_s = failover_timeout_s
        self._driver_factory, self._master, self._info = driver_factory, master, info
        # a master that authenticates frameworks: HTTP basic on every call, FrameworkInfo.principal
        self._driver_options: dict[str, Any] = {"failover_timeout_s": failover_timeout_s}
        if credential is not None:
            self._driver_options.update(principal=credential.principal, secret=credential.secret)
        self.driver = driver_factory(self, info, master, **self._driver_options)

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
        self.driver = self._driver_factory(self, info, self._master, **self._driver_options)
        self.start(timeout)

    def stop(self, *, kill_tasks: bool = True, failover: bool = False) -> None:
        self._stop.set()
        if kill_tasks:
            with self.lock:
                live = [j for j in self.book.live() if j.state is not TaskState.KILLING]
            for job in live:
                self.kill(job.job_id, wait_s=0)
            # a framework kept for failover is not torn down: its idle executors would hold their share of
            # each agent (and keep a whole-node task of the next run waiting) until their idle time ends
            for agent_id in sorted(self.executor_agents):
                self.driver.shutdownExecutor({"value": EXECUTOR_ID}, {"value": agent_id})
        try:
            self.driver.stop(failover=failover)
        finally:
            if self._ticker is not None:
                self._ticker.join(timeout=self.tick_s + 1)
            self.questions.stop(self.record_flush_s)
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
                self.apply(evt.Tick())
            except Exception:  # the ticker must survive anything
                log.exception("tick failed")

    # ------------------------------------------------------------ the one way in

    def apply(self, event: evt.Event) -> Decisions:
        """Apply ``event``, then any answer it got at once; returns what the book decided on ``event``."""
        ended = False
        with self.lock:
            self._pending.append(event)
            steps: list[Decisions] = []
            while self._pending:
                ev = self._pending.pop(0)
                now = self.clock()
                decided = self.book.handle(ev, now)
                steps.append(decided)
                ended = ended or any(isinstance(r, JobEnded) for r in decided.records)
                self._record(ev, now, decided.records, decided.commands)
                for command in decided.commands:
                    try:
                        self._execute(command)
                    except Exception:
                        log.exception("could not carry out %r", command)
            self.changed.notify_all()
        if ended:
            for listener in self.on_attempt_ended:
                listener()
        return steps[0] if steps else Decisions()

    def _record(self, event: Any, now: float, records: Sequence[Record], commands: Sequence[Any],
                machine: str = "book") -> None:
        for r in self.recorders:
            try:
                r.step(event, now, records, commands, machine)
            except Exception:  # a recorder must never stop scheduling
                log.exception("recorder %r failed on %r", r, event)

    def record_elastic(self, event: Any, now: float, outputs: Sequence[Any]) -> None:
        """Hand one step of the elastic machine (plastic.framework.provisioner) to every recorder: its input
        (plastic.core.elastic.machine) and what the controller returned, its records and commands in one
        list."""
        records = [o for o in outputs if isinstance(o, Record)]
        commands = [o for o in outputs if not isinstance(o, Record)]
        with self.lock:
            self._record(event, now, records, commands, "elastic")

    # ------------------------------------------------------------ calls from the Toil side

    def issue(self, job_id: str, command: TaskCommand, demand: Resources, preempt: Preempt, *,
              instance_type: str | None = None, tool: str | None = None, name: str | None = None,
              step: str | None = None, job_store_id: str | None = None) -> None:
        with self.lock:
            self.launcher.commands[job_id] = command
            self.apply(evt.JobIssued(job_id, demand, preempt, instance_type, tool, name, step, job_store_id))
        for listener in self.on_issued:
            listener()

    def kill(self, job_id: str, wait_s: float = 30.0) -> bool:
        """KillRequested, then wait (bounded) until the book has ended the job.  True when it has."""
        deadline = time.monotonic() + wait_s
        with self.lock:
            self.apply(evt.KillRequested(job_id))
            while True:
                job = self.book.jobs.get(job_id)
                if job is None or job.state in ENDED:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(min(left, 1.0))

    def resume(self, prior: Iterable[evt.PriorTask], *, framework_removed: bool = False) -> None:
        """A new leader incarnation: the run's records of the previous leaders' unfinished tasks; the
        book decides what becomes of each (plastic.core.book.orphans)."""
        self.apply(evt.Resumed(tuple(prior), framework_removed=framework_removed))

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
                    out[job.job_id] = cur.ran_s(now) if cur else 0.0
        return out

    def agents(self) -> dict[str, AgentInfo]:
        with self.lock:
            return {a: info for a, info in self.book.agents.items() if a not in self.book.gone}

    def agent_ids_at(self, address: str) -> list[str]:
        with self.lock:
            return self.book.agent_ids_at(address)

    def address_of(self, agent_id: str) -> str:
        with self.lock:
            info = self.book.agents.get(agent_id)
        return info.address if info is not None and info.address else agent_id

    def ignore(self, address: str) -> None:
        self.apply(evt.AgentsIgnored(tuple(self.agent_ids_at(address)), True))

    def unignore(self, address: str) -> None:
        self.apply(evt.AgentsIgnored(tuple(self.agent_ids_at(address)), False))

    def scheduling_status(self) -> str | None:
        with self.lock:
            lines = [f"job {j}: {r}" for j, r in sorted(self.unplaceable.items())]
            lines += self.book.status_lines(self.clock())
            return "; ".join(lines) if lines else None

    # ------------------------------------------------------------ spot notices

    def agent_for(self, target: str) -> str | None:
        """The known, live agent a notice target names (``agent:<id>``, ``instance:<i-...>``), else None."""
        kind, _, name = target.partition(":")
        with self.lock:
            if kind == "agent":
                agent_id: str | None = name
            elif kind == "instance":
                agent_id = self.book.agent_of_instance(name)
            else:
                return None
            if agent_id is None or agent_id not in self.book.agents or agent_id in self.book.gone:
                return None
            return agent_id

    def book_time(self, epoch_s: float) -> float:
        """An epoch time (a notice's deadline) on the book's clock."""
        return self.clock() + (epoch_s - self.wall_clock())

    def notice(self, agent_id: str, kind: evt.NoticeKind, at_epoch_s: float) -> Decisions:
        """A terminate notice (at: the deadline) or a rebalance recommendation (at: when it was made)."""
        with self.lock:
            return self.apply(evt.NoticeReceived(agent_id, self.book_time(at_epoch_s), kind))

    # ------------------------------------------------------------ commands

    def _execute(self, command: cmd.Command) -> None:
        match command:
            case cmd.LaunchTasks():
                self._pending += self.launcher.launch(self.driver, command, self.book.jobs)
            case cmd.ReportJobEnd():
                self.launcher.commands.pop(command.job_id, None)
                self.unplaceable.pop(command.job_id, None)
                self.on_ended(command)
            case cmd.ReportUnplaceable():
                self.unplaceable[command.job_id] = command.reason
                log.warning("job %s cannot be placed: %s", command.job_id, command.reason)
            case cmd.CheckJobStore() | cmd.LoadRuntimeHistory():
                answer = self.questions.ask(command)
                if answer is not None:
                    self._pending.append(answer)
            case _:
                if not send(self.driver, command, self.statuses):
                    raise TypeError(f"not a JobBook command: {command!r}")
                if isinstance(command, cmd.DeclineOffers):
                    for o in command.offer_ids:
                        self.launcher.forget(o)
