"""The driver against recorded master bytes: dispatch, acknowledgements, reconnection rules.

A loopback server plays back what a real Mesos 1.11.1 master sent (or small
scripted variations of it).  These are unit tests of the driver's logic; the
integration tests in test_local_cluster.py run it against the real local master.
"""

from __future__ import annotations

import base64
import json
import socket
import time

import pytest

from plastic.mesos import calls
from plastic.mesos.driver import DriverStatus, MesosSchedulerDriver
from plastic.mesos.driver_errors import (
    DriverNotRunningError,
    DriverQueueFullError,
    MesosConnectionError,
    MesosError,
    OfferExpiredError,
)

from . import transcripts
from .helpers import Recorder
from .replay import Conn, ReplayServer, ok_headers, plain, replay_reads

FW = "066d9997-c53c-4de7-9401-d3a7385d2fa4-0000"
RECORDED_STREAM_ID = "c856a2d7-34c6-4e54-8dae-fc4e86b795bd"
MASTER_INFO = {"id": "m", "hostname": "127.0.0.1", "port": 5050, "version": "1.11.1",
               "address": {"hostname": "127.0.0.1", "ip": "127.0.0.1", "port": 5050}}
FAST = {"backoff_initial_s": 0.05, "backoff_max_s": 0.2, "stop_timeout_s": 5}


def subscribed(fid: str, interval: float = 15.0) -> dict:
    return {"type": "SUBSCRIBED", "subscribed": {"framework_id": {"value": fid}, "heartbeat_interval_seconds": interval,
                                                 "master_info": MASTER_INFO}}


def offer(offer_id: str, agent: str = "S1") -> dict:
    return {"id": {"value": offer_id}, "framework_id": {"value": FW}, "agent_id": {"value": agent}, "hostname": "127.0.0.1",
            "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1.0}, "role": "*"}],
            "attributes": [{"name": "preemptible", "type": "TEXT", "text": {"value": "true"}}]}


def script(fid: str = FW, *, stream_id: str = "stream-1", interval: float = 15.0, events: tuple = (),
           then: str = "hold", delay: float = 0.0, heartbeat_every: float | None = None, hold_s: float = 30.0):
    """SUBSCRIBED (+HEARTBEAT) and some events, then hold the stream open, end it
    (terminating chunk) or close the socket."""

    def run(conn: Conn, _req) -> None:
        time.sleep(delay)
        conn.send(ok_headers(stream_id))
        conn.event(subscribed(fid, interval))
        conn.event({"type": "HEARTBEAT"})
        for e in events:
            conn.event(e)
        if then == "end":
            conn.send(b"0\r\n\r\n")
            conn.hold(5)
        elif then == "hold":
            if heartbeat_every:
                end = time.monotonic() + hold_s
                while time.monotonic() < end and not conn.server.stopping.is_set():
                    time.sleep(heartbeat_every)
                    if not conn.event({"type": "HEARTBEAT"}):
                        return
            else:
                conn.hold(hold_s)
        # "close": return, the server closes the socket without ending the stream

    return run


def fw_info(**extra) -> dict:
    return {"user": "root", "name": "plastic-test", **extra}


def make_driver(sched, server, **kw) -> MesosSchedulerDriver:
    opts = dict(FAST)
    opts.update(kw)
    return MesosSchedulerDriver(sched, opts.pop("framework_info", fw_info(failover_timeout=60.0)), server.url, **opts)


@pytest.fixture
def stop_later():
    drivers = []
    yield drivers.append
    for d in drivers:
        d.abort()


# ----------------------------------------------------------------------------------


def test_recorded_stream_dispatch_and_explicit_acknowledgements(stop_later):
    recorded = transcripts.stream("08_SUBSCRIBE_stream.txt")
    sched = Recorder()
    with ReplayServer([replay_reads(recorded.reads), script(FW, stream_id="stream-2")]) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("reregistered", 1)
        names = sched.names()
        assert names[0] == "registered" and names[1] == "heartbeat"
        assert sched.of("registered")[0][0] == {"value": FW}
        assert names.index("resourceOffers") < names.index("statusUpdate")
        assert "offerRescinded" in names and "slaveLost" in names
        assert names[names.index("slaveLost"):].count("disconnected") == 1  # the recorded stream ended (TEARDOWN)
        assert driver.framework_id == FW
        expected = [e["update"]["status"] for e in transcripts.events("08_SUBSCRIBE_stream.events.jsonl") if e["type"] == "UPDATE"]
        assert [s for s in sched.statuses()] == expected
        assert driver.flush(5)
        acks = server.calls("ACKNOWLEDGE")
        assert len(acks) == sum(1 for s in expected if s.get("uuid"))
        # Exactly what the real scheduler sent: bytes and headers (transcripts 13-15).
        bodies = {a.body for a in acks}
        for name in ("13_ACKNOWLEDGE_echo-1_TASK_STARTING.txt", "14_ACKNOWLEDGE_echo-1_TASK_RUNNING.txt",
                     "15_ACKNOWLEDGE_echo-1_TASK_FINISHED.txt", "23_ACKNOWLEDGE_sleep-kill-1_TASK_KILLED.txt"):
            assert transcripts.exchange(name).request_body in bodies, name
        first = acks[0]
        assert first.path == "/api/v1/scheduler"
        assert first.headers["mesos-stream-id"] == RECORDED_STREAM_ID
        assert first.headers["content-type"] == "application/json"
        assert first.headers["accept"] == "application/json"
        assert "authorization" not in first.headers
        # The re-subscription after the stream ended is a failover with the saved id.
        second = server.subscribes()[1].json
        assert second["framework_id"] == {"value": FW}
        assert second["subscribe"]["framework_info"]["id"] == {"value": FW}
        assert driver.status is DriverStatus.DRIVER_RUNNING


def test_raising_callbacks_do_not_stop_the_driver(stop_later, caplog):
    class Flaky(Recorder):
        def resourceOffers(self, driver, offers):
            super().resourceOffers(driver, offers)
            raise RuntimeError("offer handling bug")

        def statusUpdate(self, driver, status):
            super().statusUpdate(driver, status)
            if status["task_id"]["value"] == "echo-1":
                raise ValueError("update handling bug")

    recorded = transcripts.stream("08_SUBSCRIBE_stream.txt")
    sched = Flaky(acknowledge=False)
    with ReplayServer([replay_reads(recorded.reads), script(FW, stream_id="stream-2")]) as server:
        driver = make_driver(sched, server, use_implicit_acknowledgements=True)
        stop_later(driver)
        driver.start()
        sched.wait_count("reregistered", 1)
        assert "slaveLost" in sched.names()  # callbacks kept coming after the exceptions
        assert driver.status is DriverStatus.DRIVER_RUNNING
        assert driver.flush(5)
        assert server.calls("TEARDOWN") == []  # pymesos would have torn the framework down
        # Implicit acknowledgements: every update with a uuid, except those whose callback raised.
        updates = [s for s in sched.statuses() if s.get("uuid")]
        acked = {a.json["acknowledge"]["uuid"] for a in server.calls("ACKNOWLEDGE")}
        assert acked == {s["uuid"] for s in updates if s["task_id"]["value"] != "echo-1"}
    assert "offer handling bug" in caplog.text and "Traceback" in caplog.text


def test_failed_over_error_aborts_without_reconnecting(stop_later):
    recorded = transcripts.stream("51_SUBSCRIBE_A_first.txt")
    sched = Recorder()
    with ReplayServer([replay_reads(recorded.reads), script()]) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("error", 1)
        assert "Framework failed over" in sched.of("error")[0][0]
        assert driver.join(5) is DriverStatus.DRIVER_ABORTED
        assert len(server.subscribes()) == 1
        with pytest.raises(DriverNotRunningError):
            driver.reviveOffers()


def test_stream_end_resubscribes_as_a_failover(stop_later):
    sched = Recorder()
    with ReplayServer([script("F1", then="end"), script("F1", stream_id="stream-2")]) as server:
        driver = make_driver(sched, server, framework_info=fw_info(failover_timeout=3600.0))
        stop_later(driver)
        driver.start()
        sched.wait_count("reregistered", 1)
        assert sched.names()[:3] == ["registered", "heartbeat", "disconnected"]
        first, second = (r.json for r in server.subscribes())
        assert "id" not in first["subscribe"]["framework_info"] and "framework_id" not in first
        assert first["subscribe"]["framework_info"]["failover_timeout"] == 3600.0
        assert second["subscribe"]["framework_info"]["id"] == {"value": "F1"}
        assert second["framework_id"] == {"value": "F1"}
        assert driver.stream_id == "stream-2"


def test_zero_failover_timeout_resubscribes_as_a_new_framework(stop_later):
    sched = Recorder()
    with ReplayServer([script("F1", then="end"), script("F2", stream_id="stream-2")]) as server:
        driver = make_driver(sched, server, framework_info=fw_info())  # no failover timeout: Mesos' 0
        stop_later(driver)
        driver.start()
        sched.wait_count("registered", 2)
        first, second = (r.json for r in server.subscribes())
        for sub in (first, second):
            assert "failover_timeout" not in sub["subscribe"]["framework_info"]  # never injected
        assert "id" not in second["subscribe"]["framework_info"] and "framework_id" not in second
        assert [a[0]["value"] for a in sched.of("registered")] == ["F1", "F2"]
        assert driver.framework_id == "F2"


def test_heartbeat_watchdog_reconnects_a_silent_stream(stop_later):
    sched = Recorder()
    with ReplayServer([script(interval=0.2), script(stream_id="stream-2")]) as server:
        driver = make_driver(sched, server, heartbeat_grace=2)
        stop_later(driver)
        driver.start()
        sched.wait_count("reregistered", 1, timeout=5)
        t1, t2 = (r.at for r in server.subscribes())
        # Dead after interval x grace = 0.4 s without events (the HEARTBEAT right after SUBSCRIBED counts).
        assert 0.35 < t2 - t1 < 5.0
        assert "disconnected" in sched.names()


def test_heartbeats_keep_the_watchdog_quiet(stop_later):
    sched = Recorder()
    with ReplayServer([script(interval=0.5, heartbeat_every=0.1, hold_s=5.0), script(stream_id="stream-2")]) as server:
        driver = make_driver(sched, server, heartbeat_grace=2)
        stop_later(driver)
        driver.start()
        sched.wait_count("registered")
        # twice the watchdog's deadline of 1 s: 20 heartbeats the master sent 0.1 s apart, after the first
        sched.wait_count("heartbeat", 21, timeout=30)
        assert len(server.subscribes()) == 1 and "disconnected" not in sched.names()
        assert sched.names().count("heartbeat") >= 5


def test_calls_while_disconnected_are_replayed_but_offer_calls_dropped(stop_later):
    sched = Recorder()
    futures = {}
    task = {"name": "t", "task_id": {"value": "t-1"}, "resources": [], "command": {"value": "true"}}

    def on_disconnected(driver):
        if futures:
            return
        futures["kill"] = driver.killTask("t-0", "S1")
        futures["ack"] = driver.acknowledgeStatusUpdate({"task_id": {"value": "t-0"}, "agent_id": {"value": "S1"}, "uuid": "dXVpZA=="})
        futures["reconcile"] = driver.reconcileTasks([])
        futures["launch"] = driver.launchTasks("O-1", [task])
        futures["decline"] = driver.declineOffer("O-2")

    sched.hooks["disconnected"] = on_disconnected
    first = script(events=({"type": "OFFERS", "offers": {"offers": [offer("O-1"), offer("O-2")]}},), then="close")
    with ReplayServer([first, script(stream_id="stream-2", delay=0.3)]) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("reregistered", 1)
        assert driver.flush(5)
        for name in ("kill", "ack", "reconcile"):
            assert futures[name].result(5) == 202
        for name in ("launch", "decline"):
            with pytest.raises(OfferExpiredError):
                futures[name].result(5)
        replayed = server.calls()
        # KILL and RECONCILE keep their order (one lane); ACKNOWLEDGEs travel on their own lanes.
        assert [r.type for r in replayed if r.type != "ACKNOWLEDGE"] == ["KILL", "RECONCILE"]
        assert sorted(r.type for r in replayed) == ["ACKNOWLEDGE", "KILL", "RECONCILE"]
        assert all(r.headers["mesos-stream-id"] == "stream-2" for r in replayed)
        assert server.calls("KILL")[0].json == {"framework_id": {"value": FW}, "type": "KILL",
                                    "kill": {"task_id": {"value": "t-0"}, "agent_id": {"value": "S1"}}}
        # The task of the dropped ACCEPT is reported dropped, as the master does for an invalid offer.
        dropped = sched.wait_state("t-1", "TASK_DROPPED")
        assert dropped["reason"] == "REASON_INVALID_OFFERS" and dropped["agent_id"] == {"value": "S1"}
        assert "uuid" not in dropped
        # Offers of the old connection stay dead after the reconnection too.
        with pytest.raises(OfferExpiredError):
            driver.declineOffer("O-1").result(5)
        assert server.calls("DECLINE") == []


def test_redirect_to_the_leading_master(stop_later):
    sched = Recorder()
    with ReplayServer([script()]) as leader:
        location = f"//127.0.0.1:{leader.port}/api/v1/scheduler"

        def redirect(conn, _req):
            conn.send(plain(307, "Temporary Redirect", "", extra=f"Location: {location}\r\n"))

        with ReplayServer([redirect]) as follower:
            driver = make_driver(sched, follower)
            stop_later(driver)
            driver.start()
            sched.wait_count("registered")
            assert driver.master_url == leader.url
            assert driver.reviveOffers().result(5) == 202
            assert [r.type for r in leader.calls()] == ["REVIVE"]
            assert follower.calls() == []


def test_503_is_retried(stop_later):
    sched = Recorder()

    def unavailable(conn, _req):
        conn.send(plain(503, "Service Unavailable", "Master is not the leader or is recovering"))

    with ReplayServer([unavailable, unavailable, script()]) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("registered")
        assert len(server.subscribes()) == 3
        assert "error" not in sched.names()


def test_404_of_a_restarting_master_is_retried_after_a_first_subscription(stop_later):
    """A Mesos 1.11 master just restarted answered the re-SUBSCRIBE with 404 (its scheduler API not yet
    routed): the driver aborted and the run hung (make test-compose, master killed mid-run)."""
    sched = Recorder()

    def not_yet(conn, _req):
        conn.send(plain(404, "Not Found", ""))

    with ReplayServer([script("F1", then="end"), not_yet, not_yet, script("F1", stream_id="stream-2")]) as server:
        driver = make_driver(sched, server, framework_info=fw_info(failover_timeout=3600.0))
        stop_later(driver)
        driver.start()
        sched.wait_count("reregistered", 1)
        assert len(server.subscribes()) == 4 and "error" not in sched.names()
        assert driver.stream_id == "stream-2"


def test_404_before_any_subscription_is_a_wrong_url(stop_later):
    sched = Recorder()

    def not_found(conn, _req):
        conn.send(plain(404, "Not Found", ""))

    with ReplayServer([not_found, script()]) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("error")
        assert driver.join(5) is DriverStatus.DRIVER_ABORTED and len(server.subscribes()) == 1


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_on_subscribe_call_error(stop_later, status):
    sched = Recorder()

    def refuse(conn, _req):
        conn.send(plain(status, "Unauthorized" if status == 401 else "Forbidden", "Not authorized",
                        extra='WWW-Authenticate: Basic realm="mesos"\r\n'))

    with ReplayServer([refuse, script()]) as server:
        driver = make_driver(sched, server, principal="fw", secret="wrong")
        stop_later(driver)
        driver.start()
        sched.wait_count("error")
        assert "Not authorized" in sched.of("error")[0][0]
        assert driver.join(5) is DriverStatus.DRIVER_ABORTED
        assert len(server.subscribes()) == 1


def test_basic_auth_on_every_request(stop_later):
    sched = Recorder()
    with ReplayServer([script()]) as server:
        driver = make_driver(sched, server, principal="plastic-fw", secret="s3cret")
        stop_later(driver)
        driver.start()
        sched.wait_count("registered")
        driver.reviveOffers().result(5)
        expected = "Basic " + base64.b64encode(b"plastic-fw:s3cret").decode()
        assert [r.headers.get("authorization") for r in server.requests] == [expected, expected]
        assert server.subscribes()[0].json["subscribe"]["framework_info"]["principal"] == "plastic-fw"


def test_stale_subscription_answer_resubscribes_and_replays(stop_later):
    sched = Recorder()
    refused = []

    def on_call(req):
        if req.type == "REVIVE" and not refused:
            refused.append(req)
            return 403, "Forbidden", b"Framework is not subscribed"
        return None

    with ReplayServer([script(), script(stream_id="stream-2")], on_call=on_call) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("registered")
        future = driver.reviveOffers()
        assert future.result(5) == 202
        revives = server.calls("REVIVE")
        assert [r.headers["mesos-stream-id"] for r in revives] == ["stream-1", "stream-2"]
        # the replayed REVIVE can be answered before the re-subscription's callback is dispatched
        # (the replay goes to the sender first): wait for it rather than look once
        sched.wait_count("reregistered")


def test_framework_not_found_after_a_master_failover_resubscribes_and_replays(stop_later):
    """A new master that has not seen our re-subscription yet answers 400 "Framework cannot be
    found" (transcript 04): the driver re-subscribes with the same id and replays the call."""
    sched = Recorder()
    refused = []

    def on_call(req):
        if req.type == "KILL" and not refused:
            refused.append(req)
            return 400, "Bad Request", b"Framework cannot be found"
        return None

    with ReplayServer([script("F1"), script("F1", stream_id="stream-2")], on_call=on_call) as server:
        driver = make_driver(sched, server, framework_info=fw_info(failover_timeout=60.0))
        stop_later(driver)
        driver.start()
        sched.wait_count("registered")
        assert driver.killTask("t-1").result(5) == 202
        assert [r.headers["mesos-stream-id"] for r in server.calls("KILL")] == ["stream-1", "stream-2"]
        assert server.subscribes()[1].json["framework_id"] == {"value": "F1"}
        sched.wait_count("reregistered")
        assert driver.framework_id == "F1" and len(sched.of("registered")) == 1


def test_framework_not_found_is_an_error_once_resubscribing_does_not_help(stop_later):
    sched = Recorder()

    def on_call(req):
        return (400, "Bad Request", b"Framework cannot be found") if req.type == "REVIVE" else None

    scripts = [script("F1", stream_id=f"stream-{i}") for i in range(1, 6)]
    with ReplayServer(scripts, on_call=on_call) as server:
        driver = make_driver(sched, server, framework_info=fw_info(failover_timeout=60.0))
        stop_later(driver)
        driver.start()
        sched.wait_count("registered")
        with pytest.raises(MesosError) as err:
            driver.reviveOffers().result(10)
        assert err.value.status_code == 400 and err.value.body == "Framework cannot be found"
        assert len(server.calls("REVIVE")) == 4  # the first try and three after re-subscribing
        assert driver.status is DriverStatus.DRIVER_RUNNING


def test_accept_without_answer_is_reconciled(stop_later):
    sched = Recorder()
    task = {"name": "t", "task_id": {"value": "t-9"}, "resources": [], "command": {"value": "true"}}

    def on_offers(driver, offers):
        sched.futures = [driver.launchTasks(offers[0]["id"], [task], filters=2.0)]

    sched.hooks["resourceOffers"] = on_offers
    first = script(events=({"type": "OFFERS", "offers": {"offers": [offer("O-5", agent="S7")]}},))
    with ReplayServer([first], on_call=lambda req: "close" if req.type == "ACCEPT" else None) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("resourceOffers")
        server.wait_for(lambda: any(r.type == "RECONCILE" for r in server.requests), 5, "the RECONCILE call")
        with pytest.raises(MesosConnectionError):
            sched.futures[0].result(5)
        (accept,) = server.calls("ACCEPT")  # not retried: it might have launched
        launched = accept.json["accept"]["operations"][0]["launch"]["task_infos"][0]
        assert launched["agent_id"] == {"value": "S7"}  # filled in from the offer
        assert accept.json["accept"]["filters"] == {"refuse_seconds": 2.0}
        (reconcile,) = server.calls("RECONCILE")
        assert reconcile.json["reconcile"] == {"tasks": [{"task_id": {"value": "t-9"}, "agent_id": {"value": "S7"}}]}


def test_stop_tears_down_and_stop_failover_does_not(stop_later):
    sched = Recorder()
    with ReplayServer([script("F1")]) as server:
        driver = make_driver(sched, server)
        driver.start()
        sched.wait_count("registered")
        assert driver.stop() is DriverStatus.DRIVER_STOPPED
        (teardown,) = server.calls("TEARDOWN")
        assert teardown.body == calls.encode({"framework_id": {"value": "F1"}, "type": "TEARDOWN"})
        assert teardown.headers["mesos-stream-id"] == "stream-1"
    sched = Recorder()
    with ReplayServer([script("F1")]) as server:
        driver = make_driver(sched, server)
        driver.start()
        sched.wait_count("registered")
        driver.killTask("t").result(5)
        assert driver.stop(failover=True) is DriverStatus.DRIVER_STOPPED
        assert [r.type for r in server.calls()] == ["KILL"]
        assert "disconnected" not in sched.names()


def test_pending_calls_are_bounded_and_failed_on_abort():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    driver = MesosSchedulerDriver(Recorder(), fw_info(), f"127.0.0.1:{port}", max_pending_calls=2, **FAST)
    with pytest.raises(DriverNotRunningError):
        driver.reviveOffers()
    driver.start()
    first = driver.reviveOffers()
    driver.killTask("x")
    with pytest.raises(DriverQueueFullError):
        driver.suppressOffers()
    assert driver.abort() is DriverStatus.DRIVER_ABORTED
    with pytest.raises(DriverNotRunningError):
        first.result(5)
    assert driver.join(5) is DriverStatus.DRIVER_ABORTED


def test_acknowledging_an_update_without_uuid_is_a_no_op(stop_later):
    sched = Recorder()
    with ReplayServer([script()]) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("registered")
        assert driver.acknowledgeStatusUpdate({"task_id": {"value": "t"}, "state": "TASK_LOST"}).result(1) is None
        assert driver.flush(5) and server.calls() == []


def test_join_from_a_callback_is_refused(stop_later):
    sched = Recorder()
    seen = []

    def on_registered(driver, *_):
        try:
            driver.join()
        except RuntimeError as exc:
            seen.append(str(exc))

    sched.hooks["registered"] = on_registered
    with ReplayServer([script()]) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("registered")
        sched.wait_for(lambda: bool(seen), 5)
        assert "would wait for itself" in seen[0]
        assert json.loads(server.subscribes()[0].body)["type"] == "SUBSCRIBE"


def test_other_calls_reach_the_master_as_built(stop_later):
    sched = Recorder()
    with ReplayServer([script("F1")]) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("registered")
        futures = [
            driver.sendFrameworkMessage("E1", "S1", b"\x00hello"),
            driver.requestResources([{"agent_id": {"value": "S1"}}]),
            driver.shutdownExecutor("E1", "S1"),
            driver.reviveOffers(["analytics"]),
            driver.suppressOffers("analytics"),
            driver.updateFramework({"name": "renamed", "user": "root", "failover_timeout": 60.0}),
        ]
        assert [f.result(5) for f in futures] == [202] * len(futures)
        got = {r.type: r.json for r in server.calls()}
        assert got["MESSAGE"]["message"] == {"agent_id": {"value": "S1"}, "executor_id": {"value": "E1"},
                                             "data": base64.b64encode(b"\x00hello").decode()}
        assert got["REQUEST"]["request"] == {"requests": [{"agent_id": {"value": "S1"}}]}
        assert got["SHUTDOWN"]["shutdown"] == {"executor_id": {"value": "E1"}, "agent_id": {"value": "S1"}}
        assert got["REVIVE"]["revive"] == {"roles": ["analytics"]}
        assert got["SUPPRESS"]["suppress"] == {"roles": ["analytics"]}
        info = got["UPDATE_FRAMEWORK"]["update_framework"]["framework_info"]
        assert info["id"] == {"value": "F1"} and info["name"] == "renamed"
        assert {c["type"] for c in info["capabilities"]} >= {"PARTITION_AWARE", "TASK_KILLING_STATE"}
        assert all(r.json["framework_id"] == {"value": "F1"} for r in server.calls())


def test_call_errors_carry_the_masters_text(stop_later, caplog):
    sched = Recorder()
    unavailable = []

    def on_call(req):
        if req.type == "KILL":
            return 400, "Bad Request", b"Failed to validate scheduler::Call: Expecting 'kill' to be present"
        if req.type == "REVIVE" and len(unavailable) < 2:
            unavailable.append(req)
            return 503, "Service Unavailable", b"Master is recovering"
        if req.type == "DRAIN_AGENT":
            return 400, "Bad Request", b"Unknown agent"
        return None

    with ReplayServer([script()], on_call=on_call) as server:
        driver = make_driver(sched, server)
        stop_later(driver)
        driver.start()
        sched.wait_count("registered")
        with pytest.raises(MesosError) as info:
            driver.killTask("t").result(5)
        assert info.value.status_code == 400 and "Expecting 'kill'" in info.value.body
        assert driver.reviveOffers().result(5) == 202  # 503 retried
        assert len(server.calls("REVIVE")) == 3
        with pytest.raises(MesosError, match="Unknown agent"):
            driver.drainAgent("S404")
        assert [r.path for r in server.calls("DRAIN_AGENT")] == ["/api/v1"]
        assert driver.status is DriverStatus.DRIVER_RUNNING
    assert "Expecting 'kill' to be present" in caplog.text
