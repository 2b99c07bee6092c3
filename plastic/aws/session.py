"""boto3 clients for plastic, the region of a queue URL, and AWS errors as plastic errors."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from plastic.core.errors import InputError, PlasticError

# https://sqs.us-east-1.amazonaws.com/123/q, https://sqs.cn-north-1.amazonaws.com.cn/123/q,
# https://us-west-2.queue.amazonaws.com/123/q (legacy); https://queue.amazonaws.com/123/q is us-east-1.
_SQS_HOST = re.compile(r"^sqs[.-]([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?$")
_LEGACY_HOST = re.compile(r"^([a-z]{2}(?:-[a-z]+)+-\d+)\.queue\.amazonaws\.com(?:\.cn)?$")

MISSING_QUEUE_CODES = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})
THROTTLING_CODES = frozenset({"Throttling", "ThrottlingException", "RequestThrottled", "OverLimit",
                              "RequestThrottledException", "TooManyRequestsException", "SlowDown"})


class AwsError(PlasticError):
    """AWS refused or could not be reached (not the user's input)."""


class MissingQueueError(InputError):
    """The SQS queue does not exist (wrong URL, wrong region, deleted)."""


def check_queue_url(url: str) -> str:
    """``url`` if it looks like a queue URL (http[s]://host/...), else InputError."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path.strip("/") == "":
        raise InputError("not an SQS queue URL (expected https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)",
                         source=url, field="--queue-url")
    return url


def region_from_queue_url(url: str) -> str | None:
    """The region an SQS queue URL names, or None (a local endpoint, an unknown form)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "queue.amazonaws.com":
        return "us-east-1"
    match = _SQS_HOST.match(host) or _LEGACY_HOST.match(host)
    return match.group(1) if match else None


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ClientError ('' for anything else)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def describe(exc: BaseException) -> str:
    """One line: ``Code: message`` for a ClientError, else the exception's own text."""
    code = error_code(exc)
    message = str(getattr(exc, "response", {}).get("Error", {}).get("Message", "")) if code else ""
    text = f"{code}: {message}" if code else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


def is_missing_queue(exc: BaseException) -> bool:
    return error_code(exc) in MISSING_QUEUE_CODES or type(exc).__name__ == "QueueDoesNotExist"


def clients(region: str | None, *, read_timeout_s: float = 60.0) -> tuple[Any, Any, Any]:
    """``(sqs, ec2, events)`` clients for ``region`` (None: boto3's default chain); InputError without one.

    botocore retries throttling and 5xx itself (standard mode, 3 attempts) before an error
    reaches the poller; the read timeout stays above SQS's 20 s long poll."""
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(region_name=region)
    if not session.region_name:
        raise InputError("no AWS region: pass --region (or set AWS_REGION / AWS_DEFAULT_REGION)")
    config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=10,
                    read_timeout=read_timeout_s)
    return (session.client("sqs", config=config), session.client("ec2", config=config),
            session.client("events", config=config))
