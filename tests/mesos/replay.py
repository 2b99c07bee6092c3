"""A loopback HTTP/1.1 server that plays back bytes recorded from a real Mesos master.

For the driver's unit tests only (event parsing, dispatch, reconnection logic):
SUBSCRIBE requests are answered by scripts that write recorded wire bytes,
every other call is recorded and answered ``202 Accepted`` (or as a test says).
The integration tests run against the real local cluster instead.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from tests.waiting import eventually


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body) if self.body else {}

    @property
    def type(self) -> str | None:
        return self.json.get("type") if self.body else None


class Conn:
    """The server side of one SUBSCRIBE: what a script writes goes to the driver."""

    def __init__(self, sock: socket.socket, server: ReplayServer):
        self.sock = sock
        self.server = server

    def send(self, data: bytes) -> bool:
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def chunk(self, record: bytes) -> bool:
        """One RecordIO record in one HTTP chunk, as Mesos writes them."""
        framed = str(len(record)).encode() + b"\n" + record
        return self.send(f"{len(framed):x}\r\n".encode() + framed + b"\r\n")

    def event(self, event: dict[str, Any]) -> bool:
        return self.chunk(json.dumps(event, separators=(",", ":")).encode())

    def hold(self, timeout: float = 30.0) -> None:
        """Keep the stream open until the server stops, the client leaves or timeout."""
        deadline = time.monotonic() + timeout
        self.sock.settimeout(0.05)
        while not self.server.stopping.is_set() and time.monotonic() < deadline:
            try:
                if self.sock.recv(1, socket.MSG_PEEK) == b"":
                    return
            except TimeoutError:
                continue
            except OSError:
                return


def ok_headers(stream_id: str = "replay-stream-1") -> bytes:
    return (
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
        f"Mesos-Stream-Id: {stream_id}\r\nContent-Type: application/json\r\n\r\n"
    ).encode()


def plain(status: int, reason: str, text: str = "", extra: str = "") -> bytes:
    body = text.encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\n{extra}Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


Script = Callable[[Conn, Request], None]
CallHandler = Callable[[Request], "tuple[int, str, bytes] | str | None"]


class ReplayServer:
    def __init__(self, scripts: list[Script], on_call: CallHandler | None = None):
        self.scripts = list(scripts)
        self.on_call = on_call
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._accept_thread = threading.Thread(target=self._accept_loop, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._accept_thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.stopping.set()
        try:
            self._listener.close()
        except OSError:
            pass
        for c in list(self._conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join(5)

    # -- inspection ---------------------------------------------------------------

    def calls(self, call_type: str | None = None) -> list[Request]:
        with self.lock:
            reqs = [r for r in self.requests if r.type != "SUBSCRIBE"]
        return [r for r in reqs if call_type is None or r.type == call_type]

    def subscribes(self) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.type == "SUBSCRIBE"]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0, what: str = "requests") -> None:
        eventually(predicate, timeout, what, condition=self.changed,
                   describe=lambda: f"requests: {[r.type or r.path for r in list(self.requests)][-30:]}")

    # -- serving ------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self._conns.append(sock)
            t = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self._threads.append(t)
            t.start()

    def _read_request(self, reader) -> Request | None:
        line = reader.readline()
        if not line:
            return None
        method, path, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            h = reader.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = reader.read(int(headers.get("content-length", "0")))
        return Request(method, path, headers, body)

    def _serve(self, sock: socket.socket) -> None:
        try:
            self._serve_requests(sock)
        except OSError:
            pass  # the driver went away
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def _serve_requests(self, sock: socket.socket) -> None:
        reader = sock.makefile("rb")
        while not self.stopping.is_set():
            try:
                req = self._read_request(reader)
            except (OSError, ValueError):
                return
            if req is None:
                return
            with self.changed:
                self.requests.append(req)
                self.changed.notify_all()
            if req.type == "SUBSCRIBE":
                with self.lock:
                    script = self.scripts.pop(0) if self.scripts else None
                if script is None:
                    sock.sendall(plain(503, "Service Unavailable", "no more scripts"))
                    continue
                script(Conn(sock, self), req)
                return  # a stream connection is not reused
            answer = self.on_call(req) if self.on_call else None
            if answer == "close":  # vanish without answering
                return
            if answer is None:
                sock.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            else:
                status, reason, raw = answer
                sock.sendall(raw if raw.startswith(b"HTTP/") else plain(status, reason, raw.decode()))


def replay_reads(reads: list[tuple[float, bytes]], *, speedup: float = 1000.0, max_gap: float = 0.02) -> Script:
    """A script writing recorded recv() pieces with (compressed) recorded timing, then holding."""

    def script(conn: Conn, _req: Request) -> None:
        last = 0.0
        for t, data in reads:
            time.sleep(min(max(0.0, (t - last) / speedup), max_gap))
            last = t
            if not conn.send(data):
                return
        conn.hold()

    return script
