"""EventBridge EC2 events -> SpotEvent (or the reason they are ignored); never an exception."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plastic.core.book.spot_events import (
    DETAIL_TYPES,
    INTERRUPTION_WARNING,
    REBALANCE_RECOMMENDATION,
    STATE_CHANGE,
    Ignored,
    SpotEvent,
    parse_event,
    parse_time,
)

IID = "i-1234567890abcdef0"
T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()


def event(detail_type: str, detail: object, *, time: object = "2026-01-01T12:00:00Z", **extra: object) -> dict:
    doc = {"version": "0", "id": "12345678-1234-1234-1234-123456789012", "detail-type": detail_type,
           "source": "aws.ec2", "account": "123456789012", "time": time, "region": "us-east-2",
           "resources": [f"arn:aws:ec2:us-east-2:123456789012:instance/{IID}"], "detail": detail}
    doc.update(extra)
    return doc


def body(doc: object) -> str:
    return json.dumps(doc)


@pytest.mark.parametrize("action, deadline", [("terminate", T0 + 120), ("stop", T0 + 120), ("hibernate", T0)])
def test_an_interruption_warning_is_a_terminate_notice_two_minutes_after_the_event(action, deadline):
    got = parse_event(body(event(INTERRUPTION_WARNING, {"instance-id": IID, "instance-action": action})))
    assert got == SpotEvent("terminate", IID, deadline, action, "us-east-2", T0, INTERRUPTION_WARNING,
                            "12345678-1234-1234-1234-123456789012")


def test_an_explicit_termination_time_wins():
    got = parse_event(event(INTERRUPTION_WARNING, {"instance-id": IID, "instance-action": "terminate",
                                                   "instance-termination-time": "2026-01-01T12:05:00Z"}))
    assert isinstance(got, SpotEvent) and got.terminate_at_epoch_s == T0 + 300


def test_a_rebalance_recommendation_has_no_deadline():
    got = parse_event(body(event(REBALANCE_RECOMMENDATION, {"instance-id": IID})))
    assert isinstance(got, SpotEvent)
    assert (got.kind, got.instance_id, got.terminate_at_epoch_s, got.action, got.event_time) == (
        "rebalance", IID, None, None, T0)


@pytest.mark.parametrize("state", ["shutting-down", "terminated", "stopping", "stopped"])
def test_a_state_change_away_from_running_is_a_state_notice(state):
    got = parse_event(body(event(STATE_CHANGE, {"instance-id": IID, "state": state})))
    assert isinstance(got, SpotEvent)
    assert (got.kind, got.action, got.terminate_at_epoch_s) == ("state", state, T0)


@pytest.mark.parametrize("state", ["pending", "running"])
def test_a_state_change_to_running_is_ignored(state):
    got = parse_event(body(event(STATE_CHANGE, {"instance-id": IID, "state": state})))
    assert isinstance(got, Ignored) and "not going away" in got.reason and got.detail_type == STATE_CHANGE


def test_an_sns_envelope_is_unwrapped():
    inner = body(event(REBALANCE_RECOMMENDATION, {"instance-id": IID}))
    wrapped = {"Type": "Notification", "MessageId": "m1", "TopicArn": "arn:aws:sns:us-east-2:1:t",
               "Message": inner, "Timestamp": "2026-01-01T12:00:01.000Z"}
    got = parse_event(body(wrapped))
    assert isinstance(got, SpotEvent) and got.kind == "rebalance"
    bad = parse_event(body({"Type": "Notification", "Message": "{nope"}))
    assert isinstance(bad, Ignored) and bad.reason.startswith("SNS envelope: body is not JSON")


def test_the_instance_id_may_come_from_the_resources_arn():
    got = parse_event(event(REBALANCE_RECOMMENDATION, {}))
    assert isinstance(got, SpotEvent) and got.instance_id == IID


def test_an_unreadable_time_falls_back_to_the_receive_time():
    detail = {"instance-id": IID, "instance-action": "terminate"}
    got = parse_event(event(INTERRUPTION_WARNING, detail, time="yesterday"), received_at=T0 + 1)
    assert isinstance(got, SpotEvent) and got.event_time is None and got.terminate_at_epoch_s == T0 + 121
    none = parse_event(event(INTERRUPTION_WARNING, detail, time=None))
    assert isinstance(none, SpotEvent) and none.terminate_at_epoch_s is None


@pytest.mark.parametrize("raw, needle", [
    ("", "not JSON"),
    ("{not json", "not JSON"),
    (b"\xff\xfe", "not UTF-8"),
    ("[1, 2]", "JSON list, not an object"),
    ('"text"', "JSON str"),
    ("{}", "no detail-type"),
    (body({"detail-type": 7}), "detail-type is not a string"),
    (body(event("EC2 Instance Launch Successful", {})), "not a spot event"),
    (body(event(INTERRUPTION_WARNING, "oops")), "detail is not an object"),
    (body(event(INTERRUPTION_WARNING, {"instance-action": "terminate"}, resources=[])), "no instance-id"),
    (body(event(INTERRUPTION_WARNING, {"instance-id": "i-XYZ", "instance-action": "terminate"})),
     "malformed instance-id"),
    (body(event(INTERRUPTION_WARNING, {"instance-id": IID, "instance-action": "explode"})), "instance-action"),
    (body(event(INTERRUPTION_WARNING, {"instance-id": IID})), "instance-action None"),
    (body(event(STATE_CHANGE, {"instance-id": IID})), "no state"),
    (body(event(STATE_CHANGE, {"instance-id": IID, "state": "melting"})), "unknown state"),
])
def test_malformed_messages_are_ignored_with_a_reason(raw, needle):
    got = parse_event(raw)
    assert isinstance(got, Ignored), got
    assert needle in got.reason, got.reason


def test_parse_time():
    assert parse_time("2026-01-01T12:00:00Z") == T0
    assert parse_time("2026-01-01T12:00:00") == T0  # naive: UTC
    assert parse_time("2026-01-01T13:00:00+01:00") == T0
    for bad in (None, 5, "", "soon", "9999-99-99T00:00:00Z", "x" * 1000):
        assert parse_time(bad) is None


# ------------------------------------------------------------------------- never raises

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)
detail_keys = st.sampled_from(["instance-id", "instance-action", "state", "instance-termination-time", "x"])
detail_values = st.one_of(json_values, st.just(IID), st.sampled_from(
    ["terminate", "stop", "hibernate", "running", "stopped", "2026-01-01T12:00:00Z"]))
near_events = st.fixed_dictionaries(
    {"detail-type": st.one_of(st.sampled_from(DETAIL_TYPES), json_values),
     "detail": st.one_of(st.dictionaries(detail_keys, detail_values, max_size=4), json_values)},
    optional={"time": st.one_of(st.text(max_size=40), json_values), "region": json_values, "id": json_values,
              "resources": st.one_of(st.lists(st.text(max_size=60), max_size=3), json_values),
              "Type": st.just("Notification"), "Message": st.one_of(st.text(max_size=60), json_values)},
)


def _check(got: object) -> None:
    assert isinstance(got, (SpotEvent, Ignored))
    if isinstance(got, Ignored):
        assert got.reason and not got.reason.startswith("unreadable event"), got.reason
    else:
        assert got.kind in ("terminate", "rebalance", "state")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(json_values, near_events), st.one_of(st.none(), st.floats()))
def test_parsing_arbitrary_json_never_raises(doc, received_at):
    _check(parse_event(json.dumps(doc), received_at=received_at))
    _check(parse_event(doc if isinstance(doc, dict) else json.dumps(doc)))
    _check(parse_event(json.dumps({"Type": "Notification", "Message": json.dumps(doc)})))


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=80), st.binary(max_size=80)))
def test_parsing_arbitrary_text_never_raises(raw):
    _check(parse_event(raw))
