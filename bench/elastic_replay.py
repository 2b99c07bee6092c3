"""The elastic controller in the decisions log: what replaying it costs, and what one look costs in the shell.

1. Replay: the recorded elastic run (tests/core/elastic/data/decisions-elastic-interrupted.jsonl.gz, a real
   `plastic run` with spot interruptions) replayed through the JobBook alone (plastic.core.book.replay)
   and, where the tree has it, through the book and the elastic controller (plastic.core.elastic.replay);
   the best of ``--repeat`` runs, the log already parsed.
2. One look in the shell: `Provisioner.tick()` on a steady cluster (``--nodes`` spot nodes with two
   running tasks each, a reliable core node, queued work the node limit keeps waiting, the plan's
   merge still expected: a boot lead, so runtime estimates and the plan-ahead are on), the decisions
   log written to a file as in a run; the median and 90th percentile of ``--ticks`` looks, and how
   many bytes the log grows by per look.

The same script measures another tree (the code before a change, e.g. from `git archive HEAD`): its
plastic and its tests' fakes are imported instead of this checkout's.

    python bench/elastic_replay.py
    python bench/elastic_replay.py --tree /tmp/plastic-before
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "tests" / "core" / "elastic" / "data" / "decisions-elastic-interrupted.jsonl.gz"


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=REPO, help="the checkout whose plastic is measured")
    ap.add_argument("--repeat", type=int, default=20, help="replays of the recorded log (best of)")
    ap.add_argument("--ticks", type=int, default=200, help="looks measured per cluster size")
    ap.add_argument("--nodes", type=int, nargs="+", default=[10, 50], help="spot nodes of the steady cluster")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    return ap.parse_args()


def replay_figures(repeat: int) -> dict[str, float | int]:
    from plastic.core.book.replay import replay

    with gzip.open(RECORDED, "rt", encoding="utf-8") as f:
        entries = [json.loads(line) for line in f if line.strip()]
    out: dict[str, float | int] = {"lines": len(entries)}
    runs = {"book_s": lambda: replay(entries)}
    try:
        from plastic.core.elastic.replay import replay_all
    except ImportError:  # a tree from before the controller's replay
        pass
    else:
        runs["book_and_elastic_s"] = lambda: replay_all(entries)
    for name, run in runs.items():
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            result = run()
            best = min(best, time.perf_counter() - started)
        assert not result.mismatches, result.mismatches[0]
        out[name] = best
    if "book_and_elastic_s" in runs:
        out["looks"] = replay_all(entries).elastic.looks
    return out


def steady_cluster(nodes: int, log_path: Path | None):
    """A Framework (fake driver, the decisions log at ``log_path``; None: no log, records to the debug log)
    and a Provisioner over a cluster in a steady state: every look sees the same nodes and decides nothing
    new."""
    from plastic.core.elastic.controller import ElasticController
    from plastic.core.elastic.model import ElasticPolicy
    from plastic.core.model import PREEMPTIBLE, RELIABLE, Market, Resources, TaskSpec
    from plastic.framework.adapter import Framework
    from plastic.framework.launcher import TaskCommand
    from plastic.framework.provisioner import Provisioner
    from plastic.providers import NodeRequest
    from plastic.providers.recording import RecordingProvider
    from tests.fakes.catalogs import ELASTIC_SHAPES
    from tests.fakes.clock import Clock
    from tests.fakes.driver import FakeDriver

    clock = Clock()
    fw = Framework("http://x", driver_factory=FakeDriver, clock=clock, wall_clock=clock, record_path=log_path)
    fw.registered(fw.driver, {"value": "fw-1"}, {})
    provider = RecordingProvider(clock=clock)
    core = provider.create(NodeRequest("core", "c5.large", Market.ON_DEMAND, 1, 2, 4096)).node_ids
    spot = provider.create(NodeRequest("burst", "m5.large", Market.SPOT, nodes, 2, 8192)).node_ids
    provider.list_nodes()  # booted
    plan = [TaskSpec(f"sort[{i}]", 1, 1024, PREEMPTIBLE, 600.0) for i in range(2 * nodes + 2)]
    plan.append(TaskSpec("merge", 1, 1024, RELIABLE, 30.0, parents=tuple(t.id for t in plan)))
    policy = ElasticPolicy(max_nodes=nodes + 1, lead_s=60.0, idle_s=60.0)
    prov = Provisioner(fw, ElasticController(ELASTIC_SHAPES, policy), provider, ELASTIC_SHAPES, plan_tasks=plan)
    fw.book.runtimes.loaded("sort", [600.0])
    for i in range(2 * nodes + 2 + 10):  # two per node and the core node's, then ten that wait
        fw.issue(f"s{i}", TaskCommand("true"), Resources(1, 1024), PREEMPTIBLE, tool="sort", step="sort")
    offers = []
    for n, node_id in enumerate((*core, *spot)):
        spot_node = node_id in spot
        offers.append({"id": {"value": f"o{n}"}, "agent_id": {"value": node_id}, "hostname": "127.0.0.1",
                       "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 2}},
                                     {"name": "mem", "type": "SCALAR", "scalar": {"value": 4096}}],
                       "attributes": [{"name": "preemptible", "type": "TEXT",
                                       "text": {"value": "true" if spot_node else "false"}},
                                      {"name": "cluster", "type": "TEXT",
                                       "text": {"value": "burst" if spot_node else "core"}}]})
    fw.resourceOffers(fw.driver, offers)
    for job in list(fw.book.live()):
        fw.statusUpdate(fw.driver, {"task_id": {"value": job.mesos_task_id}, "state": "TASK_RUNNING",
                                    "uuid": f"u-{job.job_id}"})
    assert len(fw.book.live()) == 2 * nodes + 2 and len(fw.book.queued()) == 10
    return fw, prov, clock


def looks(nodes: int, ticks: int, log_path: Path | None) -> tuple[list[float], int]:
    """The times of ``ticks`` steady looks, and how many bytes the log grew by."""
    fw, prov, clock = steady_cluster(nodes, log_path)
    for _ in range(5):  # the first looks decide (growth stopped, nodes seen ready): not steady yet
        clock.t += 1
        prov.tick()
    size = os.path.getsize(log_path) if log_path else 0
    times = []
    for _ in range(ticks):
        clock.t += 1
        started = time.perf_counter()
        outputs = prov.tick()
        times.append(time.perf_counter() - started)
        assert not outputs, outputs
    grown = os.path.getsize(log_path) - size if log_path else 0
    fw.close_recorders()
    return sorted(times), grown


def tick_figures(nodes: int, ticks: int) -> dict[str, float | int]:
    with tempfile.TemporaryDirectory() as tmp:
        logged, grown = looks(nodes, ticks, Path(tmp) / "decisions.jsonl")
    unlogged, _ = looks(nodes, ticks, None)
    return {"nodes": nodes + 1, "median_ms": statistics.median(logged) * 1e3,
            "p90_ms": logged[int(0.9 * (len(logged) - 1))] * 1e3,
            "unlogged_median_ms": statistics.median(unlogged) * 1e3, "log_bytes_per_look": grown / ticks}


def main() -> None:
    args = parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    import plastic
    from bench.common import machine

    print(f"plastic from {Path(plastic.__file__).parent}")
    print(machine())
    figures: dict[str, object] = {"tree": str(args.tree), "machine": machine()}
    rep = replay_figures(args.repeat)
    figures["replay"] = rep
    line = f"replay of the recorded elastic run ({rep['lines']} lines): book only {rep['book_s'] * 1e3:.1f} ms"
    if "book_and_elastic_s" in rep:
        line += (f", book and controller {rep['book_and_elastic_s'] * 1e3:.1f} ms ({rep['looks']} looks; "
                 f"{(rep['book_and_elastic_s'] - rep['book_s']) / rep['looks'] * 1e3:.2f} ms a look)")
    print(line)
    figures["ticks"] = []
    for n in args.nodes:
        t = tick_figures(n, args.ticks)
        figures["ticks"].append(t)
        print(f"one look in the shell, {t['nodes']} nodes: median {t['median_ms']:.2f} ms, p90 {t['p90_ms']:.2f} ms, "
              f"log +{t['log_bytes_per_look']:.0f} bytes a look; without the decisions log, median "
              f"{t['unlogged_median_ms']:.2f} ms")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
