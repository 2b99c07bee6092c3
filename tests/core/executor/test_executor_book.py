"""The executor's decisions (plastic.core.executor.book): cases, then properties over any order of events."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plastic.core.executor.book import FIRST_TASK_WAIT_S, ExecutorBook, ExecutorSettings
from plastic.core.executor.messages import (
    TERMINAL_STATES,
    Acknowledged,
    ConnectionLost,
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

PREFIX = b"\x01" * 8


def book(**kw) -> ExecutorBook:
    b = ExecutorBook(ExecutorSettings(**kw), PREFIX, now=0.0)
    assert b.start() == [Resubscribe(())]
    assert b.handle(Subscribed(0.0)) == []
    return b


def updates(out) -> list[tuple[str, str]]:
    return [(c.task_id, c.state) for c in out if isinstance(c, SendUpdate)]


def running(b: ExecutorBook, task_id: str, now: float = 1.0) -> None:
    assert b.handle(LaunchReceived(task_id, now)) == [StartProcess(task_id)]
    assert updates(b.handle(ProcessStarted(task_id, now))) == [(task_id, "TASK_RUNNING")]


def ack_all(b: ExecutorBook, now: float) -> None:
    for t in list(b.tasks.values()):
        for u in list(t.unacknowledged):
            b.handle(Acknowledged(t.task_id, u.uuid, now))


def test_a_task_that_exits_zero_finishes_with_its_usage():
    b = book()
    running(b, "t1")
    usage = Usage(cpu_s=1.5, max_rss_mib=12.0, wall_s=2.0)
    out = b.handle(ProcessExited("t1", 0, 3.0, usage=usage))
    (update,) = [c for c in out if isinstance(c, SendUpdate)]
    assert (update.state, update.usage, update.message) == ("TASK_FINISHED", usage, "Command exited with status 0")
    assert len(update.uuid) == 16 and update.uuid[6] >> 4 == 4 and update.uuid[:6] == PREFIX[:6]


def test_a_failed_task_says_the_last_line_of_its_standard_error():
    b = book()
    running(b, "t1")
    out = b.handle(ProcessExited("t1", 3, 2.0, stderr_tail="oops: no such file\n"))
    (update,) = [c for c in out if isinstance(c, SendUpdate)]
    assert update.state == "TASK_FAILED"
    assert update.message == "Command exited with status 3: oops: no such file"


def test_a_kill_is_sigterm_then_sigkill_after_the_grace_period():
    b = book()
    running(b, "t1")
    assert b.handle(KillReceived("t1", 5.0, grace_s=2.0)) == [SignalProcessGroup("t1", "TERM")]
    assert b.next_deadline() == 7.0
    assert b.handle(Ticked(6.9)) == []
    assert b.handle(Ticked(7.0)) == [SignalProcessGroup("t1", "KILL")]
    out = b.handle(ProcessExited("t1", -9, 7.1))
    assert updates(out) == [("t1", "TASK_KILLED")]


def test_the_tasks_own_grace_period_holds_when_the_kill_names_none():
    b = book(kill_grace_s=9.0)
    b.handle(LaunchReceived("t1", 1.0, grace_s=0.5))
    b.handle(ProcessStarted("t1", 1.0))
    b.handle(KillReceived("t1", 2.0))
    assert b.next_deadline() == 2.5


def test_a_kill_while_the_process_starts_signals_it_once_it_exists():
    b = book()
    b.handle(LaunchReceived("t1", 1.0))
    assert b.handle(KillReceived("t1", 1.0)) == []
    out = b.handle(ProcessStarted("t1", 1.1))
    assert SignalProcessGroup("t1", "TERM") in out


def test_a_process_that_cannot_start_fails_its_task():
    b = book()
    b.handle(LaunchReceived("t1", 1.0))
    out = b.handle(ProcessFailedToStart("t1", "No such file or directory", 1.0))
    assert updates(out) == [("t1", "TASK_FAILED")]


def test_shutdown_kills_every_task_and_leaves_once_the_agent_holds_their_ends():
    b = book(shutdown_grace_s=5.0)
    running(b, "t1")
    running(b, "t2")
    out = b.handle(ShutdownReceived(2.0))
    assert sorted(c.task_id for c in out if isinstance(c, SignalProcessGroup)) == ["t1", "t2"]
    assert b.handle(LaunchReceived("t3", 2.1)) and updates(b.handle(Ticked(2.1))) == []
    assert ("t3", "TASK_KILLED") in [(u.task_id, u.state) for u in b.tasks["t3"].unacknowledged]
    b.handle(ProcessExited("t1", -15, 2.2))
    out = b.handle(ProcessExited("t2", -15, 2.3))
    assert not any(isinstance(c, Exit) for c in out)  # their ends are not with the agent yet
    for t in b.tasks.values():
        for u in t.unacknowledged:
            out = b.handle(UpdateAccepted(u.uuid, 2.4))
    assert out == [Exit(0, "shut down by the agent")]


def test_a_lost_agent_is_waited_for_and_the_subscription_names_what_is_unacknowledged():
    b = book(checkpoint=True, recovery_timeout_s=30.0, subscription_backoff_max_s=2.0)
    running(b, "t1")
    ack_all(b, 1.0)
    running(b, "t2")
    assert b.handle(ConnectionLost(2.0)) == []
    out = b.handle(ProcessExited("t1", 0, 2.05))
    assert updates(out) == []  # made while the stream is down: it waits for the next subscription
    (resub,) = b.handle(Ticked(2.1))
    assert isinstance(resub, Resubscribe)
    assert resub.unacknowledged_tasks == ("t2",)
    assert [(u.task_id, u.state) for u in resub.unacknowledged_updates] == [
        ("t1", "TASK_FINISHED"), ("t2", "TASK_RUNNING")]
    b.handle(ConnectionLost(2.2))  # the agent is still restarting: backoff doubles
    assert b.next_subscribe_at == 2.2 + 0.2


def test_retries_come_at_least_twice_in_the_agents_window_for_re_subscription():
    """A restarted agent waits its --executor_reregistration_timeout for executors, the same value it
    gives them as MESOS_SUBSCRIPTION_BACKOFF_MAX: tries at most half of it apart land twice in it."""
    b = book(checkpoint=True, recovery_timeout_s=60.0, subscription_backoff_max_s=2.0)
    running(b, "t1")
    now, gaps = 1.0, []
    for _ in range(12):
        b.handle(ConnectionLost(now))
        gaps.append(b.next_subscribe_at - now)
        now = b.next_subscribe_at
    assert gaps[:4] == pytest.approx([0.1, 0.2, 0.4, 0.8])
    assert max(gaps) == pytest.approx(1.0)


def test_an_agent_gone_past_the_recovery_timeout_ends_every_task():
    b = book(checkpoint=True, recovery_timeout_s=30.0)
    running(b, "t1")
    b.handle(ConnectionLost(2.0))
    out = b.handle(Ticked(32.0))
    assert SignalProcessGroup("t1", "KILL") in out
    out = b.handle(ProcessExited("t1", -9, 32.1))
    assert out == [Exit(1, "the agent did not come back within the recovery timeout")]


def test_without_checkpointing_a_lost_agent_ends_the_executor_at_once():
    b = book(checkpoint=False)
    running(b, "t1")
    assert b.handle(ConnectionLost(2.0)) == [SignalProcessGroup("t1", "KILL")]
    assert b.handle(ProcessExited("t1", -9, 2.1)) == [
        Exit(1, "the agent went away and the framework does not checkpoint")]


def test_the_first_subscription_is_retried_even_without_checkpointing():
    b = ExecutorBook(ExecutorSettings(checkpoint=False, recovery_timeout_s=10.0), PREFIX, now=0.0)
    b.start()
    assert b.handle(ConnectionLost(0.1)) == []
    assert isinstance(b.handle(Ticked(0.2))[0], Resubscribe)
    assert b.handle(Ticked(10.1)) == [Exit(1, "the agent did not come back within the recovery timeout")]


def test_an_idle_executor_leaves_but_not_while_an_update_is_unacknowledged():
    b = book(idle_s=10.0)
    running(b, "t1")
    b.handle(ProcessExited("t1", 0, 2.0))
    assert b.handle(Ticked(20.0)) == []
    ack_all(b, 20.0)
    assert b.next_deadline() == 30.0
    assert b.handle(Ticked(30.0)) == [Exit(0, "idle for 10 s")]
    assert b.handle(LaunchReceived("late", 31.0)) == []  # gone: the agent fails what it still sends


# ------------------------------------------------------------------ properties

ACTIONS = st.lists(st.tuples(st.sampled_from(["launch", "kill", "start", "nostart", "exit", "ack", "accept", "lose",
                                              "subscribe", "shutdown", "tick"]),
                             st.integers(0, 7), st.floats(0.0, 20.0)), max_size=60)


class Shell:
    """Plays the executor's shell and agent for the properties: carries commands out as a shell would."""

    def __init__(self, checkpoint: bool):
        self.book = ExecutorBook(ExecutorSettings(checkpoint=checkpoint, recovery_timeout_s=40.0, idle_s=15.0,
                                                  shutdown_grace_s=5.0, kill_grace_s=2.0), PREFIX, now=0.0)
        self.now = 0.0
        self.made: dict[bytes, SendUpdate] = {}  # every update the book made, by uuid
        self.starting: list[str] = []
        self.live: list[str] = []
        self.subscribing = False
        self.launched: list[str] = []
        self.exit: Exit | None = None
        self.take(self.book.start())

    def take(self, out) -> None:
        for c in out:
            assert self.exit is None, "a command after Exit"
            if isinstance(c, SendUpdate):
                self.made.setdefault(c.uuid, c)
            elif isinstance(c, Resubscribe):
                self.subscribing = True
                for u in c.unacknowledged_updates:
                    assert self.made.setdefault(u.uuid, u) == u
            elif isinstance(c, StartProcess):
                self.starting.append(c.task_id)
            elif isinstance(c, Exit):
                assert not self.live and not self.starting, "left with processes running"
                self.exit = c

    def feed(self, event) -> None:
        if self.exit is None:
            self.take(self.book.handle(event))

    def step(self, action: str, k: int, dt: float) -> None:
        self.now += dt / 10
        now = self.now
        pick = (lambda xs: xs[k % len(xs)] if xs else None)
        if action == "launch" and self.exit is None:
            tid = f"t{len(self.launched)}"
            self.launched.append(tid)
            self.feed(LaunchReceived(tid, now, grace_s=None if k % 2 else 1.0))
        elif action == "kill" and self.launched:
            self.feed(KillReceived(pick(self.launched), now))
        elif action in ("start", "nostart") and self.starting:
            tid = pick(self.starting)
            self.starting.remove(tid)
            if action == "start":
                self.live.append(tid)
                self.feed(ProcessStarted(tid, now))
            else:
                self.feed(ProcessFailedToStart(tid, "cannot", now))
        elif action == "exit" and self.live:
            tid = pick(self.live)
            self.live.remove(tid)
            self.feed(ProcessExited(tid, k - 2, now))
        elif action in ("ack", "accept") and self.made:
            u = pick(list(self.made.values()))
            self.feed(Acknowledged(u.task_id, u.uuid, now) if action == "ack" else UpdateAccepted(u.uuid, now))
        elif action == "lose":
            self.subscribing = False
            self.feed(ConnectionLost(now))
        elif action == "subscribe" and self.subscribing:
            self.subscribing = False
            self.feed(Subscribed(now))
        elif action == "shutdown":
            self.feed(ShutdownReceived(now))
        else:
            self.feed(Ticked(now))

    def count_undelivered(self) -> None:
        """Updates the book made but could not deliver (the agent gone for good) count as made."""
        for t in self.book.tasks.values():
            for u in t.unacknowledged:
                self.made.setdefault(u.uuid, u)

    def settle(self) -> None:
        """Let everything happen: processes start and end, the agent answers, time passes."""
        for _ in range(200):
            if self.exit is not None:
                return
            if self.starting:
                self.step("start", 0, 0.1)
            elif self.live:
                self.step("exit", 0, 0.1)
            elif self.subscribing:
                self.step("subscribe", 0, 0.1)
            else:
                for u in list(self.made.values()):
                    self.feed(UpdateAccepted(u.uuid, self.now))
                    self.feed(Acknowledged(u.task_id, u.uuid, self.now))
                deadline = self.book.next_deadline()
                self.now = max(self.now, deadline if deadline is not None else self.now + 100)
                self.feed(Ticked(self.now))
        raise AssertionError("the executor never left")


@settings(max_examples=300, deadline=None)
@given(actions=ACTIONS, checkpoint=st.booleans())
def test_every_task_ends_with_exactly_one_terminal_update_whatever_happens(actions, checkpoint):
    shell = Shell(checkpoint)
    for action in actions:
        shell.step(*action)
    shell.settle()
    assert shell.exit is not None and not shell.live and not shell.starting
    shell.count_undelivered()
    by_task: dict[str, list[str]] = {}
    for u in shell.made.values():
        by_task.setdefault(u.task_id, []).append(u.state)
    for tid in shell.launched:
        states = by_task.get(tid, [])
        terminal = [s for s in states if s in TERMINAL_STATES]
        if tid in by_task or shell.book.tasks.get(tid) is not None:
            assert len(terminal) == 1, (tid, states)
            assert states[-1] in TERMINAL_STATES, (tid, states)
        else:  # given to an executor that had already left: the agent answers for it
            assert shell.exit is not None


@settings(max_examples=200, deadline=None)
@given(actions=ACTIONS)
def test_updates_are_made_in_order_per_task_and_never_after_the_terminal_one(actions):
    shell = Shell(checkpoint=True)
    for action in actions:
        shell.step(*action)
    shell.settle()
    shell.count_undelivered()
    order = {"TASK_STARTING": 0, "TASK_RUNNING": 1}
    by_task: dict[str, list[SendUpdate]] = {}
    for u in sorted(shell.made.values(), key=lambda u: u.uuid):
        by_task.setdefault(u.task_id, []).append(u)
    for tid, ups in by_task.items():
        ranks = [order.get(u.state, 2) for u in ups]
        assert ranks == sorted(ranks), (tid, [u.state for u in ups])
        assert sum(r == 2 for r in ranks) == 1, (tid, [u.state for u in ups])


def test_before_its_first_task_the_executor_waits_for_a_busy_agent():
    b = book(idle_s=10.0)
    assert b.next_deadline() == FIRST_TASK_WAIT_S  # the agent started it for a task it has not sent yet
    assert b.handle(Ticked(11.0)) == []
    running(b, "t1", now=20.0)
    b.handle(ProcessExited("t1", 0, 21.0))
    ack_all(b, 21.0)
    assert b.next_deadline() == 31.0  # then its own idle time
