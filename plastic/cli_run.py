"""`plastic run WF.cwl JOB.yml`: the main job (see plastic.run.runner for what it does)."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("run", context_settings={"ignore_unknown_options": False})
@click.argument("workflow", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.argument("job", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.argument("toil_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--outdir", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="Where the workflow's output files go.")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Use this plan (plastic plan --format json) instead of planning now.")
@click.option("--master", help="A Mesos master (http://HOST:PORT or zk://...); default: a local cluster "
                               "shaped like the plan.")
@click.option("--redis", "redis_url", help="Redis URL for the run's state (default: $PLASTIC_REDIS_URL, else an "
                                           "embedded server persisted in the run directory).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the final report as JSON here.")
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Files of the run (default: .plastic/runs/RUN_ID).")
@click.option("--catalog", "catalog_path", type=click.Path(dir_okay=False),
              help="Instance catalog for planning and prices (default: the embedded EC2 catalog).")
@click.option("--max-agents", type=click.IntRange(min=1), default=8, show_default=True,
              help="Local cluster: at most this many agents (at least one per planned cluster).")
@click.option("--interrupt-rate", type=click.FloatRange(min=0.0, min_open=True),
              help="Local cluster: random spot interruptions per burst agent per minute.")
@click.option("--notice-seconds", type=click.FloatRange(min=0.0), default=120.0, show_default=True,
              help="Local cluster: warning time before an interrupted agent dies.")
@click.option("--seed", type=int, help="Local cluster: seed for random interruptions.")
@click.option("--run-id", help="Use this run id (a run submitted with `plastic submit` is taken over).")
@click.option("--quiet", is_flag=True, help="No progress display (the outputs and the report still print).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Go on with the run in this run directory after `plastic run` was killed: same Redis (give "
                   "--redis if the run used an external one), same local cluster if it still runs, Toil "
                   "restarted on the same job store (no WORKFLOW, JOB or other options).")
@click.option("--adopt-seconds", "adopt_s", type=click.FloatRange(min=0.0),
              help="With --resume: let a task of the killed run that is still running finish (its work kept) "
                   "when it is expected to within this many seconds; others are killed and run again "
                   "(0: kill them all; default: 300).")
def run(workflow: Path | None, job: Path | None, toil_args: tuple[str, ...], outdir: Path, plan_path: Path | None,
        master: str | None, redis_url: str | None, report_path: Path | None, run_dir: Path | None,
        catalog_path: str | None, max_agents: int, interrupt_rate: float | None, notice_seconds: float,
        seed: int | None, run_id: str | None, quiet: bool, resume_dir: Path | None,
        adopt_s: float | None) -> None:
    """Plan, run WORKFLOW with JOB through Toil on plastic, print the outputs (JSON) and a report.

    Anything after `--` goes to toil-cwl-runner unchanged."""
    from rich.console import Console

    from plastic.run.runner import RunRequest, execute, failure, resume
    from plastic.run.view import RichDisplay, report_table

    if resume_dir is not None and (workflow is not None or toil_args):
        raise click.UsageError("--resume RUN_DIR takes no WORKFLOW, JOB or Toil options (they come from the run)")
    if adopt_s is not None and resume_dir is None:
        raise click.UsageError("--adopt-seconds goes with --resume RUN_DIR")
    if resume_dir is None and workflow is None:
        raise click.UsageError("missing argument WORKFLOW (or --resume RUN_DIR)")
    if job is not None and str(job).startswith("-"):
        raise click.UsageError(f"unexpected option {job}: put toil-cwl-runner options after --")
    console = Console(stderr=True)
    if not console.is_terminal:
        console = Console(stderr=True, width=160)  # a pipe or a file: no truncated columns
    console_ = console
    if resume_dir is not None:
        if not resume_dir.is_dir():
            raise click.UsageError(f"--resume: no such directory: {resume_dir}")
        display = RichDisplay(console_, quiet=quiet)
        result = resume(resume_dir, redis_url, display,
                        on_started=lambda rid, rdir: display.note(f"run {rid} resumed; files in {rdir}"),
                        adopt_s=adopt_s)
        _finish(result, console_, report_table, failure)
        return
    assert workflow is not None
    request = RunRequest(workflow=workflow, job=job, outdir=outdir, plan_path=plan_path, master=master,
                         redis_url=redis_url, report_path=report_path, run_dir=run_dir, catalog_path=catalog_path,
                         max_agents=max_agents, interrupt_rate=interrupt_rate, notice_seconds=notice_seconds,
                         seed=seed, toil_args=toil_args, run_id=run_id)
    display = RichDisplay(console, quiet=quiet)
    result = execute(request, display,
                     on_started=lambda rid, rdir: display.note(f"run {rid}; files in {rdir}"))
    _finish(result, console, report_table, failure)


def _finish(result, console, report_table, failure) -> None:
    if result.outputs is not None:
        click.echo(json.dumps(result.outputs, indent=4))
    console.print(report_table(result.report))
    if result.exit_code != 0:
        raise failure(result)
