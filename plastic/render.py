"""Turning a plan into text for people (rich tables) or machines (JSON, YAML)."""

from __future__ import annotations

import json
from typing import Any

from plastic.core.planning.plan import Plan, plan_to_json, static_risk


def plan_as_json(plan: Plan) -> str:
    """The plan's JSON, a top-level field a line and a list item (a task, a node, a cluster) a line: as
    readable as an indented dump and written by json's C encoder (an indented dump of 10,000 tasks is
    pure Python and took half the run of `plastic plan --format json`)."""
    doc = plan_to_json(plan)
    lines = []
    for key, value in doc.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            items = ",\n    ".join(json.dumps(v) for v in value)
            lines.append(f"  {json.dumps(key)}: [\n    {items}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def plan_as_yaml(plan: Plan) -> str:
    import yaml

    return yaml.safe_dump(plan_to_json(plan), sort_keys=False, default_flow_style=False)


def plan_as_compose(plan: Plan) -> str:
    """A docker-compose override file that gives the compose cluster the plan's agents, one per
    planned node (`docker compose -f docker-compose.yml -f THIS up`; plastic.compose)."""
    import yaml

    from plastic import compose
    from plastic.local.config import spec_from_plan_doc

    agents = compose.one_per_node(spec_from_plan_doc(plan_to_json(plan), "plan").agents)
    head = ("# plastic plan --format compose: the plan's agents for the compose cluster (plastic.compose).\n"
            "#   docker compose -f docker-compose.yml -f THIS_FILE up -d\n"
            f"# {len(agents)} agent(s); the example's agents are left out (profile {compose.BASE_AGENTS_PROFILE}).\n")
    return head + yaml.safe_dump(compose.override_document(agents), sort_keys=False, default_flow_style=False,
                                 width=120)


def plan_as_table(plan: Plan, *, width: int | None = None) -> str:
    """Clusters, types, counts, $/h, savings against all on-demand, distance to the lower bound."""
    import shutil

    from rich.console import Console

    width = width or max(100, shutil.get_terminal_size((120, 24)).columns)
    from rich.table import Table

    console = Console(width=width, record=True, file=_NullFile(), force_terminal=False, color_system=None)
    table = Table(title=f"plastic plan ({plan.mode}, {len(plan.tasks)} tasks)", title_justify="left")
    for col, just in (("cluster", "left"), ("instance type", "left"), ("market", "left"), ("nodes", "right"),
                      ("vcpus/node", "right"), ("MiB/node", "right"), ("tasks", "right"),
                      ("$/h", "right"), ("interruption", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for c in plan.clusters:
        members = [n for n in plan.nodes if n.cluster == c.name]
        band = members[0].spot_interruption_band or ("-" if c.market.value == "on-demand" else "?")
        table.add_row(c.name, c.instance_type, c.market.value, str(c.count), str(members[0].capacity.vcpus),
                      str(members[0].capacity.ram_mib), str(sum(len(n.task_ids) for n in members)),
                      f"{c.usd_per_hour:.4f}", band)
    console.print(table)
    lines = [
        f"cost:                {plan.usd_per_hour:.4f} $/h",
        f"same nodes on-demand: {plan.on_demand_usd_per_hour:.4f} $/h "
        f"(savings {100 * plan.savings_vs_on_demand:.1f}%)",
        *bound_lines(plan),
    ]
    if plan.budget_usd_per_hour is not None:
        lines.append(f"budget:              {plan.budget_usd_per_hour:.4f} $/h")
    if plan.strategy:
        lines.append(f"strategy:            {plan.strategy}")
    for a in plan.assumptions:
        lines.append(f"assumed: {a}")
    if (risk := static_risk(plan)) is not None:
        lines.append(f"warning: {risk}")
    for line in lines:
        console.print(line, highlight=False, markup=False)
    return console.export_text()


def bound_lines(plan: Plan) -> list[str]:
    """The plan's lower bound, what it is the least cost of and how far above it the plan is; then each
    bound that is not one of this plan's cost (the at-once bound of a budget plan whose tasks queue)."""
    ratio = plan.cost_over_lower_bound
    # to the tenth printed, without the sign of a zero that float noise gives a plan at its bound
    above = "" if ratio is None else f" (plan is {round(100 * (ratio - 1), 1) + 0.0:.1f}% above it)"
    if not plan.bounds:  # a plan document written before the bounds said what they bound
        return [f"lower bound:         {plan.lower_bound_usd_per_hour:.4f} $/h{above}"] if ratio is not None else []
    first, *others = plan.bounds
    lines = [f"lower bound:         {first.usd_per_hour:.4f} $/h to run {first.to_run}{above}"]
    lines += [f"                     {b.usd_per_hour:.4f} $/h to run {b.to_run}: not a bound of this plan, "
              f"whose tasks queue" for b in others if not b.applies]
    return lines


class _NullFile:
    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        pass


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2) + "\n"
