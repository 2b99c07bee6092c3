"""The SQS poller against moto and a real Redis: one notice per (kind, target), mapped to agents."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from redis import Redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from plastic.aws.sqs_notices import AgentMap, SqsNoticePoller
from plastic.core.book.spot_events import (
    INTERRUPTION_WARNING,
    REBALANCE_RECOMMENDATION,
    STATE_CHANGE,
)
from plastic.store import Store
from tests.aws.helpers import eb_event, queue_depth

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()
KNOWN = "i-0aaaaaaaaaaaaaaa1"  # agent-1 carries it in its attributes
UNKNOWN = "i-0ccccccccccccccc3"  # no agent


def notices(store: Store) -> dict[tuple[str, str], dict[str, str]]:
    found = store.read_notices()
    keyed = {(n.fields["kind"], n.fields["target"]): n.fields for n in found}
    assert len(keyed) == len(found), "more than one notice for a (kind, target)"
    return keyed


def send(sqs, url: str, *bodies: str) -> None:
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body)


def poller(store: Store, sqs, url: str, ec2=None, **options) -> SqsNoticePoller:
    delays: list[float] = []
    made = SqsNoticePoller(store, url, sqs=sqs, ec2=ec2, wait_seconds=0, sleep=delays.append, **options)
    made.delays = delays  # type: ignore[attr-defined]
    return made


def test_a_mixed_queue_gives_one_notice_per_kind_and_target(store, sqs, ec2, queue_url, caplog):
    # agent-2 is known only by its hostname: the private DNS name of a (moto) instance
    instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"][0]
    by_host = instance["InstanceId"]
    store.upsert_agent("agent-1", preemptible=True, attributes={"instance_id": KNOWN}, hostname="10.0.0.1")
    store.upsert_agent("agent-2", preemptible=True, hostname=instance["PrivateDnsName"])
    store.upsert_agent("agent-3", preemptible=False, attributes={"instance_id": "i-0ddddddddddddddd4"})

    warning = eb_event(INTERRUPTION_WARNING, {"instance-id": KNOWN, "instance-action": "terminate"})
    sns_rebalance = json.dumps({"Type": "Notification", "MessageId": "m-1", "TopicArn": "arn:aws:sns:x:1:t",
                                "Message": eb_event(REBALANCE_RECOMMENDATION, {"instance-id": by_host})})
    send(sqs, queue_url,
         warning,
         warning,  # the same event twice (EventBridge and SQS deliver at least once)
         eb_event(INTERRUPTION_WARNING, {"instance-id": KNOWN, "instance-action": "terminate"}),  # a new id
         eb_event(REBALANCE_RECOMMENDATION, {"instance-id": KNOWN}),
         eb_event(STATE_CHANGE, {"instance-id": by_host, "state": "stopped"}),
         eb_event(STATE_CHANGE, {"instance-id": by_host, "state": "running"}),  # not going away: ignored
         eb_event(INTERRUPTION_WARNING, {"instance-id": UNKNOWN, "instance-action": "stop"}),
         sns_rebalance,
         "{this is not json",  # malformed: ignored and deleted
         eb_event("AWS API Call via CloudTrail", {"eventName": "RunInstances"}))  # another event: ignored
    caplog.set_level(logging.INFO, logger="plastic.aws.sqs_notices")
    seen: list[tuple[str, str]] = []
    p = poller(store, sqs, queue_url, ec2, on_notice=lambda kind, target, fields: seen.append((kind, target)))
    stats = p.run(max_rounds=4)

    got = notices(store)
    assert set(got) == {("terminate", "agent:agent-1"), ("rebalance", "agent:agent-1"),
                        ("state", "agent:agent-2"), ("rebalance", "agent:agent-2"),
                        ("terminate", f"instance:{UNKNOWN}")}
    assert sorted(seen) == sorted(got)
    term = got[("terminate", "agent:agent-1")]
    assert float(term["terminate_at"]) == T0 + 120 and float(term["event_time"]) == T0
    assert (term["action"], term["instance_id"], term["agent_id"], term["source"]) == (
        "terminate", KNOWN, "agent-1", "sqs")
    rebalance = got[("rebalance", "agent:agent-1")]
    assert "terminate_at" not in rebalance and float(rebalance["notice_time"]) == T0
    state = got[("state", "agent:agent-2")]
    assert (state["action"], state["instance_id"], state["agent_id"]) == ("stopped", by_host, "agent-2")
    lost = got[("terminate", f"instance:{UNKNOWN}")]
    assert "agent_id" not in lost and lost["action"] == "stop" and lost["instance_id"] == UNKNOWN

    assert (stats.received, stats.published, stats.duplicates, stats.ignored, stats.deleted, stats.kept) == (
        10, 5, 2, 3, 10, 0)
    assert queue_depth(sqs, queue_url) == 0
    assert p.delays == []  # no errors, no back-off
    assert any("ignored and deleted: body is not JSON" in r.getMessage() for r in caplog.records)


def test_redelivery_publishes_nothing_new(store, sqs, queue_url):
    store.upsert_agent("agent-1", attributes={"instance_id": KNOWN})
    body = eb_event(INTERRUPTION_WARNING, {"instance-id": KNOWN, "instance-action": "terminate"})
    send(sqs, queue_url, body)
    first = poller(store, sqs, queue_url).run(max_rounds=1)
    send(sqs, queue_url, body)  # delivered again, to a second watcher
    again = poller(store, sqs, queue_url).run(max_rounds=1)
    assert (first.published, again.published, again.duplicates) == (1, 0, 1)
    assert len(store.read_notices()) == 1 and queue_depth(sqs, queue_url) == 0


def test_the_imds_watcher_being_first_is_a_duplicate(store, sqs, queue_url):
    store.upsert_agent("agent-1", attributes={"instance_id": KNOWN})
    store.publish_notice("terminate", "agent:agent-1", {"source": "imds", "terminate_at": T0 + 120})
    send(sqs, queue_url, eb_event(INTERRUPTION_WARNING, {"instance-id": KNOWN, "instance-action": "terminate"}))
    stats = poller(store, sqs, queue_url).run(max_rounds=1)
    assert (stats.published, stats.duplicates, stats.deleted) == (0, 1, 1)
    assert [n.fields["source"] for n in store.read_notices()] == ["imds"]


def test_a_failed_publish_leaves_the_message_on_the_queue(sqs, queue_url, tmp_path):
    dead = Store(Redis(unix_socket_path=str(tmp_path / "no-redis.sock"), decode_responses=True,
                       retry=Retry(NoBackoff(), 0)), prefix="t-dead:")
    send(sqs, queue_url, eb_event(INTERRUPTION_WARNING, {"instance-id": KNOWN, "instance-action": "terminate"}))
    p = poller(dead, sqs, queue_url, visibility_timeout=0)
    stats = p.run(max_rounds=2)
    assert (stats.received, stats.kept, stats.deleted) == (2, 2, 0)
    assert queue_depth(sqs, queue_url) == 1
    assert len(p.delays) == 2 and p.delays[0] <= 1.0 <= p.delays[1]  # backing off, doubling


def test_a_queue_deleted_while_running_is_logged_and_backed_off(store, sqs, queue_url, caplog):
    sqs.delete_queue(QueueUrl=queue_url)
    caplog.set_level(logging.ERROR, logger="plastic.aws.sqs_notices")
    p = poller(store, sqs, queue_url, backoff_max_s=3.0)
    stats = p.run(max_rounds=4)
    assert (stats.rounds, stats.errors, stats.received) == (4, 4, 0)
    assert p.delays[0] <= 1.0 and p.delays[2] >= 1.5 and max(p.delays) <= 3.0
    assert "the queue is gone" in caplog.records[0].getMessage()


def test_several_agents_on_one_instance_map_to_the_newest_live_one(store):
    store.upsert_agent("old", attributes={"instance_id": KNOWN})
    store.upsert_agent("restarted", attributes={"instance_id": KNOWN})
    store.upsert_agent("by-field", fields={"instance_id": UNKNOWN})
    agents = AgentMap(store)
    agents.refresh()
    assert agents.lookup(KNOWN) == ("restarted", "attribute")
    assert agents.lookup(UNKNOWN) == ("by-field", "attribute")
    assert agents.lookup("i-0eeeeeeeeeeeeeee5") == (None, None)
    store.transition_agent("restarted", "GONE")
    agents.refresh()
    assert agents.lookup(KNOWN) == ("old", "attribute")
    store.transition_agent("old", "GONE")
    agents.refresh()
    assert agents.lookup(KNOWN) == ("restarted", "attribute")  # all gone: the newest


def test_hostname_mapping_accepts_the_short_name_and_the_address(store, ec2):
    made = ec2.run_instances(ImageId="ami-12c6146b", MinCount=2, MaxCount=2)["Instances"]
    short, by_ip = made
    store.upsert_agent("short", hostname=short["PrivateDnsName"].split(".")[0].upper())
    store.upsert_agent("by-ip", fields={"address": f"{by_ip['PrivateIpAddress']}:5051"})
    agents = AgentMap(store, ec2)
    agents.refresh()
    assert agents.lookup(short["InstanceId"]) == ("short", "hostname")
    assert agents.lookup(by_ip["InstanceId"]) == ("by-ip", "hostname")
    assert agents.lookup("i-0fffffffffffffff6") == (None, None)  # InvalidInstanceID.NotFound: unmapped
