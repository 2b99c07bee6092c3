"""How the driver sends calls: per-call records, sender lanes, replay after a reconnection.

A mixin of MesosSchedulerDriver (plastic/mesos/driver.py), which owns the state it uses."""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

from plastic.mesos import calls
from plastic.mesos.connection import (
    JSON_HEADERS,
    SCHEDULER_PATH,
    KeepAliveClient,
    error_for_status,
    post,
)
from plastic.mesos.driver_errors import (
    DriverNotRunningError,
    DriverQueueFullError,
    MesosConnectionError,
    MesosError,
    OfferExpiredError,
)
from plastic.mesos.status import DriverStatus

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class _Call:
    call_type: str
    body: dict[str, Any]
    future: Future
    offer_epoch: int | None = None  # for offer calls: the subscription their offers belong to
    is_offer_call: bool = False
    launches: list[tuple[dict[str, str], dict[str, str] | None]] = field(default_factory=list)
    tries: int = 0
    stale_answers: int = 0  # answers saying the master does not know our subscription (see _stale_subscription)


_STOP = object()
FRAMEWORK_NOT_FOUND = "Framework cannot be found"
MAX_STALE_ANSWERS = 3  # re-subscriptions one call may cause before its error is handed to the caller


def _stale_subscription(code: int, text: str) -> bool:
    """An answer to a call that means the master does not hold our subscription: 403 "Framework is
    not subscribed", 400 stream id mismatch, or 400 "Framework cannot be found" (a new master after a
    failover, which adopts the framework again when it re-subscribes with its id)."""
    return code == 403 or (code == 400 and ("stream id" in text.lower() or text == FRAMEWORK_NOT_FOUND))


def _resolve(future: Future, result: Any = None, error: BaseException | None = None) -> None:
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:  # cancelled by the caller, or resolved already
        pass


def _done_future(result: Any = None) -> Future:
    future: Future = Future()
    future.set_result(result)
    return future


class _Lane:
    """One sender thread with its own queue and keep-alive HTTP client."""

    def __init__(self, index: int, client: KeepAliveClient):
        self.index = index
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.client = client
        self.thread: threading.Thread | None = None


class CallSending:
    """Queueing, sending, retrying and replaying calls (see the driver's docstring)."""

    # ------------------------------------------------------------ call sending

    def _submit(self, call_type: str, body: dict[str, Any], *, offer_ids: list[str] | None = None,
                launches: list[tuple[dict[str, str], dict[str, str] | None]] | None = None) -> Future:
        future: Future = Future()
        call = _Call(call_type, body, future, is_offer_call=offer_ids is not None, launches=launches or [])
        expired_reason = None
        with self._lock:
            if self._status is not DriverStatus.DRIVER_RUNNING:
                raise DriverNotRunningError(f"driver is {self._status.name}; {call_type} not sent", call_type=call_type)
            if offer_ids is not None:
                if not self._connected:
                    expired_reason = "the connection to the master is down, and offers die with it"
                elif any(o in self._dead_offers for o in offer_ids):
                    expired_reason = "its offers belonged to an earlier connection"
                else:
                    for o in offer_ids:
                        self._live_offers.pop(o, None)
                    call.offer_epoch = self._epoch
            if expired_reason is None:
                if self._connected:
                    self._enqueue_locked(call)
                else:
                    if len(self._pending) >= self._max_pending:
                        raise DriverQueueFullError(
                            f"{len(self._pending)} calls already wait for the connection", call_type=call_type
                        )
                    self._pending.append(call)
        if expired_reason is not None:
            self._drop_offer_call(call, expired_reason)
        return future

    def _enqueue_locked(self, call: _Call) -> None:
        if call.call_type == "ACKNOWLEDGE" and self._n_lanes > 1:
            self._ack_rr = self._ack_rr % (self._n_lanes - 1) + 1
            lane = self._lanes[self._ack_rr]
        else:
            lane = self._lanes[0]
        self._in_lanes += 1
        lane.queue.put(call)

    def _requeue(self, call: _Call, sent_epoch: int) -> None:
        """Back to waiting for a connection (or straight to a lane if a new one is up)."""
        with self._lock:
            if self._status is not DriverStatus.DRIVER_RUNNING:
                error: MesosError | None = DriverNotRunningError("driver stopped before the call was sent", call_type=call.call_type)
            elif self._connected and self._epoch != sent_epoch:
                call.tries = 0
                self._enqueue_locked(call)
                return
            elif len(self._pending) >= self._max_pending:
                error = DriverQueueFullError("too many calls wait for the connection", call_type=call.call_type)
            else:
                call.tries = 0
                self._pending.append(call)
                return
        _resolve(call.future, error=error)

    def _drop_offer_call(self, call: _Call, reason: str) -> None:
        offers = call.body.get(call.body["type"].lower(), {})
        offer_ids = [o.get("value") for o in offers.get("offer_ids", offers.get("inverse_offer_ids", []))]
        logger.warning("dropping %s of offer(s) %s: %s", call.call_type, ", ".join(map(str, offer_ids)), reason)
        _resolve(call.future, error=OfferExpiredError(f"not sent: {reason}", call_type=call.call_type))
        for task_id, agent_id in call.launches:
            status: dict[str, Any] = {
                "task_id": task_id,
                "state": "TASK_DROPPED",
                "source": "SOURCE_MASTER",
                "reason": "REASON_INVALID_OFFERS",
                "message": f"Offer expired: {reason} (the ACCEPT was dropped by plastic's driver)",
                "timestamp": time.time(),
            }
            if agent_id:
                status["agent_id"] = agent_id
            self._events.put(("callback", "statusUpdate", (status,)))

    def _lane_loop(self, lane: _Lane) -> None:
        try:
            while True:
                call = lane.queue.get()
                if call is _STOP:
                    break
                try:
                    self._send(call, lane.client)
                except Exception as exc:
                    logger.exception("sending %s failed", call.call_type)
                    _resolve(call.future, error=exc)
                finally:
                    with self._idle:
                        self._in_lanes -= 1
                        if self._in_lanes == 0:
                            self._idle.notify_all()
            # fail whatever arrived after the stop sentinel
            while True:
                try:
                    call = lane.queue.get_nowait()
                except queue.Empty:
                    break
                if call is not _STOP:
                    _resolve(call.future, error=DriverNotRunningError("driver stopped", call_type=call.call_type))
                    with self._idle:
                        self._in_lanes -= 1
                        self._idle.notify_all()
        finally:
            lane.client.close()

    def _send(self, call: _Call, client: KeepAliveClient) -> None:
        while True:
            with self._lock:
                if self._status is not DriverStatus.DRIVER_RUNNING:
                    error = DriverNotRunningError(f"driver {self._status.name}: not sent", call_type=call.call_type)
                    expired = None
                elif call.is_offer_call and (not self._connected or call.offer_epoch != self._epoch):
                    error, expired = None, "the connection that brought its offers was lost before it was sent"
                elif not self._connected:
                    error = expired = None
                    self._pending.append(call)
                    return
                else:
                    error = expired = None
                    stream_id, framework_id, epoch = self._stream_id, self._framework_id, self._epoch
            if error is not None:
                _resolve(call.future, error=error)
                return
            if expired is not None:
                self._drop_offer_call(call, expired)
                return
            payload = calls.encode(calls.with_framework_id(call.body, framework_id))
            headers = {**JSON_HEADERS, "Mesos-Stream-Id": stream_id or ""}
            try:
                response = post(client, self._endpoint, SCHEDULER_PATH, payload, headers, call_type=call.call_type)
            except MesosConnectionError as exc:
                call.tries += 1
                if call.launches:
                    self._accept_in_doubt(call, exc)
                    return
                with self._lock:
                    still_current = self._connected and self._epoch == epoch
                if still_current and call.tries <= self._call_retries:
                    self._stop_event.wait(min(2.0, 0.05 * 2**call.tries))
                    continue
                if call.is_offer_call:
                    # Re-checked at the top of the loop: dropped if its connection is gone.
                    if not still_current:
                        continue
                    _resolve(call.future, error=exc)
                    return
                if still_current:
                    self._suspect_connection(epoch, f"{call.call_type} could not reach the master: {exc}")
                self._requeue(call, epoch)
                return
            except MesosError as exc:  # too many redirects
                logger.error("%s failed: %s", call.call_type, exc)
                _resolve(call.future, error=exc)
                return
            code = response.status_code
            if code in (200, 202):
                _resolve(call.future, code)
                return
            text = response.text.strip()
            if code == 503 and call.tries < self._call_retries:
                call.tries += 1
                logger.info("%s: master unavailable (503: %s), retrying", call.call_type, text)
                self._stop_event.wait(min(2.0, 0.1 * 2**call.tries))
                continue
            if _stale_subscription(code, text) and call.stale_answers < MAX_STALE_ANSWERS:
                # The master no longer knows our subscription: it dropped us (403, stream id
                # mismatch), or it is a new master after a failover that has not seen our
                # re-subscription yet (400 "Framework cannot be found").  Re-subscribe with the
                # same framework id; replay what can be replayed.
                call.stale_answers += 1
                self._suspect_connection(epoch, f"{call.call_type} got HTTP {code}: {text}")
                if call.is_offer_call:
                    self._drop_offer_call(call, f"the master refused the subscription (HTTP {code}: {text})")
                else:
                    self._requeue(call, epoch)
                return
            error = error_for_status(code, text, call.call_type, str(response.url))
            logger.error("%s call failed: %s", call.call_type, error.message)
            _resolve(call.future, error=error)
            return

    def _accept_in_doubt(self, call: _Call, exc: MesosError) -> None:
        """An ACCEPT with launches got no answer: the master may or may not have it.
        Retrying could launch twice (or report TASK_DROPPED for a running task), so
        the driver reconciles those tasks instead; their state comes back as updates."""
        task_ids = [t["value"] for t, _ in call.launches]
        logger.warning("ACCEPT launching %s got no answer (%s); reconciling those tasks", ", ".join(task_ids), exc)
        _resolve(call.future, error=exc)
        entries = [{"task_id": t, **({"agent_id": a} if a else {})} for t, a in call.launches]
        try:
            self._submit("RECONCILE", calls.reconcile(entries))
        except MesosError as err:
            logger.error("could not reconcile the in-doubt tasks: %s", err)
