"""How the driver keeps its subscription: SUBSCRIBE, read the event stream, reconnect.

A mixin of MesosSchedulerDriver (plastic/mesos/driver.py), which owns the state it uses: the stream
thread runs `_stream_loop`, which subscribes (following 307 redirects to the leading master),
reads RecordIO events until the stream ends, breaks or falls silent (the heartbeat watchdog), and
reconnects with backoff; SUBSCRIBED replays the calls queued while disconnected (offer calls of an
earlier connection are dropped); events go to the dispatcher thread in order.
"""

from __future__ import annotations

import copy
import logging
import time
from typing import Any

from plastic.mesos import calls
from plastic.mesos.connection import (
    JSON_HEADERS,
    SCHEDULER_PATH,
    HttpStream,
    StreamTimeout,
    error_for_status,
)
from plastic.mesos.driver_errors import (
    MasterResolutionError,
    MesosAuthError,
    MesosConnectionError,
    MesosError,
)
from plastic.mesos.events import (
    FAILED_OVER_MESSAGE,
    EventDecodeError,
    callback_for,
    decode_event,
)
from plastic.mesos.recordio import Decoder, RecordIOError
from plastic.mesos.sending import _Call, _resolve

logger = logging.getLogger(__name__)

DEFAULT_HEARTBEAT_INTERVAL_S = 15.0
MAX_SUBSCRIBE_REDIRECTS = 5


class EventStream:
    """The stream thread's side of the driver (see the module docstring)."""

    def _stream_loop(self) -> None:
        redirects = 0
        try:
            while not self._stop_event.is_set():
                outcome, detail = self._subscribe_once()
                if self._stop_event.is_set():
                    break
                if outcome == "redirect":
                    redirects += 1
                    if redirects <= MAX_SUBSCRIBE_REDIRECTS:
                        continue
                    logger.warning("SUBSCRIBE redirected %d times in a row; backing off", redirects)
                    self._endpoint.reset()
                else:
                    redirects = 0
                if outcome in ("fatal", "replaced"):
                    self._fail(str(detail))
                    break
                delay = self._backoff.next_delay()
                self.reconnects += 1
                logger.warning("Mesos master connection %s (%s); reconnecting in %.2f s", outcome, detail, delay)
                if self._stop_event.wait(delay):
                    break
        except Exception:
            logger.exception("the event stream thread failed")
            self._fail("internal error in the event stream thread (see the log)")

    def _subscription_framework_info(self) -> dict[str, Any]:
        with self._lock:
            info = copy.deepcopy(self._framework_info)
            if self._ever_subscribed and info.get("id") and float(info.get("failover_timeout", 0.0)) <= 0:
                logger.warning(
                    "failover_timeout is 0: the master removed framework %s when the connection dropped; "
                    "subscribing as a new framework (its tasks are gone)",
                    info["id"]["value"],
                )
                del info["id"]
        return info

    def _subscribe_once(self) -> tuple[str, object]:
        """One SUBSCRIBE and its stream.  Returns (outcome, detail); outcome is one of
        redirect, retry, ended, dropped, fatal, replaced."""
        try:
            base = self._endpoint.base_url()
        except MasterResolutionError as exc:
            return "retry", exc
        body = calls.encode(calls.subscribe(self._subscription_framework_info()))
        stream = HttpStream(
            base + SCHEDULER_PATH,
            body,
            JSON_HEADERS,
            connect_timeout_s=self._connect_timeout_s,
            response_timeout_s=self._subscribe_timeout_s,
            auth=self._auth,
        )
        with self._lock:
            if self._stop_event.is_set():
                return "ended", "stopping"
            self._stream = stream
        subscribed = False
        try:
            try:
                stream.open()
            except MesosConnectionError as exc:
                self._endpoint.reset()  # the leader may be elsewhere now
                return "retry", exc
            if stream.status == 307:
                location = stream.headers.get("location")
                if not location:
                    return "retry", "307 without Location"
                self._endpoint.redirect(location)
                return "redirect", location
            if stream.status != 200:
                return self._refused(stream)
            stream_id = stream.headers.get("mesos-stream-id")
            if not stream_id:
                return "retry", "SUBSCRIBE answer without Mesos-Stream-Id"
            decoder = Decoder()
            for chunk in stream.iter_body():
                for record in decoder.feed(chunk):
                    event = decode_event(record)
                    self.last_event_at = time.monotonic()
                    kind = event["type"]
                    if kind == "SUBSCRIBED":
                        self._on_subscribed(event, stream_id, stream)
                        subscribed = True
                        self._backoff.reset()
                    elif kind == "ERROR":
                        message = event.get("error", {}).get("message", "")
                        if message == FAILED_OVER_MESSAGE:
                            return "replaced", f"{message}: another scheduler subscribed with framework id {self.framework_id}"
                        return "fatal", f"master sent ERROR: {message}"
                    else:
                        self._on_event(event)
            return "ended", "the master ended the event stream"
        except StreamTimeout:
            interval = self._heartbeat_interval_s or DEFAULT_HEARTBEAT_INTERVAL_S
            return "dropped", f"no event for {interval * self._heartbeat_grace:.1f} s (heartbeat watchdog)"
        except MesosConnectionError as exc:
            return "dropped", exc
        except (RecordIOError, EventDecodeError) as exc:
            logger.error("garbled event stream: %s", exc)
            return "dropped", exc
        finally:
            stream.close()
            with self._lock:
                if self._stream is stream:
                    self._stream = None
            if subscribed:
                self._on_disconnected()

    def _refused(self, stream: HttpStream) -> tuple[str, object]:
        """What a SUBSCRIBE answered with neither 200 nor 307 means: retry or give up."""
        text = stream.read_body().decode("utf-8", "replace")
        error = error_for_status(stream.status, text, "SUBSCRIBE", stream.url)
        logger.error("SUBSCRIBE refused: %s", error.message)
        if stream.status == 503 or stream.status >= 500:
            return "retry", error
        if stream.status == 404 and self._ever_subscribed:
            # a master that has just (re)started answers 404 until its scheduler API is routed (seen on
            # Mesos 1.11 after a master restart); before a first subscription, a 404 is a wrong URL and
            # stays fatal
            return "retry", error
        if isinstance(error, MesosAuthError):
            return "fatal", f"SUBSCRIBE not authorised: {error.message}"
        return "fatal", f"SUBSCRIBE refused: {error.message}"

    def _on_subscribed(self, event: dict[str, Any], stream_id: str, stream: HttpStream) -> None:
        sub = event.get("subscribed", {})
        framework_id = calls.as_id(sub["framework_id"])
        interval = sub.get("heartbeat_interval_seconds")
        self._heartbeat_interval_s = float(interval) if interval else None
        if interval:
            stream.set_read_timeout(float(interval) * self._heartbeat_grace)
        else:
            logger.warning("the master sends no heartbeats: the heartbeat watchdog is off")
            stream.set_read_timeout(None)
        replay: list[_Call] = []
        dropped: list[_Call] = []
        with self._lock:
            changed = self._framework_id is not None and self._framework_id["value"] != framework_id["value"]
            first = not self._ever_subscribed or changed
            self._framework_id = framework_id
            self._framework_info["id"] = framework_id
            self._stream_id = stream_id
            self._connected = True
            self._epoch += 1
            self._ever_subscribed = True
            pending = list(self._pending)
            self._pending.clear()
            for call in pending:
                if changed or call.is_offer_call:
                    dropped.append(call)
                else:
                    replay.append(call)
                    self._enqueue_locked(call)
        if replay:
            logger.info("replaying %d call(s) queued while disconnected", len(replay))
        for call in dropped:
            if call.is_offer_call:
                self._drop_offer_call(call, "its offers belonged to the previous connection")
            else:
                logger.warning("dropping queued %s: it was made for framework %s, now %s", call.call_type, "the old", framework_id["value"])
                _resolve(call.future, error=MesosError("framework changed; call dropped", call_type=call.call_type))
        master_info = sub.get("master_info", {})
        logger.info(
            "subscribed as framework %s to master %s (stream %s, heartbeat %s s)",
            framework_id["value"],
            master_info.get("hostname", self._endpoint.base_url()),
            stream_id,
            interval,
        )
        cb = callback_for(event, first_subscription=first)
        if cb is not None:
            self._events.put(("callback", cb[0], cb[1]))

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        with self._lock:
            epoch = self._epoch
            if kind == "OFFERS":
                for offer in event.get("offers", {}).get("offers", []):
                    try:
                        self._live_offers[calls.id_value(offer["id"])] = offer.get("agent_id")
                    except (KeyError, TypeError):
                        logger.warning("offer without id: %r", offer)
            elif kind == "RESCIND":
                offer_id = event.get("rescind", {}).get("offer_id")
                if offer_id:
                    self._live_offers.pop(calls.id_value(offer_id), None)
        self._events.put(("event", epoch, event))

    def _on_disconnected(self) -> None:
        with self._lock:
            was_connected = self._connected
            self._connected = False
            self._stream_id = None
            self._dead_offers = self._live_offers
            self._live_offers = {}
        if was_connected and not self._stop_event.is_set():
            self._events.put(("callback", "disconnected", ()))

    def _suspect_connection(self, epoch: int, reason: str) -> None:
        """A call says our subscription is stale: drop the stream so it is re-established."""
        with self._lock:
            stream = self._stream if (self._epoch == epoch and self._connected) else None
        if stream is not None:
            logger.warning("dropping the event stream: %s", reason)
            stream.abort()
