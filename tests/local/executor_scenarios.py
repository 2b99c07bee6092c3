"""plastic's executor through the raw scheduler API, needing only ``cluster.master_url``, the ``scheduler``
fixture and ``executor_command`` (how the cluster's agents start the executor): collected by
tests/local/test_executor_flow.py against plastic's local cluster and by tests/compose against Apache
Mesos 1.11 agents (where they disagree, the local cluster is wrong)."""

from __future__ import annotations

from plastic.executor.protocol import executor_info, task_data, usage_of
from plastic.framework.task_info import EXECUTOR_ID, LaunchSpec, TaskInfoBuilder
from plastic.mesos.offers import offer_of
from tests.local.rawmesos import attrs, operator, scalar, task_info
from tests.waiting import eventually


def executor_task(task_id: str, agent_id: str, command: str, executor_command: str, *, cpus: float = 0.1,
                  mem: float = 64, executor_id: str = "plastic") -> dict:
    info = task_info(task_id, agent_id, None, cpus, mem)
    info["executor"] = executor_info(executor_id, executor_command)
    info["data"] = task_data({"value": command, "shell": True})
    return info


def agent_total_cpus(master_url: str, agent_id: str) -> float:
    """The agent's whole cpus (the master's GET_AGENTS), whatever its offers hold now."""
    agents = operator(master_url, "GET_AGENTS").json()["get_agents"]["agents"]
    return scalar(next(a for a in agents if a["agent_info"]["id"]["value"] == agent_id)["total_resources"], "cpus")


def launch(s, offer: dict, infos: list[dict]) -> None:
    resp = s.accept([offer["id"]["value"]], infos, refuse_seconds=0.0)
    assert resp.status_code == 202, resp.text


def core_offer(s) -> dict:
    return s.take_offer(lambda o: attrs(o)["cluster"] == "core" and scalar(o["resources"], "cpus") >= 1)


def test_tasks_share_one_executor_on_an_agent_which_offers_then_name(cluster, scheduler, executor_command):
    s = scheduler(cluster.master_url, "executor-share")
    offer = core_offer(s)
    agent = offer["agent_id"]["value"]
    launch(s, offer, [executor_task(f"share-{i}", agent, f"echo {i}", executor_command) for i in range(3)])
    for i in range(3):
        st = s.wait_update(f"share-{i}", "TASK_FINISHED", timeout=30)
        assert st["source"] == "SOURCE_EXECUTOR" and st["executor_id"]["value"] == "plastic"
    states = [u["state"] for u in s.updates("share-0")]
    assert states == ["TASK_RUNNING", "TASK_FINISHED"], states
    later = s.take_offer(lambda o: o["agent_id"]["value"] == agent and scalar(o["resources"], "cpus") >= 1)
    assert [e["value"] for e in later.get("executor_ids", [])] == ["plastic"]
    launch(s, later, [executor_task("share-later", agent, "true", executor_command)])
    s.wait_update("share-later", "TASK_FINISHED", timeout=30)


def test_a_task_reports_what_it_used(cluster, scheduler, executor_command):
    s = scheduler(cluster.master_url, "executor-usage")
    offer = core_offer(s)
    busy = ("python3 -c \"import time; b = bytearray(160 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
            "t = time.process_time()\nwhile time.process_time() - t < 0.6: pass\"")
    launch(s, offer, [executor_task("usage-1", offer["agent_id"]["value"], busy, executor_command, mem=256)])
    st = s.wait_update("usage-1", "TASK_FINISHED", timeout=60)
    usage = usage_of(st)
    assert usage is not None, st
    assert 0.6 <= usage.cpu_s < 5.0, usage  # the loop's 0.6 s, and the interpreter's start
    assert 160 <= usage.max_rss_mib < 400, usage  # the 160 MiB it touched
    assert usage.wall_s >= 0.6, usage


def test_a_failed_task_says_its_exit_and_its_last_line_of_standard_error(cluster, scheduler, executor_command):
    s = scheduler(cluster.master_url, "executor-failed")
    offer = core_offer(s)
    launch(s, offer, [executor_task("fails-1", offer["agent_id"]["value"], "echo one >&2; echo boom >&2; exit 3",
                                    executor_command)])
    st = s.wait_update("fails-1", "TASK_FAILED", timeout=30)
    assert st["message"] == "Command exited with status 3: boom"


def test_a_killed_task_ends_killed(cluster, scheduler, executor_command):
    s = scheduler(cluster.master_url, "executor-kill")
    offer = core_offer(s)
    info = executor_task("kill-1", offer["agent_id"]["value"], "sleep 60 & sleep 61; wait", executor_command)
    info["kill_policy"] = {"grace_period": {"nanoseconds": 500_000_000}}
    launch(s, offer, [info])
    running = s.wait_update("kill-1", "TASK_RUNNING", timeout=30)
    assert s.call("KILL", kill={"task_id": {"value": "kill-1"}, "agent_id": running["agent_id"]}).status_code == 202
    killed = s.wait_update("kill-1", "TASK_KILLED", timeout=30)
    assert killed["message"] == "Command terminated with signal 15"


def test_an_idle_executor_leaves_and_its_share_comes_back(cluster, scheduler, executor_command):
    s = scheduler(cluster.master_url, "executor-idle")
    offer = core_offer(s)
    agent = offer["agent_id"]["value"]
    total = scalar(offer["resources"], "cpus")
    launch(s, offer, [executor_task("idle-1", agent, "true", f"{executor_command} --idle-seconds 1")])
    s.wait_update("idle-1", "TASK_FINISHED", timeout=30)

    def whole_agent_offered() -> bool:
        """Decline every outstanding offer of the agent: the next one holds all it has free."""
        s.decline_held(agent)
        o = s.take_offer(lambda o: o["agent_id"]["value"] == agent, timeout=30)
        s.call("DECLINE", decline={"offer_ids": [o["id"]], "filters": {"refuse_seconds": 0.0}})
        return not o.get("executor_ids") and scalar(o["resources"], "cpus") >= total

    eventually(whole_agent_offered, timeout=60, interval=0.2, what="the executor to leave and its share to come back")


def failure_of(s, executor_id: str) -> dict:
    ev = s.next("FAILURE", pred=lambda e: e["failure"].get("executor_id", {}).get("value") == executor_id,
                timeout=30)
    return ev["failure"]



def test_another_frameworks_idle_executor_leaves_room_for_a_whole_agent_task(cluster, scheduler, executor_command):
    """A concurrent run's idle executor holds 0.01 cpu of an agent: plastic's offer reading still sees the
    whole agent and its launch declares what is left, which the master takes (no waiting a minute for
    the neighbour to leave)."""
    a = scheduler(cluster.master_url, "executor-neighbour")
    offer = core_offer(a)
    agent = offer["agent_id"]["value"]
    total = agent_total_cpus(cluster.master_url, agent)
    launch(a, offer, [executor_task("neighbour-1", agent, "true", f"{executor_command} --idle-seconds 600")])
    a.wait_update("neighbour-1", "TASK_FINISHED", timeout=30)
    assert a.call("SUPPRESS").status_code == 202  # framework a keeps its executor there and wants nothing
    a.decline_held(refuse_seconds=600.0)
    b = scheduler(cluster.master_url, "executor-whole-agent")
    # The executors of earlier tests' frameworks may still be leaving.  An offer made while one was there
    # holds less than the agent; kept, it would stay outstanding and the share coming back would be
    # offered apart from it, never as one offer: give back every offer of the agent that is not whole and
    # wait for the next.  And an offer made to a before its SUPPRESS arrived after its decline above: a
    # held it, and b never saw those resources (both waited out the timeout on a loaded machine): a gives
    # back what it is offered, every time.
    whole: list[dict] = []

    def whole_agent_offered() -> bool:
        a.decline_held(refuse_seconds=600.0)
        b.decline_held(agent)
        o = b.take_offer(lambda o: o["agent_id"]["value"] == agent, timeout=30)
        if not o.get("executor_ids") and scalar(o["resources"], "cpus") >= total - 0.02:
            whole.append(o)
            return True
        b.call("DECLINE", decline={"offer_ids": [o["id"]], "filters": {"refuse_seconds": 0.0}})
        return False

    eventually(whole_agent_offered, timeout=120, interval=0.2, what="an offer of the whole agent but a's share")
    seen = whole[0]
    assert scalar(seen["resources"], "cpus") < total  # framework a's executor holds its share
    placed = offer_of(seen, EXECUTOR_ID)
    assert placed.available.vcpus == int(total), placed  # the whole agent, for a placer of whole vcpus
    spec = LaunchSpec(name="whole", task_id="whole-1", agent_id=agent, cpus=placed.available.vcpus, ram_mib=256,
                    command="true", environment={}, labels=())
    offered = {r["name"]: r for r in seen["resources"]}
    infos = TaskInfoBuilder("plastic", executor_command).infos([spec], seen, offered)
    launch(b, seen, infos)
    assert b.wait_update("whole-1", "TASK_FINISHED", timeout=60)["state"] == "TASK_FINISHED"
