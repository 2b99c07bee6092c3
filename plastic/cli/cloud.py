"""`plastic cloud up | status | down`: a plan's hybrid cloud on EC2 (plastic.aws.cloud).

boto3's own configuration applies: the credentials chain, AWS_PROFILE, AWS_REGION and
AWS_ENDPOINT_URL (the tests point it at moto).  boto3 is imported inside the commands.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
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
              help="Docker image of the Mesos agent (deploy/plastic/Dockerfile, target agent), pullable by the "
                   "instances (default with --registry: REGISTRY/plastic/agent:latest).")
@click.option("--control-plane", is_flag=True,
              help="Also create the run's control plane: one on-demand instance running ZooKeeper, the Mesos master, "
                   "Redis (password, TLS, AOF on its own volume) and plastic serve; the agents join it (not with "
                   "--master or --redis).")
@click.option("--control-plane-type", default="m5.large", show_default=True, help="The control plane's instance type.")
@click.option("--registry", metavar="REGISTRY",
              help="Where the instances pull the project's images (REGISTRY/plastic/agent:latest and the control "
                   "plane's; deploy/aws/push-images.sh prints it).")
@click.option("--allow-from", multiple=True, metavar="CIDR",
              help="With --control-plane: open its Redis (TLS, password) to this network, such as your address /32, "
                   "so that plastic submit, status and report reach it from your machine (repeatable).")
@catalog_option("Instance catalog (default: the embedded EC2 us-east-1 catalog).")
@click.option("--dry-run", is_flag=True, help="Print the API calls up would make; make none.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def cloud_up(ctx: click.Context, plan_path: str, run_id: str, region: str | None, subnet: str | None,
             key_name: str | None, image_id: str, instance_profile: str | None, master: str, redis_url: str,
             redis_ca: str | None, agent_image: str, control_plane: bool, control_plane_type: str, registry: str | None,
             allow_from: tuple[str, ...], catalog_path: str | None, dry_run: bool, fmt: str) -> None:
    """Create the plan's clusters on EC2 (what the run already has is not created again)."""
    from plastic.aws import cloud
    from plastic.aws.ec2_cloud import Aws, NodeSettings, check_run_id
    from plastic.cli.redis_opts import redis_url as checked_url

    check_run_id(run_id)
    plane = _control_plane_settings(ctx, control_plane, control_plane_type, registry, allow_from)
    redis_url = checked_url(redis_url, redis_ca) or redis_url
    catalog = _catalog(catalog_path)
    orders = cloud.read_orders(plan_path, catalog)
    if plane is not None and catalog.by_name(control_plane_type) is None:
        raise click.BadParameter(f"{control_plane_type}: not in the catalog", param_hint="--control-plane-type")
    aws = Aws.connect(region, dry_run=dry_run)
    if registry and ctx.get_parameter_source("agent_image") is click.core.ParameterSource.DEFAULT:
        agent_image = f"{registry.rstrip('/')}/{AGENT_IMAGE}"
    settings = NodeSettings(image_id=image_id, master=master, redis=redis_url, agent_image=agent_image,
                            key_name=key_name, instance_profile=instance_profile, subnet=subnet)
    t0 = time.monotonic()
    with _secrets(run_id, plane is not None, dry_run) as secrets:
        res = cloud.up(aws, run_id, orders, catalog, settings, control_plane=plane, secrets=secrets)
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
    if res.control_plane is not None:
        _show_control_plane(run_id, res.control_plane, secrets, bool(allow_from))
    click.echo(f"plastic cloud up: {len(aws.calls)} API call(s) in {time.monotonic() - t0:.1f} s", err=True)


def _control_plane_settings(ctx: click.Context, wanted: bool, instance_type: str, registry: str | None,
                            allow_from: tuple[str, ...]) -> Any:
    """--control-plane's settings, or None; its options without it, or --master / --redis with it: UsageError."""
    from plastic.aws.control_plane import ControlPlaneSettings, check_cidrs

    given = lambda name: ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT  # noqa: E731
    if not wanted:
        extra = [flag for name, flag in (("allow_from", "--allow-from"), ("control_plane_type", "--control-plane-type"))
                 if given(name)]
        if extra:
            raise click.UsageError(f"{', '.join(extra)}: options of --control-plane")
        return None
    clash = [flag for name, flag in (("master", "--master"), ("redis_url", "--redis"), ("redis_ca", "--redis-ca"))
             if given(name)]
    if clash:
        raise click.UsageError(f"--control-plane: the agents join the control plane, not {', '.join(clash)}")
    return ControlPlaneSettings(instance_type=instance_type, registry=registry, allow_from=check_cidrs(allow_from))


@contextlib.contextmanager
def _secrets(run_id: str, wanted: bool, dry_run: bool):
    """The control plane's secrets (plastic.aws.control_plane_secrets): the run's, or a dry run's thrown away."""
    from plastic.aws import control_plane_secrets

    if not wanted:
        yield None
    elif not dry_run:
        yield control_plane_secrets.load_or_make(run_id)
    else:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="plastic-dry-run-") as tmp:
            yield control_plane_secrets.make_in(Path(tmp) / run_id)


def _show_control_plane(run_id: str, plane: Any, secrets: Any, reachable: bool) -> None:
    from plastic.store.urls import redact

    click.echo(f"control plane {plane.instance_id}: private {plane.private_ip}, public {plane.public_ip or '-'}; "
               f"master {plane.master_url()}; Redis {redact(plane.redis_url(secrets))}")
    click.echo(f"its password and CA are in {secrets.directory} (this machine only)")
    if reachable:
        click.echo(f"from this machine: export PLASTIC_REDIS_URL=\"$(plastic cloud redis-url {run_id})\", then "
                   f"plastic submit / status / logs / report")
    else:
        click.echo("its Redis is open to the agents only: give --allow-from YOUR.ADDRESS/32 to reach it from here")


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
    _status_control_plane(run_id, region)


def _status_control_plane(run_id: str, region: str | None) -> None:
    """The control plane's endpoints and health, when the run has one."""
    from plastic.aws import control_plane
    from plastic.aws.control_plane_secrets import load_or_make, secrets_dir
    from plastic.aws.ec2_cloud import Aws
    from plastic.store.urls import redact

    plane = control_plane.find(Aws.connect(region), run_id)
    if plane is None:
        return
    click.echo(f"control plane {plane.instance_id} ({plane.state}): Mesos master http://{plane.private_ip}:"
               f"{control_plane.MESOS_PORT} (ZooKeeper {plane.master_url()}), from the agents' network")
    if not secrets_dir(run_id).is_dir():
        click.echo(f"  its secrets are not on this machine ({secrets_dir(run_id)}): Redis not checked")
        return
    url = control_plane.reach_url(plane, load_or_make(run_id))
    click.echo(f"  Redis {redact(url)}: {control_plane.health(url)}")


@cloud_group.command("redis-url", short_help="Print the URL of the run's control plane's Redis.")
@click.argument("run_id", metavar="RUN_ID")
@click.option("--region", help="AWS region (default: AWS_REGION / the AWS config).")
@click.option("--private", is_flag=True, help="Its private address (through a VPN or a tunnel), not its public one.")
def cloud_redis_url(run_id: str, region: str | None, private: bool) -> None:
    """The control plane's Redis URL, password and CA file included, for --redis or PLASTIC_REDIS_URL:
    export PLASTIC_REDIS_URL="$(plastic cloud redis-url RUN_ID)"."""
    from plastic.aws.ec2_cloud import Aws, check_run_id

    check_run_id(run_id)
    click.echo(_plane_url(Aws.connect(region), run_id, private=private))


def _plane_url(aws: Any, run_id: str, *, private: bool = False, field: str | None = None, hint: str = "") -> str:
    """The URL of the run's live control plane's Redis from this machine (plastic.aws.control_plane.reach_url);
    InputError when the run has none, or when its secrets are not on this machine."""
    from plastic.aws import control_plane
    from plastic.aws.control_plane_secrets import load_or_make, secrets_dir
    from plastic.core.errors import InputError

    plane = control_plane.find(aws, run_id)
    if plane is None:
        raise InputError("the run has no live control plane (plastic cloud up --control-plane)", source=run_id,
                         field=field)
    if not secrets_dir(run_id).is_dir():
        raise InputError(f"its password and CA are not on this machine{hint}", source=str(secrets_dir(run_id)),
                         field=field)
    return control_plane.reach_url(plane, load_or_make(run_id), private=private)


@cloud_group.command("down", short_help="Remove everything tagged with the run.")
@click.argument("run_id", metavar="RUN_ID")
@click.option("--region", help="AWS region (default: AWS_REGION / the AWS config).")
@click.option("--wait-seconds", type=Seconds(), default=600.0, show_default=True,
              help="How long to wait for instances to terminate before removing their security group.")
@click.option("--save-to", type=click.Path(file_okay=False, path_type=Path),
              help="First save the control plane's Redis (every run's records) into DIR/redis-dump.jsonl; "
                   "nothing is removed when it cannot be saved.")
@click.option("--redis", "redis_url", metavar=URL,
              help="With --save-to: reach the control plane's Redis at this URL (default: plastic cloud redis-url).")
def cloud_down(run_id: str, region: str | None, wait_seconds: float, save_to: Path | None,
               redis_url: str | None) -> None:
    """Remove every resource tagged with the run (instances, launch templates, the security group, the
    spot-events rule and queue, the S3 job store a failed run kept, every object in it); running it again
    removes nothing more."""
    from plastic.aws import cloud
    from plastic.aws.ec2_cloud import Aws, check_run_id

    check_run_id(run_id)
    aws = Aws.connect(region)
    t0 = time.monotonic()
    if save_to is not None:
        _save_control_plane(aws, run_id, save_to, redis_url)
    removed = cloud.down(aws, run_id, wait_s=wait_seconds)
    for line in removed:
        click.echo(f"removed {line}")
    if not removed:
        click.echo(f"nothing is tagged plastic:run={run_id}")
    click.echo(f"plastic cloud down: {len(aws.calls)} API call(s) in {time.monotonic() - t0:.1f} s", err=True)


def _save_control_plane(aws: Any, run_id: str, save_to: Path, redis_url: str | None) -> None:
    """The control plane's Redis saved before anything goes (InputError, nothing removed, when it cannot be)."""
    from plastic.aws import control_plane

    if redis_url is None:
        redis_url = _plane_url(aws, run_id, field="--save-to", hint=": give --redis")
    save_to.mkdir(parents=True, exist_ok=True)
    count = control_plane.save_redis(redis_url, save_to / "redis-dump.jsonl")
    click.echo(f"saved {count} Redis key(s) into {save_to / 'redis-dump.jsonl'}")
    runs = _save_run_dirs(redis_url, save_to / "runs")
    click.echo(f"saved {runs} ended run(s)' directories into {save_to / 'runs'}")


def _save_run_dirs(redis_url: str, into: Path) -> int:
    """Each ended run's directory that the service kept in its Redis (plastic.service.archive), into
    INTO/RUN_ID; returns how many."""
    from plastic.service.archive import unpack_run_dir
    from plastic.store import Store
    from plastic.store.embedded import open_url

    client = open_url(redis_url, option="--save-to")
    try:
        store = Store(client)
        saved = 0
        for run in store.list_runs():
            archived = store.run_archive(run.id)
            if archived is not None:
                unpack_run_dir(archived, into / run.id)
                saved += 1
        return saved
    finally:
        client.close()


def _shown(value: Any) -> Any:
    """A call's parameters for printing: user data (it holds the Redis URL, password and all) as its size."""
    if isinstance(value, dict):
        return {k: (f"<{len(v)} characters of base64, not shown>" if k == "UserData" and isinstance(v, str)
                    else _shown(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value
