"""A run's control plane on EC2: one on-demand instance with ZooKeeper, the Mesos master, Redis and
`plastic serve` (`plastic cloud up --control-plane`).

The instance runs deploy/aws/control-plane.sh.tmpl as its user data: the four services as containers
of the project's images (docs/images.md says how they get into a registry of the account), Redis with
the run's password and TLS only (plastic.aws.control_plane_secrets), its AOF on a volume of its own
(gp3, encrypted, deleted with the instance).  It is in the run's security group, which lets the
agents reach ZooKeeper, the master and Redis; Redis is also opened to the addresses the user gives
(``--allow-from``, each a CIDR such as the user's own address /32), so that `plastic submit`, `status`,
`logs` and `report` reach it from the user's machine over TLS with the password.  The agents join it
by its private address, which EC2 gives when the instance is created (before it boots).  It carries
the run's tags and ``plastic:cluster=control-plane``: `plastic cloud status` lists it, `plastic cloud
down` terminates it with everything else (its volume goes with it).
"""

from __future__ import annotations

import base64
import logging
import os
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plastic.aws.control_plane_secrets import ControlPlaneSecrets
from plastic.aws.ec2_cloud import (
    Aws,
    describe_error,
    is_client_error,
    registry_login_snippet,
    run_instances,
    tag_list,
)
from plastic.compose import MANAGER_IMAGE, MESOS_IMAGE, ZOOKEEPER_IMAGE
from plastic.core.errors import InputError, ProviderError
from plastic.store.urls import set_ca

log = logging.getLogger(__name__)

CLUSTER = "control-plane"  # its plastic:cluster tag
START_SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "aws" / "control-plane.sh.tmpl"
ZOOKEEPER_PORT, MESOS_PORT, REDIS_PORT = 2181, 5050, 6379
AOF_DEVICE = "/dev/sdf"
IMAGES = {"ZOOKEEPER_IMAGE": ZOOKEEPER_IMAGE, "MESOS_IMAGE": MESOS_IMAGE, "MANAGER_IMAGE": MANAGER_IMAGE}


@dataclass(frozen=True)
class ControlPlaneSettings:
    instance_type: str = "m5.large"
    registry: str | None = None  # REGISTRY/plastic/...: the images as deploy/aws/push-images.sh pushed them
    allow_from: tuple[str, ...] = ()  # CIDRs that may reach Redis (TLS, password) from outside the group
    volume_gib: int = 8

    def image(self, name: str) -> str:
        return f"{self.registry.rstrip('/')}/{name}" if self.registry else name


@dataclass(frozen=True)
class ControlPlane:
    instance_id: str
    private_ip: str | None
    public_ip: str | None
    state: str
    created: bool = False

    def master_url(self) -> str:
        return f"zk://{self.private_ip}:{ZOOKEEPER_PORT}/mesos"

    def redis_url(self, secrets: ControlPlaneSecrets, host: str | None = None) -> str:
        """The Redis URL at ``host`` (default: the private address, as the agents reach it), trusting the
        run's CA (its file on this machine) without checking the host name."""
        url = f"rediss://:{secrets.password}@{host or self.private_ip}:{REDIS_PORT}/0?ssl_check_hostname=false"
        return set_ca(url, str(secrets.ca_path))


@dataclass
class ControlPlaneAnswer:
    plane: ControlPlane
    created: list[str] = field(default_factory=list)


def render_start_script(*, run_id: str, secrets: ControlPlaneSecrets, settings: ControlPlaneSettings,
                        region: str) -> str:
    try:
        text = START_SCRIPT.read_text(encoding="utf-8")
    except OSError as error:
        raise ProviderError(f"cannot read the control plane's start script ({error})",
                            source=str(START_SCRIPT)) from None
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    return string.Template(text).substitute(
        REGISTRY_LOGIN=registry_login_snippet(), RUN_ID=run_id, REGION=region, AOF_DEVICE=AOF_DEVICE,
        REDIS_PORT=REDIS_PORT, MESOS_PORT=MESOS_PORT, ZOOKEEPER_PORT=ZOOKEEPER_PORT, REDIS_PASSWORD=secrets.password,
        CA_PEM_B64=b64(secrets.ca_pem), SERVER_PEM_B64=b64(secrets.server_pem), SERVER_KEY_B64=b64(secrets.server_key_pem),
        **{key: settings.image(name) for key, name in IMAGES.items()})


def find(aws: Aws, run_id: str) -> ControlPlane | None:
    """The run's live control plane (by tag), or None."""
    if aws.dry_run:
        return None
    for inst in run_instances(aws, run_id):
        if inst.cluster == CLUSTER and inst.aws_state in ("pending", "running"):
            return ControlPlane(inst.instance_id, inst.private_ip, inst.public_ip, inst.aws_state)
    return None


def ensure(aws: Aws, run_id: str, group_id: str, settings: ControlPlaneSettings, secrets: ControlPlaneSecrets, *,
           image_id: str, subnet: str | None, key_name: str | None, instance_profile: str | None) -> ControlPlaneAnswer:
    """The run's control plane: found by tag, else created (one on-demand instance and its AOF volume);
    Redis opened to ``settings.allow_from``."""
    plane = find(aws, run_id) or _create(aws, run_id, group_id, settings, secrets, image_id=image_id, subnet=subnet,
                                         key_name=key_name, instance_profile=instance_profile)
    answer = ControlPlaneAnswer(plane)
    if answer.plane.created:
        answer.created.append(f"control plane {answer.plane.instance_id} ({settings.instance_type} on-demand, "
                              f"{settings.volume_gib} GiB AOF volume)")
    answer.created += _open_redis(aws, group_id, settings.allow_from)
    return answer


def _create(aws: Aws, run_id: str, group_id: str, settings: ControlPlaneSettings, secrets: ControlPlaneSecrets, *,
            image_id: str, subnet: str | None, key_name: str | None, instance_profile: str | None) -> ControlPlane:
    script = render_start_script(run_id=run_id, secrets=secrets, settings=settings, region=aws.region)
    tags = tag_list(run_id, cluster=CLUSTER, market="on-demand")
    params: dict[str, Any] = {
        "ImageId": image_id, "InstanceType": settings.instance_type, "MinCount": 1, "MaxCount": 1,
        "UserData": script, "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled"},
        "BlockDeviceMappings": [{"DeviceName": AOF_DEVICE, "Ebs": {
            "VolumeSize": settings.volume_gib, "VolumeType": "gp3", "Encrypted": True, "DeleteOnTermination": True}}],
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}, {"ResourceType": "volume", "Tags": tags}],
        "SecurityGroupIds": [group_id],
    }
    if subnet:
        params["SubnetId"] = subnet
    if key_name:
        params["KeyName"] = key_name
    if instance_profile:
        params["IamInstanceProfile"] = {"Name": instance_profile}
    try:
        reply = aws.call("ec2", "run_instances", **params)
    except Exception as exc:
        if is_client_error(exc):
            raise ProviderError(f"EC2 refused the control plane: {describe_error(exc)}", source=CLUSTER) from None
        raise
    (inst,) = reply.get("Instances") or [{"InstanceId": "(the control plane)", "State": {"Name": "pending"}}]
    return ControlPlane(inst["InstanceId"], inst.get("PrivateIpAddress"), inst.get("PublicIpAddress"),
                        inst.get("State", {}).get("Name", "pending"), created=True)


def _open_redis(aws: Aws, group_id: str, cidrs: Sequence[str]) -> list[str]:
    """Redis's port opened to each CIDR (already open: nothing to do)."""
    opened = []
    for cidr in cidrs:
        try:
            aws.call("ec2", "authorize_security_group_ingress", GroupId=group_id, IpPermissions=[{
                "IpProtocol": "tcp", "FromPort": REDIS_PORT, "ToPort": REDIS_PORT,
                "IpRanges": [{"CidrIp": cidr, "Description": "plastic: Redis (TLS, password) for the user"}]}])
        except Exception as exc:
            if is_client_error(exc) and "Duplicate" in describe_error(exc):
                continue
            raise
        opened.append(f"Redis port {REDIS_PORT} open to {cidr}")
    return opened


def check_cidrs(cidrs: Sequence[str]) -> tuple[str, ...]:
    """Each an IPv4 network (the user's address: a.b.c.d/32); InputError naming the bad one."""
    import ipaddress

    for cidr in cidrs:
        try:
            net = ipaddress.ip_network(cidr, strict=True)
        except ValueError as error:
            raise InputError(f"not an IPv4 network such as 203.0.113.7/32 ({error})", source=cidr,
                             field="--allow-from") from None
        if net.version != 4 or net.prefixlen == 0:
            raise InputError("an IPv4 network other than 0.0.0.0/0 (Redis is never opened to everyone)",
                             source=cidr, field="--allow-from")
    return tuple(cidrs)


def reach_url(plane: ControlPlane, secrets: ControlPlaneSecrets, *, private: bool = False) -> str:
    """The Redis URL from the user's machine: the public address (the port --allow-from opened), else
    (``private``, or an instance without one: a VPN, a tunnel) the private one."""
    host = plane.private_ip if private or not plane.public_ip else plane.public_ip
    return plane.redis_url(secrets, host=host)


def health(url: str) -> str:
    """One line: does the control plane's Redis answer at ``url`` (TLS, the password), and its queue."""
    from plastic.store.embedded import open_url
    from plastic.store.store_errors import UnreachableError

    try:
        client = open_url(url)
    except UnreachableError as error:
        return f"Redis does not answer ({error})"
    try:
        return f"Redis answers; {client.dbsize()} key(s)"
    finally:
        client.close()


def save_redis(url: str, path: Path) -> int:
    """Every key of the control plane's Redis, as DUMP gives it (restorable with RESTORE), with its
    time to live, one JSON line each, into ``path`` (written whole or not at all); returns the count."""
    import json

    from plastic.store.embedded import open_url

    client = open_url(url, option="--save-to", decode_responses=False)
    try:
        lines = []
        for key in client.scan_iter(count=1000):
            dumped = client.dump(key)
            if dumped is None:  # expired since the scan
                continue
            lines.append(json.dumps({"key": base64.b64encode(key).decode(), "pttl_ms": client.pttl(key),
                                     "dump": base64.b64encode(dumped).decode()}))
    finally:
        client.close()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    part = path.with_name(path.name + ".part")  # every run's records: this user's only, whole or not at all
    with os.fdopen(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as out:
        out.writelines(line + "\n" for line in lines)
    os.replace(part, path)
    return len(lines)
