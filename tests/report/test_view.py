"""The text report's node timeline (plastic.report.view.timeline_lines): what a user reads at the end of an
elastic `plastic run` and in `plastic report RUN`."""

from __future__ import annotations

from plastic.core.account.record_codec import decode
from plastic.core.account.report import NodeMoment
from plastic.report.view import timeline_lines

START = 1_700_000_000.0
SPOT = {"cluster": "burst-c5.large", "instance_type": "c5.large", "market": "spot"}


def node(at: float, kind: str, **fields) -> NodeMoment:
    """A record of the elastic controller as a stored line has it (fields it lacks: their defaults)."""
    return NodeMoment(START + at, decode(kind, fields))


def story() -> tuple[NodeMoment, ...]:
    return (
        node(0.2, "node_ready", node_id="a0", cluster="core", instance_type="c5.large", market="on-demand",
             boot_s=0.0),
        node(0.3, "node_requested", count=3, reason="queued_work", detail="6 queued task(s) fit no node", **SPOT),
        node(0.4, "node_created", node_ids=["a1", "a2", "a3"]),
        node(60.1, "node_ready", node_id="a1", boot_s=59.7, **SPOT),
        node(60.4, "node_ready", node_id="a2", boot_s=60.0, **SPOT),
        node(61.9, "node_ready", node_id="a3", boot_s=61.5, **SPOT),
        node(90.0, "node_interrupted", node_id="a1", state="interrupted", **SPOT),
        node(95.0, "node_interrupted", node_id="a2", state="gone", **SPOT),
        node(96.0, "create_refused", instance_type="c5.large", market="spot", reason="InsufficientInstanceCapacity"),
        node(97.0, "growth_stopped", limit="budget_usd", detail="projected 1.2 $"),
        node(150.0, "node_cordoned", node_id="a3", idle_s=60.0, **SPOT),
        node(153.0, "node_uncordoned", node_id="a3", tasks=2, **SPOT),
        node(156.0, "node_cordoned", node_id="a3", idle_s=60.0),  # as written before cordons said where
        node(160.0, "node_released", node_id="a3", reason="idle for 70 s", **SPOT),
    )


def test_the_timeline_tells_what_happened_to_the_nodes_and_why_in_seconds_from_the_start():
    lines = timeline_lines(story(), START)
    assert lines[0] == "node timeline (seconds from the start):"
    body = [ln.split(None, 1) for ln in lines[1:]]
    assert [float(at) for at, _ in body] == [0.2, 0.3, 0.4, 60.1, 61.9, 90.0, 95.0, 96.0, 97.0, 150.0, 153.0, 156.0,
                                                 160.0]
    text = [t for _, t in body]
    assert text[0] == "core (c5.large on-demand) ready, boot 0 s"
    assert text[1] == "asked for 3 x c5.large spot for burst-c5.large: queued_work, 6 queued task(s) fit no node"
    assert text[2] == "3 node(s) created"
    # two nodes ready within a second with the same boot: one line; the third, later, its own
    assert text[3] == "2 x burst-c5.large (c5.large spot) ready, boot 60 s"
    assert text[4] == "burst-c5.large (c5.large spot) ready, boot 62 s"
    assert text[5] == "burst-c5.large (c5.large spot) interrupted"
    assert text[6] == "burst-c5.large (c5.large spot) lost"
    assert text[7] == "creation of c5.large spot refused: InsufficientInstanceCapacity"
    assert text[8] == "growth stopped by budget_usd: projected 1.2 $"
    assert text[9] == "burst-c5.large (c5.large spot) cordoned: idle, no new work"
    assert text[10] == "burst-c5.large (c5.large spot) given back: 2 queued task(s) fit it"
    assert text[11] == "cordoned (idle, no new work)"
    assert text[12] == "burst-c5.large (c5.large spot) released: idle for 70 s"


def test_a_long_timeline_is_cut_and_says_where_the_rest_is():
    events = tuple(node(float(i * 10), "node_released", node_id=f"n{i}", reason="idle", **SPOT) for i in range(40))
    lines = timeline_lines(events, START, limit=15)
    assert len(lines) == 1 + 15 + 1
    assert lines[-1].strip().startswith("... 25 more line(s)") and "--format json" in lines[-1]


def test_events_arrive_in_any_order_and_are_told_in_time_order():
    events = story()
    assert timeline_lines(tuple(reversed(events)), START) == timeline_lines(events, START)


def test_no_events_no_lines_but_the_heading():
    assert timeline_lines((), START) == ["node timeline (seconds from the start):"]
