"""`plastic cloud up --control-plane` (plastic.aws.control_plane): one on-demand instance with ZooKeeper, the
Mesos master, Redis and `plastic serve`, which the agents join; against moto in server mode.  Its start
script is rehearsed here for real: bash runs it as rendered, with stand-ins for the instance's outside
commands (IMDS, docker, the volume's tools), and the Redis it configures is started as the container
would start it (the container's mounts applied to the paths), then reached over TLS with the password.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from plastic.aws import cloud, control_plane
from plastic.aws.control_plane_secrets import ControlPlaneSecrets, load_or_make
from plastic.aws.ec2_cloud import Aws
from plastic.compose import AGENT_IMAGE, MANAGER_IMAGE, MESOS_IMAGE, ZOOKEEPER_IMAGE
from tests.aws import stand_in
from tests.aws.helpers import POLICY, REGION, allowed, three_cluster_plan
from tests.clirun import REPO, assert_one_line_error, plastic

REGISTRY = "111122223333.dkr.ecr.us-east-1.amazonaws.com"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    where = tmp_path / "home"
    monkeypatch.setenv("PLASTIC_HOME", str(where))
    return where


def instances(ec2, run_id: str) -> list[dict]:
    pages = ec2.get_paginator("describe_instances").paginate(Filters=[{"Name": "tag:plastic:run", "Values": [run_id]}])
    return [i for p in pages for r in p["Reservations"] for i in r["Instances"]
            if i["State"]["Name"] not in ("terminated", "shutting-down")]


def user_data(ec2, instance_id: str) -> str:
    reply = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    return base64.b64decode(reply["UserData"]["Value"]).decode()


def template_user_data(ec2, run_id: str) -> list[str]:
    out = []
    found = ec2.describe_launch_templates(Filters=[{"Name": "tag:plastic:run", "Values": [run_id]}])
    for t in found["LaunchTemplates"]:
        versions = ec2.describe_launch_template_versions(LaunchTemplateId=t["LaunchTemplateId"])
        (version,) = versions["LaunchTemplateVersions"]
        out.append(base64.b64decode(version["LaunchTemplateData"]["UserData"]).decode())
    return out


@pytest.mark.slow
def test_up_makes_one_control_plane_the_agents_join_and_down_removes_it(endpoint, image_id, home, tmp_path):
    import boto3

    ec2 = boto3.client("ec2")
    plan = three_cluster_plan(tmp_path / "plan.json")
    args = ("cloud", "up", plan, "--run-id", "cp1", "--image-id", image_id, "--control-plane",
            "--allow-from", "203.0.113.7/32", "--registry", REGISTRY)
    res = plastic(*args, env={"PLASTIC_HOME": str(home)})
    assert res.returncode == 0, res.stderr
    (plane,) = [i for i in instances(ec2, "cp1") if {"Key": "plastic:cluster", "Value": "control-plane"} in i["Tags"]]
    assert plane["InstanceType"] == "m5.large" and plane.get("InstanceLifecycle") != "spot"
    assert f"control plane {plane['InstanceId']}" in res.stdout and "export PLASTIC_REDIS_URL" in res.stdout
    secrets = load_or_make("cp1")
    assert secrets.password not in res.stdout + res.stderr  # shown redacted only
    for name, mode in (("redis-password", 0o600), ("ca.key", 0o600), ("server.key", 0o600), ("ca.pem", 0o644)):
        assert (secrets.directory / name).stat().st_mode & 0o777 == mode, name
    # its start script is the one plastic renders, with the registry's images
    script = user_data(ec2, plane["InstanceId"])
    assert script == control_plane.render_start_script(
        run_id="cp1", secrets=secrets, settings=control_plane.ControlPlaneSettings(registry=REGISTRY), region=REGION)
    for image in (ZOOKEEPER_IMAGE, MESOS_IMAGE, MANAGER_IMAGE):
        assert f" {REGISTRY}/{image}" in script
    # its AOF volume: encrypted, deleted with it
    (volume,) = [m for m in plane["BlockDeviceMappings"] if m["DeviceName"] == control_plane.AOF_DEVICE]
    found = ec2.describe_volumes(VolumeIds=[volume["Ebs"]["VolumeId"]])["Volumes"][0]
    assert found["Encrypted"] and volume["Ebs"]["DeleteOnTermination"]
    # every agent joins it by its private address, with the run's password and CA, from the registry's image
    ip = plane["PrivateIpAddress"]
    for text in template_user_data(ec2, "cp1"):
        assert f"--master=zk://{ip}:2181/mesos" in text and f"{REGISTRY}/{AGENT_IMAGE}" in text
        assert f"PLASTIC_REDIS_URL=rediss://:{secrets.password}@{ip}:6379/0?ssl_check_hostname=false" in text
        assert base64.b64encode(secrets.ca_pem).decode() in text
    # Redis open to the user's address only (besides the group)
    (group,) = ec2.describe_security_groups(Filters=[{"Name": "tag:plastic:run", "Values": ["cp1"]}])["SecurityGroups"]
    outside = [(p["FromPort"], r["CidrIp"]) for p in group["IpPermissions"] for r in p.get("IpRanges", [])]
    assert outside == [(6379, "203.0.113.7/32")]
    # again: nothing new, the same secrets
    again = plastic(*args, env={"PLASTIC_HOME": str(home)})
    assert again.returncode == 0 and "created control plane" not in again.stdout, again.stdout
    assert len([i for i in instances(ec2, "cp1") if {"Key": "plastic:cluster", "Value": "control-plane"}
                in i["Tags"]]) == 1 and load_or_make("cp1") == secrets
    status = plastic("cloud", "status", "cp1", env={"PLASTIC_HOME": str(home)})
    assert status.returncode == 0 and "control-plane" in status.stdout
    assert f"control plane {plane['InstanceId']} (running): Mesos master http://{ip}:5050" in status.stdout
    assert "Redis does not answer" in status.stdout  # moto's instances run nothing
    url = plastic("cloud", "redis-url", "cp1", env={"PLASTIC_HOME": str(home)})
    host = plane.get("PublicIpAddress") or ip
    assert url.stdout.strip().startswith(f"rediss://:{secrets.password}@{host}:6379/0?ssl_check_hostname=false&"
                                         f"ssl_ca_certs={secrets.ca_path}"), url.stdout
    down = plastic("cloud", "down", "cp1", "--wait-seconds", "5", env={"PLASTIC_HOME": str(home)})
    assert down.returncode == 0 and f"removed instance {plane['InstanceId']}" in down.stdout
    assert cloud.leftovers(Aws.connect(None), "cp1") == {"instances": 0, "launch_templates": 0, "security_groups": 0,
                                                         "rules": 0, "queues": 0, "buckets": 0}


def test_the_policy_allows_every_call_of_a_control_plane(endpoint, image_id, home, tmp_path):
    aws = Aws.connect(None)
    orders = cloud.read_orders(str(three_cluster_plan(tmp_path / "plan.json")), cloud_catalog())
    from plastic.aws.ec2_cloud import NodeSettings

    settings = NodeSettings(image_id=image_id, master="unused", redis="unused")
    res = cloud.up(aws, "cp2", orders, cloud_catalog(), settings, secrets=load_or_make("cp2"),
                   control_plane=control_plane.ControlPlaneSettings(allow_from=("198.51.100.0/24",)))
    assert res.control_plane.created
    cloud.down(aws, "cp2", wait_s=5)
    policy = json.loads(POLICY.read_text())
    assert not [c for c in aws.operations() if not allowed(c, policy)]


def cloud_catalog():
    from plastic.catalogs import load_catalog

    return load_catalog(None)


@pytest.mark.parametrize(("extra", "words"), [
    (("--control-plane", "--allow-from", "0.0.0.0/0"), ("--allow-from", "never opened to everyone")),
    (("--control-plane", "--allow-from", "my-laptop"), ("--allow-from", "my-laptop")),
    (("--allow-from", "203.0.113.7/32"), ("--allow-from", "options of --control-plane")),
    (("--control-plane", "--master", "zk://10.0.0.1:2181/mesos"), ("--control-plane", "--master")),
    (("--control-plane", "--control-plane-type", "m9.huge"), ("--control-plane-type", "m9.huge")),
])
def test_bad_control_plane_options_are_one_line_and_create_nothing(endpoint, image_id, home, tmp_path, extra, words):
    res = plastic("cloud", "up", three_cluster_plan(tmp_path / "plan.json"), "--run-id", "cp3", "--image-id", image_id,
                  *extra, env={"PLASTIC_HOME": str(home)})
    assert_one_line_error(res, *words)
    assert cloud.leftovers(Aws.connect(None), "cp3")["security_groups"] == 0 and not home.exists()


def test_a_dry_run_shows_the_control_plane_and_keeps_no_secret(endpoint, image_id, home, tmp_path):
    res = plastic("cloud", "up", three_cluster_plan(tmp_path / "plan.json"), "--run-id", "cp4", "--image-id", image_id,
                  "--control-plane", "--dry-run", env={"PLASTIC_HOME": str(home)})
    assert res.returncode == 0, res.stderr
    assert "ec2:RunInstances" in res.stdout and not home.exists()
    assert "BEGIN" not in res.stdout  # no key or certificate printed (the user data is shown as its size)


# ------------------------------------------------------------------ the start script, rehearsed


def boot(tmp_path: Path, secrets: ControlPlaneSecrets) -> stand_in.Booted:
    return stand_in.boot(tmp_path, control_plane.render_start_script(
        run_id="cp9", secrets=secrets, region=REGION, settings=control_plane.ControlPlaneSettings(registry=REGISTRY)))


def test_the_start_script_runs_the_four_services_from_the_registry_with_the_secrets_in_private_files(tmp_path, home):
    secrets = load_or_make("cp9")
    booted = boot(tmp_path, secrets)
    etc, data, dockers, volume_tools = booted.etc, booted.data, booted.dockers, booted.volume_tools
    # the images are in an ECR registry: docker logs in with the password through a pipe (not an argument)
    assert booted.logins and all(a == ["login", "--username", "AWS", "--password-stdin", REGISTRY]
                                 for a in booted.logins)
    assert booted.login_stdin == f"{stand_in.ECR_PASSWORD}\n" * len(booted.logins)
    names = [a[a.index("--name") + 1] for a in dockers]
    assert names == ["plastic-zookeeper", "plastic-master", "plastic-redis", "plastic-serve"]
    images = {a[a.index("--name") + 1]: next(w for w in a if w.startswith(REGISTRY)) for a in dockers}
    assert images == {"plastic-zookeeper": f"{REGISTRY}/{ZOOKEEPER_IMAGE}",
                      "plastic-master": f"{REGISTRY}/{MESOS_IMAGE}",
                      "plastic-redis": f"{REGISTRY}/{MANAGER_IMAGE}", "plastic-serve": f"{REGISTRY}/{MANAGER_IMAGE}"}
    assert all(secrets.password not in " ".join(a) for a in dockers)  # never on a command line
    master = dockers[1]
    assert "--zk=zk://127.0.0.1:2181/mesos" in master and f"--ip={stand_in.PRIVATE_IP}" in master
    assert volume_tools == [["mkfs.ext4", "-q", "-L", "plastic-aof", control_plane.AOF_DEVICE],
                            ["mount", control_plane.AOF_DEVICE, str(data / "redis")]]
    for name in ("redis.conf", "serve.env", "server.key"):
        assert (etc / name).stat().st_mode & 0o077 == 0, name
    assert (etc / "server.pem").read_bytes() == secrets.server_pem and (etc / "ca.pem").read_bytes() == secrets.ca_pem
    serve = dockers[3]
    assert serve[serve.index("--env-file") + 1] == str(etc / "serve.env") and "serve" in serve
    assert serve[-2:] == ["--job-store", "s3"]  # the agents share no disk with it
    assert f"AWS_REGION={REGION}" in (etc / "serve.env").read_text()


@pytest.mark.skipif(stand_in.TLS_REDIS is None, reason="no redis-server with TLS on this machine")
def test_the_redis_it_configures_answers_over_tls_with_the_password_keeps_an_aof_and_is_saved(endpoint, tmp_path,
                                                                                               home):
    from plastic.store.embedded import open_url
    from plastic.store.store_errors import UnreachableError

    secrets = load_or_make("cp9")
    booted = boot(tmp_path, secrets)
    redis_run = booted.runs()[2]
    assert redis_run[redis_run.index(f"{REGISTRY}/{MANAGER_IMAGE}") + 1:] == ["redis-server", "/etc/plastic/redis.conf"]
    mounts = [redis_run[i + 1].split(":")[:2] for i, w in enumerate(redis_run) if w == "-v"]  # host, inside
    assert mounts == [[str(booted.data / "redis"), "/data"], [str(booted.etc), "/etc/plastic"]]
    server, url, _ = stand_in.start_redis(booted, tmp_path)
    data = booted.data
    try:
        client = stand_in.wait_for(lambda: open_url(url), server)
        client.set("plastic:run:x", "kept")
        with pytest.raises(UnreachableError):  # the password is needed
            open_url(url.replace(secrets.password, "wrong"))
        # `cloud down --save-to` saves it first; a Redis it cannot reach stops the down, nothing removed
        refused = plastic("cloud", "down", "cp9", "--save-to", tmp_path / "saved", "--redis",
                          url.replace(secrets.password, "wrong"), env={"PLASTIC_HOME": str(home)})
        assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "removed" not in refused.stdout and not (tmp_path / "saved" / "redis-dump.jsonl").exists()
        down = plastic("cloud", "down", "cp9", "--save-to", tmp_path / "saved", "--redis", url,
                       env={"PLASTIC_HOME": str(home)})
        assert down.returncode == 0 and "saved 1 Redis key(s)" in down.stdout, down.stderr
        assert (tmp_path / "saved" / "redis-dump.jsonl").stat().st_mode & 0o077 == 0
        line = json.loads((tmp_path / "saved" / "redis-dump.jsonl").read_text())
        assert base64.b64decode(line["key"]) == b"plastic:run:x" and line["pttl_ms"] == -1
        assert any(p.name.startswith("appendonly") for p in (data / "redis").iterdir())  # the AOF, on the volume
        client.close()
    finally:
        server.terminate()
        server.wait(10)


# ------------------------------------------------------------------ the same Mesos commands as the compose cluster's


def compose_command(service: str) -> dict[str, str]:
    import yaml

    doc = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return dict(arg.partition("=")[::2] for arg in doc["services"][service]["command"][1:])


def flags(argv: list[str], program: str) -> dict[str, str]:
    return dict(arg.partition("=")[::2] for arg in argv[argv.index(program) + 1:] if arg.startswith("--"))


# what differs from one machine to the next (its address, its resources: EC2's agent finds its own), or
# only tunes the compose cluster's logs and timeouts for two cores
HOST_FLAGS = {"--ip", "--hostname", "--master", "--zk", "--port", "--resources", "--attributes", "--cluster",
              "--logging_level", "--log_dir", "--agent_ping_timeout", "--max_agent_ping_timeouts"}


def test_the_instances_run_mesos_as_the_compose_cluster_does(tmp_path, home):
    """The compose cluster runs the same images with real Mesos 1.11 in `make test-compose`: the EC2 agent
    and the control plane's master take its flags, each with its value, but those of the machine."""
    from plastic.aws.ec2_cloud import render_user_data
    from plastic.core.model import Market

    booted = boot(tmp_path / "plane", load_or_make("cp9"))
    master = flags(booted.runs()[1], "mesos-master")
    expected = {k: v for k, v in compose_command("master").items() if k not in HOST_FLAGS}
    assert {k: master.get(k) for k in expected} == expected and set(master) <= set(compose_command("master"))
    agent_boot = stand_in.boot(tmp_path / "agent", render_user_data(
        run_id="cp9", cluster="burst", instance_type="m5.large", market=Market.SPOT, master="zk://10.0.0.9:2181/mesos",
        redis="redis://10.0.0.9:6379/0", agent_image="plastic/agent:latest"))
    agent = flags(agent_boot.runs()[0], "mesos-agent")
    expected = {k: v for k, v in compose_command("core").items() if k not in HOST_FLAGS}
    assert {k: agent.get(k) for k in expected} == expected and set(agent) <= set(compose_command("core"))
