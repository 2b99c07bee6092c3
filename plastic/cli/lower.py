"""`plastic lower WF.cwl [JOB.yml] --outdir DIR`: the annotated workflow in a form Toil understands.

Registered on the `plastic` group by plastic.cli; runs alone too
(`run_command(lower)` gives the same one-line errors).
"""

from __future__ import annotations

import os
import shlex

import click


def _shown(path: str) -> str:
    """A path as the user would type it: relative under the cwd, else absolute; quoted for a shell."""
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    shown = os.path.relpath(absolute, cwd) if absolute.startswith(cwd + os.sep) else absolute
    return shlex.quote(shown)


@click.command("lower", short_help="Lower a workflow's plastic annotations for Toil.")
@click.argument("workflow", type=click.Path())
@click.argument("job", required=False, type=click.Path())
@click.option("--outdir", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory for packed.cwl and policy.json (created if missing).")
@click.option("--no-infer-preempt", is_flag=True,
              help="Do not infer preempt=true for steps inside a scatter (as `plastic plan --no-infer-preempt`).")
def lower(workflow: str, job: str | None, out_dir: str, no_infer_preempt: bool) -> None:
    """Lower the plastic:Plasticity annotations of WORKFLOW for Toil.

    Writes DIR/packed.cwl (one self-contained document: each step runs its own
    copy of its tool, with a step-derived id, a ResourceRequirement and
    arv:UsePreemptible) and DIR/policy.json (preempt N and instanceType per tool
    id, for the plastic batch system).  JOB, when given, is checked against
    the workflow.
    """
    from plastic.cwl.lower import lower_workflow

    result = lower_workflow(workflow, out_dir, job_path=job, infer_preempt=not no_infer_preempt)
    click.echo(f"wrote the lowered workflow: {_shown(result.workflow_path)}")
    tools = f"{len(result.steps)} tool{'' if len(result.steps) == 1 else 's'}"
    click.echo(f"wrote the policy ({tools}): {_shown(result.policy_path)}")
    rows = [(s.step, s.tool_id, "dynamic" if s.vcpus is None else str(s.vcpus),
             "dynamic" if s.ram_mib is None else str(s.ram_mib), str(s.preempt), s.instance_type or "-")
            for s in result.steps]
    if rows:
        header = ("step", "tool id", "vcpus", "ram MiB", "preempt", "instance type")
        widths = [max(len(r[k]) for r in (header, *rows)) for k in range(len(header))]
        for r in (header, *rows):
            click.echo("  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    job_arg = f" {_shown(job)}" if job else ""
    click.echo("run it with:")
    click.echo(f"  toil-cwl-runner --batchSystem plastic --plasticPolicy {_shown(result.policy_path)} "
               f"... {_shown(result.workflow_path)}{job_arg}")


def main() -> None:
    """`python -m plastic.cli.lower ...`: the command alone, with plastic's one-line errors."""
    from plastic.cli.error_exit import run_command

    run_command(lower)


if __name__ == "__main__":
    main()
