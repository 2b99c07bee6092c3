"""Soak: a long run on the local cluster with spot interruptions and the manager SIGKILLed and resumed.

`plastic run` a workflow of N tasks (bench/workflows/soak/soak.cwl: N - 1 short preemptible steps,
each `sleep` then one line, gathered by `cat` on an on-demand node) on the local cluster, with
random spot interruptions (`--interrupt-rate`, per burst agent per minute), and SIGKILL the manager
(`plastic run`; its Toil leader, which holds the batch system and its JobBook, dies with it) K
times at evenly spaced fractions of the tasks finished, each time followed by `plastic run --resume`.
Every ~2 s it samples the resident memory of `plastic run` and of the Toil leader.

At the end it reads the run's Redis and decisions log and prints: completion (tasks finished /
issued), tasks run twice (a Toil job, by jobStoreID, FINISHED more than once; must be 0), lost (a
job issued that never finished; must be 0), notices and requeues, kills and resumes, makespan,
peak RSS per incarnation and a series over the run's progress, Redis memory at the end, decisions
per second live, and the JobBook's step rate when the log is replayed (no mismatch allowed). Exit
status 1 when a must-be-0 figure is not 0, the output file is wrong, or a kill did not happen.

    python bench/soak.py                                  # 2,000 tasks, 0.1/agent/min, 3 kills
    python bench/soak.py --tasks 100 --kills 3 --keep DIR
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "bench" / "workflows" / "soak" / "soak.cwl"
SAMPLE_S = 2.0


# --- processes -------------------------------------------------------------------------------------

def rss_mib(pid: int | None) -> float | None:
    """VmRSS of a live process in MiB; None when it is gone (or a zombie)."""
    if not pid:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def toil_leader(parent: int) -> int | None:
    """The child of ``parent`` running toil-cwl-runner with the plastic batch system."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if b"--batchSystem" in argv and b"plastic" in argv:
            return int(entry.name)
    return None


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("PLASTIC_REDIS_URL", None)  # the run's own embedded Redis
    return e


# --- the decisions log, read as it grows --------------------------------------------------------------

class LogTail:
    """decisions.jsonl read incrementally: whole lines only (a torn line left by a SIGKILL is skipped).
    Progress is the number of Toil jobs with a finished task: `ended` lines, and `orphan_ended` lines
    of tasks a killed leader left running (a status the master sends again after a kill can repeat a
    job already counted, hence the set)."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.kinds = path, 0, Counter()
        self.job_of: dict[str, str] = {}  # Toil job id (unique across leaders) -> jobStoreID
        self.done: set[str] = set()  # jobStoreIDs with a finished task

    @property
    def finished(self) -> int:
        return len(self.done)

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return
        end = chunk.rfind(b"\n")
        if end < 0:
            return
        self.offset += end + 1
        for line in chunk[:end].splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            kind = d.get("kind")
            self.kinds[kind] += 1
            if kind == "issued":
                self.job_of[str(d.get("job_id"))] = str(d.get("job_store_id"))
            elif kind == "ended" and d.get("outcome") == "finished":
                job = str(d.get("job_id"))
                self.done.add(self.job_of.get(job, job))
            elif kind == "orphan_ended" and d.get("state") == "TASK_FINISHED":  # a killed leader's task
                job = str(d.get("task", "")).split(".")[0]
                self.done.add(self.job_of.get(job, job))


def read_log(path: Path) -> list[dict]:
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


# --- one run ------------------------------------------------------------------------------------------

@dataclass
class Incarnation:
    n: int
    pid: int
    started: float
    ended: float = 0.0
    how: str = ""  # killed / exit N
    leader: int | None = None
    peak_run: float = 0.0
    peak_leader: float = 0.0
    samples: list[tuple[float, int, float | None, float | None]] = field(default_factory=list)


@dataclass
class Soak:
    work: Path
    tasks: int
    kills: int
    rate: float
    seed: int
    seconds: float
    notice_s: float | None
    max_agents: int | None
    incs: list[Incarnation] = field(default_factory=list)
    peak_cluster: float = 0.0
    peak_redis: float = 0.0

    @property
    def run_dir(self) -> Path:
        return self.work / "run"

    def start(self, argv: list[str]) -> Incarnation:
        n = len(self.incs) + 1
        log = open(self.work / f"incarnation-{n}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([sys.executable, "-m", "plastic", "run", *argv], cwd=self.work, env=env(),
                                stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        inc = Incarnation(n, proc.pid, time.time())
        inc.proc = proc  # type: ignore[attr-defined]
        self.incs.append(inc)
        return inc

    def sample(self, inc: Incarnation, tail: LogTail) -> None:
        if inc.leader is None or not alive(inc.leader):
            inc.leader = toil_leader(inc.pid) or inc.leader
        run, lead = rss_mib(inc.pid), rss_mib(inc.leader)
        inc.peak_run = max(inc.peak_run, run or 0.0)
        inc.peak_leader = max(inc.peak_leader, lead or 0.0)
        inc.samples.append((time.time(), tail.finished, run, lead))
        self.peak_cluster = max(self.peak_cluster, rss_mib(self._pid_in("cluster.json")) or 0.0)
        self.peak_redis = max(self.peak_redis, rss_mib(self._pid_in("redis/redis.pid")) or 0.0)

    def _pid_in(self, name: str) -> int | None:
        try:
            text = (self.run_dir / name).read_text()
            return int(json.loads(text)["pid"]) if name.endswith(".json") else int(text.strip())
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def run(self, timeout_s: float) -> None:
        job = self.work / "job.yml"
        job.write_text(f"items: [{', '.join(str(i) for i in range(1, self.tasks))}]\nseconds: {self.seconds:g}\n")
        first = [str(WORKFLOW), str(job), "--run-dir", str(self.run_dir), "--outdir", str(self.work / "out"),
                 "--quiet", "--interrupt-rate", f"{self.rate:g}", "--seed", str(self.seed)]
        if self.notice_s is not None:
            first += ["--notice-seconds", f"{self.notice_s:g}"]
        if self.max_agents is not None:
            first += ["--max-agents", str(self.max_agents)]
        marks = [self.tasks * (k + 1) / (self.kills + 1) for k in range(self.kills)]
        tail = LogTail(self.run_dir / "decisions.jsonl")
        deadline = time.monotonic() + timeout_s
        inc = self.start(first)
        while True:
            tail.poll()
            self.sample(inc, tail)
            proc: subprocess.Popen = inc.proc  # type: ignore[attr-defined]
            if proc.poll() is not None:
                inc.ended, inc.how = time.time(), f"exit {proc.returncode}"
                break
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                inc.ended, inc.how = time.time(), "timed out"
                break
            # kill once this incarnation's leader has its JobBook (a `book` line each) and enough finished
            if (marks and tail.finished >= marks[0] and tail.kinds["book"] >= inc.n and inc.leader is not None
                    and alive(inc.leader)):
                marks.pop(0)
                self.kill(inc, proc)
                inc = self.start(["--resume", str(self.run_dir), "--quiet"])
                continue
            if len(inc.samples) % 15 == 1:
                print(f"  {time.strftime('%H:%M:%S')} incarnation {inc.n}: {tail.finished}/{self.tasks} finished, "
                      f"{tail.kinds['notice']} notices", file=sys.stderr, flush=True)
            time.sleep(SAMPLE_S)

    def kill(self, inc: Incarnation, proc: subprocess.Popen) -> None:
        """SIGKILL `plastic run`; its leader gets SIGKILL from the kernel (PDEATHSIG) and the embedded
        Redis SIGTERM: wait for both to be gone, as a machine's crash would leave it."""
        leader, redis_pid = inc.leader, self._pid_in("redis/redis.pid")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        inc.ended, inc.how = time.time(), "SIGKILL"
        stop = time.monotonic() + 15
        while time.monotonic() < stop and any(p and alive(p) for p in (leader, redis_pid)):
            time.sleep(0.1)
        if leader and alive(leader):
            inc.how = "SIGKILL (leader outlived it: killed too)"
            os.kill(leader, signal.SIGKILL)
        time.sleep(1.0)


# --- what is left to read afterwards --------------------------------------------------------------------

def check_state(run_dir: Path) -> dict:
    """The run's Redis (started again from its files): task records, run state, memory."""
    from plastic.store import Store, start_embedded

    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    server = start_embedded(run_dir / "redis")
    try:
        client = server.client()
        store = Store(client)
        run = store.get_run(run_id)
        tasks = store.get_tasks(run_id)
        mem = client.info("memory")
        out = {"run_state": str(run.state).rsplit(".", 1)[-1] if run else "missing",
               "incarnations": store.incarnation(run_id),
               "task_records": len(tasks), "used_memory": int(mem["used_memory"]),
               "used_memory_peak": int(mem["used_memory_peak"]), "keys": int(client.dbsize()),
               "finished_by_job": Counter(t.spec.get("job_store_id") for t in tasks
                                          if str(t.state).endswith("FINISHED")),
               "jobs_in_redis": {t.spec.get("job_store_id") for t in tasks}}
        client.close()
        return out
    finally:
        server.stop()


def replay_rate(entries: list[dict]) -> dict:
    from plastic.core.book.replay import replay

    t0 = time.process_time()
    res = replay(entries)
    cpu = time.process_time() - t0
    return {"books": res.books, "events": res.events, "decisions": res.decisions, "mismatches": len(res.mismatches),
            "torn": res.torn, "cpu_s": cpu, "events_per_s": res.events / cpu if cpu > 0 else float("nan")}


def series(incs: list[Incarnation], tasks: int, buckets: int = 10) -> list[tuple[str, int, float, float]]:
    """Samples, peak RSS of `plastic run` and of the leader in each tenth of the tasks finished (a tenth
    passed between two samples has none)."""
    rows = []
    samples = [s for inc in incs for s in inc.samples]
    for b in range(buckets):
        lo, hi = tasks * b / buckets, tasks * (b + 1) / buckets
        inside = [s for s in samples if lo <= s[1] < hi or (b == buckets - 1 and s[1] >= hi)]
        rows.append((f"{100 * b // buckets}-{100 * (b + 1) // buckets}%", len(inside),
                     max((s[2] or 0.0 for s in inside), default=0.0), max((s[3] or 0.0 for s in inside), default=0.0)))
    return rows


def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=2000, help="Tasks in the workflow, the gather included (>= 3).")
    ap.add_argument("--interrupt-rate", type=float, default=0.1,
                    help="Spot interruptions per burst agent per minute (default 0.1: 10%% of them a minute).")
    ap.add_argument("--kills", type=int, default=3, help="SIGKILL the manager this many times (default 3).")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=0.2, help="Each step sleeps this long (default 0.2).")
    ap.add_argument("--notice-seconds", type=float, help="Warning before an interrupted agent dies (default: plastic's).")
    ap.add_argument("--max-agents", type=int, help="Local cluster size cap (default: plastic's).")
    ap.add_argument("--timeout", type=float, default=7200.0, help="Give up after this many seconds.")
    ap.add_argument("--keep", type=Path, help="Keep the run's files here (default: a temporary directory).")
    ap.add_argument("--json", type=Path, help="Also write the figures here.")
    args = ap.parse_args()
    if args.tasks < 3 or args.kills < 0:
        ap.error("--tasks must be at least 3 and --kills at least 0")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=False)
        return measure(args, args.keep)
    with tempfile.TemporaryDirectory(prefix="plastic-soak-") as tmp:
        return measure(args, Path(tmp))


def measure(args: argparse.Namespace, work: Path) -> int:
    began = time.time()
    soak = Soak(work, args.tasks, args.kills, args.interrupt_rate, args.seed, args.seconds, args.notice_seconds,
                args.max_agents)
    soak.run(args.timeout)
    wall = time.time() - began
    run_dir = soak.run_dir
    entries = read_log(run_dir / "decisions.jsonl")
    kinds = Counter(d.get("kind") for d in entries)
    report = json.loads((run_dir / "report.json").read_text()) if (run_dir / "report.json").exists() else {}
    state = check_state(run_dir)
    rep = replay_rate(entries)
    # issued jobs by jobStoreID, every leader's; a job is lost when none of its tasks FINISHED
    issued = {d.get("job_store_id") for d in entries if d.get("kind") == "issued"} | state["jobs_in_redis"]
    issued.discard(None)
    finished = state["finished_by_job"]
    twice = sorted(j for j, n in finished.items() if n > 1)
    lost = sorted(j for j in issued if not finished.get(j))
    expected = "".join(f"item {i}\n" for i in range(1, args.tasks))
    joined = work / "out" / "joined.txt"
    output_ok = joined.is_file() and joined.read_text() == expected
    kills = sum(1 for inc in soak.incs if inc.how.startswith("SIGKILL"))
    last = soak.incs[-1]
    t_first = entries[0]["t"] if entries else began
    t_last = entries[-1]["t"] if entries else time.time()
    span = max(t_last - t_first, 1e-9)
    events = kinds["event"]
    decisions = sum(n for k, n in kinds.items() if k not in ("event", "book"))
    fig = {
        "tasks": args.tasks, "issued": len(issued), "finished": sum(1 for j in issued if finished.get(j)),
        "run_twice": len(twice), "lost": len(lost), "output_ok": output_ok,
        "notices": kinds["notice"], "requeues": kinds["requeue"], "adopted": kinds["orphan_adopted"],
        "orphans_killed": kinds["orphan_kill"], "report": {k: report.get(k) for k in (
            "outcome", "tasks", "tasks_finished", "attempts", "preemptions", "losses", "requeues", "notices",
            "orphans_adopted", "orphans_killed", "makespan_s")},
        "kills": kills, "kills_asked": args.kills, "resumes": len(soak.incs) - 1, "last_exit": last.how,
        "run_state": state["run_state"], "incarnations_in_redis": state["incarnations"],
        "wall_s": wall, "log_span_s": span, "log_lines": len(entries), "events": events, "decisions": decisions,
        "events_per_s": events / span, "decisions_per_s": decisions / span, "replay": rep,
        "redis_used_memory": state["used_memory"], "redis_used_memory_peak": state["used_memory_peak"],
        "redis_keys": state["keys"], "task_records": state["task_records"],
        "peak_rss_cluster_mib": soak.peak_cluster, "peak_rss_redis_mib": soak.peak_redis,
        "incarnation_rows": [{"n": i.n, "how": i.how, "s": i.ended - i.started, "peak_run_mib": i.peak_run,
                              "peak_leader_mib": i.peak_leader, "samples": len(i.samples)} for i in soak.incs],
        "series": series(soak.incs, args.tasks),
        "samples": [[i.n, round(t - began, 1), done, run and round(run, 1), lead and round(lead, 1)]
                    for i in soak.incs for t, done, run, lead in i.samples],
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    ok = (not twice and not lost and output_ok and kills == args.kills and last.how == "exit 0"
          and fig["finished"] == fig["issued"] and rep["mismatches"] == 0 and state["run_state"] == "SUCCEEDED")
    print_figures(fig, ok, twice, lost)
    if args.json:
        args.json.write_text(json.dumps(fig, indent=2, default=str) + "\n")
    if not ok:
        print(f"FAILED; the run's files: {work if args.keep else '(temporary; rerun with --keep DIR)'}")
    return 0 if ok else 1


def print_figures(f: dict, ok: bool, twice: list, lost: list) -> None:
    r = f["report"]
    print(f"\nsoak: {f['tasks']} tasks ({f['tasks'] - 1} preemptible steps + a gather), "
          f"{f['args']['interrupt_rate']:g} interruptions per burst agent per minute, "
          f"{f['kills_asked']} manager SIGKILLs, seed {f['args']['seed']}")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine()}")
    rows = [
        ("completion (jobs finished / issued)", f"{f['finished']} / {f['issued']}"
                                                 f"{'' if f['finished'] == f['issued'] else '  NOT ALL'}"),
        ("output right (joined lines in order)", "yes" if f["output_ok"] else "NO"),
        ("tasks run twice (FINISHED > 1 per jobStoreID; must be 0)", f"{f['run_twice']}"),
        ("lost (issued, never FINISHED; must be 0)", f"{f['lost']}"),
        ("spot notices / requeues (decisions log)", f"{f['notices']} / {f['requeues']}"),
        ("report: attempts, preemptions, losses, requeues",
         f"{r['attempts']}, {r['preemptions']}, {r['losses']}, {r['requeues']}"),
        ("running tasks at a kill: adopted / killed and rerun (log)", f"{f['adopted']} / {f['orphans_killed']}"),
        ("manager SIGKILLs / resumes", f"{f['kills']} of {f['kills_asked']} / {f['resumes']} "
                                       f"(leaders in Redis {f['incarnations_in_redis']}, JobBooks {f['replay']['books']})"),
        ("run state, last exit", f"{f['run_state']}, {f['last_exit']}"),
        ("makespan (report) / bench wall", f"{r['makespan_s'] or float('nan'):.0f} s / {f['wall_s']:.0f} s"),
        ("Redis at the end: used_memory (peak), keys",
         f"{mib(f['redis_used_memory'])} ({mib(f['redis_used_memory_peak'])}), {f['redis_keys']}"),
        ("decisions log: lines / JobBook events / decisions", f"{f['log_lines']} / {f['events']} / {f['decisions']}"),
        ("live: events/s, decisions/s (over the log's span)",
         f"{f['events_per_s']:.1f}, {f['decisions_per_s']:.1f} ({f['log_span_s']:.0f} s)"),
        ("replay: JobBook steps/s (CPU), mismatches",
         f"{f['replay']['events_per_s']:.0f} ({f['replay']['events']} in {f['replay']['cpu_s']:.1f} s), "
         f"{f['replay']['mismatches']} (torn {f['replay']['torn']})"),
        ("peak RSS: local cluster process / redis-server", f"{f['peak_rss_cluster_mib']:.0f} / "
                                                           f"{f['peak_rss_redis_mib']:.0f} MiB"),
    ]
    width = max(len(a) for a, _ in rows)
    for a, b in rows:
        print(f"  {a:<{width}}  {b}")
    print("\n  incarnation  ended by                    s  samples  peak RSS plastic run  peak RSS Toil leader")
    for i in f["incarnation_rows"]:
        print(f"  {i['n']:>11}  {i['how']:<20} {i['s']:>7.0f}  {i['samples']:>7}  {i['peak_run_mib']:>16.0f} MiB"
              f"  {i['peak_leader_mib']:>16.0f} MiB")
    print("\n  tasks finished  samples  peak RSS plastic run  peak RSS Toil leader")
    for label, n, run, lead in f["series"]:
        if n:
            print(f"  {label:>14}  {n:>7}  {run:>16.0f} MiB  {lead:>16.0f} MiB")
        else:
            print(f"  {label:>14}  {n:>7}  {'-':>20}  {'-':>20}")
    if twice:
        print(f"  run twice: {twice[:5]}")
    if lost:
        print(f"  lost: {lost[:5]}")
    print("\nall checks passed" if ok else "")


if __name__ == "__main__":
    sys.exit(main())
