"""`plastic cloud up | status | down`: a plan's hybrid cloud on EC2 (plastic.aws.cloud).

boto3's own configuration applies: the credentials chain, AWS_PROFILE, AWS_REGION and
AWS_ENDPOINT_URL (the tests point it at moto).  boto3 is imported inside the commands.
"""

from __future__ import annotations

import json
import time
from typing import Any

import click

from plastic.cli.options import URL, Seconds, catalog_option
from plastic.compose import AGENT_IMAGE


def _catalog(path: str | None):
    from plastic.catalogs import load_catalog

    return load_catalog(path)


@click.group("cloud", context_settings={"help_option_names": ["-h", "--help"]},
             short_help="Create, list and remove a plan's hybrid cloud on EC2.")
def cloud_group() -> None:
    """A plan's hybrid cloud on EC2: create it, list it, remove it (everything tagged plastic:run=ID)."""


@cloud_group.command("up", short_help="Create the plan's clusters on EC2.")
@click.argument("plan_path", metavar="PLAN.json")
@click.option("--run-id", required=True, help="Names and tags everything created (letters, digits, '-').")
@click.option("--region", help="AWS region (default: AWS_REGION / the AWS config).")
@click.option("--subnet", help="Subnet for the instances (default: the region's default VPC).")
@click.option("--key-name", help="EC2 key pair for SSH to the instances.")
@click.option("--image-id", required=True, help="AMI of the instances (Debian 12 or any Linux with Docker).")
@click.option("--instance-profile", help="IAM instance profile of the instances.")
@click.option("--master", metavar=URL, default="zk://127.0.0.1:2181/mesos", show_default=True,
              help="The Mesos master the agents join (host:port or zk://...).")
@click.option("--redis", "redis_url", metavar=URL, default="redis://127.0.0.1:6379/0", show_default=True,
              help="The run's Redis, where spot agents' watchers publish notices (rediss://... for TLS).")
@click.option("--redis-ca", "redis_ca", type=click.Path(dir_okay=False),
              help="CA certificate (PEM) of a rediss:// Redis; it is written on each spot instance for its watcher.")
@click.option("--agent-image", default=AGENT_IMAGE, show_default=True,
              help="Docker image of the Mesos agent (deploy/mesos/Dockerfile), pullable by the instances.")
@catalog_option("Instance catalog (default: the embedded EC2 us-east-1 catalog).")
@click.option("--dry-run", is_flag=True, help="Print the API calls up would make; make none.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def cloud_up(plan_path: str, run_id: str, region: str | None, subnet: str | None, key_name: str | None,
             image_id: str, instance_profile: str | None, master: str, redis_url: str, redis_ca: str | None,
             agent_image: str, catalog_path: str | None, dry_run: bool, fmt: str) -> None:
    """Create the plan's clusters on EC2 (what the run already has is not created again)."""
    from plastic.aws import cloud
    from plastic.aws.ec2_cloud import Aws, NodeSettings, check_run_id
    from plastic.cli.redis_opts import redis_url as checked_url

    check_run_id(run_id)
    redis_url = checked_url(redis_url, redis_ca) or redis_url
    catalog = _catalog(catalog_path)
    orders = cloud.read_orders(plan_path, catalog)
    aws = Aws.connect(region, dry_run=dry_run)
    settings = NodeSettings(image_id=image_id, master=master, redis=redis_url, agent_image=agent_image,
                            key_name=key_name, instance_profile=instance_profile, subnet=subnet)
    t0 = time.monotonic()
    res = cloud.up(aws, run_id, orders, catalog, settings)
    if dry_run:
        for service, op, params in aws.calls:
            click.echo(f"{service}:{op} {json.dumps(_shown(params), sort_keys=True, default=str)}")
        click.echo(f"plastic cloud up --dry-run: {len(aws.calls)} call(s) would be made; none was", err=True)
        return
    if fmt == "json":
        click.echo(json.dumps({**res.__dict__, "seconds": time.monotonic() - t0}, indent=2, default=str))
        return
    for line in res.created:
        click.echo(f"created {line}")
    for o in orders:
        before = res.already.get(o.cluster, 0)
        got = res.obtained.get(o.cluster, {})
        asked = res.asked.get(o.cluster, 0)
        obtained = ", ".join(f"{n} {t}" for t, n in sorted(got.items())) or "none"
        line = f"cluster {o.cluster}: planned {o.count} {o.instance_type} {o.market}"
        line += f"; there already {before}" if before else ""
        line += f"; asked {asked}, obtained {obtained}" if asked else "; nothing to create"
        for reason in res.refused.get(o.cluster, []):
            line += f"; refused: {reason}"
        click.echo(line)
    if res.queue_url:
        click.echo(f"spot events: plastic sqs-watch --queue-url {res.queue_url} --region {res.region}")
    click.echo(f"plastic cloud up: {len(aws.calls)} API call(s) in {time.monotonic() - t0:.1f} s", err=True)


@cloud_group.command("status", short_help="List the run's instances and their prices.")
@click.argument("run_id", metavar="RUN_ID")
@click.option("--region", help="AWS region (default: AWS_REGION / the AWS config).")
@catalog_option("Instance catalog for the prices (default: the embedded EC2 us-east-1 catalog).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def cloud_status(run_id: str, region: str | None, catalog_path: str | None, fmt: str) -> None:
    """The run's instances: cluster, type, market, state, since, $/h."""
    from plastic.aws import cloud
    from plastic.aws.ec2_cloud import Aws, check_run_id

    check_run_id(run_id)
    rows = cloud.status(Aws.connect(region), run_id, _catalog(catalog_path))
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no instance is tagged plastic:run={run_id}")
        return
    click.echo(f"{'instance':<21} {'cluster':<12} {'type':<12} {'market':<10} {'state':<14} {'since (UTC)':<20} $/h")
    for r in rows:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["since"])) if r["since"] else "?"
        price = f"{r['usd_per_hour']:.4f}" if r["usd_per_hour"] is not None else "?"
        click.echo(f"{r['instance_id']:<21} {r['cluster']:<12} {r['instance_type']:<12} {r['market']:<10} "
                   f"{r['state']:<14} {since:<20} {price}")
    live = [r for r in rows if r["state"] in ("pending", "running") and r["usd_per_hour"] is not None]
    click.echo(f"{len(live)} live instance(s), {sum(r['usd_per_hour'] for r in live):.4f} $/h")


@cloud_group.command("down", short_help="Remove everything tagged with the run.")
@click.argument("run_id", metavar="RUN_ID")
@click.option("--region", help="AWS region (default: AWS_REGION / the AWS config).")
@click.option("--wait-seconds", type=Seconds(), default=600.0, show_default=True,
              help="How long to wait for instances to terminate before removing their security group.")
def cloud_down(run_id: str, region: str | None, wait_seconds: float) -> None:
    """Remove every resource tagged with the run (instances, launch templates, the security group, the
    spot-events rule and queue, the S3 job store a failed run kept, every object in it); running it again
    removes nothing more."""
    from plastic.aws import cloud
    from plastic.aws.ec2_cloud import Aws, check_run_id

    check_run_id(run_id)
    aws = Aws.connect(region)
    t0 = time.monotonic()
    removed = cloud.down(aws, run_id, wait_s=wait_seconds)
    for line in removed:
        click.echo(f"removed {line}")
    if not removed:
        click.echo(f"nothing is tagged plastic:run={run_id}")
    click.echo(f"plastic cloud down: {len(aws.calls)} API call(s) in {time.monotonic() - t0:.1f} s", err=True)


def _shown(value: Any) -> Any:
    """A call's parameters for printing: user data (it holds the Redis URL, password and all) as its size."""
    if isinstance(value, dict):
        return {k: (f"<{len(v)} characters of base64, not shown>" if k == "UserData" and isinstance(v, str)
                    else _shown(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value
