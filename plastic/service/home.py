"""Where the service's shared state lives, and how every service command reaches its Redis.

Order: ``--redis URL``, then ``$PLASTIC_REDIS_URL``, then the embedded server of
``$PLASTIC_HOME/redis`` (default ``$XDG_STATE_HOME/plastic`` or ``~/.local/state/plastic``; a
home plastic makes is 0700).
The embedded server is shared: the first command to need it starts it, later ones find it
(see plastic.store.embedded); its append-only file keeps submissions while nothing runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from redis import Redis

from plastic.home import plastic_home
from plastic.store.urls import URL_ENV


@dataclass
class Connection:
    client: Redis
    url: str
    close: Callable[[], None]
    embedded: bool


def service_redis(url: str | None) -> Connection:
    """A client for the service's Redis (see the module docstring); the caller calls ``close``."""
    from plastic.store import connect, start_embedded

    url = url or os.environ.get(URL_ENV) or None
    if url:
        client, close = connect(url, None)
        return Connection(client, url, close, False)
    from plastic.run.modes import private_dir

    server = start_embedded(private_dir(plastic_home()) / "redis")  # made 0700, like its redis/
    client = server.client()

    def close() -> None:
        client.close()
        server.stop()  # a no-op unless this process started it

    return Connection(client, server.url, close, True)
