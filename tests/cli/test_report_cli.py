"""`plastic report RUN [--html FILE]` on a hand-made run directory, as a user types it: the page, the
report as JSON, a run id looked up in Redis, `plastic status` pointing to the picture, and bad input
(one line, exit 2, no file written)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from plastic.core.account.report import build_report
from plastic.core.model import Market, Resources
from plastic.core.planning.plan import Plan, PlannedNode, plan_to_json
from plastic.store import Store
from tests.clirun import assert_one_line_error, plastic
from tests.fakes.stories import CORE, SPOT, preempted_story

# the run's catalog (run.json's catalog_path): c5.large on demand is the cheapest reliable node
CATALOG = {"source": "hand-made", "instance_types": [
    {"name": "c5.large", "vcpus": 2, "ram_mib": 4096, "on_demand_usd_per_hour": 0.085, "spot_usd_per_hour": 0.0349},
    {"name": "m5.large", "vcpus": 2, "ram_mib": 8192, "on_demand_usd_per_hour": 0.096, "spot_usd_per_hour": 0.0326}]}


def make_run_dir(path: Path, *, report: bool = True) -> Path:
    """A run directory as `plastic run` leaves it, from the hand-made story of tests/fakes/stories.py."""
    path.mkdir(parents=True)
    (path / "catalog.json").write_text(json.dumps(CATALOG))
    plan = Plan(tasks=(), nodes=(
        PlannedNode("core-1", "core", "c5.large", Market.ON_DEMAND, 0.085, Resources(2, 4096), (), 0.085),
        PlannedNode("burst-1", "burst", "m5.large", Market.SPOT, 0.0326, Resources(2, 8192), (), 0.096)),
        usd_per_hour=0.1176, on_demand_usd_per_hour=0.181, lower_bound_usd_per_hour=0.1, mode="waves")
    (path / "plan.json").write_text(json.dumps(plan_to_json(plan)))
    events = preempted_story()
    start = 1_700_000_000.0
    lines = [json.dumps({"t": start + e.at, "kind": e.kind, **e.fields}) for e in events]
    lines.insert(3, json.dumps({"t": start + 1, "kind": "event", "now": 1.0, "event": {"type": "Tick"}}))
    (path / "decisions.jsonl").write_text("\n".join(lines) + "\n")
    (path / "run.json").write_text(json.dumps({"run_id": "r-hand", "workflow": "wf.cwl", "master": None,
                                               "started_at": start, "catalog_path": str(path / "catalog.json")}))
    if report:
        shifted = [type(e)(e.kind, start + e.at, e.fields) for e in events]
        rep = build_report(run_id="r-hand", workflow="wf.cwl", outcome="succeeded", started_at=start,
                           ended_at=start + 100, agents=[CORE, SPOT], events=shifted)
        (path / "report.json").write_text(json.dumps(rep.to_json()))
    return path


def bars(html: str) -> list[str]:
    return re.findall(r'<rect class="attempt" data-task="([^"]*)"', html)


def test_html_page_of_a_run_directory(tmp_path):
    run_dir = make_run_dir(tmp_path / "run")
    out = tmp_path / "page.html"
    res = plastic("report", run_dir, "--html", out)
    assert res.returncode == 0, res.stderr
    assert "3 attempt(s) on 2 agent(s)" in res.stderr
    html = out.read_text()
    assert sorted(bars(html)) == ["1.1", "1.2", "2.1"]
    assert "r-hand" in html and "https://" not in html
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".page.html")]  # no temporary file left


def test_json_report_prices_the_agents_as_the_run_did(tmp_path):
    run_dir = make_run_dir(tmp_path / "run")
    res = plastic("report", run_dir, "--format", "json")
    assert res.returncode == 0, res.stderr
    got, saved = json.loads(res.stdout), json.loads((run_dir / "report.json").read_text())
    assert got["schema"] == "plastic.report/v1"
    for key in ("attempts", "preemptions", "tasks", "tasks_finished", "makespan_s"):
        assert got[key] == saved[key], key
    assert got["cost_usd"] == pytest.approx(saved["cost_usd"])
    assert got["on_demand_cost_usd"] == pytest.approx(saved["on_demand_cost_usd"])


def test_the_floor_in_the_table_the_json_and_the_page(tmp_path, redis_server, client):
    """The story's finished tasks: 2 vCPUs x 20 s and 1 vCPU x 15 s, by a makespan of 100 s.  A c5.large
    kept for the longest task (20 s) holds all 55 vCPU-seconds: the floor is 0.085 x 20 / 3600 USD.  The
    run paid the core agent 100 s and the spot agent 50 s (lost then): (8.5 + 1.63) / 3600 USD, 5.96 x."""
    run_dir = make_run_dir(tmp_path / "run")
    run_id = Store(client).create_run(fields={"workflow": "wf.cwl", "run_dir": str(run_dir)})
    res = plastic("report", run_id, "--redis", redis_server.url)  # by its run id: the same run directory
    assert res.returncode == 0, res.stderr
    line = " ".join(res.stdout.split())
    assert ("cost 0.002814 USD, 5.96 x the floor (0.000472 USD: no policy that keeps an on-demand node pays less "
            "for these 2 tasks by this makespan; boot 0 s, critical path 20.0 s from the longest task, "
            "4 node shapes)") in line, res.stdout
    floor = json.loads(plastic("report", run_dir, "--format", "json").stdout)["floor"]
    assert floor["usd"] == pytest.approx(0.085 * 20 / 3600)
    assert floor["cost_over_floor"] == pytest.approx(10.13 / 1.7)
    assert {k: floor[k] for k in ("boot_s", "cap_s", "critical_path_s", "critical_path_from", "tasks", "shapes")} == {
        "boot_s": 0.0, "cap_s": 100.0, "critical_path_s": 20.0, "critical_path_from": "longest task", "tasks": 2,
        "shapes": 4}
    out = tmp_path / "page.html"
    assert plastic("report", run_dir, "--html", out).returncode == 0
    html = out.read_text()
    assert "<b>$0.002814</b><span>this run, 5.96 x the floor ($0.000472)</span>" in html
    assert "The floor: cost 0.002814 USD, 5.96 x the floor (0.000472 USD" in html


def test_table_of_a_run_still_going(tmp_path):
    run_dir = make_run_dir(tmp_path / "run", report=False)
    with open(run_dir / "decisions.jsonl", "a") as fh:
        fh.write('{"t": 1700000060.0, "kind": "pla')  # a line still being written
    res = plastic("report", run_dir)
    assert res.returncode == 0, res.stderr
    assert "plastic run r-hand: running" in res.stdout and "attempts 3" in res.stdout
    assert "has not ended" in res.stdout


def test_table_tells_the_node_timeline(tmp_path):
    """An elastic run's node records: `plastic report RUN` prints when nodes were asked for, came up and
    went, and why, in seconds from the start."""
    run_dir = make_run_dir(tmp_path / "run", report=False)
    start = 1_700_000_000.0
    spot = {"cluster": "burst", "instance_type": "m5.large", "market": "spot"}
    records = [
        {"t": start + 12, "kind": "node_requested", "request": 1, "count": 2, "usd_per_hour": 0.0326,
         "reason": "queued_work", "detail": "3 queued task(s) fit no node", "tasks": ["1", "2"], **spot},
        {"t": start + 12.1, "kind": "node_created", "request": 1, "node_ids": ["s-2", "s-3"]},
        {"t": start + 20, "kind": "node_ready", "node_id": "s-2", "boot_s": 7.9, **spot},
        {"t": start + 20.5, "kind": "node_ready", "node_id": "s-3", "boot_s": 8.4, **spot},
        {"t": start + 80, "kind": "node_cordoned", "node_id": "s-2", "idle_s": 60.0, **spot},
        {"t": start + 85, "kind": "node_uncordoned", "node_id": "s-3", "tasks": 1, **spot},
        {"t": start + 90, "kind": "node_released", "node_id": "s-2", "reason": "idle for 60 s", **spot},
        # ready at 96 s, seen by the controller's look at 100 s: the timeline puts it where it happened
        {"t": start + 100, "kind": "node_ready", "node_id": "s-4", "boot_s": 0.5, "seen_after_s": 4.0, **spot},
        {"t": start + 98, "kind": "node_released", "node_id": "s-3", "reason": "idle for 60 s", **spot},
    ]
    with open(run_dir / "decisions.jsonl", "a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    res = plastic("report", run_dir)
    assert res.returncode == 0, res.stderr
    out = [" ".join(line.split()) for line in res.stdout.splitlines()]
    at = out.index("node timeline (seconds from the start):")
    assert out[at + 1:at + 9] == [
        "12.0 asked for 2 x m5.large spot for burst: queued_work, 3 queued task(s) fit no node",
        "12.1 2 node(s) created",
        "20.0 2 x burst (m5.large spot) ready, boot 8 s",
        "80.0 burst (m5.large spot) cordoned: idle, no new work",
        "85.0 burst (m5.large spot) given back: 1 queued task(s) fit it",
        "90.0 burst (m5.large spot) released: idle for 60 s",
        "96.0 burst (m5.large spot) ready, boot 0 s",
        "98.0 burst (m5.large spot) released: idle for 60 s",
    ]


def test_missing_run_directory(tmp_path):
    out = tmp_path / "page.html"
    res = plastic("report", tmp_path / "nope", "--html", out)
    assert_one_line_error(res, str(tmp_path / "nope"), "no such run directory")
    assert not out.exists()


def test_a_directory_that_is_not_a_run(tmp_path):
    (tmp_path / "empty").mkdir()
    out = tmp_path / "page.html"
    res = plastic("report", tmp_path / "empty", "--html", out)
    assert_one_line_error(res, str(tmp_path / "empty"), "no decisions.jsonl")
    assert not out.exists()
    run_dir = make_run_dir(tmp_path / "noplan")
    (run_dir / "plan.json").unlink()
    assert_one_line_error(plastic("report", run_dir, "--html", out), "no plan.json")
    assert not out.exists()


@pytest.mark.parametrize(("bad_line", "needle"), [
    ('{"t": 5, "kind": "placed", ', "not JSON"),
    ('[1, 2]', "not a decision record"),
    ('{"kind": "placed"}', "not a decision record"),
])
def test_a_corrupt_decisions_line_is_named(tmp_path, bad_line, needle):
    run_dir = make_run_dir(tmp_path / "run")
    lines = (run_dir / "decisions.jsonl").read_text().splitlines()
    lines.insert(4, bad_line)
    (run_dir / "decisions.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "page.html"
    res = plastic("report", run_dir, "--html", out)
    assert_one_line_error(res, str(run_dir / "decisions.jsonl"), "line 5", needle)
    assert not out.exists()


def test_a_corrupt_plan_or_report_is_named(tmp_path):
    run_dir = make_run_dir(tmp_path / "run")
    (run_dir / "report.json").write_text("{not json")
    assert_one_line_error(plastic("report", run_dir), str(run_dir / "report.json"), "not JSON")
    (run_dir / "report.json").unlink()
    (run_dir / "plan.json").write_text('{"schema": "something else"}')
    assert_one_line_error(plastic("report", run_dir), str(run_dir / "plan.json"))


def test_an_output_in_a_missing_directory(tmp_path):
    run_dir = make_run_dir(tmp_path / "run")
    out = tmp_path / "no-such-dir" / "page.html"
    res = plastic("report", run_dir, "--html", out)
    assert_one_line_error(res, str(out), "--html", "directory does not exist")
    assert not out.parent.exists()


def test_a_run_id_known_to_redis_and_status_pointing_to_the_picture(tmp_path, redis_server, client):
    run_dir = make_run_dir(tmp_path / "run")
    store = Store(client)
    run_id = store.create_run(fields={"workflow": "wf.cwl", "run_dir": str(run_dir)})
    status = plastic("status", run_id, "--redis", redis_server.url)
    assert status.returncode == 0, status.stderr
    assert f"picture: plastic report {run_id} --html report.html" in status.stdout
    out = tmp_path / "page.html"
    res = plastic("report", run_id, "--redis", redis_server.url, "--html", out)
    assert res.returncode == 0, res.stderr
    assert sorted(bars(out.read_text())) == ["1.1", "1.2", "2.1"]
    unknown = plastic("report", "r-no-such-run", "--redis", redis_server.url, "--html", out)
    assert_one_line_error(unknown, "no run 'r-no-such-run'")
    queued = store.create_run(fields={"workflow": "wf.cwl"})
    assert "picture:" not in plastic("status", queued, "--redis", redis_server.url).stdout
    assert_one_line_error(plastic("report", queued, "--redis", redis_server.url), "has no run directory")


def test_status_and_logs_of_a_run_directory_read_its_own_redis(tmp_path):
    """`plastic status RUN_DIR` and `plastic logs RUN_DIR`: a `plastic run`'s events are in its own
    embedded Redis (run_dir/redis), stopped when the run ended; read, it is started on its files and
    stopped again; a server still serving the run is read and left running."""
    from plastic.store import start_embedded
    from plastic.store.embedded import _running_server

    run_dir = make_run_dir(tmp_path / "run")
    server = start_embedded(run_dir / "redis")
    store = Store(server.client())
    store.create_run("r-hand", fields={"workflow": "wf.cwl", "run_dir": str(run_dir)})
    store.append_event("r-hand", "placed", {"id": "task-7", "agent_id": "a1", "at": 1_700_000_001.5,
                                            "preemptible": True, "preemptions": 2})
    store.append_event("r-hand", "ended", {"id": "task-7", "outcome": "finished"})
    status = plastic("status", run_dir)  # the run's server is up: found and read, not stopped
    assert status.returncode == 0, status.stderr
    assert "run r-hand: SUBMITTED" in status.stdout and "last 3 events" in status.stdout, status.stdout
    assert server.running()
    server.stop()

    logs = plastic("logs", run_dir, "--json")  # stopped: started on its AOF, read, stopped again
    assert logs.returncode == 0, logs.stderr
    events = [json.loads(line) for line in logs.stdout.splitlines()]
    assert [e["type"] for e in events] == ["run_created", "placed", "ended"]
    placed = events[1]
    assert placed["id"] == "task-7" and placed["at"] == 1_700_000_001.5  # the task's id; the time a number
    assert placed["preemptible"] is True and placed["preemptions"] == 2  # a record's fields typed
    assert len({e["event_id"] for e in events}) == 3 and all("-" in e["event_id"] for e in events)
    assert _running_server((run_dir / "redis").resolve(), 1.0) is None  # nothing left running
    text = plastic("logs", run_dir)
    assert text.returncode == 0 and "placed id=task-7 agent_id=a1" in text.stdout, text.stdout
    as_json = json.loads(plastic("status", run_dir, "--format", "json").stdout)
    assert as_json["id"] == "r-hand" and as_json["state"] == "SUBMITTED"


def test_status_and_logs_of_a_directory_that_is_not_a_run(tmp_path):
    (tmp_path / "empty").mkdir()
    for command in ("status", "logs"):
        assert_one_line_error(plastic(command, tmp_path / "empty"), str(tmp_path / "empty"), "has no run.json")
        assert_one_line_error(plastic(command, tmp_path / "nope"), str(tmp_path / "nope"), "no such run directory")
    assert not (tmp_path / "empty" / "redis").exists()  # nothing written there
    saved = make_run_dir(tmp_path / "saved")  # a run given a Redis with a password: run.json keeps it redacted
    doc = json.loads((saved / "run.json").read_text())
    (saved / "run.json").write_text(json.dumps({**doc, "redis_url": "redis://:****@db.example:6379/0"}))
    assert_one_line_error(plastic("logs", saved, env={"PLASTIC_REDIS_URL": ""}), "needs its password: give --redis URL")
    no_redis = make_run_dir(tmp_path / "noredis")
    assert_one_line_error(plastic("status", no_redis), "has no Redis of its own")
    assert not (no_redis / "redis").exists()


def test_a_run_directory_whose_redis_was_kept_without_its_password(tmp_path, redis_server, client):
    """A run given a Redis with a password keeps its URL redacted in run.json: the reader takes --redis,
    else $PLASTIC_REDIS_URL (how `plastic serve` hands its Redis to its runs)."""
    run_id = Store(client).create_run(fields={"workflow": "wf.cwl"})
    run_dir = make_run_dir(tmp_path / "run")
    doc = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**doc, "run_id": run_id, "redis_url": "redis://:****@db:6379/0"}))
    by_env = plastic("status", run_dir, "--format", "json", env={"PLASTIC_REDIS_URL": redis_server.url})
    assert by_env.returncode == 0 and json.loads(by_env.stdout)["id"] == run_id, by_env.stderr
    by_flag = plastic("logs", run_dir, "--redis", redis_server.url, env={"PLASTIC_REDIS_URL": ""})
    assert by_flag.returncode == 0 and "run_created" in by_flag.stdout, by_flag.stderr
