"""AWS in tests is moto only, and nothing here can reach the network.

Every test in tests/aws gets fake credentials and a region in its environment (no profile, no
config file, no endpoint override, no instance metadata), and a socket guard that refuses any
connection that is not loopback or a Unix socket.  Redis is the session's real embedded server
(tests/conftest.py), one key prefix per test.
"""

from __future__ import annotations

import ipaddress
import socket
import uuid

import httpx
import pytest

from plastic.store import Store
from tests.aws.helpers import REGION, SECRET, take_toils_encryption_rule


def _loopback(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0] if isinstance(address, tuple) and address else None
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except (TypeError, ValueError):
        return False


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def connect(self, address):
        if not _loopback(address):
            raise OSError(f"tests/aws: network access refused ({address!r})")
        return real_connect(self, address)

    def connect_ex(self, address):
        if not _loopback(address):
            raise OSError(f"tests/aws: network access refused ({address!r})")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch, tmp_path):
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS",
                 "AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_EVENTS", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "PLASTIC_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def aws(aws_env):
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture
def sqs(aws):
    import boto3

    return boto3.client("sqs", region_name=REGION)


@pytest.fixture
def ec2(aws):
    import boto3

    return boto3.client("ec2", region_name=REGION)


@pytest.fixture
def events(aws):
    import boto3

    return boto3.client("events", region_name=REGION)


@pytest.fixture
def queue_url(sqs) -> str:
    return sqs.create_queue(QueueName=f"plastic-{uuid.uuid4().hex[:8]}")["QueueUrl"]


@pytest.fixture
def store(client) -> Store:
    return Store(client, prefix=f"t-{uuid.uuid4().hex[:12]}:")


# ------------------------------------------------------------------ moto in server mode


@pytest.fixture(scope="session")
def moto_url():
    """moto as a real HTTP endpoint (server mode): the code path real AWS sees, never the real AWS."""
    import logging

    from moto.server import ThreadedMotoServer

    patches = pytest.MonkeyPatch()
    take_toils_encryption_rule(patches)

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not a line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
    patches.undo()


@pytest.fixture
def endpoint(moto_url, aws_env, monkeypatch):
    httpx.post(f"{moto_url}/moto-api/reset")  # a clean account for every test
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    return moto_url


@pytest.fixture
def image_id(endpoint) -> str:
    import boto3

    return boto3.client("ec2").describe_images(Owners=["amazon"])["Images"][0]["ImageId"]


