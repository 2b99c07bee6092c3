"""How the driver starts and stops: its threads, the TEARDOWN of a framework, an abort.

A mixin of MesosSchedulerDriver (plastic/mesos/driver.py), which owns the state it uses: ``start``
starts the stream thread (subscription.py), the callback dispatcher and the sender lanes (sending.py);
``stop`` flushes the lanes, tears the framework down unless it is a failover, wakes every thread so it
ends and joins them; ``abort`` (and ``_fail``, after an unrecoverable condition) stops at once.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Self

from plastic.mesos import calls
from plastic.mesos.connection import JSON_HEADERS, SCHEDULER_PATH, KeepAliveClient, post
from plastic.mesos.driver_errors import DriverNotRunningError, MesosError
from plastic.mesos.sending import _STOP, _Lane, _resolve
from plastic.mesos.status import DriverStatus

logger = logging.getLogger(__name__)


class DriverLifecycle:
    """start, stop, abort, join of the driver (see the module docstring)."""

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

    def _fail(self, message: str) -> None:
        """Abort after an unrecoverable condition; the error callback gets the message."""
        logger.error("Mesos driver aborting: %s", message)
        with self._lock:
            if self._status is DriverStatus.DRIVER_RUNNING:
                self._status = DriverStatus.DRIVER_ABORTED
            self._connected = False
        self._events.put(("callback", "error", (message,)))
        self._shutdown()
