"""HTTP plumbing of the driver: the SUBSCRIBE event stream, calls, backoff.

The event stream is read from a plain socket rather than through httpx so its
read timeout can change while it is open: the master announces its heartbeat
interval only in the first event, and "no event for interval x grace seconds"
is exactly "a recv() timed out" once the socket timeout is set to that.  A
stream can also be cut from another thread (``abort()`` shuts the socket down,
which wakes a blocked recv; closing a file descriptor would not).

Calls are POSTed over keep-alive connections: the sender threads each hold one
:class:`KeepAliveClient` (the standard library's http.client: measured here at
about 110 us of CPU per call against httpx's 420 us, which matters at
thousands of acknowledgements per second), while rare synchronous calls
(operator API, TEARDOWN) use an httpx client.  :func:`post` drives either.
"""

from __future__ import annotations

import base64
import http.client
import logging
import random
import select
import socket
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from plastic.mesos.driver_errors import (
    MesosAuthError,
    MesosConnectionError,
    MesosError,
    MesosRedirectError,
    MesosUnavailableError,
)
from plastic.mesos.masters import MasterEndpoint

logger = logging.getLogger(__name__)

SCHEDULER_PATH = "/api/v1/scheduler"
OPERATOR_PATH = "/api/v1"
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
_MAX_HEADER_BYTES = 64 * 1024
_MAX_ERROR_BODY = 64 * 1024


class Backoff:
    """Exponential backoff with full jitter.

    The n-th delay (n from 0) is drawn uniformly from ``[0, min(max_s, initial_s * multiplier**n)]``
    ("full jitter", which spreads reconnecting schedulers best).  :meth:`reset`
    after a success.
    """

    def __init__(
        self,
        initial_s: float = 0.5,
        max_s: float = 30.0,
        multiplier: float = 2.0,
        rng: random.Random | None = None,
    ):
        if initial_s <= 0 or max_s < initial_s or multiplier < 1:
            raise ValueError("need 0 < initial_s <= max_s and multiplier >= 1")
        self.initial_s = initial_s
        self.max_s = max_s
        self.multiplier = multiplier
        self.attempt = 0
        self._rng = rng or random.Random()

    def ceiling(self, attempt: int | None = None) -> float:
        """Upper bound of the delay of the given (default: next) attempt."""
        n = self.attempt if attempt is None else attempt
        if n > 200:
            return self.max_s
        return min(self.max_s, self.initial_s * self.multiplier**n)

    def next_delay(self) -> float:
        delay = self._rng.uniform(0.0, self.ceiling())
        self.attempt += 1
        return delay

    def reset(self) -> None:
        self.attempt = 0


# --- errors from responses --------------------------------------------------


def error_for_status(status: int, body: str, call_type: str, url: str | None = None) -> MesosError:
    """The MesosError subclass for an HTTP error answer, with the master's text."""
    text = body.strip()
    message = f"HTTP {status}" + (f": {text}" if text else "")
    cls: type[MesosError]
    if status in (401, 403) and call_type == "SUBSCRIBE":
        cls = MesosAuthError
    elif status == 503:
        cls = MesosUnavailableError
    else:
        cls = MesosError
    return cls(message, status_code=status, body=text, call_type=call_type, url=url)


@dataclass
class Answer:
    """The parts of an HTTP answer the driver looks at (the subset of httpx.Response it uses)."""

    status_code: int
    content: bytes
    url: str
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class KeepAliveClient:
    """A minimal HTTP/1.1 client holding one keep-alive connection; not thread-safe
    (one per sender thread).  It reconnects when the target changes (a redirect)
    or the master closed the idle connection (checked before each request, so a
    request is never written into a connection the peer has already closed)."""

    def __init__(
        self,
        *,
        connect_timeout_s: float = 5.0,
        timeout_s: float = 10.0,
        auth: tuple[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ):
        self._connect_timeout_s = connect_timeout_s
        self._timeout_s = timeout_s
        self._ssl_context = ssl_context
        self._auth_header = (
            "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode("ascii") if auth else None
        )
        self._conn: http.client.HTTPConnection | None = None
        self._target: tuple[str, str, int] | None = None

    def _connection(self, scheme: str, host: str, port: int) -> http.client.HTTPConnection:
        target = (scheme, host, port)
        conn = self._conn
        if conn is not None and (self._target != target or conn.sock is None or self._peer_closed(conn.sock)):
            self.close()
            conn = None
        if conn is None:
            if scheme == "https":
                conn = http.client.HTTPSConnection(
                    host, port, timeout=self._connect_timeout_s, context=self._ssl_context or ssl.create_default_context()
                )
            else:
                conn = http.client.HTTPConnection(host, port, timeout=self._connect_timeout_s)
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.sock.settimeout(self._timeout_s)
            self._conn, self._target = conn, target
        return conn

    @staticmethod
    def _peer_closed(sock: socket.socket) -> bool:
        # An idle keep-alive socket that is readable has been closed by the peer.
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def post(self, url: str, *, content: bytes, headers: Mapping[str, str]) -> Answer:
        parts = urlsplit(url)
        scheme = parts.scheme
        host = parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        all_headers: dict[str, Any] = dict(headers)
        if self._auth_header:
            all_headers["Authorization"] = self._auth_header
        try:
            conn = self._connection(scheme, host, port)
            conn.request("POST", path, body=content, headers=all_headers)
            response = conn.getresponse()
            data = response.read()
            answer = Answer(response.status, data, url, {k.lower(): v for k, v in response.getheaders()})
            if response.will_close:
                self.close()
            return answer
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise MesosConnectionError(f"{type(exc).__name__}: {exc}", url=url) from exc

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
        self._conn = None
        self._target = None


def post(
    client: httpx.Client | KeepAliveClient,
    endpoint: MasterEndpoint,
    path: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    call_type: str,
    max_redirects: int = 3,
) -> httpx.Response | Answer:
    """POST to the leading master, following 307s (and remembering where they lead).

    Raises MesosConnectionError when no answer came back; other statuses are
    returned for the caller to judge.
    """
    for _ in range(max_redirects + 1):
        url = endpoint.url(path)
        try:
            response = client.post(url, content=body, headers=headers)
        except httpx.TransportError as exc:
            raise MesosConnectionError(
                f"{type(exc).__name__}: {exc}", call_type=call_type, url=url
            ) from exc
        except MesosConnectionError as exc:
            exc.call_type = call_type
            raise
        if response.status_code == 307:
            location = response.headers.get("location")
            if not location:
                raise MesosRedirectError("307 without Location", status_code=307, call_type=call_type, url=url)
            endpoint.redirect(location)
            continue
        return response
    raise MesosRedirectError(f"more than {max_redirects} redirects", status_code=307, call_type=call_type)


# --- the event stream -----------------------------------------------------------


class StreamTimeout(MesosConnectionError):
    """No bytes arrived on the event stream within the read timeout."""


class StreamClosed(MesosConnectionError):
    """The event stream's connection closed (or was reset) before its end."""


class HttpStream:
    """One HTTP/1.1 POST whose response is read incrementally from a socket.

    Usage: ``open()``; look at ``status``/``headers``; then ``read_body()`` for
    an error answer, or iterate ``iter_body()`` for the chunks of a stream.
    ``ended_cleanly`` tells whether the terminating chunk was seen.
    """

    def __init__(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        connect_timeout_s: float = 10.0,
        response_timeout_s: float = 30.0,
        auth: tuple[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise MesosConnectionError(f"bad stream URL {url!r}")
        self.url = url
        self._host = parts.hostname
        self._tls = parts.scheme == "https"
        self._port = parts.port or (443 if self._tls else 80)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._body = body
        self._headers = dict(headers)
        if auth is not None:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {token}"
        self._connect_timeout_s = connect_timeout_s
        self._response_timeout_s = response_timeout_s
        self._ssl_context = ssl_context
        self._sock: socket.socket | None = None
        self._reader = None
        self._aborted = False
        self.status = 0
        self.reason = ""
        self.headers: dict[str, str] = {}
        self.ended_cleanly = False

    # -- lifecycle -------------------------------------------------------------------

    def open(self) -> None:
        try:
            sock = socket.create_connection((self._host, self._port), timeout=self._connect_timeout_s)
        except OSError as exc:
            raise MesosConnectionError(f"cannot connect to {self._host}:{self._port}: {exc}", url=self.url) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls:
                context = self._ssl_context or ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=self._host)
            self._sock = sock
            if self._aborted:  # abort() raced with the connect
                raise StreamClosed("stream aborted", url=self.url)
            sock.settimeout(self._response_timeout_s)
            host = self._host if ":" not in self._host else f"[{self._host}]"
            lines = [f"POST {self._path} HTTP/1.1", f"Host: {host}:{self._port}", f"Content-Length: {len(self._body)}"]
            lines += [f"{k}: {v}" for k, v in self._headers.items()]
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self._body)
            self._reader = sock.makefile("rb")
            self._read_head()
        except TimeoutError as exc:
            self.close()
            raise StreamTimeout(f"no answer from {self._host}:{self._port} within {self._response_timeout_s} s", url=self.url) from exc
        except MesosError:
            self.close()
            raise
        except (OSError, ValueError) as exc:
            self.close()
            raise StreamClosed(f"{type(exc).__name__}: {exc}", url=self.url) from exc

    def _readline(self) -> bytes:
        line = self._reader.readline(_MAX_HEADER_BYTES)
        if not line:
            raise StreamClosed("connection closed by the master", url=self.url)
        return line

    def _read_head(self) -> None:
        status_line = self._readline().decode("latin-1").rstrip("\r\n")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise StreamClosed(f"not an HTTP answer: {status_line!r}", url=self.url)
        self.status = int(parts[1])
        self.reason = parts[2] if len(parts) > 2 else ""
        total = 0
        while True:
            line = self._readline()
            total += len(line)
            if total > _MAX_HEADER_BYTES:
                raise StreamClosed("response headers too long", url=self.url)
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("latin-1").partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def set_read_timeout(self, seconds: float | None) -> None:
        if self._sock is not None:
            self._sock.settimeout(seconds)

    def abort(self) -> None:
        """Cut the connection from any thread; a blocked reader wakes up."""
        self._aborted = True
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        for obj in (self._reader, self._sock):
            if obj is not None:
                try:
                    obj.close()
                except OSError:
                    pass
        self._reader = None
        self._sock = None

    # -- bodies ----------------------------------------------------------------------

    @property
    def chunked(self) -> bool:
        return "chunked" in self.headers.get("transfer-encoding", "").lower()

    def read_body(self, limit: int = _MAX_ERROR_BODY) -> bytes:
        """The whole (bounded) body: for error answers."""
        out = bytearray()
        try:
            if self.chunked:
                for piece in self.iter_body():
                    out += piece
                    if len(out) >= limit:
                        break
            elif "content-length" in self.headers:
                length = min(int(self.headers["content-length"]), limit)
                out += self._reader.read(length)
            else:
                while len(out) < limit:
                    piece = self._reader.read1(limit - len(out))
                    if not piece:
                        break
                    out += piece
        except (OSError, ValueError):
            pass
        return bytes(out[:limit])

    def iter_body(self) -> Iterator[bytes]:
        """Body pieces as they arrive (chunk payloads when chunked).

        Raises StreamTimeout when the read timeout passes without bytes and
        StreamClosed when the connection ends before the terminating chunk.
        """
        try:
            if not self.chunked:
                while True:
                    piece = self._reader.read1(65536)
                    if not piece:
                        self.ended_cleanly = True
                        return
                    yield piece
            while True:
                size_line = self._readline()
                try:
                    size = int(size_line.split(b";", 1)[0].strip(), 16)
                except ValueError as exc:
                    raise StreamClosed(f"bad chunk size line {size_line[:40]!r}", url=self.url) from exc
                if size == 0:
                    while self._readline() not in (b"\r\n", b"\n"):  # trailers
                        pass
                    self.ended_cleanly = True
                    return
                data = self._reader.read(size)
                if len(data) < size:
                    raise StreamClosed("connection closed in the middle of a chunk", url=self.url)
                self._reader.read(2)  # CRLF after the chunk
                yield data
        except TimeoutError as exc:
            raise StreamTimeout("no data on the event stream within the read timeout", url=self.url) from exc
        except MesosError:
            raise
        except (OSError, ValueError) as exc:
            # ValueError: reading a file object another thread closed.
            raise StreamClosed(f"{type(exc).__name__}: {exc}", url=self.url) from exc
