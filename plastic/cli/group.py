"""The `plastic` group: every command of plastic.cli registered on it, each loaded when it is asked for.

A command's module is imported only when that command runs (or when `plastic --help` lists them all),
so `plastic plan TRACE` does not pay for the local cluster's, the cloud's or the service's imports.
"""

from __future__ import annotations

import importlib
import logging
import sys

import click

# command name -> "module:attribute" of its click command
COMMANDS = {
    "plan": "plastic.cli.plan:plan", "inspect": "plastic.cli.plan:inspect", "lower": "plastic.cli.lower:lower",
    "run": "plastic.cli.run:run", "serve": "plastic.cli.service:serve", "submit": "plastic.cli.service:submit",
    "status": "plastic.cli.service:status", "logs": "plastic.cli.service:logs", "report": "plastic.cli.report:report",
    "local": "plastic.cli.local:local_group", "cloud": "plastic.cli.cloud:cloud_group",
    "agent-watch": "plastic.cli.watch:agent_watch", "sqs-watch": "plastic.cli.aws:sqs_watch",
    "sqs-setup": "plastic.cli.aws:sqs_setup", "imds": "plastic.cli.imds:imds_group",
    "spot-run": "plastic.cli.imds:spot_run", "executor": "plastic.cli.executor:executor",
}


class LazyGroup(click.Group):
    """A click group whose commands are imported on first use (COMMANDS)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, _, attribute = COMMANDS[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            if command.name != cmd_name:
                raise RuntimeError(f"{COMMANDS[cmd_name]} is the command {command.name!r}, not {cmd_name!r}")
            self.add_command(command)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.version_option(package_name="plastic")
def cli(verbose: int) -> None:
    """plastic: size a hybrid cloud of on-demand and spot nodes for annotated workflows."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
