"""A run's picture as one self-contained HTML page (pure: a `RunPicture` in, the page's text out).

Inline CSS and inline SVG only: no script, font, style sheet or image is fetched, and the page's
Content-Security-Policy forbids fetching any.  One tiny inline script counts the timeline's attempt
bars once the page is loaded and writes the count to ``<body data-rendered>``: a browser that shows
it ran the page without a script error.  Every string from the run's records is escaped.
"""

from __future__ import annotations

import time

from plastic.core.account.floor import RunFloor
from plastic.core.account.picture import ClusterRow, RunPicture
from plastic.core.elastic.model import NodeInterrupted, NodeReleased, NodesStarted
from plastic.report.svg import (
    OUTCOME_TEXT,
    cost_svg,
    esc,
    fmt_s,
    fmt_usd,
    short_agent,
    timeline_svg,
)

CSS = """
:root { --od: #2f6fb3; --spot: #e8833a; --ink: #1f2933; --muted: #5f6b7a; --line: #d9dee5; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 28px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto,
       "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: #f6f7f9; }
main { width: 1180px; margin: 0 auto; }
h1 { font-size: 22px; margin: 0 0 2px; font-weight: 650; }
h1 code { font-size: 20px; }
h2 { font-size: 16px; margin: 0 0 8px; font-weight: 650; }
.sub { color: var(--muted); margin: 0 0 12px; }
.wf { word-break: break-all; }
.outcome { display: inline-block; padding: 1px 10px; border-radius: 12px; font-size: 13px; vertical-align: 3px;
           color: #fff; background: #718096; }
.outcome.succeeded { background: #2f855a; } .outcome.failed { background: #c53030; }
.outcome.running { background: #b7791f; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 10px 12px;
          margin: 0 0 16px; }
section > h2, section > p, section > .legend { margin-left: 8px; margin-right: 8px; }
.figures { display: flex; flex-wrap: wrap; gap: 10px; background: none; border: none; padding: 0; }
.figure { flex: 1 1 0; min-width: 0; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; }
.figure b { display: block; font-size: 20px; font-weight: 650; white-space: nowrap; }
.figure span { color: var(--muted); font-size: 12px; }
.figure.good b { color: #2f855a; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12.5px; color: var(--muted); margin-bottom: 6px; }
.legend svg { vertical-align: -3px; margin-right: 4px; }
svg text { font-family: inherit; }
.lane-bg { fill: #fff; } .lane-bg.alt { fill: #f7f8fa; }
.life[data-market=ondemand] { fill: #e3edf9; } .life[data-market=spot] { fill: #fdeedf; }
.lane-label { font-size: 12.5px; font-weight: 600; fill: var(--ink); }
.lane-sub { font-size: 11px; fill: var(--muted); }
.lane-sub[data-market=spot] { fill: #b4561a; } .lane-sub[data-market=ondemand] { fill: #245a94; }
rect.attempt { stroke: #fff; stroke-width: 0.8; }
rect.attempt[data-market=ondemand] { fill: var(--od); } rect.attempt[data-market=spot] { fill: var(--spot); }
rect.attempt[data-outcome=preempted][data-market=spot] { fill: url(#hatch-spot); stroke: #c0392b; stroke-width: 1.2; }
rect.attempt[data-outcome=preempted][data-market=ondemand] { fill: url(#hatch-od); stroke: #c0392b; stroke-width: 1.2; }
rect.attempt[data-outcome=failed] { fill: #c53030; }
rect.attempt[data-outcome=lost], rect.attempt[data-outcome=killed] { fill: url(#hatch-lost); stroke: #666; }
rect.attempt[data-outcome=running] { fill-opacity: 0.45; stroke: var(--ink); stroke-dasharray: 3 2; }
.bar-label { font-size: 9.5px; fill: #fff; pointer-events: none; }
.preempt-x { stroke: #c0392b; stroke-width: 2.2; fill: none; }
.rerun { stroke: #6b46c1; stroke-width: 1.6; stroke-dasharray: 2 3; fill: none; }
.mark[data-kind=notice] line { stroke: #c0392b; stroke-width: 1.6; }
.mark[data-kind=notice] path { fill: #c0392b; }
.mark[data-kind=rebalance] line { stroke: #b7791f; stroke-width: 1.4; stroke-dasharray: 4 3; }
.mark[data-kind=rebalance] path { fill: #b7791f; }
.mark[data-kind=requeue] circle { fill: #6b46c1; stroke: #fff; stroke-width: 1; }
.mark[data-kind=requeue] path { stroke: #fff; stroke-width: 1.2; fill: none; }
.mark[data-kind=node_created] path { fill: #2f855a; }
.mark[data-kind=node_released] rect { fill: #718096; }
.mark[data-kind=node_interrupted] path, .mark[data-kind=agent_lost] path { stroke: #1a202c; stroke-width: 2.4; }
.mark[data-kind=node_requested] circle { fill: #2f855a; } .mark[data-kind=create_refused] circle,
.mark[data-kind=growth_stopped] circle { fill: #c53030; }
.mark text { font-size: 10px; font-weight: 700; fill: #fff; }
.axis { stroke: #8a94a3; stroke-width: 1; } .grid { stroke: #e6e9ee; stroke-width: 1; }
.tick { font-size: 11px; fill: var(--muted); } .axis-title { font-size: 12px; fill: var(--muted); }
.empty { font-size: 13px; fill: var(--muted); }
.cost-run { fill: none; stroke: #2f855a; stroke-width: 2.5; }
.cost-od { fill: none; stroke: #9b2c2c; stroke-width: 2; stroke-dasharray: 6 4; }
.spent { fill: #2f855a; fill-opacity: 0.10; } .saved { fill: #9b2c2c; fill-opacity: 0.06; }
.dot-run { fill: #2f855a; } .dot-od { fill: #9b2c2c; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 4px 8px; border-bottom: 1px solid #edf0f3; text-align: right; white-space: nowrap; }
th { color: var(--muted); font-weight: 600; font-size: 12px; }
th.l, td.l { text-align: left; }
tr.total td { font-weight: 650; border-top: 1px solid var(--line); }
th.group { text-align: center; border-bottom: 2px solid var(--line); }
.m-spot { color: #b4561a; } .m-od { color: #245a94; }
details summary { cursor: pointer; font-weight: 650; font-size: 15px; margin: 0 8px 6px; }
.attempts td { font-size: 12px; }
ul.notes { margin: 0; padding-left: 28px; color: var(--muted); }
footer { color: var(--muted); font-size: 12px; text-align: center; }
"""

SCRIPT = ("document.addEventListener('DOMContentLoaded',function(){"
          "document.body.dataset.rendered=String(document.querySelectorAll('svg.timeline rect.attempt').length);});")

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def render_html(pic: RunPicture) -> str:
    """The page of ``pic`` (see the module docstring)."""
    r = pic.report
    outcome = "running" if pic.running else r.outcome
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(r.started_at))
    head = (f'<header><h1>plastic run <code>{esc(r.run_id)}</code> '
            f'<span class="outcome {esc(outcome)}">{esc(outcome)}</span></h1>'
            f'<p class="sub wf">{esc(r.workflow)} · started {esc(started)}'
            + (" · still running: the picture stops at its last event" if pic.running else "") + '</p></header>')
    body = "".join((head, _figures(pic), _timeline_section(pic), _cost_section(pic), _plan_section(pic),
                    _usage_section(pic), _attempts_section(pic), _notes(pic)))
    return ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>plastic run {esc(r.run_id)}</title><style>{CSS}</style></head>\n'
            f'<body data-rendered=""><main>{body}<footer>made by <code>plastic report</code> from the run\'s '
            f'decisions log, plan and report</footer></main><script>{SCRIPT}</script></body></html>\n')


def _figure(value: str, label: str, cls: str = "") -> str:
    return f'<div class="figure{" " + cls if cls else ""}"><b>{esc(value)}</b><span>{esc(label)}</span></div>'


def _figures(pic: RunPicture) -> str:
    r = pic.report
    cards = [
        _figure(fmt_s(r.makespan_s), "makespan"),
        _figure(str(r.tasks), f"tasks, {r.tasks_failed} failed"),
        _figure(str(r.attempts), "attempts"),
        _figure(str(r.preemptions), f"preempted ({r.notices} notices)"),
        _figure(fmt_usd(r.cost_usd), "this run" + _over_floor(r.floor)),
        _figure(fmt_usd(r.on_demand_cost_usd), "all on-demand"),
        _figure(f"{r.savings:.1%}" if r.on_demand_cost_usd > 0 else "-", "saved", "good" if r.savings > 0 else ""),
    ]
    if pic.plan_usd_per_hour is not None:
        cards.append(_figure(f"{fmt_usd(pic.plan_usd_per_hour)}/h", "the plan"))
    return f'<section class="figures">{"".join(cards)}</section>'


def _over_floor(floor: RunFloor | None) -> str:
    """How far the run was from its floor, after "this run" (nothing when there is no floor)."""
    if floor is None:
        return ""
    ratio = f"{floor.cost_over_floor:.2f} x" if floor.cost_over_floor is not None else "over"
    return f", {ratio} the floor ({fmt_usd(floor.usd)})"


def _swatch(inner: str) -> str:
    return f'<svg width="22" height="14" viewBox="0 0 22 14" aria-hidden="true">{inner}</svg>'


def _legend() -> str:
    items = [
        (_swatch('<rect class="swatch" x="1" y="2" width="20" height="10" rx="2" fill="#2f6fb3"/>'),
         "attempt on on-demand"),
        (_swatch('<rect class="swatch" x="1" y="2" width="20" height="10" rx="2" fill="#e8833a"/>'), "attempt on spot"),
        (_swatch('<rect class="swatch" x="1" y="2" width="17" height="10" rx="2" fill="url(#hatch-spot)" '
                 'stroke="#c0392b"/><path d="M14,0 L22,14 M22,0 L14,14" stroke="#c0392b" stroke-width="2"/>'),
         "preempted"),
        (_swatch('<rect class="swatch" x="1" y="2" width="20" height="10" rx="2" fill="#c53030"/>'), "failed"),
        (_swatch('<rect class="swatch" x="1" y="2" width="20" height="10" rx="2" fill="url(#hatch-lost)" '
                 'stroke="#666"/>'), "lost / killed"),
        (_swatch('<rect class="swatch" x="1" y="2" width="20" height="10" rx="2" fill="#e8833a" fill-opacity=".45" '
                 'stroke="#1f2933" stroke-dasharray="3 2"/>'), "still running"),
        (_swatch('<line x1="11" y1="1" x2="11" y2="14" stroke="#c0392b" stroke-width="1.6"/>'
                 '<path d="M6,1 L16,1 L11,8 Z" fill="#c0392b"/>'), "terminate notice"),
        (_swatch('<circle cx="11" cy="7" r="5" fill="#6b46c1"/>'), "requeue"),
        (_swatch('<path d="M1,3 L21,11" stroke="#6b46c1" stroke-width="1.6" stroke-dasharray="2 3"/>'),
         "ran again"),
        (_swatch('<path d="M7,0 L16,7 L7,14 Z" fill="#2f855a"/>'), "node created"),
        (_swatch('<rect x="6" y="2" width="10" height="10" fill="#718096"/>'), "node released"),
        (_swatch('<path d="M6,2 L16,12 M16,2 L6,12" stroke="#1a202c" stroke-width="2.4"/>'),
         "node interrupted / agent lost"),
    ]
    return '<div class="legend">' + "".join(f"<span>{s}{esc(t)}</span>" for s, t in items) + "</div>"


def _timeline_section(pic: RunPicture) -> str:
    r = pic.report
    spot = sum(1 for lane in pic.lanes if lane.preemptible)
    text = (f"{len(pic.attempts)} attempt(s) of {r.tasks} task(s) on {len(pic.lanes)} agent(s) "
            f"({len(pic.lanes) - spot} on-demand, {spot} spot); hover a bar or a mark for details.")
    if pic.elastic:
        said = [f"{n} node(s) {what}" for n, what in (
            (sum(1 for m in pic.marks if isinstance(m.record, cls)), what)
            for cls, what in ((NodesStarted, "created"), (NodeReleased, "released"), (NodeInterrupted, "interrupted")))
            if n]
        text += f" The cluster was elastic: {', '.join(said)} during the run."
    return (f'<section><h2>Task attempts per agent</h2><p class="sub">{esc(text)}</p>{_legend()}'
            f'{timeline_svg(pic)}</section>')


def _cost_section(pic: RunPicture) -> str:
    r = pic.report
    legend = ('<div class="legend"><span>' + _swatch('<line x1="1" y1="7" x2="21" y2="7" stroke="#2f855a" '
                                                      'stroke-width="2.5"/>')
              + f"this run: {esc(fmt_usd(r.cost_usd))}</span><span>"
              + _swatch('<line x1="1" y1="7" x2="21" y2="7" stroke="#9b2c2c" stroke-width="2" '
                        'stroke-dasharray="6 4"/>')
              + f"the same agent-time all on-demand: {esc(fmt_usd(r.on_demand_cost_usd))}</span></div>")
    floor = (f'<p class="sub floor">The floor: {esc(r.floor.sentence(r.cost_usd))}.</p>'
             if r.floor is not None else "")
    return (f'<section><h2>Cost over time</h2><p class="sub">Each agent is paid for from the moment it joins the '
            f'run (or is created) until it is lost, released or the run ends; spot agents at the spot price.</p>'
            f'{floor}{legend}{cost_svg(pic)}</section>')


def _plan_section(pic: RunPicture) -> str:
    head = ('<tr><th class="l" rowspan="2">cluster</th><th class="l" rowspan="2">market</th>'
            '<th class="group" colspan="3">planned</th><th class="group" colspan="7">ran</th></tr>'
            '<tr><th class="l">type</th><th>nodes</th><th>USD/h</th><th class="l">type</th><th>agents (peak)</th>'
            '<th>agent-h</th><th>placed</th><th>finished</th><th>USD</th><th>USD on-demand</th></tr>')
    rows = "".join(_cluster_tr(c) for c in pic.clusters)
    r = pic.report
    total = (f'<tr class="total"><td class="l">total</td><td></td><td></td>'
             f'<td>{sum(c.planned_nodes for c in pic.clusters)}</td>'
             f'<td>{esc(fmt_usd(sum(c.planned_usd_per_hour for c in pic.clusters)))}</td><td></td>'
             f'<td>{sum(c.ran_agents for c in pic.clusters)}</td>'
             f'<td>{sum(c.agent_hours for c in pic.clusters):.4f}</td><td>{r.attempts}</td>'
             f'<td>{r.tasks_finished}</td><td>{esc(fmt_usd(r.cost_usd))}</td>'
             f'<td>{esc(fmt_usd(r.on_demand_cost_usd))}</td></tr>')
    note = ""
    if pic.plan_usd_per_hour is not None:
        planned = pic.plan_usd_per_hour * r.makespan_s / 3600
        note = (f'<p class="sub">The plan\'s nodes, all up for the whole makespan ({esc(fmt_s(r.makespan_s))}), '
                f'would have cost {esc(fmt_usd(planned))} at {esc(fmt_usd(pic.plan_usd_per_hour))}/h; the run '
                f'cost {esc(fmt_usd(r.cost_usd))}.</p>')
    return f'<section><h2>The plan beside what ran</h2><table>{head}{rows}{total}</table>{note}</section>'


def _cluster_tr(c: ClusterRow) -> str:
    market = '<td class="l m-spot">spot</td>' if c.preemptible else '<td class="l m-od">on-demand</td>'
    return (f'<tr><td class="l">{esc(c.name)}</td>{market}<td class="l">{esc(c.planned_type or "-")}</td>'
            f'<td>{c.planned_nodes}</td><td>{esc(fmt_usd(c.planned_usd_per_hour)) if c.planned_nodes else "-"}</td>'
            f'<td class="l">{esc(c.ran_type or "-")}</td><td>{c.ran_agents} ({c.ran_peak})</td>'
            f'<td>{c.agent_hours:.4f}</td><td>{c.placements}</td><td>{c.finished}</td>'
            f'<td>{esc(fmt_usd(c.cost_usd))}</td><td>{esc(fmt_usd(c.on_demand_cost_usd))}</td></tr>')


def _usage_section(pic: RunPicture) -> str:
    """Per step, what its annotation asked for against what its tasks used (plastic's executor)."""
    steps = pic.report.steps
    if not steps:
        return ""
    head = ('<tr><th class="l">step</th><th>tasks</th><th>vcpus</th><th>cores used (median / max)</th>'
            '<th>vram MiB</th><th>peak RSS MiB (median / max)</th><th class="l">would fit</th><th>USD saved</th></tr>')
    rows = "".join(
        f'<tr><td class="l">{esc(s.step)}</td><td>{s.tasks_measured}</td><td>{s.vcpus_asked}</td>'
        f'<td>{s.cores_used_median:.2f} / {s.cores_used_max:.2f}</td><td>{s.ram_mib_asked}</td>'
        f'<td>{s.rss_mib_median:.0f} / {s.rss_mib_max:.0f}</td>'
        f'<td class="l">{s.vcpus_fit} vcpus, {s.ram_mib_fit} MiB</td>'
        f'<td>{esc(fmt_usd(s.usd_saved)) if s.usd_saved else "-"}</td></tr>' for s in steps)
    findings = "".join(f"<li><b>{esc(s.step)}</b>: {esc(s.finding)}</li>" for s in steps if s.finding)
    return (f'<section><h2>Asked for against used, per step</h2><table>{head}{rows}</table>'
            + (f'<ul class="notes">{findings}</ul>' if findings else "") + '</section>')


def _attempts_section(pic: RunPicture) -> str:
    t0 = pic.started_at
    head = ('<tr><th class="l">task</th><th class="l">job</th><th class="l">tool (step)</th><th class="l">agent</th>'
            '<th class="l">market</th><th>start</th><th>end</th><th>ran</th><th class="l">how it ended</th></tr>')
    rows = []
    for a in sorted(pic.attempts, key=lambda a: (a.start_at, a.task)):
        tool = (a.tool or "?") + (f" ({a.step})" if a.step else "")
        end = "-" if a.end_at is None else f"+{a.end_at - t0:.1f} s"
        how = OUTCOME_TEXT.get(a.outcome, a.outcome) + (" at a notice" if a.killed_at_notice else "")
        rows.append(f'<tr><td class="l">{esc(a.task)}</td><td class="l">{esc(a.job_id)}</td>'
                    f'<td class="l">{esc(tool)}</td><td class="l">{esc(a.cluster)} {esc(short_agent(a.agent_id))}</td>'
                    f'<td class="l">{"spot" if a.preemptible else "on-demand"}</td><td>+{a.start_at - t0:.1f} s</td>'
                    f'<td>{esc(end)}</td><td>{a.ran_s:.1f} s</td><td class="l">{esc(how)}</td></tr>')
    return (f'<section><details><summary>Every attempt ({len(pic.attempts)})</summary>'
            f'<table class="attempts">{head}{"".join(rows)}</table></details></section>')


def _notes(pic: RunPicture) -> str:
    if not pic.report.notes:
        return ""
    items = "".join(f"<li>{esc(n)}</li>" for n in pic.report.notes)
    return f'<section><h2>Notes</h2><ul class="notes">{items}</ul></section>'
