"""`plastic plan` and `plastic inspect`: size a hybrid cloud for a workload, show what a workflow asks for.

Heavy libraries (cwltool, rich) are imported inside the commands, so `plastic plan TRACE` starts fast.
"""

from __future__ import annotations

import logging
import os

import click

from plastic.cli.inputs import refuse_option
from plastic.cli.options import catalog_option

log = logging.getLogger(__name__)

PARALLEL_MIN_TASKS = 2000


def _load_workload(input_path: str, job: str | None, *, preempt: str, infer_preempt: bool,
                   default_ram_mib: int, scatter_width: int, inputs: tuple[str, ...] = ()):
    """A WfCommons trace or an annotated CWL document (with JOB and/or ``inputs`` as flags) -> Workload."""
    from plastic.core.errors import InputError
    from plastic.core.model import PREEMPTIBLE, RELIABLE, Workload
    from plastic.cwl import document_file

    file = document_file(input_path)
    if not os.path.exists(file):
        raise InputError("no such file", source=input_path)
    from plastic.traces import is_wfcommons_file, load_trace

    if file == input_path and is_wfcommons_file(input_path):  # a trace has no `#ID`
        if job is not None or inputs:
            raise InputError("a WfCommons trace takes no job order", source=job or inputs[0], field="JOB")
        return load_trace(input_path, default_ram_mib=default_ram_mib, preempt_mode=preempt)
    from plastic.cli.inputs import job_with_flags
    from plastic.cwl.loader import load_cwl

    with job_with_flags(input_path, job, inputs, "plan") as job:
        workload = load_cwl(input_path, job, infer_preempt=infer_preempt,
                            scatter_width_assumption=scatter_width).workload()
    if preempt == "infer":
        return workload
    forced = PREEMPTIBLE if preempt == "all" else RELIABLE
    tasks = tuple(type(t)(t.id, t.vcpus, t.ram_mib, forced, t.runtime_s, t.instance_type, t.parents)
                  for t in workload.tasks)
    return Workload(tasks, workload.assumptions + (f"--preempt {preempt}: every task {forced}",), workload.source)


@click.command("plan", context_settings={"ignore_unknown_options": True},
               short_help="Size the hybrid cloud for a workflow or a trace.")
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@click.argument("job", required=False, type=click.Path(dir_okay=False))
@click.argument("inputs", nargs=-1, type=click.UNPROCESSED, metavar="[--INPUT VALUE]...")
@catalog_option("Instance catalog (YAML/JSON); default: the embedded EC2 us-east-1 catalog.")
@click.option("--concurrent", is_flag=True, help="Pack every task at once instead of planning per wave.")
@click.option("--preempt", type=click.Choice(["infer", "all", "none"]), default="infer", show_default=True,
              help="Preemptibility: inferred (annotations, replication), or forced for every task.")
@click.option("--no-infer-preempt", is_flag=True, help="CWL: do not infer preempt=true inside scatters.")
@click.option("--default-ram-mib", type=click.IntRange(min=1), default=1024, show_default=True,
              help="Traces: RAM for tasks without memoryInBytes.")
@click.option("--scatter-width", type=click.IntRange(min=1), default=1, show_default=True,
              help="CWL without a job order: assumed width of dynamic scatters.")
@click.option("--budget-per-hour", type=click.FloatRange(min=0.0, min_open=True), metavar="USD",
              help="Budget in USD per hour.")
@click.option("--reserve-vcpus", type=click.IntRange(min=0), default=0, show_default=True,
              help="vCPUs kept on every node for the OS and the Mesos agent.")
@click.option("--reserve-ram-mib", type=click.IntRange(min=0), default=0, show_default=True,
              help="MiB kept on every node for the OS and the Mesos agent.")
@click.option("--strategy", type=click.Choice(["best", "seeds"]), default="best", show_default=True,
              help="best: every strategy, cheapest wins; seeds: the seeds' algorithm alone.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "yaml", "compose"]), default="table",
              show_default=True, help="compose: a docker-compose override giving the compose cluster the plan's "
                                      "agents.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the plan here (atomically).")
def plan(input_path: str, job: str | None, inputs: tuple[str, ...], catalog_path: str | None, concurrent: bool,
         preempt: str, no_infer_preempt: bool, default_ram_mib: int, scatter_width: int, budget_per_hour: float | None,
         reserve_vcpus: int, reserve_ram_mib: int, strategy: str, fmt: str, output: str | None) -> None:
    """Size the hybrid cloud for INPUT (annotated CWL + JOB, or a WfCommons trace).

    The workflow's inputs may be given as flags after INPUT [JOB], as for `plastic run`."""
    refuse_option(input_path)
    from plastic.catalogs import load_catalog
    from plastic.core.errors import PlanningError
    from plastic.core.model import Reserve
    from plastic.core.planning.plan import PlanOptions, static_risk
    from plastic.core.planning.sizing import plan_workload

    catalog = load_catalog(catalog_path)
    workload = _load_workload(input_path, job, preempt=preempt, infer_preempt=not no_infer_preempt,
                              default_ram_mib=default_ram_mib, scatter_width=scatter_width, inputs=inputs)
    options = PlanOptions(concurrent=concurrent, budget_usd_per_hour=budget_per_hour,
                          effort=1 if strategy == "seeds" else 2)
    from plastic.core.planning.planner import one_by_one
    from plastic.parallel import fork_map

    # a big workload's strategies run side by side, one per core (a small one plans faster than a fork)
    run_each = fork_map if len(workload.tasks) >= PARALLEL_MIN_TASKS else one_by_one
    try:
        result = plan_workload(workload, catalog, reserve=Reserve(reserve_vcpus, reserve_ram_mib), options=options,
                               run_each=run_each)
    except PlanningError as exc:
        # Name the input file as well as the task/step the planner complained about.
        exc.source = f"{input_path}: {exc.source}" if exc.source else input_path
        raise
    from plastic import render

    if fmt != "table" and (risk := static_risk(result)) is not None:  # the table prints it
        click.echo(f"plastic: warning: {risk}", err=True)
    if fmt == "json":
        text = render.plan_as_json(result)
    elif fmt == "yaml":
        text = render.plan_as_yaml(result)
    elif fmt == "compose":
        text = render.plan_as_compose(result)
    else:
        text = render.plan_as_table(result)
    if output:
        from plastic.fileio import write_atomically

        write_atomically(output, text)
    else:
        click.echo(text, nl=False)


@click.command("inspect", context_settings={"ignore_unknown_options": True},
               short_help="Show how plastic reads a CWL workflow, step by step.")
@click.argument("workflow", type=click.Path())
@click.argument("job", required=False, type=click.Path())
@click.argument("inputs", nargs=-1, type=click.UNPROCESSED, metavar="[--INPUT VALUE]...")
@click.option("--no-infer-preempt", is_flag=True,
              help="Do not infer preempt=true for steps inside a scatter (reliable unless annotated).")
@click.option("--scatter-width", type=click.IntRange(min=1), default=1, show_default=True,
              help="Assumed width of scatters whose width is known only at run time.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def inspect(workflow: str, job: str | None, inputs: tuple[str, ...], no_infer_preempt: bool, scatter_width: int,
            fmt: str) -> None:
    """Show how plastic reads WORKFLOW (CWL, with optional JOB order): one row per step.

    The workflow's inputs may be given as flags after WORKFLOW [JOB], as for `plastic run`."""
    refuse_option(workflow)
    from plastic.cli.inputs import job_with_flags
    from plastic.cwl.inspect_view import render_table, to_json_text
    from plastic.cwl.loader import load_cwl

    with job_with_flags(workflow, job, inputs, "inspect") as job:
        wf = load_cwl(workflow, job, infer_preempt=not no_infer_preempt, scatter_width_assumption=scatter_width)
    if fmt == "json":
        click.echo(to_json_text(wf))
        return
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console = Console(width=200)  # a pipe or a file: no wrapping inside the table
    render_table(wf, console)
