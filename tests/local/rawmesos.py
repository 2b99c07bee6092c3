"""A raw Mesos v1 scheduler client for protocol tests: not plastic's driver.

The SUBSCRIBE stream is read from a plain socket, decoding HTTP chunks by hand,
so tests see exactly what went over the wire: the status line and headers,
every chunk (one RecordIO record each) and the terminating chunk.  Other calls
are POSTed with httpx.  Events land in a list guarded by a condition variable;
`next()` and `wait_update()` wait for them with a timeout (no fixed sleeps; tests.waiting.eventually).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from plastic.mesos.recordio import Decoder
from tests.waiting import eventually

DEFAULT_TIMEOUT = 10.0


def subscribe_body(name: str = "raw-test", *, capabilities: tuple[str, ...] = ("PARTITION_AWARE",
                                                                              "TASK_KILLING_STATE"),
                   failover_timeout: float | None = None, framework_id: str | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {"user": "root", "name": name, "capabilities": [{"type": c} for c in capabilities]}
    if failover_timeout is not None:
        info["failover_timeout"] = failover_timeout
    if framework_id:
        info["id"] = {"value": framework_id}
    body: dict[str, Any] = {"type": "SUBSCRIBE", "subscribe": {"framework_info": info}}
    if framework_id:
        body["framework_id"] = {"value": framework_id}
    return body


def raw_request(master_url: str, method: str, path: str, body: bytes = b"",
                headers: list[tuple[str, str]] | None = None, timeout: float = DEFAULT_TIMEOUT) -> tuple[int, dict, bytes]:
    """One request over a fresh socket with exactly these headers (repeated headers allowed)."""
    u = urlsplit(master_url)
    with socket.create_connection((u.hostname, u.port), timeout=timeout) as sock:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {u.hostname}:{u.port}"]
        lines += [f"{k}: {v}" for k, v in (headers or [])]
        lines += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
        sock.sendall("\r\n".join(lines).encode() + body)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    hdrs = {}
    for line in header_lines:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return int(status_line.split()[1]), hdrs, rest


class Scheduler:
    """One framework: a SUBSCRIBE stream on its own socket plus calls through httpx."""

    def __init__(self, master_url: str, name: str = "raw-test", *,
                 capabilities: tuple[str, ...] = ("PARTITION_AWARE", "TASK_KILLING_STATE"),
                 failover_timeout: float | None = None, framework_id: str | None = None, auto_ack: bool = True):
        self.master_url = master_url
        self.body = subscribe_body(name, capabilities=capabilities, failover_timeout=failover_timeout,
                                   framework_id=framework_id)
        self.auto_ack = auto_ack
        self.http = httpx.Client(base_url=master_url, timeout=DEFAULT_TIMEOUT)
        self.framework_id: str | None = framework_id
        self.stream_id: str | None = None
        self.status = 0
        self.headers: dict[str, str] = {}
        self.events: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.chunks: list[bytes] = []
        self.ended = False  # terminating chunk seen
        self.closed = False  # socket closed (by either side)
        self._cursor = 0
        self._cond = threading.Condition()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self.acked: list[str] = []
        self.outstanding: dict[str, dict[str, Any]] = {}  # offers not yet used, declined or rescinded

    # ------------------------------------------------------------ the stream
    def subscribe(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        u = urlsplit(self.master_url)
        self._sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        body = json.dumps(self.body).encode()
        req = (f"POST /api/v1/scheduler HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
               f"Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        self._sock.sendall(req.encode() + body)
        self._sock.settimeout(None)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        ev = self.next(pred=lambda e: e.get("type") in ("SUBSCRIBED", "ERROR"), timeout=timeout)
        if ev["type"] == "SUBSCRIBED":  # an ERROR (e.g. "Framework has been removed") is returned as is
            self.framework_id = ev["subscribed"]["framework_id"]["value"]
        return ev

    def _read(self) -> None:
        assert self._sock is not None
        buf = b""
        decoder = Decoder()

        def need(n: int) -> bytes:
            nonlocal buf
            while len(buf) < n:
                data = self._sock.recv(65536)  # type: ignore[union-attr]
                if not data:
                    raise EOFError
                buf += data
            out, buf = buf[:n], buf[n:]
            return out

        def line() -> bytes:
            nonlocal buf
            while b"\r\n" not in buf:
                data = self._sock.recv(65536)  # type: ignore[union-attr]
                if not data:
                    raise EOFError
                buf += data
            out, _, buf = buf.partition(b"\r\n")
            return out

        try:
            status_line = line().decode()
            self.status = int(status_line.split()[1])
            while True:
                h = line().decode("latin-1")
                if not h:
                    break
                k, _, v = h.partition(":")
                self.headers[k.strip().lower()] = v.strip()
            with self._cond:
                self.stream_id = self.headers.get("mesos-stream-id")
                self._cond.notify_all()
            if self.headers.get("transfer-encoding") != "chunked":
                n = int(self.headers.get("content-length", "0"))
                self.chunks.append(need(n))
                return
            while True:
                size = int(line().split(b";")[0], 16)
                if size == 0:
                    line()
                    with self._cond:
                        self.ended = True
                        self._cond.notify_all()
                    return
                chunk = need(size)
                assert need(2) == b"\r\n"
                records = decoder.feed(chunk)
                with self._cond:
                    self.chunks.append(chunk)
                    for rec in records:
                        ev = json.loads(rec)
                        self.events.append(ev)
                        self.times.append(time.monotonic())
                        if ev.get("type") == "OFFERS":
                            for o in ev["offers"]["offers"]:
                                self.outstanding[o["id"]["value"]] = o
                        elif ev.get("type") == "RESCIND":
                            self.outstanding.pop(ev["rescind"]["offer_id"]["value"], None)
                    self._cond.notify_all()
                if self.auto_ack:
                    for rec in records:
                        ev = json.loads(rec)
                        st = ev.get("update", {}).get("status", {}) if ev.get("type") == "UPDATE" else {}
                        if "uuid" in st:
                            self.acknowledge(st)
        except (EOFError, OSError):
            pass
        finally:
            with self._cond:
                self.closed = True
                self._cond.notify_all()

    def close(self) -> None:
        """Drop the stream's connection, as a scheduler that goes away does."""
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def shutdown(self) -> None:
        """Close the stream and the HTTP client."""
        self.close()
        self.http.close()

    def wait(self, predicate: Callable[[], bool], timeout: float = DEFAULT_TIMEOUT, what: str = "condition") -> None:
        eventually(predicate, timeout, what, condition=self._cond,
                   describe=lambda: "events: " + json.dumps([e.get("type") for e in list(self.events)]))

    def next(self, etype: str | None = None, pred: Callable[[dict[str, Any]], bool] | None = None,
             timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The next event (after the cursor) of this type matching pred; moves the cursor past it."""
        found: list[dict[str, Any]] = []

        def check() -> bool:
            while self._cursor < len(self.events):
                ev = self.events[self._cursor]
                self._cursor += 1
                if (etype is None or ev.get("type") == etype) and (pred is None or pred(ev)):
                    found.append(ev)
                    return True
            return False

        self.wait(check, timeout, f"event {etype}")
        return found[0]

    def find(self, etype: str, pred: Callable[[dict[str, Any]], bool] | None = None,
             timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The first event of this type matching pred anywhere in the stream (cursor untouched)."""
        found: list[dict[str, Any]] = []

        def check() -> bool:
            for ev in self.events:
                if ev.get("type") == etype and (pred is None or pred(ev)):
                    found.append(ev)
                    return True
            return False

        self.wait(check, timeout, f"event {etype}")
        return found[0]

    def updates(self, task_id: str) -> list[dict[str, Any]]:
        with self._cond:
            return [e["update"]["status"] for e in self.events
                    if e.get("type") == "UPDATE" and e["update"]["status"]["task_id"]["value"] == task_id]

    def wait_update(self, task_id: str, state: str, timeout: float = DEFAULT_TIMEOUT,
                    reason: str | None = None) -> dict[str, Any]:
        found: list[dict[str, Any]] = []

        def check() -> bool:
            for e in self.events:
                if e.get("type") != "UPDATE":
                    continue
                st = e["update"]["status"]
                if st["task_id"]["value"] == task_id and st["state"] == state and \
                        (reason is None or st.get("reason") == reason):
                    found.append(st)
                    return True
            return False

        self.wait(check, timeout, f"{task_id} {state}")
        return found[0]

    def offers(self, timeout: float = DEFAULT_TIMEOUT,
               pred: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
        """Offers of the next OFFERS event (optionally only offers matching pred, waiting for one)."""
        while True:
            ev = self.next("OFFERS", timeout=timeout)
            offers = [o for o in ev["offers"]["offers"] if pred is None or pred(o)]
            if offers:
                return offers

    def take_offer(self, pred: Callable[[dict[str, Any]], bool] | None = None,
                   timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """An outstanding offer matching pred (waiting for one); it is no longer outstanding afterwards."""
        found: list[dict[str, Any]] = []

        def check() -> bool:
            for oid, o in self.outstanding.items():
                if pred is None or pred(o):
                    found.append(self.outstanding.pop(oid))
                    return True
            return False

        self.wait(check, timeout, "an outstanding offer")
        return found[0]

    # ------------------------------------------------------------ calls
    def post(self, call: dict[str, Any], *, stream_id: str | None | bool = True) -> httpx.Response:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        sid = self.stream_id if stream_id is True else stream_id
        if sid:
            headers["Mesos-Stream-Id"] = sid
        return self.http.post("/api/v1/scheduler", content=json.dumps(call).encode(), headers=headers)

    def call(self, ctype: str, **payload: Any) -> httpx.Response:
        body: dict[str, Any] = {"framework_id": {"value": self.framework_id}, "type": ctype}
        body.update(payload)
        resp = self.post(body)
        return resp

    def acknowledge(self, st: dict[str, Any]) -> httpx.Response:
        resp = self.call("ACKNOWLEDGE", acknowledge={"agent_id": st["agent_id"], "task_id": st["task_id"],
                                                     "uuid": st["uuid"]})
        with self._cond:
            self.acked.append(st["uuid"])  # only once the master has taken it (202)
            self._cond.notify_all()
        return resp

    def decline_held(self, agent_id: str | None = None, refuse_seconds: float = 0.0) -> int:
        """Decline every offer held (of ``agent_id`` only, when given); how many there were."""
        with self._cond:
            mine = [oid for oid, o in self.outstanding.items() if agent_id in (None, o["agent_id"]["value"])]
            offers = [self.outstanding.pop(oid) for oid in mine]
        if offers:
            self.call("DECLINE", decline={"offer_ids": [o["id"] for o in offers],
                                          "filters": {"refuse_seconds": refuse_seconds}})
        return len(offers)

    def accept(self, offer_ids: list[str], task_infos: list[dict[str, Any]],
               refuse_seconds: float | None = None) -> httpx.Response:
        accept: dict[str, Any] = {"offer_ids": [{"value": o} for o in offer_ids],
                                  "operations": [{"type": "LAUNCH", "launch": {"task_infos": task_infos}}]}
        if refuse_seconds is not None:
            accept["filters"] = {"refuse_seconds": refuse_seconds}
        return self.call("ACCEPT", accept=accept)

    def launch(self, task_id: str, command: dict[str, Any] | str, *, offer: dict[str, Any] | None = None,
               cpus: float = 0.1, mem: float = 32, refuse_seconds: float | None = None,
               pred: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
        """Launch one task on the next offer (matching pred); returns the offer used."""
        if offer is None:
            offer = self.take_offer(pred)
        cmd = {"value": command, "shell": True} if isinstance(command, str) else command
        resp = self.accept([offer["id"]["value"]], [task_info(task_id, offer["agent_id"]["value"], cmd, cpus, mem)],
                           refuse_seconds=refuse_seconds)
        assert resp.status_code == 202, resp.text
        return offer


def task_info(task_id: str, agent_id: str, command: dict[str, Any] | None, cpus: float = 0.1,
              mem: float = 32) -> dict[str, Any]:
    info: dict[str, Any] = {"name": task_id, "task_id": {"value": task_id}, "agent_id": {"value": agent_id},
                            "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": cpus}},
                                          {"name": "mem", "type": "SCALAR", "scalar": {"value": mem}}]}
    if command is not None:
        info["command"] = command
    return info


def attrs(offer: dict[str, Any]) -> dict[str, Any]:
    return {a["name"]: a.get("text", a.get("scalar", {})).get("value") for a in offer["attributes"]}


def scalar(resources: list[dict[str, Any]], name: str) -> float:
    return sum(r["scalar"]["value"] for r in resources if r["name"] == name and r["type"] == "SCALAR")


def operator(master_url: str, ctype: str, **payload: Any) -> httpx.Response:
    body = {"type": ctype} | payload
    return httpx.post(master_url + "/api/v1", json=body, timeout=DEFAULT_TIMEOUT)


# ------------------------------------------------------------------ the fixture


@pytest.fixture
def scheduler() -> Iterator[Callable[..., Scheduler]]:
    """`scheduler(master_url, name, subscribe=True, **kwargs)`: raw v1 clients, subscribed unless told not
    to, torn down and closed after the test (tests/local/conftest.py and tests/compose use it)."""
    made: list[Scheduler] = []

    def make(master_url: str, name: str = "raw-test", *, subscribe: bool = True, **kwargs: object) -> Scheduler:
        s = Scheduler(master_url, name, **kwargs)  # type: ignore[arg-type]
        made.append(s)
        if subscribe:
            s.subscribe()
        return s

    yield make
    for s in made:
        if not s.closed:
            with contextlib.suppress(httpx.HTTPError):  # the cluster may be gone already
                s.call("TEARDOWN")
        s.shutdown()
