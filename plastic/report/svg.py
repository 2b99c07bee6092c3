"""The two drawings of a run's HTML picture, as inline SVG text (pure): the timeline and the cost.

Both share the horizontal scale (`Scale`: seconds since the run's start, left margin for the lane
labels), so the cost chart lines up under the timeline.  Every string from the run's records goes
through `esc` (workflow, tool and agent names come from users' files and clusters).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from plastic.core.account.picture import AttemptSpan, Lane, Mark, RunPicture
from plastic.core.book.records import AgentGone, JobRequeued, KilledForNotice, RebalanceNoticed, TerminateNoticed
from plastic.core.elastic.model import (
    CreationRefused,
    GrowthStopped,
    NodeInterrupted,
    NodeReleased,
    NodesRequested,
    NodesStarted,
)

WIDTH = 1160
LABEL_W = 190
RIGHT_PAD = 24
BAR_H = 13
BAR_GAP = 3
LANE_PAD = 7
LANE_MIN_H = 34
AXIS_H = 30
STRIP_H = 24

CLUSTER_MARKS = (NodesRequested, CreationRefused, GrowthStopped)  # on the cluster's strip, not an agent's lane
OUTCOME_TEXT = {"finished": "finished", "failed": "failed", "preempted": "preempted", "lost": "lost with its agent",
                "killed": "killed", "running": "still running at the end"}


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def fmt_s(seconds: float) -> str:
    """A duration for people: 23.6 s, 12 min 5 s, 3 h 12 min."""
    if seconds < 120:
        return f"{seconds:.1f} s" if seconds < 60 else f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def fmt_usd(usd: float) -> str:
    if usd == 0:
        return "$0"
    if usd >= 100:
        return f"${usd:,.0f}"
    if usd >= 1:
        return f"${usd:,.2f}"
    if usd >= 0.01:
        return f"${usd:.4f}"
    return f"${usd:.6f}"


def short_agent(agent_id: str) -> str:
    """A Mesos agent id's distinctive end (``...-S2`` -> S2); a short id as it is."""
    return agent_id.rsplit("-", 1)[-1] if len(agent_id) > 16 and "-" in agent_id else agent_id


@dataclass(frozen=True, slots=True)
class Scale:
    t0: float
    t1: float

    @property
    def plot_w(self) -> float:
        return WIDTH - LABEL_W - RIGHT_PAD

    def x(self, t: float) -> float:
        span = max(self.t1 - self.t0, 1e-9)
        return LABEL_W + min(max((t - self.t0) / span, 0.0), 1.0) * self.plot_w

    def ticks(self) -> list[float]:
        """Offsets (s) from t0 at a round step, about eight of them."""
        span = max(self.t1 - self.t0, 1e-9)
        step = _nice_step(span / 8, (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400,
                                     21600, 43200, 86400))
        return [i * step for i in range(int(span / step + 1e-9) + 1)]


def _nice_step(raw: float, steps: Sequence[float]) -> float:
    for s in steps:
        if s >= raw:
            return float(s)
    return float(steps[-1]) * math.ceil(raw / steps[-1])


def _tick_label(offset_s: float) -> str:
    if offset_s >= 3600 and offset_s % 3600 == 0:
        return f"{offset_s / 3600:g} h"
    if offset_s >= 120:
        return f"{offset_s / 60:g} min"
    return f"{offset_s:g} s"


def _rows(attempts: Sequence[AttemptSpan], end_at: float) -> list[int]:
    """A row of the lane for each attempt (in the given order): no two overlap in one row."""
    ends: list[float] = []
    out = [0] * len(attempts)
    for i in sorted(range(len(attempts)), key=lambda i: (attempts[i].start_at, attempts[i].task)):
        a = attempts[i]
        stop = a.end_at if a.end_at is not None else end_at
        for row, busy_until in enumerate(ends):
            if busy_until <= a.start_at:
                ends[row], out[i] = stop, row
                break
        else:
            out[i] = len(ends)
            ends.append(stop)
    return out


def _attempt_title(a: AttemptSpan, t0: float) -> str:
    what = OUTCOME_TEXT.get(a.outcome, a.outcome)
    if a.killed_at_notice:
        what += " (killed at a terminate notice)"
    tool = f"{a.tool}" + (f" (step {a.step})" if a.step else "") if a.tool else "?"
    end = a.end_at if a.end_at is not None else a.start_at
    return (f"task {a.task}: job {a.job_id}, {tool}, attempt {a.number}\n{a.cluster} {short_agent(a.agent_id)}"
            f" ({'spot' if a.preemptible else 'on-demand'})\n+{a.start_at - t0:.1f} s"
            f" to +{end - t0:.1f} s ({a.ran_s:.1f} s): {what}" + (f"\n{a.reason}" if a.reason else ""))


def timeline_svg(pic: RunPicture) -> str:
    """One lane per agent, one rect.attempt per attempt, the marks, a time axis."""
    scale = Scale(pic.started_at, max(pic.ended_at, pic.started_at + 1e-6))
    by_lane: dict[str, list[AttemptSpan]] = {lane.agent_id: [] for lane in pic.lanes}
    for a in pic.attempts:
        by_lane.setdefault(a.agent_id, []).append(a)
    marks_by_lane: dict[str | None, list[Mark]] = {}
    for m in pic.marks:
        key = m.agent_id if m.agent_id in by_lane and not isinstance(m.record, CLUSTER_MARKS) else None
        marks_by_lane.setdefault(key, []).append(m)
    top = 6
    parts: list[str] = []
    cluster_marks = [m for m in marks_by_lane.get(None, []) if isinstance(m.record, CLUSTER_MARKS)]
    if cluster_marks:
        parts.append(f'<text class="lane-label" x="8" y="{top + 15}">elastic cluster</text>')
        for m in cluster_marks:
            parts.append(_mark(m, scale, top, STRIP_H))
        top += STRIP_H + 4
    lanes_top = top
    where: dict[int, float] = {}  # the middle of each attempt's bar (by id)
    for i, lane in enumerate(pic.lanes):
        attempts = by_lane.get(lane.agent_id, [])
        rows = _rows(attempts, pic.ended_at)
        n_rows = max(rows, default=-1) + 1
        h = max(LANE_MIN_H, 2 * LANE_PAD + n_rows * (BAR_H + BAR_GAP) - BAR_GAP)
        parts.append(_lane(lane, i, top, h, scale))
        for a, row in zip(attempts, rows, strict=True):
            y = top + LANE_PAD + row * (BAR_H + BAR_GAP)
            where[id(a)] = y + BAR_H / 2
            parts.append(_attempt(a, scale, y))
        for m in marks_by_lane.get(lane.agent_id, []):
            parts.append(_mark(m, scale, top, h))
        top += h
    if not pic.lanes:
        parts.append(f'<text class="empty" x="{LABEL_W + 12}" y="{top + 22}">no agent joined this run, and no '
                     f'task attempt was placed</text>')
        top += 36
    parts.append(_reruns(pic.attempts, where, scale))
    axis = _axis(scale, lanes_top, top)
    height = top + AXIS_H
    return (f'<svg class="timeline" viewBox="0 0 {WIDTH} {height}" '
            f'width="{WIDTH}" height="{height}" role="img" aria-label="timeline of task attempts per agent">'
            f'{_defs()}{axis}{"".join(parts)}</svg>')


def _reruns(attempts: Sequence[AttemptSpan], where: dict[int, float], scale: Scale) -> str:
    """A dotted line from each attempt that did not finish to the next attempt of the same job."""
    out = []
    last: dict[str, AttemptSpan] = {}
    for a in sorted(attempts, key=lambda a: a.start_at):
        before = last.get(a.job_key)
        last[a.job_key] = a
        if before is None or not a.job_key or id(before) not in where or id(a) not in where:
            continue
        x0 = scale.x(before.end_at if before.end_at is not None else a.start_at)
        out.append(f'<path class="rerun" d="M{x0:.1f},{where[id(before)]:.1f} L{scale.x(a.start_at):.1f},'
                   f'{where[id(a)]:.1f}"><title>{esc(f"task {before.task} ran again as {a.task}")}</title></path>')
    return "".join(out)


def _defs() -> str:
    return ('<defs>'
            '<pattern id="hatch-spot" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><rect width="6" height="6" fill="#f4b183"/>'
            '<line x1="0" y1="0" x2="0" y2="6" stroke="#c0392b" stroke-width="3"/></pattern>'
            '<pattern id="hatch-od" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><rect width="6" height="6" fill="#9dbde0"/>'
            '<line x1="0" y1="0" x2="0" y2="6" stroke="#c0392b" stroke-width="3"/></pattern>'
            '<pattern id="hatch-lost" width="6" height="6" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><rect width="6" height="6" fill="#d0d0d0"/>'
            '<line x1="0" y1="0" x2="0" y2="6" stroke="#666" stroke-width="2"/></pattern>'
            '</defs>')


def _lane(lane: Lane, index: int, top: float, h: float, scale: Scale) -> str:
    market = "spot" if lane.preemptible else "ondemand"
    x0, x1 = scale.x(lane.start_at), scale.x(lane.end_at)
    gone = {"released": "released", "interrupted": "interrupted", "lost": "lost"}.get(lane.gone or "", "")
    title = (f"{lane.cluster} agent {lane.agent_id}\n{lane.instance_type or '?'} "
             f"{'spot' if lane.preemptible else 'on-demand'}, {fmt_usd(lane.usd_per_hour)}/h"
             f"\nin the run from +{lane.start_at - scale.t0:.1f} s to +{lane.end_at - scale.t0:.1f} s"
             + (" (created by the elastic cluster)" if lane.created else "") + (f", then {gone}" if gone else ""))
    stripe = ' class="lane-bg alt"' if index % 2 else ' class="lane-bg"'
    label = esc(f"{lane.cluster} · {short_agent(lane.agent_id)}")
    sub = esc(f"{lane.instance_type or '?'} · {'spot' if lane.preemptible else 'on-demand'}")
    return (f'<g class="lane" data-agent="{esc(lane.agent_id)}" data-market="{market}">'
            f'<rect{stripe} x="0" y="{top:.1f}" width="{WIDTH - RIGHT_PAD}" height="{h:.1f}"/>'
            f'<rect class="life" data-market="{market}" x="{x0:.1f}" y="{top + 2:.1f}" '
            f'width="{max(x1 - x0, 1):.1f}" height="{h - 4:.1f}"><title>{esc(title)}</title></rect>'
            f'<text class="lane-label" x="8" y="{top + h / 2 - 2:.1f}">{label}</text>'
            f'<text class="lane-sub" data-market="{market}" x="8" y="{top + h / 2 + 11:.1f}">{sub}</text></g>')


def _attempt(a: AttemptSpan, scale: Scale, y: float) -> str:
    x0 = scale.x(a.start_at)
    x1 = scale.x(a.end_at if a.end_at is not None else scale.t1)
    w = max(x1 - x0, 2.0)
    market = "spot" if a.preemptible else "ondemand"
    out = (f'<rect class="attempt" data-task="{esc(a.task)}" data-job="{esc(a.job_id)}" data-market="{market}" '
           f'data-outcome="{esc(a.outcome)}" data-notice="{"killed" if a.killed_at_notice else ""}" '
           f'x="{x0:.1f}" y="{y:.1f}" width="{w:.1f}" height="{BAR_H}" rx="2">'
           f'<title>{esc(_attempt_title(a, scale.t0))}</title></rect>')
    if w > 6 * len(a.task) + 8 and a.outcome not in ("preempted", "lost", "killed"):
        out += f'<text class="bar-label" x="{x0 + 4:.1f}" y="{y + BAR_H - 3.5:.1f}">{esc(a.task)}</text>'
    if a.outcome == "preempted":
        cx = x0 + w
        out += (f'<path class="preempt-x" d="M{cx - 4:.1f},{y - 1:.1f} L{cx + 4:.1f},{y + BAR_H + 1:.1f} '
                f'M{cx + 4:.1f},{y - 1:.1f} L{cx - 4:.1f},{y + BAR_H + 1:.1f}"/>')
    return out


def _mark(m: Mark, scale: Scale, top: float, h: float) -> str:
    x = scale.x(m.at)
    title = f"<title>{esc(f'+{m.at - scale.t0:.1f} s: {m.text}')}</title>"
    kind = esc(m.kind)
    mid = top + h / 2
    match m.record:
        case TerminateNoticed() | RebalanceNoticed():
            return (f'<g class="mark" data-kind="{kind}">{title}<line x1="{x:.1f}" y1="{top + 1:.1f}" x2="{x:.1f}" '
                    f'y2="{top + h - 1:.1f}"/><path d="M{x - 5:.1f},{top + 1:.1f} L{x + 5:.1f},{top + 1:.1f} '
                    f'L{x:.1f},{top + 8:.1f} Z"/></g>')
        case JobRequeued():
            return (f'<g class="mark" data-kind="requeue">{title}<circle cx="{x:.1f}" cy="{top + h - 6:.1f}" '
                    f'r="4.5"/><path d="M{x - 2:.1f},{top + h - 6:.1f} L{x + 2.2:.1f},{top + h - 6:.1f} '
                    f'M{x + 0.5:.1f},{top + h - 8:.1f} L{x + 2.2:.1f},{top + h - 6:.1f} L{x + 0.5:.1f},'
                    f'{top + h - 4:.1f}"/></g>')
        case NodesStarted():
            return (f'<g class="mark" data-kind="node_created">{title}<path d="M{x - 10:.1f},{mid - 7:.1f} '
                    f'L{x - 1:.1f},{mid:.1f} L{x - 10:.1f},{mid + 7:.1f} Z"/></g>')  # just before the lane starts
        case NodeReleased():
            return (f'<g class="mark" data-kind="node_released">{title}<rect x="{x - 5:.1f}" y="{mid - 5:.1f}" '
                    f'width="10" height="10"/></g>')
        case NodeInterrupted() | AgentGone():
            return (f'<g class="mark" data-kind="{kind}">{title}<path d="M{x - 5:.1f},{mid - 5:.1f} '
                    f'L{x + 5:.1f},{mid + 5:.1f} M{x + 5:.1f},{mid - 5:.1f} L{x - 5:.1f},{mid + 5:.1f}"/></g>')
        case KilledForNotice():
            return ""  # drawn on the attempt it killed (hatched, with a cross at its end)
    return (f'<g class="mark" data-kind="{kind}">{title}<circle cx="{x:.1f}" cy="{mid:.1f}" r="5"/>'
            f'<text x="{x:.1f}" y="{mid + 3.5:.1f}" text-anchor="middle">'
            f'{"+" if isinstance(m.record, NodesRequested) else "!"}</text></g>')


def _axis(scale: Scale, top: float, bottom: float) -> str:
    out = [f'<line class="axis" x1="{LABEL_W}" y1="{bottom:.1f}" x2="{WIDTH - RIGHT_PAD}" y2="{bottom:.1f}"/>']
    for off in scale.ticks():
        x = scale.x(scale.t0 + off)
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom + 4:.1f}"/>'
                   f'<text class="tick" x="{x:.1f}" y="{bottom + 18:.1f}" text-anchor="middle">'
                   f'{esc(_tick_label(off))}</text>')
    return "".join(out)


def cost_svg(pic: RunPicture) -> str:
    """The run's cumulative cost and the same agent-time all on-demand, on the timeline's time scale."""
    scale = Scale(pic.started_at, max(pic.ended_at, pic.started_at + 1e-6))
    top, plot_h = 16, 190
    bottom = top + plot_h
    peak = max([p.on_demand_usd for p in pic.cost] + [p.usd for p in pic.cost] + [0.0])
    step = _usd_step(peak / 4) if peak > 0 else 1.0
    y_max = step * max(math.ceil(peak / step - 1e-9), 1)

    def y(usd: float) -> float:
        return bottom - usd / y_max * plot_h

    parts = [f'<line class="axis" x1="{LABEL_W}" y1="{bottom}" x2="{WIDTH - RIGHT_PAD}" y2="{bottom}"/>']
    level = 0.0
    while level <= y_max * (1 + 1e-9):
        parts.append(f'<line class="grid" x1="{LABEL_W}" y1="{y(level):.1f}" x2="{WIDTH - RIGHT_PAD}" '
                     f'y2="{y(level):.1f}"/><text class="tick" x="{LABEL_W - 8}" y="{y(level) + 4:.1f}" '
                     f'text-anchor="end">{esc(_axis_usd(level, step))}</text>')
        level += step
    for off in scale.ticks():
        x = scale.x(scale.t0 + off)
        parts.append(f'<text class="tick" x="{x:.1f}" y="{bottom + 18}" text-anchor="middle">'
                     f'{esc(_tick_label(off))}</text>')
    if pic.cost:
        run_pts = " ".join(f"{scale.x(p.at):.1f},{y(p.usd):.1f}" for p in pic.cost)
        od_pts = " ".join(f"{scale.x(p.at):.1f},{y(p.on_demand_usd):.1f}" for p in pic.cost)
        first, last = pic.cost[0], pic.cost[-1]
        parts.append(f'<polygon class="saved" points="{od_pts} '
                     + " ".join(f"{scale.x(p.at):.1f},{y(p.usd):.1f}" for p in reversed(pic.cost)) + '"/>')
        parts.append(f'<polygon class="spent" points="{scale.x(first.at):.1f},{bottom} {run_pts} '
                     f'{scale.x(last.at):.1f},{bottom}"/>')
        parts.append(f'<polyline class="cost-od" points="{od_pts}"><title>all on-demand: '
                     f'{esc(fmt_usd(last.on_demand_usd))}</title></polyline>')
        parts.append(f'<polyline class="cost-run" points="{run_pts}"><title>this run: '
                     f'{esc(fmt_usd(last.usd))}</title></polyline>')
        x_end = scale.x(last.at)
        parts.append(f'<circle class="dot-od" cx="{x_end:.1f}" cy="{y(last.on_demand_usd):.1f}" r="4"/>'
                     f'<circle class="dot-run" cx="{x_end:.1f}" cy="{y(last.usd):.1f}" r="4"/>')
    parts.append(f'<text class="axis-title" x="8" y="{top + 12}">USD, cumulative</text>')
    height = bottom + AXIS_H
    return (f'<svg class="cost" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
            f'height="{height}" role="img" aria-label="cost over time">{"".join(parts)}</svg>')


def _axis_usd(usd: float, step: float) -> str:
    """An axis label: as many decimals as the step needs, the same on every label."""
    if usd == 0:
        return "$0"
    exp = math.floor(math.log10(step))
    digits = max(0, -exp + (0 if abs(step / 10 ** exp - round(step / 10 ** exp)) < 1e-9 else 1))
    return f"${usd:,.{digits}f}"


def _usd_step(raw: float) -> float:
    exp = math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * 10 ** exp >= raw:
            return m * 10 ** exp
    return 10 ** (exp + 1)
