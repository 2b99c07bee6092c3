"""bench/elastic.py: the elastic cluster against today's static plan and a Toil-like reactive scaler.

    python bench/elastic.py                     # every trace of data/wfinstances, full scale
    python bench/elastic.py --traces 'montage*' --seeds 5 --rate 1.0 --json out.json
    python bench/elastic.py --decision          # the controller's decision time, 1,000 queued x 200 nodes
    python bench/elastic.py --trace-dir DIR     # other traces (bench/wfgen.py makes synthetic ones)

A discrete-event simulation (bench/elastic_sim.py) runs each trace under three policies, without and
with spot interruptions (the same seeds for every policy): (a) static, the plan of `plastic plan`
bought at the start and kept; (b) elastic, the real ElasticController, given the trace's runtimes
as estimates so that it looks one boot ahead (plastic.core.elastic.forecast), and again without estimates
("no-est"), without sizing nodes by the spread of runtimes ("no-spread", plastic.core.elastic.spread) and
with a 10% makespan allowance ("allow-10%", `--makespan-allowance 0.1`, checked against the same target);
(c) reactive, Toil's
BinPackedFit on the queued work, idle nodes released after 600 s.  It prints USD, makespan,
node-hours and completion per trace, the ratios, and whether the targets are met, per trace and
condition: elastic pays at most half of what is avoidable, USD <= floor + 0.5 x (static - floor)
(the floor: plastic.core.account.floor, what any policy pays within 1.1 x the static makespan, its boot
and cap printed beside each verdict), at <= 1.1 x the static makespan; cheaper than reactive (from
the plan and cold) on every trace; 100% completion; and a decision under 20 ms.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import WFINSTANCES, machine  # noqa: E402
from bench.elastic_bound import usd_lower_bound  # noqa: E402
from bench.elastic_sim import SimResult, simulate  # noqa: E402
from bench.elastic_twin import Run, print_twins, twin_pairs  # noqa: E402
from plastic.catalogs import load_catalog  # noqa: E402
from plastic.core.elastic.controller import ElasticController  # noqa: E402
from plastic.core.elastic.model import (  # noqa: E402
    ClusterObserved,
    ElasticPolicy,
    NodeState,
    NodeView,
    WaitingTask,
)
from plastic.core.elastic.spread import spread_summary  # noqa: E402
from plastic.core.model import Resources, node_shapes  # noqa: E402
from plastic.core.planning.sizing import plan_workload  # noqa: E402
from plastic.traces import load_trace  # noqa: E402

POLICIES = ("static", "elastic", "reactive", "cold")
# rows printed: the policies and the elastic controller without runtime estimates (no forecast)
ROWS = ("static", "elastic", "no-dag", "no-est", "no-spread", "allow-10%", "reactive", "cold")
ALLOWANCE = 0.1  # the allow-10% row: --makespan-allowance 0.1
EXTRA = ("no-spread",)
AVOIDABLE_SHARE = 0.5  # elastic may pay at most this share of what static pays above the floor
TARGET_MAKESPAN_RATIO = 1.1
TARGET_DECISION_MS = 20.0


BAND_WEIGHTS = (0.0, 0.5, 1.0)  # the band rule measured: price only, the default, risk weighed twice


def run_trace(path: Path, seeds: int, rate: float, boot_s: float, estimate_factor: float = 1.0) -> dict:
    workload = load_trace(str(path))
    catalog = load_catalog(None)
    shapes = node_shapes(catalog)
    plan = plan_workload(workload, catalog)
    rows: dict[str, dict[str, list[SimResult]]] = {}
    floors: dict[str, float] = {}
    # elastic: with the trace's runtimes as estimates, it looks one boot ahead (lead_s = boot_s);
    # no-dag: with estimates, but no waves forecast from the DAG (as a CWL run through Toil sees its work:
    # what is queued and what runs); no-est: no estimates (lead_s 0: the queued work and the free room only)
    variants = [("static", None, None), ("elastic", 0.5, boot_s), ("no-dag", 0.5, boot_s), ("no-est", 0.5, 0.0),
                ("reactive", None, None), ("cold", None, None)]
    variants += [(f"elastic-w{w:g}", w, boot_s) for w in BAND_WEIGHTS]
    variants += [(v, 0.5, boot_s) for v in EXTRA]
    variants += [("allow-10%", 0.5, boot_s)]
    for name, weight, lead_s in variants:
        policy = "elastic" if weight is not None else "reactive-cold" if name == "cold" else name
        allowance = ALLOWANCE if name == "allow-10%" else 0.0
        kw = {} if weight is None else {"elastic_policy": ElasticPolicy(band_weight=weight, lead_s=lead_s,
                                                                        makespan_allowance=allowance),
                                        "forecast_dag": name != "no-dag",
                                        "spreads": name != "no-spread"}
        for label, r in (("calm", 0.0), ("interrupted", rate)):
            results = [simulate(workload.tasks, plan, shapes, policy, seed=seed, rate_per_hour=r, boot_s=boot_s,
                                estimate_factor=estimate_factor, **kw)
                       for seed in (range(1, seeds + 1) if r > 0 else (1,))]
            rows.setdefault(name, {})[label] = results
    caps: dict[str, float] = {}
    for label, results in rows["static"].items():  # the floor under the makespan target of each condition
        caps[label] = TARGET_MAKESPAN_RATIO * mean(results, "makespan_s")
        floors[label] = usd_lower_bound(workload.tasks, shapes, caps[label], boot_s=boot_s)
    return {"trace": path.name, "tasks": len(workload.tasks), "rows": rows, "floor_usd": floors, "cap_s": caps,
            "boot_s": boot_s}


def mean(results: list[SimResult], attr: str) -> float:
    return statistics.fmean(getattr(r, attr) for r in results)


SPEND_PARTS = ("boot", "work", "lost", "partial", "empty", "minimum")
WHERE_ROWS = ("static", "elastic", "no-dag", "cold")


def where_line(results: list[SimResult]) -> str:
    """Where a policy's money went, mean over its runs: each part (bench/elastic_sim.py SimNode.spend_usd)
    on spot and on reliable nodes, as shares of its cost."""
    total = mean(results, "usd")
    cells = []
    for part in SPEND_PARTS:
        spot = statistics.fmean(r.spend_usd.get(f"spot {part}", 0.0) for r in results) / total
        rel = statistics.fmean(r.spend_usd.get(f"reliable {part}", 0.0) for r in results) / total
        cells.append(f"{part} {spot:.0%}+{rel:.0%}")
    return ", ".join(cells)


def report(traces: list[dict], rate: float, seeds: int, boot_s: float) -> dict:
    print(f"elastic cluster simulation; {machine()}; boot {boot_s:g} s; interruptions: {rate:g} x band risk / 15% "
          f"per spot node-hour, 120 s notice, {seeds} seed(s)")
    header = (f"{'trace':38} {'cond':11} {'policy':8} {'USD':>9} {'makespan s':>10} {'node-h':>8} {'done':>6} "
              f"{'intr':>5} {'peak':>4} {'bought':>6}")
    print(header)
    verdicts: list[dict] = []
    for doc in traces:
        for cond in ("calm", "interrupted"):
            got = {p: doc["rows"][p][cond] for p in ROWS}
            for p in ROWS:
                rs = got[p]
                print(f"{doc['trace'][:38]:38} {cond:11} {p:8} {mean(rs, 'usd'):9.4f} {mean(rs, 'makespan_s'):10.0f} "
                      f"{mean(rs, 'node_hours'):8.2f} {mean(rs, 'completion'):6.1%} {mean(rs, 'interruptions'):5.1f} "
                      f"{max(r.peak_nodes for r in rs):4d} {mean(rs, 'nodes_bought'):6.1f}")
            usd = {p: mean(got[p], "usd") for p in POLICIES}
            span = {p: mean(got[p], "makespan_s") for p in POLICIES}
            v = {"trace": doc["trace"], "condition": cond,
                 "usd_vs_static": usd["elastic"] / usd["static"],
                 "makespan_vs_static": span["elastic"] / span["static"],
                 "usd_vs_reactive": usd["elastic"] / usd["reactive"], "usd_vs_cold": usd["elastic"] / usd["cold"],
                 "complete": all(r.completion == 1.0 for r in got["elastic"])}
            verdicts.append(v)
            v["floor_vs_static"] = doc["floor_usd"][cond] / usd["static"]
            v["usd_vs_floor"] = usd["elastic"] / doc["floor_usd"][cond]
            v["no_est_usd_vs_static"] = mean(got["no-est"], "usd") / usd["static"]
            v["no_est_makespan_vs_static"] = mean(got["no-est"], "makespan_s") / span["static"]
            v["no_dag_usd_vs_static"] = mean(got["no-dag"], "usd") / usd["static"]
            v["no_dag_makespan_vs_static"] = mean(got["no-dag"], "makespan_s") / span["static"]
            print(f"{'':38} {'':11} {'ratios':8} elastic/static USD {v['usd_vs_static']:.3f}, makespan "
                  f"{v['makespan_vs_static']:.3f}; elastic/reactive USD {v['usd_vs_reactive']:.3f}, /cold "
                  f"{v['usd_vs_cold']:.3f}; "
                  f"no-dag/static USD {v['no_dag_usd_vs_static']:.3f}, makespan {v['no_dag_makespan_vs_static']:.3f}; "
                  f"no-est/static USD {v['no_est_usd_vs_static']:.3f}, makespan {v['no_est_makespan_vs_static']:.3f}")
            for p in WHERE_ROWS:
                print(f"{'':38} {'':11} {'where':8} {p:8} (spot+reliable, of its USD): {where_line(got[p])}")
            floor = doc["floor_usd"][cond]
            v["target_usd"] = floor + AVOIDABLE_SHARE * (usd["static"] - floor)
            v["avoidable_met"] = usd["elastic"] <= v["target_usd"]
            v["room_won"] = (usd["static"] - usd["elastic"]) / (usd["static"] - floor) if usd["static"] > floor else 0.0
            print(f"{'':38} {'':11} {'floor':8} {floor:9.4f} USD = {v['floor_vs_static']:.3f} x static (boot "
                  f"{doc['boot_s']:g} s, makespan cap {doc['cap_s'][cond]:.0f} s = {TARGET_MAKESPAN_RATIO} x static's); "
                  f"elastic = {v['usd_vs_floor']:.3f} x the floor, {v['room_won']:.0%} of the room above it won")
            print(f"{'':38} {'':11} {'target':8} elastic <= floor + {AVOIDABLE_SHARE} x (static - floor) = "
                  f"{v['target_usd']:.4f} USD ({v['target_usd'] / usd['static']:.3f} x static): elastic "
                  f"{usd['elastic']:.4f} USD, {'met' if v['avoidable_met'] else 'NOT met'}")
            allowed = got["allow-10%"]
            v["allow_usd_vs_static"] = mean(allowed, "usd") / usd["static"]
            v["allow_makespan_vs_static"] = mean(allowed, "makespan_s") / span["static"]
            v["allow_met"] = (mean(allowed, "usd") <= v["target_usd"] and all(r.completion == 1.0 for r in allowed)
                              and v["allow_makespan_vs_static"] <= TARGET_MAKESPAN_RATIO)
            print(f"{'':38} {'':11} {'allow':8} with --makespan-allowance {ALLOWANCE:g}: "
                  f"{v['allow_usd_vs_static']:.3f} x static USD, makespan {v['allow_makespan_vs_static']:.3f} x: "
                  f"target {'met' if v['allow_met'] else 'NOT met'}")
    # each target: a name and what each trace and condition must satisfy
    targets = {
        f"elastic USD <= floor + {AVOIDABLE_SHARE} x (static - floor)": lambda v: v["avoidable_met"],
        f"elastic makespan <= {TARGET_MAKESPAN_RATIO} x static": lambda v: (
            v["makespan_vs_static"] <= TARGET_MAKESPAN_RATIO),
        "elastic cheaper than reactive on every trace": lambda v: v["usd_vs_reactive"] < 1.0,
        "elastic cheaper than reactive started cold (as Toil starts) on every trace": lambda v: v["usd_vs_cold"] < 1.0,
        "elastic completes 100%": lambda v: v["complete"],
        f"elastic with --makespan-allowance {ALLOWANCE:g}: USD <= floor + {AVOIDABLE_SHARE} x (static - floor), "
        f"makespan <= {TARGET_MAKESPAN_RATIO} x static, 100% completed": lambda v: v["allow_met"],
    }
    misses = {name: [f"{v['trace']} ({v['condition']})" for v in verdicts if not holds(v)]
              for name, holds in targets.items()}
    met = {name: not missed for name, missed in misses.items()}
    print("the band rule (spot shapes at price x (1 + w x band risk)), all traces summed:")
    for cond in ("calm", "interrupted"):
        cells = []
        for w in BAND_WEIGHTS:
            rs = [doc["rows"][f"elastic-w{w:g}"][cond] for doc in traces]
            cells.append(f"w={w:g}: {sum(mean(r, 'usd') for r in rs):.4f} USD, "
                         f"{sum(mean(r, 'interruptions') for r in rs):.1f} interruptions, "
                         f"{sum(mean(r, 'preemptions') for r in rs):.1f} preemptions")
        print(f"  {cond:11} " + "; ".join(cells))
    for name, missed in misses.items():
        print(f"target: {name}: {'NOT met: ' + ', '.join(missed) if missed else 'met'}")
    return {"verdicts": verdicts, "targets": met}


def decision_time(repeats: int = 50) -> dict:
    """The controller deciding for 1,000 queued tasks (five scatter groups and 100 odd shapes) and 200
    busy nodes, fresh each time."""
    shapes = node_shapes(load_catalog(None))
    rng = random.Random(1)
    common = [(1, 1024), (2, 4096), (4, 8192), (1, 2048), (8, 16384)]
    queued = tuple(WaitingTask(f"t{i}", Resources(*(common[i % 5] if i < 900 else
                                                    (rng.randint(1, 8), rng.randint(1, 16) * 1024))), i % 10 == 0)
                   for i in range(1000))
    nodes = tuple(NodeView(f"n{j}", "c", s.name, s.market, NodeState.READY, s.usable, s.usd_per_hour, 0.0,
                           s.usable, 3) for j, s in ((j, shapes[j % len(shapes)]) for j in range(200)))
    # with estimates: every queued task 10-300 s, each node's 3 tasks end within 0-120 s, 200 more
    # tasks expected within the 60 s lead; the forecast steps through the ends
    ahead = ClusterObserved(
        tuple(replace(t, runtime_s=float(rng.randint(10, 300))) for t in queued),
        tuple(replace(n, task_ends=tuple((100.0 + rng.uniform(0, 120), Resources(1, 1024)) for _ in range(3)))
              for n in nodes),
        tuple(WaitingTask(f"e{i}", Resources(*common[i % 5]), False, due_in_s=rng.uniform(0, 60),
                          runtime_s=float(rng.randint(10, 300))) for i in range(200)))
    # and with the five groups' steps spreading (10 s to about 3,000 s each), so that spread sizing decides
    spread = replace(ahead, queued=tuple(replace(t, step=f"s{i % 5}") if i < 900 else t
                                         for i, t in enumerate(ahead.queued)),
                     spreads=tuple((f"s{k}", spread_summary(10.0 * 1.33 ** (j + k) for j in range(20)))
                                   for k in range(5)))
    out = {}
    for label, observation, lead_s in (("no estimates", ClusterObserved(queued, nodes), 0.0),
                                       ("with estimates, lead 60 s, 200 expected", ahead, 60.0),
                                       ("with estimates and 5 steps' runtime spreads", spread, 60.0)):
        times = []
        for _ in range(repeats):
            controller = ElasticController(shapes, ElasticPolicy(max_nodes=500, lead_s=lead_s))
            t0 = time.perf_counter()
            controller.handle(observation, 100.0)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        p99 = times[min(len(times) - 1, math.ceil(0.99 * len(times)) - 1)]
        print(f"controller decision, 1,000 queued tasks x 200 nodes, {label}: median {statistics.median(times):.1f} "
              f"ms, p99 {p99:.1f} ms over {repeats} (target < {TARGET_DECISION_MS:g} ms: "
              f"{'met' if statistics.median(times) < TARGET_DECISION_MS else 'NOT met'})")
        out[label] = {"median_ms": statistics.median(times), "p99_ms": p99}
    return out


def local_replay(trace: Path, scale: float, rate: float, seeds: int = 1, boot_s: float = 0.0,
                 conditions: tuple[str, ...] = ("calm", "interrupted"), timeout_s: float = 900.0,
                 allowance: float = 0.0, workflows: Path | None = None, keep: Path | None = None) -> dict:
    """The trace replayed through `plastic run` on the local cluster (bench/spot_replay.py's workflow,
    written to ``workflows``, by default bench/workflows):
    static and elastic, calm and with seeded interruptions (seeds 1 to ``seeds``); each run's outputs
    checked; the plan they are given carries the scaled runtimes (the runs' runtime estimates until they
    have their own).  With ``boot_s`` > 0 the elastic runs' new agents take that long to join
    (`--boot-seconds`), and the controller looks that far ahead.  Each finished pair is also simulated
    in the replay's own world (bench/elastic_twin.py)."""
    import contextlib
    import tempfile

    from bench import spot_replay as sr

    sr.OFFLINE = True
    notice = 120.0 * scale
    rows = []
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(str(keep)) if keep is not None
          else tempfile.TemporaryDirectory(prefix="plastic-elastic-")) as tmp_name:
        tmp = Path(tmp_name)
        spot_plan = sr.plan(trace, tmp / "trace-plan.json")  # as `plastic plan` makes it from the trace
        wf = sr.write_workflow(spot_plan, trace.name.removesuffix(".json"), scale, workflows or sr.WORKFLOWS)
        # the plan the runs get carries the runtimes of the workflow they run (the trace's, scaled): the
        # elastic controller's estimates until the run has its own (plastic.core.book.runtimes.planned_runtimes)
        scaled = [t | {"runtime_s": None if t.get("runtime_s") is None else t["runtime_s"] * scale}
                  for t in spot_plan["tasks"]]
        (tmp / "plan.json").write_text(json.dumps(spot_plan | {"tasks": scaled}))
        sinks = sr.sinks(spot_plan["tasks"])
        elastic = ("--elastic", *(("--boot-seconds", f"{boot_s:g}") if boot_s > 0 else ()))
        policies = [("static", ()), ("elastic", elastic)]
        if allowance > 0:  # and elastic with a makespan allowance
            policies.append((f"allow-{allowance:g}", (*elastic, "--makespan-allowance", f"{allowance:g}")))
        for condition in conditions:
            for seed in range(1, (seeds if condition == "interrupted" else 1) + 1):
                chaos = (("--interrupt-rate", f"{rate:g}", "--notice-seconds", f"{notice:g}", "--seed", str(seed))
                         if condition == "interrupted" else ())
                for policy, extra in policies:
                    label = f"{policy} {condition}" + (f" seed {seed}" if chaos else "")
                    row = sr.run(label, wf, tmp / "plan.json", tmp, sinks, *extra, *chaos, timeout=timeout_s)
                    rows.append(row | {"policy": policy, "condition": condition, "seed": seed if chaos else None})
        twins = twin_rows(rows, tmp)
    print(f"\nlocal replay: {trace.name}, runtimes x {scale:g}, interruptions {rate:g}/spot agent/min "
          f"(seeds 1-{seeds}), notice {notice:g} s, elastic boot {boot_s:g} s; {machine()}")
    print(f"{'run':<28}{'done':>5}{'makespan s':>11}{'agent-h':>9}{'cost USD':>10}{'peak':>5}{'released':>9}"
          f"{'lost':>5}")
    for row in rows:
        r = row.get("report") or {}
        cl = r.get("clusters", [])
        print(f"{row['label']:<28}{'yes' if sr.completed(row) else 'NO':>5}{r.get('makespan_s', float('nan')):>11.1f}"
              f"{sum(c['agent_hours'] for c in cl):>9.4f}{r.get('cost_usd', float('nan')):>10.6f}"
              f"{sum(c.get('peak_nodes', 0) for c in cl):>5}{sum(c.get('nodes_released', 0) for c in cl):>9}"
              f"{sum(c['agents_lost'] for c in cl):>5}")
    print_twins(twins)
    return {"trace": trace.name, "scale": scale, "rate": rate, "seeds": seeds, "boot_s": boot_s,
            "rows": [{k: v for k, v in row.items() if k != "report"} | {"report": row.get("report")} for row in rows],
            "twins": twins}


def twin_rows(rows: list[dict], tmp: Path) -> list[dict]:
    """The finished runs of a local replay, each pair of a policy and static simulated in its own world."""
    from bench import spot_replay as sr

    finished = [Run(r["policy"], r["condition"], r["seed"], tmp / r["label"].replace(" ", "-"))
                for r in rows if sr.completed(r)]
    return twin_pairs(finished, tmp / "plan.json")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default="*.json", help="glob of trace files in --trace-dir")
    ap.add_argument("--trace-dir", type=Path, default=WFINSTANCES,
                    help="where the traces are (default: data/wfinstances; bench/wfgen.py makes others)")
    ap.add_argument("--seeds", type=int, default=3, help="interrupted runs per policy and trace")
    ap.add_argument("--rate", type=float, default=1.0, help="interruptions per spot node-hour at a 10-15%% band")
    ap.add_argument("--boot-seconds", type=float, default=60.0)
    ap.add_argument("--estimate-factor", type=float, default=1.0,
                    help="the elastic controller's runtime estimates are the trace's x this (< 1: tasks overrun them)")
    ap.add_argument("--decision", action="store_true", help="only the decision-time benchmark")
    ap.add_argument("--local", type=Path, metavar="TRACE",
                    help="also replay this trace through plastic run on the local cluster, static and elastic")
    ap.add_argument("--local-scale", type=float, default=0.25, help="runtime factor of the local replay")
    ap.add_argument("--local-rate", type=float, default=0.5, help="local replay: interruptions/spot agent/minute")
    ap.add_argument("--local-seeds", type=int, default=1, help="local replay: interrupted runs per policy")
    ap.add_argument("--local-keep", type=Path, metavar="DIR",
                    help="local replay: keep each run's directory (records, report) here, for bench/elastic_twin.py")
    ap.add_argument("--local-conditions", default="calm,interrupted",
                    help="local replay: which conditions to run (calm, interrupted or both)")
    ap.add_argument("--local-timeout", type=float, default=900.0, metavar="SECONDS",
                    help="local replay: each run's time limit")
    ap.add_argument("--local-allowance", type=float, default=0.0, metavar="FRACTION",
                    help="local replay: also elastic with this --makespan-allowance (needs a boot)")
    ap.add_argument("--local-boot", type=float, metavar="SECONDS",
                    help="local replay: the elastic runs' boot time (default: --boot-seconds x --local-scale)")
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    conditions = tuple(c.strip() for c in args.local_conditions.split(",") if c.strip())
    if not conditions or set(conditions) - {"calm", "interrupted"}:
        raise SystemExit(f"bench/elastic.py: --local-conditions is calm, interrupted or both, not "
                         f"{args.local_conditions!r}")
    if args.local_seeds < 1:
        raise SystemExit(f"bench/elastic.py: --local-seeds is 1 or more, not {args.local_seeds}")
    boot = args.boot_seconds * args.local_scale if args.local_boot is None else args.local_boot
    if args.local_allowance and (not 0 < args.local_allowance < 1 or boot <= 0):
        raise SystemExit("bench/elastic.py: --local-allowance is a fraction in (0, 1) and needs a boot "
                         "(--local-boot or --boot-seconds above 0)")
    out: dict = {"machine": machine(), "decision": decision_time()}
    if args.local:
        out["local"] = local_replay(args.local, args.local_scale, args.local_rate, seeds=args.local_seeds, boot_s=boot,
                                    conditions=conditions, timeout_s=args.local_timeout,
                                    allowance=args.local_allowance, keep=args.local_keep)
    if not args.decision:
        paths = sorted(p for p in args.trace_dir.iterdir()
                       if p.suffix == ".json" and fnmatch.fnmatch(p.name, args.traces))
        if not paths:
            raise SystemExit(f"bench/elastic.py: no trace matches {args.traces!r} in {args.trace_dir}")
        if args.estimate_factor != 1.0:
            print(f"estimates: the trace's runtimes x {args.estimate_factor:g}")
        traces = [run_trace(p, args.seeds, args.rate, args.boot_seconds, args.estimate_factor) for p in paths]
        out.update(report(traces, args.rate, args.seeds, args.boot_seconds))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
