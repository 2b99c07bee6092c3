"""The Framework adapter with a recording fake driver: callbacks -> events, commands -> driver calls."""

from __future__ import annotations

from plastic.core.model import PREEMPTIBLE, RELIABLE, Resources
from plastic.executor.protocol import command_of
from plastic.framework.adapter import Framework
from plastic.framework.launcher import TaskCommand
from plastic.framework.toil_batch import demand_of
from plastic.mesos.offers import agent_from_offer, status_event
from tests.fakes.driver import FakeDriver, offer


def make():
    ended = []
    fw = Framework("http://x", driver_factory=FakeDriver, on_ended=ended.append, clock=lambda: 100.0)
    fw.registered(fw.driver, {"value": "fw-1"}, {})
    return fw, fw.driver, ended


def test_conversions():
    a = agent_from_offer(offer("o1", "a1", 2.5, 1024.9, preemptible=True))
    assert a.agent_id == "a1" and a.preemptible and a.cluster == "burst"
    assert a.capacity == Resources(2, 1024)
    assert demand_of(0.1, 314572800) == Resources(1, 300)
    assert demand_of(2, 1) == Resources(2, 1)
    ev = status_event({"task_id": {"value": "7.1"}, "state": "TASK_FAILED", "agent_id": {"value": "a1"},
                       "message": "Command exited with status 3", "uuid": "dXU="})
    assert (ev.mesos_task_id, ev.agent_id, ev.uuid) == ("7.1", "a1", "dXU=")


def test_launch_finish_and_ack():
    fw, d, ended = make()
    fw.issue("7", TaskCommand("echo hi", {"A": "1"}), Resources(1, 256), RELIABLE, name="CWLJob x")
    assert d.of("reviveOffers")
    fw.resourceOffers(d, [offer("o1", "a1", 4, 8192)])
    (launch,) = d.of("launchTasks")
    offer_id, tasks = launch[1]
    assert offer_id == {"value": "o1"}
    t = tasks[0]
    assert t["task_id"] == {"value": "7.1"} and t["agent_id"] == {"value": "a1"} and t["name"] == "CWLJob x"
    assert "command" not in t and t["executor"]["executor_id"] == {"value": "plastic"}  # plastic's executor
    command = command_of(t)
    assert command["shell"] is True and {"name": "A", "value": "1"} in command["environment"]["variables"]
    assert {r["name"]: (r["scalar"]["value"], r["role"]) for r in t["resources"]} == {"cpus": (1.0, "*"),
                                                                                      "mem": (256.0, "*")}
    status = {"task_id": {"value": "7.1"}, "state": "TASK_RUNNING", "agent_id": {"value": "a1"}, "uuid": "u1"}
    fw.statusUpdate(d, status)
    assert fw.running() == {"7": 0.0}
    assert d.of("acknowledgeStatusUpdate")[-1][1][0] is status
    fw.statusUpdate(d, {"task_id": {"value": "7.1"}, "state": "TASK_FINISHED", "agent_id": {"value": "a1"},
                        "uuid": "u2"})
    assert [(e.job_id, e.outcome, e.exit_code) for e in ended] == [("7", "finished", 0)]
    assert d.of("suppressOffers")


def test_ignored_agent_gets_nothing_and_lost_agent_requeues():
    fw, d, ended = make()
    fw.resourceOffers(d, [offer("o0", "a1", 2, 2048, preemptible=True, port=5052)])  # learn the address
    fw.ignore("127.0.0.1:5052")
    fw.issue("1", TaskCommand("true"), Resources(1, 256), PREEMPTIBLE)
    fw.resourceOffers(d, [offer("o1", "a1", 2, 2048, preemptible=True, port=5052)])
    assert not d.of("launchTasks")
    fw.unignore("127.0.0.1:5052")
    fw.resourceOffers(d, [offer("o2", "a1", 2, 2048, preemptible=True, port=5052),
                          offer("o3", "a2", 2, 2048, preemptible=True, port=5053)])
    assert len(d.of("launchTasks")) == 1
    agent = d.of("launchTasks")[0][1][1][0]["agent_id"]["value"]
    fw.slaveLost(d, {"value": agent})
    assert not ended and fw.book.jobs["1"].attempt == 2 and fw.book.jobs["1"].preemptions == 1
    fw.book.validate()


def test_kill_waits_for_killed_and_failed_exit_code():
    fw, d, ended = make()
    fw.issue("2", TaskCommand("sleep 100"), Resources(1, 256), RELIABLE)
    fw.issue("3", TaskCommand("exit 3"), Resources(1, 256), RELIABLE)
    fw.resourceOffers(d, [offer("o1", "a1", 4, 8192)])
    assert not fw.kill("2", wait_s=0.05)  # no TASK_KILLED yet
    assert d.of("killTask")[0][1][0] == {"value": "2.1"}
    fw.statusUpdate(d, {"task_id": {"value": "2.1"}, "state": "TASK_KILLED", "agent_id": {"value": "a1"}})
    assert fw.kill("2", wait_s=0.05)
    fw.statusUpdate(d, {"task_id": {"value": "3.1"}, "state": "TASK_FAILED", "agent_id": {"value": "a1"},
                        "message": "Command exited with status 3"})
    assert [(e.job_id, e.outcome, e.exit_code) for e in ended] == [("2", "killed", 255), ("3", "failed", 3)]
    fw.book.validate()


def test_the_command_executor_when_asked_for():
    ended = []
    fw = Framework("http://x", driver_factory=FakeDriver, on_ended=ended.append, clock=lambda: 100.0,
                   executor="command")
    fw.registered(fw.driver, {"value": "fw-1"}, {})
    fw.issue("7", TaskCommand("echo hi", {"A": "1"}), Resources(1, 256), RELIABLE)
    fw.resourceOffers(fw.driver, [offer("o1", "a1", 4, 8192)])
    (launch,) = fw.driver.of("launchTasks")
    t = launch[1][1][0]
    assert "executor" not in t and t["command"]["value"] == "echo hi"


def test_a_task_asking_for_the_whole_agent_gives_the_executor_its_share():
    fw, d, ended = make()
    fw.issue("7", TaskCommand("true"), Resources(4, 8192), RELIABLE)
    fw.resourceOffers(d, [offer("o1", "a1", 4, 8192)])  # no executor there yet: the task makes room for it
    (launch,) = d.of("launchTasks")
    assert {r["name"]: r["scalar"]["value"] for r in launch[1][1][0]["resources"]} == {"cpus": 3.99, "mem": 8160.0}
    fw.statusUpdate(d, {"task_id": {"value": "7.1"}, "state": "TASK_FINISHED", "agent_id": {"value": "a1"},
                        "uuid": "u2"})
    fw.issue("8", TaskCommand("true"), Resources(4, 8192), RELIABLE)
    with_executor = dict(offer("o2", "a1", 3.99, 8160), executor_ids=[{"value": "plastic"}])
    fw.resourceOffers(d, [with_executor])  # the executor holds its share: the offer is whole to plastic
    launch = d.of("launchTasks")[-1]
    assert launch[1][0] == {"value": "o2"}
    assert {r["name"]: r["scalar"]["value"] for r in launch[1][1][0]["resources"]} == {"cpus": 3.99, "mem": 8160.0}


def test_stopping_shuts_down_the_executors_a_failover_framework_leaves_behind():
    fw, d, ended = make()
    fw.issue("7", TaskCommand("true"), Resources(1, 256), RELIABLE)
    fw.resourceOffers(d, [offer("o1", "a1", 4, 8192)])
    fw.statusUpdate(d, {"task_id": {"value": "7.1"}, "state": "TASK_FINISHED", "agent_id": {"value": "a1"},
                        "uuid": "u1", "executor_id": {"value": "plastic"}, "source": "SOURCE_EXECUTOR"})
    fw.stop(failover=True)
    assert [c[1] for c in d.of("shutdownExecutor")] == [({"value": "plastic"}, {"value": "a1"})]


def test_agents_start_the_executor_with_the_leaders_python_or_their_own_plastic():
    import sys

    from plastic.framework.task_info import default_executor_command

    command = default_executor_command({})
    assert command.startswith(f"if [ -x {sys.executable} ]; then exec {sys.executable} -m plastic.executor; ")
    assert command.endswith('else PATH="$PATH:/opt/plastic/bin" exec plastic executor; fi')
    assert default_executor_command({"PLASTIC_EXECUTOR_COMMAND": "exec my-executor"}) == "exec my-executor"
