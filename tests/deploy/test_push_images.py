"""deploy/aws/push-images.sh, run by bash with stand-ins for the two outside commands it calls (aws, docker):
it pushes exactly the compose cluster's four images (plastic/compose.py's names) under the account's ECR
registry, makes only the repositories that are missing, hands Docker the registry password on stdin and
never on a command line, and prints the `--agent-image` that `plastic cloud up` takes.

The stand-ins are the only commands on the script's PATH, so no real aws or docker can be reached: no
network, no Docker, no AWS.  Each one appends its argv, as a JSON list with its own name first, to one
file, so the order of the calls across the two can be checked too."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass

import click
import pytest
import yaml

from plastic.aws.ec2_cloud import render_user_data
from plastic.cli.group import cli
from plastic.compose import AGENT_IMAGE, MANAGER_IMAGE, MESOS_IMAGE, ZOOKEEPER_IMAGE
from plastic.core.model import Market
from tests.clirun import REPO, assert_one_line_error

SCRIPT = REPO / "deploy" / "aws" / "push-images.sh"
IMAGES = [ZOOKEEPER_IMAGE, MESOS_IMAGE, MANAGER_IMAGE, AGENT_IMAGE]
REPOSITORIES = sorted(image.rsplit(":", 1)[0] for image in IMAGES)
ACCOUNT = "123456789012"
PASSWORD = "eyJwYXlsb2FkIjoiZmFrZS1lY3ItcGFzc3dvcmQifQ=="
REGISTRY = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"
BASH = shutil.which("bash") or "/bin/bash"

# Each stand-in is Python run without site-packages (-IS: quick to start) and reads the test's
# settings from state.json next to the call log.
STAND_IN = """#!{python} -IS
import json, os, sys
here = {here!r}
state_path = os.path.join(here, "state.json")
state = json.load(open(state_path))
args = sys.argv[1:]
with open(os.path.join(here, "calls.jsonl"), "a") as log:
    log.write(json.dumps([{tool!r}, *args]) + "\\n")


def value(name):
    return args[args.index(name) + 1] if name in args else None


def save():
    json.dump(state, open(state_path, "w"))
"""

AWS = """
if args[:2] == ["sts", "get-caller-identity"]:
    print(state["account"])
elif args[:2] == ["ecr", "describe-repositories"]:
    name = value("--repository-names")
    if state["describe_error"]:
        sys.exit(print(state["describe_error"], file=sys.stderr) or 254)
    if name not in state["repositories"]:
        sys.exit(print("An error occurred (RepositoryNotFoundException) when calling the DescribeRepositories "
                       f"operation: The repository with name '{name}' does not exist", file=sys.stderr) or 254)
    print(json.dumps({"repositories": [{"repositoryName": name}]}))
elif args[:2] == ["ecr", "create-repository"]:
    state["repositories"].append(value("--repository-name"))
    save()
    print(json.dumps({"repository": {"repositoryName": value("--repository-name")}}))
elif args[:2] == ["ecr", "get-login-password"]:
    print(state["password"])
else:
    sys.exit(print(f"aws stand-in: not expected: {args}", file=sys.stderr) or 252)
"""

DOCKER = """
if args[:2] == ["compose", "version"] and not state["compose_plugin"]:
    sys.exit(print("docker: 'compose' is not a docker command.", file=sys.stderr) or 1)
elif args[:2] == ["image", "inspect"]:
    sys.exit(0 if args[2] in state["built"] else print(f"Error: No such image: {args[2]}", file=sys.stderr) or 1)
elif args[:1] == ["login"]:
    open(os.path.join(here, "login-stdin"), "w").write(sys.stdin.read())
    print("Login Succeeded")
"""


@dataclass
class Result:
    """One run of the script: its exit status and output, and every call of the stand-ins, in order."""

    proc: subprocess.CompletedProcess[str]
    calls: list[list[str]]
    state: dict

    @property
    def returncode(self) -> int:
        return self.proc.returncode

    @property
    def stdout(self) -> str:
        return self.proc.stdout

    @property
    def stderr(self) -> str:
        return self.proc.stderr

    def of(self, *prefix: str) -> list[list[str]]:
        """The calls that start with these words (the tool's name first)."""
        return [c for c in self.calls if c[:len(prefix)] == list(prefix)]


@pytest.fixture
def push(tmp_path):
    """Run the script with the stand-ins; keyword arguments set what they answer."""

    def run(*args: str, env: dict[str, str] | None = None, repositories=(), compose_plugin: bool = True,
            built=tuple(IMAGES), describe_error: str = "") -> Result:
        stand_ins = tmp_path / "bin"
        stand_ins.mkdir(exist_ok=True)
        state = {"account": ACCOUNT, "password": PASSWORD, "repositories": list(repositories),
                 "compose_plugin": compose_plugin, "built": list(built), "describe_error": describe_error}
        (tmp_path / "state.json").write_text(json.dumps(state))
        log = tmp_path / "calls.jsonl"
        log.unlink(missing_ok=True)  # this run's calls only
        tools = {"aws": AWS, "docker": DOCKER} | ({} if compose_plugin else {"docker-compose": ""})
        for tool, body in tools.items():
            path = stand_ins / tool
            path.write_text(STAND_IN.format(python=sys.executable, here=str(tmp_path), tool=tool) + body)
            path.chmod(0o755)
        res = subprocess.run([BASH, str(SCRIPT), *args], env={"PATH": str(stand_ins), **(env or {})},
                             capture_output=True, text=True, timeout=60, check=False)
        calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        return Result(res, calls, json.loads((tmp_path / "state.json").read_text()))

    return run


REGION = {"AWS_REGION": "us-east-1"}


def test_the_four_images_of_plastic_compose_are_pushed_under_the_registry(push):
    res = push(env=REGION)
    assert res.returncode == 0, res.stderr
    assert sorted(c[2] for c in res.of("docker", "push")) == sorted(f"{REGISTRY}/{image}" for image in IMAGES)
    assert sorted(c[2:] for c in res.of("docker", "tag")) == sorted([i, f"{REGISTRY}/{i}"] for i in IMAGES)
    assert res.of("aws", "sts", "get-caller-identity")[0][3:] == ["--query", "Account", "--output", "text",
                                                                 "--region", "us-east-1"]


def test_the_images_built_by_docker_compose_yml_are_the_ones_pushed():
    """`docker compose build` makes the images: a fifth built image, or a renamed one, must show here."""
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    assert {s["image"] for s in services.values() if "build" in s} == set(IMAGES)


def test_every_missing_repository_is_created_scanned_encrypted_and_tagged(push):
    res = push(env=REGION)
    assert res.returncode == 0, res.stderr
    created = res.of("aws", "ecr", "create-repository")
    assert sorted(c[c.index("--repository-name") + 1] for c in created) == REPOSITORIES
    for call in created:
        words = " ".join(call)
        assert "--region us-east-1" in words
        assert "--image-scanning-configuration scanOnPush=true" in words
        assert "--encryption-configuration encryptionType=AES256" in words
        assert "--tags Key=plastic:managed-by,Value=plastic" in words
    assert sorted(res.state["repositories"]) == REPOSITORIES


def test_repositories_that_exist_are_not_created_again(push):
    res = push(env=REGION, repositories=["plastic/agent", "plastic/mesos"])
    assert res.returncode == 0, res.stderr
    assert sorted(c[-1] for c in res.of("aws", "ecr", "describe-repositories")) == ["us-east-1"] * 4
    created = [c[c.index("--repository-name") + 1] for c in res.of("aws", "ecr", "create-repository")]
    assert sorted(created) == ["plastic/manager", "plastic/zookeeper"]
    assert len(res.of("docker", "push")) == 4
    again = push(env=REGION, repositories=res.state["repositories"])  # run again: all four are there now
    assert again.returncode == 0, again.stderr
    assert not again.of("aws", "ecr", "create-repository") and len(again.of("docker", "push")) == 4


def test_a_failed_lookup_that_is_not_a_missing_repository_stops_before_anything_is_created(push):
    res = push(env=REGION, describe_error="An error occurred (AccessDeniedException) when calling the "
                                          "DescribeRepositories operation: not authorized")
    assert res.returncode == 1
    assert "AccessDeniedException" in res.stderr and "describe-repositories failed" in res.stderr
    assert not res.of("aws", "ecr", "create-repository") and not res.of("docker", "push")


def test_the_password_reaches_docker_login_on_stdin_and_no_command_line(push, tmp_path):
    res = push(env=REGION)
    assert res.returncode == 0, res.stderr
    assert res.of("docker", "login") == [["docker", "login", "--username", "AWS", "--password-stdin", REGISTRY]]
    assert (tmp_path / "login-stdin").read_text().strip() == PASSWORD
    assert not any(PASSWORD in arg for call in res.calls for arg in call)
    assert PASSWORD not in res.stdout + res.stderr


def test_repositories_are_made_and_docker_logged_in_after_the_build_and_before_the_first_push(push):
    res = push(env=REGION)
    assert res.returncode == 0, res.stderr
    build = res.calls.index(["docker", "compose", "-f", str(REPO / "docker-compose.yml"), "build"])
    at = [c[:3] if c[1] == "ecr" else c[:2] for c in res.calls]  # what each call is, in order
    last_repository = max(i for i, c in enumerate(at) if c in (["aws", "ecr", "describe-repositories"],
                                                                ["aws", "ecr", "create-repository"]))
    assert build < last_repository < at.index(["docker", "login"]) < at.index(["docker", "push"])


def test_without_the_compose_plugin_docker_compose_builds_the_images(push):
    res = push(env=REGION, compose_plugin=False)
    assert res.returncode == 0, res.stderr
    assert res.of("docker-compose") == [["docker-compose", "-f", str(REPO / "docker-compose.yml"), "build"]]
    assert not res.of("docker", "compose", "-f")


def test_no_build_builds_nothing_and_pushes_the_images_already_here(push):
    res = push("--no-build", env=REGION)
    assert res.returncode == 0, res.stderr
    assert not res.of("docker", "compose") and not res.of("docker-compose")
    assert len(res.of("docker", "push")) == 4


def test_an_image_not_built_stops_the_script_before_anything_is_made_on_aws(push):
    res = push("--no-build", env=REGION, built=[i for i in IMAGES if i != MESOS_IMAGE])
    assert res.returncode == 1
    assert MESOS_IMAGE in res.stderr and "--no-build" in res.stderr
    assert not res.of("aws", "ecr") and not res.of("docker", "push")


def test_a_missing_region_is_one_line_and_calls_nothing(push):
    res = push()
    assert_one_line_error(res.proc, "region")
    assert res.calls == []


@pytest.mark.parametrize(("args", "words"), [
    (("--bucket", "b"), ("unknown argument", "--bucket")),
    (("--region",), ("--region needs a value",)),
    (("--account", "--no-build"), ("--account needs a value",)),
    (("--account", "12345"), ("--account", "12345", "12 digits")),
    (("--region", "Mars"), ("--region", "Mars")),
])
def test_bad_arguments_are_one_line_and_call_nothing(push, args, words):
    res = push(*args, env=REGION)
    assert_one_line_error(res.proc, *words)
    assert res.calls == []


@pytest.mark.parametrize(("args", "env", "registry"), [
    (("--region", "eu-west-1"), {"AWS_REGION": "us-east-2"}, f"{ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com"),
    ((), {"AWS_REGION": "us-east-2", "AWS_DEFAULT_REGION": "eu-west-1"}, f"{ACCOUNT}.dkr.ecr.us-east-2.amazonaws.com"),
    ((), {"AWS_DEFAULT_REGION": "ap-southeast-2"}, f"{ACCOUNT}.dkr.ecr.ap-southeast-2.amazonaws.com"),
    (("--region=cn-north-1",), {}, f"{ACCOUNT}.dkr.ecr.cn-north-1.amazonaws.com.cn"),
])
def test_the_region_comes_from_the_option_then_the_environment(push, args, env, registry):
    res = push(*args, env=env)
    assert res.returncode == 0, res.stderr
    assert res.of("docker", "login")[0][-1] == registry
    assert all(c[2].startswith(f"{registry}/") for c in res.of("docker", "push"))


def test_a_given_account_is_used_without_asking_sts(push):
    res = push("--account", "210987654321", env=REGION)
    assert res.returncode == 0, res.stderr
    assert not res.of("aws", "sts")
    assert res.of("docker", "login")[0][-1] == "210987654321.dkr.ecr.us-east-1.amazonaws.com"


def test_it_prints_the_agent_image_plastic_cloud_up_takes_and_the_registry(push):
    res = push(env=REGION)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [f"--agent-image {REGISTRY}/{AGENT_IMAGE}", f"--registry {REGISTRY}"]
    image = res.stdout.splitlines()[0].split(" ", 1)[1]
    assert image == f"{REGISTRY}/plastic/agent:latest"
    ctx = click.Context(cli)
    up = cli.get_command(ctx, "cloud").get_command(ctx, "up")  # type: ignore[union-attr]
    assert any("--agent-image" in p.opts for p in up.params)
    user_data = render_user_data(run_id="r1", cluster="burst", instance_type="m5.large", market=Market.SPOT,
                                 master="10.0.0.1:5050", redis="redis://10.0.0.1:6379/0", agent_image=image)
    assert f" {image} mesos-agent " in user_data and f" {image} plastic agent-watch" in user_data
