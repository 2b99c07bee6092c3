"""`plastic run` as a user starts it, watched from outside while chaos is made, for the chaos tests.

`ChaosRun` starts `python -m plastic run WF JOB --plan PLAN ...` as a child process (its own local
cluster, embedded Redis and spot-notice watchers unless told otherwise), reads its stderr and stdout
on threads, finds the local master's URL in what it prints, and reads the run's decisions
(`decisions.jsonl`, one JSON object a line, flushed at once by the batch system) while it runs.
Nothing is faked: the cluster, the watchers, Redis and Toil are the ones `plastic run` starts.

The workflow (data/square-sum): N scattered steps on spot nodes, step i prints "i f(i)" with
f(i) = i*i*7919 mod 10007, then one reliable step concatenates the lines in order and writes the
SHA-256 of the result: `expected_merged(items)` is what a correct run must produce.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from plastic.core.book.jobs import split_task_id
from tests.clirun import assert_replays, read_decisions
from tests.waiting import eventually

DATA = Path(__file__).resolve().parent / "data" / "square-sum"
ITEMS = list(range(1, 51))  # the chaos tests' 50 scattered tasks + the merge: 51 Toil jobs
N_TASKS = len(ITEMS) + 1
WORKFLOW = DATA / "square-sum.cwl"
MASTER_LINE = re.compile(r"local cluster at (http://[\d.]+:\d+)")


def f(i: int) -> int:
    return i * i * 7919 % 10007


def expected_merged(items: list[int]) -> str:
    return "".join(f"{i} {f(i)}\n" for i in items)


def write_job(path: Path, items: list[int], seconds: int, *, hold: Path | None = None) -> Path:
    """The job order; with `hold`, a square that starts while that file exists waits until it is gone."""
    path.write_text(f"items: [{', '.join(map(str, items))}]\nseconds: {seconds}\n"
                    + (f"hold: {hold}\n" if hold is not None else ""))
    return path


def plastic_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PLASTIC_REDIS_URL", None)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return env


class ChaosRun:
    """One `plastic run` child and what it says (see the module docstring)."""

    def __init__(self, tmp: Path, job: Path, plan: Path, *extra: str, timeout_s: float = 400.0):
        self.tmp = tmp
        self.run_dir = tmp / "run"
        self.outdir = tmp / "out"
        self.report_path = tmp / "report.json"
        # a bound on a hung run, not a duration: these runs take 40-140 s beside the other test workers
        self.deadline = time.monotonic() + timeout_s
        self.started = time.time()
        cmd = [sys.executable, "-m", "plastic", "run", str(WORKFLOW), str(job), "--plan", str(plan),
               "--outdir", str(self.outdir), "--run-dir", str(self.run_dir), "--report", str(self.report_path),
               *extra]
        self.proc = subprocess.Popen(cmd, cwd=tmp, env=plastic_env(), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        self.err: list[str] = []
        self.out: list[str] = []
        self._threads = [threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True),
                         threading.Thread(target=lambda: self.out.append(self.proc.stdout.read()), daemon=True)]
        for t in self._threads:
            t.start()
        self._master: str | None = None

    # ------------------------------------------------------------ while it runs

    def stderr_tail(self, chars: int = 4000) -> str:
        return "".join(self.err)[-chars:]

    def wait_for(self, what: str, probe, step_s: float = 0.1) -> Any:
        """The first truthy value of ``probe()``, while the run lives, until the run's deadline."""
        return eventually(probe, max(self.deadline - time.monotonic(), 0.0), what, interval=step_s, alive=self.proc,
                          describe=self.stderr_tail)

    @property
    def master(self) -> str:
        if self._master is None:
            def probe() -> str | None:
                found = [m.group(1) for line in list(self.err) for m in [MASTER_LINE.search(line)] if m]
                return found[0] if found else None
            self._master = self.wait_for("the local cluster's address", probe)
        return self._master

    def status(self) -> dict[str, Any]:
        return httpx.get(self.master + "/plastic/status", timeout=10).json()

    def interrupt(self, **body: Any) -> list[dict[str, Any]]:
        resp = httpx.post(self.master + "/plastic/interrupt", json=body, timeout=10)
        if resp.is_error:  # say what the master said, and what it had
            agents = [{k: a.get(k) for k in ("id", "cluster", "preemptible", "status", "tasks")}
                      for a in self.status()["agents"]]
            raise AssertionError(f"interrupt {body}: {resp.status_code} {resp.text}; agents: {agents}")
        return resp.json()["interrupted"]

    def kill_agent(self, agent_id: str) -> list[str]:
        """The agent dies now, without notice; returns the ids of the tasks it was running then."""
        resp = httpx.post(self.master + "/plastic/kill-agent", json={"agent_id": agent_id}, timeout=10)
        resp.raise_for_status()
        return resp.json()["tasks"]

    def decisions(self) -> list[dict[str, Any]]:
        """The decisions written so far."""
        return read_decisions(self.run_dir)

    def finished_count(self) -> int:
        return sum(1 for d in self.decisions() if d["kind"] == "ended" and d.get("outcome") == "finished")

    def busy_spot_agent(self, *, exclude: set[str] = frozenset()) -> str | None:
        """A live spot agent running at least one task right now (the busiest), per the master."""
        try:
            status = self.status()
        except httpx.HTTPError as error:  # the cluster is gone: say what the run said (a clean-clone run
            # once met this with no more to go on)
            try:  # the run is likely ending: let it finish saying why (bounded)
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            raise AssertionError(f"the local cluster stopped answering ({error}); plastic run "
                                 f"{'ended rc ' + str(self.proc.returncode) if self.proc.poll() is not None else 'runs'}"
                                 f", {self.finished_count()} tasks finished:\n{self.stderr_tail()}") from None
        agents = [a for a in status["agents"]
                  if a["preemptible"] and a["status"] == "active" and a["tasks"] > 0 and a["id"] not in exclude]
        return max(agents, key=lambda a: a["tasks"])["id"] if agents else None

    # ------------------------------------------------------------ the end

    def finish(self) -> Result:
        try:
            self.proc.wait(max(1.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        finally:
            self.stop()
        for t in self._threads:
            t.join(10)
        assert self.proc.returncode == 0, f"plastic run failed (rc {self.proc.returncode}):\n" + self.stderr_tail()
        return Result(self)

    def stop(self) -> None:
        """SIGTERM (plastic run stops its cluster, watchers and Toil), then SIGKILL; only this child."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Result:
    """What a finished run left: outputs, report, decisions, watcher logs."""

    def __init__(self, run: ChaosRun):
        self.run = run
        self.outputs = json.loads(run.out[0])
        self.report = json.loads(run.report_path.read_text())
        self.decisions = run.decisions()
        self.agents = {d["agent_id"]: d for d in self.decisions if d["kind"] == "agent"}

    def of(self, kind: str, **match: Any) -> list[dict[str, Any]]:
        return [d for d in self.decisions if d["kind"] == kind and all(d.get(k) == v for k, v in match.items())]

    def task_requeues(self, **match: Any) -> list[dict[str, Any]]:
        """The requeue records of tasks that ran or were placed: a launch the master refused as its agent
        went (TASK_DROPPED, REASON_INVALID_OFFERS: its offer rescinded), counted as "dropped", counts
        nothing and is left out."""
        return [q for q in self.of("requeue", **match) if q["counted_as"] != "dropped"]

    def cluster_of(self, agent_id: str) -> str:
        return self.agents[agent_id]["cluster"]

    def watch_log(self, agent_id: str) -> str:
        path = self.run.run_dir / "watch" / f"{agent_id}.log"
        return path.read_text() if path.exists() else ""

    def watching_since(self, agent_id: str) -> float:
        """When the run's watcher of the agent started watching (epoch s; inf when it never did)."""
        import datetime

        for line in self.watch_log(agent_id).splitlines():
            if "watching agent" in line:
                return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()  # local time
        return float("inf")

    def check_outputs(self, items: list[int]) -> None:
        """The merged lines are exactly f(i) for every item, in order, and the checksum is theirs."""
        merged = Path(self.outputs["merged"]["path"]).read_text()
        assert merged == expected_merged(items)
        checksum = Path(self.outputs["checksum"]["path"]).read_text().strip()
        assert checksum == hashlib.sha256(merged.encode()).hexdigest()

    def relaunched_finished_jobs(self) -> set[str]:
        """Jobs whose killed or lost attempt had already finished the Toil job (Toil removed it from the
        job store) and were launched again anyway: the new worker waits 2 x 30 s for a job file that
        is gone, exits 1, and Toil says "Despite the batch system claiming failure the job ... seems to
        have finished and been removed".  A known defect (the requeue does not ask the job store)."""
        log = (self.run.run_dir / "toil.log").read_text(errors="replace")
        names = {d["job_id"]: str(d.get("name", "")).split(" ", 1)[-1] for d in self.of("issued")}
        out = set()
        for d in self.of("ended", outcome="failed"):
            name = names.get(d["job_id"], "")
            requeued = self.of("requeue", job_id=d["job_id"])
            said = re.search(rf"the job 'CWLJob' {re.escape(name)} .*seems to have finished and been removed", log)
            if name and requeued and said:
                out.add(d["job_id"])
        return out

    def check_books(self, n_tasks: int) -> set[str]:
        """Counts that hold for every successful run, whatever the chaos: every task finished once, every
        requeue gave one more placement, the report counts what the decisions say.  Returns the jobs
        of the known relaunch defect (`relaunched_finished_jobs`), the only failures tolerated."""
        r = self.report
        phantoms = self.relaunched_finished_jobs()
        assert r["outcome"] == "succeeded" and r["tasks_failed"] == len(phantoms), (r, phantoms)
        assert r["tasks"] == n_tasks and r["tasks_finished"] == n_tasks - len(phantoms), r
        finished = Counter(d["job_id"] for d in self.of("ended", outcome="finished"))
        assert len(finished) == n_tasks - len(phantoms) and set(finished.values()) == {1}, finished
        assert not set(finished) & phantoms
        assert {d["job_id"] for d in self.of("ended") if d.get("outcome") != "finished"} == phantoms
        # a requeued job whose killed attempt had committed its work ends at once (the job store says so)
        gone = {d["job_id"] for d in self.of("ended") if d.get("reason") == "done_by_earlier_attempt"}
        assert r["attempts"] == len(self.of("placed")) == n_tasks + r["requeues"] - len(gone), (r, gone)
        assert r["requeues"] == len(self.of("requeue")), r
        assert r["preemptions"] == len(self.of("requeue", counted_as="preempted")), r
        assert r["losses"] == len(self.of("requeue", counted_as="lost")) == 0, r  # no reliable agent was lost
        assert r["notices"] == len(self.of("notice", notice_kind="terminate")), r
        assert r["drain_kills"] == len(self.of("drain_kill")), r
        assert r["let_finish"] == len(self.of("let_finish")), r
        # one notice per agent, never two
        noticed = Counter(d["agent_id"] for d in self.of("notice", notice_kind="terminate"))
        assert all(c == 1 for c in noticed.values()), noticed
        # every requeued job ran again elsewhere, and finished
        for rq in self.of("requeue"):
            if rq["job_id"] in gone:
                continue
            later = [p for p in self.of("placed", job_id=rq["job_id"]) if p["t"] >= rq["t"]]
            assert later and later[0]["agent_id"] != rq["agent_id"], rq
        # nothing placed on an agent after the framework knew it was going away
        for n in self.of("notice", notice_kind="terminate"):
            late = [p for p in self.of("placed", agent_id=n["agent_id"]) if p["t"] > n["t"]]
            assert not late, (n, late)
        for lost in self.of("agent_lost"):
            late = [p for p in self.of("placed", agent_id=lost["agent_id"]) if p["t"] > lost["t"]]
            assert not late, (lost, late)
        assert_replays(self.run.run_dir)  # the same events give the same decisions
        return phantoms

    def assert_no_relaunched_finished_jobs(self, phantoms: set[str]) -> None:
        """Call last: no job whose killed attempt had committed its work may be launched again (the
        framework asks the job store at every requeue; such a job ends as finished instead)."""
        assert not phantoms, (f"jobs {sorted(phantoms)} had finished in a killed attempt and were relaunched")

    def check_notice_kills(self) -> int:
        """Each task killed at a notice was requeued once from that agent as a preemption: at the kill's
        answer, or at the notice's deadline when the instance went first (a late notice leaves under a
        second).  Unless the task ended on its own before the kill reached it: the two cross on a loaded
        host, the agent reports how the task ended, and the job ends so, on that agent, in that attempt,
        with no requeue.  Returns how many kills were crossed so."""
        crossed = 0
        for kill in self.of("drain_kill"):
            requeues = self.of("requeue", job_id=kill["job_id"], agent_id=kill["agent_id"])
            if requeues:
                assert [(q["cause"] in ("notice_kill", "notice_deadline"), q["counted_as"]) for q in requeues] == \
                    [(True, "preempted")], (kill, requeues)
                continue
            _, attempt = split_task_id(kill["task"])
            ends = self.of("ended", job_id=kill["job_id"], agent_id=kill["agent_id"], attempt=attempt)
            assert [e["outcome"] for e in ends] in (["finished"], ["failed"]), (kill, ends)
            crossed += 1
        return crossed

    def lost_spot_agents(self) -> set[str]:
        """Agents the run lost, as the report counts them: the master lost them, or the provider saw them
        interrupted (a run can end before the master's ping timeout says so); not those the elastic
        controller released."""
        released = {d["node_id"] for d in self.of("node_released")}
        interrupted = {d["node_id"] for d in self.of("node_interrupted")}
        return ({d["agent_id"] for d in self.of("agent_lost")} | interrupted) - released

    def cluster_figures(self) -> dict[str, dict[str, Any]]:
        return {c["name"]: c for c in self.report["clusters"]}
