"""`plastic imds serve|interrupt` and `plastic spot-run`: spot machines outside the local cluster.

`imds serve` is the instance-metadata emulator of one spot agent (plastic.local.imds_server),
`imds interrupt` schedules its interruption, and `spot-run -- CMD` runs the agent until that
interruption takes the machine (plastic.watch.spot_run).  The compose cluster runs all three for
each of its spot agents.  Bad options: one line, exit 2.
"""

from __future__ import annotations

import json
import sys

import click

from plastic.cli.options import URL, Seconds, notice_seconds_option
from plastic.cli.watch import imds_url_value, setup_logging
from plastic.core.errors import InputError


@click.group("imds", short_help="Emulate a spot instance's metadata service (IMDS).")
def imds_group() -> None:
    """An EC2 instance-metadata emulator for a spot agent, and its interruptions."""


@imds_group.command("serve", short_help="Serve IMDSv2 for one spot instance.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), required=True, help="Port to listen on.")
@click.option("--instance-id", required=True, help="The instance id it reports (the agent's instance_id "
                                                   "attribute, so notices find the agent).")
@click.option("--instance-type", default="c5.large", show_default=True, help="The instance type it reports.")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
def imds_serve(host: str, port: int, instance_id: str, instance_type: str, verbose: int) -> None:
    """Serve IMDSv2 for one spot instance, with POST /plastic/interrupt to schedule its interruption."""
    from plastic.local.imds_server import serve

    if not instance_id.strip() or any(c.isspace() for c in instance_id):
        raise InputError(f"not an instance id: {instance_id!r}", source="--instance-id")
    setup_logging(verbose)
    try:
        serve(host, port, instance_id, instance_type)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", source="--port") from None


@imds_group.command("interrupt", short_help="Schedule a spot interruption on an IMDS emulator.")
@click.argument("url", metavar=URL)
@notice_seconds_option("Warning the interruption gives: the instance-action time is this long from now.")
@click.option("--rebalance-only", is_flag=True, help="Only a rebalance recommendation, no termination.")
def imds_interrupt(url: str, notice_seconds: float, rebalance_only: bool) -> None:
    """Schedule a spot interruption on the emulator at URL (`plastic imds serve`)."""
    import httpx

    base = imds_url_value(url, "URL")
    try:
        resp = httpx.post(base.rstrip("/") + "/plastic/interrupt", timeout=10,
                          json={"notice_seconds": notice_seconds, "rebalance_only": rebalance_only})
    except httpx.HTTPError as exc:
        raise InputError(f"no answer from {base}: {exc or type(exc).__name__}", source="URL") from None
    if resp.status_code != 200:
        raise InputError(f"{base} refused: HTTP {resp.status_code} {resp.text[:200]}", source="URL")
    click.echo(json.dumps(resp.json()))


@click.command("spot-run", context_settings={"ignore_unknown_options": True},
               short_help="Run a spot agent until its interruption takes it.")
@click.option("--imds", "imds", metavar=URL, default="http://169.254.169.254", show_default=True,
              help="The instance metadata service.")
@click.option("--interval", type=Seconds(min_open=True), default=1.0, show_default=True,
              help="Poll IMDS this often.")
@click.option("--restart-seconds", type=Seconds(), default=None,
              help="Start COMMAND again this long after it exits on its own, as a machine's init restarts a "
                   "crashed agent (its executors keep running).  [default: end with COMMAND]")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def spot_run(imds: str, interval: float, restart_seconds: float | None, verbose: int,
             command: tuple[str, ...]) -> None:
    """Run COMMAND (a spot machine's Mesos agent) and kill it when the instance-action time comes,
    as the interruption would take the machine; exits 137 then, else with COMMAND's code."""
    import shutil

    from plastic.watch.imds_client import ImdsClient
    from plastic.watch.spot_run import run_until_interrupted

    base = imds_url_value(imds)
    if shutil.which(command[0]) is None:
        raise InputError(f"no such command: {command[0]!r}", source="COMMAND")
    setup_logging(verbose)
    client = ImdsClient(base)
    try:
        sys.exit(run_until_interrupted(command, client, interval_s=interval, restart_delay_s=restart_seconds))
    finally:
        client.close()
