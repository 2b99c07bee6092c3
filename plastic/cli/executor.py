"""`plastic executor`: plastic's Mesos executor, as an agent starts it (plastic.executor)."""

from __future__ import annotations

import logging
import sys

import click

from plastic.cli.options import Seconds
from plastic.core.executor.book import DEFAULT_IDLE_S, DEFAULT_KILL_GRACE_S


@click.command("executor", short_help="Run the tasks a framework places on this agent.")
@click.option("--idle-seconds", type=Seconds(), default=DEFAULT_IDLE_S, show_default=True,
              help="Leave after this long with no task, giving the executor's share back to the cluster.")
@click.option("--kill-grace-seconds", type=Seconds(), default=DEFAULT_KILL_GRACE_S,
              show_default=True, help="SIGTERM to SIGKILL of a killed task whose kill policy names no grace.")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
def executor(idle_seconds: float, kill_grace_seconds: float, verbose: int) -> None:
    """Run the tasks one framework places on this agent (started by the agent, from its environment:
    MESOS_AGENT_ENDPOINT, MESOS_FRAMEWORK_ID, MESOS_EXECUTOR_ID, MESOS_DIRECTORY, ...)."""
    from plastic.executor.shell import main

    logging.basicConfig(level=logging.WARNING - 10 * min(verbose, 2), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    raise SystemExit(main(idle_seconds, kill_grace_seconds))
