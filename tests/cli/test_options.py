"""The options several commands share (plastic/cli/options.py): one name, type and metavar for each idea
across every command, old spellings that still work without being shown, and click's one-line errors
for bad values."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime

import click
import httpx
import pytest
from click.testing import CliRunner

from plastic.cli.group import cli
from plastic.cli.options import NOTICE_ALIASES, Seconds
from plastic.core.book.spot_events import INTERRUPTION_NOTICE_S
from tests.clirun import REPO, assert_one_line_error, plastic
from tests.redis_servers import free_port
from tests.waiting import eventually

# every command that takes the warning a spot interruption gives
NOTICE_COMMANDS = {("run",), ("local", "up"), ("local", "serve"), ("local", "interrupt"), ("imds", "interrupt")}
# one name for two ideas, the metavar telling which: `local up --cluster FILE` (CLUSTER.yaml) and
# `local interrupt|add-agent --cluster NAME`; --format's choices are each command's
TWO_METAVARS = {"--cluster", "--format"}
SECONDS_OPTIONS = {"--interval", "--grace", "--timeout", "--token-ttl"}  # seconds without "-seconds" in the name


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """(path under `plastic`, command) of every command, hidden ones too."""
    for name in group.list_commands(None):  # type: ignore[arg-type]
        command = group.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command


def options() -> Iterator[tuple[tuple[str, ...], click.Command, click.Option]]:
    for path, command in commands():
        for param in command.params:
            if isinstance(param, click.Option):
                yield path, command, param


def metavar(command: click.Command, option: click.Option) -> str:
    return option.make_metavar(click.Context(command))


def test_every_command_with_a_spot_notice_spells_it_notice_seconds_with_the_same_type_and_default():
    found = {path: o for path, _, o in options() if "notice" in o.name}
    assert set(found) == NOTICE_COMMANDS
    for path, option in found.items():
        assert option.opts == ["--notice-seconds"] and option.name == "notice_seconds", path
        assert isinstance(option.type, Seconds) and option.type.min == 0 and not option.type.min_open, path
        assert option.default == INTERRUPTION_NOTICE_S and option.aliases == NOTICE_ALIASES, path


def test_every_hidden_alias_still_sets_its_option():
    checked = set()
    for path, command, option in options():
        for alias in getattr(option, "aliases", ()):
            required = [w for p in command.params if p.required and p is not option
                        for w in ([p.opts[0], "x"] if isinstance(p, click.Option) else ["x"])]
            ctx = command.make_context(path[-1], [*required, alias, "7.5"])
            assert ctx.params[option.name] == 7.5, (path, alias)
            default = command.make_context(path[-1], required)
            assert default.params[option.name] == option.default, (path, alias)
            checked.add(path)
    assert checked >= NOTICE_COMMANDS


@pytest.mark.parametrize("path", sorted(NOTICE_COMMANDS))
def test_help_shows_the_option_and_not_its_old_spelling(path):
    res = CliRunner().invoke(cli, [*path, "--help"])
    assert res.exit_code == 0, res.output
    assert "--notice-seconds SECONDS" in res.output
    assert not any(alias in res.output for alias in NOTICE_ALIASES)


def test_no_option_takes_a_number_of_seconds_or_a_file_as_text():
    for path, command, option in options():
        name = option.opts[-1]
        if name.endswith("-seconds") or name in SECONDS_OPTIONS:
            assert metavar(command, option) == "SECONDS", (path, name)
            assert isinstance(option.type, Seconds | click.IntRange), (path, name)
        if name in ("--catalog", "--redis-ca", "--credentials", "--mesos-credential"):
            assert isinstance(option.type, click.Path) and not option.type.dir_okay, (path, name)
        if name == "--catalog":
            assert option.type.exists and option.name == "catalog_path", path
        if name in ("--master", "--redis", "--imds", "--queue-url"):
            assert metavar(command, option) == "URL", (path, name)


def test_an_option_name_has_one_metavar_wherever_it_is():
    metavars = defaultdict(set)
    for path, command, option in options():
        if not (option.hidden or option.is_flag or option.count):
            metavars[option.opts[-1]].add(metavar(command, option))
    assert {name for name, seen in metavars.items() if len(seen) > 1} <= TWO_METAVARS


def test_seconds_refuse_what_is_no_number_of_seconds():
    for text, words in (("abc", "not a number of seconds"), ("-1", ">= 0"), ("inf", ">= 0"), ("nan", ">= 0")):
        with pytest.raises(click.BadParameter, match=words):
            Seconds().convert(text, None, None)
    assert Seconds().convert("0", None, None) == 0.0 and Seconds().convert(2, None, None) == 2.0
    with pytest.raises(click.BadParameter, match="> 0 seconds"):
        Seconds(min_open=True).convert("0", None, None)
    with pytest.raises(click.BadParameter, match="<= 600 seconds"):
        Seconds(max=600.0).convert("601", None, None)


# ---------------------------------------------------------------- as a user runs them

def test_a_bad_number_of_seconds_is_one_line_naming_the_option():
    assert_one_line_error(plastic("imds", "interrupt", "http://127.0.0.1:9", "--notice-seconds", "abc"),
                          "--notice-seconds", "not a number of seconds", "'abc'")
    # the old spelling, given a bad value: the line names the option as --help shows it
    assert_one_line_error(plastic("imds", "interrupt", "http://127.0.0.1:9", "--interrupt-notice-seconds", "-3"),
                          "--notice-seconds", ">= 0 seconds", "'-3'")
    assert_one_line_error(plastic("local", "up", "--interrupt-notice-seconds", "soon"), "plastic local up",
                          "--notice-seconds", "'soon'")
    assert_one_line_error(plastic("plan", REPO / "tests" / "cli" / "data" / "tiny-trace.json",
                                  "--budget-per-hour", "0"), "--budget-per-hour")


@pytest.mark.parametrize("args", [("cloud", "status", "r-1"),
                                  ("cloud", "up", "plan.json", "--run-id", "r-1", "--image-id", "ami-1"),
                                  ("plan", "plan.json"), ("run", "wf.cwl")])
def test_a_missing_catalog_is_one_line_naming_the_file(args):
    assert_one_line_error(plastic(*args, "--catalog", "/nonexistent/catalog.yaml"), "--catalog",
                          "/nonexistent/catalog.yaml", "does not exist")


@pytest.fixture
def imds():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "plastic", "imds", "serve", "--port", str(port),
                             "--instance-id", "i-alias"], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    eventually(lambda: httpx.get(url + "/plastic/state", timeout=1).status_code == 200, 30, "imds serve",
               interval=0.1, alive=proc, ignoring=httpx.HTTPError)
    yield url
    proc.terminate()
    proc.wait(10)


def test_imds_interrupt_takes_the_old_spelling(imds):
    before = time.time()
    res = plastic("imds", "interrupt", imds, "--interrupt-notice-seconds", "90")
    assert res.returncode == 0, res.stderr
    assert before + 89 <= json.loads(res.stdout)["action_time"] <= time.time() + 91


def test_local_up_and_interrupt_take_the_old_spelling(tmp_path):
    """`local up --detach` hands the notice to the cluster it starts (`local serve`, under the new name)."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({
        "schema": "plastic.plan/v1", "tasks": [], "cost_per_hour": 0.03,
        "nodes": [{"id": "burst-1", "cluster": "burst", "instance_type": "m5.large", "market": "spot",
                   "usd_per_hour": 0.03, "capacity": {"vcpus": 2, "ram_mib": 8192}, "tasks": []}]}))
    port, workdir = free_port(), tmp_path / "wd"
    res = plastic("local", "up", "--plan", plan, "--port", port, "--detach", "--workdir", workdir,
                  "--interrupt-notice-seconds", "30", timeout=60)
    assert res.returncode == 0, res.stderr
    try:
        before = time.time()
        res = plastic("local", "interrupt", "--cluster", "burst", "--interrupt-notice-seconds", "45", "--port", port)
        assert res.returncode == 0 and "terminates at " in res.stdout, res.stderr
        when = datetime.fromisoformat(res.stdout.split("terminates at ", 1)[1].strip().replace("Z", "+00:00"))
        assert before + 44 <= when.timestamp() <= time.time() + 46
    finally:
        down = plastic("local", "down", "--port", port, "--workdir", workdir)
    assert down.returncode == 0, down.stderr
