"""Rendering of `plastic inspect`: a rich table (one row per step) or JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from plastic.cwl.loader import CwlWorkflow, StepRow


def scatter_text(row: StepRow) -> str:
    if row.scatter_width is None:
        return "-"
    if row.width_dynamic:
        return f"dynamic (assumed {row.scatter_width})"
    return str(row.scatter_width)


def to_json_text(wf: CwlWorkflow) -> str:
    return json.dumps(wf.to_json(), indent=2)


def render_table(wf: CwlWorkflow, console: Console) -> None:
    from rich.table import Table

    table = Table(title=f"{wf.source}: {len(wf.rows)} step(s), {len(wf.workload().tasks)} task(s)",
                  title_justify="left")
    table.add_column("step", style="bold", overflow="fold")
    table.add_column("vCPUs", justify="right")
    table.add_column("from", style="dim")
    table.add_column("RAM MiB", justify="right")
    table.add_column("from", style="dim")
    table.add_column("preempt", justify="center")
    table.add_column("from", style="dim")
    table.add_column("instance type")
    table.add_column("scatter width", justify="right")
    for row in wf.rows:
        table.add_row(
            row.step_id,
            str(row.vcpus), row.vcpus_source,
            str(row.ram_mib), row.ram_source,
            str(row.preempt), row.preempt_source,
            row.instance_type or "-",
            scatter_text(row),
        )
    console.print(table)
    if wf.assumptions:
        console.print("Assumptions:", style="bold")
        for sentence in wf.assumptions:
            console.print(f"  - {sentence}", markup=False, highlight=False, soft_wrap=True)
