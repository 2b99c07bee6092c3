"""How `plastic run` and `plastic report` look on a terminal (rich): the live progress panel, the final
report with the elastic cluster's node timeline and what each step used, and a failed run told as the
error it ends with."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from plastic.core.account.progress import Progress
from plastic.core.account.report import NodeMoment, RunReport
from plastic.core.book.records import Record
from plastic.core.elastic.model import (
    CreationRefused,
    GrowthStopped,
    NodeCordoned,
    NodeInterrupted,
    NodeReady,
    NodeReleased,
    NodesRequested,
    NodesStarted,
    NodeUncordoned,
)
from plastic.core.errors import PlasticError, RunFailedError
from plastic.cwl.lower_io import POLICY_NAME
from plastic.run.disk import OutOfSpaceError
from plastic.run.request import Display, RunResult
from plastic.run.toil_log import LoggedFailure, read_failure

PLAIN_EVERY_S = 5.0


def progress_table(progress: Progress, total_hint: int, elapsed_s: float) -> Group:
    table = Table(title=None, expand=False, pad_edge=False)
    for name, justify in (("cluster", "left"), ("nodes", "right"), ("booting", "right"), ("running", "right"),
                          ("finished", "right"), ("failed", "right")):
        table.add_column(name, justify=justify)
    for name, c in sorted(progress.clusters.items()):
        table.add_row(name, str(c.nodes), str(c.booting) if c.booting else "-", str(c.running), str(c.finished),
                      str(c.failed))
    head = Text(f"{elapsed_s:6.1f} s  queued {len(progress.queued)}  running {progress.running}  "
                f"finished {progress.finished}  failed {progress.failed}  requeues {progress.requeues}  "
                f"notices {progress.notices}  (plan: {total_hint} tasks)")
    parts: list = [head, table]
    parts.extend(Text(f"  {line}", style="yellow") for line in progress.recent)
    return Group(*parts)


class RichDisplay(Display):
    """A live panel on a terminal; on a pipe, one plain line every few seconds when something changed."""

    def __init__(self, console: Console | None = None, *, quiet: bool = False):
        self.console = console or Console(stderr=True)
        self.quiet = quiet
        self.live: Live | None = None
        self.total = 0
        self.t0 = time.monotonic()
        self.last_plain = ""
        self.last_plain_at = 0.0

    def note(self, text: str) -> None:
        if not self.quiet:
            self.console.print(f"plastic: {text}", highlight=False, soft_wrap=True)

    def start(self, progress: Progress, total_hint: int) -> None:
        self.total = total_hint
        self.t0 = time.monotonic()
        if self.quiet:
            return
        if self.console.is_terminal:
            self.live = Live(progress_table(progress, total_hint, 0.0), console=self.console,
                             refresh_per_second=4, transient=False)
            self.live.start()

    def update(self, progress: Progress) -> None:
        if self.quiet:
            return
        elapsed = time.monotonic() - self.t0
        if self.live is not None:
            self.live.update(progress_table(progress, self.total, elapsed))
            return
        nodes = sum(c.nodes for c in progress.clusters.values())
        booting = sum(c.booting for c in progress.clusters.values())
        line = (f"queued {len(progress.queued)} running {progress.running} finished {progress.finished} "
                f"failed {progress.failed} requeues {progress.requeues} notices {progress.notices} "
                f"nodes {nodes}" + (f" (+{booting} booting)" if booting else ""))
        if line != self.last_plain and time.monotonic() - self.last_plain_at >= PLAIN_EVERY_S:
            self.console.print(f"plastic: {elapsed:.0f} s: {line}", highlight=False)
            self.last_plain, self.last_plain_at = line, time.monotonic()

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def report_table(report: RunReport) -> Group:
    table = Table(title=f"plastic run {report.run_id}: {report.outcome}", expand=False)
    for name, justify in (("cluster", "left"), ("market", "left"), ("type", "left"), ("agents", "right"),
                          ("peak", "right"), ("released", "right"), ("lost", "right"), ("agent-h", "right"),
                          ("placed", "right"), ("done", "right"), ("USD", "right"), ("USD on-demand", "right")):
        table.add_column(name, justify=justify)
    for c in report.clusters:
        table.add_row(c.name, "spot" if c.preemptible else "on-demand", c.instance_type or "-", str(c.agents),
                      str(c.peak_nodes), str(c.nodes_released), str(c.agents_lost), f"{c.agent_hours:.4f}",
                      str(c.placements), str(c.tasks_finished), f"{c.cost_usd:.6f}", f"{c.on_demand_cost_usd:.6f}")
    lines = [
        (f"makespan {report.makespan_s:.1f} s; tasks {report.tasks} (finished {report.tasks_finished}, "
        f"failed {report.tasks_failed}); attempts {report.attempts}"),
        (f"preemptions {report.preemptions}, losses {report.losses}, requeues {report.requeues}, "
        f"escalations {report.escalations}; notices {report.notices} (rebalance {report.rebalances}), "
        f"killed at notice {report.drain_kills}, let finish {report.let_finish} "
        f"(finished in window {report.finished_in_window})"),
        f"estimated cost {report.cost_usd:.6f} USD; all on-demand {report.on_demand_cost_usd:.6f} USD"
        + (f" (saved {report.savings:.1%})" if report.on_demand_cost_usd > 0 else ""),
    ]
    if report.floor is not None:  # how far the run was from what no policy could beat
        lines.append(report.floor.sentence(report.cost_usd))
    timeline = report.node_timeline
    if timeline:
        lines.append(_elastic_line([m.record for m in timeline]))
        lines += timeline_lines(timeline, report.started_at)
    if report.orphans_adopted or report.orphans_killed:
        lines.append(f"resume: the killed run's running tasks adopted {report.orphans_adopted}, "
                     f"killed and run again {report.orphans_killed}")
    return Group(table, *(Text(line) for line in lines), *usage_table(report))


def _elastic_line(records: list[Record]) -> str:
    """The elastic cluster in one line: nodes asked for, obtained, released, lost; refusals and limits."""
    asked = obtained = released = lost = refused = 0
    stopped = ""
    for rec in records:
        match rec:
            case NodesRequested(count=count):
                asked += int(count or 0)
            case NodesStarted(node_ids=node_ids):
                obtained += len(node_ids or ())
            case NodeReleased():
                released += 1
            case NodeInterrupted():
                lost += 1
            case CreationRefused():
                refused += 1
            case GrowthStopped(limit=limit):
                stopped += f"; growth stopped by {limit}"
    return (f"elastic cluster: {asked} node(s) asked for, {obtained} obtained, {released} released when idle, "
            f"{lost} lost, {refused} creation(s) refused{stopped}")


def usage_table(report: RunReport) -> list[Any]:
    """Per step: what its annotation asked for against what its tasks used (none without measurements)."""
    if not report.steps:
        return []
    table = Table(title="asked for against used, per step (plastic's executor measured each task)", expand=False)
    for name in ("step", "tasks", "vcpus", "cores used (median/max)", "vram MiB", "peak RSS MiB (median/max)",
                 "would fit", "USD saved"):
        table.add_column(name, justify="left" if name == "step" else "right")
    for s in report.steps:
        table.add_row(s.step, str(s.tasks_measured), str(s.vcpus_asked),
                      f"{s.cores_used_median:.2f} / {s.cores_used_max:.2f}", str(s.ram_mib_asked),
                      f"{s.rss_mib_median:.0f} / {s.rss_mib_max:.0f}", f"{s.vcpus_fit} vcpus, {s.ram_mib_fit} MiB",
                      f"{s.usd_saved:.6f}" if s.usd_saved else "-")
    return [table, *(Text(f"{s.step}: {s.finding}") for s in report.steps if s.finding)]


TIMELINE_LINES = 15  # the text report's node timeline; --format json and --html have every event


def _node_text(moment: NodeMoment) -> tuple[str, int]:
    """One node record as words, and how many nodes it is about (records alike in the same second add up)."""
    match rec := moment.record:
        case NodesRequested():
            return (f"asked for {rec.count} x {rec.instance_type} {rec.market} for {rec.cluster}: {rec.reason}, "
                    f"{rec.detail}", 0)
        case NodesStarted(node_ids=node_ids):
            return "created", len(node_ids or ())
        case NodeReady(boot_s=boot_s):
            return f"{_where(rec)} ready, boot {float(boot_s or 0.0):.0f} s", 1
        case NodeReleased(reason=reason):
            return f"{_where(rec)} released: {reason}", 1
        case NodeInterrupted(state=state):
            return f"{_where(rec)} {'interrupted' if state == 'interrupted' else 'lost'}", 1
        case NodeCordoned(cluster=cluster):  # records before 2026-11-27 did not say where
            return (f"{_where(rec)} cordoned: idle, no new work" if cluster else "cordoned (idle, no new work)"), 1
        case NodeUncordoned(tasks=tasks):
            return f"{_where(rec)} given back: {tasks} queued task(s) fit it", 1
        case CreationRefused():
            return f"creation of {rec.instance_type} {rec.market} refused: {rec.reason}", 0
        case GrowthStopped():
            return f"growth stopped by {rec.limit}: {rec.detail}", 0
    return moment.event, 0


def _where(rec: NodeReady | NodeReleased | NodeInterrupted | NodeCordoned | NodeUncordoned) -> str:
    return f"{rec.cluster} ({rec.instance_type} {rec.market})"


def timeline_lines(timeline: tuple[NodeMoment, ...], started_at: float, limit: int = TIMELINE_LINES) -> list[str]:
    """The elastic cluster's node timeline, seconds from the start: the same event about several nodes within
    a second is one line ("5 x ..."); at most `limit` lines, then how many more there are."""
    groups: list[list] = []  # [seconds, text, nodes]
    for m in sorted(timeline, key=lambda m: m.at):
        at = m.at - started_at
        text, nodes = _node_text(m)
        last = groups[-1] if groups else None
        if last is not None and nodes and last[1] == text and at - last[0] < 1.0:
            last[2] += nodes
        else:
            groups.append([at, text, nodes])
    out = ["node timeline (seconds from the start):"]
    for at, text, nodes in groups[:limit]:
        if text == "created":
            text = f"{nodes} node(s) created"
        elif nodes > 1:
            text = f"{nodes} x {text}"
        out.append(f"  {at:8.1f}  {text}")
    if len(groups) > limit:
        out.append(f"  ... {len(groups) - limit} more line(s): plastic report RUN --format json (or --html) has them all")
    return out


def _logged_failure(run_dir: Path, log_path: Path) -> LoggedFailure:
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return LoggedFailure()
    try:  # the lowered tool ids -> the steps the user wrote
        tools = json.loads((run_dir / "workflow" / POLICY_NAME).read_text(encoding="utf-8"))["tools"]
        steps = {tool: str(entry["step"]) for tool, entry in tools.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        steps = {}
    return read_failure(lines, steps)


def failure(result: RunResult) -> PlasticError:
    if result.stopped:
        return OutOfSpaceError(result.stopped, source=str(result.run_dir))
    if result.report.outcome == "cancelled":  # Toil's last words then are only that it stopped
        return RunFailedError(f"run {result.run_id} cancelled; its files are in {result.run_dir}",
                              run_id=result.run_id, exit_code=result.exit_code)
    log_path = result.run_dir / "toil.log"
    detail = _logged_failure(result.run_dir, log_path).describe()
    return RunFailedError(f"workflow {result.report.outcome} (run {result.run_id})" + (f": {detail}" if detail else "")
                          + f"; Toil's log: {log_path}", run_id=result.run_id, exit_code=result.exit_code)
