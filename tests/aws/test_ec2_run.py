"""`plastic run --provider ec2` end to end, with compute behind the moto API.

moto (server mode) is EC2: the run's ec2 provider creates instances there through EC2 Fleet.  A bridge
in the test gives each instance a real agent on a local Mesos-API cluster, advertising that instance
id (as the user data does on EC2), and removes the agent when the instance is terminated.  A spot
interruption is an EventBridge event put into moto -> the run's rule -> its SQS queue -> the run's
`plastic sqs-watch` -> a notice in the run's Redis -> the agent drained; then the instance dies, its
work comes back, the run replaces the capacity and completes with the right outputs.  At the end
nothing tagged with the run is left.  The job store is in moto's S3, as on EC2 by default.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plastic.aws import cloud
from plastic.aws.ec2_cloud import Aws
from tests.aws.helpers import REGION, Bridge
from tests.clirun import REPO, read_decisions
from tests.waiting import eventually

pytest.importorskip("toil")
pytestmark = pytest.mark.toil_e2e

DATA = REPO / "tests" / "watch" / "data" / "slow-scatter"
RUN_ID = "ec2-e2e"
ITEMS = [1, 2, 3, 4]


def test_a_workflow_runs_on_ec2_through_moto_and_survives_an_interruption(endpoint, image_id, tmp_path):
    import boto3

    from plastic.local.handle import LocalCluster

    # a Mesos master with one agent too small for any task: every task runs on an "EC2" instance
    spec = {"clusters": [{"name": "lab", "count": 1, "cpus": 0.1, "ram_mib": 64, "preemptible": False}]}
    cluster = LocalCluster(spec, agent_ping_timeout_s=5.0).start()
    bridge = Bridge(cluster, RUN_ID)
    bridge.start()
    job = tmp_path / "job.yml"
    job.write_text(f"items: {json.dumps(ITEMS)}\nseconds: 20\n")
    out, run_dir = tmp_path / "out", tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    cmd = [sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"), str(job), "--outdir", str(out),
           "--run-dir", str(run_dir), "--run-id", RUN_ID, "--quiet", "--master", cluster.master_url,
           "--provider", "ec2", "--image-id", image_id, "--idle-seconds", "10", "--boot-seconds", "5"]
    log = (tmp_path / "run.log").open("wb")
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    events = boto3.client("events")
    try:
        # a scattered task runs on a spot instance: interrupt that instance the way EC2 does
        deadline = time.monotonic() + 180
        target = None
        while target is None:
            assert proc.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no task ran on a spot instance"
            spot = {a: i for i, a in dict(bridge.agents).items() if _is_spot(i)}  # a copy: the bridge adds
            running = [d for d in _decisions(run_dir) if d["kind"] == "running" and d.get("agent_id") in spot]
            target = spot[running[0]["agent_id"]] if running else None
            time.sleep(0.5)
        detail = {"instance-id": target, "instance-action": "terminate"}
        reply = events.put_events(Entries=[{"Source": "aws.ec2", "DetailType": "EC2 Spot Instance Interruption Warning",
                                            "Detail": json.dumps(detail)}])
        assert reply["FailedEntryCount"] == 0
        agent = bridge.agents[target]
        noticed = time.monotonic() + 60
        while not any(d["kind"] == "notice" and d.get("agent_id") == agent for d in _decisions(run_dir)):
            assert time.monotonic() < noticed, (run_dir / "sqs-watch.log").read_text()[-2000:]
            time.sleep(0.5)
        # the run has reacted to the notice (its tasks there killed or left to finish) before the instance goes
        eventually(lambda: [d for d in _decisions(run_dir) if d["kind"] in ("drain_kill", "let_finish")
                            and d.get("agent_id") == agent], 60, f"the run's reaction to the notice on {agent}",
                   alive=proc, describe=lambda: (tmp_path / "run.log").read_text()[-3000:])
        boto3.client("ec2").terminate_instances(InstanceIds=[target])  # the instance dies at the end of the notice
        assert proc.wait(300) == 0, (tmp_path / "run.log").read_text()[-4000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        bridge.stopped.set()
        bridge.join(5)
        cluster.stop()
        log.close()
    assert not bridge.errors, bridge.errors
    assert (out / "joined.txt").read_text() == "".join(f"item {i}\n" for i in ITEMS)
    decisions = _decisions(run_dir)
    kinds = [d["kind"] for d in decisions]
    assert "node_requested" in kinds and "node_ready" in kinds
    assert any(d["kind"] == "node_requested" and d.get("market") == "spot" for d in decisions)
    # the noticed agent took nothing new after its notice; its tasks were killed or left to finish
    at = next(d["t"] for d in decisions if d["kind"] == "notice" and d.get("agent_id") == agent)
    assert not [d for d in decisions if d["kind"] == "placed" and d.get("agent_id") == agent and d["t"] > at]
    assert any(d["kind"] in ("drain_kill", "let_finish") and d.get("agent_id") == agent for d in decisions)
    # no secret anywhere: the run's files, the decisions, the report, its output
    from tests.aws.helpers import SECRET

    for path in [tmp_path / "run.log", *run_dir.rglob("*")]:
        if path.is_file() and path.stat().st_size < 50_000_000:
            assert SECRET.encode() not in path.read_bytes(), path
    # the run removed what it made: no instance, template, group, rule or queue is tagged with it
    assert cloud.leftovers(Aws.connect(None), RUN_ID) == {"instances": 0, "launch_templates": 0,
                                                          "security_groups": 0, "rules": 0, "queues": 0,
                                                          "buckets": 0}
    # on EC2 the job store was in S3 (no file system is shared with the instances)
    assert json.loads((run_dir / "run.json").read_text())["job_store"].startswith(f"aws:{REGION}:plastic-ec2-e2e-")
    assert not (run_dir / "jobstore").exists()


def _is_spot(instance_id: str) -> bool:
    import boto3

    (res,) = boto3.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"]
    return res["Instances"][0].get("InstanceLifecycle") == "spot"


def _decisions(run_dir: Path) -> list[dict]:
    try:
        return read_decisions(run_dir)
    except (OSError, ValueError):
        return []


@pytest.mark.parametrize(("args", "words"), [(("--region", "mars-north-1"), ("mars-north-1", "--region")),
                                             ((), ("credentials",))])
def test_a_bad_region_or_no_credentials_stops_the_run_before_anything(endpoint, tmp_path, monkeypatch, args, words):
    from tests.clirun import assert_one_line_error

    if not args:
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
            monkeypatch.delenv(name, raising=False)
    res = subprocess.run([sys.executable, "-m", "plastic", "run", str(DATA / "slow-scatter.cwl"),
                          str(DATA / "job.yml"), "--run-dir", str(tmp_path / "r"), "--master", "127.0.0.1:1",
                          "--provider", "ec2", "--image-id", "ami-1", *args], capture_output=True, text=True,
                         env=dict(os.environ), cwd=tmp_path, timeout=120, check=False)
    assert_one_line_error(res, *words)
    assert not (tmp_path / "r").exists()
