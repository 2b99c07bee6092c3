"""The local cluster grows and shrinks while it runs: agents created (pending, then registered after
their boot delay, exactly as new Mesos agents), terminated, listed as a provider's nodes; and the
local provider (plastic.providers.local) over those calls.  A real local cluster, real processes."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from plastic.core.elastic.model import NodeState
from plastic.core.model import Market
from plastic.local.handle import LocalCluster, LocalClusterError
from plastic.providers import NodeRequest
from plastic.providers.local import LocalProvider
from tests.local.clusters import SPEC
from tests.local.rawmesos import attrs, operator, task_info
from tests.waiting import eventually


def listed(cluster: LocalCluster) -> dict[str, dict]:
    return {a["agent_id"]: a for a in cluster.nodes()}


def registered(cluster: LocalCluster) -> dict[str, dict]:
    doc = operator(cluster.master_url, "GET_AGENTS").json()["get_agents"]["agents"]
    return {a["agent_info"]["id"]["value"]: a for a in doc}


def test_an_added_agent_boots_registers_is_offered_and_runs_a_task(scheduler):
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0, boot_s=0.0) as cluster:
        assert {n["state"] for n in cluster.nodes()} == {"ready"} and len(cluster.nodes()) == 3
        s = scheduler(cluster.master_url)
        s.offers()  # the first offers, of the agents it started with
        (new,) = cluster.add_agents(cluster="burst-late", cpus=2, ram_mib=4096, preemptible=True,
                                    instance_type="c5.large", boot_s=1.0, tags={"plastic:run": "r1"})
        agent = new["agent_id"]
        assert new["state"] == "pending" and new["instance_id"].startswith("i-")
        assert listed(cluster)[agent]["state"] == "pending" and agent not in registered(cluster)
        offer = s.offers(pred=lambda o: o["agent_id"]["value"] == agent)[0]
        a = attrs(offer)
        assert (a["preemptible"], a["cluster"], a["instance_type"], a["market"], a["instance_id"]) == (
            "true", "burst-late", "c5.large", "spot", new["instance_id"])
        node = listed(cluster)[agent]
        assert node["state"] == "ready" and node["since"] - node["created_at"] >= 0.9
        assert node["tags"] == {"plastic:run": "r1"} and node["imds_url"]
        assert agent in registered(cluster)
        s.accept([offer["id"]["value"]], [task_info("late-1", agent, {"value": "true"})])
        s.wait_update("late-1", "TASK_FINISHED")
        # its IMDS works like every spot agent's: no notice yet, then the interruption scheduled on it
        meta = node["imds_url"] + "/latest/meta-data/spot/instance-action"
        token = httpx.put(node["imds_url"] + "/latest/api/token",
                          headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"}).text
        assert httpx.get(meta, headers={"X-aws-ec2-metadata-token": token}).status_code == 404
        cluster.interrupt(agent, notice_seconds=30.0)
        assert httpx.get(meta, headers={"X-aws-ec2-metadata-token": token}).json()["action"] == "terminate"
        assert listed(cluster)[agent]["state"] == "draining"


def test_terminate_rescinds_offers_and_loses_running_tasks(scheduler):
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0) as cluster:
        s = scheduler(cluster.master_url)
        (new,) = cluster.add_agents(cluster="core-late", cpus=2, ram_mib=2048)
        agent = new["agent_id"]
        offer = s.offers(pred=lambda o: o["agent_id"]["value"] == agent)[0]
        assert attrs(offer)["market"] == "on-demand" and attrs(offer)["instance_id"] == new["instance_id"]
        s.accept([offer["id"]["value"]], [task_info("doomed", agent, {"value": "sleep 600"})], refuse_seconds=0)
        s.wait_update("doomed", "TASK_RUNNING")
        rest = s.offers(pred=lambda o: o["agent_id"]["value"] == agent)[0]
        mark = len(s.events)
        cluster.terminate_agent(agent)
        assert {"type": "RESCIND", "rescind": {"offer_id": rest["id"]}} in s.events[mark:] or eventually(
            lambda: {"type": "RESCIND", "rescind": {"offer_id": rest["id"]}} in s.events[mark:], timeout=10,
            what="rescind")
        lost = s.wait_update("doomed", "TASK_UNREACHABLE", timeout=10)
        assert lost["reason"] == "REASON_AGENT_REMOVED"
        assert listed(cluster)[agent]["state"] == "gone"
        cluster.terminate_agent(agent)  # again: harmless
        with pytest.raises(LocalClusterError, match="404"):
            cluster.terminate_agent("no-such-agent")


def test_a_terminated_booting_agent_never_registers():
    with LocalCluster(SPEC, agent_ping_timeout_s=1.0) as cluster:
        (new,) = cluster.add_agents(cluster="slow", cpus=1, ram_mib=1024, boot_s=1.0)
        cluster.terminate_agent(new["agent_id"])
        # an agent asked for after it with the same boot delay: once that one has registered, the terminated
        # one's boot was over before (the cluster's boot timers fire in order)
        (witness,) = cluster.add_agents(cluster="slow-witness", cpus=1, ram_mib=1024, boot_s=1.0)
        eventually(lambda: witness["agent_id"] in registered(cluster), 10, "an agent booting after it to register")
        assert listed(cluster)[new["agent_id"]]["state"] == "gone" and new["agent_id"] not in registered(cluster)


def test_creation_requests_are_checked_and_spot_shortages_refused():
    with LocalCluster(SPEC, refuse_spot="c5.large") as cluster:
        for bad, field in (({"cluster": "x", "cpus": 0, "ram_mib": 1}, "cpus"),
                           ({"cluster": "x", "cpus": 1, "ram_mib": -5}, "ram_mib"),
                           ({"cpus": 1, "ram_mib": 5}, "cluster"),
                           ({"cluster": "x", "cpus": 1, "ram_mib": 5, "count": 0}, "count"),
                           ({"cluster": "x", "cpus": 1, "ram_mib": 5, "colour": "red"}, "colour")):
            resp = httpx.post(cluster.master_url + "/plastic/v1/agents", json=bad)
            assert resp.status_code == 400 and field in resp.text and "\n" not in resp.text.strip()
        resp = httpx.post(cluster.master_url + "/plastic/v1/agents",
                          json={"cluster": "b", "cpus": 2, "ram_mib": 4096, "preemptible": True,
                                "instance_type": "c5.large"})
        assert resp.status_code == 409 and "InsufficientInstanceCapacity" in resp.text
        provider = LocalProvider(cluster.master_url)
        refused = provider.create(NodeRequest("b", "c5.large", Market.SPOT, 2, 2, 4096))
        assert refused.node_ids == () and refused.refused[0].instance_type == "c5.large"
        made = provider.create(NodeRequest("b", "m5.large", Market.SPOT, 2, 2, 8192, {"plastic:run": "r"}))
        assert len(made.node_ids) == 2
        nodes = {n.node_id: n for n in provider.list_nodes()}
        for node_id in made.node_ids:
            n = eventually(lambda nid=node_id: next((x for x in provider.list_nodes() if x.node_id == nid
                                                     and x.state is NodeState.READY), None), timeout=10, what="ready")
            assert (n.market, n.instance_type, n.tags) == (Market.SPOT, "m5.large", {"plastic:run": "r"})
        assert nodes[made.node_ids[0]].created_at <= time.time()
        provider.terminate([made.node_ids[0], "unknown-node"])  # an unknown node is not an error
        assert {n.node_id: n.state for n in provider.list_nodes()}[made.node_ids[0]] is NodeState.GONE


def test_the_cli_adds_and_removes_agents_and_bad_input_is_one_line_exit_2(tmp_path):
    with LocalCluster(SPEC) as cluster:
        def plastic(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "plastic", "local", *args, "--master", cluster.master_url],
                                  capture_output=True, text=True, timeout=60)

        res = plastic("add-agent", "--cluster", "extra", "--cpus", "1", "--ram-mib", "1024", "--count", "2")
        assert res.returncode == 0, res.stderr
        ids = [line.split()[0] for line in res.stdout.splitlines()]
        assert len(ids) == 2 and all(i in listed(cluster) for i in ids)
        res = plastic("remove-agent", ids[0])
        assert res.returncode == 0 and eventually(lambda: listed(cluster)[ids[0]]["state"] == "gone", timeout=10,
                                                   what="the removed agent gone")
        for args in (("remove-agent", "nope"), ("add-agent", "--cluster", "x", "--cpus", "0", "--ram-mib", "1")):
            res = plastic(*args)
            assert res.returncode == 2, res
            assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    res = subprocess.run([sys.executable, "-m", "plastic", "local", "remove-agent", "x", "--master",
                          "http://127.0.0.1:9"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "no local cluster answers" in res.stderr
