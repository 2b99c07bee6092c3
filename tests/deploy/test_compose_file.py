"""docker-compose.yml and `plastic plan --format compose`, checked without Docker: the compose
specification's schema, every build context, Dockerfile, stage, copied file and volume they name,
ports that never collide, and agents that are the example plan's clusters."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from plastic import compose
from plastic.local.config import spec_from_plan_doc
from tests.clirun import REPO, assert_one_line_error

COMPOSE_FILE = REPO / "docker-compose.yml"
EXAMPLE_PLAN = REPO / "deploy" / "compose" / "example-plan.json"
EXAMPLE = REPO / "cwl-examples" / "scatter-gather"


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def flag(command: list[str], name: str) -> str | None:
    for part in command:
        if part.startswith(f"--{name}="):
            return part.split("=", 1)[1]
    return None


def mesos_agent(cmd: list[str]) -> list[str] | None:
    return cmd[cmd.index("mesos-agent"):] if "mesos-agent" in cmd else None


def validate(doc: dict, schema: dict) -> None:
    jsonschema.Draft201909Validator(schema).validate(doc)  # the draft its $schema names


def attributes(cmd: list[str]) -> dict[str, str]:
    return dict(kv.split(":", 1) for kv in flag(cmd, "attributes").split(";"))


def resources(cmd: list[str]) -> dict[str, str]:
    return dict(kv.split(":", 1) for kv in flag(cmd, "resources").split(";"))


def listening_ports(services: dict) -> list[int]:
    ports = []
    for name, s in services.items():
        cmd = [str(c) for c in s.get("command") or []]
        if (agent := mesos_agent(cmd)) is not None:
            ports.append(int(flag(agent, "port")))
        elif cmd[:1] == ["mesos-master"]:
            ports.append(int(flag(cmd, "port")))
        elif cmd[:1] == ["redis-server"]:
            ports.append(int(cmd[cmd.index("--port") + 1]))
        elif cmd[:3] == ["plastic", "imds", "serve"]:
            ports.append(int(cmd[cmd.index("--port") + 1]))
        elif name == "zookeeper":
            ports.append(int(s["environment"]["ZOO_PORT"]))
    return ports


def test_the_file_is_what_the_generator_makes_of_the_example_plan():
    res = subprocess.run([sys.executable, "deploy/compose/generate.py", "--check"], cwd=REPO, capture_output=True,
                         text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    plan = json.loads(EXAMPLE_PLAN.read_text())
    assert plan["schema"] == "plastic.plan/v1"


def test_the_file_follows_the_compose_specification(compose_schema):
    validate(load(COMPOSE_FILE), compose_schema)


def test_a_broken_file_fails_the_schema(compose_schema):
    doc = load(COMPOSE_FILE)
    doc["services"]["master"]["network_mode"] = ["host"]  # a list where a string goes
    with pytest.raises(jsonschema.ValidationError):
        validate(doc, compose_schema)


def dockerfile_stages(path: Path) -> set[str]:
    return {m.group(1) for m in re.finditer(r"(?im)^FROM\s+\S+\s+AS\s+(\S+)", path.read_text())}


def copied_sources(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["COPY"] and not parts[1].startswith("--from="):
            out.extend(parts[1:-1])
    return out


def test_every_build_context_dockerfile_stage_and_copied_file_exists():
    services = load(COMPOSE_FILE)["services"]
    builds = {name: s["build"] for name, s in services.items() if "build" in s}
    assert {b["dockerfile"] for b in builds.values()} == {"deploy/zookeeper/Dockerfile", "deploy/mesos/Dockerfile",
                                                           "deploy/plastic/Dockerfile"}
    images = {s["image"] for s in services.values()}
    assert images == {s["image"] for s in services.values() if s["image"] in
                      {services[n]["image"] for n in builds}}, "every image is built by some service"
    for name, build in builds.items():
        context = (REPO / build["context"]).resolve()
        assert context.is_dir(), name
        dockerfile = context / build["dockerfile"]
        assert dockerfile.is_file(), (name, dockerfile)
        if "target" in build:
            assert build["target"] in dockerfile_stages(dockerfile), (name, build["target"])
        for src in copied_sources(dockerfile):
            if "[" in src:  # an optional file (a glob that may match nothing)
                continue
            assert (context / src).exists(), (dockerfile, src)
    for patch in sorted((REPO / "deploy" / "mesos" / "patches").glob("*.patch")):
        first = patch.read_text().splitlines()[0]
        assert first and not first.startswith(("---", "diff")), f"{patch.name}: its first line says why"


def test_volumes_are_declared_and_the_runs_folder_is_the_same_path_everywhere():
    doc = load(COMPOSE_FILE)
    declared = set(doc["volumes"])
    runs_mounts = set()
    for name, s in doc["services"].items():
        for v in s.get("volumes", []):
            source, target = v.split(":")[:2]
            if source.startswith("."):
                assert source == compose.RUNS_ON_HOST, (name, v)
                runs_mounts.add(target)
            else:
                assert source in declared, (name, v)
    assert runs_mounts == {compose.RUNS_IN_CONTAINER}
    assert "/compose-runs/" in (REPO / ".gitignore").read_text()
    used = {v.split(":")[0] for s in doc["services"].values() for v in s.get("volumes", [])}
    assert declared <= used


def test_ports_never_collide_and_each_spot_agent_watches_its_own_emulator():
    services = load(COMPOSE_FILE)["services"]
    ports = listening_ports(services)
    assert len(ports) == len(set(ports)) == 3 + len(compose.EXAMPLE_AGENTS) + 2  # zk, master, redis; agents; emulators
    task_ranges = []
    for name, s in services.items():
        agent = mesos_agent([str(c) for c in s.get("command") or []])
        if agent is None:
            continue
        lo, hi = map(int, resources(agent)["ports"].strip("[]").split("-"))
        task_ranges.append((lo, hi))
        assert flag(agent, "master") == compose.ZK_URL
        if attributes(agent)["market"] == "spot":
            imds = s["command"][s["command"].index("--imds") + 1]
            served = services[f"{name}-imds"]["command"]
            assert imds.endswith(":" + served[served.index("--port") + 1])
            watch = services[f"{name}-watch"]["command"]
            assert watch[watch.index("--imds") + 1] == imds
            assert served[served.index("--instance-id") + 1] == attributes(agent)["instance_id"]
    task_ranges.sort()
    assert all(a[1] < b[0] for a, b in zip(task_ranges, task_ranges[1:], strict=False))


def test_the_agents_are_the_example_plans_clusters():
    plan_agents = spec_from_plan_doc(json.loads(EXAMPLE_PLAN.read_text()), "example plan").agents
    by_cluster = {a.cluster: a for a in plan_agents}
    services = load(COMPOSE_FILE)["services"]
    seen = {}
    for name, s in services.items():
        agent = mesos_agent([str(c) for c in s.get("command") or []])
        if agent is None:
            continue
        attrs, res = attributes(agent), resources(agent)
        want = by_cluster[attrs["cluster"]]
        assert attrs["preemptible"] == str(want.preemptible).lower()
        assert attrs["market"] == ("spot" if want.preemptible else "on-demand")
        assert attrs["instance_type"] == want.instance_type
        assert float(res["cpus"]) == want.cpus and float(res["mem"]) == want.ram_mib
        assert ("spot-run" in s["command"]) == want.preemptible and s["restart"] == (
            "no" if want.preemptible else "unless-stopped")
        seen[name] = want.preemptible
    assert seen == compose.EXAMPLE_AGENTS and set(by_cluster) == set(seen)


def test_plan_format_compose_gives_every_planned_node_an_agent(tmp_path, compose_schema):
    out = tmp_path / "plan.compose.yml"
    res = subprocess.run([sys.executable, "-m", "plastic", "plan", str(EXAMPLE / "scatter-gather.cwl"),
                          str(EXAMPLE / "job.yml"), "--format", "compose", "-o", str(out)], cwd=REPO,
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    override = load(out)
    base = load(COMPOSE_FILE)
    merged = {**base, "services": {**base["services"]}}
    for name, s in override["services"].items():
        merged["services"][name] = {**merged["services"].get(name, {}), **s}
    validate(override, compose_schema)
    validate(merged, compose_schema)
    plan = json.loads(EXAMPLE_PLAN.read_text())
    agents = {n: s for n, s in override["services"].items() if mesos_agent([str(c) for c in s.get("command") or []])}
    assert len(agents) == len(plan["nodes"])
    off = {n for n, s in override["services"].items() if s.get("profiles") == [compose.BASE_AGENTS_PROFILE]}
    assert off == {n for n in base["services"] if n.split("-imds")[0].split("-watch")[0] in compose.EXAMPLE_AGENTS}
    live = {n: s for n, s in merged["services"].items() if n not in off}
    ports = listening_ports(live)
    assert len(ports) == len(set(ports))


def test_plan_format_compose_bad_input_is_one_line(tmp_path):
    res = subprocess.run([sys.executable, "-m", "plastic", "plan", str(tmp_path / "missing.cwl"), "--format",
                          "compose"], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert_one_line_error(res, "missing.cwl")


def test_the_mesos_image_is_named_by_every_input_of_its_build(tmp_path):
    """tests/compose/images.py: `make test-compose` reuses a Mesos image whose inputs tag is here; the tag
    must change with any build file, patch, source tarball, CA certificate or base image."""
    from tests.compose.images import mesos_inputs_tag, services_to_build

    for rel in ("deploy/mesos/Dockerfile", "deploy/mesos/patches/01.patch", "deploy/extra-ca/README.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    first = mesos_inputs_tag(tmp_path, "sha256:base")
    assert first == mesos_inputs_tag(tmp_path, "sha256:base") and first.startswith("plastic/mesos:inputs-")
    seen = {first, mesos_inputs_tag(tmp_path, "sha256:other-base")}
    for change in ("deploy/mesos/patches/01.patch", "deploy/mesos/mesos-source.tar.gz", "deploy/extra-ca/proxy.crt"):
        (tmp_path / change).write_text("changed")
        seen.add(mesos_inputs_tag(tmp_path, "sha256:base"))
    assert len(seen) == 5
    (tmp_path / "deploy" / "plastic").mkdir()
    (tmp_path / "deploy" / "plastic" / "Dockerfile").write_text("not an input of the Mesos image")
    assert mesos_inputs_tag(tmp_path, "sha256:base") in seen
    only, tag = services_to_build(yaml.safe_load(COMPOSE_FILE.read_text())["services"], tmp_path)
    assert only == [] and tag.startswith("plastic/mesos:inputs-")  # no image of that tag here: build them all
