"""The EventBridge -> SQS set-up against moto, and the whole path: EC2 event -> rule -> queue -> notice."""

from __future__ import annotations

import json

import pytest

from plastic.aws.eventbridge import (
    DEFAULT_RULE,
    TARGET_ID,
    event_pattern,
    policy_sid,
    setup_spot_events,
)
from plastic.aws.sqs_notices import SqsNoticePoller
from plastic.core.book.spot_events import (
    INTERRUPTION_WARNING,
    REBALANCE_RECOMMENDATION,
    STATE_CHANGE,
)
from plastic.core.errors import InputError

IID = "i-0aaaaaaaaaaaaaaa1"


def test_setup_creates_rule_target_and_policy(sqs, events):
    done = setup_spot_events("plastic-spot", sqs=sqs, events=events)
    assert done.created_queue and done.rule_name == DEFAULT_RULE
    rule = events.describe_rule(Name=DEFAULT_RULE)
    assert rule["State"] == "ENABLED" and rule["Arn"] == done.rule_arn
    pattern = json.loads(rule["EventPattern"])
    assert pattern == event_pattern()
    assert pattern["source"] == ["aws.ec2"]
    assert {t for alt in pattern["$or"] for t in alt["detail-type"]} == {
        INTERRUPTION_WARNING, REBALANCE_RECOMMENDATION, STATE_CHANGE}
    targets = events.list_targets_by_rule(Rule=DEFAULT_RULE)["Targets"]
    assert [(t["Id"], t["Arn"]) for t in targets] == [(TARGET_ID, done.queue_arn)]
    attrs = sqs.get_queue_attributes(QueueUrl=done.queue_url, AttributeNames=["All"])["Attributes"]
    assert attrs["MessageRetentionPeriod"] == "3600"
    (statement,) = json.loads(attrs["Policy"])["Statement"]
    assert statement["Principal"] == {"Service": "events.amazonaws.com"}
    assert statement["Action"] == "sqs:SendMessage" and statement["Resource"] == done.queue_arn
    assert statement["Condition"] == {"ArnEquals": {"aws:SourceArn": done.rule_arn}}


def test_setup_is_idempotent_and_keeps_other_policy_statements(sqs, events):
    url = sqs.create_queue(QueueName="existing")["QueueUrl"]
    other = {"Sid": "someone-else", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
             "Action": "sqs:ReceiveMessage", "Resource": "*"}
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(
        {"Version": "2012-10-17", "Statement": [other]})})
    first = setup_spot_events("existing", sqs=sqs, events=events, rule_name="r1")
    again = setup_spot_events("existing", sqs=sqs, events=events, rule_name="r1")
    assert not first.created_queue and not again.created_queue and first == again
    statements = json.loads(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])
                            ["Attributes"]["Policy"])["Statement"]
    assert [s["Sid"] for s in statements] == ["someone-else", policy_sid("r1")]
    assert len(events.list_targets_by_rule(Rule="r1")["Targets"]) == 1


@pytest.mark.parametrize("queue, rule, needle", [
    ("spot.fifo", DEFAULT_RULE, "invalid SQS queue name"),
    ("", DEFAULT_RULE, "invalid SQS queue name"),
    ("ok", "bad rule name", "invalid EventBridge rule name"),
])
def test_bad_names_are_input_errors(sqs, events, queue, rule, needle):
    with pytest.raises(InputError, match=needle):
        setup_spot_events(queue, sqs=sqs, events=events, rule_name=rule)


def test_ec2_events_reach_the_notices_stream(store, sqs, events):
    """put_events stands in for EC2 (moto lets a test use the aws.ec2 source; real AWS does not)."""
    done = setup_spot_events("plastic-e2e", sqs=sqs, events=events)
    store.upsert_agent("agent-1", preemptible=True, attributes={"instance_id": IID})
    entries = [
        (INTERRUPTION_WARNING, {"instance-id": IID, "instance-action": "terminate"}),
        (STATE_CHANGE, {"instance-id": IID, "state": "running"}),  # filtered out by the rule
        (STATE_CHANGE, {"instance-id": IID, "state": "shutting-down"}),
        ("EC2 Instance Launch Successful", {"instance-id": IID}),  # not matched by the rule
    ]
    reply = events.put_events(Entries=[{"Source": "aws.ec2", "DetailType": dt, "Detail": json.dumps(d)}
                                       for dt, d in entries])
    assert reply["FailedEntryCount"] == 0
    stats = SqsNoticePoller(store, done.queue_url, sqs=sqs, wait_seconds=0).run(max_rounds=2)
    assert (stats.received, stats.published, stats.ignored) == (2, 2, 0)
    got = {(n.fields["kind"], n.fields["target"]): n.fields for n in store.read_notices()}
    assert set(got) == {("terminate", "agent:agent-1"), ("state", "agent:agent-1")}
    term = got[("terminate", "agent:agent-1")]
    assert float(term["terminate_at"]) == float(term["event_time"]) + 120
    assert got[("state", "agent:agent-1")]["action"] == "shutting-down"
