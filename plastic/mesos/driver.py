"""MesosSchedulerDriver: plastic's client of the Mesos v1 scheduler HTTP API.

Method and callback names follow pymesos (and the old libmesos driver) so Mesos
users recognise them; the behaviour differs where pymesos is weak:

* the failover timeout is exactly what the caller gives (Mesos' default 0 when
  none); the framework id is kept, so re-subscribing after a lost connection is
  a failover when ``failover_timeout > 0`` (with 0 the master has already
  removed the framework, so the driver subscribes anew and calls ``registered``
  with the new id);
* a callback that raises is logged with its traceback and the driver carries on;
* calls made while disconnected are queued (bounded) and replayed after the
  next SUBSCRIBED, except ACCEPT/DECLINE of offers of an earlier connection:
  offers die with their connection, so those are dropped and logged, and every
  task such a dropped ACCEPT would have launched gets a TASK_DROPPED update
  (REASON_INVALID_OFFERS, no uuid) as the master itself would send for an
  invalid offer, so no caller waits forever for it;
* a heartbeat watchdog: no event for ``heartbeat_interval_seconds x
  heartbeat_grace`` (default grace 3, so 45 s with Mesos' 15 s heartbeats)
  means the connection is dead; it is dropped and re-established;
* reconnection with exponential backoff and full jitter, for as long as the
  driver runs; 307 redirects lead to the leading master (kept for later calls),
  503 is retried, 401/403 on SUBSCRIBE are reported through ``error``; HTTP
  basic auth with principal/secret on every request; ``zk://`` master URLs
  through kazoo;
* a master failover (the master restarted, or another one leads now) is a lost
  connection like any other: the driver retries until a master answers, then
  re-subscribes with its framework id, which a new master accepts as a
  re-registration (it answers SUBSCRIBED with that id), so ``reregistered`` is
  called, and queued calls are replayed (offer calls dropped, as above).  With
  ``failover_timeout`` 0 the driver subscribes anew instead and calls
  ``registered`` with the new id (see above).  A new master knows nothing of the
  tasks of the old one until their agents re-register: reconcile explicitly
  (task ids with their agent ids); tasks whose agents never come back are
  answered TASK_UNKNOWN or TASK_UNREACHABLE (TASK_LOST without
  PARTITION_AWARE).  A call answered 400 "Framework cannot be found", 403 or a
  stream id mismatch means the master does not hold our subscription (a new
  master that has not seen our re-subscription yet): the stream is dropped and
  re-established and the call replayed (at most 3 times per call);
* explicit acknowledgements by default; with ``use_implicit_acknowledgements``
  the driver acknowledges each update that carries a uuid right after
  ``statusUpdate`` returns normally;
* an ERROR event ("Framework failed over": another scheduler took our
  framework id, or any other ERROR, which Mesos sends only for unrecoverable
  conditions) aborts the driver and calls ``error``; a stream that merely ends
  or breaks is a network event and leads to a reconnection.

Threading model: one thread reads the event stream (and reconnects), one
thread runs every scheduler callback in event order, and a few sender threads
("lanes", ``sender_threads``, default 3) POST calls, each over its own
keep-alive connection (no new TCP connection per call, no thread per call):
lane 0 carries every call whose order matters (ACCEPT, DECLINE, KILL, REVIVE,
SUPPRESS, RECONCILE, ...) in the order they were made; ACKNOWLEDGEs are spread
over the other lanes, so they never wait behind a large ACCEPT.  The
call methods are thread-safe and do not wait for the network: each returns a
:class:`concurrent.futures.Future` resolved with the HTTP status (202) or a
:class:`~plastic.mesos.errors.MesosError`; wait on it only if you need to.
Operator calls (``drainAgent``...) are synchronous.
"""

from __future__ import annotations

import collections
import copy
import getpass
import logging
import queue
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Self

import httpx

from plastic.mesos import calls
from plastic.mesos.calls import FiltersLike, IdLike
from plastic.mesos.connection import (
    JSON_HEADERS,
    SCHEDULER_PATH,
    Backoff,
    HttpStream,
    KeepAliveClient,
    StreamTimeout,
    error_for_status,
    post,
)
from plastic.mesos.errors import (
    DriverNotRunningError,
    DriverQueueFullError,
    MasterResolutionError,
    MesosAuthError,
    MesosConnectionError,
    MesosError,
    OfferExpiredError,
)
from plastic.mesos.events import (
    CONNECTION_SCOPED,
    FAILED_OVER_MESSAGE,
    EventDecodeError,
    callback_for,
    decode_event,
    invoke,
)
from plastic.mesos.masters import MasterEndpoint
from plastic.mesos.operator import OperatorClient
from plastic.mesos.recordio import Decoder, RecordIOError

logger = logging.getLogger(__name__)

REQUIRED_CAPABILITIES = ("PARTITION_AWARE", "TASK_KILLING_STATE")
DEFAULT_HEARTBEAT_INTERVAL_S = 15.0
MAX_SUBSCRIBE_REDIRECTS = 5


class DriverStatus(IntEnum):
    """The old libmesos driver's Status values."""

    DRIVER_NOT_STARTED = 1
    DRIVER_RUNNING = 2
    DRIVER_ABORTED = 3
    DRIVER_STOPPED = 4


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


class MesosSchedulerDriver:
    """A Mesos v1 HTTP scheduler driver with pymesos-compatible method names.

    ``framework_info`` needs ``name`` (``user`` defaults to the current user);
    set ``id`` to fail over to an existing framework.  ``master`` is
    ``http(s)://host:port``, ``host:port`` or ``zk://host:2181,.../mesos``.

    Options: ``principal``/``secret`` (HTTP basic auth on every request, and
    ``framework_info.principal``); ``failover_timeout_s`` (sets
    ``framework_info.failover_timeout``; nothing is injected when None);
    ``capabilities`` (added to PARTITION_AWARE and TASK_KILLING_STATE, which are
    always asked for); ``heartbeat_grace`` (the stream is dead after that many
    heartbeat intervals without any event; default 3); ``backoff_initial_s`` /
    ``backoff_max_s`` (reconnection delays, full jitter); ``subscribe_timeout_s``
    (connecting and waiting for the SUBSCRIBE answer); ``call_timeout_s`` and
    ``call_retries`` (per call; 503 and lost connections are retried);
    ``sender_threads`` (lanes, at least 1); ``max_pending_calls`` (calls kept
    while disconnected; beyond, DriverQueueFullError); ``stop_timeout_s``.
    """

    def __init__(
        self,
        scheduler: Any,
        framework_info: Mapping[str, Any],
        master: str,
        *,
        principal: str | None = None,
        secret: str | None = None,
        use_implicit_acknowledgements: bool = False,
        failover_timeout_s: float | None = None,
        capabilities: Iterable[str | Mapping[str, Any]] = (),
        heartbeat_grace: float = 3.0,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        connect_timeout_s: float = 5.0,
        subscribe_timeout_s: float = 10.0,
        call_timeout_s: float = 10.0,
        call_retries: int = 3,
        sender_threads: int = 3,
        max_pending_calls: int = 10_000,
        stop_timeout_s: float = 10.0,
        zk_timeout_s: float = 10.0,
    ):
        if heartbeat_grace < 1:
            raise ValueError("heartbeat_grace must be at least 1 (heartbeat intervals)")
        self._scheduler = scheduler
        self._framework_info = self._prepare_framework_info(framework_info, failover_timeout_s, principal, capabilities)
        self._endpoint = MasterEndpoint(master, zk_timeout_s=zk_timeout_s)
        self._auth = (principal, secret or "") if principal else None
        self.implicit_acknowledgements = use_implicit_acknowledgements
        self._heartbeat_grace = float(heartbeat_grace)
        self._backoff = Backoff(backoff_initial_s, backoff_max_s)
        self._connect_timeout_s = connect_timeout_s
        self._subscribe_timeout_s = subscribe_timeout_s
        self._call_timeout_s = call_timeout_s
        self._call_retries = call_retries
        self._max_pending = max_pending_calls
        self._stop_timeout_s = stop_timeout_s
        self._n_lanes = max(1, int(sender_threads))

        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # notified when no call is queued in a lane
        self._stop_event = threading.Event()
        self._status = DriverStatus.DRIVER_NOT_STARTED
        self._stopping = False
        self._framework_id: dict[str, str] | None = (
            dict(self._framework_info["id"]) if self._framework_info.get("id") else None
        )
        self._stream_id: str | None = None
        self._stream: HttpStream | None = None
        self._connected = False
        self._ever_subscribed = False
        self._epoch = 0  # bumped at every SUBSCRIBED
        self._heartbeat_interval_s: float | None = None
        self._live_offers: dict[str, dict[str, str] | None] = {}  # offer id -> agent id, current connection
        self._dead_offers: dict[str, dict[str, str] | None] = {}  # offers of the previous connection
        self._pending: collections.deque[_Call] = collections.deque()
        self._in_lanes = 0
        self._ack_rr = 0
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._lanes: list[_Lane] = []
        self._threads: list[threading.Thread] = []
        self._sync_client = self._new_client()
        self.operator = OperatorClient(self._endpoint, self._sync_client)
        self.last_event_at: float | None = None  # time.monotonic() of the last event read
        self.reconnects = 0

    # ------------------------------------------------------------------ setup

    @staticmethod
    def _prepare_framework_info(
        info: Mapping[str, Any],
        failover_timeout_s: float | None,
        principal: str | None,
        capabilities: Iterable[str | Mapping[str, Any]],
    ) -> dict[str, Any]:
        fi = copy.deepcopy(dict(info))
        if not fi.get("name"):
            raise ValueError("framework_info needs a name")
        if not fi.get("user"):
            fi["user"] = getpass.getuser()
        if failover_timeout_s is not None:
            if "failover_timeout" in fi and float(fi["failover_timeout"]) != float(failover_timeout_s):
                logger.warning(
                    "failover_timeout_s=%s overrides framework_info.failover_timeout=%s",
                    failover_timeout_s,
                    fi["failover_timeout"],
                )
            fi["failover_timeout"] = float(failover_timeout_s)
        if principal and not fi.get("principal"):
            fi["principal"] = principal
        if fi.get("id"):
            fi["id"] = calls.as_id(fi["id"])
        caps = [dict(c) for c in fi.get("capabilities", [])]
        have = {c.get("type") for c in caps}
        for cap in (*REQUIRED_CAPABILITIES, *capabilities):
            entry = {"type": cap} if isinstance(cap, str) else dict(cap)
            if entry.get("type") not in have:
                caps.append(entry)
                have.add(entry.get("type"))
        fi["capabilities"] = caps
        return fi

    def _new_client(self) -> httpx.Client:
        return httpx.Client(
            timeout=httpx.Timeout(self._call_timeout_s, connect=self._connect_timeout_s),
            auth=httpx.BasicAuth(*self._auth) if self._auth else None,
            trust_env=False,
            follow_redirects=False,
            limits=httpx.Limits(max_connections=8, max_keepalive_connections=8),
        )

    # ------------------------------------------------------------ properties

    @property
    def status(self) -> DriverStatus:
        return self._status

    @property
    def framework_id(self) -> str | None:
        with self._lock:
            return self._framework_id["value"] if self._framework_id else None

    @property
    def framework_info(self) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._framework_info)

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def stream_id(self) -> str | None:
        return self._stream_id

    @property
    def master_url(self) -> str:
        """The base URL of the master calls go to (after redirects)."""
        return self._endpoint.base_url()

    @property
    def heartbeat_interval_s(self) -> float | None:
        return self._heartbeat_interval_s

    @property
    def failover_timeout_s(self) -> float:
        return float(self._framework_info.get("failover_timeout", 0.0))

    # -------------------------------------------------------------- lifecycle

    def start(self) -> DriverStatus:
        """Start the threads; subscription happens in the background."""
        with self._lock:
            if self._status is not DriverStatus.DRIVER_NOT_STARTED:
                return self._status
            self._status = DriverStatus.DRIVER_RUNNING
        self._lanes = [
            _Lane(i, KeepAliveClient(connect_timeout_s=self._connect_timeout_s, timeout_s=self._call_timeout_s, auth=self._auth))
            for i in range(self._n_lanes)
        ]
        for lane in self._lanes:
            lane.thread = threading.Thread(target=self._lane_loop, args=(lane,), name=f"mesos-send-{lane.index}", daemon=True)
        stream = threading.Thread(target=self._stream_loop, name="mesos-stream", daemon=True)
        dispatcher = threading.Thread(target=self._dispatch_loop, name="mesos-callbacks", daemon=True)
        self._threads = [stream, dispatcher, *(lane.thread for lane in self._lanes if lane.thread)]
        for t in self._threads:
            t.start()
        return DriverStatus.DRIVER_RUNNING

    def stop(self, failover: bool = False) -> DriverStatus:
        """Stop the driver.  Without ``failover`` the framework is torn down (TEARDOWN:
        the master kills its tasks); with it the connection is just closed and the
        framework survives for ``failover_timeout`` so a new driver can take it over."""
        in_driver = threading.current_thread() in self._threads
        with self._lock:
            if self._status is DriverStatus.DRIVER_NOT_STARTED:
                self._status = DriverStatus.DRIVER_STOPPED
                self._close_clients()
                return self._status
            if self._status is not DriverStatus.DRIVER_RUNNING or self._stopping:
                status = self._status  # stopped, aborted, or another thread is stopping it
            else:
                status = None
                self._stopping = True
        if status is not None:
            if not in_driver:
                self.join(self._stop_timeout_s)
                if self._status is not DriverStatus.DRIVER_RUNNING:
                    self._sync_client.close()
            return self._status
        if not self.flush(self._stop_timeout_s):
            logger.warning("stop: calls still queued after %.1f s are abandoned", self._stop_timeout_s)
        self._stop_event.set()  # no reconnection from now on
        if not failover:
            self._send_teardown()
        with self._lock:
            if self._status is DriverStatus.DRIVER_RUNNING:
                self._status = DriverStatus.DRIVER_STOPPED
            status = self._status
        self._shutdown()
        if threading.current_thread() not in self._threads:
            self.join(self._stop_timeout_s)
            self._sync_client.close()
        return status

    def abort(self) -> DriverStatus:
        """Stop at once: no TEARDOWN (the framework survives for its failover timeout),
        queued calls are abandoned."""
        with self._lock:
            if self._status is DriverStatus.DRIVER_RUNNING:
                self._status = DriverStatus.DRIVER_ABORTED
            elif self._status is DriverStatus.DRIVER_NOT_STARTED:
                self._status = DriverStatus.DRIVER_ABORTED
                self._close_clients()
                return self._status
            status = self._status
        self._stop_event.set()
        self._shutdown()
        if threading.current_thread() not in self._threads:
            self.join(self._stop_timeout_s)
            self._sync_client.close()
        return status

    def join(self, timeout: float | None = None) -> DriverStatus:
        """Block until the driver has stopped or aborted (and its threads ended)."""
        current = threading.current_thread()
        if current in self._threads and self._status is DriverStatus.DRIVER_RUNNING:
            raise RuntimeError("join() from a driver thread (a callback) would wait for itself")
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in list(self._threads):
            if t is current:
                continue
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self._status

    def run(self) -> DriverStatus:
        self.start()
        return self.join()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is DriverStatus.DRIVER_RUNNING:
            self.stop(failover=True)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every call handed to the sender lanes has been sent (calls queued
        while disconnected wait for the connection and are not counted)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._in_lanes > 0:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def _send_teardown(self) -> None:
        with self._lock:
            stream_id, framework_id, connected = self._stream_id, self._framework_id, self._connected
        if not connected or framework_id is None:
            logger.warning("stop: not subscribed, so no TEARDOWN was sent (the framework may outlive us)")
            return
        body = calls.encode(calls.with_framework_id(calls.teardown(), framework_id))
        try:
            response = post(
                self._sync_client,
                self._endpoint,
                SCHEDULER_PATH,
                body,
                {**JSON_HEADERS, "Mesos-Stream-Id": stream_id or ""},
                call_type="TEARDOWN",
            )
        except MesosError as exc:
            logger.error("TEARDOWN failed: %s", exc)
            return
        if response.status_code != 202:
            logger.error("TEARDOWN failed: HTTP %s: %s", response.status_code, response.text.strip())
        else:
            logger.info("framework %s torn down", framework_id["value"])

    def _shutdown(self) -> None:
        """Wake every thread so it ends; fail what is still queued."""
        self._stop_event.set()
        with self._lock:
            stream = self._stream
            pending = list(self._pending)
            self._pending.clear()
        if stream is not None:
            stream.abort()
        for call in pending:
            _resolve(call.future, error=DriverNotRunningError(f"driver {self._status.name}: not sent", call_type=call.call_type))
        for lane in self._lanes:
            lane.queue.put(_STOP)
        self._events.put(_STOP)

    def _close_clients(self) -> None:
        for client in [self._sync_client, *(lane.client for lane in self._lanes)]:
            try:
                client.close()
            except Exception:
                logger.debug("closing an HTTP client failed", exc_info=True)

    # ---------------------------------------------------------- stream thread

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
                text = stream.read_body().decode("utf-8", "replace")
                error = error_for_status(stream.status, text, "SUBSCRIBE", stream.url)
                logger.error("SUBSCRIBE refused: %s", error.message)
                if stream.status == 503 or stream.status >= 500:
                    return "retry", error
                if isinstance(error, MesosAuthError):
                    return "fatal", f"SUBSCRIBE not authorised: {error.message}"
                return "fatal", f"SUBSCRIBE refused: {error.message}"
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

    def _fail(self, message: str) -> None:
        """Abort after an unrecoverable condition; the error callback gets the message."""
        logger.error("Mesos driver aborting: %s", message)
        with self._lock:
            if self._status is DriverStatus.DRIVER_RUNNING:
                self._status = DriverStatus.DRIVER_ABORTED
            self._connected = False
        self._events.put(("callback", "error", (message,)))
        self._shutdown()

    def _suspect_connection(self, epoch: int, reason: str) -> None:
        """A call says our subscription is stale: drop the stream so it is re-established."""
        with self._lock:
            stream = self._stream if (self._epoch == epoch and self._connected) else None
        if stream is not None:
            logger.warning("dropping the event stream: %s", reason)
            stream.abort()

    # ------------------------------------------------------ dispatcher thread

    def _dispatch_loop(self) -> None:
        while True:
            item = self._events.get()
            if item is _STOP:
                break
            try:
                if item[0] == "event":
                    self._dispatch_event(item[1], item[2])
                else:
                    invoke(self._scheduler, self, item[1], item[2])
            except Exception:
                logger.exception("dispatching %r failed", item[:2])

    def _dispatch_event(self, epoch: int, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind in CONNECTION_SCOPED and (epoch != self._epoch or not self._connected):
            logger.debug("skipping %s of an earlier connection", kind)
            return
        cb = callback_for(event)
        if cb is None:
            return
        ok = invoke(self._scheduler, self, cb[0], cb[1])
        if kind == "UPDATE" and self.implicit_acknowledgements:
            status = cb[1][0]
            if not status.get("uuid"):
                return
            if not ok:
                logger.warning(
                    "not acknowledging the update of task %s: statusUpdate raised (the agent will resend it)",
                    status.get("task_id", {}).get("value"),
                )
                return
            try:
                self.acknowledgeStatusUpdate(status)
            except MesosError as exc:
                logger.warning("implicit acknowledgement not sent: %s", exc)

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

    # --------------------------------------------------- pymesos-style calls

    def launchTasks(
        self, offer_ids: IdLike | Iterable[IdLike], tasks: Iterable[Mapping[str, Any]], filters: FiltersLike = None
    ) -> Future:
        """ACCEPT the offers with one LAUNCH of ``tasks`` (TaskInfo dicts).  A task
        without ``agent_id`` gets the agent of the (first) offer."""
        ids = calls.as_id_list(offer_ids)
        task_list = [dict(t) for t in tasks]
        if not task_list:
            return self.declineOffer(ids, filters)
        with self._lock:
            known = [self._live_offers.get(o["value"]) or self._dead_offers.get(o["value"]) for o in ids]
        agent = next((a for a in known if a), None)
        for t in task_list:
            if not t.get("agent_id") and agent:
                t["agent_id"] = dict(agent)
        return self.acceptOffers(ids, [calls.launch(task_list)], filters)

    def acceptOffers(
        self, offer_ids: IdLike | Iterable[IdLike], operations: Iterable[Mapping[str, Any]], filters: FiltersLike = None
    ) -> Future:
        ops = [dict(op) for op in operations]
        body = calls.accept(offer_ids, ops, filters)
        ids = [o["value"] for o in body["accept"]["offer_ids"]]
        return self._submit("ACCEPT", body, offer_ids=ids, launches=calls.task_ids_of_launches(ops))

    def declineOffer(self, offer_ids: IdLike | Iterable[IdLike], filters: FiltersLike = None) -> Future:
        body = calls.decline(offer_ids, filters)
        return self._submit("DECLINE", body, offer_ids=[o["value"] for o in body["decline"]["offer_ids"]])

    def acceptInverseOffers(self, offer_ids: IdLike | Iterable[IdLike], filters: FiltersLike = None) -> Future:
        body = calls.accept_inverse_offers(offer_ids, filters)
        return self._submit("ACCEPT_INVERSE_OFFERS", body, offer_ids=[])

    def declineInverseOffer(self, offer_ids: IdLike | Iterable[IdLike], filters: FiltersLike = None) -> Future:
        body = calls.decline_inverse_offers(offer_ids, filters)
        return self._submit("DECLINE_INVERSE_OFFERS", body, offer_ids=[])

    def reviveOffers(self, roles: str | Iterable[str] | None = None) -> Future:
        return self._submit("REVIVE", calls.revive(roles))

    def suppressOffers(self, roles: str | Iterable[str] | None = None) -> Future:
        return self._submit("SUPPRESS", calls.suppress(roles))

    def killTask(
        self, task_id: IdLike, agent_id: IdLike | None = None, kill_policy: Mapping[str, Any] | None = None
    ) -> Future:
        return self._submit("KILL", calls.kill(task_id, agent_id, kill_policy))

    def shutdownExecutor(self, executor_id: IdLike, agent_id: IdLike) -> Future:
        return self._submit("SHUTDOWN", calls.shutdown(executor_id, agent_id))

    def acknowledgeStatusUpdate(self, status: Mapping[str, Any]) -> Future:
        """ACKNOWLEDGE an update (pass the status dict as received).  Updates without
        a uuid (reconciliation answers, master-generated ones) need none: no-op."""
        body = calls.acknowledge_status(status)
        if body is None:
            return _done_future(None)
        return self._submit("ACKNOWLEDGE", body)

    def reconcileTasks(self, statuses: Iterable[IdLike | Mapping[str, Any]] = ()) -> Future:
        """RECONCILE: an empty list asks for every task the master holds as active."""
        return self._submit("RECONCILE", calls.reconcile(statuses))

    def sendFrameworkMessage(self, executor_id: IdLike, agent_id: IdLike, data: bytes | str) -> Future:
        return self._submit("MESSAGE", calls.message(agent_id, executor_id, data))

    def requestResources(self, requests: Iterable[Mapping[str, Any]]) -> Future:
        return self._submit("REQUEST", calls.request(requests))

    def updateFramework(
        self, framework_info: Mapping[str, Any], suppressed_roles: Iterable[str] | None = None
    ) -> Future:
        """UPDATE_FRAMEWORK; the id and the required capabilities are kept."""
        with self._lock:
            current_id = self._framework_info.get("id")
        info = self._prepare_framework_info(framework_info, None, None, ())
        if current_id:
            info["id"] = current_id
        with self._lock:
            self._framework_info = info
        return self._submit("UPDATE_FRAMEWORK", calls.update_framework(info, suppressed_roles))

    def teardown(self) -> DriverStatus:
        """TEARDOWN the framework (the master kills its tasks) and stop the driver."""
        return self.stop(failover=False)

    # ------------------------------------------------------- operator calls

    def drainAgent(
        self, agent_id: IdLike, max_grace_period_s: float | None = None, mark_gone: bool = False
    ) -> None:
        """Operator DRAIN_AGENT (synchronous): offers of the agent are rescinded, its
        tasks killed (REASON_AGENT_DRAINING); it stays deactivated until reactivateAgent."""
        self.operator.drain_agent(agent_id, max_grace_period_s, mark_gone)

    def reactivateAgent(self, agent_id: IdLike) -> None:
        """Operator REACTIVATE_AGENT (synchronous)."""
        self.operator.reactivate_agent(agent_id)


__all__ = ["DriverStatus", "MesosSchedulerDriver"]
