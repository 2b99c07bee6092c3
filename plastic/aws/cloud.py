"""`plastic cloud up | status | down`: a plan's hybrid cloud on EC2, created, listed and torn down.

up: checks everything first (the plan, the region, the credentials, the instance types, the subnet or
a default VPC; a bad one is one line and nothing is created), then makes the run's security group,
one launch template per cluster, the EventBridge rule and SQS queue that `plastic sqs-watch` reads,
and one instant EC2 Fleet per cluster for the instances it does not have yet (counted by tag, so a
repeated up creates nothing twice).  down: everything tagged with the run, found by tag, removed in
dependency order, the run's S3 job store too (plastic.aws.job_store); idempotent.  A dry run prints
the calls up would make and makes none.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from plastic.aws import control_plane, job_store
from plastic.aws import ec2_cloud as ec2
from plastic.aws.control_plane import CLUSTER as CONTROL_PLANE
from plastic.aws.ec2_cloud import Aws, NodeSettings
from plastic.core.errors import InputError
from plastic.core.model import Catalog, Market
from plastic.core.naming import cluster_name_problem
from plastic.core.planning.fleet import ClusterOrder, alternatives, still_missing
from plastic.core.planning.plan import SCHEMA
from plastic.fileio import read_plan_document

log = logging.getLogger(__name__)


def read_orders(path: str, catalog: Catalog) -> list[ClusterOrder]:
    """The plan's clusters as orders; InputError naming the file and field on anything wrong."""
    doc = read_plan_document(path)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise InputError(f"not a {SCHEMA} plan (schema {got!r})", source=path, field="schema")
    clusters = doc.get("clusters")
    if not isinstance(clusters, list) or not clusters:
        raise InputError("the plan has no clusters", source=path, field="clusters")
    orders = []
    for i, c in enumerate(clusters):
        where = f"clusters[{i}]"
        try:
            name, itype, market, count = str(c["name"]), str(c["instance_type"]), Market(c["market"]), int(c["count"])
        except (KeyError, TypeError, ValueError) as error:
            raise InputError(f"a cluster needs name, instance_type, market (spot / on-demand) and count ({error})",
                             source=path, field=where) from None
        known = catalog.by_name(itype)
        if known is None:
            raise InputError(f"unknown instance type {itype!r} (not in the catalog)", source=path,
                             field=f"{where}.instance_type")
        price = known.usd_per_hour(market)
        if price is None:
            raise InputError(f"{itype} has no {market} price in the catalog", source=path, field=f"{where}.market")
        if (problem := cluster_name_problem(name)) is not None:
            raise InputError(problem, source=path, field=f"{where}.name")
        if count < 0:
            raise InputError(f"count {count}: a cluster's count is >= 0", source=path, field=f"{where}.count")
        orders.append(ClusterOrder(name, itype, market, count, price))
    return orders


@dataclass
class UpResult:
    run_id: str
    region: str
    group_id: str
    created: list[str] = field(default_factory=list)  # "security group sg-...", "launch template ..."
    asked: dict[str, int] = field(default_factory=dict)  # cluster -> instances asked for now
    obtained: dict[str, dict[str, int]] = field(default_factory=dict)  # cluster -> type -> count
    refused: dict[str, list[str]] = field(default_factory=dict)  # cluster -> reasons
    already: dict[str, int] = field(default_factory=dict)  # cluster -> live instances there before
    queue_url: str | None = None
    calls: list[str] = field(default_factory=list)
    control_plane: Any = None  # plastic.aws.control_plane.ControlPlane, with --control-plane


def up(aws: Aws, run_id: str, orders: Sequence[ClusterOrder], catalog: Catalog, settings: NodeSettings, *,
       control_plane: Any = None, secrets: Any = None) -> UpResult:
    """``control_plane`` (plastic.aws.control_plane.ControlPlaneSettings, with its ``secrets``): the run's
    control plane is made first, and the agents join it instead of ``settings``' master and Redis."""
    ec2.check_run_id(run_id)
    vpc = ec2.vpc_of(aws, settings.subnet)  # before anything is created: a bad subnet creates nothing
    _check_image(aws, settings.image_id)
    group_id, made = ec2.ensure_group(aws, run_id, vpc)
    res = UpResult(run_id, aws.region, group_id)
    if made:
        res.created.append(f"security group {group_id}")
    if control_plane is not None:
        settings = _with_control_plane(aws, run_id, group_id, settings, control_plane, secrets, res)
    res.queue_url = _spot_events(aws, run_id, res)
    live = [i for i in ec2.run_instances(aws, run_id)
            if i.aws_state not in ec2.GONE_STATES and i.cluster != CONTROL_PLANE]
    for i in live:
        res.already[i.cluster] = res.already.get(i.cluster, 0) + 1
    for order in still_missing(orders, res.already):
        template_id, made = ec2.ensure_template(aws, run_id, order.cluster, order.instance_type, order.market,
                                                group_id, settings)
        if made:
            res.created.append(f"launch template {ec2.template_name(run_id, order.cluster)}")
        planned = catalog.by_name(order.instance_type)
        alts = alternatives(planned, catalog, order.market) if planned is not None else ()
        token = f"{run_id}-{order.cluster}-{res.already.get(order.cluster, 0)}-{order.count}"
        answer = ec2.create_fleet(aws, run_id=run_id, cluster=order.cluster, template_id=template_id,
                                  instance_type=order.instance_type, alternatives=alts, market=order.market,
                                  count=order.count, token=token, subnet=settings.subnet)
        res.asked[order.cluster] = order.count
        res.obtained[order.cluster] = dict(answer.obtained)
        res.refused[order.cluster] = [r.reason for r in answer.refused]
    res.calls = aws.operations()
    return res


def _with_control_plane(aws: Aws, run_id: str, group_id: str, settings: NodeSettings, plane_settings: Any,
                        secrets: Any, res: UpResult) -> NodeSettings:
    """The control plane found or made; the agents' settings pointed at it (its private address)."""
    import dataclasses

    answer = control_plane.ensure(aws, run_id, group_id, plane_settings, secrets, image_id=settings.image_id,
                                  subnet=settings.subnet, key_name=settings.key_name,
                                  instance_profile=settings.instance_profile)
    res.created += answer.created
    res.control_plane = plane = answer.plane
    if plane.private_ip is None:  # a dry run: no instance, no address
        return settings
    return dataclasses.replace(settings, master=plane.master_url(), redis=plane.redis_url(secrets))


def _check_image(aws: Aws, image_id: str) -> None:
    if aws.dry_run:
        return
    try:
        found = aws.call("ec2", "describe_images", ImageIds=[image_id])["Images"]
    except Exception as exc:
        if ec2.is_client_error(exc):
            raise InputError(f"no such image ({ec2.describe_error(exc)})", source=image_id, field="--image-id") from None
        raise
    if not found:
        raise InputError("no such image in this region", source=image_id, field="--image-id")


def _spot_events(aws: Aws, run_id: str, res: UpResult) -> str | None:
    url, created = spot_events(aws, run_id)
    res.created += created
    return url


def spot_events(aws: Aws, run_id: str) -> tuple[str | None, list[str]]:
    """The EventBridge rule -> SQS queue of the run's spot events (plastic sqs-watch reads it), tagged;
    found or made.  Returns (queue URL, what was created)."""
    from plastic.aws.eventbridge import setup_spot_events

    n = ec2.names(run_id)
    tags = {t["Key"]: t["Value"] for t in ec2.tag_list(run_id)}
    if aws.dry_run:
        aws.call("sqs", "create_queue", QueueName=n["queue"], tags=tags)
        aws.call("events", "put_rule", Name=n["rule"], Tags=ec2.tag_list(run_id))
        aws.call("events", "put_targets", Rule=n["rule"], Targets=[{"Id": "plastic-sqs", "Arn": "(the queue)"}])
        return None, []
    had_rule = any(r["Name"] == n["rule"] for r in aws.call("events", "list_rules", NamePrefix=n["rule"])["Rules"])
    done = setup_spot_events(n["queue"], sqs=aws.client("sqs"), events=aws.client("events"), rule_name=n["rule"])
    aws.call("sqs", "tag_queue", QueueUrl=done.queue_url, Tags=tags)
    aws.call("events", "tag_resource", ResourceARN=done.rule_arn, Tags=ec2.tag_list(run_id))
    created = []
    if done.created_queue:
        created.append(f"SQS queue {n['queue']}")
    if not had_rule:
        created.append(f"EventBridge rule {n['rule']}")
    return done.queue_url, created


# ------------------------------------------------------------------ status


def status(aws: Aws, run_id: str, catalog: Catalog) -> list[dict[str, Any]]:
    ec2.check_run_id(run_id)
    rows = []
    for i in ec2.run_instances(aws, run_id):
        t = catalog.by_name(i.instance_type)
        price = t.usd_per_hour(i.market) if t is not None else None
        rows.append({"instance_id": i.instance_id, "cluster": i.cluster, "instance_type": i.instance_type,
                     "market": str(i.market), "state": i.aws_state, "since": i.launched_at,
                     "usd_per_hour": price, "private_ip": i.private_ip})
    return rows


# ------------------------------------------------------------------ down


def down(aws: Aws, run_id: str, *, wait_s: float = 600.0, sleep: Callable[[float], None] = time.sleep,
         job_stores: bool = True) -> list[str]:
    """Remove everything tagged with the run, its S3 job store too unless ``job_stores`` is False (a run
    that ended without success keeps it for --resume); returns what was removed, one line each."""
    ec2.check_run_id(run_id)
    removed: list[str] = []
    live = [i.instance_id for i in ec2.run_instances(aws, run_id) if i.aws_state != "terminated"]
    for iid in ec2.terminate(aws, live):
        removed.append(f"instance {iid}")
    if live:  # a group cannot go while instances in it still run
        deadline = time.monotonic() + wait_s
        while any(i.aws_state != "terminated" for i in ec2.run_instances(aws, run_id)
                  if i.instance_id in set(live)) and time.monotonic() < deadline:
            sleep(5.0)
    templates = aws.call("ec2", "describe_launch_templates", Filters=ec2.run_filter(run_id)).get("LaunchTemplates", [])
    for t in templates:
        aws.call("ec2", "delete_launch_template", LaunchTemplateId=t["LaunchTemplateId"])
        removed.append(f"launch template {t['LaunchTemplateName']}")
    removed += _remove_spot_events(aws, run_id)
    if job_stores:
        removed += job_store.remove(aws, run_id)
    groups = aws.call("ec2", "describe_security_groups", Filters=ec2.run_filter(run_id)).get("SecurityGroups", [])
    for g in groups:
        _delete_group(aws, g["GroupId"], wait_s, sleep)
        removed.append(f"security group {g['GroupId']}")
    return removed


def _delete_group(aws: Aws, group_id: str, wait_s: float, sleep: Callable[[float], None]) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            aws.call("ec2", "delete_security_group", GroupId=group_id)
            return
        except Exception as exc:
            code = ec2.error_code(exc)
            if code == "InvalidGroup.NotFound":
                return
            if code != "DependencyViolation" or time.monotonic() >= deadline:
                raise ec2.ProviderError(f"cannot delete security group: {ec2.describe_error(exc)}",
                                        source=group_id) from None
            sleep(5.0)  # network interfaces of terminated instances linger a little


def _run_rules(aws: Aws, run_id: str) -> list[dict[str, Any]]:
    """The run's EventBridge rules: by name prefix, kept only when tagged with the run."""
    rules = aws.call("events", "list_rules", NamePrefix=ec2.names(run_id)["rule"]).get("Rules", [])
    return [r for r in rules if any(t["Key"] == ec2.TAG_RUN and t["Value"] == run_id for t in
                                    aws.call("events", "list_tags_for_resource", ResourceARN=r["Arn"]).get("Tags", []))]


def _run_queues(aws: Aws, run_id: str) -> list[str]:
    """The run's SQS queue URLs: by name prefix, kept only when tagged with the run."""
    urls = aws.call("sqs", "list_queues", QueueNamePrefix=ec2.names(run_id)["queue"]).get("QueueUrls", [])
    return [u for u in urls if aws.call("sqs", "list_queue_tags", QueueUrl=u).get("Tags", {}).get(ec2.TAG_RUN) == run_id]


def _remove_spot_events(aws: Aws, run_id: str) -> list[str]:
    removed = []
    for rule in _run_rules(aws, run_id):
        targets = aws.call("events", "list_targets_by_rule", Rule=rule["Name"]).get("Targets", [])
        if targets:
            aws.call("events", "remove_targets", Rule=rule["Name"], Ids=[t["Id"] for t in targets])
        aws.call("events", "delete_rule", Name=rule["Name"])
        removed.append(f"EventBridge rule {rule['Name']}")
    for url in _run_queues(aws, run_id):
        aws.call("sqs", "delete_queue", QueueUrl=url)
        removed.append(f"SQS queue {url.rsplit('/', 1)[-1]}")
    return removed


def leftovers(aws: Aws, run_id: str) -> dict[str, int]:
    """What is still tagged with the run (live instances, templates, groups, rules, queues, job store buckets)."""
    live = [i for i in ec2.run_instances(aws, run_id) if i.aws_state != "terminated"]
    return {"instances": len(live),
            "launch_templates": len(aws.call("ec2", "describe_launch_templates",
                                             Filters=ec2.run_filter(run_id)).get("LaunchTemplates", [])),
            "security_groups": len(aws.call("ec2", "describe_security_groups",
                                            Filters=ec2.run_filter(run_id)).get("SecurityGroups", [])),
            "rules": len(_run_rules(aws, run_id)), "queues": len(_run_queues(aws, run_id)),
            "buckets": len(job_store.run_buckets(aws, run_id))}
