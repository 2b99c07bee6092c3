"""The HTTP endpoints the cluster serves beside its master: each agent's own port (health, its /state
summary, the executor API) and, for an agent with an instance id, its EC2 instance-metadata service."""

from __future__ import annotations

import errno
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from plastic.core.errors import PortInUseError
from plastic.local.instance_metadata import InstanceMetadata


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on host:port; PortInUseError when another process holds the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(host, port) from None
        raise
    sock.listen(512)
    sock.setblocking(False)
    return sock


async def serve_agent(sock: socket.socket, summary: Callable[[], dict[str, Any]],
                      executor_api: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.AppRunner:
    """A minimal agent endpoint (health and state) so the port in offers answers; it also serves the
    executor API of the agent's executors."""
    app = web.Application()

    async def health(_request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def state(_request: web.Request) -> web.Response:
        return web.json_response(summary())

    app.router.add_get("/health", health)
    app.router.add_get("/state", state)
    app.router.add_route("*", "/api/v1/executor", executor_api)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    return runner


async def serve_imds(host: str, meta: InstanceMetadata) -> tuple[web.AppRunner, str]:
    """The instance's metadata service on a free port of `host`: (its runner, its URL)."""
    runner = web.AppRunner(meta.app(), access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    sock = bind_socket(host, 0)
    url = f"http://{host}:{sock.getsockname()[1]}"
    await web.SockSite(runner, sock).start()
    return runner, url
