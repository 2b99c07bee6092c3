"""Launch throughput of plastic's Mesos driver against the local Mesos-API cluster.

N trivial command tasks (``true``, shell) go through MesosSchedulerDriver and a
real local master (plastic.local, in a child process) with its agents; each task
sends TASK_STARTING, TASK_RUNNING and TASK_FINISHED, and each of those is
acknowledged explicitly, as a real framework does.  Printed:

* tasks/s end to end: from the first SUBSCRIBE to the acknowledgement (202) of
  the last TASK_FINISHED;
* launches/s: tasks launched per second between the first offer and the last
  ACCEPT answered 202;
* offer-to-launch latency p50/p99 per launched task: from the moment the
  scheduler's resourceOffers callback gets the offer to the ACCEPT call that
  launches the task returning 202;
* CPU seconds used by this process (driver + scheduler) and by the cluster's
  process (master, agents and their task processes), to see where time goes.

    python bench/mesos_launch.py                 # 5,000 tasks, 4 agents x 8 cpus, 0.1 cpu / 16 MiB each
    python bench/mesos_launch.py --tasks 500
    python bench/mesos_launch.py --master http://127.0.0.1:5050 --tasks 500 --beside-local

With ``--master`` the tasks go to a running Mesos master (the compose cluster's
Apache Mesos 1.11, or any other) and its agents as they are; there each task is
a real mesos-executor process.  ``--beside-local`` then also runs the same
number of tasks through plastic's local cluster in the same run and prints both.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import cpu_model, percentile
from plastic.core.executor.share import EXECUTOR_CPUS, EXECUTOR_RAM_MIB
from plastic.executor.protocol import executor_ids_of, executor_info, task_data
from plastic.framework.task_info import default_executor_command
from plastic.local.handle import LocalCluster
from plastic.mesos import MesosSchedulerDriver, Scheduler

TARGET_LAUNCHES_PER_S = 200.0


def _scalar(offer: dict[str, Any], name: str) -> float:
    return sum(r["scalar"]["value"] for r in offer.get("resources", []) if r["name"] == name and r.get("type") == "SCALAR")


def _cpu_seconds(pid: int) -> float:
    """utime+stime of a process and its reaped children (task processes of the cluster)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


MESOS_PROCESSES = ("mesos-master", "mesos-agent")


def _named_cpu_seconds(names: tuple[str, ...] = MESOS_PROCESSES) -> dict[str, float]:
    """utime+stime of every process of this host (containers' included) named as in ``names``, by name:
    a real master's and its agents' own CPU (their executors and tasks are other processes)."""
    out = dict.fromkeys(names, 0.0)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        if name in out:
            fields = text.rsplit(")", 1)[1].split()
            out[name] += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def _machine() -> str:
    return f"{platform.node()}: {os.cpu_count()} cpus ({cpu_model()}), Python {platform.python_version()}, {platform.system()} {platform.release()}"


class BenchScheduler(Scheduler):
    def __init__(self, n_tasks: int, task_cpus: float, task_mem: float, executor: str = "plastic",
                 executor_command: str = ""):
        self.executor = executor
        self.executor_info = executor_info("plastic-bench", executor_command) if executor == "plastic" else None
        self.n = n_tasks
        self.cpus = task_cpus
        self.mem = task_mem
        self.next_task = 0
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.first_offer_at: float | None = None
        self.first_update_at: float | None = None
        self.last_accept_at = 0.0
        self.accept_calls = 0
        self.ack_calls = 0
        self.finished = 0
        self.failed: dict[str, int] = {}
        self.last_finished_ack_at = 0.0
        self.done = threading.Event()
        self.suppressed = False

    def resourceOffers(self, driver, offers):
        received = time.perf_counter()
        if self.first_offer_at is None:
            self.first_offer_at = received
        for offer in offers:
            cpus, mem = _scalar(offer, "cpus"), _scalar(offer, "mem")
            if self.executor_info is not None and "plastic-bench" not in executor_ids_of(offer):
                cpus, mem = cpus - EXECUTOR_CPUS, mem - EXECUTOR_RAM_MIB  # the launch starts the executor
            fit = int(min(cpus / self.cpus + 1e-9, mem / self.mem + 1e-9))
            count = min(fit, self.n - self.next_task)
            if count <= 0:
                driver.declineOffer(offer["id"], filters=60.0)
                continue
            tasks = []
            for i in range(self.next_task, self.next_task + count):
                tasks.append({
                    "name": f"bench-{i}",
                    "task_id": {"value": f"bench-{i}"},
                    "agent_id": offer["agent_id"],
                    "resources": [
                        {"name": "cpus", "type": "SCALAR", "scalar": {"value": self.cpus}},
                        {"name": "mem", "type": "SCALAR", "scalar": {"value": self.mem}},
                    ],
                    **({"command": {"value": "true", "shell": True}} if self.executor_info is None else
                       {"executor": self.executor_info, "data": task_data({"value": "true", "shell": True})}),
                })
            self.next_task += count
            future = driver.launchTasks(offer["id"], tasks)
            self.accept_calls += 1
            future.add_done_callback(lambda f, t0=received, k=count: self._accepted(f, t0, k))
        if self.next_task >= self.n and not self.suppressed:
            self.suppressed = True
            driver.suppressOffers()

    def _accepted(self, future, t0: float, count: int) -> None:
        now = time.perf_counter()
        if future.exception() is not None:
            print(f"ACCEPT failed: {future.exception()}", file=sys.stderr)
            return
        with self.lock:
            self.latencies.extend([now - t0] * count)
            self.last_accept_at = max(self.last_accept_at, now)

    def statusUpdate(self, driver, status):
        if self.first_update_at is None:
            self.first_update_at = time.perf_counter()
        state = status["state"]
        future = driver.acknowledgeStatusUpdate(status)
        if status.get("uuid"):
            self.ack_calls += 1
        if state == "TASK_FINISHED":
            future.add_done_callback(self._finished_acked)
        elif state not in ("TASK_STARTING", "TASK_RUNNING", "TASK_STAGING"):
            with self.lock:
                self.failed[state] = self.failed.get(state, 0) + 1
                if self.finished + sum(self.failed.values()) >= self.n:
                    self.done.set()

    def _finished_acked(self, future) -> None:
        now = time.perf_counter()
        with self.lock:
            self.finished += 1
            self.last_finished_ack_at = max(self.last_finished_ack_at, now)
            if self.finished + sum(self.failed.values()) >= self.n:
                self.done.set()

    def error(self, driver, message):
        print(f"driver error: {message}", file=sys.stderr)
        self.done.set()


def run(args: argparse.Namespace, master: str | None = None) -> dict[str, Any]:
    """One run: against ``master`` when given (a running Mesos master), else a fresh local cluster."""
    spec = {"clusters": [{"name": "bench", "count": args.agents, "cpus": args.agent_cpus,
                          "ram_mib": args.agent_mem, "preemptible": False}]}
    with (contextlib.nullcontext(None) if master else LocalCluster(spec)) as cluster:
        url = master or cluster.master_url
        sched = BenchScheduler(args.tasks, args.task_cpus, args.task_mem, args.executor, args.executor_command)
        driver = MesosSchedulerDriver(sched, {"user": os.environ.get("USER", "root") or "root", "name": "bench-mesos-launch"},
                                      url, sender_threads=args.sender_threads)
        cpu_self0 = time.process_time()
        cpu_cluster0 = _cpu_seconds(cluster.pid) if cluster else float("nan")
        cpu_mesos0 = _named_cpu_seconds()
        t0 = time.perf_counter()
        driver.start()
        completed = sched.done.wait(args.timeout)
        t_end = sched.last_finished_ack_at or time.perf_counter()
        cpu_self = time.process_time() - cpu_self0
        cpu_cluster = _cpu_seconds(cluster.pid) - cpu_cluster0 if cluster else float("nan")
        cpu_mesos = {k: v - cpu_mesos0[k] for k, v in _named_cpu_seconds().items()}
        driver.stop()
    wall = t_end - t0
    launch_window = (sched.last_accept_at - sched.first_offer_at) if sched.first_offer_at else float("nan")
    launched = len(sched.latencies)
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": _machine(),
        "master": master or "plastic local cluster",
        "completed": completed,
        "tasks": args.tasks,
        "finished": sched.finished,
        "failed": sched.failed,
        "cluster": (f"the master's agents as they are; tasks {args.task_cpus} cpu / {args.task_mem} MiB" if master else
                    f"{args.agents} agents x {args.agent_cpus} cpus / {args.agent_mem} MiB; tasks {args.task_cpus} cpu / {args.task_mem} MiB"),
        "sender_threads": args.sender_threads,
        "executor": args.executor if args.executor == "command" else f"plastic ({args.executor_command})",
        "wall_s": round(wall, 3),
        "first_offer_after_s": round(sched.first_offer_at - t0, 3) if sched.first_offer_at else None,
        "first_update_after_s": round(sched.first_update_at - t0, 3) if sched.first_update_at else None,
        # from the first status update (executors started) to the last TASK_FINISHED acknowledged
        "tasks_per_s_after_first_update": (round(sched.finished / (t_end - sched.first_update_at), 1)
                                           if sched.first_update_at and t_end > sched.first_update_at else None),
        "tasks_per_s_end_to_end": round(sched.finished / wall, 1) if wall > 0 else None,
        "launches_per_s": round(launched / launch_window, 1) if launch_window and launch_window > 0 else None,
        "offer_to_launch_p50_ms": round(percentile(sched.latencies, 50) * 1000, 2),
        "offer_to_launch_p99_ms": round(percentile(sched.latencies, 99) * 1000, 2),
        "offer_to_launch_mean_ms": round(statistics.fmean(sched.latencies) * 1000, 2) if sched.latencies else None,
        "accept_calls": sched.accept_calls,
        "acknowledge_calls": sched.ack_calls,
        "cpu_s_driver_process": round(cpu_self, 2),
        "cpu_s_cluster_process": None if cpu_cluster != cpu_cluster else round(cpu_cluster, 2),
        # a real master's and agents' processes (with --master on this host; 0 for a remote one)
        "cpu_ms_per_task_mesos": {k: round(v * 1000 / max(sched.finished, 1), 2) for k, v in cpu_mesos.items()},
    }


def print_result(result: dict[str, Any]) -> None:
    print(f"mesos_launch  {result['date']}  {result['machine']}")
    print(f"  master: {result['master']}")
    print(f"  {result['cluster']}; driver sender threads {result['sender_threads']}; executor {result['executor']}")
    print(f"  {result['finished']}/{result['tasks']} tasks finished in {result['wall_s']} s"
          + (f"; failed: {result['failed']}" if result["failed"] else "")
          + ("" if result["completed"] else "  (TIMED OUT)"))
    print(f"  tasks/s end to end (first SUBSCRIBE -> last TASK_FINISHED acknowledged): {result['tasks_per_s_end_to_end']}")
    print(f"  launches/s (first offer -> last ACCEPT 202): {result['launches_per_s']}  (target {TARGET_LAUNCHES_PER_S:.0f})")
    print(f"  first offer after {result['first_offer_after_s']} s, first status update after "
          f"{result['first_update_after_s']} s; tasks/s from then on: {result['tasks_per_s_after_first_update']}")
    print(f"  offer-to-launch latency: p50 {result['offer_to_launch_p50_ms']} ms, p99 {result['offer_to_launch_p99_ms']} ms")
    print(f"  calls: {result['accept_calls']} ACCEPT, {result['acknowledge_calls']} ACKNOWLEDGE")
    cluster_cpu = result["cpu_s_cluster_process"]
    print(f"  CPU: driver process {result['cpu_s_driver_process']} s"
          + (f", cluster process (master+agents+tasks) {cluster_cpu} s" if cluster_cpu is not None else ""))
    per_task = result["cpu_ms_per_task_mesos"]
    if any(per_task.values()):
        print("  CPU per finished task: " + ", ".join(f"{k} {v} ms" for k, v in per_task.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--agent-cpus", type=float, default=8)
    parser.add_argument("--agent-mem", type=float, default=16384)
    parser.add_argument("--task-cpus", type=float, default=0.1)
    parser.add_argument("--task-mem", type=float, default=16)
    parser.add_argument("--sender-threads", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--master", help="a running Mesos master (http://host:port) instead of a fresh local cluster")
    parser.add_argument("--beside-local", action="store_true",
                        help="with --master: also run the same tasks through plastic's local cluster and print both")
    parser.add_argument("--executor", choices=("plastic", "command"), default="plastic",
                        help="plastic's executor, one per agent (default), or Mesos' command executor, one per task")
    parser.add_argument("--executor-command", default=default_executor_command(),
                        help="how agents start plastic's executor (default: this interpreter's where the agent has"
                             " it, else `plastic executor` from the image's /opt/plastic/bin)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    results = [run(args, args.master)]
    if args.master and args.beside_local:
        results.append(run(args))
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0], indent=1))
    else:
        for result in results:
            print_result(result)
    return 0 if all(r["completed"] and not r["failed"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
