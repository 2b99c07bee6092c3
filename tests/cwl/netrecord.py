"""A local HTTP(S) proxy that records every connection and refuses it at once.

Give a subprocess `proxy_env(recorder.url)` and every request it makes through
`requests` or `urllib` (schema-salad's link checks included) reaches this
server instead of the network: the first line is recorded ("HEAD http://...",
"CONNECT host:443 ...") and answered with 502, so the client fails fast and
carries on as it would without a network.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


class ProxyRecorder:
    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self._lock = threading.Lock()
        self._requests: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="proxy-recorder", daemon=True)
        self._thread.start()

    @property
    def requests(self) -> list[str]:
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            try:
                conn.settimeout(5)
                while b"\n" not in data and len(data) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            line = data.split(b"\r\n", 1)[0].split(b"\n", 1)[0].decode("latin-1") or "<connection, no request>"
            with self._lock:
                self._requests.append(line)
            try:
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        self._thread.join(timeout=5)


@contextmanager
def proxy_recorder() -> Iterator[ProxyRecorder]:
    recorder = ProxyRecorder()
    try:
        yield recorder
    finally:
        recorder.close()


def proxy_env(url: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default os.environ) with every http(s) request sent to the proxy at `url`."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k.upper() not in _PROXY_VARS}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = url
    env["NO_PROXY"] = env["no_proxy"] = ""
    return env
