"""A master failover on the wire: LocalCluster.restart_master() and the re-registration rules.

A new master knows nothing of the previous one (Mesos with an in-memory registry):
* SUBSCRIBE with a framework id it does not know is a re-registration: SUBSCRIBED with that same id;
* any other call with such an id stays 400 "Framework cannot be found" (transcript 04);
* an id this master removed (TEARDOWN, failover timeout) is refused on SUBSCRIBE with ERROR
  "Framework has been removed" for the rest of its lifetime;
* tasks of the old master are unknown: explicit reconciliation with their old agent id answers
  TASK_UNKNOWN (TASK_LOST without PARTITION_AWARE), implicit reconciliation leaves them out.
"""

from __future__ import annotations

import json

from plastic.local.supervisor import marked_pids
from tests.local.rawmesos import attrs, operator, raw_request

REMOVED = {"type": "ERROR", "error": {"message": "Framework has been removed"}}
NON_PA = ("TASK_KILLING_STATE",)


def _revive(cluster, framework_id: str, stream_id: str | None) -> tuple[int, bytes]:
    headers = [("Content-Type", "application/json"), ("Accept", "application/json")]
    if stream_id:
        headers.append(("Mesos-Stream-Id", stream_id))
    body = json.dumps({"framework_id": {"value": framework_id}, "type": "REVIVE"}).encode()
    status, _, data = raw_request(cluster.master_url, "POST", "/api/v1/scheduler", body, headers)
    return status, data


def _reconcile(s, task_id: str, agent_id: str | None) -> None:
    entry = {"task_id": {"value": task_id}} | ({"agent_id": {"value": agent_id}} if agent_id else {})
    assert s.call("RECONCILE", reconcile={"tasks": [entry]}).status_code == 202


def _frameworks(cluster) -> set[str]:
    doc = operator(cluster.master_url, "GET_FRAMEWORKS").json()["get_frameworks"]
    return {f["framework_info"]["id"]["value"] for f in doc.get("frameworks", [])}


def test_restart_master_same_port_new_master_fresh_agents(fresh_cluster):
    before = fresh_cluster.status()
    old_agents = {a.id for a in fresh_cluster.agents}
    url, pid = fresh_cluster.master_url, fresh_cluster.pid
    fresh_cluster.restart_master(downtime_s=0.1)
    after = fresh_cluster.status()
    assert fresh_cluster.master_url == url and fresh_cluster.pid != pid and fresh_cluster.master_restarts == 1
    assert after["master_id"] != before["master_id"]
    new_agents = {a.id for a in fresh_cluster.agents}
    assert len(new_agents) == len(old_agents) and not new_agents & old_agents
    assert {a["id"] for a in after["agents"]} == new_agents
    fresh_cluster.restart_master(downtime_s=0.0, graceful=True)  # SIGTERM: the old master ends its streams
    assert fresh_cluster.master_restarts == 2 and fresh_cluster.status()["master_id"] != after["master_id"]
    assert (fresh_cluster.workdir / "cluster.log").exists()  # the throw-away workdir outlives each master
    assert not (fresh_cluster.workdir / ".keep-workdir").exists()


def test_reregistration_rules_across_a_master_restart(fresh_cluster, scheduler):
    url = fresh_cluster.master_url
    a = scheduler(url, "restart-a", failover_timeout=60.0)
    a.launch("old-task", "sleep 30", pred=lambda o: attrs(o)["cluster"] == "core")
    old_agent = a.wait_update("old-task", "TASK_RUNNING")["agent_id"]["value"]
    legacy = scheduler(url, "restart-non-pa", capabilities=NON_PA, failover_timeout=60.0)
    gone = scheduler(url, "restart-gone")
    assert gone.call("TEARDOWN").status_code == 202
    gone.wait(lambda: gone.ended, what="the end of the torn-down stream")
    # Same master: a torn-down id is refused on SUBSCRIBE (and on every other call).
    refused = scheduler(url, "restart-gone", framework_id=gone.framework_id)
    assert refused.events == [REMOVED]
    refused.wait(lambda: refused.ended, what="the end of the refused stream")
    assert _revive(fresh_cluster, gone.framework_id, gone.stream_id) == (400, b"Framework cannot be found")

    old_cluster = fresh_cluster.cluster_id
    fresh_cluster.restart_master(downtime_s=0.2)  # SIGKILL: a crashed master
    assert not marked_pids(old_cluster)  # the old task died with its agent
    a.wait(lambda: a.closed, what="the old stream to break")
    assert not a.ended  # no terminating chunk from a crashed master
    assert a.framework_id not in _frameworks(fresh_cluster)

    # A call other than SUBSCRIBE with an id the new master does not know: 400, as in transcript 04.
    assert _revive(fresh_cluster, a.framework_id, a.stream_id) == (400, b"Framework cannot be found")

    # SUBSCRIBE with that id: a re-registration, answered with the same id.
    a2 = scheduler(url, "restart-a", failover_timeout=60.0, framework_id=a.framework_id)
    assert a2.events[0]["subscribed"]["framework_id"] == {"value": a.framework_id}
    assert a.framework_id in _frameworks(fresh_cluster)
    new_agents = {ag.id for ag in fresh_cluster.agents}
    assert {o["agent_id"]["value"] for o in a2.offers()} <= new_agents  # fresh offers, from the new agents
    assert _revive(fresh_cluster, a.framework_id, a2.stream_id) == (202, b"")

    # The old task is unknown to the new master: implicit reconciliation leaves it out, explicit
    # reconciliation with its old agent id answers TASK_UNKNOWN (PARTITION_AWARE).
    assert a2.call("RECONCILE", reconcile={"tasks": []}).status_code == 202
    _reconcile(a2, "old-task", old_agent)
    unknown = a2.wait_update("old-task", "TASK_UNKNOWN")
    assert (unknown["reason"], unknown["source"]) == ("REASON_RECONCILIATION", "SOURCE_MASTER")
    assert "uuid" not in unknown and unknown["agent_id"]["value"] == old_agent
    assert [u["state"] for u in a2.updates("old-task")] == ["TASK_UNKNOWN"]

    # Without PARTITION_AWARE the same question is answered TASK_LOST.
    legacy2 = scheduler(url, "restart-non-pa", capabilities=NON_PA, failover_timeout=60.0,
                        framework_id=legacy.framework_id)
    assert legacy2.framework_id == legacy.framework_id
    _reconcile(legacy2, "old-task", old_agent)
    assert legacy2.wait_update("old-task", "TASK_LOST")["reason"] == "REASON_RECONCILIATION"

    # Removal is remembered per master lifetime: the id torn down at the old master is unknown here
    # (adopted), while one torn down at this master is refused from now on.
    back = scheduler(url, "restart-gone", framework_id=gone.framework_id)
    assert back.events[0]["type"] == "SUBSCRIBED" and back.framework_id == gone.framework_id
    assert a2.call("TEARDOWN").status_code == 202
    a2.wait(lambda: a2.ended, what="the end of the torn-down stream")
    again = scheduler(url, "restart-a", framework_id=a.framework_id)
    assert again.events == [REMOVED]
    assert _revive(fresh_cluster, a.framework_id, a2.stream_id) == (400, b"Framework cannot be found")
