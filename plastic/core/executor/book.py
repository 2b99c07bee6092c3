"""plastic's Mesos executor as a state machine: events in, commands out, no I/O and no clock.

One executor runs every task one framework places on one agent.  The book decides, for each event
(plastic.core.executor.messages), what the shell does: start a task's process, signal its group,
send a status update, subscribe again, leave.  What it guarantees:

- every task it is given ends with exactly one terminal update: FINISHED (exit 0), FAILED (another
  exit), KILLED (a KILL, a SHUTDOWN, or the agent gone for good), FAILED when its process could not
  start; a task that arrives while the executor is shutting down is KILLED without running;
- a kill is SIGTERM to the task's process group, then SIGKILL once the grace period (the KILL's kill
  policy, else the task's, else the default) has passed;
- updates are kept until acknowledged, and a re-subscription names them and the tasks none of whose
  updates was acknowledged; an update made while the stream is down waits for the next subscription;
- a lost stream is waited out for the recovery timeout when the framework checkpoints (the agent may
  be restarting), re-subscribing with backoff; otherwise, and when the timeout passes, every task is
  SIGKILLed and the executor leaves once their processes are reaped, so nothing is left behind;
- with no task and nothing unacknowledged for ``idle_s``, it leaves, giving its share back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from plastic.core.executor.messages import (
    TERMINAL_STATES,
    Acknowledged,
    ConnectionLost,
    ExecutorCommand,
    ExecutorEvent,
    Exit,
    KillReceived,
    LaunchReceived,
    ProcessExited,
    ProcessFailedToStart,
    ProcessStarted,
    Resubscribe,
    SendUpdate,
    ShutdownReceived,
    SignalProcessGroup,
    StartProcess,
    Subscribed,
    Ticked,
    UpdateAccepted,
    Usage,
)

DEFAULT_KILL_GRACE_S = 3.0
DEFAULT_IDLE_S = 60.0
# An agent starts an executor for a task it holds, and sends it once the executor has subscribed; a busy
# agent (hundreds of tasks launched at once on a debug build) took 16 s to (measured on the compose
# cluster, 2026-11-28).  Until its first task the executor waits at least this long before it leaves.
FIRST_TASK_WAIT_S = 300.0


@dataclass(frozen=True, slots=True)
class ExecutorSettings:
    """From the agent's environment (MESOS_CHECKPOINT, MESOS_RECOVERY_TIMEOUT, ..._BACKOFF_MAX,
    ..._SHUTDOWN_GRACE_PERIOD) and plastic's own (idle time, default kill grace)."""

    checkpoint: bool = False
    recovery_timeout_s: float = 900.0
    subscription_backoff_max_s: float = 2.0
    shutdown_grace_s: float = 5.0
    idle_s: float = DEFAULT_IDLE_S
    kill_grace_s: float = DEFAULT_KILL_GRACE_S


@dataclass(slots=True)
class ExecutorTask:
    task_id: str
    grace_s: float | None
    process: str = "starting"  # starting | running | gone
    kill_requested: bool = False
    kill_reason: str | None = None
    kill_deadline: float | None = None  # SIGKILL then
    terminal_sent: bool = False
    acknowledged_any: bool = False
    unacknowledged: list[SendUpdate] = field(default_factory=list)


class ExecutorBook:
    """The decisions of one executor (see the module's docstring)."""

    def __init__(self, settings: ExecutorSettings, uuid_prefix: bytes, now: float):
        if len(uuid_prefix) != 8:
            raise ValueError("uuid_prefix must be 8 bytes")
        self.settings = settings
        self._uuid_prefix = uuid_prefix
        self._updates_made = 0
        self.tasks: dict[str, ExecutorTask] = {}
        self.connected = False
        self.lost_at: float | None = now  # not yet subscribed counts as not connected since `now`
        self.backoff_s = 0.0
        self.next_subscribe_at: float | None = None
        self.shutting_down = False
        self.shutdown_deadline: float | None = None
        self.giving_up = False  # the agent is gone for good: tasks SIGKILLed, leave once reaped
        self.give_up_reason = ""
        self.ever_subscribed = False
        self.accepted: set[bytes] = set()  # uuids the agent took (202, or carried by a SUBSCRIBE it answered)
        self.resubscribed_with: tuple[bytes, ...] = ()
        self.idle_since: float | None = now
        self.had_a_task = False
        self.exited: Exit | None = None

    def start(self) -> list[ExecutorCommand]:
        """The first SUBSCRIBE."""
        return [Resubscribe(())]

    # ------------------------------------------------------------ dispatch

    def handle(self, event: ExecutorEvent) -> list[ExecutorCommand]:
        if self.exited is not None:
            return []
        out: list[ExecutorCommand] = []
        match event:
            case Subscribed():
                self._subscribed(out)
            case LaunchReceived():
                self._launch(event, out)
            case KillReceived():
                self._kill(event.task_id, event.grace_s, event.now, "killed", out)
            case ProcessStarted():
                self._started(event, out)
            case ProcessFailedToStart():
                self._failed_to_start(event, out)
            case ProcessExited():
                self._exited_process(event, out)
            case UpdateAccepted():
                self.accepted.add(event.uuid)  # it stays unacknowledged until ACKNOWLEDGED
            case Acknowledged():
                self._acknowledged(event)
            case ShutdownReceived():
                self._shutdown(event.now, out)
            case ConnectionLost():
                self._lost(event.now, out)
            case Ticked():
                pass
        self._timers(event.now, out)
        return out

    def next_deadline(self) -> float | None:
        """When the book next needs a Ticked (None: only events move it)."""
        if self.exited is not None:
            return None
        times = [t.kill_deadline for t in self.tasks.values() if t.kill_deadline is not None]
        if self.next_subscribe_at is not None and not self.connected:
            times.append(self.next_subscribe_at)
        if self.lost_at is not None and not self.connected and self._waits_for_agent():
            times.append(self.lost_at + self.settings.recovery_timeout_s)
        if self.shutdown_deadline is not None:
            times.append(self.shutdown_deadline)
        if self.idle_since is not None:
            times.append(self.idle_since + self._idle_limit_s())
        return min(times) if times else None

    # ------------------------------------------------------------ the stream

    def _subscribed(self, out: list[ExecutorCommand]) -> None:
        self.connected = True
        self.ever_subscribed = True
        self.lost_at = None
        self.backoff_s = 0.0
        self.next_subscribe_at = None
        carried = set(self.resubscribed_with)
        self.accepted.update(carried)
        self.resubscribed_with = ()
        # updates made after the SUBSCRIBE went out (and before its answer) are sent now, in order
        out.extend(u for t in self.tasks.values() for u in t.unacknowledged if u.uuid not in carried)

    def _waits_for_agent(self) -> bool:
        """A lost stream is waited out (re-subscribing) when the framework checkpoints, or before the first
        subscription; otherwise it ends the executor."""
        return not self.giving_up and (self.settings.checkpoint or not self.ever_subscribed)

    def _lost(self, now: float, out: list[ExecutorCommand]) -> None:
        if self.connected or self.lost_at is None:
            self.lost_at = now
        self.connected = False
        self.resubscribed_with = ()
        if not self._waits_for_agent():
            self._give_up(now, "the agent went away and the framework does not checkpoint", out)
            return
        # The agent's window for executors to re-subscribe after its restart is as long as the backoff
        # maximum it gives (both are its --executor_reregistration_timeout): waiting at most half of it
        # between tries puts two tries in that window, whatever the time each try takes.
        cap_s = max(self.settings.subscription_backoff_max_s / 2, 0.1)
        self.backoff_s = min(max(self.backoff_s * 2, 0.1), cap_s)
        self.next_subscribe_at = now + self.backoff_s

    def _resubscribe(self) -> Resubscribe:
        tasks = tuple(t.task_id for t in self.tasks.values() if not t.acknowledged_any)
        updates = tuple(u for t in self.tasks.values() for u in t.unacknowledged)
        self.resubscribed_with = tuple(u.uuid for u in updates)
        return Resubscribe(tasks, updates)

    # ------------------------------------------------------------ tasks

    def _launch(self, ev: LaunchReceived, out: list[ExecutorCommand]) -> None:
        if ev.task_id in self.tasks:
            return  # the agent never sends a task twice; a second LAUNCH changes nothing
        task = ExecutorTask(ev.task_id, ev.grace_s)
        self.tasks[ev.task_id] = task
        self.idle_since = None
        self.had_a_task = True
        if self.shutting_down or self.giving_up:
            task.process = "gone"
            self._update(task, "TASK_KILLED", ev.now, out, message="the executor is shutting down",
                         reason="REASON_EXECUTOR_TERMINATED")
            return
        out.append(StartProcess(ev.task_id))

    def _started(self, ev: ProcessStarted, out: list[ExecutorCommand]) -> None:
        task = self.tasks.get(ev.task_id)
        if task is None or task.process != "starting":
            return
        task.process = "running"  # (no TASK_STARTING: the process runs once it exists; one update less a task)
        self._update(task, "TASK_RUNNING", ev.now, out)
        if task.kill_requested:  # a KILL came while it was being started
            self._signal(task, ev.now, out)

    def _failed_to_start(self, ev: ProcessFailedToStart, out: list[ExecutorCommand]) -> None:
        task = self.tasks.get(ev.task_id)
        if task is None or task.process != "starting":
            return
        task.process = "gone"
        if task.kill_requested:
            self._update(task, "TASK_KILLED", ev.now, out, message="killed before it started",
                         reason=task.kill_reason)
        else:
            self._update(task, "TASK_FAILED", ev.now, out, message=f"Failed to launch command: {ev.message}",
                         reason="REASON_COMMAND_EXECUTOR_FAILED")

    def _exited_process(self, ev: ProcessExited, out: list[ExecutorCommand]) -> None:
        task = self.tasks.get(ev.task_id)
        if task is None or task.process == "gone":
            return
        task.process = "gone"
        task.kill_deadline = None
        message = describe_exit(ev.returncode)
        if task.kill_requested:
            self._update(task, "TASK_KILLED", ev.now, out, message=message, reason=task.kill_reason,
                         usage=ev.usage)
        elif ev.returncode == 0:
            self._update(task, "TASK_FINISHED", ev.now, out, message=message, usage=ev.usage)
        else:
            tail = ev.stderr_tail.strip()
            self._update(task, "TASK_FAILED", ev.now, out, message=f"{message}: {tail}" if tail else message,
                         usage=ev.usage)

    def _kill(self, task_id: str, grace_s: float | None, now: float, reason: str | None,
              out: list[ExecutorCommand]) -> None:
        task = self.tasks.get(task_id)
        if task is None or task.process == "gone" or task.kill_requested:
            return
        task.kill_requested = True
        task.kill_reason = None if reason == "killed" else reason
        if grace_s is not None:
            task.grace_s = grace_s
        if task.process == "running":
            self._signal(task, now, out)

    def _signal(self, task: ExecutorTask, now: float, out: list[ExecutorCommand]) -> None:
        grace = task.grace_s if task.grace_s is not None else self.settings.kill_grace_s
        if self.shutting_down:  # the agent SIGKILLs the whole executor after its shutdown grace period
            grace = min(grace, max(0.0, self.settings.shutdown_grace_s - 1.0))
        if self.giving_up or grace <= 0:
            out.append(SignalProcessGroup(task.task_id, "KILL"))
            task.kill_deadline = None
            return
        out.append(SignalProcessGroup(task.task_id, "TERM"))
        task.kill_deadline = now + grace

    def _acknowledged(self, ev: Acknowledged) -> None:
        task = self.tasks.get(ev.task_id)
        if task is None:
            return
        kept = [u for u in task.unacknowledged if u.uuid != ev.uuid]
        if len(kept) == len(task.unacknowledged):
            return
        task.unacknowledged = kept
        task.acknowledged_any = True
        self.accepted.discard(ev.uuid)  # (only unacknowledged updates are looked up there)
        if task.terminal_sent and not task.unacknowledged:
            del self.tasks[ev.task_id]

    def _update(self, task: ExecutorTask, state: str, now: float, out: list[ExecutorCommand], *,
                message: str | None = None, reason: str | None = None, usage: Usage | None = None) -> None:
        self._updates_made += 1
        # an RFC 4122 version 4 UUID (an agent refuses bytes of an unknown version: "Not a valid UUID")
        uuid = UUID(bytes=self._uuid_prefix + self._updates_made.to_bytes(8, "big"), version=4).bytes
        update = SendUpdate(task.task_id, state, uuid,
                            message=message, reason=reason, usage=usage, timestamp=now)
        task.unacknowledged.append(update)
        if state in TERMINAL_STATES:
            task.terminal_sent = True
        if self.connected:
            out.append(update)

    # ------------------------------------------------------------ ending

    def _shutdown(self, now: float, out: list[ExecutorCommand]) -> None:
        if self.shutting_down:
            return
        self.shutting_down = True
        self.shutdown_deadline = now + self.settings.shutdown_grace_s
        for task in list(self.tasks.values()):
            self._kill(task.task_id, None, now, "REASON_EXECUTOR_TERMINATED", out)

    def _give_up(self, now: float, why: str, out: list[ExecutorCommand]) -> None:
        """The agent is gone for good: SIGKILL every task; leave once they are reaped."""
        if self.giving_up:
            return
        self.giving_up = True
        self.give_up_reason = why
        for task in self.tasks.values():
            if task.process == "gone":
                continue
            if not task.kill_requested:
                task.kill_requested = True
                task.kill_reason = "REASON_EXECUTOR_TERMINATED"
            if task.process == "running":
                out.append(SignalProcessGroup(task.task_id, "KILL"))
                task.kill_deadline = None

    def _live(self) -> bool:
        return any(t.process != "gone" for t in self.tasks.values())

    def _timers(self, now: float, out: list[ExecutorCommand]) -> None:
        for task in self.tasks.values():
            if task.kill_deadline is not None and now >= task.kill_deadline and task.process == "running":
                out.append(SignalProcessGroup(task.task_id, "KILL"))
                task.kill_deadline = None
        if not self.connected and self._waits_for_agent() and self.lost_at is not None \
                and now >= self.lost_at + self.settings.recovery_timeout_s:
            self._give_up(now, "the agent did not come back within the recovery timeout", out)
        if not self.connected and not self.giving_up and self.next_subscribe_at is not None \
                and now >= self.next_subscribe_at:
            self.next_subscribe_at = None
            out.append(self._resubscribe())
        self._maybe_exit(now, out)

    def _maybe_exit(self, now: float, out: list[ExecutorCommand]) -> None:
        live = self._live()
        if self.giving_up:
            if not live:
                self._exit(1, self.give_up_reason, out)
        elif self.shutting_down:
            overdue = self.shutdown_deadline is not None and now >= self.shutdown_deadline
            held = all(u.uuid in self.accepted for t in self.tasks.values() for u in t.unacknowledged)
            if not live and (held or overdue):
                self._exit(0, "shut down by the agent", out)
            elif live and overdue:
                self._give_up(now, "tasks outlived the shutdown grace period", out)
        elif live or any(t.unacknowledged for t in self.tasks.values()):
            self.idle_since = None
        elif self.idle_since is None:
            self.idle_since = now
        elif now >= self.idle_since + self._idle_limit_s():
            self._exit(0, f"idle for {self._idle_limit_s():g} s", out)

    def _idle_limit_s(self) -> float:
        return self.settings.idle_s if self.had_a_task else max(self.settings.idle_s, FIRST_TASK_WAIT_S)

    def _exit(self, code: int, reason: str, out: list[ExecutorCommand]) -> None:
        self.exited = Exit(code, reason)
        out.append(self.exited)


def describe_exit(returncode: int) -> str:
    """As Mesos' command executor words it."""
    if returncode < 0:
        return f"Command terminated with signal {-returncode}"
    return f"Command exited with status {returncode}"
