"""Where the leading Mesos master is.

Accepted forms of the ``master`` argument:

* ``http://host:port`` or ``https://host:port`` (an optional path prefix is kept,
  for a master behind a reverse proxy; without a port HTTP's default applies);
* ``host:port`` or ``host`` (plain HTTP, port 5050 by default);
* ``zk://[user:password@]host1:2181,host2:2181/mesos``: the masters' ZooKeeper
  group.  Each master holds an ephemeral sequential node ``json.info_<seq>``
  under the path whose content is its MasterInfo as JSON; the leader is the
  lowest sequence number.  kazoo is imported only when such a URL is used.

The parsing part (:func:`leader_node`, :func:`parse_master_info`) is pure and
tested on a fixture of the node content.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import struct
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from plastic.mesos.driver_errors import MasterResolutionError

logger = logging.getLogger(__name__)

DEFAULT_PORT = 5050
_INFO_NODE = re.compile(r"^json\.info_(\d+)$")
_ENDPOINT_SUFFIXES = ("/api/v1/scheduler", "/api/v1")


@dataclass(frozen=True)
class MasterAddress:
    """A parsed ``master`` argument: a fixed URL, or a ZooKeeper group to ask."""

    kind: str  # "url" or "zk"
    url: str | None = None  # for "url": scheme://host:port[/prefix], no trailing slash
    zk_hosts: str | None = None  # for "zk": "h1:2181,h2:2181"
    zk_path: str | None = None  # for "zk": "/mesos"
    zk_auth: str | None = None  # "user:password" for ZooKeeper digest auth


def parse_master(master: str) -> MasterAddress:
    """Parse the ``master`` argument (see the module docstring)."""
    master = master.strip()
    if not master:
        raise MasterResolutionError("empty master address")
    if master.startswith("zk://"):
        rest = master[len("zk://"):]
        auth = None
        slash = rest.find("/")
        hosts_part, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
        if "@" in hosts_part:
            auth, hosts_part = hosts_part.rsplit("@", 1)
        path = path.rstrip("/")
        if not hosts_part or not path:
            raise MasterResolutionError(f"zk master URL needs hosts and a path, as zk://host:2181/mesos: {master!r}")
        return MasterAddress(kind="zk", zk_hosts=hosts_part, zk_path=path, zk_auth=auth)
    if "://" in master:
        parts = urlsplit(master)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise MasterResolutionError(f"unsupported master URL {master!r} (http://, https:// or zk://)")
        path = parts.path.rstrip("/")
        for suffix in _ENDPOINT_SUFFIXES:
            if path.endswith(suffix):
                path = path[: -len(suffix)]
                break
        netloc = parts.netloc.rsplit("@", 1)[-1]  # credentials belong in principal/secret
        return MasterAddress(kind="url", url=f"{parts.scheme}://{netloc}{path}")
    host, sep, port = master.rpartition(":")
    if not sep:
        host, port = master, str(DEFAULT_PORT)
    if not host or not port.isdigit():
        raise MasterResolutionError(f"bad master address {master!r} (want host:port, http(s)://host:port or zk://...)")
    return MasterAddress(kind="url", url=f"http://{host}:{int(port)}")


def leader_node(children: Iterable[str]) -> str | None:
    """The child naming the leading master: the ``json.info_*`` node of lowest sequence."""
    best: tuple[int, str] | None = None
    for child in children:
        m = _INFO_NODE.match(child)
        if m:
            key = (int(m.group(1)), child)
            if best is None or key < best:
                best = key
    return best[1] if best else None


def _ip_from_int(ip: int) -> str:
    # MasterInfo.ip is the IPv4 address in network byte order read as a
    # little-endian uint32 (127.0.0.1 is 16777343).
    return socket.inet_ntoa(struct.pack("<I", ip & 0xFFFFFFFF))


def parse_master_info(data: bytes | str | dict[str, Any]) -> tuple[str, int]:
    """(host, port) from the JSON MasterInfo a master writes to ZooKeeper.

    Prefers ``address.hostname``, then ``address.ip``, then ``hostname``, then the
    packed ``ip``; the port from ``address.port``, else ``port``.
    """
    if isinstance(data, (bytes, bytearray)):
        data = data.decode("utf-8")
    try:
        info = json.loads(data) if isinstance(data, str) else data
    except ValueError as exc:
        raise MasterResolutionError(f"master info node is not JSON: {exc}") from exc
    if not isinstance(info, dict):
        raise MasterResolutionError("master info node is not a JSON object")
    address = info.get("address") or {}
    host = address.get("hostname") or address.get("ip") or info.get("hostname")
    if not host and isinstance(info.get("ip"), int):
        host = _ip_from_int(info["ip"])
    port = address.get("port") or info.get("port")
    if not host or not port:
        raise MasterResolutionError(f"master info has no address: {info!r}")
    return str(host), int(port)


def resolve_zk(address: MasterAddress, *, timeout_s: float = 10.0, scheme: str = "http") -> str:
    """Ask ZooKeeper for the leading master; returns its base URL."""
    try:
        from kazoo.client import KazooClient
        from kazoo.exceptions import KazooException, NoNodeError
    except ImportError as exc:  # pragma: no cover - kazoo is a dependency
        raise MasterResolutionError("zk:// master URLs need the kazoo package") from exc
    auth = [("digest", address.zk_auth)] if address.zk_auth else None
    client = KazooClient(hosts=address.zk_hosts, timeout=timeout_s, auth_data=auth, read_only=True)
    try:
        client.start(timeout=timeout_s)
        path = address.zk_path or "/mesos"
        for _ in range(3):  # the leader's node may vanish between listing and reading it
            children = client.get_children(path)
            node = leader_node(children)
            if node is None:
                raise MasterResolutionError(f"no leading master registered under {path} in ZooKeeper {address.zk_hosts}")
            try:
                data, _stat = client.get(f"{path}/{node}")
            except NoNodeError:
                continue
            host, port = parse_master_info(data)
            if ":" in host and not host.startswith("["):
                host = f"[{host}]"
            url = f"{scheme}://{host}:{port}"
            logger.info("ZooKeeper %s%s: leading master is %s (%s)", address.zk_hosts, path, url, node)
            return url
        raise MasterResolutionError(f"the leading master's node under {path} kept disappearing")
    except MasterResolutionError:
        raise
    except (KazooException, OSError, Exception) as exc:  # kazoo raises its own and timeout errors
        raise MasterResolutionError(f"ZooKeeper {address.zk_hosts}: {type(exc).__name__}: {exc}") from exc
    finally:
        try:
            client.stop()
            client.close()
        except Exception:
            logger.debug("closing the kazoo client failed", exc_info=True)


def redirect_base(location: str, current_base: str) -> str:
    """Base URL of the master named by a 307 ``Location``.

    Mesos sends scheme-relative locations (``//host:port/api/v1/scheduler``);
    the scheme of the current master is kept then.
    """
    current = urlsplit(current_base)
    if location.startswith("//"):
        location = f"{current.scheme}:{location}"
    parts = urlsplit(location)
    if not parts.netloc:
        raise MasterResolutionError(f"redirect without a host: {location!r}")
    path = parts.path.rstrip("/")
    for suffix in _ENDPOINT_SUFFIXES:
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    return f"{parts.scheme or current.scheme}://{parts.netloc}{path}"


class MasterEndpoint:
    """The current leading master's base URL, resolved lazily and moved by redirects.

    Thread-safe.  :meth:`reset` forgets redirects (and ZooKeeper answers) so the
    next use resolves the configured address again, which is what a reconnection
    after a lost master wants.
    """

    def __init__(self, master: str, *, zk_timeout_s: float = 10.0, zk_scheme: str = "http"):
        self.address = parse_master(master)
        self.configured = master
        self._zk_timeout_s = zk_timeout_s
        self._zk_scheme = zk_scheme
        self._lock = threading.Lock()
        self._base: str | None = self.address.url

    def base_url(self) -> str:
        with self._lock:
            if self._base is not None:
                return self._base
        resolved = resolve_zk(self.address, timeout_s=self._zk_timeout_s, scheme=self._zk_scheme)
        with self._lock:
            if self._base is None:
                self._base = resolved
            return self._base

    def url(self, path: str) -> str:
        return self.base_url() + path

    def redirect(self, location: str) -> str:
        with self._lock:
            current = self._base or (self.address.url or f"{self._zk_scheme}://unknown")
            self._base = redirect_base(location, current)
            logger.info("master redirected us to %s", self._base)
            return self._base

    def reset(self) -> None:
        with self._lock:
            self._base = self.address.url
