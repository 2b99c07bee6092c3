"""Agents going away: DRAIN_AGENT, an agent killed without notice, a spot interruption after its IMDS notice."""

from __future__ import annotations

import time

import httpx

from plastic.local.handle import LocalCluster
from tests.local.clusters import SPEC
from tests.local.rawmesos import attrs, operator, task_info
from tests.waiting import eventually


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _agents(cluster) -> dict[str, dict]:
    doc = operator(cluster.master_url, "GET_AGENTS").json()["get_agents"]["agents"]
    return {a["agent_info"]["id"]["value"]: a for a in doc}


def _launch_with_outstanding_offer(s, task_id: str, cluster_name: str = "burst-small") -> tuple[str, dict, str]:
    """Launch a sleeping task and leave the rest of its agent offered (refuse_seconds=0)."""
    offer = s.offers(pred=lambda o: attrs(o)["cluster"] == cluster_name)[0]
    agent = offer["agent_id"]["value"]
    s.accept([offer["id"]["value"]], [task_info(task_id, agent, {"value": "sleep 600"})], refuse_seconds=0)
    running = s.wait_update(task_id, "TASK_RUNNING")
    rest = s.offers(pred=lambda o: o["agent_id"]["value"] == agent)[0]
    return agent, running, rest["id"]["value"]


def test_drain_and_reactivate(fresh_cluster, scheduler):  # transcripts 38-42
    s = scheduler(fresh_cluster.master_url)
    agent, _running, offer_id = _launch_with_outstanding_offer(s, "drain-victim")
    mark = len(s.events)
    resp = operator(fresh_cluster.master_url, "DRAIN_AGENT",
                    drain_agent={"agent_id": {"value": agent}, "max_grace_period": {"nanoseconds": 10 ** 9}})
    assert (resp.status_code, resp.content) == (200, b"")
    killed = s.wait_update("drain-victim", "TASK_KILLED")
    after = [e for e in s.events[mark:]]
    assert after[0] == {"type": "RESCIND", "rescind": {"offer_id": {"value": offer_id}}}
    killing = s.wait_update("drain-victim", "TASK_KILLING")
    assert killing["reason"] == killed["reason"] == "REASON_AGENT_DRAINING"
    assert killed["message"] == "Command terminated with signal Terminated"
    assert killed["source"] == "SOURCE_EXECUTOR"
    def drained() -> dict | None:
        a = _agents(fresh_cluster)[agent]
        return a if a.get("drain_info", {}).get("state") == "DRAINED" else None

    a = eventually(drained, timeout=10, what="DRAINED")
    assert a["active"] is False and a["deactivated"] is True
    assert a["drain_info"]["config"]["mark_gone"] is False
    # No offers from a drained agent, even after REVIVE; REACTIVATE_AGENT brings them back.
    s.call("REVIVE")
    mark = len(s.events)
    fw_offers = operator(fresh_cluster.master_url, "GET_FRAMEWORKS").json()["get_frameworks"]["frameworks"][0]
    assert all(o["agent_id"]["value"] != agent for o in fw_offers.get("offers", []))
    assert operator(fresh_cluster.master_url, "REACTIVATE_AGENT",
                    reactivate_agent={"agent_id": {"value": agent}}).status_code == 200
    s.offers(pred=lambda o: o["agent_id"]["value"] == agent)
    assert not any(e["type"] == "OFFERS" and any(o["agent_id"]["value"] == agent for o in e["offers"]["offers"])
                   for e in s.events[mark:-1])
    assert _agents(fresh_cluster)[agent]["active"] is True


def _agent_loss(cluster, s, kill) -> None:
    agent, running, offer_id = _launch_with_outstanding_offer(s, "victim")
    pid = running["container_status"]["executor_pid"]
    mark = len(s.events)
    t0 = time.monotonic()
    kill(agent)
    rescind = s.next("RESCIND", timeout=10)
    assert rescind["rescind"]["offer_id"]["value"] == offer_id
    eventually(lambda: not _pid_alive(pid), timeout=5, what="the task process to die with its agent")
    caps = {c["type"] for c in s.body["subscribe"]["framework_info"]["capabilities"]}
    expected = "TASK_UNREACHABLE" if "PARTITION_AWARE" in caps else "TASK_LOST"
    st = s.wait_update("victim", expected, timeout=15)
    assert (st["reason"], st["source"], st["message"]) == ("REASON_AGENT_REMOVED", "SOURCE_MASTER",
                                                           "health check timed out")
    assert "unreachable_time" in st and "uuid" not in st
    failure = s.next("FAILURE", timeout=5)
    assert failure == {"type": "FAILURE", "failure": {"agent_id": {"value": agent}}}
    kinds = [e["type"] for e in s.events[mark:]]
    assert kinds.index("RESCIND") < kinds.index("FAILURE")
    return agent, t0


def test_agent_killed_without_notice(fresh_cluster, scheduler):  # transcripts 43-45, 80, 81
    s = scheduler(fresh_cluster.master_url)
    agent, t0 = _agent_loss(fresh_cluster, s, fresh_cluster.kill_agent)
    assert time.monotonic() - t0 >= 0.9  # the ping timeout (1 s here) passes before the master tells
    assert agent not in _agents(fresh_cluster)
    tasks = operator(fresh_cluster.master_url, "GET_TASKS").json()["get_tasks"]
    assert [t["task_id"]["value"] for t in tasks["unreachable_tasks"]] == ["victim"]
    assert tasks["unreachable_tasks"][0]["state"] == "TASK_UNREACHABLE"
    mark = len(s.events)
    s.call("RECONCILE", reconcile={"tasks": [{"task_id": {"value": "victim"}, "agent_id": {"value": agent}},
                                             {"task_id": {"value": "victim"}}]})
    s.wait(lambda: sum(e["type"] == "UPDATE" for e in s.events[mark:]) >= 2, what="answers")
    got = [(e["update"]["status"]["state"], e["update"]["status"]["message"]) for e in s.events[mark:]
           if e["type"] == "UPDATE"]
    assert got == [("TASK_UNREACHABLE", "Reconciliation: Task is unreachable"),
                   ("TASK_UNKNOWN", "Reconciliation: Task is unknown")]
    # Implicit reconciliation leaves unreachable tasks out.
    mark = len(s.events)
    s.launch("marker", "sleep 30", pred=lambda o: attrs(o)["cluster"] == "core")
    s.wait_update("marker", "TASK_RUNNING")
    mark = len(s.events)
    s.call("RECONCILE", reconcile={"tasks": []})
    s.wait_update("marker", "TASK_RUNNING", reason="REASON_RECONCILIATION")
    assert not any(e["type"] == "UPDATE" and e["update"]["status"]["task_id"]["value"] == "victim"
                   for e in s.events[mark:])


def test_agent_lost_without_partition_awareness(fresh_cluster, scheduler):  # transcripts 83-93
    s = scheduler(fresh_cluster.master_url, capabilities=("TASK_KILLING_STATE",))
    _agent_loss(fresh_cluster, s, fresh_cluster.kill_agent)


def test_spot_interruption_notice_then_death(fresh_cluster, scheduler):
    s = scheduler(fresh_cluster.master_url)
    agent_id = None

    def interrupt(agent: str) -> None:
        nonlocal agent_id
        agent_id = agent
        info = fresh_cluster.agent(agent)
        token = httpx.put(info.imds_url + "/latest/api/token",
                          headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"}).text
        h = {"X-aws-ec2-metadata-token": token}
        assert httpx.get(info.imds_url + "/latest/meta-data/spot/instance-action", headers=h).status_code == 404
        result = fresh_cluster.interrupt(agent, notice_seconds=1.0)
        action = httpx.get(info.imds_url + "/latest/meta-data/spot/instance-action", headers=h)
        assert action.status_code == 200 and action.json()["action"] == "terminate"
        assert action.json()["time"].endswith("Z") and abs(result["notice_time"] - time.time() - 1.0) < 1.0
        assert httpx.get(info.imds_url + "/latest/meta-data/events/recommendations/rebalance",
                         headers=h).status_code == 200
        # The master knows nothing yet: the agent is still active and its offer still stands.
        assert _agents(fresh_cluster)[agent]["active"] is True

    _agent_loss(fresh_cluster, s, interrupt)
    status = fresh_cluster.status()
    dead = next(a for a in status["agents"] if a["id"] == agent_id)
    assert dead["status"] == "removed" and dead["interruption"]["death_cause"] == "spot interruption"


def test_random_interruptions_hit_only_preemptible_agents():
    with LocalCluster(SPEC, interrupt_rate=120.0, interrupt_notice_s=0.2, seed=7,
                      agent_ping_timeout_s=0.2) as c:
        def all_burst_gone():
            agents = c.status()["agents"]
            gone = {a["cluster"] for a in agents if a["status"] in ("dead", "removed")}
            return gone == {"burst-small"} and sum(a["status"] in ("dead", "removed") for a in agents) == 2

        eventually(all_burst_gone, timeout=20, what="both preemptible agents to be interrupted")
        core = c.agents_in("core")[0]
        assert next(a for a in c.status()["agents"] if a["id"] == core.id)["status"] == "active"


def test_no_task_process_outlives_the_cluster():
    c = LocalCluster(SPEC).start()
    from tests.local.rawmesos import Scheduler

    s = Scheduler(c.master_url)
    try:
        s.subscribe()
        s.launch("orphan-check", "sleep 300 & sleep 301; wait", pred=lambda o: attrs(o)["cluster"] == "core")
        pid = s.wait_update("orphan-check", "TASK_RUNNING")["container_status"]["executor_pid"]
        server = c.pid
    finally:
        s.shutdown()
        c.stop()
    assert not _pid_alive(server)
    eventually(lambda: not _pid_alive(pid), timeout=5, what="the task to die")
    from plastic.local.supervisor import marked_pids

    assert marked_pids(c.cluster_id) == []


def test_agent_death_also_kills_processes_that_left_the_task_group(fresh_cluster, scheduler):
    s = scheduler(fresh_cluster.master_url)
    s.launch("escaper", "setsid sleep 300 & echo $! > escaped.pid; sleep 300",
             pred=lambda o: attrs(o)["cluster"] == "burst-small")
    running = s.wait_update("escaper", "TASK_RUNNING")
    box = fresh_cluster.sandbox("escaper")
    escaped = int(eventually(lambda: (box / "escaped.pid").read_text().strip() if (box / "escaped.pid").exists()
                             and (box / "escaped.pid").read_text().strip() else None, timeout=10,
                             what="the escaped pid"))
    assert _pid_alive(escaped)
    fresh_cluster.kill_agent(running["agent_id"]["value"])
    eventually(lambda: not _pid_alive(escaped), timeout=5, what="the escaped process to die")


def test_lost_agents_can_be_replaced(scheduler):
    with LocalCluster(SPEC, replace_after_s=0.1, agent_ping_timeout_s=5.0) as c:
        s = scheduler(c.master_url)
        victim = c.agents_in("burst-small")[0]
        s.take_offer(lambda o: o["agent_id"]["value"] == victim.id)
        c.kill_agent(victim.id)
        s.next("RESCIND")
        fresh = s.take_offer(lambda o: o["agent_id"]["value"] not in {a.id for a in c.agents})
        assert attrs(fresh)["cluster"] == "burst-small"
        agents = c.refresh()
        assert victim.id not in {a.id for a in agents} and len(agents) == 3
        new = next(a for a in agents if a.id == fresh["agent_id"]["value"])
        assert new.imds_url and new.imds_url != victim.imds_url
