"""The run's picture as an HTML page (plastic.report.html, plastic.report.svg): one bar per attempt,
self-contained, every record string escaped."""

from __future__ import annotations

import re

from plastic.core.account.picture import build_picture
from plastic.core.account.report import AgentSpan, RunEvent
from plastic.report.html import render_html
from plastic.report.svg import Scale, fmt_s, fmt_usd, short_agent
from tests.fakes.stories import CORE, SPOT, preempted_story

HOSTILE = "<script>alert(1)</script>"
BAR = re.compile(r'<rect class="attempt" data-task="([^"]*)"[^>]*data-market="(\w+)" data-outcome="(\w+)"')


def page(events, agents=(CORE, SPOT), workflow="wf.cwl", **kw) -> str:
    pic = build_picture(run_id="r1", workflow=workflow, outcome="succeeded", started_at=0.0, ended_at=100.0,
                        agents=list(agents), events=events, **kw)
    return render_html(pic)


def test_one_bar_per_attempt_coloured_by_market_and_marked_when_preempted():
    html = page(preempted_story())
    bars = BAR.findall(html)
    assert sorted(b[0] for b in bars) == ["1.1", "1.2", "2.1"]
    by_task = {task: (market, outcome) for task, market, outcome in bars}
    assert by_task == {"1.1": ("spot", "preempted"), "1.2": ("ondemand", "finished"), "2.1": ("ondemand", "finished")}
    spot_fill = re.search(r"rect\.attempt\[data-market=spot\] \{ fill: ([^;]+);", html).group(1)
    od_fill = re.search(r"rect\.attempt\[data-market=ondemand\] \{ fill: ([^;]+);", html).group(1)
    assert spot_fill != od_fill
    assert html.count('class="preempt-x"') == 1
    for kind in ("notice", "requeue", "agent_lost"):
        assert html.count(f'<g class="mark" data-kind="{kind}">') == 1, kind
    assert html.count('<g class="lane"') == 2


def test_elastic_nodes_are_marked():
    node = AgentSpan("n-1", "burst-x", True, "m5.large", 0.0326, 0.096)
    events = [ev for ev in preempted_story()] + [
        RunEvent("node_requested", 9, {"cluster": "burst-x", "count": 1, "market": "spot", "reason": "queued"}),
        RunEvent("node_created", 10, {"node_ids": ["n-1"]}),
        RunEvent("node_released", 30, {"node_id": "n-1", "reason": "idle"}),
        RunEvent("node_interrupted", 31, {"node_id": "spot-1"}),
    ]
    html = page(events, agents=(CORE, SPOT, node))
    for kind in ("node_requested", "node_created", "node_released", "node_interrupted"):
        assert f'<g class="mark" data-kind="{kind}">' in html, kind
    assert "elastic cluster" in html


def test_strings_from_the_records_are_escaped():
    events = [
        RunEvent("issued", 1, {"job_id": "1", "tool": HOSTILE, "step": '"><img src=x onerror=alert(2)>'}),
        RunEvent("placed", 2, {"job_id": "1", "task": "1.1", "agent_id": HOSTILE, "cluster": HOSTILE,
                               "preemptible": True, "instance_type": HOSTILE}),
        RunEvent("ended", 9, {"job_id": "1", "outcome": "failed", "message": HOSTILE}),
    ]
    html = page(events, agents=(), workflow=HOSTILE, notes=[HOSTILE])
    assert "alert(1)" in html  # it is there, as text
    assert HOSTILE not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<script") == 1  # the page's own
    assert len(BAR.findall(html)) == 1


def test_the_page_is_self_contained():
    html = page(preempted_story())
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"\b(src|href|xlink:href)\s*=", html)
    assert "@import" not in html and "@font-face" not in html
    assert set(re.findall(r"url\(([^)]*)\)", html)) <= {"#hatch-spot", "#hatch-od", "#hatch-lost"}
    assert "default-src 'none'" in html  # and the browser is told to fetch nothing
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")


def test_a_run_with_no_attempts_renders():
    html = page([], agents=())
    assert not BAR.findall(html)
    assert "no task attempt was placed" in html
    assert "<polyline" in html  # the cost lines, flat at zero


def test_a_still_running_attempt_reaches_the_end_of_the_timeline():
    events = [RunEvent("placed", 50, {"job_id": "1", "task": "1.1", "agent_id": "core-1", "cluster": "core",
                                      "preemptible": False})]
    pic = build_picture(run_id="r1", workflow="wf", outcome="running", started_at=0.0, ended_at=100.0,
                        agents=[CORE], events=events, running=True)
    html = render_html(pic)
    m = re.search(r'<rect class="attempt"[^>]*data-outcome="running"[^>]*x="([\d.]+)"[^>]*width="([\d.]+)"', html)
    scale = Scale(0.0, 100.0)
    assert float(m.group(1)) == round(scale.x(50), 1)
    assert float(m.group(1)) + float(m.group(2)) == round(scale.x(100), 1)
    assert "still running" in html


def test_small_formats():
    assert [fmt_s(s) for s in (3.25, 23.6, 605, 3 * 3600 + 12 * 60)] == ["3.2 s", "23.6 s", "10 min 5 s",
                                                                        "3 h 12 min"]
    assert [fmt_usd(x) for x in (0, 0.0027099, 0.4140, 12.5, 1234)] == ["$0", "$0.002710", "$0.4140", "$12.50",
                                                                         "$1,234"]
    assert short_agent("d70eb463-54ae-4b40-9b8d-9510ab9b6ad6-S2") == "S2" and short_agent("core-1") == "core-1"
    assert Scale(0, 60).ticks() == [0, 10, 20, 30, 40, 50, 60]
