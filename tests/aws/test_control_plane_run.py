"""From a plan to a finished run through a control plane, against moto: `plastic cloud up --control-plane`,
`plastic submit` from the user's side, `plastic cloud down --save-to`.

moto creates the instances but runs nothing on them, so this machine stands in for them: for the
control plane, its start script as EC2 would run it (tests/aws/stand_in.py: bash with stand-ins for
docker and the volume's tools), then the Redis it configured and the `plastic serve` it starts, each
with the command line the script gave docker (the container's mounts applied, the one change being
the master: a local Mesos-API cluster stands in for ZooKeeper and the Mesos master); for each agent
instance, a local agent with its instance id (tests/aws/helpers.py: Bridge).  The user submits the
bundled scatter-gather example with its files shipped through Redis; the run's job store is in moto's
S3, its output goes to a bucket, and every AWS call of the service, the run, its Toil leader and its
workers is one the IAM policy allows.  At the end nothing tagged with the run is left.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from plastic.aws import cloud, control_plane
from plastic.aws.ec2_cloud import Aws
from plastic.compose import MANAGER_IMAGE
from plastic.procs import stop_process
from tests.aws import stand_in
from tests.aws.helpers import CALL_LOG, POLICY, Bridge, allowed, recorded_calls
from tests.clirun import REPO, plastic
from tests.waiting import eventually

pytest.importorskip("toil")
pytestmark = [pytest.mark.toil_e2e, pytest.mark.skipif(stand_in.TLS_REDIS is None,
                                                       reason="no redis-server with TLS on this machine")]

SG = REPO / "cwl-examples" / "scatter-gather"
RUN = "cprun"


def user_data(instance_id: str) -> str:
    import boto3

    reply = boto3.client("ec2").describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    return base64.b64decode(reply["UserData"]["Value"]).decode()


def serve_command(booted: stand_in.Booted, master: str) -> list[str]:
    """The `plastic serve` the script starts, as its container would run it here."""
    run = booted.runs()[3]
    image_at = next(i for i, w in enumerate(run) if w.endswith(MANAGER_IMAGE))
    argv, options = run[image_at + 1:], run[:image_at]  # docker's options, then the container's command
    assert argv[:3] == ["plastic", "-v", "serve"], argv
    mounts = {inside: host for host, inside in (options[i + 1].split(":")[:2] for i, w in enumerate(options)
                                                if w == "-v")}
    argv = [a.replace("/plastic-runs", mounts["/plastic-runs"]) for a in argv]
    argv[argv.index("--master") + 1] = master
    return [sys.executable, "-m", *argv]


def test_cloud_up_submit_and_down_run_the_example_through_a_control_plane(endpoint, image_id, tmp_path):
    import boto3

    from plastic.local.handle import LocalCluster
    from plastic.store.embedded import open_url

    home = tmp_path / "home"
    user = {"PLASTIC_HOME": str(home)}
    plan = tmp_path / "plan.json"
    planned = plastic("plan", SG / "scatter-gather.cwl", SG / "job.yml", "--format", "json")
    plan.write_text(planned.stdout)
    up = plastic("cloud", "up", plan, "--run-id", RUN, "--image-id", image_id, "--control-plane", "--allow-from",
                 "127.0.0.1/32", env=user)
    assert up.returncode == 0, up.stderr
    plane = control_plane.find(Aws.connect(None), RUN)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="lab-results")
    # the instances, stood in for on this machine
    cluster = LocalCluster({"clusters": [{"name": "lab", "count": 1, "cpus": 0.1, "ram_mib": 64,
                                          "preemptible": False}]}, agent_ping_timeout_s=5.0).start()
    bridge = Bridge(cluster, RUN)
    bridge.start()
    booted = stand_in.boot(tmp_path / "control-plane", user_data(plane.instance_id))
    redis, service_url, port = stand_in.start_redis(booted, tmp_path / "control-plane")
    calls = tmp_path / "aws-calls"
    env = {**{k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}, **booted.serve_env(),
           "PLASTIC_REDIS_URL": service_url, "PLASTIC_HOME": str(tmp_path / "control-plane-home"),
           "PYTHONPATH": str(CALL_LOG), "PLASTIC_TEST_AWS_CALLS": str(calls)}
    serve_log = tmp_path / "serve.log"
    with serve_log.open("w") as sink:
        serve = subprocess.Popen(serve_command(booted, cluster.master_url), env=env, stdout=sink,
                                 stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        # the user's side: the URL `cloud redis-url` prints, reached here at the stand-in's port
        printed = plastic("cloud", "redis-url", RUN, env=user).stdout.strip()
        url = printed.replace(f"@{plane.public_ip or plane.private_ip}:6379", f"@127.0.0.1:{port}")
        stand_in.wait_for(lambda: open_url(url).close(), redis)
        sub = plastic("submit", SG / "scatter-gather.cwl", SG / "job.yml", "--outdir", "s3://lab-results/sg",
                      "--ship", "--redis", url, env=user)
        assert sub.returncode == 0, sub.stderr
        run_id = sub.stdout.strip()
        deadline, state = time.monotonic() + 300, "SUBMITTED"
        while state not in ("SUCCEEDED", "FAILED", "CANCELLED"):
            assert time.monotonic() < deadline and serve.poll() is None, serve_log.read_text()[-4000:]
            time.sleep(2)
            doc = plastic("status", run_id, "--format", "json", "--redis", url, env=user)
            state = json.loads(doc.stdout)["state"] if doc.returncode == 0 else state
        logs = list((booted.data / "runs").rglob("plastic-run.log"))
        assert state == "SUCCEEDED", (logs[0].read_text()[-4000:] if logs else "", serve_log.read_text()[-3000:])
        body = s3.get_object(Bucket="lab-results", Key="sg/sorted.txt")["Body"].read()
        expected = json.loads((SG / "expected-output.json").read_text())["sorted"]
        assert f"sha1${hashlib.sha1(body).hexdigest()}" == expected["checksum"]
        # the run's job store was in S3 and is gone; the shipped files left Redis
        assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["lab-results"]
        # its report from the user's machine, where its directory is not: from the copy the service keeps
        client = open_url(url)
        try:
            eventually(lambda: client.exists(f"plastic:run:{run_id}:archive"), 60, "the service's copy of the run",
                       alive=serve)
            assert not client.exists(f"plastic:run:{run_id}:shipped")
        finally:
            client.close()
        run_dir = next((booted.data / "runs").rglob(run_id))
        run_dir.rename(run_dir.with_name("elsewhere"))  # the control plane's disk, out of the user's reach
        report = plastic("report", run_id, "--format", "json", "--redis", url, env=user)
        assert report.returncode == 0, report.stderr
        assert json.loads(report.stdout)["outcome"] == "succeeded"
        down = plastic("cloud", "down", RUN, "--wait-seconds", "5", "--save-to", tmp_path / "saved", "--redis", url,
                       env=user)
        assert down.returncode == 0, down.stderr
        saved = [json.loads(line) for line in (tmp_path / "saved" / "redis-dump.jsonl").read_text().splitlines()]
        assert len(saved) > 10 and not any(b"shipped" in base64.b64decode(s["key"]) for s in saved)
        kept = tmp_path / "saved" / "runs" / run_id  # the run's directory, from the service's copy
        assert json.loads((kept / "report.json").read_text())["outcome"] == "succeeded"
        assert (kept / "decisions.jsonl").is_file() and not (kept / "jobstore").exists()
    finally:
        stop_process(serve, 60)
        redis.terminate()
        redis.wait(10)
        bridge.stopped.set()
        bridge.join(5)
        cluster.stop()
    assert not bridge.errors, bridge.errors
    assert cloud.leftovers(Aws.connect(None), RUN) == {"instances": 0, "launch_templates": 0, "security_groups": 0,
                                                       "rules": 0, "queues": 0, "buckets": 0}
    policy = json.loads(POLICY.read_text())
    missing = [c for c in recorded_calls(calls) if not allowed(c, policy)]
    assert not missing, f"deploy/aws/iam-policy.json does not allow {missing}"
