"""Which callback each event calls, with which arguments."""

from __future__ import annotations

import logging

import pytest

from plastic.mesos.events import EventDecodeError, callback_for, decode_event, invoke

from . import transcripts


def test_recorded_events_map_to_pymesos_callbacks():
    events = transcripts.events("08_SUBSCRIBE_stream.events.jsonl")
    mapped = [callback_for(e) for e in events]
    names = [m[0] for m in mapped if m]
    assert names[0] == "registered"
    framework_id, master_info = mapped[0][1]
    assert framework_id == {"value": "066d9997-c53c-4de7-9401-d3a7385d2fa4-0000"}
    assert master_info["version"] == "1.11.1"
    assert names[1] == "heartbeat"
    assert "resourceOffers" in names and "statusUpdate" in names and "offerRescinded" in names
    # The first OFFERS carries both agents, with their TEXT attributes, as dicts.
    offers = next(m[1][0] for m in mapped if m and m[0] == "resourceOffers")
    assert len(offers) == 2
    attrs = {a["name"]: a["text"]["value"] for a in offers[0]["attributes"]}
    assert attrs == {"preemptible": "false", "cluster": "core"}
    # UPDATE -> statusUpdate(status dict as received, uuid kept as the base64 string).
    status = next(m[1][0] for m in mapped if m and m[0] == "statusUpdate")
    assert status["state"] == "TASK_STARTING" and status["uuid"] == "T7dkzVdcQ5+W1nk1AvfvEQ=="
    # FAILURE with only agent_id -> slaveLost(agent_id).
    (lost,) = [m for m in mapped if m and m[0] == "slaveLost"]
    assert lost[1] == ({"value": "066d9997-c53c-4de7-9401-d3a7385d2fa4-S1"},)
    rescind = next(m for m in mapped if m and m[0] == "offerRescinded")
    assert rescind[1][0]["value"].startswith("066d9997")


def test_failed_over_error_event():
    events = transcripts.events("51_SUBSCRIBE_A_first.events.jsonl")
    assert callback_for(events[-1]) == ("error", ("Framework failed over",))


def test_subscribed_again_is_reregistered():
    event = transcripts.events("59_SUBSCRIBE_C_resubscribe_after_disconnect.events.jsonl")[0]
    name, args = callback_for(event, first_subscription=False)
    assert name == "reregistered" and args[0]["hostname"] == "127.0.0.1"


def test_other_event_types():
    assert callback_for({"type": "MESSAGE", "message": {"agent_id": {"value": "S1"}, "executor_id": {"value": "E1"}, "data": "aGk="}}) == (
        "frameworkMessage",
        ({"value": "E1"}, {"value": "S1"}, b"hi"),
    )
    assert callback_for({"type": "FAILURE", "failure": {"agent_id": {"value": "S1"}, "executor_id": {"value": "E1"}, "status": 9}}) == (
        "executorLost",
        ({"value": "E1"}, {"value": "S1"}, 9),
    )
    assert callback_for({"type": "INVERSE_OFFERS", "inverse_offers": {"inverse_offers": [{"id": {"value": "I"}}]}}) == (
        "inverseOffers",
        ([{"id": {"value": "I"}}],),
    )
    assert callback_for({"type": "RESCIND_INVERSE_OFFER", "rescind_inverse_offer": {"inverse_offer_id": {"value": "I"}}}) == (
        "inverseOfferRescinded",
        ({"value": "I"},),
    )
    assert callback_for({"type": "UPDATE_OPERATION_STATUS", "update_operation_status": {"status": {"state": "OPERATION_FINISHED"}}}) == (
        "operationStatusUpdate",
        ({"state": "OPERATION_FINISHED"},),
    )
    assert callback_for({"type": "HEARTBEAT"}) == ("heartbeat", ())
    assert callback_for({"type": "SOMETHING_NEW"}) is None
    assert callback_for({"type": "FAILURE", "failure": {}}) is None


def test_decode_event_rejects_garbage():
    assert decode_event(b'{"type":"HEARTBEAT"}') == {"type": "HEARTBEAT"}
    for bad in (b"not json", b"[1]", b'{"no": "type"}'):
        with pytest.raises(EventDecodeError):
            decode_event(bad)


def test_invoke_contains_callback_exceptions(caplog):
    class Boom:
        def statusUpdate(self, driver, status):
            raise RuntimeError("bug in the scheduler")

    with caplog.at_level(logging.ERROR, logger="plastic.mesos.events"):
        assert invoke(Boom(), None, "statusUpdate", ({},)) is False
    assert "statusUpdate raised" in caplog.text
    assert "RuntimeError: bug in the scheduler" in caplog.text  # the traceback is logged
    assert invoke(Boom(), None, "resourceOffers", ([],)) is True  # missing callbacks are fine
