"""`plastic run` end to end, as a user types it: plan, local cluster, embedded Redis, Toil, outputs, report.

Each run takes about 20-40 s on two cores (Toil's leader and workers dominate).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clirun import REPO, assert_replays
from tests.run.helpers import EXAMPLES, SG, SG_TWO_PARTS, TIMEOUT_S, check_outputs, plastic_run

pytest.importorskip("toil")

pytestmark = pytest.mark.toil_e2e


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """`plastic run` of a bundled example, once per example in this module, with a TMPDIR of its own
    (the machine's temporary directory as the run sees it): (result, its directory, that TMPDIR).  The
    tests that read the same run of the scatter-gather example share it."""
    done: dict[str, tuple] = {}

    def run(example: str) -> tuple:
        if example not in done:
            tmp_path = tmp_path_factory.mktemp(example)
            tmp = tmp_path / "tmp"
            tmp.mkdir()
            done[example] = (plastic_run(tmp_path, example, env={"TMPDIR": str(tmp)}), tmp_path, tmp)
        return done[example]

    return run


@pytest.mark.parametrize("example", ["scatter-gather", "nested-scatter", "dynamic-resources"])
def test_examples_through_plastic_run(example_run, example):
    res, tmp_path, tmp = example_run(example)
    check_outputs(res, tmp_path, example)
    # Toil's leader leaves files in its TMPDIR at every start: the run gives it its own, removed at success
    assert list(tmp.iterdir()) == [] and not (tmp_path / "run" / "toil-tmp").exists()
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["schema"] == "plastic.report/v1" and report["outcome"] == "succeeded"
    assert report["tasks"] >= 1 and report["tasks_failed"] == 0
    assert report["tasks_finished"] == report["tasks"]
    assert report["attempts"] >= report["tasks"]
    assert report["cost_usd"] > 0 and report["on_demand_cost_usd"] >= report["cost_usd"]
    assert {c["name"] for c in report["clusters"]} >= {"core"}
    run_dir = tmp_path / "run"
    for name in ("plan.json", "decisions.jsonl", "toil.log", "outputs.json", "report.json"):
        assert (run_dir / name).is_file(), name
    decisions = [json.loads(line) for line in (run_dir / "decisions.jsonl").read_text().splitlines()]
    placed = [d for d in decisions if d["kind"] == "placed"]
    assert len(placed) == report["attempts"]
    assert_replays(run_dir)
    assert "makespan" in res.stderr and "estimated cost" in res.stderr


def test_a_run_started_in_a_directory_with_a_space_keeps_its_files_in_plastic_home(tmp_path):
    """The default run directory (.plastic/runs/ID here) would put a space in Toil's job commands: the
    run goes under $PLASTIC_HOME/runs instead, says so, and succeeds; the outputs go where asked."""
    here = tmp_path / "my project"
    here.mkdir()
    res = subprocess.run([sys.executable, "-m", "plastic", "run", str(SG / "scatter-gather.cwl"), str(SG_TWO_PARTS),
                          "--outdir", "results"], capture_output=True, text=True, cwd=here, timeout=TIMEOUT_S,
                         env={**{k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"},
                              "PLASTIC_HOME": str(tmp_path / "home")}, check=False)
    outputs = json.loads(res.stdout) if res.returncode == 0 else None
    assert outputs is not None, res.stderr[-3000:]
    (run_dir,) = (tmp_path / "home" / "runs").iterdir()
    assert f"the run's files are in {run_dir}" in res.stderr
    assert not (here / ".plastic").exists() and (run_dir / "outputs.json").is_file()
    expected = json.loads((SG / "expected-output.json").read_text())
    for name, want in expected.items():
        assert outputs[name]["checksum"] == want["checksum"]
        assert (here / "results" / want["basename"]).stat().st_size == want["size"]


def test_a_process_of_a_graph_document_runs_by_its_fragment(tmp_path):
    """`FILE#ID` as cwltool takes it (`plastic run` said "no such file"): the packed nested scatter."""
    packed = REPO / "tests" / "cwl" / "data" / "packed.cwl"
    res = subprocess.run([sys.executable, "-m", "plastic", "run", f"{packed}#main",
                          str(EXAMPLES / "nested-scatter" / "job.yml"), "--outdir", str(tmp_path / "out"),
                          "--run-dir", str(tmp_path / "run"), "--quiet"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=TIMEOUT_S, check=False,
                         env={k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"})
    check_outputs(res, tmp_path, "nested-scatter")


def test_scatter_gather_placement_follows_annotations(example_run):
    """preempt=false steps never land on spot agents; the run's Redis holds every task FINISHED (the same
    run as test_examples_through_plastic_run's)."""
    res, tmp_path, _ = example_run("scatter-gather")
    check_outputs(res, tmp_path, "scatter-gather")
    plan = json.loads((tmp_path / "run" / "plan.json").read_text())
    spot_clusters = {n["cluster"] for n in plan["nodes"] if n["market"] == "spot"}
    decisions = [json.loads(line) for line in (tmp_path / "run" / "decisions.jsonl").read_text().splitlines()]
    agents = {d["agent_id"]: d for d in decisions if d["kind"] == "agent"}
    policy = json.loads((tmp_path / "run" / "workflow" / "policy.json").read_text())["tools"]
    reliable_tools = {key for key, entry in policy.items() if entry["preempt"] in (False, 0)}
    assert reliable_tools, policy
    issued = {str(d["job_id"]): d for d in decisions if d["kind"] == "issued"}
    checked = 0
    for d in decisions:
        if d["kind"] != "placed":
            continue
        tool = issued[str(d["job_id"])].get("tool") or ""
        if tool.rsplit(".", 1)[-1] in reliable_tools:
            assert agents[d["agent_id"]]["cluster"] not in spot_clusters, d
            checked += 1
    assert checked >= 1
    from plastic.store import Store, start_embedded

    server = start_embedded(tmp_path / "run" / "redis")
    try:
        store = Store(server.client())
        runs = store.list_runs()
        assert len(runs) == 1 and str(runs[0].state) == "SUCCEEDED"
        counts = {str(k): v for k, v in store.task_counts(runs[0].id).items() if v}
        assert set(counts) == {"FINISHED"}, counts
    finally:
        server.stop()


def test_a_static_run_warns_of_preemptible_tasks_no_on_demand_node_holds(tmp_path):
    """16-vCPU preempt: 2 tasks and a 2-vCPU core node: --static says once, before the run, that losing
    their spot nodes would fail it (it runs to the end: nothing is lost here)."""
    res = plastic_run(tmp_path, "big-preemptible", "--static", examples=REPO / "tests" / "cli" / "data")
    assert res.returncode == 0, res.stderr[-5000:]
    warned = [ln for ln in res.stderr.splitlines() if "warning:" in ln]
    assert len(warned) == 1 and "2 preemptible task(s) of big fit no on-demand node" in warned[0], res.stderr
    assert len(json.loads(res.stdout)["out"]) == 2


def test_inputs_given_as_flags_among_toil_options(tmp_path):
    """`plastic run WF --INPUT VALUE ...` as cwltool takes it (it said "no such option"), with an option
    of toil-cwl-runner among them: the flags become the run's job order, the option goes to Toil."""
    sg = EXAMPLES / "scatter-gather"
    parts = [w for i in range(1, 13) for w in ("--parts", str(i))]
    env = {k: v for k, v in os.environ.items() if k != "PLASTIC_REDIS_URL"}
    env["PLASTIC_HOME"] = str(tmp_path / "home")
    res = subprocess.run([sys.executable, "-m", "plastic", "run", str(sg / "scatter-gather.cwl"),
                          "--text", str(sg / "input.txt"), "--logLevel", "INFO", *parts,
                          "--outdir", str(tmp_path / "out"), "--run-dir", str(tmp_path / "run"), "--quiet"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=TIMEOUT_S, check=False, env=env)
    check_outputs(res, tmp_path, "scatter-gather")
    job = Path(json.loads((tmp_path / "run" / "run.json").read_text())["job"])
    assert job.parent == tmp_path / "home" / "jobs"
    assert json.loads(job.read_text()) == {"text": {"class": "File", "location": (sg / "input.txt").as_uri()},
                                           "parts": list(range(1, 13))}
    assert "--logLevel INFO" in " ".join(json.loads((tmp_path / "run" / "run.json").read_text())["toil_args"])
    plan = json.loads((tmp_path / "run" / "plan.json").read_text())  # planned with the 12 parts the flags gave
    assert len(plan["tasks"]) >= 12, [t["id"] for t in plan["tasks"]]


def test_logs_follow_a_running_plastic_run_by_its_directory_to_its_end(tmp_path):
    """`plastic logs RUN_DIR -f` on a `plastic run` still going: its own embedded Redis is found and
    followed; when the run ends, `plastic run` stops that server, and the follower ends with exit 0 after
    the run's last transition (it ended in 'internal error: ConnectionError')."""
    from tests.clirun import SlowScatterRun, plastic

    run = SlowScatterRun(tmp_path, seconds=3)
    run.wait_running()
    followed = plastic("logs", run.run_dir, "-f", timeout=200)
    run.finish()
    assert followed.returncode == 0, followed.stderr
    assert followed.stderr == ""
    lines = followed.stdout.splitlines()
    assert "placed" in followed.stdout and lines[-1].split()[1:3] == ["transition", "kind=run"], lines[-3:]
    assert lines[-1].endswith("to=SUCCEEDED")
    after = plastic("logs", run.run_dir)  # the ended run's server, started on its files: the same stream
    assert after.returncode == 0 and after.stdout.splitlines() == lines
