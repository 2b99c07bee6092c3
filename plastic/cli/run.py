"""`plastic run WF.cwl JOB.yml`: the main job (see plastic.run.runner for what it does)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import click

from plastic.cli.inputs import refuse_option
from plastic.cli.options import URL, Seconds, catalog_option, notice_seconds_option, outdir_settings
from plastic.cli.redis_opts import redis_options
from plastic.core.book.notices import REBALANCE_MODES
from plastic.core.elastic.model import DEFAULT_NODE_IDLE_S


@click.command("run", context_settings={"ignore_unknown_options": True},
               short_help="Plan and run a CWL workflow, then print its report.")
@click.argument("workflow", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.argument("job", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.argument("toil_args", nargs=-1, type=click.UNPROCESSED, metavar="[--INPUT VALUE | TOIL-OPTION]...")
@click.option("--outdir", default=".", show_default=True, metavar="DIRECTORY",
              help="Where the workflow's output files go: a directory, or s3://BUCKET/PREFIX (exported there).")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Use this plan (plastic plan --format json) instead of planning now.")
@click.option("--master", metavar=URL, help="A Mesos master (http://HOST:PORT or zk://...); default: a local cluster "
                               "shaped like the plan.")
@click.option("--mesos-credential", type=click.Path(dir_okay=False, path_type=Path),
              help="With --master, for a master that authenticates frameworks: a file holding the credential, "
                   "JSON {\"principal\": ..., \"secret\": ...} or one line PRINCIPAL SECRET (the secret is "
                   "never taken on the command line).")
@redis_options("Redis URL for the run's state, redis://[USER:PASSWORD@]HOST[:PORT]/DB or rediss://... for TLS "
               "(default: $PLASTIC_REDIS_URL, else an embedded server persisted in the run directory).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the final report as JSON here.")
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Files of the run (default: .plastic/runs/RUN_ID).")
@catalog_option("Instance catalog for planning and prices (default: the embedded EC2 catalog).")
@click.option("--max-agents", type=click.IntRange(min=1), default=8, show_default=True,
              help="Local cluster: at most this many agents (at least one per planned cluster).")
@click.option("--interrupt-rate", type=click.FloatRange(min=0.0, min_open=True),
              help="Local cluster: random spot interruptions per burst agent per minute.")
@notice_seconds_option("Local cluster: the warning a random interruption gives before its agent dies.")
@click.option("--seed", type=int, help="Local cluster: seed for random interruptions.")
@click.option("--run-id", help="Use this run id (a run submitted with `plastic submit` is taken over).")
@click.option("--quiet", is_flag=True, help="No progress display (the outputs and the report still print).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Go on with the run in this run directory after `plastic run` was killed: same Redis (give "
                   "--redis again if its URL had a password), same local cluster if it still runs, Toil "
                   "restarted on the same job store (no WORKFLOW, JOB or other options).")
@click.option("--static", is_flag=True,
              help="Keep the plan's cluster fixed (default: elastic, it grows for queued work, replaces lost spot "
                   "nodes and releases idle ones).")
@click.option("--max-nodes", type=click.IntRange(min=1),
              help="Elastic: at most this many live nodes (default: --max-agents on a local cluster).")
@click.option("--idle-seconds", "idle_s", type=Seconds(min_open=True),
              help=f"Elastic: release a node without work for this long (default: {DEFAULT_NODE_IDLE_S:g}).")
@click.option("--budget-per-hour", "budget_usd_per_hour", type=click.FloatRange(min=0.0, min_open=True), metavar="USD",
              help="Elastic: the live nodes never cost more than this many USD per hour.")
@click.option("--budget-usd", type=click.FloatRange(min=0.0, min_open=True), metavar="USD",
              help="Elastic: stop growing when the run's projected spend reaches this many USD.")
@click.option("--boot-seconds", "boot_s", type=Seconds(),
              help="Local cluster, elastic: how long a new agent takes to boot (default: 0).")
@click.option("--makespan-allowance", type=click.FloatRange(min=0.0, max=1.0, max_open=True), metavar="FRACTION",
              help="Elastic, looking a boot ahead (--boot-seconds, or --provider ec2): let work start up to this "
                   "fraction of (boot + its runtime) later than a new node would start it, where that buys fewer "
                   "nodes: short tasks run back to back, work waits a little for room (e.g. 0.1; default: 0).")
@click.option("--refuse-spot", metavar="TYPES",
              help="Local cluster, elastic: emulate a spot shortage, refusing spot agents of these instance "
                   "types (comma-separated; * for all).")
@click.option("--provider", type=click.Choice(["local", "ec2"]), default="local", show_default=True,
              help="Where elastic nodes come from: the local cluster, or EC2 (instances whose agents join "
                   "--master; give --image-id, and --redis reachable from them).")
@click.option("--region", help="ec2: AWS region (default: AWS_REGION / the AWS config).")
@click.option("--image-id", help="ec2: the instances' AMI.")
@click.option("--subnet", help="ec2: the instances' subnet (default: the region's default VPC).")
@click.option("--key-name", help="ec2: key pair for SSH to the instances.")
@click.option("--instance-profile", help="ec2: the instances' IAM instance profile.")
@click.option("--agent-image", help="ec2: the Mesos agent image the instances run (default: the compose cluster's, plastic/agent:latest).")
@click.option("--job-store", metavar="STORE",
              help="Where Toil keeps the run's jobs and files (file, s3 or aws:REGION:NAME): the run directory "
                   "(file; the default on a local "
                   "cluster), a private, encrypted S3 bucket made for the run and removed with it (s3; the default "
                   "with --provider ec2), or an S3 job store of your own.")
@click.option("--executor", type=click.Choice(["plastic", "command"]), default="plastic", show_default=True,
              help="How agents run tasks: plastic's executor, one per agent running every task placed there, or "
                   "Mesos' command executor, one process per task (for agents without plastic installed).")
@click.option("--rebalance", type=click.Choice(REBALANCE_MODES),
              help="What a spot rebalance recommendation does to its agent: nothing (ignore), no new long tasks "
                   "there (avoid-long, the default), or no new tasks and a drain (drain).")
@click.option("--adopt-seconds", "adopt_s", type=Seconds(),
              help="With --resume: let a task of the killed run that is still running finish (its work kept) "
                   "when it is expected to within this many seconds; others are killed and run again "
                   "(0: kill them all; default: 300).")
def run(workflow: Path | None, job: Path | None, toil_args: tuple[str, ...], quiet: bool, resume_dir: Path | None,
        adopt_s: float | None, redis_url: str | None, redis_ca: str | None, provider: str,
        **settings: object) -> None:
    """Plan, run WORKFLOW with JOB through Toil on plastic, print the outputs (JSON) and a report.

    After WORKFLOW [JOB]: the workflow's inputs as flags, as cwltool takes them (`--reads r.fq`; on top
    of JOB's values), and options of toil-cwl-runner; after `--`, also an input named like an option
    of plastic run."""
    from rich.console import Console

    from plastic.cli.redis_opts import redis_url as checked_url
    from plastic.report.view import RichDisplay, failure, report_table
    from plastic.run.modes import make_private
    from plastic.run.request import RunRequest
    from plastic.run.runner import execute, resume

    make_private()  # the run directory, the job store, Redis's files: this user's only (plastic.run.modes)

    refuse_option(workflow)
    ec2_options = {name: settings.pop(name) for name in EC2_OPTIONS}
    _check_run_options(workflow, toil_args, resume_dir, adopt_s, settings)
    ec2 = _ec2_settings(provider, ec2_options, resume_dir, settings)
    _check_credential(resume_dir, settings)
    _check_elastic_options(resume_dir, ec2 is not None, settings)
    take_sigint()
    redis_url = checked_url(redis_url, redis_ca)
    console = Console(stderr=True)
    if not console.is_terminal:
        console = Console(stderr=True, width=160)  # a pipe or a file: no truncated columns
    display = RichDisplay(console, quiet=quiet)
    if resume_dir is not None:
        if not resume_dir.is_dir():
            raise click.UsageError(f"--resume: no such directory: {resume_dir}")
        result = resume(resume_dir, redis_url, display,
                        on_started=lambda rid, rdir: display.note(f"run {rid} resumed; files in {rdir}"),
                        adopt_s=adopt_s)
        _finish(result, console, report_table, failure)
        return
    assert workflow is not None
    from plastic.cli.inputs import take_inputs
    from plastic.store import new_run_id

    settings.update(outdir_settings(str(settings.pop("outdir"))))
    run_id = str(settings.pop("run_id", None) or new_run_id())
    line = take_inputs(workflow, job, toil_args, run_id)  # inputs as flags become a job order; the rest: Toil's
    given = {name: value for name, value in settings.items() if value is not None}  # the rest: the defaults
    request = RunRequest(workflow=workflow, job=line.job, toil_args=line.toil_args, run_id=run_id,
                         redis_url=redis_url, ec2=ec2, **given)  # type: ignore[arg-type]
    with line.refused_as_bad_input():
        result = execute(request, display, on_started=lambda rid, rdir: display.note(f"run {rid}; files in {rdir}"))
    _finish(result, console, report_table, failure)


# The options of `plastic run` that are not settings of the run (RunRequest) by the same name
EC2_OPTIONS = ("region", "image_id", "subnet", "key_name", "instance_profile", "agent_image")
ELASTIC_OPTIONS = ("max_nodes", "idle_s", "budget_usd_per_hour", "budget_usd", "boot_s", "refuse_spot",
                   "makespan_allowance")


def _flag(name: str) -> str:
    return "--" + {"idle_s": "idle-seconds", "boot_s": "boot-seconds",
                   "budget_usd_per_hour": "budget-per-hour"}.get(name, name.replace("_", "-"))


def _check_run_options(workflow: Path | None, toil_args: tuple[str, ...], resume_dir: Path | None,
                       adopt_s: float | None, settings: dict[str, object]) -> None:
    if resume_dir is not None and (workflow is not None or toil_args):
        raise click.UsageError("--resume RUN_DIR takes no WORKFLOW, JOB or Toil options (they come from the run)")
    if adopt_s is not None and resume_dir is None:
        raise click.UsageError("--adopt-seconds goes with --resume RUN_DIR")
    if resume_dir is None and workflow is None:
        raise click.UsageError("missing argument WORKFLOW (or --resume RUN_DIR)")


def _ec2_settings(provider: str, options: dict[str, object], resume_dir: Path | None,
                  settings: dict[str, object]) -> object | None:
    """--provider ec2's settings (its region checked now: no credentials is one line, before anything starts)."""
    if provider != "ec2":
        given = [_flag(name) for name, value in options.items() if value is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)}: options of --provider ec2")
        return None
    from plastic.run.ec2 import Ec2Settings

    local_only = [_flag(name) for name in ("refuse_spot", "interrupt_rate", "seed") if settings.get(name) is not None]
    static, master, image_id = settings.get("static"), settings.get("master"), options.get("image_id")
    if static or resume_dir is not None or not master or not image_id or local_only:
        why = ("not with --static" if static else "not with --resume" if resume_dir is not None
               else "needs --master (the Mesos master the instances' agents join)" if not master
               else "needs --image-id" if not image_id else f"{', '.join(local_only)}: local cluster only")
        raise click.UsageError(f"--provider ec2: {why}")
    from plastic.aws.ec2_cloud import Aws

    region = Aws.connect(options.get("region")).region  # type: ignore[arg-type]
    return Ec2Settings(image_id=str(image_id), region=region, subnet=options.get("subnet"),  # type: ignore[arg-type]
                       key_name=options.get("key_name"), instance_profile=options.get("instance_profile"),  # type: ignore[arg-type]
                       agent_image=options.get("agent_image") or Ec2Settings.agent_image)  # type: ignore[arg-type]


def _check_credential(resume_dir: Path | None, settings: dict[str, object]) -> None:
    """--mesos-credential, made absolute and checked against the master now (one line, nothing created)."""
    credential = settings.get("mesos_credential")
    if credential is None:
        return
    master = settings.get("master")
    if not master or resume_dir is not None:
        raise click.UsageError("--mesos-credential goes with --master (a resumed run keeps its own)")
    from plastic.mesos.credential import check_credential, read_credential

    credential = Path(str(credential)).resolve()
    settings["mesos_credential"] = credential
    check_credential(str(master), read_credential(credential), source=str(credential))


def _check_elastic_options(resume_dir: Path | None, on_ec2: bool, settings: dict[str, object]) -> None:
    given = [_flag(name) for name in ELASTIC_OPTIONS if settings.get(name) is not None]
    if not given:
        return
    if settings.get("static"):
        raise click.UsageError(f"{', '.join(given)}: elastic options, not with --static")
    if settings.get("master") and not on_ec2:
        raise click.UsageError(f"{', '.join(given)}: a cluster given with --master is static (plastic "
                               f"creates nodes on its local cluster only)")
    if resume_dir is not None:
        raise click.UsageError(f"{', '.join(given)}: a resumed run keeps its own settings")
    if settings.get("makespan_allowance") and not settings.get("boot_s") and not on_ec2:
        raise click.UsageError("--makespan-allowance: needs --boot-seconds on a local cluster (the controller "
                               "trades time for nodes only when it looks a boot ahead)")


def take_sigint() -> None:
    """Ctrl-C / SIGINT cancels the run even when it was started in the background: a shell starts a
    background job with SIGINT ignored, and a process that ignores it hands that on to every child it
    starts (the Toil leader, the local cluster, the watchers). With Python's handler back, SIGINT raises
    KeyboardInterrupt here (the run is cancelled and cleaned up) and the children start with the default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _finish(result, console, report_table, failure) -> None:
    if result.outputs is not None:
        click.echo(json.dumps(result.outputs, indent=4))
    console.print(report_table(result.report))
    if result.exit_code != 0:
        raise failure(result)
