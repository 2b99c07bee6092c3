"""The simulation of a local replay's own world, for bench/elastic.py --local.

`bench/elastic.py --local TRACE` replays a trace through `plastic run` on the local cluster, static and
elastic, and the issue asks that the replay's elastic/static ratio agree with the simulation's.  The
full-scale simulation does not simulate that replay, though: on this machine every task of the replay
runs for its sleep plus the start of a Toil worker, several seconds on two cores (montage's tasks of a
quarter second take six); Toil's leader takes its own time to issue the first tasks; the local cluster's
first agents are up when the run's clock starts, and the report pays agents by the second, from the
run's start or an elastic agent's creation, with no minimum charge; and its interruptions come at one
rate for every spot agent, with the notice scaled to the replay.

`python bench/elastic_twin.py DIR` does it again for the runs `bench/elastic.py --local --local-keep DIR`
kept.  `twin` sets bench/elastic_sim.py's world (bench/sim_world.SimWorld) to what a finished replay measured
and simulates that replay's policies in it:

- each task runs for the wall time of its attempt that finished (its ``ended`` record);
- it is issued as long after its last parent ended (a root: after the run started) as it was in the
  replay (its first ``issued`` record), and the run ends as long after its last task as the replay did;
- the nodes the run starts with are the replay's: the plan's (static) or the elastic cluster's first
  (plastic.core.elastic.first_wave.starting_nodes), capped at --max-agents as the local cluster caps
  them (plastic.core.planning.local_shape), up at the start and paid from it; a node the controller buys
  boots for --boot-seconds; no minimum charge;
- interruptions: the replay's own, node by node in the order the nodes came (the local cluster numbers
  its agents so): a spot node is noticed as long after it was up as the replay's agent of that number
  was (its ``notice`` record: when plastic heard it, and the window left; an agent plastic met before
  Toil issued its first job was up at the start, a later one when plastic met it; a first agent plastic
  never met was lost before it could, and is gone at the start, unpaid), and ends when the window
  does; a task that cannot end a quarter of the local notice before that is stopped, as the JobBook's
  margin does (plastic.core.book.notices).  A node the replay never had is never interrupted;
- the controller is the run's: its max nodes, idle time, boot looked ahead and makespan allowance (its
  run.json), told each task's step as the replay's workflow names it (a step per task) and the plan's
  runtimes as its estimates; it starts when the replay's did (its ``ElasticStarted`` record: with
  Toil's batch system, once the leader is up, a minute into a large run here) and looks first one
  interval later.

Each policy runs with its own replay's measurements and interruptions, so the two simulated runs differ
as the replayed ones did only by what the policy did.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from a checkout

from bench.elastic_sim import SimResult, simulate  # noqa: E402
from bench.sim_world import SimWorld  # noqa: E402
from plastic.catalogs import load_catalog  # noqa: E402
from plastic.core.elastic.first_wave import sized_by_controller, starting_nodes  # noqa: E402
from plastic.core.elastic.model import ElasticPolicy  # noqa: E402
from plastic.core.model import node_shapes  # noqa: E402
from plastic.core.planning.local_shape import local_shape  # noqa: E402
from plastic.core.planning.plan import Plan, plan_from_json  # noqa: E402

MARGIN_SHARE = 0.25  # the JobBook keeps a quarter of a short notice's window as its margin
AGREEMENT = 0.05  # a local replay's elastic/static ratio and its simulation's agree within this
UNBOUNDED = 10**9  # the local cluster's cap on agents counts agents, not the machine's size


@dataclass(frozen=True)
class Measured:
    """What a finished replay measured of its tasks (the module docstring)."""

    walls_s: dict[str, float]  # task -> wall time of its attempt that finished
    issue_lags_s: dict[str, float]  # task -> from its last parent's end (or the run's start) to its issue
    end_lag_s: float  # from the last task's end to the run's end
    report: dict  # the run's report.json
    settings: dict  # the run's run.json
    # agent number -> (seconds after it was up that plastic heard its notice, seconds left then)
    notices: dict[int, tuple[float, float]]
    policy_starts_s: float  # from the run's start to the elastic controller's (0: none)
    met: frozenset[int]  # the numbers of the agents plastic met


def measured(where: Path, plan: Plan) -> Measured:
    """Read a replay's run (``where``: its directory, with report.json and run/) against its plan."""
    report = json.loads((where / "report.json").read_text())
    settings = json.loads((where / "run" / "run.json").read_text())
    step_of_job: dict[str, str] = {}
    issued_at: dict[str, float] = {}
    ended_at: dict[str, float] = {}
    walls: dict[str, float] = {}
    seen_at: dict[str, float] = {}
    notices: dict[int, tuple[float, float]] = {}
    started_at = report["started_at"]
    policy_at: float | None = None
    with (where / "run" / "decisions.jsonl").open() as lines:
        for line in lines:
            rec = json.loads(line)
            if rec.get("kind") == "elastic_event" and (rec.get("event") or {}).get("type") == "ElasticStarted":
                policy_at = rec["t"] if policy_at is None else policy_at
            elif rec.get("kind") == "agent":  # one met before Toil's first issue was up at the start
                seen_at.setdefault(rec["agent_id"], rec["t"] if issued_at else started_at)
            elif rec.get("kind") == "notice" and rec.get("notice_kind") == "terminate":
                up_at = seen_at.get(rec["agent_id"], started_at)
                heard = (max(rec["t"] - up_at, 0.0), max(float(rec["window_s"]), 0.0))
                notices.setdefault(_agent_number(rec["agent_id"]), heard)
            elif rec.get("kind") == "issued" and rec.get("step"):
                step_of_job[str(rec["job_id"])] = rec["step"]
                issued_at.setdefault(rec["step"], rec["t"])
            elif rec.get("kind") == "ended" and rec.get("outcome") == "finished":
                task = step_of_job.get(str(rec.get("job_id")))
                if task is not None and rec.get("wall_time_s"):
                    walls[task], ended_at[task] = float(rec["wall_time_s"]), rec["t"]
    missing = [t.id for t in plan.tasks if t.id not in walls or t.id not in issued_at]
    if missing:
        raise ValueError(f"{where}: {len(missing)} task(s) did not finish in the replay, e.g. {missing[0]}")
    lags = {t.id: max(issued_at[t.id] - max((ended_at[p] for p in t.parents), default=started_at), 0.0)
            for t in plan.tasks}
    return Measured(walls, lags, max(report["ended_at"] - max(ended_at.values()), 0.0), report, settings, notices,
                    0.0 if policy_at is None else max(policy_at - started_at, 0.0),
                    frozenset(_agent_number(agent) for agent in seen_at))


def _agent_number(agent_id: str) -> int:
    """The local cluster numbers its agents as it creates them: "<master id>-S<number>"."""
    return int(agent_id.rsplit("-S", 1)[1])


def _policy(settings: dict) -> ElasticPolicy:
    """The elastic controller's policy as `plastic run` built it from these settings
    (plastic.framework.elastic_options.build_provisioner)."""
    return ElasticPolicy(max_nodes=settings.get("max_nodes") or settings["max_agents"],
                         idle_s=float(settings["idle_s"]), lead_s=float(settings.get("boot_s") or 0.0),
                         makespan_allowance=float(settings.get("makespan_allowance") or 0.0))


def simulate_replay(plan: Plan, m: Measured, *, elastic: bool) -> SimResult:
    """One replayed run, simulated in its own world (the module docstring)."""
    notice_s = float(m.settings.get("notice_seconds") or 120.0)
    shapes = node_shapes(load_catalog(m.settings.get("catalog_path")))
    policy = _policy(m.settings)
    tasks = tuple(replace(t, runtime_s=m.walls_s[t.id]) for t in plan.tasks)
    first = (starting_nodes(plan.nodes, plan.tasks, sized_by_controller(plan.tasks, shapes, policy)) if elastic
             else plan.nodes)
    first = local_shape(first, machine_vcpus=UNBOUNDED, machine_ram_mib=UNBOUNDED,
                        max_agents=int(m.settings["max_agents"])).nodes
    # a first agent plastic never met was lost before it could (interrupted while Toil started): gone at
    # the start, and never paid, as the report pays the agents it knows
    notices = {k: (0.0, 0.0) for k in range(len(first)) if k not in m.met} | m.notices
    world = SimWorld(notice_s=notice_s, margin_s=MARGIN_SHARE * notice_s, min_billed_s=0.0, first_boot_s=0.0,
                     notices=notices, issue_lag_s=m.issue_lags_s, end_lag_s=m.end_lag_s, step=_own_step,
                     policy_starts_s=m.policy_starts_s,
                     estimates_s={t.id: t.runtime_s for t in plan.tasks if t.runtime_s is not None},
                     first_nodes=first)
    kw = {"elastic_policy": policy} if elastic else {}
    return simulate(tasks, plan, shapes, "elastic" if elastic else "static", boot_s=policy.lead_s, world=world,
                    **kw)


def _own_step(task_id: str) -> str:
    """The replay's workflow has a step per task, named by the task."""
    return task_id


def twin(plan: Plan, static_dir: Path, elastic_dir: Path) -> dict:
    """A replayed pair (static and a policy, in one condition and seed) and the pair simulated in its own
    world: each run's cost and makespan, and the two elastic/static ratios."""
    runs = [measured(static_dir, plan), measured(elastic_dir, plan)]
    static = simulate_replay(plan, runs[0], elastic=False)
    elastic = simulate_replay(plan, runs[1], elastic=True)
    replayed = [m.report for m in runs]
    return {"replayed_ratio": replayed[1]["cost_usd"] / replayed[0]["cost_usd"],
            "simulated_ratio": elastic.usd / static.usd,
            "replayed_usd": [r["cost_usd"] for r in replayed], "simulated_usd": [static.usd, elastic.usd],
            "replayed_makespan_s": [r["makespan_s"] for r in replayed],
            "simulated_makespan_s": [static.makespan_s, elastic.makespan_s],
            "simulated_interruptions": [static.interruptions, elastic.interruptions]}


class Run(NamedTuple):
    """A finished run of a local replay: its policy (static, elastic, allow-F), condition, seed (None:
    calm) and directory (report.json, run/)."""

    policy: str
    condition: str
    seed: int | None
    where: Path


def twin_pairs(runs: Sequence[Run], plan_path: Path) -> list[dict]:
    """Each pair of a policy and static in one condition and seed, simulated in its own world (`twin`);
    then per policy and condition over two seeds or more, the mean ratios."""
    plan = plan_from_json(json.loads(plan_path.read_text()), source=str(plan_path))
    static = {(r.condition, r.seed): r.where for r in runs if r.policy == "static"}
    pairs = [{"policy": r.policy, "condition": r.condition, "seed": r.seed}
             | twin(plan, static[r.condition, r.seed], r.where)
             for r in runs if r.policy != "static" and (r.condition, r.seed) in static]
    means = []
    for key in dict.fromkeys((p["policy"], p["condition"]) for p in pairs if p["seed"] is not None):
        of = [p for p in pairs if (p["policy"], p["condition"]) == key]
        if len(of) > 1:
            means.append({"policy": key[0], "condition": key[1], "seed": "mean"}
                         | {k: statistics.fmean(p[k] for p in of) for k in ("replayed_ratio", "simulated_ratio")})
    return pairs + means


def print_twins(twins: Sequence[dict]) -> None:
    if not twins:
        return
    print(f"\nthe replay simulated in its own world (bench/elastic_twin.py: measured runtimes, issue lags and "
          f"interruptions, the local cluster's billing); target: within {AGREEMENT:.0%}")
    print(f"{'run':<34}{'replayed':>9}{'simulated':>10}  verdict")
    for t in twins:
        apart = abs(t["replayed_ratio"] / t["simulated_ratio"] - 1)
        verdict = f"{apart:.1%} apart: " + ("agree" if apart <= AGREEMENT else "do NOT agree")
        seed = "" if t["seed"] is None else f" seed {t['seed']}"
        print(f"{t['policy'] + '/static ' + t['condition'] + seed:<34}{t['replayed_ratio']:>9.3f}"
              f"{t['simulated_ratio']:>10.3f}  {verdict}")


def runs_in(directory: Path) -> list[Run]:
    """The finished runs bench/elastic.py --local-keep left in ``directory`` (one directory each, named
    by its label: "static-calm", "elastic-interrupted-seed-2", "allow-0.1-calm")."""
    out = []
    for report in sorted(directory.glob("*/report.json")):
        label = re.fullmatch(r"(.+)-(calm|interrupted)(?:-seed-(\d+))?", report.parent.name)
        if label and json.loads(report.read_text()).get("outcome") == "succeeded":
            seed = None if label[3] is None else int(label[3])
            out.append(Run(label[1], label[2], seed if label[2] == "interrupted" else None, report.parent))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory", type=Path, help="a local replay kept by bench/elastic.py --local-keep")
    args = ap.parse_args()
    if not (args.directory / "plan.json").is_file():
        raise SystemExit(f"bench/elastic_twin.py: {args.directory} holds no plan.json: not a kept local replay")
    runs = runs_in(args.directory)
    if not runs:
        raise SystemExit(f"bench/elastic_twin.py: {args.directory} holds no finished run")
    print_twins(twin_pairs(runs, args.directory / "plan.json"))


if __name__ == "__main__":
    main()
