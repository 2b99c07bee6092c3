"""The `plastic` group: every command of plastic.cli registered on it."""

from __future__ import annotations

import logging
import sys

import click

from plastic.cli.aws import sqs_setup, sqs_watch
from plastic.cli.cloud import cloud_group
from plastic.cli.imds import imds_group, spot_run
from plastic.cli.local import local_group
from plastic.cli.lower import lower
from plastic.cli.plan import inspect, plan
from plastic.cli.report import report
from plastic.cli.run import run
from plastic.cli.service import logs, serve, status, submit
from plastic.cli.watch import agent_watch


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.version_option(package_name="plastic")
def cli(verbose: int) -> None:
    """plastic: size a hybrid cloud of on-demand and spot nodes for annotated workflows."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


for _command in (plan, inspect, local_group, run, lower, serve, submit, status, logs, report, agent_watch, sqs_watch,
                 sqs_setup, imds_group, spot_run, cloud_group):
    cli.add_command(_command)
