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
:class:`~plastic.mesos.driver_errors.MesosError`; wait on it only if you need to.
Operator calls (``drainAgent``...) are synchronous.

The driver's parts are mixins of this one class, which owns their state: starting
and stopping in lifecycle.py, the stream thread in subscription.py, the sender
lanes in sending.py, the call methods in driver_api.py; the callback dispatcher
thread is here.
"""

from __future__ import annotations

import collections
import copy
import getpass
import logging
import queue
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from plastic.mesos import calls
from plastic.mesos.connection import Backoff, HttpStream
from plastic.mesos.driver_api import SchedulerCalls
from plastic.mesos.driver_errors import MesosError
from plastic.mesos.events import (
    CONNECTION_SCOPED,
    callback_for,
    invoke,
)
from plastic.mesos.lifecycle import DriverLifecycle
from plastic.mesos.masters import MasterEndpoint
from plastic.mesos.operator import OperatorClient
from plastic.mesos.sending import _STOP, CallSending, _Call, _Lane
from plastic.mesos.status import DriverStatus
from plastic.mesos.subscription import EventStream

logger = logging.getLogger(__name__)

REQUIRED_CAPABILITIES = ("PARTITION_AWARE", "TASK_KILLING_STATE")


class MesosSchedulerDriver(DriverLifecycle, EventStream, CallSending, SchedulerCalls):
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


__all__ = ["DriverStatus", "MesosSchedulerDriver"]
