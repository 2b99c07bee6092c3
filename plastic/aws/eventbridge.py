"""One-time set-up of the EventBridge -> SQS path that ``plastic sqs-watch`` reads.

`setup_spot_events` (``plastic sqs-setup``), idempotent (run it again to repair or update):

1. the SQS queue (found by name, else created with a 1-hour retention, since a two-minute warning
   is worthless after that, and a 20 s default long poll);
2. the EventBridge rule on the default bus with `event_pattern()`: source ``aws.ec2`` and the
   spot interruption warning, the rebalance recommendation, and the state-change notification
   only for the states that mean "going away" (shutting-down, terminated, stopping, stopped),
   so the queue never sees the pending/running traffic of the account;
3. a statement in the queue policy that lets ``events.amazonaws.com`` send to the queue, only
   for this rule (``aws:SourceArn``); other statements of an existing policy are kept;
4. the queue as the rule's target (id ``plastic-sqs``).

EventBridge cannot deliver to a queue encrypted with the AWS-managed SQS KMS key; SQS-managed
encryption (SSE-SQS, the default for new queues) works.  FIFO queues are refused (a FIFO target
needs a message group id, and ordering buys nothing here).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from plastic.aws.session import AwsError, describe, error_code, is_missing_queue
from plastic.core.book.spot_events import (
    GOING_STATES,
    INTERRUPTION_WARNING,
    REBALANCE_RECOMMENDATION,
    STATE_CHANGE,
)
from plastic.core.errors import InputError

DEFAULT_RULE = "plastic-spot-events"
TARGET_ID = "plastic-sqs"
RETENTION_S = 3600
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
_RULE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def event_pattern() -> dict[str, Any]:
    """The rule's pattern: the three detail types, state changes only towards "gone"."""
    return {
        "source": ["aws.ec2"],
        "$or": [
            {"detail-type": [INTERRUPTION_WARNING, REBALANCE_RECOMMENDATION]},
            {"detail-type": [STATE_CHANGE], "detail": {"state": list(GOING_STATES)}},
        ],
    }


def policy_sid(rule_name: str) -> str:
    return f"plastic-eventbridge-{rule_name}"


def policy_statement(queue_arn: str, rule_arn: str, rule_name: str) -> dict[str, Any]:
    """EventBridge may send messages to the queue, on behalf of this rule only."""
    return {"Sid": policy_sid(rule_name), "Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"},
            "Action": "sqs:SendMessage", "Resource": queue_arn,
            "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}}}


@dataclass(frozen=True)
class SpotEventsSetup:
    queue_url: str
    queue_arn: str
    rule_name: str
    rule_arn: str
    created_queue: bool


def setup_spot_events(queue_name: str, *, sqs: Any, events: Any, rule_name: str = DEFAULT_RULE,
                      retention_s: int = RETENTION_S) -> SpotEventsSetup:
    """Create or update queue, rule, policy and target (module docstring); idempotent."""
    if not _QUEUE_NAME.match(queue_name):
        raise InputError("invalid SQS queue name: 1-80 characters of A-Z a-z 0-9 _ - (FIFO queues are not "
                         "supported)", source=queue_name, field="--queue-name")
    if not _RULE_NAME.match(rule_name):
        raise InputError("invalid EventBridge rule name: 1-64 characters of A-Z a-z 0-9 . _ -",
                         source=rule_name, field="--rule-name")
    queue_url, created = _queue(sqs, queue_name, retention_s)
    queue_arn = _call("read the queue ARN", sqs.get_queue_attributes, QueueUrl=queue_url,
                      AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    rule_arn = _call("create the EventBridge rule", events.put_rule, Name=rule_name,
                     EventPattern=json.dumps(event_pattern()), State="ENABLED",
                     Description="EC2 spot interruption warnings, rebalance recommendations and instances "
                                 "going away, for plastic sqs-watch")["RuleArn"]
    _allow_rule(sqs, queue_url, queue_arn, rule_arn, rule_name)
    reply = _call("add the queue as the rule's target", events.put_targets, Rule=rule_name,
                  Targets=[{"Id": TARGET_ID, "Arn": queue_arn}])
    if reply.get("FailedEntryCount"):
        entry = (reply.get("FailedEntries") or [{}])[0]
        raise AwsError(f"cannot add the queue as the rule's target: {entry.get('ErrorCode')}: "
                       f"{entry.get('ErrorMessage')}", source=rule_name)
    return SpotEventsSetup(queue_url, queue_arn, rule_name, rule_arn, created)


def _call(what: str, method: Any, **kwargs: Any) -> Any:
    try:
        return method(**kwargs)
    except Exception as exc:  # noqa: BLE001 - one line per AWS failure
        raise AwsError(f"cannot {what}: {describe(exc)}") from None


def _queue(sqs: Any, name: str, retention_s: int) -> tuple[str, bool]:
    try:
        return sqs.get_queue_url(QueueName=name)["QueueUrl"], False
    except Exception as exc:  # noqa: BLE001
        if not is_missing_queue(exc):
            raise AwsError(f"cannot look up the SQS queue: {describe(exc)}", source=name) from None
    reply = _call("create the SQS queue", sqs.create_queue, QueueName=name,
                  Attributes={"MessageRetentionPeriod": str(retention_s), "ReceiveMessageWaitTimeSeconds": "20"})
    return reply["QueueUrl"], True


def _allow_rule(sqs: Any, queue_url: str, queue_arn: str, rule_arn: str, rule_name: str) -> None:
    attributes = _call("read the queue policy", sqs.get_queue_attributes, QueueUrl=queue_url,
                       AttributeNames=["Policy"]).get("Attributes", {})
    try:
        policy = json.loads(attributes["Policy"]) if attributes.get("Policy") else {}
    except ValueError:
        policy = {}
    if not isinstance(policy, dict):
        policy = {}
    statements = policy.get("Statement", [])
    if isinstance(statements, dict):
        statements = [statements]
    sid = policy_sid(rule_name)
    statements = [s for s in statements if not (isinstance(s, dict) and s.get("Sid") == sid)]
    statements.append(policy_statement(queue_arn, rule_arn, rule_name))
    policy = {"Version": policy.get("Version", "2012-10-17"), **{k: v for k, v in policy.items()
                                                                 if k not in ("Version", "Statement")},
              "Statement": statements}
    try:
        sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": json.dumps(policy)})
    except Exception as exc:  # noqa: BLE001
        hint = " (permission sqs:SetQueueAttributes?)" if "Denied" in error_code(exc) else ""
        raise AwsError(f"cannot set the queue policy{hint}: {describe(exc)}", source=queue_url) from None
