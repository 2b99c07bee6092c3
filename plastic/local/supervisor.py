"""Running a local cluster: in the foreground, as a daemon, or as a child of a test; and stopping it.

The serving process writes a state file (pid, master URL, agents with their
ids and IMDS URLs) once the master answers, and removes it on a clean exit.
It stops on SIGTERM/SIGINT, on POST /plastic/shutdown, given
`--parent-pid`, when that process dies (so a test run cannot leave it behind), and, given
`--lease-file F --lease-seconds N`, when F is gone, or has not been touched (its mtime) for N seconds
and the process that touched it last (its holder, named in F) is gone too: an owner that may be
restarted (`plastic run --resume`) keeps the cluster alive by touching F, a cluster whose owner is
gone for good stops by itself, and one whose owner still runs but is too starved of CPU to touch F
in time (hundreds of task processes on two cores) serves on.
Every task process carries PLASTIC_LOCAL_CLUSTER_ID in its environment, which
lets `down` sweep up anything left if the server itself had to be SIGKILLed.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from plastic.local.agent import MARKER_ENV
from plastic.procs import pid_alive, process_started

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
KEEP_WORKDIR = ".keep-workdir"  # present: --remove-workdir is ignored on exit (a master restart is under way)


def base_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK):
        return Path(runtime) / "plastic-local"
    return Path(tempfile.gettempdir()) / f"plastic-local-{os.getuid()}"


def scratch_dir() -> str:
    """Where LocalCluster makes its throw-away workdirs: a RAM-backed directory when there is one.

    Task sandboxes are one directory and two files each; on this project's machines creating them in
    /tmp costs ~0.5 ms against ~0.01 ms in /dev/shm, which decides whether 5,000 tasks take 7 s or 14 s."""
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return tempfile.gettempdir()


def default_workdir(port: int) -> Path:
    return base_dir() / str(port)


def write_json_atomically(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)


def read_state(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def marked_pids(cluster_id: str, agent_id: str | None = None) -> list[int]:
    """Processes whose environment carries this cluster's marker (tasks of the cluster, or of one agent)."""
    needle = f"{MARKER_ENV}={cluster_id}".encode()
    agent_needle = f"MESOS_AGENT_ID={agent_id}".encode() if agent_id else None
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        items = env.split(b"\0")
        if needle in items and (agent_needle is None or agent_needle in items):
            found.append(int(entry))
    return [p for p in found if pid_alive(p)]


def sweep(cluster_id: str, agent_id: str | None = None) -> int:
    """SIGKILL every process (and its group) of the cluster (or of one of its agents); returns how many.

    This catches what a task started in a session of its own, out of reach of its process group."""
    pids = marked_pids(cluster_id, agent_id)
    for pid in pids:
        kill_hard(pid)
    return len(pids)


def kill_hard(pid: int) -> None:
    """SIGKILL the process group led by pid (if any) and the process itself."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# ==================================================================== serving
def lease_expired(lease_file: Path, lease_s: float, now: float | None = None) -> bool:
    """True when the lease file is gone or was last touched more than lease_s ago."""
    try:
        touched = lease_file.stat().st_mtime
    except OSError:
        return True
    return (time.time() if now is None else now) - touched > lease_s


def lease_holder(lease_file: Path) -> int | None:
    """The pid of the process that touched the lease last, while that very process still runs (not a
    later one with its pid); None when it is gone, or the file is gone or names no holder."""
    doc = read_state(lease_file)
    if not isinstance(doc, dict):
        return None
    pid, started = doc.get("pid"), doc.get("started")
    if not isinstance(pid, int) or pid <= 0 or not pid_alive(pid):
        return None
    if started is not None and started != process_started(pid):
        return None
    return pid


def lease_abandoned(lease_file: Path, lease_s: float, now: float | None = None) -> bool:
    """True when the cluster should stop: the lease file is gone, or it expired and its holder is gone.

    An expired lease whose holder still runs is not abandoned: the owner is alive but did not get the
    CPU to renew it in time (on a loaded machine a runner's poll loop can be runnable yet unscheduled
    for more than a minute); its death, not its slowness, is what the lease is there to notice."""
    return lease_expired(lease_file, lease_s, now) and lease_holder(lease_file) is None


@functools.lru_cache(maxsize=4)
def _holder(pid: int) -> tuple[tuple[str, int | None], ...]:
    """A lease holder's entry for process ``pid`` (its start time read once: renewals are every poll)."""
    return (("pid", pid), ("started", process_started(pid)))


def touch_lease(lease_file: Path) -> None:
    """Renew a lease (create the file if needed), held by this process from now on."""
    holder = dict(_holder(os.getpid()))
    if read_state(lease_file) != holder:  # a new holder (the owner, or a `plastic run --resume`)
        write_json_atomically(lease_file, holder)
    os.utime(lease_file)


def serve_args(*, source_flag: str, source: str, port: int, workdir: str | None, state_file: str | None,
               heartbeat: float, ping_timeout: float, interrupt_rate: float | None, notice: float,
               seed: int | None, update_retry: float, kill_grace: float, parent_pid: int | None,
               replace_after: float | None = None, remove_workdir: bool = False, verbose: int = 0,
               lease_file: str | None = None, lease_s: float | None = None, boot: float = 0.0,
               refuse_spot: str = "", credentials: str | None = None) -> list[str]:
    """The command line of a serving child process."""
    args = [sys.executable, "-m", "plastic.local"]
    args += ["-v"] * verbose
    args += ["serve", source_flag, source, "--port", str(port), "--heartbeat-seconds", repr(heartbeat),
             "--agent-ping-timeout-seconds", repr(ping_timeout), "--notice-seconds", repr(notice),
             "--update-retry-seconds", repr(update_retry), "--kill-grace-seconds", repr(kill_grace)]
    if workdir:
        args += ["--workdir", workdir]
    if state_file:
        args += ["--state-file", state_file]
    if interrupt_rate is not None:
        args += ["--interrupt-rate", repr(interrupt_rate)]
    if seed is not None:
        args += ["--seed", str(seed)]
    if replace_after is not None:
        args += ["--replace-after-seconds", repr(replace_after)]
    if remove_workdir:
        args += ["--remove-workdir"]
    if parent_pid:
        args += ["--parent-pid", str(parent_pid)]
    if lease_file and lease_s:
        args += ["--lease-file", lease_file, "--lease-seconds", repr(lease_s)]
    if boot:
        args += ["--boot-seconds", repr(boot)]
    if refuse_spot:
        args += ["--refuse-spot", refuse_spot]
    if credentials:  # a path: the secrets stay in the file
        args += ["--credentials", credentials]
    return args


def spawn(args: list[str], *, state_file: Path, log_file: Path, timeout: float) -> tuple[subprocess.Popen, dict]:
    """Start a serving process in its own session; wait for its state file and for /version to answer."""
    import httpx

    state_file.parent.mkdir(parents=True, exist_ok=True)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    try:
        state_file.unlink()
    except FileNotFoundError:
        pass
    env = dict(os.environ, PLASTIC_LOCAL_LOG=str(log_file))
    with open(log_file, "ab") as logfh:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=logfh, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, env=env)
    deadline = time.monotonic() + timeout
    delay = 0.01
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the local cluster did not start (exit status {proc.returncode}): "
                               + _last_line(log_file) + f" (log: {log_file})")
        doc = read_state(state_file)
        if doc is not None and doc.get("pid") == proc.pid:
            try:
                if httpx.get(doc["master_url"] + "/version", timeout=2.0).status_code == 200:
                    return proc, doc
            except httpx.HTTPError:
                pass
        time.sleep(delay)
        delay = min(delay * 1.5, 0.1)
    terminate(proc.pid, None, timeout=2.0)
    raise TimeoutError(f"the local cluster did not answer within {timeout:.0f}s:\n" + tail(log_file))


def _last_line(path: Path) -> str:
    """The last line of a log, without the `plastic: ` every error line of a command starts with."""
    last = ([line for line in tail(path).splitlines() if line.strip()] or ["(empty log)"])[-1]
    return last.removeprefix("plastic: ")


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def terminate(pid: int, cluster_id: str | None, *, timeout: float = 10.0, master_url: str | None = None) -> bool:
    """Stop a serving process: shutdown call or SIGTERM, then SIGKILL; then sweep its tasks. True if it was running."""
    was_running = pid_alive(pid)
    if was_running and master_url:
        import httpx

        try:
            httpx.post(master_url + "/plastic/shutdown", timeout=2.0)
        except httpx.HTTPError:
            pass
    if was_running:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.02)
    if pid_alive(pid):
        log.warning("the local cluster (pid %d) did not stop in %.0fs: SIGKILL", pid, timeout)
        kill_hard(pid)
        end = time.monotonic() + 5.0
        while pid_alive(pid) and time.monotonic() < end:
            _reap(pid)
            time.sleep(0.02)
    _reap(pid)
    if cluster_id:
        sweep(cluster_id)
    return was_running


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
