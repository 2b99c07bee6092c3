"""The EC2 side of a run's hybrid cloud: names, tags, the AWS calls (recorded, or only printed in a dry
run), the security group, launch templates, EC2 Fleet requests, and finding the run's resources by tag.

Everything created carries the tags ``plastic:run``, ``plastic:cluster`` (where it has one),
``plastic:market`` (instances) and ``plastic:managed-by=plastic``; teardown finds resources by those
tags (and, for the EventBridge rule and the SQS queue, by name prefix checked against their tags),
never by a local list alone.  Capacity errors of a Fleet request come back as data
(plastic.core.elastic.model.CapacityError).  Credentials are boto3's (the default chain, ``AWS_PROFILE``,
``AWS_REGION``, ``AWS_ENDPOINT_URL``); nothing here logs or returns them.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import string
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plastic.aws.session import describe as describe_error
from plastic.aws.session import error_code
from plastic.compose import AGENT_IMAGE
from plastic.core.elastic.model import CapacityError, NodeState
from plastic.core.errors import InputError, ProviderError
from plastic.core.model import Market
from plastic.store.urls import ca_file, set_ca

log = logging.getLogger(__name__)

TAG_RUN, TAG_CLUSTER, TAG_MARKET, TAG_MANAGED = "plastic:run", "plastic:cluster", "plastic:market", "plastic:managed-by"
MANAGED_BY = "plastic"
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,39}$")  # it goes into resource names
USER_DATA = Path(__file__).resolve().parents[2] / "deploy" / "aws" / "user-data.sh.tmpl"
REGISTRY_LOGIN = USER_DATA.with_name("registry-login.sh")  # shell put into the user data and the start script
MESOS_PORTS = ((5050, 5051), (6379, 6379), (31000, 32000))  # master and agent, Redis, the agents' task ports
# Fleet / RunInstances error codes that mean "no capacity of this kind now" (data, not a failure)
CAPACITY_CODES = frozenset({
    "InsufficientInstanceCapacity", "InsufficientCapacity", "MaxSpotInstanceCountExceeded", "InstanceLimitExceeded",
    "VcpuLimitExceeded", "SpotMaxPriceTooLow", "UnfulfillableCapacity", "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity", "MaxSpotFleetRequestCountExceeded", "capacity-not-available",
    "price-too-low", "Unsupported"})
GONE_STATES = frozenset({"shutting-down", "terminated", "stopping", "stopped"})
SPOT_TERMINATION = "Server.SpotInstanceTermination"


def check_run_id(run_id: str) -> str:
    if not RUN_ID.match(run_id or ""):
        raise InputError("a run id is 1-40 letters, digits and '-', starting with a letter or digit",
                         source=run_id, field="--run-id")
    return run_id


def names(run_id: str) -> dict[str, str]:
    base = f"plastic-{run_id}"
    return {"group": base, "queue": f"{base}-spot", "rule": f"{base}-spot", "template": f"{base}-"}


CLIENT_TOKEN_MAX = 64  # EC2's idempotency tokens


def client_token(token: str) -> str:
    """An EC2 idempotency token for ``token``: itself when short enough, else its head and a digest of the
    whole (cutting it alone could give two requests, of two clusters, the same token: EC2 would answer the
    second with the first's instances)."""
    if len(token) <= CLIENT_TOKEN_MAX:
        return token
    digest = hashlib.sha256(token.encode()).hexdigest()[:16]
    return f"{token[:CLIENT_TOKEN_MAX - len(digest) - 1]}-{digest}"


def template_name(run_id: str, cluster: str) -> str:
    return f"plastic-{run_id}-{cluster}"


def tag_list(run_id: str, **more: str) -> list[dict[str, str]]:
    tags = {TAG_RUN: run_id, TAG_MANAGED: MANAGED_BY, **{f"plastic:{k}": v for k, v in more.items()}}
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def tags_of(resource: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags") or resource.get("tags") or []}


def run_filter(run_id: str) -> list[dict[str, Any]]:
    return [{"Name": f"tag:{TAG_RUN}", "Values": [run_id]}, {"Name": f"tag:{TAG_MANAGED}", "Values": [MANAGED_BY]}]


INSTANCE_CA = "/etc/plastic/redis-ca.pem"  # where an instance's watcher finds the TLS server's CA


def instance_redis(url: str) -> tuple[str, bytes]:
    """(the Redis URL as an instance uses it, the CA to write there): a ``rediss://`` URL's CA file
    (``--redis-ca``, a path on this machine) is read here and the URL points at INSTANCE_CA."""
    path = ca_file(url)
    if path is None:
        return url, b""
    try:
        pem = Path(path).read_bytes()
    except OSError as error:
        raise InputError(f"cannot read the CA file: {error.strerror or error}", source=path,
                         field="--redis-ca") from None
    return set_ca(url, INSTANCE_CA), pem


def render_user_data(*, run_id: str, cluster: str, instance_type: str, market: Market, master: str, redis: str,
                     agent_image: str) -> str:
    try:
        text = USER_DATA.read_text(encoding="utf-8")
    except OSError as error:
        raise ProviderError(f"cannot read the user-data template ({error})", source=str(USER_DATA)) from None
    url, ca_pem = instance_redis(redis)
    if any(c in url for c in "\n\r"):
        raise InputError("a Redis URL is one line", field="--redis")
    return string.Template(text).substitute(
        REGISTRY_LOGIN=registry_login_snippet(), RUN_ID=run_id, CLUSTER=cluster, INSTANCE_TYPE=instance_type,
        MARKET=str(market), PREEMPTIBLE="true" if market is Market.SPOT else "false", MASTER=master, REDIS=url,
        REDIS_CA_B64=base64.b64encode(ca_pem).decode(), AGENT_IMAGE=agent_image)


def registry_login_snippet() -> str:
    """The shell function that logs docker in to an ECR registry (deploy/aws/registry-login.sh), as it is."""
    try:
        return REGISTRY_LOGIN.read_text(encoding="utf-8").rstrip("\n")
    except OSError as error:
        raise ProviderError(f"cannot read the registry login ({error})", source=str(REGISTRY_LOGIN)) from None


# ------------------------------------------------------------------ the calls


@dataclass
class Aws:
    """boto3 clients for one region whose every call is recorded as (service, Operation); in a dry run
    no client exists: each call is recorded and answered with nothing."""

    region: str
    dry_run: bool = False
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    _clients: dict[str, Any] = field(default_factory=dict)
    _session: Any = None  # boto3's; each service's client is made at its first call (`client`)
    _lock: threading.Lock = field(default_factory=threading.Lock)  # boto3 makes clients one thread at a time

    @classmethod
    def connect(cls, region: str | None, *, dry_run: bool = False) -> Aws:
        """Checks the region and (unless a dry run) that credentials exist; InputError otherwise."""
        import boto3

        session = boto3.session.Session(region_name=region)
        name = session.region_name
        if not name:
            raise InputError("no AWS region: pass --region (or set AWS_REGION / AWS_DEFAULT_REGION)",
                             field="--region")
        known = set(session.get_available_regions("ec2")) | set(
            session.get_available_regions("ec2", partition_name="aws-cn")) | set(
            session.get_available_regions("ec2", partition_name="aws-us-gov"))
        if name not in known:
            raise InputError("unknown AWS region", source=name, field="--region")
        aws = cls(name, dry_run)
        if not dry_run:
            if session.get_credentials() is None:
                raise InputError("no AWS credentials (set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
                                 "AWS_SECRET_ACCESS_KEY, or run where an instance role applies)")
            aws._session = session
        return aws

    def _recorder(self, service: str):
        def record(model=None, params=None, **_kw):
            if model is not None:
                self.calls.append((service, model.name, dict(params or {})))
        return record

    def client(self, service: str) -> Any:
        """The service's client, made at the first call (with every call recorded)."""
        with self._lock:
            if service not in self._clients:
                from botocore.config import Config

                config = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=10, read_timeout=60)
                client = self._session.client(service, config=config)
                client.meta.events.register("before-call", self._recorder(service))
                self._clients[service] = client
            return self._clients[service]

    def call(self, service: str, method: str, **params: Any) -> dict[str, Any]:
        """``client.method(**params)``; in a dry run: recorded as the operation it would be, answered {}."""
        if self.dry_run:
            op = "".join(part.capitalize() for part in method.split("_"))
            self.calls.append((service, op, params))
            return {}
        return getattr(self.client(service), method)(**params)

    def operations(self) -> list[str]:
        """Every call so far as IAM names it: ``ec2:CreateFleet``."""
        return [f"{service}:{op}" for service, op, _ in self.calls]


def is_client_error(exc: BaseException) -> bool:
    """AWS answered with an error code (a botocore ClientError), as opposed to not answering."""
    return bool(error_code(exc))


# ------------------------------------------------------------------ network


def vpc_of(aws: Aws, subnet: str | None) -> str:
    """The VPC of ``subnet``, else the region's default VPC; InputError when there is neither."""
    if aws.dry_run:
        return "(the subnet's VPC)" if subnet else "(the default VPC)"
    if subnet:
        try:
            found = aws.call("ec2", "describe_subnets", SubnetIds=[subnet])["Subnets"]
        except Exception as exc:
            if is_client_error(exc):
                raise InputError(f"no such subnet ({describe_error(exc)})", source=subnet, field="--subnet") from None
            raise
        return found[0]["VpcId"]
    vpcs = aws.call("ec2", "describe_vpcs", Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"]
    if not vpcs:
        raise InputError(f"{aws.region} has no default VPC: pass --subnet", field="--subnet")
    return vpcs[0]["VpcId"]


def ensure_group(aws: Aws, run_id: str, vpc_id: str) -> tuple[str, bool]:
    """The run's security group (found by tag, else created): Mesos, Redis and the agents' ports open
    to members of the group only; nothing to 0.0.0.0/0.  Returns (group id, created)."""
    found = [] if aws.dry_run else aws.call("ec2", "describe_security_groups",
                                            Filters=run_filter(run_id))["SecurityGroups"]
    if found:
        return found[0]["GroupId"], False
    reply = aws.call("ec2", "create_security_group", GroupName=names(run_id)["group"], VpcId=vpc_id,
                     Description=f"plastic run {run_id}: Mesos, Redis and agent ports inside the group only",
                     TagSpecifications=[{"ResourceType": "security-group", "Tags": tag_list(run_id)}])
    group_id = reply.get("GroupId", "(the new group)")
    aws.call("ec2", "authorize_security_group_ingress", GroupId=group_id, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": lo, "ToPort": hi, "UserIdGroupPairs": [{"GroupId": group_id}]}
        for lo, hi in MESOS_PORTS])
    return group_id, True


# ------------------------------------------------------------------ launch templates and fleets


@dataclass(frozen=True)
class NodeSettings:
    """What every instance of the run starts with."""

    image_id: str
    master: str
    redis: str
    agent_image: str = AGENT_IMAGE  # the compose cluster's agent image (deploy/plastic/Dockerfile, target agent)
    key_name: str | None = None
    instance_profile: str | None = None
    subnet: str | None = None


def ensure_template(aws: Aws, run_id: str, cluster: str, instance_type: str, market: Market, group_id: str,
                    settings: NodeSettings) -> tuple[str, bool]:
    """The cluster's launch template (found by name, else created). Returns (template id, created)."""
    name = template_name(run_id, cluster)
    if not aws.dry_run:
        try:
            found = aws.call("ec2", "describe_launch_templates", LaunchTemplateNames=[name])["LaunchTemplates"]
        except Exception as exc:
            if not is_client_error(exc):
                raise
            found = []  # InvalidLaunchTemplateName.NotFoundException
        if found:
            return found[0]["LaunchTemplateId"], False
    user_data = render_user_data(run_id=run_id, cluster=cluster, instance_type=instance_type, market=market,
                                 master=settings.master, redis=settings.redis, agent_image=settings.agent_image)
    data: dict[str, Any] = {
        "ImageId": settings.image_id, "SecurityGroupIds": [group_id],
        "UserData": base64.b64encode(user_data.encode()).decode(),
        "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled"},  # IMDSv2 only
        "TagSpecifications": [{"ResourceType": "volume", "Tags": tag_list(run_id, cluster=cluster)}],
    }
    if settings.key_name:
        data["KeyName"] = settings.key_name
    if settings.instance_profile:
        data["IamInstanceProfile"] = {"Name": settings.instance_profile}
    reply = aws.call("ec2", "create_launch_template", LaunchTemplateName=name, LaunchTemplateData=data,
                     TagSpecifications=[{"ResourceType": "launch-template", "Tags": tag_list(run_id, cluster=cluster)}])
    return reply.get("LaunchTemplate", {}).get("LaunchTemplateId", f"(template {name})"), True


@dataclass(frozen=True)
class FleetAnswer:
    instance_ids: tuple[str, ...]
    obtained: Mapping[str, int]  # instance type -> count
    refused: tuple[CapacityError, ...]


def create_fleet(aws: Aws, *, run_id: str, cluster: str, template_id: str, instance_type: str,
                 alternatives: Iterable[str], market: Market, count: int, token: str,
                 subnet: str | None = None) -> FleetAnswer:
    """An instant EC2 Fleet of ``count`` instances; spot: price-capacity-optimized over the planned type
    and its alternatives; on-demand: the planned type.  Capacity errors come back in ``refused``."""
    types = [instance_type, *alternatives] if market is Market.SPOT else [instance_type]
    overrides = [{"InstanceType": t, **({"SubnetId": subnet} if subnet else {})} for t in types]
    capacity_type = "spot" if market is Market.SPOT else "on-demand"
    params: dict[str, Any] = {
        "Type": "instant", "ClientToken": client_token(token),
        "LaunchTemplateConfigs": [{"LaunchTemplateSpecification": {"LaunchTemplateId": template_id,
                                                                   "Version": "$Latest"},
                                   "Overrides": overrides}],
        "TargetCapacitySpecification": {"TotalTargetCapacity": count, "DefaultTargetCapacityType": capacity_type},
        "TagSpecifications": [
            {"ResourceType": "instance", "Tags": tag_list(run_id, cluster=cluster, market=str(market))},
            {"ResourceType": "fleet", "Tags": tag_list(run_id, cluster=cluster, market=str(market))}],
    }
    if market is Market.SPOT:
        params["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized"}
    else:
        params["OnDemandOptions"] = {"AllocationStrategy": "lowest-price"}
    try:
        reply = aws.call("ec2", "create_fleet", **params)
    except Exception as exc:
        if is_client_error(exc) and error_code(exc) in CAPACITY_CODES:
            return FleetAnswer((), {}, (CapacityError(instance_type, market, describe_error(exc), count),))
        if is_client_error(exc):
            raise ProviderError(f"EC2 refused the fleet request: {describe_error(exc)}", source=cluster) from None
        raise ProviderError(f"cannot reach EC2 ({type(exc).__name__}: {exc})", source=cluster) from None
    return fleet_answer(reply, instance_type, market, count)


def fleet_answer(reply: Mapping[str, Any], instance_type: str, market: Market, count: int) -> FleetAnswer:
    """An instant fleet's reply as data: the instances, per type, and what was refused and why."""
    ids: list[str] = []
    obtained: dict[str, int] = {}
    for group in reply.get("Instances") or []:
        got = list(group.get("InstanceIds") or [])
        ids += got
        itype = group.get("InstanceType") or instance_type
        obtained[itype] = obtained.get(itype, 0) + len(got)
    refused: list[CapacityError] = []
    missing = count - len(ids)
    for err in reply.get("Errors") or []:
        itype = ((err.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}).get("InstanceType") or instance_type
        refused.append(CapacityError(itype, market, f"{err.get('ErrorCode')}: {err.get('ErrorMessage', '')}".strip(),
                                     max(missing, 0)))
    if missing > 0 and not refused:
        refused.append(CapacityError(instance_type, market, f"the fleet gave {len(ids)} of {count}", missing))
    return FleetAnswer(tuple(ids), obtained, tuple(refused))


# ------------------------------------------------------------------ the run's instances


@dataclass(frozen=True)
class Instance:
    instance_id: str
    cluster: str
    instance_type: str
    market: Market
    state: NodeState
    aws_state: str
    launched_at: float
    private_ip: str | None
    public_ip: str | None = None


def run_instances(aws: Aws, run_id: str) -> list[Instance]:
    """Every instance tagged with the run, gone ones included while EC2 lists them."""
    if aws.dry_run:
        return []
    out = []
    pages = aws.client("ec2").get_paginator("describe_instances").paginate(Filters=run_filter(run_id))
    for page in pages:
        for reservation in page.get("Reservations", []):
            for inst in reservation.get("Instances", []):
                tags = tags_of(inst)
                aws_state = inst.get("State", {}).get("Name", "")
                market = Market.SPOT if inst.get("InstanceLifecycle") == "spot" else Market(
                    tags.get(TAG_MARKET, "on-demand"))
                out.append(Instance(inst["InstanceId"], tags.get(TAG_CLUSTER, "?"), inst.get("InstanceType", "?"),
                                    market, node_state(aws_state, inst.get("StateReason", {}).get("Code", "")),
                                    aws_state, _epoch(inst.get("LaunchTime")), inst.get("PrivateIpAddress"),
                                    inst.get("PublicIpAddress")))
    return sorted(out, key=lambda i: (i.cluster, i.instance_id))


def node_state(aws_state: str, reason_code: str = "") -> NodeState:
    if aws_state == "pending":
        return NodeState.PENDING
    if aws_state == "running":
        return NodeState.READY
    if aws_state in GONE_STATES:
        return NodeState.INTERRUPTED if reason_code == SPOT_TERMINATION else NodeState.GONE
    return NodeState.PENDING


def _epoch(value: Any) -> float:
    if value is None:
        return 0.0
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    try:
        from datetime import datetime

        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def terminate(aws: Aws, instance_ids: Iterable[str]) -> list[str]:
    """Terminate (idempotent: ids EC2 does not know are skipped, one by one). Returns those asked to go."""
    ids = sorted(set(instance_ids))
    if not ids:
        return []
    try:
        aws.call("ec2", "terminate_instances", InstanceIds=ids)
        return ids
    except Exception as exc:
        if not error_code(exc).startswith("InvalidInstanceID"):
            raise ProviderError(f"cannot terminate instances: {describe_error(exc)}") from None
    if len(ids) == 1:
        return []  # that one is unknown (or long gone)
    return [done for one in ids for done in terminate(aws, [one])]
