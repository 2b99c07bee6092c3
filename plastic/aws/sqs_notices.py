"""Spot notices from an SQS queue (fed by EventBridge) into the notices stream in Redis.

`SqsNoticePoller` long-polls the queue (``WaitTimeSeconds`` up to 20, up to 10 messages per
receive), parses each body with plastic.core.book.spot_events, and publishes every spot event with
``Store.publish_notice(kind, target, fields)``:

- ``kind``: ``terminate`` (interruption warning), ``rebalance`` (rebalance recommendation) or
  ``state`` (the instance is shutting down, terminated, stopping or stopped);
- ``target``: ``agent:<mesos agent id>`` when the instance maps to an agent, else
  ``instance:<instance id>``;
- ``fields``: ``terminate_at`` (epoch s, absent for rebalance), ``action`` (the instance-action,
  or the new state), ``instance_id``, ``agent_id`` (when mapped), ``source="sqs"``,
  ``event_time`` (epoch s), ``region``, ``event_id`` (EventBridge's), and for rebalance
  ``notice_time`` (= event_time, the field the IMDS watcher writes).

Instance -> agent (`AgentMap`), in this order:

1. an agent record whose ``attributes`` hold ``instance_id`` (or ``instance-id``) equal to the
   instance id, or whose caller field ``instance_id`` does;
2. else, when an EC2 client is at hand, ``DescribeInstances`` on the instance (cached per
   instance), and an agent whose ``hostname`` (or the host of its ``address`` field) equals the
   instance's private DNS name, its first label (``ip-10-0-0-5``), a private IP, or its public
   DNS name / IP.  Without ``ec2:DescribeInstances`` permission this step is switched off after
   one warning.

Several agents on one instance (a Mesos agent restarted with a new id) resolve to the newest
one that is not GONE, else the newest.  Agent records are re-read once per receive that got
messages.

Deleting messages:

- after a successful publish, and after a duplicate (the store's per-(kind, target) marker said
  it was published already: a redelivery, or the IMDS watcher was first).  Redelivery is thus
  harmless: at most one notice per (kind, target) however often a message arrives;
- messages that are no notice (malformed, another detail type, an instance that is not going
  away) are logged at INFO and deleted at once: the same body would be ignored again on every
  redelivery, so keeping it only costs receives (no redrive policy needed);
- when the publish itself fails (Redis unreachable) the message is left on the queue: it comes
  back after the visibility timeout, and the queue's redrive policy, if it has one, moves it to
  a dead-letter queue after maxReceiveCount attempts.

AWS errors while running (throttling that botocore's own retries did not absorb, a queue
deleted under us, no network) are logged and retried with exponential back-off (1 s doubling
to 60 s, with jitter, reset after a successful receive).  A missing queue at start is
`MissingQueueError` (one line, exit 2) from `check_queue`.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from plastic.aws.session import (
    AwsError,
    MissingQueueError,
    describe,
    error_code,
    is_missing_queue,
)
from plastic.core.book.instances import AgentSighting, agent_of_instance
from plastic.core.book.lifecycle import AgentState
from plastic.core.book.spot_events import REBALANCE, Ignored, SpotEvent, parse_event
from plastic.store import AgentRecord, Store

log = logging.getLogger(__name__)

MAX_WAIT_SECONDS = 20  # SQS's longest long poll
MAX_BATCH = 10  # SQS's largest receive
SOURCE = "sqs"
_DENIED = frozenset({"UnauthorizedOperation", "AccessDenied", "AccessDeniedException", "AuthFailure"})
_NOT_FOUND = frozenset({"InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"})


# ------------------------------------------------------------------------------ instance -> agent


def agent_instance_id(agent: AgentRecord) -> str | None:
    """The EC2 instance id an agent record names (attributes first, then caller fields)."""
    for value in (agent.attributes.get("instance_id"), agent.attributes.get("instance-id"),
                  agent.fields.get("instance_id")):
        if isinstance(value, str) and value:
            return value
    return None


def agent_hosts(agent: AgentRecord) -> set[str]:
    """The host names an agent record is known by (hostname, and the host of ``address``)."""
    hosts = set()
    if agent.hostname:
        hosts.add(agent.hostname.lower())
    address = agent.fields.get("address")
    if address:
        hosts.add(address.rsplit(":", 1)[0].strip("[]").lower() if ":" in address else address.lower())
    return hosts


def instance_hosts(instance: Mapping[str, Any]) -> set[str]:
    """Names and addresses of one DescribeInstances instance (private DNS and its first label, IPs)."""
    names: set[str] = set()
    for key in ("PrivateDnsName", "PrivateIpAddress", "PublicDnsName", "PublicIpAddress"):
        value = instance.get(key)
        if isinstance(value, str) and value:
            names.add(value.lower())
    private_dns = instance.get("PrivateDnsName")
    if isinstance(private_dns, str) and "." in private_dns:
        names.add(private_dns.split(".", 1)[0].lower())
    for interface in instance.get("NetworkInterfaces") or ():
        for address in interface.get("PrivateIpAddresses") or ():
            for key in ("PrivateIpAddress", "PrivateDnsName"):
                value = address.get(key)
                if isinstance(value, str) and value:
                    names.add(value.lower())
    return names


def _best(agents: Iterable[AgentRecord]) -> AgentRecord | None:
    """The agent of an instance among these (plastic.core.book.instances: the newest not GONE)."""
    by_id = {a.id: a for a in agents}
    best = agent_of_instance(AgentSighting(a.id, a.state is AgentState.GONE, a.created_at) for a in by_id.values())
    return None if best is None else by_id[best]


class AgentMap:
    """EC2 instance id -> Mesos agent id, from the agent records (see the module docstring)."""

    def __init__(self, store: Store, ec2: Any = None, *, cache_size: int = 4096):
        self.store = store
        self.ec2 = ec2
        self.cache_size = cache_size
        self._agents: list[AgentRecord] = []
        self._hosts: OrderedDict[str, frozenset[str]] = OrderedDict()  # DescribeInstances, per instance

    def refresh(self) -> None:
        self._agents = self.store.agents()

    def lookup(self, instance_id: str) -> tuple[str | None, str | None]:
        """``(agent id, how)``: how is ``attribute`` or ``hostname``; ``(None, None)`` when unmapped."""
        by_attribute = _best(a for a in self._agents if agent_instance_id(a) == instance_id)
        if by_attribute is not None:
            return by_attribute.id, "attribute"
        hosts = self._instance_hosts(instance_id)
        if hosts:
            by_host = _best(a for a in self._agents if agent_hosts(a) & hosts)
            if by_host is not None:
                return by_host.id, "hostname"
        return None, None

    def _instance_hosts(self, instance_id: str) -> frozenset[str]:
        if self.ec2 is None or not self._agents:
            return frozenset()
        if instance_id in self._hosts:
            self._hosts.move_to_end(instance_id)
            return self._hosts[instance_id]
        try:
            reply = self.ec2.describe_instances(InstanceIds=[instance_id])
        except Exception as exc:  # noqa: BLE001 - a failed lookup only means "not mapped"
            code = error_code(exc)
            if code in _DENIED:
                log.warning("ec2:DescribeInstances refused (%s); mapping instances to agents by the "
                            "instance_id attribute only", describe(exc))
                self.ec2 = None
                return frozenset()
            if code not in _NOT_FOUND:
                log.warning("DescribeInstances %s failed: %s", instance_id, describe(exc))
                return frozenset()  # not cached: try again next time
            hosts: frozenset[str] = frozenset()
        else:
            instances = [i for r in reply.get("Reservations", ()) for i in r.get("Instances", ())]
            hosts = frozenset().union(*(instance_hosts(i) for i in instances)) if instances else frozenset()
        self._hosts[instance_id] = hosts
        while len(self._hosts) > self.cache_size:
            self._hosts.popitem(last=False)
        return hosts


# ------------------------------------------------------------------------------ the poller


def check_queue(sqs: Any, queue_url: str) -> str:
    """The queue's ARN; MissingQueueError (exit 2) or AwsError (exit 1) when it cannot be read."""
    try:
        reply = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    except Exception as exc:  # noqa: BLE001 - every AWS failure becomes one line
        if is_missing_queue(exc):
            raise MissingQueueError("no such SQS queue (check the URL, the region and the account)",
                                    source=queue_url) from None
        raise AwsError(f"cannot read the SQS queue: {describe(exc)}", source=queue_url) from None
    return str(reply.get("Attributes", {}).get("QueueArn", ""))


def notice_fields(event: SpotEvent, agent_id: str | None) -> dict[str, Any]:
    """The fields of the notice for ``event`` (None values are left out by the store)."""
    return {"terminate_at": event.terminate_at_epoch_s, "action": event.action,
            "instance_id": event.instance_id, "agent_id": agent_id, "source": SOURCE,
            "event_time": event.event_time, "region": event.region, "event_id": event.event_id,
            # as the IMDS watcher (plastic.watch) writes it: when the rebalance was recommended
            "notice_time": event.event_time if event.kind == REBALANCE else None}


def notice_target(event: SpotEvent, agent_id: str | None) -> str:
    return f"agent:{agent_id}" if agent_id else f"instance:{event.instance_id}"


@dataclass
class PollStats:
    """What the rounds so far did (summed by `SqsNoticePoller.run`)."""

    rounds: int = 0
    received: int = 0
    published: int = 0
    duplicates: int = 0
    ignored: int = 0
    deleted: int = 0
    kept: int = 0  # left on the queue: the publish failed
    errors: int = 0  # failed receives / deletes

    def add(self, other: PollStats) -> None:
        for name in ("rounds", "received", "published", "duplicates", "ignored", "deleted", "kept", "errors"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


class SqsNoticePoller:
    """Reads spot events from one SQS queue and publishes them as notices (module docstring)."""

    def __init__(
        self,
        store: Store,
        queue_url: str,
        *,
        sqs: Any,
        ec2: Any = None,
        wait_seconds: int = MAX_WAIT_SECONDS,
        max_messages: int = MAX_BATCH,
        visibility_timeout: int | None = None,
        backoff_initial_s: float = 1.0,
        backoff_max_s: float = 60.0,
        sleep: Callable[[float], None] | None = None,
        on_notice: Callable[[str, str, Mapping[str, Any]], None] | None = None,
    ):
        if not 0 <= wait_seconds <= MAX_WAIT_SECONDS:
            raise ValueError(f"wait_seconds must be 0..{MAX_WAIT_SECONDS}, got {wait_seconds}")
        if not 1 <= max_messages <= MAX_BATCH:
            raise ValueError(f"max_messages must be 1..{MAX_BATCH}, got {max_messages}")
        self.store = store
        self.queue_url = queue_url
        self.sqs = sqs
        self.agents = AgentMap(store, ec2)
        self.wait_seconds = wait_seconds
        self.max_messages = max_messages
        self.visibility_timeout = visibility_timeout
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.sleep = sleep
        self.on_notice = on_notice  # (kind, target, fields) after each notice published
        self._failures = 0

    # ------------------------------------------------------------------ start

    def check_queue(self) -> str:
        """The queue's ARN; MissingQueueError (exit 2) or AwsError (exit 1) when it cannot be read."""
        return check_queue(self.sqs, self.queue_url)

    # ------------------------------------------------------------------ rounds

    def run(self, *, max_rounds: int | None = None, stop: threading.Event | None = None) -> PollStats:
        """Receive rounds until ``stop`` is set or ``max_rounds`` rounds ran; returns the totals.

        A set ``stop`` ends the loop after the receive in flight (at most ``wait_seconds``)."""
        totals = PollStats()
        while (max_rounds is None or totals.rounds < max_rounds) and not (stop is not None and stop.is_set()):
            stats = self.poll_once()
            totals.add(stats)
            if stats.errors or stats.kept:
                self._back_off(stop)
            else:
                self._failures = 0
        return totals

    def poll_once(self) -> PollStats:
        """One receive (long poll), then publish and delete what it got."""
        stats = PollStats(rounds=1)
        request: dict[str, Any] = {"QueueUrl": self.queue_url, "MaxNumberOfMessages": self.max_messages,
                                   "WaitTimeSeconds": self.wait_seconds,
                                   "MessageSystemAttributeNames": ["SentTimestamp", "ApproximateReceiveCount"]}
        if self.visibility_timeout is not None:
            request["VisibilityTimeout"] = self.visibility_timeout
        try:
            messages = self.sqs.receive_message(**request).get("Messages", [])
        except Exception as exc:  # noqa: BLE001 - logged, then the loop backs off
            stats.errors += 1
            what = "the queue is gone" if is_missing_queue(exc) else "receive failed"
            log.error("SQS %s: %s: %s", self.queue_url, what, describe(exc))
            return stats
        stats.received = len(messages)
        if not messages:
            return stats
        try:
            self.agents.refresh()
        except Exception as exc:  # noqa: BLE001 - Redis down: nothing can be published this round
            log.error("reading agent records failed: %s: %s; %d message(s) left on the queue",
                      type(exc).__name__, exc, len(messages))
            stats.kept = len(messages)
            stats.errors += 1
            return stats
        done: list[dict[str, str]] = []
        for message in messages:
            if self._handle(message, stats):
                done.append({"Id": str(len(done)), "ReceiptHandle": message["ReceiptHandle"]})
        self._delete(done, stats)
        return stats

    def _handle(self, message: Mapping[str, Any], stats: PollStats) -> bool:
        """Publish one message; True when it may be deleted."""
        message_id = message.get("MessageId", "?")
        event = parse_event(message.get("Body", ""), received_at=_sent_at(message))
        if isinstance(event, Ignored):
            stats.ignored += 1
            log.info("SQS message %s ignored and deleted: %s", message_id, event.reason)
            return True
        try:
            agent_id, how = self.agents.lookup(event.instance_id)
        except Exception as exc:  # noqa: BLE001 - a failed lookup only loses the mapping
            log.warning("mapping %s to an agent failed: %s: %s", event.instance_id, type(exc).__name__, exc)
            agent_id, how = None, None
        target = notice_target(event, agent_id)
        fields = notice_fields(event, agent_id)
        try:
            stream_id = self.store.publish_notice(event.kind, target, fields)
        except Exception as exc:  # noqa: BLE001 - Redis down: leave the message for a later receive
            stats.kept += 1
            log.error("publishing %s %s (SQS message %s) failed: %s: %s; left on the queue",
                      event.kind, target, message_id, type(exc).__name__, exc)
            return False
        if stream_id is None:
            stats.duplicates += 1
            log.info("%s %s already published (SQS message %s); deleted", event.kind, target, message_id)
        else:
            stats.published += 1
            log.info("notice %s %s (instance %s%s, action %s, terminate at %s)", event.kind, target,
                     event.instance_id, f", agent by {how}" if how else ", no agent known", event.action,
                     event.terminate_at_epoch_s)
            if self.on_notice is not None:
                try:
                    self.on_notice(event.kind, target, {k: v for k, v in fields.items() if v is not None})
                except Exception as exc:  # noqa: BLE001 - a display failure must not keep the message
                    log.warning("on_notice failed: %s: %s", type(exc).__name__, exc)
        return True

    def _delete(self, entries: list[dict[str, str]], stats: PollStats) -> None:
        if not entries:
            return
        try:
            reply = self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        except Exception as exc:  # noqa: BLE001 - they come back after the visibility timeout; the store dedupes
            stats.errors += 1
            log.error("deleting %d SQS message(s) failed: %s (they will be received again)",
                      len(entries), describe(exc))
            return
        failed = reply.get("Failed", [])
        for entry in failed:
            log.error("deleting SQS message failed: %s: %s", entry.get("Code"), entry.get("Message"))
        stats.deleted += len(entries) - len(failed)

    def _back_off(self, stop: threading.Event | None) -> None:
        self._failures += 1
        delay = min(self.backoff_max_s, self.backoff_initial_s * 2 ** (self._failures - 1))
        delay *= random.uniform(0.5, 1.0)
        log.info("backing off %.1f s after %d failure(s)", delay, self._failures)
        if self.sleep is not None:
            self.sleep(delay)
        elif stop is not None:
            stop.wait(delay)
        else:
            time.sleep(delay)


def _sent_at(message: Mapping[str, Any]) -> float | None:
    raw = (message.get("Attributes") or {}).get("SentTimestamp")
    try:
        return int(raw) / 1000.0 if raw is not None else None
    except (TypeError, ValueError):
        return None
