"""Spot-notice reaction: from an interruption scheduled on a spot agent to its task running elsewhere.

Everything is real and runs as in `plastic run`: a local Mesos-API cluster (plastic.local) with one
on-demand agent and several 1-vCPU spot agents (a lost spot agent is replaced by a new one, with a
new id, `--replace-after` seconds later), an embedded Redis, one `plastic agent-watch` process per
spot agent polling its emulated IMDS every `--interval` seconds (2 s, as AWS Node Termination
Handler does), and the Toil plugin's Mesos side: a Framework with the same JobBook settings and
the same NoticeFollower thread on the notices stream.  Toil itself is left out: its leader is not
on the reaction path (a requeue is never shown to it).

Each spot agent runs one long task (`sleep 3600`, 1 vCPU).  Rounds: when a spot agent's task is
RUNNING, after a random 0-2 s (so the interruption lands at any phase of the watcher's polling), the
bench schedules the agent's interruption on the master (POST /plastic/interrupt): its IMDS shows the
instance-action from that moment, which is the time origin (the master's own clock: notice_time -
notice_seconds).  Then, for that task:

    origin -> published   the watcher saw it (polling delay included) and Redis took it (the notices
                          stream entry's id, i.e. Redis' clock at XADD)
    published -> killed   the notices thread handed it over, the JobBook decided to kill (no runtime
                          history: the task cannot fit the window), the agent reported TASK_KILLED and
                          the job was requeued
    killed -> running     the requeued task got an offer elsewhere, was launched and reported RUNNING

The total is origin -> RUNNING on another agent.  The measured task is then killed (the leader's
path) so capacity stays free; a fresh task is issued for every spot agent without one.  The agent
dies `--notice-seconds` after the origin, as AWS's would after 120 s.

    python bench/notice_reaction.py                    # 100 notices, 6 spot agents, 2 s polling
    python bench/notice_reaction.py --notices 20 --json out.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine, percentile
from plastic.core.book.jobbook import JobBook
from plastic.core.book.lifecycle import TaskState
from plastic.core.model import PREEMPTIBLE, Resources
from plastic.framework.adapter import Framework
from plastic.framework.launcher import TaskCommand
from plastic.framework.notices import NoticeFollower
from plastic.framework.recorder import RecordListener
from plastic.local.handle import LocalCluster
from plastic.store import Store, start_embedded

AWS_WINDOW_S = 120.0
TARGET_P99_S = 5.0


class TimedRecorder(RecordListener):
    """Keeps every Framework record with the wall-clock time it was made (under the Framework's lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[tuple[float, str, dict[str, Any]]] = []

    def record(self, kind: str, fields: Mapping[str, object]) -> None:
        if kind in ("notice", "drain_kill", "requeue", "running", "let_finish", "agent_lost", "duplicate_notice"):
            with self.lock:
                self.records.append((time.time(), kind, dict(fields)))

    def find(self, kind: str, **match: Any) -> list[tuple[float, dict[str, Any]]]:
        with self.lock:
            return [(t, f) for t, k, f in self.records if k == kind and all(f.get(a) == v for a, v in match.items())]


@dataclass
class Round:
    agent_id: str
    job_id: str
    attempt: int
    origin: float  # the interruption scheduled: IMDS shows it from now (master's clock)
    published: float | None = None  # Redis took the watcher's notice (stream id time)
    source: str | None = None
    noticed: float | None = None  # the Framework's `notice` record
    decided: float | None = None  # the JobBook's drain_kill
    killed: float | None = None  # TASK_KILLED arrived: requeue
    running: float | None = None  # the new attempt RUNNING on another agent
    new_agent: str | None = None
    outcome: str = "pending"  # done | missed (the agent died first) | let_finish | timeout
    notes: list[str] = field(default_factory=list)

    def splits(self) -> dict[str, float]:
        assert self.published and self.killed and self.running
        return {"total": self.running - self.origin, "origin->published": self.published - self.origin,
                "published->killed": self.killed - self.published, "killed->running": self.running - self.killed,
                "published->decided": (self.decided or self.killed) - self.published}


class Bench:
    def __init__(self, args: argparse.Namespace, tmp: Path):
        self.args = args
        self.tmp = tmp
        self.rng = random.Random(args.seed)
        self.rec = TimedRecorder()
        self.watchers: dict[str, subprocess.Popen] = {}
        self.rounds: list[Round] = []
        self.active: dict[str, Round] = {}  # agent -> round in flight
        self.scheduled: dict[str, float] = {}  # agent -> when to interrupt it
        self.interrupted: set[str] = set()
        self.next_job = 0
        self.core_ids: set[str] = set()
        self.stream_last = "0-0"

    # ------------------------------------------------------------ processes

    def start_watcher(self, agent: Any) -> None:
        log = open(self.tmp / f"watch-{agent.id}.log", "ab")  # noqa: SIM115 (owned by the child)
        self.watchers[agent.id] = subprocess.Popen(
            [sys.executable, "-m", "plastic.watch", "-v", "--redis", self.redis_url, "--imds", agent.imds_url,
             "--agent-id", agent.id, "--interval", f"{self.args.interval:g}", "--grace", "1"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()

    def stop_watchers(self) -> None:
        for p in self.watchers.values():
            if p.poll() is None:
                p.terminate()
        for p in self.watchers.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    # ------------------------------------------------------------ the loop

    def run(self) -> list[Round]:
        a = self.args
        spec = {"clusters": [
            {"name": "core", "count": 1, "cpus": 64, "ram_mib": 65536, "preemptible": False},
            {"name": "burst", "count": a.spot_agents, "cpus": 1, "ram_mib": 1024, "preemptible": True},
        ]}
        server = start_embedded(self.tmp / "redis")
        self.redis_url = server.url
        client = server.client()
        self.store = Store(client)
        try:
            with LocalCluster(spec, agent_ping_timeout_s=5.0, replace_after_s=a.replace_after) as cluster:
                self.cluster = cluster
                self.core_ids = {ag.id for ag in cluster.agents if not ag.preemptible}
                fw = Framework(cluster.master_url, name="notice-reaction", book=JobBook(), recorders=[self.rec])
                fw.start()
                follower = NoticeFollower(self.store, fw).start()
                self.fw = fw
                try:
                    self.loop()
                finally:
                    follower.stop()
                    fw.stop(kill_tasks=True)
                    self.stop_watchers()
        finally:
            client.close()
            server.stop()
        return self.rounds

    def loop(self) -> None:
        a = self.args
        started = time.monotonic()
        last_refresh = 0.0
        spot: list[Any] = []
        while True:
            now = time.monotonic()
            done = sum(1 for r in self.rounds if r.outcome != "pending")
            if done >= a.notices and not self.active:
                return
            if now - started > a.max_seconds:
                print(f"stopping after {a.max_seconds:.0f} s with {done} rounds done", file=sys.stderr)
                for r in self.active.values():
                    r.outcome = "timeout"
                return
            if now - last_refresh >= 0.5:
                last_refresh = now
                spot = [ag for ag in self.cluster.refresh() if ag.preemptible]
                for ag in spot:
                    if ag.id not in self.watchers:
                        self.start_watcher(ag)
            self.read_stream()
            self.progress_rounds()
            live = [ag.id for ag in spot if ag.id not in self.interrupted]
            self.supply_work(live)
            launched = len(self.rounds)
            if launched < a.notices:
                self.interrupt_some(live, a.notices - launched)
            time.sleep(0.05)

    def jobs_by_agent(self) -> tuple[dict[str, list[Any]], int]:
        with self.fw.lock:
            jobs = list(self.fw.book.jobs.values())
        by_agent: dict[str, list[Any]] = {}
        queued = 0
        for j in jobs:
            if j.state is TaskState.QUEUED:
                queued += 1
            elif j.state in (TaskState.LAUNCHING, TaskState.STARTING, TaskState.RUNNING) and j.agent_id:
                by_agent.setdefault(j.agent_id, []).append(j)
        return by_agent, queued

    def supply_work(self, live: list[str]) -> None:
        """One long task for every live, uninterrupted spot agent (a queued task counts as on its way)."""
        by_agent, queued = self.jobs_by_agent()
        idle = [a for a in live if a not in by_agent]
        for _ in range(len(idle) - queued):
            self.next_job += 1
            self.fw.issue(f"j{self.next_job}", TaskCommand("sleep 3600"), Resources(1, 256), PREEMPTIBLE,
                          tool="long", name="long")
        # tasks that landed on the core node are of no use here: stop them (measured ones are stopped
        # by progress_rounds)
        measured = {r.job_id for r in self.active.values()}
        spot_ids = set(live) | self.interrupted
        for agent_id, jobs in by_agent.items():
            if agent_id in spot_ids:
                continue
            for j in jobs:
                if j.job_id not in measured and j.state is TaskState.RUNNING:
                    self.fw.kill(j.job_id, wait_s=0)

    def interrupt_some(self, live: list[str], budget: int) -> None:
        by_agent, _ = self.jobs_by_agent()
        now = time.monotonic()
        for agent_id in live:
            if agent_id in self.active or agent_id in self.interrupted:
                continue
            jobs = [j for j in by_agent.get(agent_id, []) if j.state is TaskState.RUNNING]
            if not jobs:
                self.scheduled.pop(agent_id, None)
                continue
            if len(self.active) >= self.args.parallel or budget <= 0:
                return
            when = self.scheduled.setdefault(agent_id, now + self.rng.uniform(0.0, 2.0))
            if now < when:
                continue
            job = jobs[0]
            hit = self.cluster.interrupt(agent_id, notice_seconds=self.args.notice_seconds)
            self.interrupted.add(agent_id)
            self.scheduled.pop(agent_id, None)
            r = Round(agent_id, job.job_id, job.attempt, origin=hit["notice_time"] - self.args.notice_seconds)
            self.rounds.append(r)
            self.active[agent_id] = r
            budget -= 1

    def read_stream(self) -> None:
        for entry in self.store.read_notices(self.stream_last, count=500):
            self.stream_last = entry.id
            target = entry.fields.get("target", "")
            r = self.active.get(target.partition(":")[2])
            if r is not None and r.published is None and entry.fields.get("kind") == "terminate":
                r.published = int(entry.id.split("-")[0]) / 1000.0
                r.source = entry.fields.get("source")

    def progress_rounds(self) -> None:
        for agent_id, r in list(self.active.items()):
            if r.noticed is None:
                got = self.rec.find("notice", agent_id=agent_id, notice_kind="terminate")
                r.noticed = got[0][0] if got else None
            if r.decided is None:
                got = self.rec.find("drain_kill", job_id=r.job_id, agent_id=agent_id)
                r.decided = got[0][0] if got else None
                if self.rec.find("let_finish", job_id=r.job_id, agent_id=agent_id):
                    r.outcome = "let_finish"
            if r.killed is None:
                got = self.rec.find("requeue", job_id=r.job_id, agent_id=agent_id)
                if got:
                    r.killed = got[0][0]
                    if got[0][1].get("cause") != "notice_kill":
                        r.outcome = "missed"
                        r.notes.append(f"requeued by {got[0][1].get('cause')}")
            if r.running is None:
                for t, f in self.rec.find("running", job_id=r.job_id):
                    attempt = int(str(f.get("task", "0.0")).rsplit(".", 1)[-1])
                    if f.get("agent_id") != agent_id and attempt > r.attempt:
                        r.running, r.new_agent = t, str(f["agent_id"])
                        break
            if r.running is not None or r.outcome in ("missed", "let_finish"):
                if r.outcome == "pending":
                    r.outcome = "done" if r.published and r.killed else "incomplete"
                self.fw.kill(r.job_id, wait_s=0)
                del self.active[agent_id]


def summarize(rounds: list[Round], args: argparse.Namespace, wall_s: float, core_ids: set[str]) -> dict[str, Any]:
    done = [r for r in rounds if r.outcome == "done"]
    splits = [r.splits() for r in done]
    keys = ["total", "origin->published", "published->killed", "killed->running", "published->decided"]
    table = {k: {"p50": percentile([s[k] for s in splits], 50), "p99": percentile([s[k] for s in splits], 99),
                 "max": max((s[k] for s in splits), default=float("nan"))} for k in keys}
    other = {}
    for r in rounds:
        if r.outcome != "done":
            other[r.outcome] = other.get(r.outcome, 0) + 1
    core_share = sum(1 for r in done if r.new_agent in core_ids) / max(len(done), 1)
    return {"notices": len(rounds), "measured": len(done), "not_measured": other, "splits": table,
            "relaunched_on_core_share": core_share, "wall_s": wall_s, "interval_s": args.interval,
            "notice_seconds": args.notice_seconds, "spot_agents": args.spot_agents, "parallel": args.parallel,
            "aws_window_s": AWS_WINDOW_S, "target_p99_s": TARGET_P99_S, "machine": machine(),
            "date": dt.date.today().isoformat()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notices", type=int, default=100, help="Interruptions to measure (default 100).")
    ap.add_argument("--spot-agents", type=int, default=6)
    ap.add_argument("--parallel", type=int, default=3, help="Interruptions in flight at once (default 3).")
    ap.add_argument("--interval", type=float, default=2.0, help="agent-watch polling interval (default 2 s).")
    ap.add_argument("--notice-seconds", type=float, default=10.0,
                    help="Warning before an interrupted agent dies (default 10 s; AWS gives 120 s).")
    ap.add_argument("--replace-after", type=float, default=1.0, help="A lost spot agent comes back after this.")
    ap.add_argument("--max-seconds", type=float, default=900.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="Also write the figures and every round here.")
    args = ap.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="plastic-notice-") as tmp:
        bench = Bench(args, Path(tmp))
        rounds = bench.run()
    wall = time.monotonic() - started
    s = summarize(rounds, args, wall, bench.core_ids)
    print(f"\nspot-notice reaction, local cluster, {args.spot_agents} spot agents (1 vCPU, one `sleep` task each) + "
          f"1 on-demand, agent-watch polling every {args.interval:g} s, {args.notice_seconds:g} s notices, "
          f"{args.parallel} in flight")
    print(f"{s['date']}, {s['machine']}; {wall:.0f} s wall")
    print(f"notices {s['notices']}, measured {s['measured']}" +
          (f", not measured: {s['not_measured']}" if s["not_measured"] else ""))
    print(f"{'segment':<22}{'p50 s':>8}{'p99 s':>8}{'max s':>8}")
    for k, v in s["splits"].items():
        print(f"{k:<22}{v['p50']:>8.2f}{v['p99']:>8.2f}{v['max']:>8.2f}")
    print(f"relaunched on the on-demand agent: {100 * s['relaunched_on_core_share']:.0f}% (the rest on another "
          "spot agent)")
    p99 = s["splits"]["total"]["p99"]
    print(f"AWS window {AWS_WINDOW_S:.0f} s; target p99 <= {TARGET_P99_S:.0f} s: "
          f"{'met' if p99 <= TARGET_P99_S else 'MISSED'} (p99 {p99:.2f} s, {100 * p99 / AWS_WINDOW_S:.1f}% of "
          "the window)")
    if args.json:
        args.json.write_text(json.dumps({"summary": s, "rounds": [asdict(r) for r in rounds]}, indent=2) + "\n")


if __name__ == "__main__":
    main()
