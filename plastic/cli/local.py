"""`plastic local`: start, inspect, interrupt and stop the local Mesos-API cluster.

aiohttp is imported only by the commands that serve, so `plastic --help` stays fast.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import click

from plastic.cli.options import URL, Seconds, notice_seconds_option

log = logging.getLogger(__name__)


def _common_serve_options(f: Any) -> Any:
    options = [
        click.option("--cluster", "cluster_file", type=click.Path(dir_okay=False),
                     help="CLUSTER.yaml: clusters of agents (name, count, cpus, ram_mib, preemptible)."),
        click.option("--plan", "plan_file", type=click.Path(dir_okay=False),
                     help="A plan JSON (plastic plan --format json): one agent per planned node."),
        click.option("--spec", "spec_file", type=click.Path(dir_okay=False), hidden=True),
        click.option("--port", type=click.IntRange(0, 65535), default=5050, show_default=True,
                     help="Master port on 127.0.0.1 (0: any free port)."),
        click.option("--workdir", type=click.Path(file_okay=False),
                     help="Sandboxes, state file and log (default: per user, keyed by port)."),
        click.option("--heartbeat-seconds", type=Seconds(min=0.05), default=15.0, show_default=True),
        click.option("--agent-ping-timeout-seconds", type=Seconds(), default=15.0, show_default=True,
                     help="How long after an agent dies the master reports its tasks lost (real Mesos: 75 s)."),
        click.option("--interrupt-rate", type=click.FloatRange(min=0.0, min_open=True),
                     help="Random spot interruptions: expected interruptions per preemptible agent per minute."),
        notice_seconds_option("Random interruptions: the warning each gives before its agent dies."),
        click.option("--seed", type=int, help="Seed for random interruptions and ids."),
        click.option("--update-retry-seconds", type=Seconds(min=0.01), default=10.0, show_default=True,
                     help="First retry interval of unacknowledged status updates (doubles up to 10 min)."),
        click.option("--kill-grace-seconds", type=Seconds(), default=3.0, show_default=True,
                     help="SIGTERM to SIGKILL grace when a task is killed."),
        click.option("--launcher-threads", type=click.IntRange(0, 64), default=0, hidden=True),
        click.option("--replace-after-seconds", type=Seconds(),
                     help="Replace a lost agent (interrupted or killed) by a new one after this delay."),
        click.option("--boot-seconds", type=Seconds(), default=0.0, show_default=True,
                     help="An agent created while the cluster runs (add-agent) registers this long after."),
        click.option("--refuse-spot", metavar="TYPES", default="",
                     help="Emulate a spot capacity shortage: refuse spot agents of these instance types "
                          "(comma-separated; * for every type)."),
        click.option("--credentials", "credentials_file", type=click.Path(dir_okay=False),
                     help="Frameworks must authenticate (HTTP basic, as Mesos' --authenticate_http_frameworks) "
                          "with one of these credentials: JSON {\"credentials\": [{\"principal\": ..., "
                          "\"secret\": ...}]} or PRINCIPAL SECRET lines."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


def _load_spec(cluster_file: str | None, plan_file: str | None, spec_file: str | None) -> Any:
    from plastic.local.config import ClusterSpec, load_cluster_file, load_plan_file

    given = [x for x in (cluster_file, plan_file, spec_file) if x]
    if len(given) != 1:
        raise click.UsageError("give exactly one of --cluster CLUSTER.yaml or --plan PLAN.json")
    if cluster_file:
        return load_cluster_file(cluster_file), "--cluster", cluster_file
    if plan_file:
        return load_plan_file(plan_file), "--plan", plan_file
    assert spec_file
    return ClusterSpec.from_json(Path(spec_file).read_text()), "--spec", spec_file


def _options(port: int, workdir: str | None, heartbeat_seconds: float, agent_ping_timeout_seconds: float,
             interrupt_rate: float | None, notice_seconds: float, seed: int | None,
             update_retry_seconds: float, kill_grace_seconds: float, replace_after_seconds: float | None,
             launcher_threads: int = 0, boot_seconds: float = 0.0, refuse_spot: str = "",
             credentials_file: str | None = None) -> Any:
    from plastic.local.cluster import Options
    from plastic.mesos.credential import read_credentials

    return Options(port=port, workdir=Path(workdir).resolve() if workdir else None, heartbeat_s=heartbeat_seconds,
                   agent_ping_timeout_s=agent_ping_timeout_seconds, interrupt_rate_per_min=interrupt_rate,
                   interrupt_notice_s=notice_seconds, seed=seed, update_retry_s=update_retry_seconds,
                   kill_grace_s=kill_grace_seconds, replace_after_s=replace_after_seconds,
                   launcher_threads=launcher_threads, boot_s=boot_seconds,
                   refuse_spot=tuple(t.strip() for t in refuse_spot.split(",") if t.strip()),
                   credentials=read_credentials(credentials_file) if credentials_file else ())


@click.group("local", short_help="Run a local Mesos-API cluster with spot interruptions.")
def local_group() -> None:
    """A local cluster speaking the Mesos v1 HTTP API, with emulated spot interruptions."""


@local_group.command("up", short_help="Start a local cluster from CLUSTER.yaml or a plan.")
@_common_serve_options
@click.option("--detach", is_flag=True, help="Run in the background; print the master URL once it answers.")
@click.option("--timeout", type=Seconds(), default=30.0, show_default=True, help="--detach: how long to wait for it.")
def up(cluster_file: str | None, plan_file: str | None, spec_file: str | None, port: int, workdir: str | None,
       heartbeat_seconds: float, agent_ping_timeout_seconds: float, interrupt_rate: float | None,
       notice_seconds: float, seed: int | None, update_retry_seconds: float, kill_grace_seconds: float,
       replace_after_seconds: float | None, launcher_threads: int, boot_seconds: float, refuse_spot: str,
       credentials_file: str | None, detach: bool, timeout: float) -> None:
    """Start a master on 127.0.0.1 with agents from CLUSTER.yaml or a plan."""
    spec, flag, source = _load_spec(cluster_file, plan_file, spec_file)
    if credentials_file:
        from plastic.mesos.credential import read_credentials

        read_credentials(credentials_file)  # a bad file: one line now, not in a detached child's log
    if detach:
        from plastic.local import supervisor as sup

        if port == 0 and not workdir:
            raise click.UsageError("--detach with --port 0 needs --workdir (to find the cluster again)")
        wd = Path(workdir).resolve() if workdir else sup.default_workdir(port)
        state_file = wd / sup.STATE_FILE
        old = sup.read_state(state_file)
        if old and sup.pid_alive(int(old.get("pid", 0))):
            raise click.ClickException(f"a local cluster already runs at {old.get('master_url')} "
                                       f"(pid {old['pid']}); `plastic local down --port {old.get('port')}` first")
        args = sup.serve_args(source_flag=flag, source=str(Path(source).resolve()), port=port, workdir=str(wd),
                              state_file=str(state_file), heartbeat=heartbeat_seconds,
                              ping_timeout=agent_ping_timeout_seconds, interrupt_rate=interrupt_rate,
                              notice=notice_seconds, seed=seed, update_retry=update_retry_seconds,
                              kill_grace=kill_grace_seconds, replace_after=replace_after_seconds, parent_pid=None,
                              boot=boot_seconds, refuse_spot=refuse_spot,
                              credentials=str(Path(credentials_file).resolve()) if credentials_file else None)
        try:
            _proc, doc = sup.spawn(args, state_file=state_file, log_file=wd / "cluster.log", timeout=timeout)
        except (RuntimeError, TimeoutError) as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(doc["master_url"])
        return
    import asyncio

    from plastic.local.server import serve

    options = _options(port, workdir, heartbeat_seconds, agent_ping_timeout_seconds, interrupt_rate,
                       notice_seconds, seed, update_retry_seconds, kill_grace_seconds,
                       replace_after_seconds, launcher_threads, boot_seconds, refuse_spot, credentials_file)

    def ready(cluster: Any, doc: dict[str, Any]) -> None:
        click.echo(f"local Mesos master at {doc['master_url']} (workdir {doc['workdir']}); Ctrl-C stops it")
        for a in doc["agents"]:
            imds = f"  imds {a['imds_url']}" if a["imds_url"] else ""
            click.echo(f"  agent {a['id']}  {a['cluster']}  preemptible={str(a['preemptible']).lower()}{imds}")

    try:
        asyncio.run(serve(spec, options, state_file=None, parent_pid=None, on_ready=ready))
    except OSError as exc:
        raise click.ClickException(f"cannot start the local cluster: {exc}") from None


@local_group.command("serve", hidden=True, short_help="Serve a cluster in this process (for up --detach).")
@_common_serve_options
@click.option("--state-file", type=click.Path(dir_okay=False))
@click.option("--parent-pid", type=int, help="Stop when this process dies.")
@click.option("--remove-workdir", is_flag=True, help="Delete the workdir on exit (a throw-away one).")
@click.option("--lease-file", type=click.Path(dir_okay=False),
              help="Stop when this file is gone or not touched for --lease-seconds.")
@click.option("--lease-seconds", type=Seconds(min=0.1), default=30.0, show_default=True)
def serve_cmd(cluster_file: str | None, plan_file: str | None, spec_file: str | None, port: int,
              workdir: str | None, heartbeat_seconds: float, agent_ping_timeout_seconds: float,
              interrupt_rate: float | None, notice_seconds: float, seed: int | None,
              update_retry_seconds: float, kill_grace_seconds: float, replace_after_seconds: float | None,
              launcher_threads: int, boot_seconds: float, refuse_spot: str, credentials_file: str | None,
              state_file: str | None,
              parent_pid: int | None, remove_workdir: bool, lease_file: str | None, lease_seconds: float) -> None:
    """Serve a cluster in this process (used by --detach and by plastic.local.handle)."""
    import asyncio

    from plastic.local.server import serve

    spec, _, _ = _load_spec(cluster_file, plan_file, spec_file)
    options = _options(port, workdir, heartbeat_seconds, agent_ping_timeout_seconds, interrupt_rate,
                       notice_seconds, seed, update_retry_seconds, kill_grace_seconds,
                       replace_after_seconds, launcher_threads, boot_seconds, refuse_spot, credentials_file)
    asyncio.run(serve(spec, options, state_file=Path(state_file) if state_file else None, parent_pid=parent_pid,
                      remove_workdir=remove_workdir, lease_file=Path(lease_file) if lease_file else None,
                      lease_s=lease_seconds if lease_file else None))


# ==================================================================== client commands
def _master_url(port: int, master: str | None) -> str:
    return (master or f"http://127.0.0.1:{port}").rstrip("/")


def _request(method: str, url: str, **kwargs: Any) -> Any:
    import httpx

    try:
        resp = httpx.request(method, url, timeout=10.0, **kwargs)
    except httpx.HTTPError as exc:
        raise click.ClickException(f"no local cluster answers at {url.split('/plastic')[0]} ({exc})") from None
    if resp.status_code >= 400:
        raise click.ClickException(f"{resp.status_code}: {resp.text.strip()}")
    return resp.json()


_port_option = click.option("--port", type=click.IntRange(1, 65535), default=5050, show_default=True)
_master_option = click.option("--master", metavar=URL, help="Master URL (default: http://127.0.0.1:PORT).")


@local_group.command("down", short_help="Stop a local cluster (its tasks, agents and master).")
@_port_option
@click.option("--workdir", type=click.Path(file_okay=False), help="The workdir given to `up`, if any.")
@click.option("--timeout", type=Seconds(), default=15.0, show_default=True,
              help="How long to wait for it to stop.")
def down(port: int, workdir: str | None, timeout: float) -> None:
    """Stop a local cluster (its tasks, agents and master)."""
    from plastic.local import supervisor as sup

    wd = Path(workdir).resolve() if workdir else sup.default_workdir(port)
    doc = sup.read_state(wd / sup.STATE_FILE)
    if doc is None:
        import httpx

        try:
            doc = httpx.get(f"http://127.0.0.1:{port}/plastic/status", timeout=3.0).json()
            doc["pid"] = doc["pid"]
        except (httpx.HTTPError, ValueError, KeyError):
            raise click.ClickException(f"no local cluster found on port {port} (no {wd / sup.STATE_FILE})") from None
    pid = int(doc["pid"])
    was_running = sup.terminate(pid, doc.get("cluster_id"), timeout=timeout, master_url=doc.get("master_url"))
    try:
        (wd / sup.STATE_FILE).unlink()
    except OSError:
        pass
    click.echo(f"stopped the local cluster at {doc.get('master_url')}" if was_running
               else f"the local cluster (pid {pid}) was not running; cleaned up")


@local_group.command("status", short_help="Show agents, resources, tasks and interruptions.")
@_port_option
@_master_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def status(port: int, master: str | None, fmt: str) -> None:
    """Agents, resources used/free, tasks, frameworks and scheduled interruptions."""
    doc = _request("GET", _master_url(port, master) + "/plastic/status")
    if fmt == "json":
        click.echo(json.dumps(doc, indent=1))
        return
    _render_status(doc)


def _fmt_time(t: float | None) -> str:
    if not t:
        return "-"
    delta = t - time.time()
    return f"in {delta:.0f}s" if delta >= 0 else f"{-delta:.0f}s ago"


def _render_status(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console() if sys.stdout.isatty() else Console(width=200)
    console.print(f"master {doc['master_url']}  (pid {doc['pid']}, workdir {doc['workdir']})")
    table = Table("agent", "cluster", "type", "spot", "status", "cpus used/total", "mem used/total", "tasks",
                  "interruption")
    for a in doc["agents"]:
        r = a["resources"]
        note = a["interruption"]
        when = ("died " + _fmt_time(note["died_at"])) if note["died_at"] else (
            "terminates " + _fmt_time(note["notice_time"]) if note["notice_time"] else
            "rebalance " + _fmt_time(note["rebalance_time"]) if note["rebalance_time"] else "-")
        table.add_row(a["id"], a["cluster"], a["instance_type"] or "-",
                      "yes" if a["preemptible"] else "no", a["status"],
                      f"{r['used'].get('cpus', 0):g}/{r['total'].get('cpus', 0):g}",
                      f"{r['used'].get('mem', 0):g}/{r['total'].get('mem', 0):g}", str(a["tasks"]), when)
    console.print(table)
    if doc["frameworks"]:
        ft = Table("framework", "name", "connected", "active tasks", "unreachable", "offers")
        for f in doc["frameworks"]:
            ft.add_row(f["id"], str(f["name"]), "yes" if f["connected"] else "no", str(f["active_tasks"]),
                       str(f["unreachable_tasks"]), str(f["offers"]))
        console.print(ft)
    states = ", ".join(f"{k}={v}" for k, v in sorted(doc["task_states"].items())) or "none active"
    console.print(f"tasks launched: {doc['tasks_launched']}; active by state: {states}")


@local_group.command("interrupt", short_help="Schedule a spot interruption of an agent or a cluster.")
@click.argument("agent_id", required=False)
@click.option("--cluster", "cluster_name", metavar="NAME",
              help="Interrupt every live preemptible agent of this cluster.")
@notice_seconds_option("The warning it gives: the agent dies this long from now.")
@click.option("--rebalance-only", is_flag=True, help="Only issue a rebalance recommendation.")
@_port_option
@_master_option
def interrupt(agent_id: str | None, cluster_name: str | None, notice_seconds: float, rebalance_only: bool,
              port: int, master: str | None) -> None:
    """Schedule a spot interruption of AGENT_ID (or its suffix, e.g. S1) or of a whole --cluster."""
    if bool(agent_id) == bool(cluster_name):
        raise click.UsageError("give an AGENT_ID or --cluster NAME")
    body: dict[str, Any] = {"notice_seconds": notice_seconds, "rebalance_only": rebalance_only}
    body["agent_id" if agent_id else "cluster"] = agent_id or cluster_name
    doc = _request("POST", _master_url(port, master) + "/plastic/interrupt", json=body)
    from plastic.local.instance_metadata import iso_utc

    for item in doc["interrupted"]:
        what = (f"rebalance recommendation at {iso_utc(item['rebalance_time'])}" if rebalance_only
                else f"terminates at {iso_utc(item['notice_time'])}")
        click.echo(f"{item['agent_id']}: {what}")


@local_group.command("kill-agent", short_help="Kill an agent at once, without notice.")
@click.argument("agent_id")
@_port_option
@_master_option
def kill_agent(agent_id: str, port: int, master: str | None) -> None:
    """Kill AGENT_ID (or its suffix, e.g. S1) at once, without notice; its tasks die with it."""
    doc = _request("POST", _master_url(port, master) + "/plastic/kill-agent", json={"agent_id": agent_id})
    click.echo(f"killed {doc['killed']}")


@local_group.command("restart-agent", short_help="Restart an agent's process; its tasks live on.")
@click.argument("agent_id")
@click.option("--down-seconds", type=Seconds(max=600.0), default=5.0, show_default=True,
              help="How long the agent's process is away before it is back.")
@_port_option
@_master_option
def restart_agent(agent_id: str, down_seconds: float, port: int, master: str | None) -> None:
    """Restart AGENT_ID's process: its executors and their tasks live on and re-subscribe when it is back."""
    doc = _request("POST", _master_url(port, master) + "/plastic/restart-agent",
                   json={"agent_id": agent_id, "down_seconds": down_seconds})
    click.echo(f"{doc['restarting']}: back in {doc['down_seconds']:g} s")


@local_group.command("add-agent", short_help="Add agents to the running cluster.")
@click.option("--cluster", "cluster_name", metavar="NAME", required=True,
              help="The cluster the agents join (an attribute).")
@click.option("--cpus", type=click.FloatRange(min=0.0, min_open=True), required=True)
@click.option("--ram-mib", type=click.FloatRange(min=0.0, min_open=True), required=True)
@click.option("--preemptible", is_flag=True, help="Spot agents (they get an IMDS endpoint and can be interrupted).")
@click.option("--instance-type", help="The instance type they stand for (an attribute).")
@click.option("--count", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option("--boot-seconds", type=Seconds(),
              help="They register this long after they are asked for (default: the cluster's --boot-seconds).")
@_port_option
@_master_option
def add_agent(cluster_name: str, cpus: float, ram_mib: float, preemptible: bool, instance_type: str | None,
              count: int, boot_seconds: float | None, port: int, master: str | None) -> None:
    """Add agents to the running cluster, as new Mesos agents register; prints their ids."""
    body: dict[str, Any] = {"cluster": cluster_name, "cpus": cpus, "ram_mib": ram_mib, "preemptible": preemptible,
                            "instance_type": instance_type, "count": count}
    if boot_seconds is not None:
        body["boot_seconds"] = boot_seconds
    doc = _control("POST", _master_url(port, master) + "/plastic/v1/agents", json=body)
    for a in doc["agents"]:
        click.echo(f"{a['agent_id']}  instance {a['instance_id']}  {a['state']}")


@local_group.command("remove-agent", short_help="Terminate an agent, as an instance is terminated.")
@click.argument("agent_id")
@_port_option
@_master_option
def remove_agent(agent_id: str, port: int, master: str | None) -> None:
    """Terminate AGENT_ID: it goes away like a terminated instance (its tasks are lost)."""
    _control("DELETE", _master_url(port, master) + f"/plastic/v1/agents/{agent_id}")
    click.echo(f"terminated {agent_id}")


def _control(method: str, url: str, **kwargs: Any) -> Any:
    """A control call; what the cluster refuses, or no cluster at all, is bad input (one line, exit 2)."""
    import httpx

    from plastic.core.errors import InputError

    base = url.split("/plastic")[0]
    try:
        resp = httpx.request(method, url, timeout=10.0, **kwargs)
    except httpx.HTTPError as exc:
        raise InputError(f"no local cluster answers ({type(exc).__name__})", source=base) from None
    if resp.status_code >= 400:
        raise InputError(resp.text.strip() or f"HTTP {resp.status_code}", source=base)
    return resp.json() if resp.content else {}


def main() -> None:
    """`python -m plastic.local`: the group alone, with plastic's error handling."""
    from plastic.cli.error_exit import run_command

    @click.group()
    @click.option("-v", "--verbose", count=True)
    def root(verbose: int) -> None:
        logging.basicConfig(level=logging.WARNING - 10 * min(verbose, 2),
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)

    for name, cmd in local_group.commands.items():
        root.add_command(cmd, name)
    run_command(root)

