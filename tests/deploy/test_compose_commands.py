"""Every `plastic ...` command that docker-compose.yml runs is one today's command line accepts: an
option renamed or retyped in plastic/cli would otherwise break the compose cluster only when Docker
runs it (`make test-compose`)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
import yaml

from plastic.cli.group import cli

REPO = Path(__file__).resolve().parents[2]
SERVICES = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
DEFAULTED = re.compile(r"\$\{[A-Z_]+:-([^}]*)\}")  # ${NAME:-default}: what Compose puts there unset


def plastic_commands() -> dict[str, list[str]]:
    out = {}
    for name, service in SERVICES.items():
        entry = service.get("entrypoint") or []
        words = ([entry] if isinstance(entry, str) else list(entry)) + list(service.get("command") or [])
        if words and Path(words[0]).name == "plastic":
            out[name] = [DEFAULTED.sub(r"\1", w) for w in words[1:]]
    return out


def test_the_compose_file_runs_plastic_in_the_manager_and_beside_each_spot_agent():
    assert {"manager", "burst-small", "burst-small-imds", "burst-small-watch"} <= set(plastic_commands())


@pytest.mark.parametrize("service", sorted(plastic_commands()))
def test_the_command_parses(service):
    args = [a for a in plastic_commands()[service] if a not in ("-v", "-vv")]
    command: click.Command = cli
    ctx = click.Context(cli)
    while isinstance(command, click.Group):
        name, args = args[0], args[1:]
        command = command.get_command(ctx, name)
        assert command is not None, f"{service}: no command {name!r}"
        ctx = click.Context(command, parent=ctx)
    command.make_context(command.name, list(args), parent=ctx.parent)
