"""`plastic serve | submit | status | logs`: the plasticity manager as a long-running service."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from pathlib import Path

import click

from plastic.cli.inputs import refuse_option
from plastic.cli.options import URL, outdir_settings
from plastic.cli.redis_opts import redis_options
from plastic.cli.redis_opts import redis_url as checked_url
from plastic.core.book.lifecycle import TaskState

log = logging.getLogger(__name__)

_redis_option = redis_options("Redis URL, redis://[USER:PASSWORD@]HOST[:PORT]/DB or rediss://... for TLS (default: "
                              "$PLASTIC_REDIS_URL, else the embedded server of $PLASTIC_HOME, default "
                              "~/.local/state/plastic).")
FINAL_STATES = ("SUCCEEDED", "FAILED", "CANCELLED")


def _store(redis_url: str | None, redis_ca: str | None):
    from plastic.service.home import service_redis
    from plastic.store import Store

    conn = service_redis(checked_url(redis_url, redis_ca))
    return Store(conn.client), conn


@click.command("serve", short_help="Run submitted workflows until interrupted.")
@_redis_option
@click.option("--master", metavar=URL,
              help="Run every workflow on this Mesos master (default: a local cluster per run).")
@click.option("--max-runs", type=click.IntRange(min=1), default=2, show_default=True,
              help="How many runs at once.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Run directories (default: $PLASTIC_HOME/runs).")
@click.option("--job-store", metavar="STORE",
              help="Every run's job store (file or s3), as `plastic run --job-store` (s3: on an EC2 control plane, "
                   "where the agents share no file system with it).")
def serve(redis_url: str | None, redis_ca: str | None, master: str | None, max_runs: int,
          runs_dir: Path | None, job_store: str | None) -> None:
    """Run submitted workflows (plastic submit) until interrupted."""
    from plastic.home import plastic_home
    from plastic.run.modes import make_private
    from plastic.run.toil_command import check_run_dir
    from plastic.service.service import Service
    from plastic.store.urls import redact

    runs_dir = (runs_dir or plastic_home() / "runs").resolve()
    check_run_dir(runs_dir)
    user_umask = make_private()  # its home, run directories and logs: this user's only (plastic.run.modes)
    store, conn = _store(redis_url, redis_ca)
    if job_store not in (None, "file", "s3"):
        raise click.BadParameter(f"{job_store}: file or s3", param_hint="--job-store")
    service = Service(store, conn.url, runs_dir=runs_dir, master=master, max_runs=max_runs, child_umask=user_umask,
                      job_store=job_store or "")

    def stop(signum: int, frame: object) -> None:
        service.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    click.echo(f"plastic serve: Redis {redact(conn.url)}; runs in {runs_dir}; up to {max_runs} at once", err=True)
    try:
        service.serve()
    finally:
        conn.close()


@click.command("submit", context_settings={"ignore_unknown_options": True},
               short_help="Queue a workflow for `plastic serve`; print its run id.")
@click.argument("workflow", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("job", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.argument("toil_args", nargs=-1, type=click.UNPROCESSED, metavar="[--INPUT VALUE | TOIL-OPTION]...")
@_redis_option
@click.option("--outdir", metavar="DIRECTORY",
              help="Where the outputs go, on the service's machine, or s3://BUCKET/PREFIX (default: RUN_DIR/out).")
@click.option("--executor", type=click.Choice(["plastic", "command"]), default="plastic", show_default=True,
              help="As for `plastic run`: plastic's executor (one per agent) or Mesos' command executor.")
@click.option("--ship/--no-ship", default=None,
              help="Carry the workflow, the job order and its local input files to the service in Redis (the "
                   "default when Redis is on another machine, such as an EC2 control plane).")
def submit(workflow: Path, job: Path | None, toil_args: tuple[str, ...], redis_url: str | None, redis_ca: str | None,
           outdir: str | None, executor: str, ship: bool | None) -> None:
    """Queue WORKFLOW with JOB for `plastic serve`; prints the run id.

    After WORKFLOW [JOB], as for `plastic run`: the workflow's inputs as flags and toil-cwl-runner's options."""
    from plastic.cli.inputs import take_inputs
    from plastic.cwl.loader import load_cwl
    from plastic.service.service import submission_fields
    from plastic.service.shipment import is_local_redis, make_shipment
    from plastic.store import new_run_id

    refuse_option(workflow)
    run_id = new_run_id()
    line = take_inputs(workflow, job, toil_args, run_id)  # inputs as flags become a job order; the rest: Toil's
    job, toil_args = line.job, line.toil_args
    with line.refused_as_bad_input():
        load_cwl(str(workflow), None if job is None else str(job))  # bad input fails here, not in the service
    where = outdir_settings(outdir) if outdir is not None else {}
    store, conn = _store(redis_url, redis_ca)
    try:
        shipment = make_shipment(workflow, job) if (not is_local_redis(conn.url) if ship is None else ship) else None
        fields = submission_fields(workflow, job, where.get("outdir"), toil_args, executor,  # type: ignore[arg-type]
                                   out_url=where.get("out_url"), shipped=shipment is not None)  # type: ignore[arg-type]
        with store.pipeline() as pipe:
            store.create_run(run_id, fields=fields, pipeline=pipe)
            if shipment is not None:
                store.ship_files(run_id, shipment.files, pipeline=pipe)
            store.push_submission({"run": run_id}, pipeline=pipe)
            store.execute(pipe)
        click.echo(run_id)
    finally:
        conn.close()


def run_directory(run: str) -> Path | None:
    """RUN (of status, logs, report) as a run directory; None when it is a run id.  A word that reads as a
    path but is not a directory is one line (InputError)."""
    from plastic.core.errors import InputError

    path = Path(run)
    if path.is_dir():
        return path
    if os.sep in run or run.startswith(".") or path.exists():
        raise InputError("no such run directory", source=run)
    return None


def _run_store(run: str, redis_url: str | None, redis_ca: str | None):
    """RUN as a run directory (`plastic run`'s: its own Redis, plastic.run.run_redis.open_to_read) or as
    the id of a run in the service's Redis.  -> (run id, Store, close)."""
    path = run_directory(run)
    if path is not None:
        from plastic.run.run_redis import open_to_read

        return open_to_read(path, checked_url(redis_url, redis_ca), redis_ca)
    store, conn = _store(redis_url, redis_ca)
    return run, store, conn.close


def _existing_run(store, run_id: str):
    """The run record, or a one-line InputError naming RUN_ID."""
    from plastic.core.errors import InputError

    try:
        run = store.get_run(run_id)
    except ValueError as exc:
        raise InputError(str(exc), source="RUN") from None
    if run is None:
        raise InputError(f"no run {run_id!r}", source="RUN")
    return run


def _ago(t: float) -> str:
    s = max(time.time() - t, 0)
    return f"{s:.0f} s ago" if s < 120 else (f"{s / 60:.0f} min ago" if s < 7200 else f"{s / 3600:.1f} h ago")


_NUMBERS = {"makespan_s": "makespan s", "cost_usd": "cost USD"}  # run fields shown as numbers, their columns
_LAST_EVENTS = 5


def _number(text: str | None, key: str) -> str:
    """A run's number field as people read it: seconds to a tenth, dollars to three significant digits."""
    try:
        value = float(text or "")
    except ValueError:
        return text or ""
    return f"{value:.1f}" if key == "makespan_s" else f"{value:.3g}"


def _done(counts) -> str:
    """Finished tasks of the tasks the run has seen so far, e.g. ``7/9``; empty before the first."""
    seen = sum(counts.values())
    return f"{counts.get(TaskState.FINISHED, 0)}/{seen}" if seen else ""


@click.command("status", short_help="Show the service's runs, or one run's tasks and events.")
@click.argument("run", required=False)
@_redis_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def status(run: str | None, redis_url: str | None, redis_ca: str | None, fmt: str) -> None:
    """The service's runs and their state; with RUN (a run id, or the run directory of a `plastic run`),
    that run's tasks by state and its last events."""
    from rich.console import Console
    from rich.table import Table

    if run is None:
        store, conn = _store(redis_url, redis_ca)
        run_id, close = None, conn.close
    else:
        run_id, store, close = _run_store(run, redis_url, redis_ca)
    try:
        console = Console()
        if not console.is_terminal:
            console = Console(width=200)  # a pipe or a file: no wrapping
        if run_id is None:
            runs = store.list_runs()
            if fmt == "json":
                click.echo(json.dumps([r.to_json(_counts(store, r.id)) for r in runs], indent=2))
                return
            if not runs:
                console.print("no runs of plastic serve in this Redis; a plastic run keeps its own: plastic status "
                              "RUN_DIR (.plastic/runs/RUN_ID)", highlight=False)
                return
            table = Table(title=f"{len(runs)} runs")
            for col in ("run", "state", "workflow", "since", "tasks done", "makespan s", "cost USD"):
                table.add_column(col, justify="right" if col in ("tasks done", *_NUMBERS.values()) else "left")
            for r in runs:
                table.add_row(r.id, str(r.state), Path(r.fields.get("workflow", "")).name, _ago(r.state_at),
                              _done(store.task_counts(r.id)),
                              *(_number(r.fields.get(key), key) for key in _NUMBERS))
            console.print(table)
            return
        record = _existing_run(store, run_id)
        counts = _counts(store, run_id)
        if fmt == "json":
            click.echo(json.dumps(record.to_json(counts), indent=2))
            return
        console.print(f"run {record.id}: [bold]{record.state}[/bold] since {_ago(record.state_at)}")
        for key in ("workflow", "job", "outdir", "run_dir", "master", "error", *_NUMBERS):
            if record.fields.get(key):
                console.print(f"  {key}: {_number(record.fields[key], key)}", highlight=False)
        console.print("  tasks: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none yet"))
        if record.fields.get("run_dir"):
            console.print(f"  picture: plastic report {run} --html report.html", highlight=False)
        last = store.last_events(run_id, _LAST_EVENTS)
        if last:
            console.print(f"  last {len(last)} events (all: plastic logs {run}):", highlight=False)
            for ev in last:
                console.print("    " + _event_line(ev), highlight=False, markup=False, soft_wrap=True)
    finally:
        close()


def _counts(store, run_id: str) -> dict[str, int]:
    """A run's tasks by state (the states with none left out)."""
    return {str(k): v for k, v in store.task_counts(run_id).items() if v}


def _event_line(ev) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(ev.at)) + f".{int(ev.at * 1000) % 1000:03d}"
    fields = " ".join(f"{k}={v}" for k, v in ev.fields.items() if k != "at")  # the stamp says when
    return f"{stamp} {ev.type} {fields}".rstrip()


def _event_json(ev) -> dict:
    """An event as one JSON object: its fields as stored, those of a record of the JobBook or of the elastic
    controller typed (plastic.core.account.record_codec: numbers as numbers, lists as lists; the store's
    own entries as written), the stream entry's id as ``event_id``, ``at`` in seconds since the epoch and
    ``type``."""
    from plastic.core.account.record_codec import UnknownRecord, decode

    record = decode(ev.type, ev.fields)
    typed = {} if isinstance(record, UnknownRecord) else json.loads(json.dumps(record.fields, default=str))
    fields = {key: typed.get(key, value) for key, value in ev.fields.items()}  # the stored names, typed
    return {**fields, "event_id": ev.id, "at": ev.at, "type": ev.type}


@click.command("logs", short_help="Print a run's event stream: placements, notices, requeues.")
@click.argument("run")
@_redis_option
@click.option("-f", "--follow", is_flag=True, help="Keep printing new events until the run ends.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event.")
def logs(run: str, redis_url: str | None, redis_ca: str | None, follow: bool, as_json: bool) -> None:
    """Print the event stream of RUN (placements, declines, notices, requeues, nodes, state changes): a run
    id, or the run directory of a `plastic run`."""
    from plastic.store.store_errors import StoreError, is_unavailable

    run_id, store, close = _run_store(run, redis_url, redis_ca)
    try:
        _existing_run(store, run_id)
        last, ended = "0-0", False  # ended: the run's end is in what was printed
        while True:
            try:
                batch = store.read_events(run_id, last, count=1000, block_ms=1000 if follow else None)
                record = None if batch or not follow else store.get_run(run_id)
            except Exception as error:
                if not is_unavailable(error):
                    raise
                if ended:  # a `plastic run` stops its own Redis once the run has ended
                    return
                raise StoreError(f"lost the run's Redis while following {run_id}: {error}") from None
            for ev in batch:
                last = ev.id
                ended = ended or (ev.type == "transition" and ev.fields.get("kind") == "run"
                                  and ev.fields.get("to") in FINAL_STATES)
                click.echo(json.dumps(_event_json(ev)) if as_json else _event_line(ev))
            if batch:
                continue
            if not follow or ended:
                return
            if record is not None and str(record.state) in FINAL_STATES:
                ended = True  # its last events (its end among them) come with the next read, then stop
    finally:
        close()
