"""The elastic cluster end to end: `plastic run` on its local cluster grows, replaces, releases and
stops at its limits, checked on the outputs, the decisions log, the report and the run's Redis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from plastic.store import Store, start_embedded
from tests.chaos.harness import ChaosRun
from tests.clirun import REPO, assert_replays, read_decisions
from tests.run.helpers import check_outputs, plastic_run

pytest.importorskip("toil")

pytestmark = pytest.mark.toil_e2e

FAST = ("--", "--plasticElasticEverySeconds", "1")  # the controller looks every second (default 5)


def decisions(tmp_path: Path, kind: str) -> list[dict]:
    return [d for d in read_decisions(tmp_path / "run") if d["kind"] == kind]


def redis_states(run_dir: Path) -> tuple[str, set[str]]:
    server = start_embedded(run_dir / "redis")
    try:
        client = server.client()
        store = Store(client)
        run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
        run = store.get_run(run_id)
        states = {str(t.state) for t in store.get_tasks(run_id)}
        client.close()
        return str(run.state), states
    finally:
        server.stop()


def test_a_dynamic_width_scatter_gets_spot_nodes_and_finishes(tmp_path):
    """`plastic plan` assumes width 1 (one core node); the run meets the real width (12) with spot nodes."""
    res = plastic_run(tmp_path, "dynamic-scatter", *FAST)
    check_outputs(res, tmp_path, "dynamic-scatter")
    requested = decisions(tmp_path, "node_requested")
    assert requested and requested[0]["reason"] == "queued_work" and requested[0]["market"] == "spot"
    created = {n for d in decisions(tmp_path, "node_created") for n in d["node_ids"]}
    placed_on_new = [d for d in decisions(tmp_path, "placed") if d["agent_id"] in created]
    assert placed_on_new and all(d["preemptible"] for d in placed_on_new)
    report = json.loads((tmp_path / "report.json").read_text())
    spot = [c for c in report["clusters"] if c["preemptible"]]
    assert spot and max(c["peak_nodes"] for c in spot) >= 1 and report["cost_usd"] < report["on_demand_cost_usd"]
    assert [e["event"] for e in report["node_timeline"]][:1] and any(
        e["event"] == "requested" for e in report["node_timeline"])
    assert report["tasks"] == report["tasks_finished"] == 14  # split, 12 sorts, merge
    run_state, task_states = redis_states(tmp_path / "run")
    assert run_state == "SUCCEEDED" and task_states == {"FINISHED"}
    assert_replays(tmp_path / "run")


def test_interrupted_spot_nodes_are_replaced_and_idle_nodes_released(tmp_path):
    """The plan's four nodes are the most the run may have (--max-nodes 4), so work is queued when the
    three spot ones are interrupted: their replacements are the only way to get it done sooner.  The
    merge (on the reliable node) waits at a gate until an idle spot node has been released: whether one
    is idle long enough before the run ends otherwise depends on how the last tasks fall (a clean-clone
    `make test` once had them all end within the merge's second, and no release before the end)."""
    job = tmp_path / "job.yml"
    gate = tmp_path / "gate"
    job.write_text("items: [" + ", ".join(str(i) for i in range(1, 31)) + f"]\nseconds: 3\ngate: {gate}\n")
    plan = REPO / "tests" / "chaos" / "data" / "square-sum" / "plan.json"
    run = ChaosRun(tmp_path, job, plan, "--idle-seconds", "2", "--max-nodes", "4", "--notice-seconds", "3",
                   "--", "--plasticElasticEverySeconds", "1")
    try:
        run.wait_for("a few finished tasks", lambda: run.finished_count() >= 4)
        run.wait_for("a busy burst agent", run.busy_spot_agent)
        # every live spot agent, whatever cluster it is in: the controller may already have released the
        # plan's idle "burst" nodes (--idle-seconds 2) and bought others (burst-<type>) for the next wave
        spot = [a["id"] for a in run.status()["agents"] if a["preemptible"] and a["status"] == "active"]
        hit = [i for agent in spot for i in run.interrupt(agent_id=agent, notice_seconds=3)]
        run.wait_for("an idle node released while the merge waits",
                     lambda: any(d["kind"] == "node_released" for d in run.decisions()))
        gate.touch()
        res = run.finish()
    finally:
        run.stop()
    res.check_outputs(list(range(1, 31)))
    interrupted = {i["agent_id"] for i in hit}
    lost = [d for d in res.of("node_interrupted") if d["node_id"] in interrupted]
    assert lost, res.of("node_interrupted")
    # the controller counts a spot node as lost from its terminate notice on (the book records the notice
    # before the look that sees the node draining): the first spot node asked for after it is a
    # replacement, whether that look falls in the notice's window or after the node has gone
    first_loss = min(d["t"] for d in res.decisions if d["kind"] in ("notice", "node_interrupted")
                     and d.get("notice_kind", "terminate") == "terminate"
                     and d.get("agent_id", d.get("node_id")) in interrupted)
    after = [d for d in res.of("node_requested") if d["t"] >= first_loss and d["market"] == "spot"]
    assert after and after[0]["reason"] == "replace", res.of("node_requested")
    replacements = {n for d in res.of("node_created") if d["t"] >= after[0]["t"] for n in d["node_ids"]}
    assert any(p["agent_id"] in replacements for p in res.of("placed")), "a replacement took work"
    released = res.of("node_released")
    assert released and min(d["t"] for d in released) < res.report["ended_at"], "an idle node went before the end"
    assert all(r["node_id"] not in {p["agent_id"] for p in res.of("placed") if p["t"] > r["t"]} for r in released)
    for cordon in res.of("node_cordoned"):  # cordoned (idle), a node takes no task until it is uncordoned
        back = [u["t"] for u in res.of("node_uncordoned", node_id=cordon["node_id"]) if u["t"] >= cordon["t"]]
        until = min(back, default=float("inf"))
        assert not [p for p in res.of("placed", agent_id=cordon["node_id"]) if cordon["t"] < p["t"] < until], cordon
    replayed = assert_replays(tmp_path / "run").elastic  # the controller too: every look, every answer
    assert replayed.answers >= len(res.of("node_created")) and replayed.decisions >= len(res.of("node_released"))


def plan_with_split_runtimes(tmp_path: Path, runtime_of) -> Path:
    """`plastic plan` of the scatter-gather example, its twelve splits given runtimes (runtime_of(i))."""
    plan_path = tmp_path / "plan.json"
    made = subprocess.run([sys.executable, "-m", "plastic", "plan", str(REPO / "cwl-examples/scatter-gather/"
                           "scatter-gather.cwl"), str(REPO / "cwl-examples/scatter-gather/job.yml"), "--format",
                           "json", "-o", str(plan_path)], capture_output=True, text=True, check=False)
    assert made.returncode == 0, made.stderr
    plan = json.loads(plan_path.read_text())
    for task in plan["tasks"]:
        if task["id"].startswith("split["):
            task["runtime_s"] = runtime_of(int(task["id"][6:-1]))
    plan_path.write_text(json.dumps(plan))
    return plan_path


def test_a_makespan_allowance_lets_the_controller_size_a_first_wave_of_short_tasks(tmp_path):
    """Splits of 0.5 s, a 4 s boot, --makespan-allowance 0.5: each may start up to 0.5 x 4.5 s later than a
    new node would start it, so several run back to back on one vCPU; the run starts with the plan's
    on-demand node alone and the controller buys what the splits need.  The outputs are right, the
    setting is kept in run.json and the decisions log replays (the forecast's decisions with it)."""
    plan_path = plan_with_split_runtimes(tmp_path, lambda i: 0.5)
    res = plastic_run(tmp_path, "scatter-gather", "--plan", str(plan_path), "--boot-seconds", "4",
                      "--makespan-allowance", "0.5", *FAST)
    check_outputs(res, tmp_path, "scatter-gather")
    assert "starts with 1 of the plan's 5 node(s)" in res.stderr, res.stderr[-3000:]
    assert json.loads((tmp_path / "run" / "run.json").read_text())["makespan_allowance"] == 0.5
    assert_replays(tmp_path / "run")


def test_a_first_wave_whose_runtimes_spread_is_sized_by_the_controller_on_small_nodes(tmp_path):
    """The plan (`plastic plan` of the example) carries the splits' runtimes, half 1 s and half 40 s: a
    16-vCPU node of splits would be paid until its longest ended.  Looking a boot ahead (--boot-seconds),
    the run starts with the plan's on-demand node only and the controller buys the splits' nodes itself,
    2-vCPU ones (plastic.core.elastic.spread); the run's outputs are right and its log replays."""
    plan_path = plan_with_split_runtimes(tmp_path, lambda i: 1.0 if i % 2 else 40.0)
    res = plastic_run(tmp_path, "scatter-gather", "--plan", str(plan_path), "--boot-seconds", "2", *FAST)
    check_outputs(res, tmp_path, "scatter-gather")
    assert "starts with 1 of the plan's 5 node(s)" in res.stderr, res.stderr[-3000:]
    requested = decisions(tmp_path, "node_requested")
    by_spread = [d for d in requested if d["detail"].endswith("a node, by their runtimes' spread")]
    assert by_spread and {d["instance_type"] for d in by_spread} <= {"c5.large", "m5.large"}, requested
    assert sum(d["count"] for d in by_spread) >= 5  # ten splits (two fit the core node), two a node
    assert_replays(tmp_path / "run")


def test_the_whole_run_budget_stops_growth_and_says_so_once(tmp_path):
    res = plastic_run(tmp_path, "dynamic-scatter", "--budget-usd", "0.0005", *FAST)
    check_outputs(res, tmp_path, "dynamic-scatter")  # the core node runs everything
    (stopped,) = decisions(tmp_path, "growth_stopped")
    assert stopped["limit"] == "budget_usd" and stopped["waiting_tasks"] >= 1
    assert not decisions(tmp_path, "node_requested")


def test_a_provider_that_refuses_spot_falls_back_to_on_demand(tmp_path):
    """40 parts keep the one core node busy long enough for the controller to try two spot types
    (both refused) and then go on-demand (policy max_spot_refusals)."""
    job = tmp_path / "job.yml"
    job.write_text(f"text: {{class: File, path: {REPO / 'cwl-examples' / 'dynamic-scatter' / 'input.txt'}}}\n"
                   "parts: 40\n")
    res = plastic_run(tmp_path, "dynamic-scatter", "--refuse-spot", "*", *FAST, job=job)
    check_outputs(res, tmp_path, "dynamic-scatter")
    refused = decisions(tmp_path, "create_refused")
    assert refused and all(r["market"] == "spot" and "InsufficientInstanceCapacity" in r["reason"] for r in refused)
    requested = decisions(tmp_path, "node_requested")
    assert requested[-1]["market"] == "on-demand" and requested[-1]["reason"] == "spot_refused", requested
    assert len({(r["instance_type"], r["market"]) for r in requested if r["market"] == "spot"}) >= 2  # next shape
    created = {n for d in decisions(tmp_path, "node_created") for n in d["node_ids"]}
    assert any(d["agent_id"] in created for d in decisions(tmp_path, "placed")), "the on-demand node took work"


@pytest.mark.parametrize(("args", "names"), [
    (("--idle-seconds", "0"), "--idle-seconds"),
    (("--max-nodes", "0"), "--max-nodes"),
    (("--budget-per-hour", "-1"), "--budget-per-hour"),
    (("--budget-usd", "0"), "--budget-usd"),
    (("--static", "--max-nodes", "3"), "--max-nodes"),
    (("--budget-per-hour", "0.01"), "below one reliable node"),
    (("--makespan-allowance", "1"), "--makespan-allowance"),
    (("--makespan-allowance", "-0.1"), "--makespan-allowance"),
    (("--makespan-allowance", "0.1"), "--makespan-allowance: needs --boot-seconds"),
    (("--static", "--makespan-allowance", "0.1"), "--makespan-allowance"),
])
def test_bad_elastic_options_are_one_line_and_exit_2(tmp_path, args, names):
    wf = REPO / "cwl-examples" / "dynamic-scatter" / "dynamic-scatter.cwl"
    res = subprocess.run([sys.executable, "-m", "plastic", "run", str(wf), str(wf.with_name("job.yml")),
                          "--run-dir", str(tmp_path / "run"), *args], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and names in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "run").exists()
